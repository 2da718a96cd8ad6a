"""LOWESS without robustness iterations, with frequency weights.

Cleveland's (1979) locally weighted linear regression as R's
``stats::lowess(x, y, f, iter = 0, delta)`` defines it, the smoother of the
calibration curve of Austin & Steyerberg (2019) and ``rms::val.prob``:

* the neighbourhood of a point ``x0`` holds the ``q = floor(f N)`` nearest
  observations (at least 2, at most ``N``; ``N`` the number of
  observations); ``h`` is the distance to the farthest of them;
* the weights are tricube, ``(1 - (r / h)^3)^3`` of the distance ``r``,
  set to 1 within ``0.001 h`` and to 0 beyond ``0.999 h`` (so the farthest
  neighbour counts nothing);
* the fit is weighted least squares on ``(1, x - a)``, ``a`` the weighted
  mean of the neighbourhood, or the weighted mean alone when the
  neighbourhood's weighted standard deviation of x is at most
  ``0.001 * (max x - min x)``;
* the fit is computed at the smallest x, then at the last x within
  ``delta`` of the previous one (or the next x, if none is), and linearly
  interpolated in between; tied x share one fit.

Frequency weights count as repeated observations: ``N`` is the sum of the
weights, the neighbourhood holds ``floor(f N)`` units of weight, and integer
weights give the smooth of the repeated rows. Ties are grouped first, so the
work is on the distinct x: a search of ``h`` per evaluation point and one
pass over its neighbourhood; at most about ``2 / 0.01`` points are evaluated
with the default ``delta``. Distances are always the differences
``x0 - x`` or ``x - x0`` of the algorithm (a search for ``x0 - d`` among
the x, which rounds, is corrected against them), so that neighbourhoods and
the cuts at ``0.001 h`` and ``0.999 h`` are those of R to the last bit.
"""

from __future__ import annotations

import numpy as np

from .threads import one_blas_thread

__all__ = ["lowess"]

# Guard of ``floor(f N)`` against a product such as 66.99999999999999.
_FLOOR_GUARD = 1e-7
# Relative slack when comparing sums of non-integer weights with ``q``.
_MASS_RTOL = 1e-12


def _within(u, i, d):
    """``(a, b)``: ``u[a:b]`` are the points at distance at most ``d`` from
    ``u[i]`` (``d >= 0``)."""
    x0 = u[i]
    a = int(np.searchsorted(u, x0 - d, side="left"))
    while a > 0 and x0 - u[a - 1] <= d:
        a -= 1
    while a < i and x0 - u[a] > d:
        a += 1
    b = int(np.searchsorted(u, x0 + d, side="right"))
    while b < u.size and u[b] - x0 <= d:
        b += 1
    while b > i + 1 and u[b - 1] - x0 > d:
        b -= 1
    return a, b


def _radius(u, cum, i, need):
    """Distance from ``u[i]`` to its nearest neighbourhood holding ``need``
    units of weight (``cum[k]``: the weight of ``u[:k]``)."""
    x0 = u[i]

    def enough(d):
        a, b = _within(u, i, d)
        return cum[b] - cum[a] >= need

    best = np.inf
    # Candidates to the left: x0 - u[j], growing as j goes down from i; the
    # largest j whose distance is enough (a bisection).
    if enough(x0 - u[0]):
        lo, hi = 0, i
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if enough(x0 - u[mid]):
                lo = mid
            else:
                hi = mid - 1
        best = x0 - u[lo]
    # To the right: u[j] - x0, growing with j; the smallest j enough.
    if enough(u[-1] - x0):
        lo, hi = i, u.size - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if enough(u[mid] - x0):
                hi = mid
            else:
                lo = mid + 1
        best = min(best, u[lo] - x0)
    return float(best)


def _local_fit(u, sw, ybar, i, h, x_range, buf):
    """Local linear (or constant) fit at ``u[i]`` with radius ``h``.

    ``ybar`` is the mean label at each ``u``; ``buf`` holds two work arrays
    of ``u``'s size (the window's temporaries are written there: allocating
    them anew for every point costs more than the arithmetic).
    """
    if h == 0:
        return float(ybar[i])
    x0 = u[i]
    a, b = _within(u, i, 0.999 * h)
    a1, b1 = _within(u, i, 0.001 * h)
    m = b - a
    d, k = buf[0][:m], buf[1][:m]
    np.subtract(u[a:b], x0, out=d)
    np.abs(d, out=k)
    k /= h
    t = k.copy()
    k *= k
    k *= t
    np.subtract(1.0, k, out=k)
    np.multiply(k, k, out=t)
    k *= t  # (1 - (r / h)^3)^3
    k[a1 - a : b1 - a] = 1.0
    k *= sw[a:b]
    # Moments about x0: mean offset, variance and the label sums.
    s0 = float(k.sum())
    m1 = float(k @ d) / s0
    fit = float(k @ ybar[a:b]) / s0
    k *= d
    c = float(k @ d) / s0 - m1 * m1
    if np.sqrt(max(c, 0.0)) > 0.001 * x_range:
        fit -= m1 / c * (float(k @ ybar[a:b]) / s0 - m1 * fit)
    return fit


def lowess(x, y, w, *, span=2.0 / 3.0, delta=None):
    """Fitted values of the LOWESS smooth of ``y`` on ``x`` at each ``x``.

    Parameters
    ----------
    x : ndarray of shape (n,)
        Finite abscissae.
    y : ndarray of shape (n,)
        Finite ordinates.
    w : ndarray of shape (n,)
        Positive frequency weights (integer weights: repeated rows).
    span : float, default=2/3
        Fraction ``f`` of the (weighted) observations in each neighbourhood.
    delta : float or None, default=None
        Distance within which the fit is interpolated rather than computed;
        None: ``0.01 * (max x - min x)``, as R's default.

    Returns
    -------
    ndarray of shape (n,)
        The smooth at each ``x`` (equal at tied ``x``).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib._backend.loess import lowess
    >>> x = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    >>> y = np.array([0.0, 0.0, 1.0, 0.0, 1.0, 1.0])
    >>> lowess(x, y, np.ones(6)).round(4)  # R: lowess(x, y, iter = 0)
    array([-0.1198,  0.2863,  0.4274,  0.5726,  0.7137,  1.1198])
    """
    u, inv = np.unique(x, return_inverse=True)
    sw = np.bincount(inv, weights=w, minlength=u.size)
    ybar = np.bincount(inv, weights=w * y, minlength=u.size) / sw
    if u.size == 1:
        return np.full(x.shape, ybar[0])
    cum = np.concatenate(([0.0], np.cumsum(sw)))
    total = float(cum[-1])
    q = min(total, max(2.0, float(np.floor(span * total + _FLOOR_GUARD))))
    need = q - _MASS_RTOL * total
    x_range = float(u[-1] - u[0])
    if delta is None:
        delta = 0.01 * x_range
    fit = np.empty(u.size)
    buf = np.empty((2, u.size))
    with one_blas_thread():  # products of one window: threads only contend
        last = -1
        i = 0
        while True:
            h = _radius(u, cum, i, need)
            fit[i] = _local_fit(u, sw, ybar, i, h, x_range, buf)
            if last >= 0 and i > last + 1:
                alpha = (u[last + 1 : i] - u[last]) / (u[i] - u[last])
                fit[last + 1 : i] = alpha * fit[i] + (1.0 - alpha) * fit[last]
            last = i
            if i == u.size - 1:
                break
            # The next evaluation: the last x within delta, or the next x.
            within = int(np.searchsorted(u, u[i] + delta, side="right")) - 1
            i = max(i + 1, within)
    return fit[inv]
