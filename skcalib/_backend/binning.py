"""Histogram-binned calibration statistics (the classic ECE family)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def uniform_edges(n_bins):
    """Edges ``k / n_bins``, each the double nearest to the fraction.

    ``np.linspace`` computes ``k * (1 / n_bins)`` instead, which is one ulp
    off for some ``k`` (``0.30000000000000004`` for 3/10), so a score of
    exactly 0.3 would be compared with a different number than 3/10.
    """
    return np.arange(n_bins + 1, dtype=np.float64) / n_bins


def relative_weights(w):
    """``w / max(w)``: the same ratios, none of the overflow or underflow that
    sums of squares of weights near 1e+-200 meet (all-zero weights unchanged)."""
    top = float(w.max(initial=0.0))
    return w / top if top > 0 else w


def positive_weight_rows(w, *arrays):
    """``(w, *arrays)`` restricted to the rows of positive weight.

    A row of zero weight is no row of the sample; left in, it would still
    shift cross-validation folds, count as a neighbour or be resampled.
    """
    keep = w > 0
    if keep.all():
        return (w, *arrays)
    return (w[keep], *(a[keep] for a in arrays))


def quantile_edges(s, w, n_bins):
    """Bin edges at the (weighted) quantiles of the scores.

    Linear interpolation between the sorted scores placed at the midpoints
    of their cumulative weights, rescaled so that the smallest sits at 0
    and the largest at 1. With equal weights the edges are those of
    ``sklearn.calibration.calibration_curve``,
    ``np.percentile(s, 100 * linspace(0, 1, n_bins + 1))`` (computed so, bit
    for bit), so unit weights and no weights give the same bins; the edges
    move continuously with the weights, and a zero weight is the same as no
    row. Weights are relative here: rescaling them leaves the edges
    unchanged, and an integer weight is not the same as repeated rows (the
    repeated rows take several quantile positions, the weighted row one).
    """
    q = np.linspace(0.0, 1.0, n_bins + 1)
    keep = w > 0
    s, w = s[keep], w[keep]
    if w.min() == w.max():
        # Equal weights: exactly the edges of ``calibration_curve`` (the
        # interpolation below equals them only up to round-off, which moves
        # a score sitting on an edge to the other bin).
        return np.percentile(s, q * 100)
    order = np.argsort(s, kind="stable")
    s, w = s[order], relative_weights(w[order])
    mid = np.cumsum(w) - 0.5 * w
    span = mid[-1] - mid[0]
    if not span > 0:
        return np.full(q.shape, s[0])
    return np.interp(q, (mid - mid[0]) / span, s)


def assign_bins(s, edges):
    """Bin index of each score for the edges ``e_0 < ... < e_B``.

    The rule of ``sklearn.calibration.calibration_curve``
    (``np.searchsorted(edges[1:-1], s)``): the first bin is ``[e_0, e_1]``
    and bin ``k > 0`` is ``(e_k, e_{k+1}]``, so an interior edge belongs to
    the bin below it, 0.0 to the first bin and 1.0 to the last.
    """
    return np.searchsorted(edges[1:-1], s, side="left")


def assign_uniform_bins(s, n_bins, *, scaled=None):
    """:func:`assign_bins` for the edges :func:`uniform_edges` ``(n_bins)``.

    The same bins without a search (constant time per score): the streaming
    statistics assign every sample to one of ``2**16`` cells this way.
    ``ceil(s * n_bins) - 1`` is exact when ``n_bins`` is a power of two (the
    product is exact); otherwise the rounding of the product can put a score
    within an ulp of an edge one bin off, which one comparison with each
    neighbouring edge corrects. ``scaled`` is ``s * n_bins`` (float64) if the
    caller has it already.
    """
    x = np.multiply(s, n_bins, dtype=np.float64) if scaled is None else scaled
    b = np.ceil(x).astype(np.intp)
    b -= 1
    np.clip(b, 0, n_bins - 1, out=b)
    if n_bins & (n_bins - 1):
        b += (s > (b + 1) / n_bins) & (b < n_bins - 1)
        b -= (s <= b / n_bins) & (b > 0)
    return b


@dataclass
class BinTable:
    """Per-bin sums for non-empty bins (bins of positive weight)."""

    edges: np.ndarray  # (n_bins + 1,)
    index: np.ndarray  # bin numbers of the non-empty bins
    weight: np.ndarray  # sum w
    mean_label: np.ndarray  # weighted mean of y
    mean_score: np.ndarray  # weighted mean of s
    count: np.ndarray  # number of samples


def table_from_sums(edges, sw, swy, sws, count):
    """The :class:`BinTable` of per-bin sums ``sum w``, ``sum w y``, ``sum w s``
    and the sample count (in memory or merged from chunks alike)."""
    keep = sw > 0
    return BinTable(
        edges=edges,
        index=np.flatnonzero(keep),
        weight=sw[keep],
        mean_label=swy[keep] / sw[keep],
        mean_score=sws[keep] / sw[keep],
        count=np.rint(count[keep]).astype(np.int64),
    )


def bin_table(y, s, w, edges, index=None):
    """Per-bin table of one binary problem; ``index`` is the bin of each score
    (:func:`assign_bins` of ``edges`` when not given)."""
    n_bins = edges.shape[0] - 1
    b = assign_bins(s, edges) if index is None else index
    return table_from_sums(
        edges,
        np.bincount(b, weights=w, minlength=n_bins),
        np.bincount(b, weights=w * y, minlength=n_bins),
        np.bincount(b, weights=w * s, minlength=n_bins),
        np.bincount(b, minlength=n_bins),
    )


def binned_error(table, norm, debias):
    """ECE (``"l1"``), RMSCE (``"l2"``) or MCE (``"max"``) from a :class:`BinTable`.

    With ``debias`` (L2 only) the estimate of Kumar, Liang & Ma (2019): a bin
    of ``n_k > 1`` samples contributes ``(ybar - sbar)^2 - ybar (1 - ybar) /
    (n_k - 1)`` (its squared gap less the unbiased estimate of the variance of
    its mean label), a bin of a single sample contributes 0 (it has no
    variance estimate, and its raw ``(y - s)^2`` would be a pure noise term);
    the contributions are weighted by ``W_k / W`` over all bins. Weights are
    frequencies: ``n_k`` is the bin's weight ``W_k``, so a weight of 2 counts
    as two copies of a row, and bins with ``W_k <= 1`` contribute 0.
    """
    p = table.weight / table.weight.sum()
    gap = table.mean_label - table.mean_score
    if norm == "l1":
        return float(np.sum(p * np.abs(gap)))
    if norm == "max":
        return float(np.max(np.abs(gap)))
    sq = gap * gap
    if debias:
        ybar = table.mean_label
        many = table.weight > 1.0
        sq = np.where(
            many,
            sq - ybar * (1.0 - ybar) / np.where(many, table.weight - 1.0, 1.0),
            0.0,
        )
    return float(np.sum(p * sq))


def binned_error_value(table, norm, debias, squared):
    """:func:`binned_error` with the L2 root taken (keeping the sign of a
    negative debiased estimate, ``-sqrt(-v)``) unless ``squared``."""
    v = binned_error(table, norm, debias)
    if norm == "l2" and not squared:
        v = float(np.sign(v) * np.sqrt(abs(v)))
    return v
