"""Per-bin sums of the binned calibration error in any array-API namespace.

The rules of :mod:`skcalib._backend.binning`: a score goes to
``searchsorted(edges[1:-1], s, side="left")`` (an interior edge belongs to
the bin below it), quantile edges are NumPy's linear-interpolation
percentiles (unit weights) or the interpolation between the sorted scores
placed at the midpoints of their cumulative relative weights. The sums are
formed on the arrays' device; only the ``n_bins + 1`` edges and the
``4 n_bins`` sums come back to the host.
"""

from __future__ import annotations

import numpy as np

from ..binning import _PercentilePlan
from .namespace import arange, astype, contiguous, from_numpy, to_numpy

__all__ = ["bin_sums", "quantile_edges"]

# Entries of the one-hot block of :func:`bin_sums` (rows times bins).
_BLOCK_ENTRIES = 1 << 22


def bin_sums(y, s, w, edges, xp, device):
    """``(sum w, sum w y, sum w s, count)`` per bin, as host arrays.

    Parameters
    ----------
    y, s : arrays of shape (n,)
        0/1 labels and scores.
    w : array of shape (n,) or None
        Weights (None: unit weights).
    edges : ndarray of shape (n_bins + 1,)
        Increasing bin edges (host).
    xp : namespace
    device : device of ``y`` and ``s``
    """
    n_bins = edges.shape[0] - 1
    inner = astype(from_numpy(edges[1:-1], xp, device), s.dtype, xp)
    index = xp.searchsorted(inner, contiguous(s, xp), side="left")
    one = xp.ones_like(s)
    weight = one if w is None else w
    columns = xp.stack([weight, weight * y, weight * s, one], axis=1)
    bins = arange(n_bins, index, xp)[None, :]
    step = max(1, _BLOCK_ENTRIES // max(n_bins, 1))
    total = None
    n = s.shape[0]
    for start in range(0, n, step):
        stop = min(start + step, n)
        hit = astype(index[start:stop, None] == bins, s.dtype, xp)
        part = hit.T @ columns[start:stop, :]
        total = part if total is None else total + part
    sums = to_numpy(total, xp).astype(np.float64)
    return sums[:, 0], sums[:, 1], sums[:, 2], sums[:, 3]


def quantile_edges(s, w, n_bins, xp):
    """:func:`skcalib._backend.binning.quantile_edges` of scores on a device.

    ``w`` is None for unit weights. Returns the edges as a host array.
    """
    q = np.linspace(0.0, 1.0, n_bins + 1)
    if w is not None:
        keep = w > 0
        s, w = s[keep], w[keep]
        if bool(xp.min(w) == xp.max(w)):
            w = None
    if w is None:
        # NumPy's percentile: order statistics at the plan's ranks,
        # interpolated on the host by NumPy's own arithmetic.
        plan = _PercentilePlan(s.shape[0], q * 100)
        ranks = from_numpy(plan.ranks, xp, getattr(s, "device", None))
        picked = xp.take(xp.sort(s), ranks, axis=0)
        return plan.edges(to_numpy(picked, xp).astype(np.float64))
    order = xp.argsort(s, stable=True)
    s, w = xp.take(s, order, axis=0), xp.take(w, order, axis=0)
    w = w / xp.max(w)
    mid = xp.cumulative_sum(w) - 0.5 * w
    span = float(mid[-1] - mid[0])
    if not span > 0:
        return np.full(q.shape, float(s[0]))
    return _interp(q, (mid - mid[0]) / span, s, xp)


def _interp(x, xs, fs, xp):
    """``numpy.interp(x, xs, fs)`` for host ``x`` and increasing ``xs`` on a
    device: only the bracketing pair of each ``x`` comes to the host, where
    NumPy interpolates on it as it would on the whole arrays."""
    n = xs.shape[0]
    at = from_numpy(x, xp, getattr(xs, "device", None))
    j = xp.clip(
        xp.searchsorted(xs, astype(at, xs.dtype, xp), side="right") - 1, 0, n - 2
    )
    pairs = xp.stack(
        [
            xp.take(xs, j, axis=0),
            xp.take(xs, j + 1, axis=0),
            xp.take(fs, j, axis=0),
            xp.take(fs, j + 1, axis=0),
        ],
        axis=1,
    )
    pairs = to_numpy(pairs, xp).astype(np.float64)
    return np.array(
        [np.interp(v, row[:2], row[2:]) for v, row in zip(x, pairs, strict=True)]
    )
