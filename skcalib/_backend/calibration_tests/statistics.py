"""Test statistics of a :class:`~.task.NullTask`, many label vectors at once.

Each statistic is built once from the fixed scores and weights; its
:meth:`values` maps a block of weighted labels (``(m, n)``, rows of the task
in sorted order) to ``m`` values, larger meaning less calibrated. The
observed labels go through the same code as the resampled ones, so equal
label sums give equal values. Every statistic reads the labels through their
sums over tie blocks (:meth:`NullTask.sums`): with integer weights those
sums are exact, and label vectors that differ only inside tie blocks give
bit-identical statistics.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..binning import _PercentilePlan, assign_bins, quantile_edges, uniform_edges
from . import compiled, laws
from .draws import draw_classes

__all__ = [
    "BinnedECE",
    "Brier",
    "ClasswiseMean",
    "CumulativeDifferences",
    "FunctionStatistic",
    "GroupedChiSquare",
    "SKCE",
    "Spiegelhalter",
    "Statistic",
    "median_bandwidth",
]


class Statistic:
    """Base: the draws and the observed labels of the task."""

    name = "statistic"
    has_law = False
    # Whether the statistic has compiled loops, and whether :meth:`values`
    # runs them (set by the engine for the observed and the resampled labels
    # alike, see :meth:`prepare`).
    has_compiled = False
    use_compiled = False

    def __init__(self, task):
        self.task = task

    @property
    def n_rows(self):
        return self.task.n

    def draw(self, rng, m):
        return self.task.labels(rng, m)

    def observed_labels(self):
        return self.task.observed()

    def from_labels(self, y):
        """The block :meth:`values` reads for boolean labels ``y`` (rows of
        the task in sorted order)."""
        return self.task.weigh(y)

    def prepare(self, n_resamples):
        """Choose the code path for ``n_resamples`` draws (before any value)."""
        self.use_compiled = self.has_compiled and compiled.worth_compiling(
            self.n_rows, n_resamples
        )

    def observed_value(self):
        """The test statistic of the observed labels."""
        return float(self.values(self.observed_labels())[0])

    def reported(self):
        """The statistic reported to the user (default: the test statistic)."""
        return self.observed_value()

    def values(self, c):
        raise NotImplementedError


def _signed_ratio(num, scale):
    """``num / scale``; with no variance, 0 where ``num`` is 0, else +-inf."""
    if scale > 0:
        return num / scale
    return np.where(num == 0, 0.0, np.copysign(np.inf, num))


class Spiegelhalter(Statistic):
    """Spiegelhalter's ``Z = sum w (y - s)(1 - 2 s) / sd``; the test statistic
    is ``|Z|`` (two-sided), with the variance of the task's reading,
    ``sd^2 = sum q (1 - 2 s)^2 s (1 - s)``."""

    name = "z"
    has_law = True

    def __init__(self, task):
        super().__init__(task)
        t = task
        self.coef = 1.0 - 2.0 * t.bs
        self.mean = float(np.sum(t.bw * t.bs * self.coef))
        self.scale = float(np.sqrt(np.sum(t.bq * self.coef**2 * t.bs * (1 - t.bs))))

    def z(self, c):
        num = self.task.sums(c, copy=False) @ self.coef - self.mean
        return _signed_ratio(num, self.scale)

    def values(self, c):
        return np.abs(self.z(c))

    def reported(self):
        return float(self.z(self.observed_labels())[0])

    def asymptotic_pvalue(self, value):
        return laws.normal_two_sided(value)

    def effective_size(self):
        t = self.task
        coef = t.w * (1.0 - 2.0 * t.s)
        return laws.effective_size(coef, t.s, t.w if t.frequency else None)


class CumulativeDifferences(Statistic):
    """Kolmogorov-Smirnov (``kind="ks"``) or Kuiper statistic of the walk
    ``R_k = sum_{j <= k} w_j (y_j - s_j)`` along the sorted scores, read at
    the end of each tie block (with ``R_0 = 0``) and divided by its null
    standard deviation at the end, ``sqrt(sum q s (1 - s))``
    (Arrieta-Ibarra et al., 2022): ``max |R| / sd`` and
    ``(max R - min R) / sd``."""

    has_law = True
    has_compiled = True

    def __init__(self, task, kind):
        super().__init__(task)
        t = task
        self.kind = self.name = kind
        self.drift = np.cumsum(t.bw * t.bs)
        self.scale = float(np.sqrt(np.sum(t.bq * t.bs * (1.0 - t.bs))))

    def values(self, c):
        if self.use_compiled:
            hi, lo = compiled.walk_extremes(c, self.task.starts, self.drift)
        else:
            walk = self.task.walk(c)
            if walk.dtype == np.float64:
                walk -= self.drift
            else:
                walk = np.subtract(walk, self.drift)
            hi = np.maximum(walk.max(axis=1), 0.0)
            lo = np.minimum(walk.min(axis=1), 0.0)
        span = np.maximum(hi, -lo) if self.kind == "ks" else hi - lo
        return np.abs(_signed_ratio(span, self.scale))

    def asymptotic_pvalue(self, value):
        if self.kind == "ks":
            return laws.brownian_max_abs_sf(value)
        return laws.brownian_range_sf(value)

    def effective_size(self):
        t = self.task
        return laws.effective_size(t.w, t.s, t.w if t.frequency else None)


def frequency_quantile_edges(s, w, n_bins):
    """``np.percentile(np.repeat(s, w), 100 * linspace(0, 1, n_bins + 1))``
    for sorted scores ``s`` and integer weights ``w``, without repeating."""
    percent = np.linspace(0.0, 100.0, n_bins + 1)
    total = int(np.sum(w))
    plan = _PercentilePlan(total, percent)
    rows = np.searchsorted(np.cumsum(w), plan.ranks, side="right")
    return plan.edges(s[rows])


class GroupedChiSquare(Statistic):
    """Hosmer-Lemeshow ``C``-hat (``kind="hosmer-lemeshow"``) or Pigeon-Heyse
    ``J^2`` (``kind="pigeon-heyse"``) over quantile groups of the scores.

    Both sum ``(O_g - E_g)^2 / V_g`` over the groups (``O_g = sum w y``,
    ``E_g = sum w s``). Pigeon and Heyse (1999) divide by the null variance
    ``V_g = sum q s (1 - s)``; Hosmer and Lemeshow by the larger
    ``Q_g p_g (1 - p_g)`` with ``Q_g = sum q`` and ``p_g = sum q s / Q_g``
    (``N_g`` times the mean score's binomial variance for unit or frequency
    weights). Groups whose null variance is 0 (scores all 0 or 1) are left
    out of the sum and of the degrees of freedom; labels that disagree with
    such scores make the statistic infinite.

    Groups: the weighted quantiles of :func:`binning.quantile_edges` (one
    label per row), or the quantiles of the repeated rows (frequency
    weights); tied scores share a group.
    """

    has_law = True

    def __init__(self, task, n_bins, kind):
        super().__init__(task)
        t = task
        self.kind = kind
        self.name = "chi2" if kind == "hosmer-lemeshow" else "j2"
        if t.frequency:
            edges = frequency_quantile_edges(t.s, t.w, n_bins)
        else:
            edges = quantile_edges(t.s, t.w, n_bins)
        g = assign_bins(t.bs, edges)
        self.gstarts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
        # the groups' first rows (groups are unions of tie blocks)
        self.rows = t.starts[self.gstarts]

        def per_group(x):
            return np.add.reduceat(x, self.gstarts)

        n_g = per_group(t.bw)
        self.keep = n_g > 0
        k = self.keep
        self.e_g = per_group(t.bw * t.bs)[k]
        q_g = per_group(t.bq)[k]
        qs_g = per_group(t.bq * t.bs)[k]
        self.null_var = per_group(t.bq * t.bs * (1.0 - t.bs))[k]
        self.positive = self.null_var > 0
        if kind == "pigeon-heyse":
            var = self.null_var
        else:
            p = np.divide(qs_g, q_g, out=np.zeros_like(q_g), where=q_g > 0)
            var = q_g * p * (1.0 - p)
        self.var = np.where(self.positive, var, 1.0)
        self.dof = int(self.positive.sum())
        self.n_groups = int(k.sum())
        # effective expected events and non-events per group
        ws, wns = t.bw * t.bs, t.bw * (1.0 - t.bs)
        if t.frequency:
            self.events = per_group(ws)[k], per_group(wns)[k]
        else:
            qs, qns = t.bq * t.bs, t.bq * (1.0 - t.bs)
            self.events = tuple(
                np.divide(
                    per_group(a)[k] ** 2,
                    per_group(b)[k],
                    out=np.zeros(self.n_groups),
                    where=per_group(b)[k] > 0,
                )
                for a, b in ((ws, qs), (wns, qns))
            )

    def values(self, c):
        o = self.task.segment_sums(c, self.rows)
        d = o[:, self.keep] - self.e_g
        terms = np.where(self.positive, d * d / self.var, 0.0)
        out = terms.sum(axis=1)
        impossible = np.any(~self.positive & (d != 0), axis=1)
        out[impossible] = np.inf
        return out

    def asymptotic_pvalue(self, value):
        return laws.chi2_sf(value, self.dof)

    def min_expected(self):
        """Smallest (effective) expected number of events or non-events over
        the groups of positive null variance."""
        if self.dof == 0:
            return np.inf
        ev, nev = self.events
        return float(min(ev[self.positive].min(), nev[self.positive].min()))


class Brier(Statistic):
    """Weighted mean Brier score ``sum w (y - s)^2 / W`` (linear in the
    labels: ``y^2 = y``)."""

    name = "brier"

    def __init__(self, task):
        super().__init__(task)
        t = task
        self.coef = 1.0 - 2.0 * t.bs
        self.const = float(np.sum(t.bw * t.bs * t.bs))

    def values(self, c):
        t = self.task
        return (t.sums(c, copy=False) @ self.coef + self.const) / t.total


class BinnedECE(Statistic):
    """Binned ECE (L1) with ``n_bins`` equal-width bins: ``sum_b |O_b - E_b|
    / W``, the default of :func:`binned_calibration_error`."""

    name = "binned_ece"

    def __init__(self, task, n_bins):
        super().__init__(task)
        t = task
        b = assign_bins(t.bs, uniform_edges(n_bins))
        bstarts = np.flatnonzero(np.r_[True, b[1:] != b[:-1]])
        self.rows = t.starts[bstarts]
        self.e_b = np.add.reduceat(t.bw * t.bs, bstarts)

    def values(self, c):
        t = self.task
        o = t.segment_sums(c, self.rows)
        return np.abs(o - self.e_b).sum(axis=1) / t.total


def gaussian_kernel_rows(S, rows, bandwidth):
    """Gaussian kernel ``exp(-|s_i - s_j|^2 / (2 b^2))`` between ``rows`` and all."""
    K = S[rows, None] - S[None, :]
    K *= 1.0 / bandwidth
    np.square(K, out=K)
    K *= -0.5
    return np.exp(K, out=K)


class SKCE(Statistic):
    """Unbiased quadratic squared kernel calibration error (Widmann, Lindsten
    & Zachariah, 2019) with the Gaussian kernel ``k`` of the scores.

    The binary matrix-valued kernel ``k(s, s') I_2`` gives ``h_ij = 2 k_ij
    r_i r_j`` with ``r = y - s``. The U-statistic averages ``h`` over pairs
    of distinct observations: ``sum_{i != j} w_i w_j h_ij / (W^2 - sum w^2)``
    when a row is one observation, and, when a row of weight ``w`` is ``w``
    observations, ``(sum_{i, j} w_i w_j h_ij - sum_i w_i r_i^2) / (W^2 -
    W)`` (the pairs of distinct copies), which equals the statistic of the
    repeated rows. The kernel is evaluated on the distinct scores and kept
    when there are at most ``chunk`` of them (else rebuilt in row chunks per
    call: memory ``O(chunk n)``).
    """

    name = "skce"

    def __init__(self, task, bandwidth, chunk=2048):
        super().__init__(task)
        t = task
        self.bandwidth, self.chunk = bandwidth, chunk
        n = t.bs.shape[0]
        self._K = (
            gaussian_kernel_rows(t.bs, slice(None), bandwidth) if n <= chunk else None
        )
        self.coef = 1.0 - 2.0 * t.bs
        self.const = float(np.sum(t.bq * t.bs * t.bs))
        self.mean = t.bw * t.bs
        self.pairs = t.total**2 - float(np.sum(t.bq))

    def values(self, c):
        t = self.task
        R = t.sums(c)
        # sum_i q_i r_i^2 = sum q y (1 - 2 s) + sum q s^2 (y^2 = y), where
        # q y is the weighted label itself when q = w
        sq = R if t.frequency or t.unit else t.sums(c, t.w)
        diag = sq @ self.coef + self.const
        R -= self.mean
        if self._K is not None:
            total = np.einsum("ij,ij->i", R @ self._K, R)
        else:
            total = np.zeros(R.shape[0])
            n = t.bs.shape[0]
            for start in range(0, n, self.chunk):
                rows = slice(start, min(start + self.chunk, n))
                K = gaussian_kernel_rows(t.bs, rows, self.bandwidth)
                total += np.einsum("ij,ij->i", R[:, rows], R @ K.T)
        if not self.pairs > 0:
            return np.zeros(R.shape[0])
        return 2.0 * (total - diag) / self.pairs


def _real(value):
    """``value`` as a float if it is a real number (0-d), else None."""
    if isinstance(value, numbers.Real):
        return float(value)
    arr = np.asarray(value)
    if arr.ndim == 0 and arr.dtype.kind in "biuf":
        return float(arr)
    return None


class FunctionStatistic(Statistic):
    """A callable ``func(y, s, w)`` of one binary problem (rows in the
    caller's order), evaluated once per label vector."""

    def __init__(self, task, func, name):
        super().__init__(task)
        self.func, self.name = func, name
        self.s = task.unsorted(task.s)
        self.w = task.unsorted(task.given_w)

    def draw(self, rng, m):
        return self.task._draw(rng, m)

    def observed_labels(self):
        return self.task.y[None, :] > 0.5

    def from_labels(self, y):
        return y

    def observed_value(self):
        y = self.task.unsorted(self.task.y)
        raw = self.func(y, self.s, self.w)
        value = _real(raw)
        if value is None or not np.isfinite(value):
            raise ValueError(
                f"statistic {self.name!r} must return a finite real number on the "
                f"observed data; it returned {raw!r}."
            )
        return value

    def values(self, c):
        out = np.empty(c.shape[0])
        for i in range(c.shape[0]):
            y = self.task.unsorted(c[i].astype(np.float64))
            raw = self.func(y, self.s, self.w)
            value = _real(raw)
            if value is None or np.isnan(value):
                raise ValueError(
                    f"statistic {self.name!r} must return a real number, not NaN; "
                    f"on labels drawn from the null hypothesis it returned {raw!r}."
                )
            out[i] = value
        return out


def median_bandwidth(s, max_points=2000, counts=None):
    """Median heuristic on the scores alone (fixed under the null hypothesis,
    so the test stays valid): the median of ``|s_i - s_j|`` over pairs of an
    evenly spaced subsample of the sorted scores, floored at 1e-3. With
    integer ``counts`` (sorted ``s``), the scores are those of the repeated
    rows (without repeating them)."""
    if counts is None:
        ss = np.sort(s)
        n = ss.shape[0]
    else:
        ss = s
        n = int(np.sum(counts))
    picked = np.arange(n)
    if n > max_points:
        picked = np.linspace(0, n - 1, max_points).astype(np.intp)
        n = max_points
    if counts is not None:
        ss = ss[np.searchsorted(np.cumsum(counts), picked, side="right")]
    elif n < ss.shape[0]:
        ss = ss[picked]
    # every pair once, by lag: no n-by-n matrix and no index arrays
    d = np.empty(n * (n - 1) // 2)
    at = 0
    for lag in range(1, n):
        np.subtract(ss[lag:], ss[: n - lag], out=d[at : at + n - lag])
        at += n - lag
    med = float(np.median(d)) if d.size else 0.0
    return max(med, 1e-3)


class ClasswiseMean:
    """Mean over the classes of one-vs-rest statistics, the class of each
    row drawn from its probability row (all classes from one draw).

    Parameters
    ----------
    statistics : list
        One statistic per class, each on the :class:`NullTask` of that
        class's indicator and probability column.
    P : ndarray of shape (n, n_classes)
        The probability rows.
    """

    def __init__(self, statistics, P):
        self.statistics = statistics
        cum = np.cumsum(P, axis=1)
        cum[:, -1] = 1.0
        self.cum = cum
        self.n_rows = P.shape[0]
        self.name = statistics[0].name

    def draw(self, rng, m):
        classes = draw_classes(rng, self.cum, m)
        return [
            f.from_labels(classes[:, f.task.order] == k)
            for k, f in enumerate(self.statistics)
        ]

    def prepare(self, n_resamples):
        for f in self.statistics:
            f.prepare(n_resamples)

    def observed_value(self):
        return float(np.mean([f.observed_value() for f in self.statistics]))

    def values(self, blocks):
        return np.mean(
            [f.values(c) for f, c in zip(self.statistics, blocks, strict=True)], axis=0
        )
