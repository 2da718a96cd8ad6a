"""Weighted isotonic regression by pool-adjacent-violators."""

from __future__ import annotations

import numpy as np

from .sorting import stable_sort

__all__ = ["isotonic_fit", "pav_blocks"]


def pav_blocks(mean, weight):
    """Blocks of the weighted non-decreasing least-squares fit to ``mean``.

    ``weight`` must be positive. Adjacent blocks are merged while the first
    has a mean no smaller than the second's (blocks of equal means are one
    block). Returns the block index of every entry (blocks numbered from 0
    in increasing order). Only the ratios of the weights count: they are
    scaled by a power of two to a maximum in ``[1, 2)``, exactly, because
    the comparisons multiply two sums of weights, which overflow from
    weights of about 1e150 and underflow below 1e-160.
    """
    weight = np.asarray(weight, dtype=np.float64)
    if weight.shape[0]:
        weight = np.ldexp(weight, -int(np.frexp(weight.max())[1]) + 1)
    # Each block: (sum of weight * mean, sum of weight, first entry).
    sums, weights, starts = [], [], []
    # Python floats: the same double arithmetic as numpy's scalars, in a
    # fraction of their time.
    mean, weight = np.asarray(mean).tolist(), weight.tolist()
    for i, (m, w) in enumerate(zip(mean, weight, strict=True)):
        sums.append(m * w)
        weights.append(w)
        starts.append(i)
        while len(sums) > 1 and sums[-2] * weights[-1] >= sums[-1] * weights[-2]:
            merged_sum, merged_weight = sums.pop(), weights.pop()
            sums[-1] += merged_sum
            weights[-1] += merged_weight
            starts.pop()
    block = np.zeros(len(mean), dtype=np.intp)
    block[starts[1:]] = 1
    return np.cumsum(block)


def isotonic_fit(x, y, w):
    """Weighted isotonic (non-decreasing) regression of ``y`` on ``x``.

    ``w`` must be positive. Tied ``x`` are pooled first (their fitted values
    are equal), then :func:`pav_blocks` merges the groups. Returns the
    fitted value of every row, in the input order. ``O(n log n)`` (the
    sort).
    """
    order, xs = stable_sort(x)
    ys, ws = y[order], w[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    group_weight = np.add.reduceat(ws, starts)
    group_sum = np.add.reduceat(ws * ys, starts)
    block = pav_blocks(group_sum / group_weight, group_weight)
    means = np.bincount(block, group_sum) / np.bincount(block, group_weight)
    counts = np.diff(np.r_[starts, xs.shape[0]])
    fitted = np.empty(x.shape[0])
    fitted[order] = np.repeat(means[block], counts)
    return fitted
