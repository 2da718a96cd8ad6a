"""Sufficient statistics of streamed or partitioned data, and their map-reduce.

Every grid estimate in skcalib is a function of per-cell moments of a fine
uniform grid (see :mod:`.grid`). They are sums over samples, so a stream of
chunks, the partitions of a cluster or the blocks of a dask array give the same
numbers as one in-memory pass: compute the moments of each piece, add them up,
finish with the usual numpy code.

The moments are kept per *label slot* (one slot per class seen) rather than per
positive/negative label, so that pieces seeing only one class, or the classes
in a different order, still merge; which class is positive is decided at the
end. dask is an optional dependency and is only imported by the functions that
build a dask graph.
"""

from __future__ import annotations

import numpy as np

from .binning import assign_uniform_bins, table_from_sums
from .grid import bin_positions, statistics_from_cells
from .window import nw_error_bound

# Moments per cell and label slot: sum w, sum w theta, sum w theta^2, the
# number of samples and sum w^2 (theta = fractional position in the cell).
# The grid statistics need the first three, the bin tables the count, the
# null draws of the exact tests on weighted data the last. Without weights
# the last two equal the first and cost nothing.
N_MOMENTS = 5
N_SLOTS = 2
# Samples are binned in pieces whose temporaries stay in the L2 cache.
_PIECE = 2**17


def empty_moments(M):
    """Zero moments for a grid of ``M`` cells: shape ``(N_MOMENTS, N_SLOTS, M)``."""
    return np.zeros((N_MOMENTS, N_SLOTS, M), dtype=np.float64)


def add_cell_moments(out, slot, s, w=None):
    """Add the cell moments of one chunk to ``out`` (in place).

    Parameters
    ----------
    out : ndarray of shape (N_MOMENTS, N_SLOTS, M)
    slot : int or ndarray of shape (n,) of int
        Label slot of every sample (a scalar when the chunk has one class).
    s : ndarray of shape (n,)
        Scores in [0, 1] (any float dtype).
    w : ndarray of shape (n,) or None
        Weights; ``None`` means unit weights and takes a faster path (the
        count and ``sum w^2`` then equal ``sum w``).

    Notes
    -----
    Cell ``j`` holds the scores of bin ``j`` of
    :func:`.binning.assign_uniform_bins` (``2**16`` bins: ``(j/M, (j+1)/M]``,
    the first one closed), so that binned errors built from whole cells follow
    the bin rule of the in-memory metrics. ``theta`` is then in ``(0, 1]``
    (0 for a score of 0); the linear binning of a score on a grid node is the
    same from either side, so the grid statistics do not depend on this.

    The key of a score is ``ceil(s M)`` (exact: ``M`` is a power of two) in
    a table of ``M + 1`` cells per slot, so that no clipping pass is needed:
    a score of 0 lands in an extra cell 0 with ``theta = 1`` and is moved to
    the first cell (``theta = 0``) once per chunk. Per piece: four
    elementwise passes and one bincount per moment. The bincounts are the
    cost: each is one scatter pass over a table of ``2 (M + 1)`` doubles,
    and a fused loop doing the three scatters at once (numba) was measured
    no faster, being bound by the memory traffic to the tables.
    """
    M = out.shape[2]
    rows = 3 if w is None else N_MOMENTS
    acc = np.zeros((rows, N_SLOTS * (M + 1)), dtype=np.float64)
    _add_moments(acc, slot, s, w, M)
    acc = acc.reshape(rows, N_SLOTS, M + 1)
    # Cell 0 holds the scores equal to 0 with theta = 1: in the first cell
    # their theta is 0, so only the weight and the count move.
    acc[0, :, 1] += acc[0, :, 0]
    if w is not None:
        acc[3:, :, 1] += acc[3:, :, 0]
    out[:3] += acc[:3, :, 1:]
    for row in (3, 4):
        out[row] += acc[0 if w is None else row, :, 1:]
    return out


def _add_moments(acc, slot, s, w, M):
    n = s.shape[0]
    size = acc.shape[1]
    m = min(n, _PIECE)
    x, t = np.empty(m), np.empty(m)
    key = np.empty(m, dtype=np.intp)
    scalar_slot = np.ndim(slot) == 0
    for start in range(0, n, _PIECE):
        stop = min(start + _PIECE, n)
        k = stop - start
        xb, tb, kb = x[:k], t[:k], key[:k]
        np.multiply(s[start:stop], M, out=xb, dtype=np.float64)
        np.ceil(xb, out=tb)
        np.copyto(kb, tb, casting="unsafe")
        if not scalar_slot:
            kb += np.multiply(slot[start:stop], M + 1, dtype=np.intp)
        elif slot:
            kb += M + 1
        tb -= 1.0
        theta = np.subtract(xb, tb, out=xb)  # exact, in (0, 1]
        if w is None:
            acc[0] += np.bincount(kb, minlength=size)
            acc[1] += np.bincount(kb, weights=theta, minlength=size)
            theta *= theta
            acc[2] += np.bincount(kb, weights=theta, minlength=size)
            continue
        ww = w[start:stop]
        acc[3] += np.bincount(kb, minlength=size)
        acc[0] += np.bincount(kb, weights=ww, minlength=size)
        acc[4] += np.bincount(kb, weights=np.multiply(ww, ww, out=tb), minlength=size)
        wt = np.multiply(ww, theta, out=tb)
        acc[1] += np.bincount(kb, weights=wt, minlength=size)
        wt *= theta
        acc[2] += np.bincount(kb, weights=wt, minlength=size)


def node_statistics(moments, pos_slot, neg_slot):
    """Grid statistics ``(sum w, sum w*y, sum w*s)`` per node, shape ``(M + 1, 3)``.

    ``pos_slot`` / ``neg_slot`` index the label slots of the positive and the
    negative class (``None`` when that class was never seen).
    """
    M = moments.shape[2]
    cells = np.zeros((2 * M, 3), dtype=np.float64)
    if neg_slot is not None:
        cells[:M] = moments[:3, neg_slot].T
    if pos_slot is not None:
        cells[M:] = moments[:3, pos_slot].T
    return statistics_from_cells(cells, M)


def grid_bin_edges(n_bins, M):
    """Uniform bin edges moved to the nearest grid point ``j / M``.

    When ``n_bins`` divides ``M`` the edges are exactly ``k / n_bins``.
    """
    return np.rint(np.linspace(0.0, M, n_bins + 1)).astype(np.intp)


def grid_bin_table(moments, pos_slot, n_bins):
    """Per-bin sums of the binned calibration errors from cell moments.

    The cells are those of :func:`add_cell_moments`, i.e. the bins of
    :func:`.binning.assign_uniform_bins` with ``2**16`` bins, and a bin here
    is a union of whole cells between the edges of :func:`grid_bin_edges`:
    its sums are exact sums over the samples it holds, and it follows the
    rule of :func:`.binning.assign_bins` (interior edges in the bin below).
    """
    M = moments.shape[2]
    node = grid_bin_edges(n_bins, M)
    nonempty = np.flatnonzero(np.diff(node) > 0)
    score_sum = (np.arange(M) * moments[0] + moments[1]) / M
    per_cell = np.stack([moments[0], score_sum, moments[3]])
    sums = np.zeros((N_BIN_SUMS, N_SLOTS, n_bins), dtype=np.float64)
    sums[:, :, nonempty] = np.add.reduceat(per_cell, node[nonempty], axis=2)
    return bin_table_from_sums(sums, pos_slot, node / M)


# Exact per-bin sums per label slot: sum w, sum w s, count.
N_BIN_SUMS = 3


def add_bin_sums(out, slot, s, w):
    """Add one chunk's per-bin sums for ``out.shape[2]`` uniform bins (the bins
    of :func:`.binning.assign_uniform_bins`, as in memory)."""
    n_bins = out.shape[2]
    key = assign_uniform_bins(s, n_bins)
    if np.ndim(slot):
        key += np.multiply(slot, n_bins, dtype=np.intp)
    elif slot:
        key += n_bins
    size = N_SLOTS * n_bins
    if w is None:
        count = np.bincount(key, minlength=size).reshape(N_SLOTS, n_bins)
        out[0] += count
        out[1] += np.bincount(key, weights=s, minlength=size).reshape(N_SLOTS, n_bins)
        out[2] += count
        return out
    for i, v in enumerate((w, w * s)):
        out[i] += np.bincount(key, weights=v, minlength=size).reshape(N_SLOTS, n_bins)
    out[2] += np.bincount(key, minlength=size).reshape(N_SLOTS, n_bins)
    return out


def bin_table_from_sums(sums, pos_slot, edges):
    """The :class:`.binning.BinTable` of sums from :func:`add_bin_sums`."""
    total = sums.sum(axis=1)
    label = sums[0, pos_slot] if pos_slot is not None else np.zeros(total.shape[1])
    return table_from_sums(edges, total[0], label, total[1], total[2])


def is_dask_collection(x):
    """True for dask collections, without importing dask."""
    return type(x).__module__.partition(".")[0] == "dask" and hasattr(
        x, "__dask_graph__"
    )


def any_dask(*arrays):
    return any(is_dask_collection(a) for a in arrays)


def _merge_all(merge, *parts):
    out = parts[0]
    for p in parts[1:]:
        out = merge(out, p)
    return out


def _broadcast(obj):
    """``obj`` as a graph input: scattered once to every worker when a
    distributed client is active (keeps large objects out of the graph)."""
    import dask

    try:
        from distributed import get_client

        return get_client().scatter(obj, broadcast=True)
    except (ImportError, ValueError):  # no distributed client
        return dask.delayed(obj)


def map_reduce_blocks(
    func, merge, arrays, *, split_every=8, shared=None, offsets=False
):
    """Apply ``func`` to aligned row blocks of dask arrays, tree-reduce with ``merge``.

    Parameters
    ----------
    func : callable
        ``func(*blocks)`` on the numpy blocks (``None`` stays ``None``), returning
        a partial result; must be picklable for a process-based cluster.
    merge : callable
        Associative ``merge(a, b)`` of two partial results.
    arrays : sequence of array-like or None
        1-D or 2-D arrays with the same number of rows; numpy arrays are
        wrapped with the row chunks of the first dask array. 2-D arrays are
        kept whole along their second axis.
    split_every : int
        Fan-in of the reduction tree.
    shared : object, default=None
        If given, passed as the first argument of every ``func`` call; it is
        put in the graph once, so a large object travels once per worker.
    offsets : bool, default=False
        Pass the row offset of each block (after ``shared``) to ``func``.

    Returns
    -------
    The merged result, computed with the active dask scheduler.
    """
    import dask
    import dask.array as da

    ref = next(a for a in arrays if is_dask_collection(a))
    if any(np.isnan(c) for c in ref.chunks[0]):
        raise ValueError(
            "dask arrays with unknown chunk sizes are not supported; call "
            "compute_chunk_sizes() first."
        )
    rows = ref.chunks[0]
    aligned = []
    for a in arrays:
        if a is None:
            aligned.append(None)
            continue
        a = a if is_dask_collection(a) else da.asarray(np.asarray(a))
        if a.ndim == 0 or a.shape[0] != ref.shape[0]:
            raise ValueError(
                f"Inconsistent numbers of samples: {ref.shape[0]} and "
                f"{a.shape[0] if a.ndim else 'a scalar'}."
            )
        chunks = {0: rows, **{k: -1 for k in range(1, a.ndim)}}
        aligned.append(a.rechunk(chunks).to_delayed().ravel())
    n_blocks = len(rows)
    fn = dask.delayed(func, pure=True)
    head = [] if shared is None else [_broadcast(shared)]
    starts = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(int).tolist()
    parts = [
        fn(
            *head,
            *([starts[b]] if offsets else []),
            *(None if a is None else a[b] for a in aligned),
        )
        for b in range(n_blocks)
    ]
    reduce_ = dask.delayed(_merge_all, pure=True)
    while len(parts) > 1:
        parts = [
            reduce_(merge, *parts[i : i + split_every])
            for i in range(0, len(parts), split_every)
        ]
    (result,) = dask.compute(parts[0])
    return result


# -- certified NW bound in two passes -----------------------------------------
def _splitmix64(x):
    """The splitmix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def stream_folds(start, n, seed, n_splits):
    """Fold of the samples at stream positions ``start, ..., start + n - 1``.

    A hash of the position and the seed: the same sample gets the same fold in
    every pass and on every worker, and the folds do not depend on the data.
    """
    key = _splitmix64(np.array([seed], dtype=np.uint64))[0]
    pos = np.arange(start, start + n, dtype=np.uint64) ^ key
    return (_splitmix64(pos) % np.uint64(n_splits)).astype(np.intp)


def add_fold_cell_sums(out, fold, s, y):
    """Pass 1: per fold and cell ``[count, sum theta, sum theta^2, sum y]``.

    ``out`` has shape ``(4, n_splits, M)``; the count is kept exactly (int64
    values stored in float64 are exact below 2**53).
    """
    n_splits, M = out.shape[1], out.shape[2]
    size = n_splits * M
    cell, theta = bin_positions(s, M)
    key = fold * M + cell
    out[0] += np.bincount(key, minlength=size).reshape(n_splits, M)
    out[1] += np.bincount(key, weights=theta, minlength=size).reshape(n_splits, M)
    out[2] += np.bincount(key, weights=theta * theta, minlength=size).reshape(
        n_splits, M
    )
    out[3] += np.bincount(key, weights=y, minlength=size).reshape(n_splits, M)
    return out


def add_fold_cell_counts(out, fold, s):
    """Pass 2: add the number of held-out scores per fold and cell to ``out``
    (shape ``(n_splits, M)``)."""
    n_splits, M = out.shape
    cell, _ = bin_positions(s, M)
    out += np.bincount(fold * M + cell, minlength=n_splits * M).reshape(n_splits, M)
    return out


def cell_window_influence(train_counts, valid_counts, window_counts, r):
    """``Σ_j ĉ_j²`` of the cell-window smoother (see :func:`cell_window_tables`).

    A training point in cell ``c`` enters the window mean of every held-out
    score in cells ``c - r .. c + r`` with weight ``1 / count`` of that
    window, so ``ĉ(c) = (1/m) Σ_{|c' - c| <= r} n_V(c') / count(c')``; the sum
    over training points is ``Σ_c n_T(c) ĉ(c)²``.
    """
    M = train_counts.shape[0]
    m = valid_counts.sum()
    safe = np.maximum(window_counts, 1.0)
    a = np.where(window_counts > 0, valid_counts / safe, 0.0) / m
    c = np.arange(M)
    prefix = _prefix(a)
    influence = prefix[np.minimum(c + r, M - 1) + 1] - prefix[np.maximum(c - r, 0)]
    return float(np.dot(train_counts, influence * influence))


def _window_sum(prefix, lo, hi):
    return prefix[hi] - prefix[lo]


def _prefix(v):
    out = np.zeros(v.shape[0] + 1, dtype=v.dtype)
    np.cumsum(v, out=out[1:])
    return out


def cell_prefix_sums(sums):
    """Prefix sums over the cells of one training part, for :func:`cell_window_tables`.

    ``sums`` holds ``[count, sum theta, sum theta^2, sum y]`` per cell (shape
    ``(4, M)``). Counts and their ``j``- and ``j^2``-weighted versions are kept
    in wrapping uint64 arithmetic: window differences of them are then exact
    whenever the result fits in int64 (it would take more than 1e10 samples in
    one window to overflow), so the second moment does not lose digits to
    cancellation however far the window is from 0.
    """
    M = sums.shape[1]
    n_int = np.rint(sums[0]).astype(np.uint64)
    j = np.arange(M, dtype=np.uint64)
    return {
        "n": _prefix(n_int),
        "jn": _prefix(j * n_int),
        "jjn": _prefix(j * j * n_int),
        "t1": _prefix(sums[1]),
        "t2": _prefix(sums[2]),
        "jt1": _prefix(np.arange(M) * sums[1]),
        "y": _prefix(sums[3]),
    }


def cell_window_tables(prefix, r, cells=None):
    """Box-window statistics of every cell (or of ``cells``) for a window of
    ``2 r + 1`` cells.

    The window of cell ``c`` is cells ``c - r .. c + r`` (clipped to the grid),
    all its training points weighted equally. ``prefix`` comes from
    :func:`cell_prefix_sums`.

    Returns ``count``, ``eta`` (mean label), ``p0 = mean(s_i - x_c)`` and
    ``q0 = mean((s_i - x_c)^2)`` around the cell centre ``x_c = (c + 1/2)/M``.
    """
    M = prefix["n"].shape[0] - 1
    c = np.arange(M) if cells is None else cells
    lo = np.maximum(c - r, 0)
    hi = np.minimum(c + r, M - 1) + 1
    cu = c.astype(np.uint64)

    def wsum(key):
        return _window_sum(prefix[key], lo, hi)

    count_u, jn = wsum("n"), wsum("jn")
    s1_u = jn - cu * count_u
    s2_u = wsum("jjn") - np.uint64(2) * cu * jn + cu * cu * count_u
    count = count_u.astype(np.float64)
    p1 = s1_u.view(np.int64).astype(np.float64)  # sum (j - c) n_j
    p2 = s2_u.view(np.int64).astype(np.float64)  # sum (j - c)^2 n_j
    t1, t2 = wsum("t1"), wsum("t2")
    jt1 = wsum("jt1") - c * t1
    safe = np.maximum(count, 1.0)
    # s_i - x_c = (o - 1/2 + theta_i) / M with o = j - c the cell offset.
    p0 = (p1 - 0.5 * count + t1) / (M * safe)
    q0 = (p2 - p1 + 0.25 * count + 2.0 * jt1 - t1 + t2) / (M * M * safe)
    return count, wsum("y") / safe, p0, np.maximum(q0, 0.0)


def select_window_cells(prefix, candidates, lip1, lip2):
    """Window half-width (in cells) minimising the mean of ``g`` over the
    training points, evaluated at the cell centres (uses the training part
    only; ``prefix`` from :func:`cell_prefix_sums`)."""
    weight = np.diff(prefix["n"]).astype(np.float64)
    # Only cells holding training points weigh in the criterion.
    cells = np.flatnonzero(weight)
    weight = weight[cells] / weight.sum()
    best, best_crit = candidates[0], np.inf
    for r in candidates:
        count, _, p0, q0 = cell_window_tables(prefix, int(r), cells)
        crit = (weight * nw_error_bound(count, p0, q0, lip1, lip2)).sum()
        if crit < best_crit:
            best, best_crit = int(r), crit
    return best


def nw_validation_terms(tables, fold, s, lip1, lip2):
    """Pass 2: ``|eta_hat(s) - s|`` and ``g(s)`` of each sample, from its fold's
    cell tables (``tables`` = (count, eta, p0, q0), each of shape
    ``(n_splits, M)``)."""
    count, eta, p0, q0 = tables
    M = count.shape[1]
    cell, theta = bin_positions(s, M)
    d = (theta - 0.5) / M
    key = fold * M + cell
    n_w = count.ravel()[key]
    pk = p0.ravel()[key]
    m1 = pk - d
    m2 = np.maximum(q0.ravel()[key] - 2.0 * d * pk + d * d, 0.0)
    err = np.where(n_w > 0, np.abs(eta.ravel()[key] - s), 0.0)
    return err, nw_error_bound(n_w, m1, m2, lip1, lip2)


def moments_by_group(values, group, n_groups):
    """Per-group ``(count, mean, M2)`` of ``values`` (M2 = sum of squared
    deviations), ready for :func:`merge_moments`."""
    n = np.bincount(group, minlength=n_groups).astype(np.float64)
    mean = np.bincount(group, weights=values, minlength=n_groups) / np.maximum(n, 1)
    dev = values - mean[group]
    return np.stack(
        [n, mean, np.bincount(group, weights=dev * dev, minlength=n_groups)]
    )


def merge_moments(a, b):
    """Chan et al.'s pairwise merge of ``(count, mean, M2)`` rows."""
    n = a[0] + b[0]
    safe = np.maximum(n, 1)
    delta = b[1] - a[1]
    mean = a[1] + delta * b[0] / safe
    m2 = a[2] + b[2] + delta * delta * a[0] * b[0] / safe
    return np.stack([n, mean, m2])


def stream_priority(start, n, seed):
    """Uniform [0, 1) priority of each stream position, independent of
    :func:`stream_folds` (another hash key): keeping the samples of smallest
    priority selects a random subset that does not depend on the data."""
    key = _splitmix64(np.array([seed ^ 0x5DEECE66D], dtype=np.uint64))[0]
    pos = np.arange(start, start + n, dtype=np.uint64) ^ key
    return (_splitmix64(pos) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def keep_smallest(priority, columns, k):
    """The (at most) ``k`` rows of smallest priority, in increasing priority."""
    if priority.shape[0] > k:
        idx = np.argpartition(priority, k - 1)[:k]
        priority = priority[idx]
        columns = [c[idx] for c in columns]
    order = np.argsort(priority, kind="stable")
    return priority[order], [c[order] for c in columns]
