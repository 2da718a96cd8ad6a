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
from .calibration_tests import compiled as _cc
from .calibration_tests.statistics import ClasswiseMean
from .grid import (
    FINE_M,
    GridPyramid,
    bin_positions,
    coarsen,
    support_window,
    windowed_smooth,
)
from .resampling import column_quantiles

__all__ = [
    "BinnedECEStatistic",
    "BinnedMeanBatch",
    "ClasswiseSmoothECE",
    "SmoothCurveBatch",
    "SmoothECEStatistic",
    "SmoothECETest",
    "draw_binary_labels",
    "pointwise_band",
    "run_batches",
]


def draw_binary_labels(rng, s):
    """``y_i ~ Bernoulli(s_i)`` as float64 0/1 (``s = 1`` always gives 1,
    ``s = 0`` never does: ``rng.random`` lies in [0, 1))."""
    return (rng.random(s.shape[0]) < s).astype(np.float64)


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
        self.theta = theta
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

    def fine_label_columns(self, wy, *, compiled=False):
        """Fine-grid ``sum w y`` columns, ``(m, M + 1)``, of the rows of a
        block of sorted weighted labels ``wy`` (``(m, n)``): the middle
        column of :meth:`grid_statistics` for every resample at once."""
        return self.label_columns(wy, self.M, compiled=compiled)

    def _runs(self, M):
        """Rows of each cell of the grid of ``M`` cells: first rows, cells,
        offsets (rows are sorted, so a cell's rows are contiguous)."""
        if M == self.M:
            return self.starts, self.cells, self.theta
        if ("runs", M) not in self._positions:
            if M not in self._positions:
                self._positions[M] = bin_positions(self.geometry.to_unit(self.s), M)
            idx, theta = self._positions[M]
            starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
            self._positions["runs", M] = starts, idx[starts], theta
        return self._positions["runs", M]

    def label_columns(self, wy, M, *, compiled=False):
        """Linearly binned ``sum w y`` on the grid of ``M`` cells, ``(m, M +
        1)``, for a block of sorted weighted labels ``wy`` (``(m, n)``): the
        label column of every resample at once (by one compiled pass over
        the block with ``compiled=True``)."""
        starts, cells, theta = self._runs(M)
        if compiled:
            return _cc.cell_columns(wy, starts, cells, theta, M + 1)
        if wy.dtype != np.float64:
            wy = wy.astype(np.float64)
        a = np.add.reduceat(wy, starts, axis=1)
        b = np.add.reduceat(wy * theta, starts, axis=1)
        col = np.zeros((wy.shape[0], M + 1))
        col[:, cells] = a - b
        col[:, cells + 1] += b
        return col

    def label_pyramid(self, mask, *, wy=None, fine=None):
        """A :class:`~skcalib._backend.grid.GridPyramid` of the statistics of
        sorted labels ``mask`` (or of weighted labels ``wy``, with their
        fine-grid column ``fine`` when there are at least ``M`` rows): only
        the label column is binned per grid (directly from the rows when
        they are fewer than the grid's cells, else coarsened from the fine
        grid), the other two are shared."""
        return _LabelPyramid(self, mask, wy=wy, fine=fine)

    def _label_column(self, mask, M, wy=None):
        if M not in self._positions:
            self._positions[M] = bin_positions(self.geometry.to_unit(self.s), M)
        idx, theta = self._positions[M]
        if wy is None:
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

    def __init__(self, stat, mask, *, wy=None, fine=None):
        self.fine_m = stat.M
        self._stat, self._mask, self._wy, self._levels = stat, mask, wy, {}
        self._labels = None if fine is None else GridPyramid(fine)

    def at(self, M):
        if M not in self._levels:
            stat = self._stat
            out = stat._fixed_levels.at(M).copy()
            if stat.s.shape[0] < M:
                out[:, 1] = stat._label_column(self._mask, M, self._wy)
            else:
                if self._labels is None:
                    self._labels = GridPyramid(
                        stat.grid_statistics(self._mask)[:, 1]
                        if self._mask is not None
                        else stat.fine_label_columns(self._wy[None, :])[0]
                    )
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


def _threshold(observed):
    """Resamples reaching ``observed - SIGMA_TOL`` count as ``T* >= T``: the
    bisection gives the observed fixed point to that tolerance, and the
    margin keeps a resample that ties it from being missed."""
    return max(observed - _sm.SIGMA_TOL, 0.0) if observed > 0 else 0.0


class SmoothECETest:
    """The SmoothECE of a :class:`calibration_tests.NullTask` for the exact
    test (:func:`calibration_tests.exact_pvalue`): whether each resample's
    SmoothECE reaches the observed one, decided by one kernel smoothing
    (:meth:`SmoothECEStatistic.exceeds`), the label column of a block of
    resamples binned in one pass."""

    name = "smooth_ece"

    def __init__(self, task):
        self.task = task
        self.n_rows = task.n
        # The task's rows are sorted by (score, weight): the statistic keeps
        # them in that order.
        self.stat = SmoothECEStatistic(task.s, task.w, _sm.GridGeometry("l1"))

    use_compiled = False

    def prepare(self, n_resamples):
        self.use_compiled = _cc.worth_compiling(self.n_rows, n_resamples)

    def draw(self, rng, m):
        return self.task.labels(rng, m)

    def from_labels(self, y):
        return self.task.weigh(y)

    def observed_value(self):
        return self.stat.observed(self.task.y)

    def pyramids(self, wy):
        """A label pyramid per row of a block of weighted labels."""
        stat = self.stat
        fine = None
        if stat.s.shape[0] >= stat.M:
            fine = stat.fine_label_columns(wy, compiled=self.use_compiled)
        for i in range(wy.shape[0]):
            if fine is None:
                yield stat.label_pyramid(None, wy=wy[i].astype(np.float64))
            else:
                yield stat.label_pyramid(None, fine=fine[i])

    def exceeds(self, wy, observed):
        """Whether each resample's SmoothECE reaches ``observed``: its
        smoothed residual at bandwidth ``t`` (``observed`` less the
        tolerance) has an L1 norm of at least ``t`` (:func:`smece.smece_at`
        for every row of the block at once, on the grid ``t`` needs)."""
        t = _threshold(observed)
        if t <= 0:
            return np.ones(wy.shape[0], dtype=bool)
        stat = self.stat
        geometry = stat.geometry
        M = geometry.grid_size(t, stat.M)
        fixed = stat._fixed_levels.at(M)
        labels = stat.label_columns(wy, M, compiled=self.use_compiled)
        total = fixed[:, 0].sum()
        # the residuals live where the scores do: smooth that window alone
        window = support_window(fixed[:, 0], t) if geometry.metric == "l1" else None
        if window is None:
            r = geometry.smooth((labels.T - fixed[:, 2:3]) / total, t)
        else:
            lo, hi = window
            part = (labels[:, lo : hi + 1].T - fixed[lo : hi + 1, 2:3]) / total
            r = windowed_smooth(part, t, M)
        return geometry.integrate(np.abs(r), M) >= t


class ClasswiseSmoothECE(ClasswiseMean):
    """Mean of the one-vs-rest SmoothECEs (:class:`SmoothECETest` per class),
    the class of each row drawn from its probability row (the draws of
    :class:`calibration_tests.statistics.ClasswiseMean`); a resample is
    decided by bisection brackets (:func:`mean_fixed_point_exceeds`)."""

    def exceeds(self, blocks, observed):
        t = _threshold(observed)
        geometry = self.statistics[0].stat.geometry
        per_class = [
            f.pyramids(c) for f, c in zip(self.statistics, blocks, strict=True)
        ]
        return np.array(
            [
                mean_fixed_point_exceeds(list(g), geometry, t)
                for g in zip(*per_class, strict=True)
            ]
        )


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


# Grid values smoothed at once by SmoothCurveBatch (8 MB of float64).
_CURVE_CHUNK = 1 << 20


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
        geometry, M = stat.geometry, self.M
        fixed = stat._fixed_levels.at(M)
        total = fixed[:, 0].sum()
        # Only the label column moves between draws: the density (the
        # weights' column) is smoothed once, the label columns of a chunk
        # of draws together (chunks of ~8 MB).
        dens = geometry.smooth(fixed[:, :1] / total, stat.sigma)[:, 0]
        ok = dens > 1e-10 * dens.max()
        out = np.full((len(rngs), M + 1), np.nan)
        chunk = max(1, _CURVE_CHUNK // (M + 1))
        for start in range(0, len(rngs), chunk):
            part = rngs[start : start + chunk]
            labels = np.empty((M + 1, len(part)))
            for i, rng in enumerate(part):
                labels[:, i] = stat.label_pyramid(stat.draw(rng)).at(M)[:, 1]
            num = geometry.smooth(labels / total, stat.sigma)
            out[start : start + len(part), ok] = np.clip(
                num[ok] / dens[ok, None], 0.0, 1.0
            ).T
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
