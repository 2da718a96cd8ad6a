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


# Scores per pass of the chunked bin assignment: the temporaries of a chunk
# stay in the L2 cache, so the half-dozen passes cost little more than one.
_CHUNK = 1 << 15


def assign_bins(s, edges):
    """Bin index of each score for the edges ``e_0 < ... < e_B``.

    The rule of ``sklearn.calibration.calibration_curve``
    (``np.searchsorted(edges[1:-1], s)``): the first bin is ``[e_0, e_1]``
    and bin ``k > 0`` is ``(e_k, e_{k+1}]``, so an interior edge belongs to
    the bin below it, 0.0 to the first bin and 1.0 to the last.
    """
    inner = edges[1:-1]
    s = np.asarray(s)
    if s.ndim != 1 or s.shape[0] < _CHUNK or inner.shape[0] < 2:
        return np.searchsorted(inner, s, side="left")
    return _assign_by_lookup(s.astype(np.float64, copy=False), inner)


def _assign_by_lookup(s, inner):
    """``np.searchsorted(inner, s)`` through a table of ``G = 2**k`` cells of [0, 1].

    A score in the cell ``[j / G, (j + 1) / G)`` (``floor(s * G)``, exact for
    a power of two) has the bin the table gives whenever no edge lies in
    that cell; the scores of the other cells (and any outside [0, 1]) are
    searched. A binary search per score costs a mispredicted branch per
    level; the table costs a multiply and a lookup.
    """
    n_cells = 1 << min(16, max(10, int(np.ceil(np.log2(64 * inner.shape[0])))))
    left = np.arange(n_cells + 1) / n_cells
    below = np.searchsorted(inner, left, side="left")  # edges < j / G
    table = np.where(below[:-1] == below[1:], below[:-1], -1)
    # the cell of 1.0 and anything clipped into the end cells is searched
    table = np.concatenate([[-1], table[1:], [-1]]).astype(np.intp)
    n = s.shape[0]
    out = np.empty(n, dtype=np.intp)
    size = min(n, _CHUNK)
    x_buf = np.empty(size)
    c_buf = np.empty(size, dtype=np.intp)
    m_buf = np.empty(size, dtype=bool)
    for start in range(0, n, _CHUNK):
        sc = s[start : start + _CHUNK]
        k = sc.shape[0]
        b, x, c, m = out[start : start + k], x_buf[:k], c_buf[:k], m_buf[:k]
        np.multiply(sc, n_cells, out=x)
        with np.errstate(invalid="ignore"):  # NaN: clipped and searched
            np.copyto(c, x, casting="unsafe")
        np.clip(c, 0, n_cells, out=c)
        np.take(table, c, out=b)
        np.less(b, 0, out=m)
        if m.any():
            near = np.flatnonzero(m)
            b[near] = np.searchsorted(inner, sc[near], side="left")
    return out


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
    if scaled is None:
        return _assign_uniform_chunked(np.asarray(s, dtype=np.float64), n_bins)
    b = np.ceil(scaled).astype(np.intp)
    b -= 1
    np.clip(b, 0, n_bins - 1, out=b)
    if n_bins & (n_bins - 1):
        b += (s > (b + 1) / n_bins) & (b < n_bins - 1)
        b -= (s <= b / n_bins) & (b > 0)
    return b


def _assign_uniform_chunked(s, n_bins):
    """:func:`assign_uniform_bins` in cache-sized chunks with preallocated buffers.

    ``floor(s * n_bins)`` is the bin of every score whose product is not
    within a few ulps of an integer: the edge ``k / n_bins`` is rounded by
    half an ulp and the product by another, which moves ``s * n_bins`` by at
    most ``2 n_bins 2**-53`` from ``k``. Those few scores (an interior edge,
    0.0, 1.0 and their neighbours) are placed by the exact rule,
    :func:`assign_bins`.
    """
    edges = uniform_edges(n_bins)
    tol = 0.5 - n_bins * 2.0**-46
    n = s.shape[0]
    out = np.empty(n, dtype=np.intp)
    size = min(n, _CHUNK)
    x_buf = np.empty(size)
    m_buf = np.empty(size, dtype=bool)
    for start in range(0, n, _CHUNK):
        sc = s[start : start + _CHUNK]
        k = sc.shape[0]
        b, x, m = out[start : start + k], x_buf[:k], m_buf[:k]
        np.multiply(sc, n_bins, out=x)
        np.copyto(b, x, casting="unsafe")  # truncation: floor for x >= 0
        # distance of the fractional part from 1/2: near 1/2 exactly when the
        # product is near an integer
        np.subtract(x, b, out=x)
        np.subtract(x, 0.5, out=x)
        np.abs(x, out=x)
        np.greater_equal(x, tol, out=m)
        if m.any():
            near = np.flatnonzero(m)
            b[near] = assign_bins(sc[near], edges)
    return out


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
    count = np.bincount(b, minlength=n_bins)
    if w.min() == 1.0 and w.max() == 1.0:
        # Unit weights: the weighted sums are the plain ones, bit for bit
        # (``1 * v`` is ``v`` and a sum of ones below 2**53 is exact), in
        # three passes instead of four and no products.
        sw = count.astype(np.float64)
        swy = np.bincount(b, weights=y, minlength=n_bins)
        sws = np.bincount(b, weights=s, minlength=n_bins)
    else:
        sw = np.bincount(b, weights=w, minlength=n_bins)
        swy = np.bincount(b, weights=w * y, minlength=n_bins)
        sws = np.bincount(b, weights=w * s, minlength=n_bins)
    return table_from_sums(edges, sw, swy, sws, count)


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
