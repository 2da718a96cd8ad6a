"""Score densities for the reliability diagrams.

* :func:`score_density`: kernel density of the scores on their range
  ``[lo, hi]`` (``[1/K, 1]`` for top-label confidences), with the reflected
  Gaussian kernel and a rule-of-thumb bandwidth of its own. It does not reuse
  the calibration smoother's bandwidth: that one is chosen for ``E[y | s]``
  (``sigma* = smECE``), so the same scores would look flat under a badly
  calibrated model and spiky under a well calibrated one.
* :func:`grid_samples`: linearly binned weights (a streaming accumulator's
  grid) as weighted samples at the grid nodes, so that the two functions here
  draw a streamed figure from its grid alone.
* :func:`local_sample_size`: the effective number of samples under the
  smoother's kernel at each grid point, ``(sum w K)^2 / sum w K^2``, which says
  where the smoothed curve rests on little data.
"""

from __future__ import annotations

import numpy as np

from .grid import (
    FINE_M,
    calibration_statistics,
    coarsen,
    grid_size,
    reflected_smooth,
)
from .smece import statistics
from .sorting import stable_sort

__all__ = [
    "BANDWIDTH_RULES",
    "bandwidth_rule",
    "grid_samples",
    "local_sample_size",
    "score_density",
]

BANDWIDTH_RULES = ("silverman", "scott")
# A bandwidth below this fraction of the range would need a grid finer than
# the finest one; it also stops all-equal scores from giving a zero bandwidth.
MIN_RELATIVE_BANDWIDTH = 1e-3
# Relative size of sum w K^2 below which a grid point counts as holding no data.
NO_DATA = 1e-12


def _node_quantiles(mass, q):
    """Quantiles of linearly binned masses on the grid ``j / M`` of [0, 1]."""
    M = mass.shape[0] - 1
    cum = np.cumsum(mass) - 0.5 * mass
    return np.interp(np.asarray(q) * mass.sum(), cum, np.linspace(0.0, 1.0, M + 1))


def bandwidth_rule(x, w, rule="silverman", *, mass=None):
    """Rule-of-thumb Gaussian KDE bandwidth of ``x`` with frequency weights ``w``.

    ``"scott"``: ``1.06 sd n^(-1/5)``; ``"silverman"``: ``0.9 min(sd, IQR / 1.349)
    n^(-1/5)`` (the IQR is skipped when it is 0, e.g. most scores tied), with
    ``n = sum w`` (weights count as repeated rows). ``mass``, the linearly
    binned weights of ``x`` (in [0, 1]) on a fine grid, gives the quartiles
    to a grid step in O(grid) instead of sorting the scores.
    """
    W = float(w.sum())
    mean = float(np.dot(w, x)) / W
    sd = float(np.sqrt(max(np.dot(w, (x - mean) ** 2) / W, 0.0)))
    factor = W ** (-0.2)
    if rule == "scott":
        return 1.06 * sd * factor
    if mass is None:
        order, xs = stable_sort(x)
        ws = w[order]
        q25, q75 = np.interp([0.25 * W, 0.75 * W], np.cumsum(ws) - 0.5 * ws, xs)
    else:
        q25, q75 = _node_quantiles(mass, [0.25, 0.75])
    iqr = (q75 - q25) / 1.349
    spread = min(sd, iqr) if iqr > 0 else sd
    return 0.9 * spread * factor


def score_density(s, w, at, *, lo=0.0, hi=1.0, bandwidth="silverman"):
    """Reflected-Gaussian kernel density of the scores on ``[lo, hi]``.

    Parameters
    ----------
    s, w : ndarray of shape (n,)
        Scores in ``[lo, hi]`` and frequency weights.
    at : ndarray
        Where to evaluate the density (0 outside ``[lo, hi]``).
    lo, hi : float
        Range of the scores; the kernel is reflected at both ends so that
        the density integrates to 1 on ``[lo, hi]``.
    bandwidth : {"silverman", "scott"} or float
        Rule of thumb, or the bandwidth in score units.

    Returns
    -------
    density : ndarray like ``at``
    bandwidth : float
        The bandwidth used (in score units).
    """
    span = hi - lo
    u = np.clip((s - lo) / span, 0.0, 1.0)
    # The scores are binned once on the finest grid: the quartiles of the
    # rule come from it, and exact coarsening gives the smoothing grid.
    fine = calibration_statistics(np.zeros_like(u), u, w, FINE_M)[:, 0]
    if isinstance(bandwidth, str):
        unit = bandwidth_rule(u, w, bandwidth, mass=fine)
    else:
        unit = float(bandwidth) / span
    unit = max(unit, MIN_RELATIVE_BANDWIDTH)
    M = grid_size(unit)
    mass = coarsen(fine, M)
    dens = reflected_smooth(mass / mass.sum(), unit) / span
    x = (np.asarray(at, dtype=float) - lo) / span
    inside = (x >= -1e-12) & (x <= 1 + 1e-12)
    grid = np.linspace(0.0, 1.0, M + 1)
    out = np.where(inside, np.interp(np.clip(x, 0, 1), grid, dens), 0.0)
    return out, unit * span


def grid_samples(mass):
    """The nodes ``j / M`` of the grid that hold weight, and those weights.

    ``mass`` holds the linearly binned weights of the scores on the ``M + 1``
    nodes of [0, 1] (the first column of a streaming accumulator's grid
    statistics). Seen as weighted samples at the nodes, they give the same
    figure as the raw scores up to the grid resolution: binned again on the
    same grid (:func:`score_density` on [0, 1]) or on a coarser one whose step
    is a multiple of ``1 / M`` (:func:`local_sample_size`) they reproduce the
    binned weights of the raw scores exactly; on a shifted range (``[1/K, 1]``)
    they move each unit of weight by less than one step ``1 / M``. Only the
    rule-of-thumb bandwidth sees the binning, through a variance larger by at
    most ``1 / (4 M^2)``.
    """
    mass = np.asarray(mass, dtype=np.float64)
    nodes = np.flatnonzero(mass > 0)
    return nodes / (mass.shape[0] - 1), mass[nodes]


def local_sample_size(s, w, sigma, geometry, M):
    """Effective samples under the smoother's kernel at the ``M + 1`` grid points.

    ``n_eff(t) = (sum_i w_i K(t, s_i))^2 / sum_i w_i K(t, s_i)^2`` with ``K``
    the kernel of the curve (bandwidth ``sigma`` in the metric's units) and
    ``w`` frequency weights (a weight of 2 counts as two rows). The squares
    use ``phi_sigma^2 = phi_(sigma / sqrt 2) / (2 sigma sqrt(pi))``; for the
    reflected kernel the cross terms of a score with its two nearest mirror
    images are added in closed form (``phi(t - s) phi(t + s)`` is
    ``exp(-(t^2 + s^2) / sigma^2) / (2 pi sigma^2)``), the others are below
    ``exp(-1 / sigma^2)``.
    """
    hist = statistics(np.zeros_like(s), s, w, geometry, M)[:, 0]
    first = geometry.smooth(hist, sigma)
    root_pi = np.sqrt(np.pi)
    second = geometry.smooth(hist, sigma / np.sqrt(2.0)) / (2.0 * sigma * root_pi)
    if geometry.metric == "l1":
        t = np.linspace(0.0, 1.0, M + 1)
        inv = 1.0 / sigma**2
        # The sums over samples are taken on the grid (binning error of
        # second order in the grid step, far below sigma).
        near_0 = np.dot(hist, np.exp(-(t**2) * inv))
        near_1 = np.dot(hist, np.exp(-((1.0 - t) ** 2) * inv))
        second = second + (
            near_0 * np.exp(-(t**2) * inv) + near_1 * np.exp(-((1.0 - t) ** 2) * inv)
        ) / (np.pi * sigma**2)
    # Far from every score both sums are at the FFT's round-off and so is
    # their ratio: count no samples there. (A point with 30 samples within
    # sigma stays far above this cut unless the densest point holds 1e11.)
    ok = second > NO_DATA * second.max()
    ess = np.zeros_like(first)
    ess[ok] = first[ok] ** 2 / second[ok]
    return np.maximum(ess, 0.0)
