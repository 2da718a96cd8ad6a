"""Exact one-dimensional total-variation denoising.

Solves ``min_v (1/2) ||y - v||² + lam * sum_i |v[i+1] - v[i]|`` exactly with
Condat's direct algorithm (IEEE Signal Processing Letters, 2013): a single
left-to-right sweep that keeps the range of admissible values of the current
segment and emits a segment as soon as the taut string must bend. It is
sequential, so it is compiled with numba when numba is importable (the ``fast``
extra); the pure-Python version gives the same result, only slower.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np

from .certificate import average_over_ties
from .concentration import tv_constants

__all__ = [
    "tv_denoise",
    "total_variation",
    "fit_tv_surrogate",
    "step_extension",
    "HAVE_NUMBA",
]


def _condat(y, lam, x):  # pragma: no cover - compiled or exercised via wrappers
    # One flat loop (no early return from a nested loop): numba's SSA pass
    # mis-types the nested form.
    n = len(y)
    k = 0
    k0 = 0
    kminus = 0
    kplus = 0
    vmin = y[0] - lam
    vmax = y[0] + lam
    umin = lam
    umax = -lam
    twolam = 2.0 * lam
    while k0 < n:
        if k == n - 1:
            # Right boundary: the last segment must end with zero dual value.
            if umin < 0.0:
                # vmin is too high: emit a segment ending at kminus (at least
                # one sample, even if kminus lies behind k0).
                kend = max(k0, kminus)
                for i in range(k0, kend + 1):
                    x[i] = vmin
                k0 = kend + 1
                k = k0
                kminus = k0
                vmin = y[k]
                umin = lam
                umax = vmin + umin - vmax
            elif umax > 0.0:
                kend = max(k0, kplus)
                for i in range(k0, kend + 1):
                    x[i] = vmax
                k0 = kend + 1
                k = k0
                kplus = k0
                vmax = y[k]
                umax = -lam
                umin = vmax + umax - vmin
            else:
                vmin += umin / (k - k0 + 1)
                for i in range(k0, k + 1):
                    x[i] = vmin
                k0 = k + 1
            continue
        umin += y[k + 1] - vmin
        umax += y[k + 1] - vmax
        if umin < -lam:
            # Downward jump after kminus.
            kend = max(k0, kminus)
            for i in range(k0, kend + 1):
                x[i] = vmin
            k0 = kend + 1
            k = k0
            kminus = k0
            kplus = k0
            vmin = y[k]
            vmax = vmin + twolam
            umin = lam
            umax = -lam
        elif umax > lam:
            kend = max(k0, kplus)
            for i in range(k0, kend + 1):
                x[i] = vmax
            k0 = kend + 1
            k = k0
            kminus = k0
            kplus = k0
            vmax = y[k]
            vmin = vmax - twolam
            umin = lam
            umax = -lam
        else:
            k += 1
            if umin >= lam:
                kminus = k
                vmin += (umin - lam) / (k - k0 + 1)
                umin = lam
            if umax <= -lam:
                kplus = k
                vmax += (umax + lam) / (k - k0 + 1)
                umax = -lam


# numba is optional (the ``fast`` extra) and costs ~70 MB and a second to
# import, so it is only looked for, not imported, until the solver first runs.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None


@functools.cache
def _compiled_solver():
    if not HAVE_NUMBA:
        return _condat
    import numba

    return numba.njit(cache=True, nogil=True)(_condat)


def tv_denoise(y, lam, *, use_numba=None):
    """Exact solution of ``min_v (1/2)||y - v||² + lam ||D v||₁``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Signal, float64.
    lam : float
        Penalty, >= 0.
    use_numba : bool or None, default=None
        ``None`` uses the compiled solver when numba is available.

    Returns
    -------
    v : ndarray of shape (n,)
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    x = np.empty_like(y)
    if y.shape[0] == 0:
        return x
    if lam <= 0.0:
        x[:] = y
        return x
    if use_numba and not HAVE_NUMBA:
        raise ImportError("use_numba=True needs numba (pip install skcalib[fast]).")
    solver = _compiled_solver() if (use_numba is None or use_numba) else _condat
    if solver is _condat:
        # Python floats are much faster than numpy scalars in the sweep.
        xs = [0.0] * y.shape[0]
        _condat(y.tolist(), float(lam), xs)
        x[:] = xs
    else:
        solver(y, float(lam), x)
    return x


def total_variation(v):
    """``sum_i |v[i+1] - v[i]|``."""
    v = np.asarray(v, dtype=np.float64)
    return float(np.abs(np.diff(v)).sum()) if v.shape[0] > 1 else 0.0


def fit_tv_surrogate(s_sorted, y_sorted, delta1, *, monotone=False):
    """Surrogate ``η̂`` of the total-variation bound on labels sorted by score.

    Total-variation denoising with the penalty ``t2`` of
    :func:`.concentration.tv_constants` (``λ = t2 / n`` on the
    ``(1 / 2n) ||y - v||²`` scale), or, with ``monotone=True``, isotonic
    regression, which satisfies the same bound for ``V = 1``. The fitted
    values are then averaged over each block of tied scores, so that they are
    a function of the score (the denoiser alone may give tied points
    different values).

    Returns
    -------
    v : ndarray of shape (n,)
        Fitted values at the sorted training points.
    fitted_variation : float
        Total variation of ``v``.
    penalty : float or None
        ``λ`` (``None`` for the isotonic fit).
    """
    n_train = y_sorted.shape[0]
    if monotone:
        # A pure function on arrays (no estimator object): the fast exact
        # pool-adjacent-violators solver.
        from sklearn.isotonic import isotonic_regression

        v = isotonic_regression(y_sorted, y_min=0.0, y_max=1.0, increasing=True)
        v = average_over_ties(s_sorted, v)
        return v, float(v[-1] - v[0]), None
    _, t2 = tv_constants(n_train, delta1)
    v = average_over_ties(s_sorted, tv_denoise(y_sorted, t2))
    return v, total_variation(v), t2 / n_train


def step_extension(s_sorted, values, s):
    """Value of the training point closest at or below each ``s`` (the first
    one below the range)."""
    j = np.searchsorted(s_sorted, s, side="right") - 1
    return values[np.clip(j, 0, s_sorted.shape[0] - 1)]
