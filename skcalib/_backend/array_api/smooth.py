"""SmoothECE at a fixed bandwidth in any array-API namespace.

The NumPy engine (:mod:`skcalib._backend.grid`, :mod:`skcalib._backend.smece`)
bins the residuals ``w (y - s)`` linearly onto the ``M + 1`` points of a
uniform grid, smooths them with the reflected Gaussian by FFT and integrates
``|r_sigma|`` by the trapezoid rule. At a fixed ``sigma`` each step is
linear in the residuals, and linear binning is piecewise linear in the
scores, so the value is differentiable in the scores except where a score
crosses a grid point. Here the same steps are written without scatters (the
standard has no ``bincount``): the samples are sorted by cell and each
cell's sums are differences of cumulative sums.
"""

from __future__ import annotations

from ..grid import _kernel_spectrum, grid_size
from .namespace import arange, astype, concat, device_of, from_numpy, full

__all__ = ["smooth_ece_at"]


def _cell_sums(cell, values, n_cells, xp):
    """``sum(values[cell == c])`` for ``c`` in ``range(n_cells)``.

    Differences of cumulative sums of the values sorted by cell: each sum is
    a differentiable function of the values, and the cell indices (integers)
    only choose which values enter it.
    """
    order = xp.argsort(cell, stable=True)
    ordered = xp.take(cell, order, axis=0)
    bounds = xp.searchsorted(ordered, arange(n_cells + 1, cell, xp), side="left")
    running = xp.cumulative_sum(xp.take(values, order, axis=0), include_initial=True)
    return xp.take(running, bounds[1:], axis=0) - xp.take(running, bounds[:-1], axis=0)


def binned_residuals(y, s, w, M, xp):
    """Linearly binned ``sum w (y - s)`` at the ``M + 1`` grid points ``j / M``
    (the numbers of :func:`skcalib._backend.grid.residual_statistics`)."""
    r = y - s
    if w is not None:
        r = r * w
    x = s * float(M)
    # s in [0, 1]: truncation is the floor; 1.0 belongs to the last cell.
    cell = xp.clip(astype(xp.floor(x), xp.int64, xp), 0, M - 1)
    theta = x - astype(cell, x.dtype, xp)
    right = r * theta
    zero = full((1,), 0.0, s, xp)
    left_nodes = concat([_cell_sums(cell, r - right, M, xp), zero], xp)
    right_nodes = concat([zero, _cell_sums(cell, right, M, xp)], xp)
    return left_nodes + right_nodes


def reflected_smooth(hist, sigma, xp):
    """:func:`skcalib._backend.grid.reflected_smooth` of a 1-D ``hist``."""
    M = hist.shape[0] - 1
    mirrored = xp.flip(hist[1:M], axis=0)
    ends = full((2 * M,), 1.0, hist, xp)
    ends = xp.where(
        (arange(2 * M, hist, xp) == 0) | (arange(2 * M, hist, xp) == M),
        2.0 * ends,
        ends,
    )
    ext = concat([hist, mirrored], xp) * ends
    spectrum = from_numpy(_kernel_spectrum(M, float(sigma)), xp, device_of(hist))
    spectrum = astype(spectrum, hist.dtype, xp)
    return xp.fft.irfft(xp.fft.rfft(ext) * spectrum, n=2 * M)[: M + 1]


def smooth_ece_at(y, s, w, sigma, xp):
    """``smECE_sigma = integral |r_sigma(t)| dt`` of one binary problem.

    Parameters
    ----------
    y : array of shape (n,)
        0/1 labels (floats).
    s : array of shape (n,)
        Scores in ``[0, 1]``.
    w : array of shape (n,) or None
        Weights (None: unit weights).
    sigma : float
        Bandwidth, at least one step of the finest grid.
    xp : namespace

    Returns
    -------
    0-d array
    """
    M = grid_size(sigma)
    total = float(s.shape[0]) if w is None else xp.sum(w)
    resid = binned_residuals(y, s, w, M, xp) / total
    r = xp.abs(reflected_smooth(resid, sigma, xp))
    return (xp.sum(r) - 0.5 * (r[0] + r[M])) / float(M)
