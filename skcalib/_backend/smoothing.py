"""Nadaraya-Watson smoothers.

Dirichlet-kernel smoother on the probability simplex, used by ECE-KDE
(leave-one-out, at the training points) and by the multiclass recalibrator
(at new points). The evaluation streams blocks of evaluation rows over tiles
of centres, so memory is ``O(chunk_size * TILE_COLUMNS)``, never
``n_eval * n_train``.

Weights are frequency weights: a point of weight ``w`` counts as ``w`` copies
of itself. Leaving a point out therefore leaves ``max(w - 1, 0)`` copies of it
among its own neighbours, and ``w`` copies form ``w * max(w - 1, 0)`` ordered
pairs of distinct samples. With integer weights every statistic equals the one
computed on the data with rows repeated; weights ``<= 1`` act as relative
(importance) weights, and multiplying all of them by a constant changes
nothing.
"""

from __future__ import annotations

import queue
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from .kde.statistics import finish_statistics as _finish
from .kde.statistics import kde_error_terms as _kde_error_terms
from .kde.statistics import label_squared_error as _label_squared_error
from .kernels import SIMPLEX_EPS, clip_simplex, dirichlet_log_normalizer
from .threads import one_blas_thread

__all__ = ["DirichletSmootherResult", "dirichlet_nw", "default_chunk_size"]

_EXP_FLOOR = -700.0

# From this many training points (columns of a chunk) the kernel weights are
# exponentiated in single precision, clamped at _EXP_FLOOR_SINGLE (below it
# float32 turns subnormal). The float64 exp is half of the whole cost of an
# entry (5.4 of about 11 ns on AVX2, where numpy's float32 exp is
# vectorised and its float64 one is not): at n = 2e4, K = 10 the smoother
# took 3.73 s against 5.06, the default p = 2 call at 1e5 100 s against
# 132 (a busy machine). Each weight is then exact to 6e-8 relative; on
# 32 inputs (K = 2 to 100, ties, weights, bandwidths 1e-5 to 1) the
# estimates moved by at most 5e-9 relative and the per-sample terms by
# 6e-6, against sampling errors of the estimate of 1e-3 or more at these
# sizes. Below it (calls of under 15 s) every weight is float64.
SINGLE_EXP_COLUMNS = 2**15
_EXP_FLOOR_SINGLE = -87.0

# Columns per tile of the streamed smoother (tiled_sums), and bytes of a
# float64 tile (rows = TILE_BYTES / (8 * columns)). At n = 1e5, K = 10 tiles
# of 1 to 2 MB and 1024 to 4096 columns took 7.8 to 9.5 ns of CPU per
# kernel entry, within the noise of a busy machine; chunks of 5 whole rows
# took 10.5 to 11.5.
TILE_COLUMNS = 2048
TILE_BYTES = 2**21
# A row's reference (of the sums without its leader) moves only when a tile
# exceeds it by more than this: weights then reach e (float32 has room to
# e^88), the float32 argument of the largest weights rounds by at most
# 6e-8 absolute, as the weight itself does, and a fifth of the rows of a
# tile no longer move their reference and rescale their sums (n = 1e5,
# K = 10: from 20 of 125 rows per tile to 1, after the first tile).
_REFERENCE_SLACK = 1.0
# Up to this many label segments in a tile, the class sums of a tile are
# taken segment by segment.
_FEW_SEGMENTS = 4


def _row_dots(G):
    """``sum_j G_ij^2`` per row, without an array of the squares."""
    # np.vecdot (numpy 2) took 0.2 ns per entry on a (128, 1800) view, the
    # einsum 0.54, squaring then summing 1.3.
    if _VECDOT is not None:
        return _VECDOT(G, G)
    return np.einsum("ij,ij->i", G, G)


_VECDOT = getattr(np, "vecdot", None)


def default_chunk_size(n_cols, chunk_bytes=TILE_BYTES):
    """Evaluation rows per block so that a float64 tile fits ``chunk_bytes``."""
    return int(max(1, chunk_bytes // (8 * max(int(n_cols), 1))))


class ChunkBuffers:
    """Work arrays of ``(rows, cols)`` reused by the chunks of one worker.

    A fresh array of megabytes per chunk pages in anew whenever the
    allocator has handed the previous one back to the system: the
    sequential smoother at n = 2e4 spent 4 of its 12 s in page faults.

    Parameters
    ----------
    rows, cols : int
        Largest chunk shape.
    """

    def __init__(self, rows, cols):
        self.shape = (int(rows), int(cols))
        self._arrays = {}

    def get(self, name, rows, dtype=np.float64, cols=None):
        """A contiguous ``(rows, cols)`` work array ``name`` (default: all columns)."""
        key = (name, np.dtype(dtype))
        if key not in self._arrays:
            self._arrays[key] = np.empty(self.shape[0] * self.shape[1], dtype=dtype)
        cols = self.shape[1] if cols is None else cols
        return self._arrays[key][: rows * cols].reshape(rows, cols)


class BufferPool:
    """One :class:`ChunkBuffers` per concurrently running chunk worker.

    Parameters
    ----------
    rows, cols : int
        Largest chunk shape.
    """

    def __init__(self, rows, cols):
        self.shape = (rows, cols)
        self._free = queue.SimpleQueue()

    def __reduce__(self):
        # Process backends (dask, loky) pickle the chunk function with its
        # pool: each copy starts empty and lends buffers in its own process.
        return type(self), self.shape

    @contextmanager
    def take(self):
        """Context manager lending a set of buffers to the running chunk."""
        try:
            buffers = self._free.get_nowait()
        except queue.Empty:
            buffers = ChunkBuffers(*self.shape)
        try:
            yield buffers
        finally:
            self._free.put(buffers)


@dataclass(frozen=True)
class DirichletSmootherResult:
    """Row statistics of the Dirichlet Nadaraya-Watson smoother.

    Attributes
    ----------
    ratio : ndarray of shape (n_eval, n_outputs) or None
        ``R_j = sum_i v_ji k(x_j; f_i) y_i / sum_i v_ji k(x_j; f_i)``.
    effective_sample_size : ndarray of shape (n_eval,)
        ``(sum_i v_ji k_ji)^2 / sum_i (self-pair mass)``; ``1 / s_j`` for unit
        weights, with ``s_j = sum_i W_ji^2`` and ``W`` the row-normalised kernel.
    log_density : ndarray of shape (n_eval,)
        Log of the weighted mean kernel ``sum_i v_ji k_ji / sum_i v_ji``.
    pair_agreement : ndarray of shape (n_eval,) or None
        U-statistic estimate of ``||E[e_y | x_j]||^2``: the kernel-weighted
        fraction of pairs of distinct neighbours that share a label,
        ``(||R_j||^2 - s_j) / (1 - s_j)`` for unit weights.
    squared_error : ndarray of shape (n_eval,) or None
        U-statistic estimate of ``||E[e_y | x_j] - x_j||^2``: the kernel-weighted
        mean of ``<e_{y_i} - x_j, e_{y_i'} - x_j>`` over pairs ``i != i'`` of
        distinct neighbours, i.e. ``||R_j - x_j||^2`` without its diagonal
        terms, ``(||R_j - x_j||^2 - sum_i W_ji^2 ||e_{y_i} - x_j||^2) / (1 - s_j)``
        for unit weights.
    """

    ratio: np.ndarray | None
    effective_sample_size: np.ndarray
    log_density: np.ndarray
    pair_agreement: np.ndarray | None = None
    squared_error: np.ndarray | None = None


class DirichletCentres:
    """Bandwidth-free training side of the Dirichlet smoother.

    Centres are clipped into the open simplex and, when the targets are class
    labels, sorted by label so that per-class kernel sums are contiguous
    segment sums (``O(n)`` per row whatever the number of classes).

    Parameters
    ----------
    F : ndarray of shape (n, K)
        Kernel centres (probability vectors).
    Y : ndarray of shape (n,) of int or (n, q) of float
        Class indices in ``[0, K)`` or an arbitrary target matrix.
    weight : ndarray of shape (n,)
        Non-negative frequency weights.
    """

    def __init__(self, F, Y, weight, eps=SIMPLEX_EPS):
        F = clip_simplex(F, eps)
        Y = np.asarray(Y)
        w = np.asarray(weight, dtype=np.float64)
        self.n, self.K = F.shape
        self.labels = Y.ndim == 1
        if self.labels:
            order = np.argsort(Y, kind="stable")
            y = Y[order].astype(np.int64)
            self.n_outputs = self.K
            self.y = y
            self.seg_starts = np.flatnonzero(np.r_[True, y[1:] != y[:-1]])
        else:
            order = np.arange(self.n)
            self.Y = np.asarray(Y, dtype=np.float64)
            self.n_outputs = self.Y.shape[1]
        self.order = order
        self.position = np.empty(self.n, dtype=np.int64)
        self.position[order] = np.arange(self.n)
        self.F = F[order]
        self.w = w[order]
        with np.errstate(divide="ignore"):
            self.log_w = np.log(self.w)
        # Self-pair factor min(1, 1/w): w copies form w * max(w - 1, 0) pairs,
        # i.e. (w k)^2 * (1 - min(1, 1/w)) of the squared weighted kernel mass.
        self.unit_pairs = bool(np.all(self.w <= 1.0))
        self.pair_c = np.minimum(1.0, 1.0 / np.maximum(self.w, 1.0))
        self.total_w = float(self.w.sum())
        self._shift = {}

    def column_shift(self, bandwidth):
        """``c_i - log w_i``; ``log(x) . f_i / b`` minus it is ``log(w_i k)``."""
        key = float(bandwidth)
        if key not in self._shift:
            self._shift[key] = dirichlet_log_normalizer(self.F, key) - self.log_w
        return self._shift[key]

    def loo_columns(self, rows, *, whole_weight=False):
        """Column of each evaluation row's own centre, and its reweighting.

        Returns ``(cols, log_shift, diag_c)``: ``log_shift`` turns ``log(w k)``
        into ``log(max(w - 1, 0) k)`` (``-inf`` when no copy is left) and
        ``diag_c`` is the self-pair factor of the remaining copies. Weights
        are frequencies, so one copy is left out; ``whole_weight=True``
        leaves the whole centre out instead, for weights that are not
        counts (a sample of weight 2 must not vote for itself).
        """
        cols = self.position[rows]
        w = self.w[cols]
        rest = np.zeros_like(w) if whole_weight else w - 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            log_shift = np.where(rest > 0, np.log(rest) - np.log(w), -np.inf)
            diag_c = np.minimum(1.0, 1.0 / np.maximum(rest, 1.0))
        return cols, log_shift, diag_c

    def row_total_weight(self, rows=None):
        """``sum_i v_ji``: total weight seen by each row (with its own copy removed)."""
        if rows is None:
            return self.total_w
        return self.total_w - np.minimum(self.w[self.position[rows]], 1.0)


def finish_statistics(centres, sums, loo=None, *, ratio, ess, pairs, X=None):
    """Smoother statistics from the row sums of :func:`tiled_sums`.

    :func:`skcalib._backend.kde.statistics.finish_statistics` (the definition
    shared with the array-API engine) on the centres' labels and weights.

    Parameters
    ----------
    centres : DirichletCentres
    sums : dict
        :func:`tiled_sums` of the rows (one block, or several concatenated).
    loo : tuple or None
        ``centres.loo_columns`` of the same rows, or None.
    ratio, ess, pairs, X
        As in :func:`kernel_statistics`.

    Returns
    -------
    dict
        As :func:`kernel_statistics`.
    """
    return _finish(
        sums,
        labels=centres.y if centres.labels else None,
        pair_c=centres.pair_c,
        loo=None if loo is None else (loo[0], loo[2]),
        ratio=ratio,
        ess=ess,
        pairs=pairs,
        X=X,
        xp=np,
    )


def iter_chunks(n, chunk_size):
    """Slices ``[start, stop)`` covering ``range(n)``."""
    return [slice(s, min(s + chunk_size, n)) for s in range(0, n, chunk_size)]


def map_chunks(func, n, chunk_size, n_jobs):
    """Run ``func(slice)`` over row chunks (threads: BLAS and ufuncs drop the GIL)."""
    chunks = iter_chunks(n, chunk_size)
    if n_jobs is None or n_jobs == 1 or len(chunks) == 1:
        return [func(sl) for sl in chunks]
    # Every worker runs its own products: BLAS threads on top of the workers
    # oversubscribe the cores (two workers were slower than one job).
    with one_blas_thread():
        return Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(func)(sl) for sl in chunks
        )


def dirichlet_nw(
    F_train,
    Y_train,
    w_train,
    F_eval=None,
    bandwidth=0.1,
    *,
    leave_one_out=False,
    pair_agreement=False,
    squared_error=False,
    chunk_size=None,
    n_jobs=None,
    eps=SIMPLEX_EPS,
    eval_rows=None,
):
    """Dirichlet-kernel Nadaraya-Watson smoother on the probability simplex.

    ``R_j = sum_i w_i k_b(x_j; f_i) y_i / sum_i w_i k_b(x_j; f_i)`` with the
    Dirichlet kernel ``k_b(x; f) = Dir(x; f / b + 1)`` (the kernel's parameters
    come from the centre ``f_i``; it is evaluated at ``x_j``). Computed as a
    row softmax of log-kernels, chunk by chunk.

    Parameters
    ----------
    F_train : ndarray of shape (n, K)
        Kernel centres; rows are probability vectors (zeros allowed: rows are
        clipped to ``[eps, 1 - eps]`` and renormalised).
    Y_train : ndarray of shape (n,) of int, or (n, q)
        Class indices in ``[0, K)`` (the ratio is then ``E[e_y | x]``) or any
        target matrix.
    w_train : ndarray of shape (n,)
        Non-negative frequency weights (see the module docstring).
    F_eval : ndarray of shape (m, K) or None
        Evaluation points; ``None`` means the training points.
    bandwidth : float
        ``b > 0``.
    leave_one_out : bool, default=False
        Leave each training point out of its own estimate (needs
        ``F_eval=None``).
    pair_agreement : bool, default=False
        Also return the U-statistic estimate of ``||E[e_y | x_j]||^2``
        (class-label targets only).
    squared_error : bool, default=False
        Also return the U-statistic estimate of ``||E[e_y | x_j] - x_j||^2``
        (class-label targets only).
    chunk_size : int or None
        Evaluation rows per chunk, taken in tiles of up to ``TILE_COLUMNS``
        centres; the default keeps a tile near ``TILE_BYTES``.
    n_jobs : int or None
        Threads working on chunks in parallel.
    eps : float
        Clipping level.
    eval_rows : ndarray of int or None
        With ``F_eval=None``: evaluate at these training points only (rows
        of ``F_train``), still against all the centres; the result has one
        row per entry.

    Returns
    -------
    DirichletSmootherResult
    """
    centres = DirichletCentres(F_train, Y_train, w_train, eps)
    if F_eval is None:
        rows = np.arange(centres.n) if eval_rows is None else np.asarray(eval_rows)
        X = centres.F[centres.position[rows]]
        logX = np.log(X)
    else:
        if leave_one_out:
            raise ValueError(
                "leave_one_out=True evaluates at the training points; "
                "F_eval must be None."
            )
        if eval_rows is not None:
            raise ValueError("eval_rows selects training points; F_eval must be None.")
        X = clip_simplex(F_eval, eps)
        logX = np.log(X)
        rows = None
    return _smooth(
        centres,
        logX,
        rows,
        bandwidth,
        leave_one_out=leave_one_out,
        ratio=True,
        pairs=pair_agreement,
        X=X if squared_error else None,
        chunk_size=chunk_size,
        n_jobs=n_jobs,
    )


def _smooth(
    centres,
    logX,
    eval_rows,
    bandwidth,
    *,
    leave_one_out,
    ratio,
    pairs,
    chunk_size,
    n_jobs,
    X=None,
):
    loo = centres.loo_columns(eval_rows) if leave_one_out else None
    stats = kernel_statistics(
        centres,
        logX,
        bandwidth,
        loo,
        ratio=ratio,
        pairs=pairs,
        X=X,
        chunk_size=chunk_size,
        n_jobs=n_jobs,
    )
    if leave_one_out:
        total = centres.row_total_weight(eval_rows)
    else:
        total = centres.total_w
    with np.errstate(divide="ignore"):
        log_density = stats["log_mass"] - np.log(total)
    return DirichletSmootherResult(
        ratio=stats.get("ratio"),
        effective_sample_size=stats["ess"],
        log_density=log_density,
        pair_agreement=stats.get("pairs") if pairs else None,
        squared_error=stats.get("squared_error"),
    )


def kernel_statistics(
    centres,
    logX,
    bandwidth,
    loo=None,
    *,
    ratio=True,
    ess=True,
    pairs=False,
    X=None,
    chunk_size=None,
    n_jobs=None,
):
    """Smoother statistics of evaluation rows against all the centres.

    Parameters
    ----------
    centres : DirichletCentres
    logX : ndarray of shape (m, K)
        Logarithms of the evaluation points (clipped probability vectors).
    bandwidth : float
    loo : tuple or None
        ``centres.loo_columns(rows)`` for leave-one-out rows, else None.
    ratio, ess, pairs : bool
        Compute the ratio ``R``, the effective sample size and the pair
        agreement (class-label targets only).
    X : ndarray of shape (m, K) or None
        Evaluation points (``exp(logX)``); when given, also the U-statistic
        ``squared_error`` of ``||R_j - x_j||^2`` (class-label targets only).
    chunk_size, n_jobs : int or None
        As in :func:`dirichlet_nw`.

    Returns
    -------
    dict with ``log_mass`` (``log sum_i v_ji k_ji``) and, as requested,
    ``ratio``, ``ess``, ``pairs`` and ``squared_error``.

    Notes
    -----
    Rows are exponentiated relative to their maximum (a row softmax); for
    the pair statistics the leading entry is split off first, as
    :func:`skcalib._backend.kde.statistics.finish_statistics` describes.
    """
    return _grid_statistics(
        centres,
        logX,
        [bandwidth],
        loo,
        ratio=ratio,
        ess=ess,
        pairs=pairs or X is not None,
        X=X,
        chunk_size=chunk_size,
        n_jobs=n_jobs,
    )[0]


def loo_grid_statistics(
    centres, grid, *, ratio, whole_weight=False, chunk_size=None, n_jobs=None
):
    """Leave-one-out :func:`kernel_statistics` of every centre at each bandwidth.

    Rows are in the centres' (label-sorted) order.

    Parameters
    ----------
    centres : DirichletCentres
    grid : ndarray of float
        Bandwidths.
    ratio : bool
        Also compute the ratio ``R`` (else ``log_mass`` only).
    whole_weight : bool
        As in :meth:`DirichletCentres.loo_columns`.
    chunk_size, n_jobs : int or None
        As in :func:`dirichlet_nw`.

    Returns
    -------
    list of dict
        One :func:`kernel_statistics` result per bandwidth.
    """
    loo = centres.loo_columns(centres.order, whole_weight=whole_weight)
    # A tile's product, (rows, K + 2) by (K + 2, columns), is too small to
    # share among BLAS threads, which spin on the cores the exponentials
    # need: the serial "risk" selection at 3000 x 10 on a busy machine took
    # 14.1 s with them, 3.3 s without.
    with one_blas_thread():
        return _grid_statistics(
            centres,
            np.log(centres.F),
            grid,
            loo,
            ratio=ratio,
            ess=False,
            pairs=False,
            chunk_size=chunk_size,
            n_jobs=n_jobs,
        )


def _grid_statistics(
    centres, logX, grid, loo, *, ratio, ess, pairs, chunk_size, n_jobs, X=None
):
    """:func:`kernel_statistics` at each bandwidth of ``grid``, in one pass."""
    m = logX.shape[0]
    width = min(centres.n, TILE_COLUMNS)
    shared = len(grid) > 1
    if chunk_size is None:
        # A shared product holds whole rows: its bytes bound the block.
        chunk_size = default_chunk_size(centres.n if shared else width)
    tiles, lowers = [], []
    for b in grid:
        shift = centres.column_shift(b)
        tiles.append(KernelTiles(centres, logX, b, shift, width))
        lowers.append(row_lower_bounds(logX, b, shift))
    pool = BufferPool(min(chunk_size, m), width)
    # Several bandwidths share the bandwidth-free part of a block's product,
    # log(x_j) . f_i: scaling it is 0.9 ns per entry (multiply, subtract),
    # where the product with the shift folded in takes 2.4 ns (its inner
    # dimension is only K + 2). Alone, the folded product saves a pass.
    FT = np.ascontiguousarray(centres.F.T) if shared else None

    def work(sl):
        gram = None if FT is None else logX[sl] @ FT
        with pool.take() as buffers:
            return [
                tiled_sums(
                    centres,
                    t,
                    sl,
                    None if loo is None else tuple(v[sl] for v in loo),
                    ratio=ratio,
                    ess=ess,
                    pairs=pairs,
                    squares_by_class=X is not None,
                    lower=None if lower is None else lower[sl],
                    buffers=buffers,
                    gram=gram,
                )
                for t, lower in zip(tiles, lowers, strict=True)
            ]

    parts = map_chunks(work, m, chunk_size, n_jobs)
    out = []
    for g in range(len(grid)):
        sums = {k: np.concatenate([p[g][k] for p in parts]) for k in parts[0][g]}
        out.append(
            finish_statistics(
                centres, sums, loo, ratio=ratio, ess=ess, pairs=pairs, X=X
            )
        )
    return out


class KernelTiles:
    """Column tiles of the centres for :func:`tiled_sums`.

    Parameters
    ----------
    centres : DirichletCentres
    logX : ndarray of shape (m, K)
        Logarithms of the evaluation points.
    bandwidth : float
    shift : ndarray of shape (n,)
        ``centres.column_shift(bandwidth)``.
    width : int
        Columns per tile.
    """

    def __init__(self, centres, logX, bandwidth, shift, width):
        n = centres.n
        self.width = width
        self.inv_b = 1.0 / bandwidth
        self.single = n >= SINGLE_EXP_COLUMNS
        # The column shift rides in the product as one more coordinate (a
        # pass over the tile less); centres of zero weight have an infinite
        # shift, which a product would turn into NaN, and keep the pass.
        self.folded = bool(np.all(np.isfinite(shift)))
        rows = (centres.F / bandwidth).T
        if self.folded:
            rows = np.vstack([rows, shift])
            logX = np.hstack([logX, -np.ones((logX.shape[0], 1))])
        rows = np.vstack([rows, np.ones(n)])
        self.logX = logX
        self.shift = shift
        self.slices = iter_chunks(n, width)
        # Contiguous (K, width) blocks: the product streams each once per
        # block of evaluation rows.
        self.blocks = [np.ascontiguousarray(rows[:, sl]) for sl in self.slices]
        self.segments = []
        for sl in self.slices:
            if centres.labels:
                inner = centres.seg_starts[
                    (centres.seg_starts > sl.start) & (centres.seg_starts < sl.stop)
                ]
                starts = np.r_[sl.start, inner]
                local = starts - sl.start
                bounds = [*local.tolist(), sl.stop - sl.start]
                spans = [
                    (lo, hi, int(c))
                    for lo, hi, c in zip(
                        bounds[:-1], bounds[1:], centres.y[starts], strict=True
                    )
                ]
                self.segments.append(
                    (local, centres.y[starts], centres.pair_c[sl], spans)
                )
            else:
                self.segments.append((None, None, centres.pair_c[sl], None))


def tiled_sums(
    centres,
    tiles,
    sl,
    loo=None,
    *,
    ratio=True,
    ess=True,
    pairs=False,
    squares_by_class=False,
    lower=None,
    buffers=None,
    gram=None,
):
    """Row sums of the kernel weights of the evaluation rows ``sl``, by column tiles.

    Parameters
    ----------
    centres : DirichletCentres
    tiles : KernelTiles
    sl : slice
        Evaluation rows (of ``tiles.logX``).
    loo : tuple or None
        ``centres.loo_columns`` of the rows, or None.
    ratio, ess, pairs
        As in :func:`kernel_statistics`.
    squares_by_class : bool
        Also the per-class sums of the squared weights (for the
        ``squared_error`` statistic).
    lower : ndarray of shape (len(sl),) or None
        :func:`row_lower_bounds` of the rows. ``exp`` takes a slow path for
        arguments that underflow, so they are clamped at a floor (weights
        below it cannot change sums >= 1); the clamp is a pass of its own
        (0.36 ns per entry against 5.4 for the float64 ``exp``), skipped
        while the bounds show nothing below the floor. None always clamps.
    buffers : ChunkBuffers or None
        Work arrays to reuse (none of them is returned); None allocates.
    gram : ndarray of shape (len(sl), n) or None
        ``log(X[sl]) @ centres.F.T``, shared by several bandwidths; None
        forms each tile by a product with the tiles' blocks.

    Returns
    -------
    dict
        Per-row arrays for :func:`finish_statistics`, which turns the sums
        of any number of row blocks, concatenated, into the statistics (the
        row formulas cost some 60 numpy calls: once per call, not per block).

    Notes
    -----
    A whole row of log-kernels (800 kB at n = 1e5) does not fit in a core's
    cache, so each of the dozen passes over a chunk of a few whole rows went
    to the shared cache or memory, and the product reread all centres for
    every few rows. Tiles of many rows by a few thousand
    columns stay in cache between the passes; a row's sums are kept
    relative to a reference within ``_REFERENCE_SLACK`` below the largest
    log-kernel seen so far and rescaled (in float64) when a later tile
    exceeds it by more, as an online softmax does. The product subtracts
    the reference (a column of ``A``), so only rows whose reference moves
    take a pass of their own. The row's leading entry (``m1`` in
    :func:`kernel_statistics`) is held out of the sums while it leads and
    added to them, in float64, once another entry overtakes it. Each weight
    differs from its weight in a softmax of the whole row by the rounding of
    the product, of the rescaling (float64) and of ``exp`` relative to
    another reference (float32 or float64): 1e-13 relative in float64 at
    n = 150 (ties, zero weights, bandwidths 1e-4 to 1), the float32
    rounding otherwise.
    """
    base = tiles.logX[sl]
    r, kb = base.shape
    rows = np.arange(r)
    single = tiles.single
    floor = _EXP_FLOOR_SINGLE if single else _EXP_FLOOR
    labels = centres.labels
    if pairs and not labels:
        raise ValueError("The pair statistic needs class-label targets.")
    sums_a = ratio or pairs
    # The product returns log-kernels minus the row reference of the tiles
    # so far (last column of A against a row of ones): the subtraction
    # before exp costs no pass except in rows whose reference rises.
    A = np.zeros((r, kb + 1))
    A[:, :kb] = base
    ref = np.full(r, -np.inf)
    m_ref = np.zeros(r)
    m1 = np.full(r, -np.inf)
    istar = np.zeros(r, dtype=np.int64)
    a = np.zeros((r, centres.n_outputs)) if sums_a else None
    z = None if (labels and sums_a) else np.zeros(r)
    qk = np.zeros((r, centres.K)) if squares_by_class else None
    need_q = ess or pairs
    q = np.zeros(r) if need_q and not squares_by_class else None
    g_own = None
    if loo is not None:
        cols, log_shift, _ = loo
        if need_q:
            g_own = np.zeros(r)
        by_tile = np.argsort(cols, kind="stable")
        bounds = np.searchsorted(
            cols[by_tile], np.arange(len(tiles.slices) + 1) * tiles.width
        )
    if buffers is None:
        buffers = ChunkBuffers(r, tiles.width)
    clamp = lower is None
    all_finite = False
    for k, (csl, B) in enumerate(zip(tiles.slices, tiles.blocks, strict=True)):
        c0, w = csl.start, csl.stop - csl.start
        if gram is None:
            T = np.matmul(A, B, out=buffers.get("L", r, cols=w))
            if not tiles.folded:
                T -= tiles.shift[csl]
        else:
            T = np.multiply(gram[:, csl], tiles.inv_b, out=buffers.get("L", r, cols=w))
            T -= tiles.shift[csl]
            if k:
                # Before the first tile every reference is 0.
                T -= m_ref[:, None]
        if loo is not None:
            mine = by_tile[bounds[k] : bounds[k + 1]]
            own_cols = cols[mine] - c0
            T[mine, own_cols] += log_shift[mine]
        if pairs:
            # The argmax pass gives the tile maximum too; only rows whose
            # leader changes (a tenth of a tile's rows at n = 1e5) need the
            # maximum of the rest.
            targ = T.argmax(axis=1)
            top = T[rows, targ]
            top += m_ref
            lead = np.flatnonzero(top > m1)
            # Former leaders of the rows that changed leader join the sums.
            dropped = lead[np.isfinite(m1[lead])]
            old_val, old_col = m1[dropped], istar[dropped]
            m1[lead] = top[lead]
            istar[lead] = targ[lead] + c0
            T[lead, targ[lead]] = -np.inf
            if lead.shape[0] == r:
                top = T.max(axis=1)
                top += m_ref
            elif lead.shape[0] <= r // 8:
                # Row views: no copy of the rows, as a fancy index makes.
                for i in lead:
                    top[i] = T[i].max() + m_ref[i]
            elif lead.shape[0]:
                top[lead] = T[lead].max(axis=1) + m_ref[lead]
            top[dropped] = np.maximum(top[dropped], old_val)
        else:
            top = T.max(axis=1)
            top += m_ref
        grown = np.flatnonzero(top > ref + _REFERENCE_SLACK)
        if grown.shape[0]:
            new = top[grown]
            # exp(-inf) = 0 clears the floor-level weights of rows that had
            # no finite entry yet.
            scale = np.exp(ref[grown] - new)
            ref[grown] = new
            if a is not None:
                a[grown] *= scale[:, None]
            if z is not None:
                z[grown] *= scale
            if g_own is not None:
                g_own[grown] *= scale
            scale *= scale
            if qk is not None:
                qk[grown] *= scale[:, None]
            if q is not None:
                q[grown] *= scale
            new = np.where(np.isfinite(new), new, 0.0)
            step = new - m_ref[grown]
            if grown.shape[0] == r:
                T -= step[:, None]
            elif grown.shape[0] <= r // 8:
                for i, d in zip(grown, step, strict=True):
                    T[i] -= d
            else:
                T[grown] -= step[:, None]
            m_ref[grown] = new
            A[grown, kb] = -new
        if pairs and dropped.shape[0]:
            gd = np.exp(old_val - ref[dropped])
            cls = centres.y[old_col]
            a[dropped, cls] += gd
            gd2 = gd * gd * centres.pair_c[old_col]
            if qk is not None:
                qk[dropped, cls] += gd2
            else:
                q[dropped] += gd2
            if g_own is not None:
                back = cols[dropped] == old_col
                g_own[dropped[back]] += gd[back]
        # References only rise: once a tile needs the clamp, all later do.
        clamp = clamp or not np.all(lower - m_ref >= floor)
        # Rows with no finite entry yet get floor-level weights, which the
        # first finite reference clears (scale 0); a row that never gets one
        # keeps them (its statistics are NaN).
        all_finite = all_finite or bool(np.all(np.isfinite(ref)))
        clamp_tile = clamp or not all_finite
        if single:
            # One pass: the clamp (a float32 number) casts as it clamps.
            w32 = buffers.get("w32", r, np.float32, cols=w)
            if clamp_tile:
                np.maximum(T, floor, out=w32, casting="same_kind")
            else:
                w32[...] = T
            np.exp(w32, out=w32)
            T[...] = w32
        else:
            if clamp_tile:
                np.maximum(T, floor, out=T)
            np.exp(T, out=T)
        g = T
        starts, classes, pair_c, spans = tiles.segments[k]
        if labels and len(spans) <= _FEW_SEGMENTS and centres.unit_pairs:
            # A tile holds a few label segments at most (they are n / K
            # long): per segment, the squares are summed as they are formed
            # (no array of them) and the weights by a row sum.
            for lo, hi, c in spans:
                seg = g[:, lo:hi]
                if squares_by_class:
                    qk[:, c] += _row_dots(seg)
                if sums_a:
                    a[:, c] += seg.sum(axis=1)
        else:
            if squares_by_class:
                g2 = np.multiply(g, g, out=buffers.get("g2", r, cols=w))
                if not centres.unit_pairs:
                    g2 *= pair_c
                qk[:, classes] += np.add.reduceat(g2, starts, axis=1)
            if sums_a:
                if labels:
                    a[:, classes] += np.add.reduceat(g, starts, axis=1)
                else:
                    a += g @ centres.Y[csl]
        if z is not None:
            z += g.sum(axis=1)
        if q is not None:
            if centres.unit_pairs:
                q += _row_dots(g)
            else:
                q += np.einsum("ij,ij,j->i", g, g, pair_c)
        if g_own is not None:
            g_own[mine] += g[mine, own_cols]
    finite = np.isfinite(ref)
    out = {}
    if pairs:
        out.update(
            istar=istar, m_ref=np.where(finite, ref, 0.0), has_rest=finite, m1=m1
        )
    else:
        out["m1"] = ref
        if not np.all(finite):
            # No kernel mass at all: undefined.
            for v in (a, z, q, g_own):
                if v is not None:
                    v[~finite] = np.nan
    if qk is not None:
        out["qk"] = qk
    if sums_a:
        out["a"] = a
    if z is not None:
        out["z"] = z
    if q is not None:
        out["q"] = q
    if g_own is not None:
        out["g_own"] = g_own
    return out


def row_lower_bounds(logX, bandwidth, shift):
    """Lower bounds of the rows of ``log(X) (F / b)^T - shift``, or None.

    The rows of ``F`` sum to one, so ``log(x_j) . f_i / b`` is at least
    ``min_k log(x_jk) / b``; centres of zero weight (infinite shift) have
    zero kernel weight and need no bound.
    """
    finite = shift[np.isfinite(shift)]
    if finite.shape[0] == 0:
        return None
    return logX.min(axis=1) / bandwidth - finite.max()


def label_squared_error(F, y):
    """``||e_{y_j} - f_j||²`` per row, for class indices ``y``."""
    return _label_squared_error(F, y, np)


def kde_error_terms(F, y, result, p, debias):
    """Per-sample terms of the ECE-KDE estimate of ``CE_p^p`` (see
    :func:`skcalib._backend.kde.statistics.kde_error_terms`).

    ``result`` is the leave-one-out :func:`dirichlet_nw` of ``(F, y)``.
    """
    stats = {"ratio": result.ratio, "squared_error": result.squared_error}
    return _kde_error_terms(F, y, stats, p, debias, np)
