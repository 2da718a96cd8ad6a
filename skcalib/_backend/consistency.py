"""Consistency resampling: labels drawn from the predictions themselves.

Under the null hypothesis of calibration, ``y_i ~ Bernoulli(s_i)``
independently (a categorical draw from the probability vector in the
multiclass case), and the scores do not move. A resample draws new labels
and recomputes the statistic; the Monte-Carlo p-value
``(1 + #{T* >= T}) / (1 + B)`` is then exact for any statistic ``T``: the
observed statistic and the ``B`` resampled ones are exchangeable under the
null hypothesis, so ``P(p <= alpha) <= alpha`` for every ``alpha`` and every
``B`` (Davison & Hinkley 1997, sec. 4.2; Broecker & Smith 2007).

Grid statistics exploit the fixed scores: their grid cells, weights and
score moments are computed once, and a resample is one weighted bincount of
the drawn labels onto the fixed cells, followed by the statistic's own
numerics (the bandwidth search of :mod:`smece`, the bin means of
:mod:`binning`).
"""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from . import smece as _sm
from .binning import assign_bins, binned_error, table_from_sums
from .grid import FINE_M, GridPyramid, bin_positions, coarsen
from .resampling import column_quantiles

__all__ = [
    "BinaryDraw",
    "BinnedECEStatistic",
    "BinnedMeanBatch",
    "ClassDraw",
    "ExceedBatch",
    "FunctionStatistic",
    "SKCEBatch",
    "SmoothCurveBatch",
    "SmoothECEStatistic",
    "ValueBatch",
    "consistency_pvalue",
    "draw_binary_labels",
    "draw_class_labels",
    "pointwise_band",
    "run_batches",
]


def draw_binary_labels(rng, s):
    """``y_i ~ Bernoulli(s_i)`` as float64 0/1 (``s = 1`` always gives 1,
    ``s = 0`` never does: ``rng.random`` lies in [0, 1))."""
    return (rng.random(s.shape[0]) < s).astype(np.float64)


def draw_class_labels(rng, cum):
    """Class indices drawn from probability rows given by their cumulative
    sums ``cum`` (last column forced to 1 so that round-off cannot leave a
    row without a class)."""
    u = rng.random(cum.shape[0])
    return np.minimum((u[:, None] >= cum).sum(axis=1), cum.shape[1] - 1)


class SmoothECEStatistic:
    """SmoothECE of fixed scores as a function of the labels alone.

    Rows are sorted by score once, so every fine-grid cell (``FINE_M``
    cells, in the geometry's units) is a contiguous run; the label-free
    columns of the grid statistics (``sum w``, ``sum w s``) are computed
    once. For labels ``y`` the middle column ``sum w y`` is two segment sums
    over the runs, and the value follows the steps of :func:`smece.fit`: a
    first pass on ``FIRST_PASS_M`` cells, then the grid the bandwidth needs,
    both obtained by exact coarsening of the fine grid.

    :meth:`exceeds` decides ``T(y*) >= t`` for the fixed point
    ``T = sigma*`` with a single smoothing: ``smECE_sigma - sigma`` decreases
    in ``sigma``, so ``sigma*(y*) >= t`` exactly when ``smECE_t(y*) >= t``.
    """

    def __init__(self, s, w, geometry, sigma=None):
        # Sorted by score (then weight): tied rows are interchangeable, so
        # draws made in this order do not depend on the caller's row order.
        order = np.lexsort((w, s))
        self.order = order
        self.s, self.w = s[order], w[order]
        self.geometry, self.sigma = geometry, sigma
        M = self.M = FINE_M
        idx, theta = bin_positions(geometry.to_unit(self.s), M)
        self.starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
        self.cells = idx[self.starts]
        self.right = self.w * theta
        self.fixed = _sm.statistics(np.zeros_like(self.s), self.s, self.w, geometry, M)
        # The label-free columns at every grid a resample reads, coarsened once.
        self._fixed_levels = GridPyramid(self.fixed)
        self._positions = {M: (idx, theta)}

    def draw(self, rng):
        """Labels ``y_i ~ Bernoulli(s_i)`` in the sorted order, as a mask
        (in a buffer reused by the next draw)."""
        if not hasattr(self, "_u"):
            n = self.s.shape[0]
            self._u, self._mask, self._buf = np.empty(n), np.empty(n, bool), np.empty(n)
        rng.random(out=self._u)
        return np.less(self._u, self.s, out=self._mask)

    def grid_statistics(self, mask):
        """Fine-grid ``(sum w, sum w y, sum w s)`` for sorted labels ``mask``."""
        M = self.M
        buf = self._buf if hasattr(self, "_buf") else np.empty(mask.shape[0])
        np.multiply(self.w, mask, out=buf)
        a = np.add.reduceat(buf, self.starts)
        np.multiply(self.right, mask, out=buf)
        b = np.add.reduceat(buf, self.starts)
        col = np.zeros(M + 1)
        col[self.cells] += a - b
        col[self.cells + 1] += b
        out = self.fixed.copy()
        out[:, 1] = col
        return out

    def label_pyramid(self, mask):
        """A :class:`~skcalib._backend.grid.GridPyramid` of the statistics of
        sorted labels ``mask``: only the label column is binned per grid
        (directly from the rows when they are fewer than the grid's cells,
        else coarsened from the fine grid), the other two are shared."""
        return _LabelPyramid(self, mask)

    def _label_column(self, mask, M):
        if M not in self._positions:
            self._positions[M] = bin_positions(self.geometry.to_unit(self.s), M)
        idx, theta = self._positions[M]
        wy = self.w * mask
        col = np.bincount(idx, weights=wy - wy * theta, minlength=M + 1)
        col += np.bincount(idx + 1, weights=wy * theta, minlength=M + 1)
        return col

    def observed(self, y):
        """The statistic of labels ``y`` given in the caller's row order."""
        return self.value(self.grid_statistics(y[self.order] > 0.5))

    def value(self, fine):
        geometry = self.geometry
        if self.sigma is not None:
            m = geometry.grid_size(0.8 * self.sigma, self.M)
            return _sm.smece_at(coarsen(fine, m), self.sigma, geometry)
        m = _sm.FIRST_PASS_M
        while True:
            stats = _sm.pyramid(coarsen(fine, m))
            sig = _sm.solve_sigma(stats, geometry)
            need = geometry.grid_size(0.8 * sig, self.M)
            if need <= m:
                return _sm.self_consistent_value(stats, sig)
            m = need

    def exceeds(self, rng, threshold):
        """Whether a resample's statistic is at least ``threshold``."""
        mask = self.draw(rng)
        if self.sigma is not None:
            return self.value(self.grid_statistics(mask)) >= threshold
        fine = self.label_pyramid(mask)
        if threshold <= 0:
            return True
        return _sm.smece_at(fine, threshold, self.geometry) >= threshold


class _LabelPyramid(GridPyramid):
    """Grid statistics of one resample, each grid built when first read."""

    def __init__(self, stat, mask):
        self.fine_m = stat.M
        self._stat, self._mask, self._levels = stat, mask, {}
        self._labels = None

    def at(self, M):
        if M not in self._levels:
            stat = self._stat
            out = stat._fixed_levels.at(M).copy()
            if stat.s.shape[0] < M:
                out[:, 1] = stat._label_column(self._mask, M)
            else:
                if self._labels is None:
                    self._labels = GridPyramid(stat.grid_statistics(self._mask)[:, 1])
                out[:, 1] = self._labels.at(M)
            self._levels[M] = out
        return self._levels[M]


class BinnedECEStatistic:
    """Binned ECE (L1) of fixed scores and fixed bins as a function of the
    labels: the bin of every score, ``sum w`` and ``sum w s`` per bin are
    computed once; a resample is one bincount of ``w y``."""

    def __init__(self, s, w, edges):
        self.edges = edges
        n_bins = edges.shape[0] - 1
        self.b = assign_bins(s, edges)
        self.w = w
        self.sw = np.bincount(self.b, weights=w, minlength=n_bins)
        self.sws = np.bincount(self.b, weights=w * s, minlength=n_bins)
        self.count = np.bincount(self.b, minlength=n_bins).astype(np.float64)
        self.n_bins = n_bins

    def __call__(self, y):
        swy = np.bincount(self.b, weights=self.w * y, minlength=self.n_bins)
        table = table_from_sums(self.edges, self.sw, swy, self.sws, self.count)
        return binned_error(table, "l1", False)


class FunctionStatistic:
    """Any statistic ``func(y, s, w)`` of one binary problem."""

    def __init__(self, func, s, w):
        self.func, self.s, self.w = func, s, w

    def __call__(self, y):
        return float(self.func(y, self.s, self.w))


class BinaryDraw:
    """One label vector ``y_i ~ Bernoulli(s_i)`` per resample."""

    def __init__(self, s):
        self.s = s

    def __call__(self, rng):
        return [draw_binary_labels(rng, self.s)]


class ClassDraw:
    """A class drawn from each probability row; the one-vs-rest indicators."""

    def __init__(self, P):
        cum = np.cumsum(P, axis=1)
        cum[:, -1] = 1.0
        self.cum = cum

    def __call__(self, rng):
        y = draw_class_labels(rng, self.cum)
        return [(y == k).astype(np.float64) for k in range(self.cum.shape[1])]


class ValueBatch:
    """Resampled values: the mean over the tasks of ``statistics``."""

    def __init__(self, statistics, draw):
        self.statistics, self.draw = statistics, draw

    def __call__(self, rngs):
        out = np.empty(len(rngs))
        for i, rng in enumerate(rngs):
            labels = self.draw(rng)
            out[i] = np.mean(
                [f(y) for f, y in zip(self.statistics, labels, strict=True)]
            )
        return out


class ExceedBatch:
    """Resampled indicators ``T* >= threshold`` of a statistic that decides
    them faster than it computes ``T*`` (:meth:`SmoothECEStatistic.exceeds`)."""

    def __init__(self, statistic, threshold):
        self.statistic, self.threshold = statistic, threshold

    def __call__(self, rngs):
        return np.array(
            [self.statistic.exceeds(r, self.threshold) for r in rngs], dtype=float
        )


class MeanExceedBatch:
    """Resampled indicators ``mean_k T*_k >= threshold`` for the SmoothECE
    fixed points of ``K`` tasks (classwise), without computing each ``T*_k``.

    Every ``T*_k`` is bracketed by its own bisection (``smECE_sigma - sigma``
    decreases in ``sigma``, as in :meth:`SmoothECEStatistic.exceeds`), first
    split at the threshold; then the widest bracket is halved until the
    bracket of the mean lies on one side of the threshold. Resampled values
    are usually all below the observed one: ``K`` smoothings then decide,
    where the values take ~20 each.
    """

    def __init__(self, statistics, draw, threshold):
        self.statistics, self.draw, self.threshold = statistics, draw, threshold

    def __call__(self, rngs):
        out = np.empty(len(rngs))
        for i, rng in enumerate(rngs):
            grids = [
                f.label_pyramid(y[f.order] > 0.5)
                for f, y in zip(self.statistics, self.draw(rng), strict=True)
            ]
            out[i] = mean_fixed_point_exceeds(
                grids, self.statistics[0].geometry, self.threshold
            )
        return out


def mean_fixed_point_exceeds(grids, geometry, threshold, tol=None):
    """Whether the mean of the fixed points ``sigma*_k`` of ``grids`` (grid
    statistics of ``K`` tasks) is at least ``threshold``.

    Brackets narrower than ``tol`` (default ``smece.SIGMA_TOL``, the
    bisection's own) count by their midpoints.
    """
    if threshold <= 0:
        return True
    tol = _sm.SIGMA_TOL if tol is None else tol
    K = len(grids)
    # First every bracket is split at the threshold itself: when all fixed
    # points fall on one side (the usual case), that decides.
    above = np.array([_sm.smece_at(g, threshold, geometry) > threshold for g in grids])
    lo = np.where(above, threshold, 0.0)
    hi = np.where(above, 1.0, threshold)
    target = threshold * K
    while True:
        if lo.sum() >= target:
            return True
        if hi.sum() < target:
            return False
        k = int(np.argmax(hi - lo))
        if hi[k] - lo[k] <= tol:
            return 0.5 * (lo.sum() + hi.sum()) >= target
        mid = 0.5 * (lo[k] + hi[k])
        if _sm.smece_at(grids[k], mid, geometry) > mid:
            lo[k] = mid
        else:
            hi[k] = mid


def run_batches(batch, n_resamples, seed, n_jobs=None):
    """``batch(rngs)`` over ``n_resamples`` generators, in parallel (joblib).

    Resample ``b`` uses the ``b``-th child of ``seed`` (a
    ``numpy.random.SeedSequence``), so the output does not depend on
    ``n_jobs`` or the joblib backend.
    """
    children = seed.spawn(n_resamples)
    n_batches = max(1, min(n_resamples, effective_n_jobs(n_jobs)))
    groups = [g for g in np.array_split(np.arange(n_resamples), n_batches) if g.size]
    if len(groups) == 1:
        return batch([np.random.default_rng(children[i]) for i in groups[0]])
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_run)(batch, [children[i] for i in g]) for g in groups
    )
    return np.concatenate(parts)


def _run(batch, seeds):
    return batch([np.random.default_rng(q) for q in seeds])


def consistency_pvalue(observed, replicates):
    """``(1 + #{T* >= T}) / (1 + B)``: exact (valid) at every ``B``.

    A replicate equal to the observed value counts against rejection (ties
    make the test conservative, never liberal); NaN replicates count as
    ``>=``.
    """
    reps = np.asarray(replicates, dtype=np.float64)
    exceed = int(np.sum(~(reps < observed)))
    return (1.0 + exceed) / (1.0 + reps.shape[0])


class SKCEBatch:
    """Resampled quadratic SKCE values, all label vectors of a batch in one
    product with the kernel matrix (:class:`calibration_tests.SKCEKernel`)."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __call__(self, rngs):
        s = self.kernel.s
        R = np.column_stack([draw_binary_labels(r, s) - s for r in rngs])
        return self.kernel.values(R)


class SmoothCurveBatch:
    """Reliability curves of labels drawn from the scores, at a fixed
    bandwidth on a fixed grid of ``M`` cells: the consistency band of a
    smooth reliability diagram.

    The draws and the grid statistics are those of
    :class:`SmoothECEStatistic`; the curve is :func:`smece.smooth_curve` of
    the fine grid coarsened to the observed curve's grid.
    """

    def __init__(self, s, w, geometry, sigma, M):
        self.stat = SmoothECEStatistic(s, w, geometry, sigma)
        self.M = M

    def __call__(self, rngs):
        stat = self.stat
        out = np.empty((len(rngs), self.M + 1))
        for i, rng in enumerate(rngs):
            grids = stat.label_pyramid(stat.draw(rng))
            out[i] = _sm.smooth_curve(grids.at(self.M), stat.sigma, stat.geometry)[1]
        return out


class BinnedMeanBatch:
    """Weighted mean labels in fixed bins of labels drawn from the scores:
    the consistency band of a binned reliability diagram. ``bins`` are the
    bins reported (the non-empty ones); the bin of every score and
    ``sum w`` per bin are those of :class:`BinnedECEStatistic`."""

    def __init__(self, s, w, edges, bins):
        self.s = s
        self.stat = BinnedECEStatistic(s, w, edges)
        self.bins = np.asarray(bins, dtype=np.intp)

    def __call__(self, rngs):
        stat = self.stat
        out = np.empty((len(rngs), self.bins.shape[0]))
        sw = stat.sw[self.bins]
        for i, rng in enumerate(rngs):
            y = draw_binary_labels(rng, self.s)
            swy = np.bincount(stat.b, weights=stat.w * y, minlength=stat.n_bins)
            out[i] = swy[self.bins] / sw
        return out


def pointwise_band(curves, confidence_level):
    """Pointwise ``(1 -/+ confidence_level) / 2`` quantiles of resampled
    curves (rows); NaN where the curves are (no data nearby)."""
    q = [(1.0 - confidence_level) / 2.0, (1.0 + confidence_level) / 2.0]
    lo, hi = column_quantiles(curves, q)
    return lo, hi
