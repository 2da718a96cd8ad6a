"""Histogram-binned calibration statistics (the classic ECE family)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sorting import stable_sort


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


def quantile_edges(s, w, n_bins, *, unit_weight=False):
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
    ``unit_weight=True`` says that ``w`` is all ones (not read then).
    """
    q = np.linspace(0.0, 1.0, n_bins + 1)
    if unit_weight or w.min() == w.max() > 0:
        # Equal weights: exactly the edges of ``calibration_curve`` (the
        # interpolation below equals them only up to round-off, which moves
        # a score sitting on an edge to the other bin).
        return percentile_edges(s, q)
    keep = w > 0
    s, w = s[keep], w[keep]
    if w.min() == w.max():
        return percentile_edges(s, q)
    order, s = stable_sort(s)
    w = relative_weights(w[order])
    mid = np.cumsum(w) - 0.5 * w
    span = mid[-1] - mid[0]
    if not span > 0:
        return np.full(q.shape, s[0])
    return np.interp(q, (mid - mid[0]) / span, s)


# Cells of the histogram that locates the order statistics of
# :func:`percentile_edges` (a power of two: ``s * G`` is exact).
_SELECT_CELLS = 1 << 12
# Below this many scores np.percentile is as fast.
SELECT_MIN = 1 << 17


def percentile_edges(s, q):
    """``np.percentile(s, 100 * q)`` (linear interpolation), bit for bit, for
    scores in [0, 1], without a partition of all of ``s``.

    The order statistics it needs are located by a histogram of ``G`` equal
    cells of [0, 1]: one pass counts the cells, a second gathers the scores
    of the few cells that hold a needed rank, and only those are sorted
    (numpy's ``np.partition`` selects ~30 ranks in ~10 passes over all the
    scores). The interpolation is numpy's, operation for operation.
    """
    s = np.asarray(s, dtype=np.float64)
    percent = np.asarray(q, dtype=np.float64) * 100
    if s.shape[0] < SELECT_MIN:
        return np.percentile(s, percent)
    plan = _PercentilePlan(s.shape[0], percent)
    counts = _cell_counts(s)
    cell, wanted = _rank_cells(counts, plan.ranks)
    if _crowded(counts, wanted):
        return np.percentile(s, percent)
    picked = np.concatenate([part[wanted[c]] for part, c in _chunk_cells(s)])
    return plan.edges(_select(picked, _local_ranks(counts, wanted, cell, plan.ranks)))


class _PercentilePlan:
    """The ranks ``np.percentile(s, percent)`` reads and its interpolation.

    numpy's linear method: virtual index ``(n - 1) * q`` with ``q = percent /
    100``, its floor and the next rank (the last rank when the index reaches
    it), ``gamma = index - floor``, then ``a + (b - a) gamma``, or ``b - (b -
    a)(1 - gamma)`` for ``gamma >= 1/2``.
    """

    def __init__(self, n, percent):
        q = np.true_divide(percent, 100)
        virtual = (n - 1) * q
        prev = np.floor(virtual)
        prev[virtual >= n - 1] = -1
        self.gamma = virtual - prev
        prev = prev.astype(np.intp)
        nxt = np.where(prev < 0, -1, prev + 1)
        self.prev, self.next = prev % n, nxt % n
        self.ranks = np.unique(np.concatenate([self.prev, self.next]))

    def edges(self, values):
        """The percentiles from the order statistics at ``self.ranks``."""
        a = values[np.searchsorted(self.ranks, self.prev)]
        b = values[np.searchsorted(self.ranks, self.next)]
        diff = b - a
        out = a + diff * self.gamma
        upper = self.gamma >= 0.5
        out[upper] = (b - diff * (1 - self.gamma))[upper]
        return out


def _chunk_cells(s):
    """``(chunk, floor(chunk * G))`` over cache-sized chunks of scores in
    [0, 1] (``G`` for 1.0; the product is exact for a power of two ``G`` and
    the cast truncates it). The cell buffer is reused from chunk to chunk."""
    G = _SELECT_CELLS
    buf = np.empty(min(s.shape[0], _CHUNK), dtype=np.intp)
    for start in range(0, s.shape[0], _CHUNK):
        part = s[start : start + _CHUNK]
        c = buf[: part.shape[0]]
        np.multiply(part, G, out=c, casting="unsafe")
        yield part, c


def _cell_counts(s):
    """Number of scores in each of the ``G + 1`` cells of :func:`_chunk_cells`."""
    G = _SELECT_CELLS
    counts = np.zeros(G + 1, dtype=np.intp)
    for _, c in _chunk_cells(s):
        counts += np.bincount(c, minlength=G + 1)
    if counts.shape[0] > G + 1:
        raise ValueError("scores must lie in [0, 1]")
    return counts


def _rank_cells(counts, ranks):
    """Cell of each rank (of the sorted scores) and the mask of those cells."""
    cell = np.searchsorted(np.cumsum(counts), ranks, side="right")
    wanted = np.zeros(counts.shape[0], dtype=bool)
    wanted[cell] = True
    return cell, wanted


def _crowded(counts, wanted):
    """The cells to gather hold over 1/16 of the scores (ties or a tight
    cluster): then a partition of all of them is as fast."""
    return 16 * int(counts[wanted].sum()) > int(counts.sum())


def _select(values, local):
    """``np.sort(values)[local]`` (the gathered scores are few)."""
    return np.sort(values)[local]


def _local_ranks(counts, wanted, cell, ranks):
    """Position of each rank among the sorted scores of the wanted cells: the
    rank less the scores of the cells below that were not gathered."""
    skipped = np.where(wanted, 0, counts)
    return ranks - (np.cumsum(skipped) - skipped)[cell]


def quantile_table(y, s, n_bins):
    """:func:`bin_table` of the edges :func:`quantile_edges` of unit weights
    (0/1 labels ``y``, scores in [0, 1]), in two passes over the scores.

    The first pass makes a histogram of the cells of
    :func:`percentile_edges`: per cell the number of scores, of positive
    labels and the sum of the scores. An edge lies between two consecutive
    order statistics, hence in the cell of one of them or in an empty cell
    between, so every other cell lies inside one bin, known once the counts
    are: its sums go to that bin whole. The second pass gathers the scores
    of the cells holding a needed rank, which give the edges and are then
    placed by search. The counts and ``sum y`` are exact; ``sum s`` of a bin
    is added per cell, then per bin (it may differ from a single bincount by
    round-off, an ulp per addition).
    """
    n = s.shape[0]
    plan = _PercentilePlan(n, np.linspace(0.0, 1.0, n_bins + 1) * 100)
    G = _SELECT_CELLS
    slots = G + 1
    # per cell: scores with label 0 (first G + 1 keys), with label 1 (next
    # G + 1) and the sum of the scores
    count = np.zeros(2 * slots, dtype=np.intp)
    cell_sum = np.zeros(slots)
    lab = np.empty(min(n, _CHUNK), dtype=np.intp)
    start = 0
    for part, c in _chunk_cells(s):
        k = part.shape[0]
        sums = np.bincount(c, weights=part, minlength=slots)
        if sums.shape[0] > slots:
            raise ValueError("scores must lie in [0, 1]")
        cell_sum += sums
        np.multiply(y[start : start + k], slots, out=lab[:k], casting="unsafe")
        lab[:k] += c
        count += np.bincount(lab[:k], minlength=2 * slots)
        start += k
    counts = count[:slots] + count[slots:]
    cell, wanted = _rank_cells(counts, plan.ranks)
    if _crowded(counts, wanted):
        edges = np.percentile(s, np.linspace(0.0, 1.0, n_bins + 1) * 100)
        return bin_table(y, s, None, edges, unit_weight=True)
    # bin of each cell that holds no needed rank: the number of interior
    # edges whose upper order statistic lies in a cell below it
    inner_next = np.sort(cell[np.searchsorted(plan.ranks, plan.next[1:-1])])
    cell_bin = np.searchsorted(inner_next, np.arange(slots), side="left")
    whole = ~wanted
    picked_s, picked_y = [], []
    m_buf = np.empty(min(n, _CHUNK), dtype=bool)
    start = 0
    for part, c in _chunk_cells(s):
        k = part.shape[0]
        m = m_buf[:k]
        np.take(wanted, c, out=m)
        if m.any():
            picked_s.append(part[m])
            picked_y.append(y[start : start + k][m])
        start += k
    ps, py = np.concatenate(picked_s), np.concatenate(picked_y)
    edges = plan.edges(_select(ps, _local_ranks(counts, wanted, cell, plan.ranks)))
    inner = edges[1:-1]
    # each edge is in a gathered or an empty cell (see above)
    edge_cell = np.minimum((inner * G).astype(np.intp), slots - 1)
    if np.any(~wanted[edge_cell] & (counts[edge_cell] > 0)):  # pragma: no cover
        raise AssertionError("quantile edge outside the gathered cells")
    pb = np.searchsorted(inner, ps, side="left")
    kb = cell_bin[whole]
    positive = np.bincount(kb, weights=count[slots:][whole], minlength=n_bins)
    positive += np.bincount(pb, weights=py, minlength=n_bins)
    total = np.bincount(kb, weights=counts[whole], minlength=n_bins)
    total += np.bincount(pb, minlength=n_bins)
    sws = np.bincount(kb, weights=cell_sum[whole], minlength=n_bins)
    sws += np.bincount(pb, weights=ps, minlength=n_bins)
    return table_from_sums(edges, total, positive, sws, total)


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


def bin_table(y, s, w, edges, index=None, *, unit_weight=None):
    """Per-bin table of one binary problem; ``index`` is the bin of each score
    (:func:`assign_bins` of ``edges`` when not given, then found chunk by
    chunk with the sums, see :func:`_lookup_sums`). ``unit_weight`` says
    whether ``w`` is all ones (checked when ``None``)."""
    n_bins = edges.shape[0] - 1
    if unit_weight is None:
        unit_weight = bool(w.min() == 1.0 and w.max() == 1.0)
    if index is None and s.ndim == 1 and s.shape[0] >= _CHUNK:
        return table_from_sums(edges, *_lookup_sums(y, s, w, edges, unit_weight))
    b = assign_bins(s, edges) if index is None else index
    count = np.bincount(b, minlength=n_bins)
    if unit_weight:
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


# Cells of the lookup table of :func:`_lookup_sums`: ``s * G`` is exact, the
# table (32 KB) stays in L1 and a bin of 1 / 15 spans ~270 cells.
_LOOKUP_CELLS = 1 << 12


def _lookup_sums(y, s, w, edges, unit_weight):
    """Bin sums ``(sum w, sum w y, sum w s, count)`` of :func:`assign_bins`
    of ``edges`` for 0/1 labels ``y``, in one pass of cache-sized chunks.

    A score's bin is read from a table of the ``G`` cells ``[j / G, (j + 1)
    / G)``; scores in a cell that holds an interior edge, in the first or the
    last cell (0.0, 1.0, anything clipped there) are searched. The bin
    numbers of a chunk stay in the cache for its bincounts instead of being
    written out and read three times. Each weighted bincount of a chunk
    starts from the sums so far (the first ``n_bins`` entries of its input
    are bin ``k`` with weight ``sum_k``), so the sums are those of one
    bincount over all the scores, bit for bit. Without weights one count of
    the keys ``bin + n_bins * y`` gives the count and ``sum y`` (exact
    integers) of every bin.
    """
    inner = edges[1:-1]
    n_bins = edges.shape[0] - 1
    G = _LOOKUP_CELLS
    below = np.searchsorted(inner, np.arange(G + 1) / G, side="left")
    table = np.where(below[:-1] == below[1:], below[:-1], -1)
    table = np.concatenate([[-1], table[1:], [-1]]).astype(np.intp)
    n = s.shape[0]
    count = np.zeros(2 * n_bins if unit_weight else n_bins, dtype=np.intp)
    sums = [np.zeros(n_bins) for _ in range(1 if unit_weight else 3)]
    size = min(n, _CHUNK)
    key = np.empty(n_bins + size, dtype=np.intp)
    key[:n_bins] = np.arange(n_bins)
    val = np.empty(n_bins + size)
    c_buf = np.empty(size, dtype=np.intp)
    m_buf = np.empty(size, dtype=bool)
    for start in range(0, n, _CHUNK):
        sc = s[start : start + _CHUNK]
        k = sc.shape[0]
        c, b, m = c_buf[:k], key[n_bins : n_bins + k], m_buf[:k]
        with np.errstate(invalid="ignore"):  # NaN: clipped and searched
            np.multiply(sc, G, out=c, casting="unsafe")
        np.take(table, c, out=b, mode="clip")
        np.less(b, 0, out=m)
        if m.any():
            near = np.flatnonzero(m)
            b[near] = np.searchsorted(inner, sc[near], side="left")
        yc = y[start : start + k]
        if unit_weight:
            np.multiply(yc, n_bins, out=c, casting="unsafe")
            c += b
            count += np.bincount(c, minlength=2 * n_bins)
            columns = (sc,)
        else:
            count += np.bincount(b, minlength=n_bins)
            wc = w[start : start + k]
            columns = (wc, (wc, yc), (wc, sc))
        for acc, col in zip(sums, columns, strict=True):
            val[:n_bins] = acc
            if isinstance(col, tuple):
                np.multiply(*col, out=val[n_bins : n_bins + k])
            else:
                val[n_bins : n_bins + k] = col
            acc[:] = np.bincount(key[: n_bins + k], weights=val[: n_bins + k])
    if unit_weight:
        positive = count[n_bins:]
        count = count[:n_bins] + positive
        return count.astype(np.float64), positive.astype(np.float64), sums[0], count
    return (*sums, count)


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
