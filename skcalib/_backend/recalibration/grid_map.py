"""The grid map: a Nadaraya-Watson estimate of ``E[y | s]`` on a grid.

The binary map (``method="grid"``, and each column of ``"classwise"``) is the
reflected-Gaussian Nadaraya-Watson estimator of :mod:`skcalib._backend.grid`,
built from the sufficient statistics ``(sum w, sum w*y)`` of
:func:`~skcalib._backend.grid.calibration_statistics` (binned once on the fine
grid and coarsened exactly for each bandwidth). Every number here is the
*grid* estimator: the kernel sums at the grid nodes are exact (FFT), and a
score between two nodes reads the linear interpolation of the numerator and
of the denominator sums, with the hat weights that binned it. The
leave-one-out criterion removes from those interpolated sums exactly the
share that the point itself contributed, so it equals the grid estimator
refitted without that point (to round-off), at O(n + M log M) per bandwidth
instead of O(n^2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar

from ..grid import bin_positions, coarsen, grid_points, grid_size, reflected_smooth
from ..kernels import periodized_gaussian

__all__ = [
    "GridMap",
    "SIGMA_GRID",
    "fit_grid_map",
    "loo_log_loss",
    "select_sigma_loo",
    "smoothest_best",
]

# Candidate bandwidths of the leave-one-out search (then refined between the
# neighbours of the best one). Below 2**-10 the finest grid (2**16 cells)
# no longer resolves the kernel with enough steps.
SIGMA_GRID = np.geomspace(2.0**-10, 0.5, 13)
# Relative difference of leave-one-out scores below which they are tied.
TIE_TOL = 1e-12
# Kernel mass below this fraction of the largest one is too close to the FFT
# round-off (~1e-16 of it) for a ratio: the estimate is not formed there.
_RELIABLE = 1e-12
# Above this many samples, the leave-one-out criterion is averaged over an
# evenly spaced subset of the points (the smoother itself uses all of them).
MAX_LOO_POINTS = 2**16


def _interp(values, idx, theta):
    left = np.take(values, idx)
    return left + theta * (np.take(values, idx + 1) - left)


def _prior_density(prior, sigma):
    """Kernel mass of ``prior`` (a share of the total weight) placed at ``t``."""
    return prior / (sigma * np.sqrt(2.0 * np.pi))


@dataclass(frozen=True)
class GridMap:
    """A fitted binary recalibration map ``s -> E[y | s]``.

    Attributes
    ----------
    sigma : float
        Kernel bandwidth.
    num, den : ndarray of shape (M + 1,)
        Kernel sums ``sum_i w_i K(t, s_i) y_i`` and ``sum_i w_i K(t, s_i)`` at
        the grid nodes ``t = j / M``, divided by ``sum_i w_i``.
    fill : ndarray of shape (M + 1,)
        Without a prior: ``num / den`` where the kernel mass is reliable;
        elsewhere linear interpolation between reliable nodes and constant
        beyond the last one (the limit of the exact Gaussian Nadaraya-Watson
        estimator far from the data, where the nearest points dominate).
    prior : float
        Kernel mass ``p K(t, t)`` of a pseudo-observation of label 1/2 and
        weight ``p`` (a share of the total weight) added at every ``t``:
        ``(num + prior / 2) / (den + prior)``. Zero for the plain estimator.
    """

    sigma: float
    num: np.ndarray
    den: np.ndarray
    fill: np.ndarray
    prior: float = 0.0

    @property
    def M(self):
        return self.num.shape[0] - 1

    def __call__(self, s):
        """Evaluate the map at scores ``s`` in [0, 1] (values in [0, 1])."""
        s = np.asarray(s, dtype=np.float64)
        idx, theta = bin_positions(s, self.M)
        den = _interp(self.den, idx, theta)
        num = _interp(self.num, idx, theta)
        if self.prior > 0:
            out = (num + 0.5 * self.prior) / (den + self.prior)
            return np.clip(out, 0.0, 1.0, out=out)
        ok = den > _RELIABLE * self.den.max()
        out = np.divide(num, den, out=num, where=ok)
        if not ok.all():
            bad = ~ok
            out[bad] = _interp(self.fill, idx[bad], theta[bad])
        return np.clip(out, 0.0, 1.0, out=out)


def _smoothed(stats, sigma):
    """Normalised node sums ``(den, num)`` at bandwidth ``sigma`` and grid size."""
    M = grid_size(sigma, stats.shape[0] - 1)
    h = coarsen(stats, M)[:, :2]
    sm = reflected_smooth(h / h[:, 0].sum(), sigma)
    return M, sm[:, 0], sm[:, 1]


def fit_grid_map(stats, sigma, prior=0.0):
    """Reflected-Gaussian Nadaraya-Watson map from fine-grid statistics.

    Parameters
    ----------
    stats : ndarray of shape (M_fine + 1, 3)
        Output of :func:`grid.calibration_statistics` (only the first two
        columns, ``sum w`` and ``sum w*y``, are used).
    sigma : float
        Bandwidth > 0.
    prior : float, default=0
        Weight (as a share of the total weight) of a pseudo-observation of
        label 1/2 added at every point, with the kernel's peak value.

    Returns
    -------
    GridMap
    """
    M, den, num = _smoothed(stats, sigma)
    ok = den > _RELIABLE * den.max()
    t = grid_points(M)
    fill = np.interp(t, t[ok], num[ok] / den[ok])
    return GridMap(float(sigma), num, den, fill, _prior_density(prior, sigma))


def _self_kernel(idx, theta, g):
    """Grid kernel of a point with itself: ``sum_ab h_a h_b K(t_a, t_b)``.

    The hat weights are ``h = (1 - theta, theta)`` on nodes ``(j, j + 1)`` and
    the reflected grid kernel between nodes ``a`` and ``b`` is
    ``g[a - b] + g[a + b]`` (indices modulo ``2 M``, ``g`` the periodised
    Gaussian), which is what :func:`grid.reflected_smooth` applies.
    """
    g = np.append(g, g[0])  # g[2M] == g[0]: no modulo needed below
    a = 1.0 - theta
    j2 = 2 * idx
    return (
        a * a * (g[0] + g[j2])
        + 2.0 * a * theta * (g[1] + g[j2 + 1])
        + theta * theta * (g[0] + g[j2 + 2])
    )


def nearest_label(s_all, y_all, rows):
    """Label of the nearest other sample (mean label of the two if equidistant)."""
    order = np.argsort(s_all)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.shape[0])
    r = rank[rows]
    left = order[np.maximum(r - 1, 0)]
    right = order[np.minimum(r + 1, order.shape[0] - 1)]
    dl = np.where(r > 0, s_all[rows] - s_all[left], np.inf)
    dr = np.where(r < order.shape[0] - 1, s_all[right] - s_all[rows], np.inf)
    return np.where(
        dl < dr,
        y_all[left],
        np.where(dr < dl, y_all[right], 0.5 * (y_all[left] + y_all[right])),
    )


class _LazyNearest:
    """:func:`nearest_label` of ``rows``, computed on first use (it sorts)."""

    def __init__(self, s, y, rows):
        self.args, self.value = (s, y, rows), None

    def __call__(self):
        if self.value is None:
            self.value = nearest_label(*self.args)
        return self.value


def loo_predictions(stats, y, s, w, sigma, rows=None, fallback=None, prior=0.0):
    """Leave-one-out grid Nadaraya-Watson predictions at the samples.

    ``mu_{-i}(s_i)``: the grid estimator fitted without sample ``i`` and read
    at ``s_i``, for the samples ``rows`` (all by default). Where the kernel
    mass left without sample ``i`` is negligible (an isolated point and a
    small bandwidth), the prediction is the label of the nearest other
    sample, the limit of the exact Gaussian estimator there (the grid map
    instead extrapolates from the nearest reliable grid node, which is close
    to it but not equal). ``fallback``, if given, is a callable returning
    those labels for ``rows``.
    """
    rows = np.arange(s.shape[0]) if rows is None else rows
    M, den, num = _smoothed(stats, sigma)
    total = stats[:, 0].sum()
    sr, yr, wr = s[rows], y[rows], w[rows]
    idx, theta = bin_positions(sr, M)
    # A sample leaves all of its weight: weights are importance weights here
    # (leaving w - 1 copies behind would let a point of weight 3 vote for
    # itself and pull the bandwidth towards 0).
    own = wr / total * _self_kernel(idx, theta, periodized_gaussian(M, sigma))
    d = _interp(den, idx, theta) - own
    n = _interp(num, idx, theta) - own * yr
    if prior > 0:
        a = _prior_density(prior, sigma)
        return np.clip((n + 0.5 * a) / (d + a), 0.0, 1.0)
    ok = d > _RELIABLE * den.max()
    out = np.divide(n, d, out=np.zeros_like(d), where=ok)
    if not ok.all():
        bad = ~ok
        out[bad] = (
            nearest_label(s, y, rows[bad]) if fallback is None else fallback()[bad]
        )
    return np.clip(out, 0.0, 1.0)


def loo_log_loss(stats, y, s, w, sigma, eps, rows=None, fallback=None, prior=0.0):
    """Weighted mean leave-one-out log-loss (predictions clipped to [eps, 1-eps])."""
    rows = np.arange(s.shape[0]) if rows is None else rows
    p = loo_predictions(stats, y, s, w, sigma, rows, fallback, prior)
    # probability given to the observed label
    p = np.where(y[rows] > 0.5, p, 1.0 - p)
    ll = np.log(np.clip(p, eps, 1.0 - eps, out=p), out=p)
    wr = w[rows]
    # (not np.dot: BLAS threads for a vector sum only add contention)
    return float(-(wr * ll).sum() / wr.sum())


def select_sigma_loo(
    stats, y, s, w, eps, *, grid=SIGMA_GRID, max_points=MAX_LOO_POINTS, prior=0.0
):
    """Bandwidth minimising the leave-one-out log-loss of the grid map.

    The criterion is evaluated on ``grid`` and then minimised (Brent, in
    ``log sigma``) between the neighbours of the best grid value. With more
    than ``max_points`` samples it is averaged over every ``k``-th sample
    (a deterministic systematic subsample); the map itself, and each point's
    neighbours, are always all the samples.

    Returns
    -------
    sigma : float
    info : dict
        ``grid``, ``scores`` (leave-one-out log-loss per grid value), ``loss``
        (at the returned sigma), ``n_used``.
    """
    n = s.shape[0]
    rows = np.arange(0, n, -(-n // max_points))
    fallback = _LazyNearest(s, y, rows)

    fine_m = stats.shape[0] - 1
    coarse = {}  # the grid size depends on sigma only: coarsen once per size

    def crit_at(sigma):
        M = grid_size(sigma, fine_m)
        if M not in coarse:
            coarse[M] = coarsen(stats, M)
        return loo_log_loss(coarse[M], y, s, w, sigma, eps, rows, fallback, prior)

    def crit(log_sigma):
        return crit_at(float(np.exp(log_sigma)))

    grid = np.asarray(grid, dtype=np.float64)
    log_grid = np.log(grid)
    # At the grid values themselves: exp(log(sigma)) can be one unit in the
    # last place off, enough to pick the next grid size at a size boundary.
    scores = np.array([crit_at(float(g)) for g in grid])
    best = smoothest_best(scores, log_grid)
    lo = log_grid[max(best - 1, 0)]
    hi = log_grid[min(best + 1, len(log_grid) - 1)]
    sigma, loss = float(np.exp(log_grid[best])), float(scores[best])
    if hi > lo:
        res = minimize_scalar(
            crit, bounds=(lo, hi), method="bounded", options={"xatol": 0.02}
        )
        if res.fun < loss - TIE_TOL * max(1.0, abs(loss)):
            sigma, loss = float(np.exp(res.x)), float(res.fun)
    info = {
        "grid": np.exp(log_grid),
        "scores": scores,
        "loss": loss,
        "n_used": rows.shape[0],
    }
    return sigma, info


def smoothest_best(scores, bandwidths):
    """Index of the largest bandwidth among those tied for the lowest score.

    Ties are exact in degenerate samples (a few points, each far from the
    others), where the smoothest map is the one that claims least.
    """
    best = np.min(scores)
    tied = np.flatnonzero(scores <= best + TIE_TOL * max(1.0, abs(best)))
    return int(tied[np.argmax(bandwidths[tied])])
