"""Goodness-of-fit tests of calibration with p-values."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from .._backend import calibration_tests as _ct
from .._backend import consistency as _cs
from .._backend import smece as _sm
from .._backend.binning import uniform_edges
from .._params import (
    MAX_BINS,
    MAX_BOOTSTRAP,
    AnyOf,
    Interval,
    IsCallable,
    NoneOr,
    StrOptions,
    check_seed_sequence,
    validate_params,
)
from .._validation import binary_tasks, check_calibration_inputs

__all__ = ["CalibrationTestResult", "calibration_test"]

_METHODS = (
    "consistency",
    "spiegelhalter",
    "hosmer-lemeshow",
    "ks",
    "kuiper",
    "skce",
    "skce-linear",
)
_STATISTICS = (
    "smooth_ece",
    "binned_ece",
    "brier",
    "spiegelhalter",
    "hosmer-lemeshow",
    "ks",
    "kuiper",
    "skce",
)
# The binned ECE of the consistency test: binned_calibration_error's defaults.
_ECE_BINS = 15


@dataclass(frozen=True, repr=False)
class CalibrationTestResult:
    """Result of :func:`calibration_test`.

    Attributes
    ----------
    statistic : float
        The test statistic (see ``method`` in :func:`calibration_test`).
    pvalue : float
        Probability under the null hypothesis of calibration of a statistic
        at least as extreme.
    method : str
    statistic_name : str
        What ``statistic`` is, e.g. ``"smooth_ece"`` or ``"z"``.
    n_samples : int
    n_resamples : int or None
        Label draws of a resampling test.
    dof : int or None
        Degrees of freedom of the chi-squared law (Hosmer-Lemeshow).
    null_statistics : ndarray or None
        The resampled statistics, when they were computed (the SmoothECE
        consistency test only decides whether each exceeds the observed
        value, and leaves this None).
    per_class : tuple of CalibrationTestResult or None
        The one-vs-rest tests of ``multi_class="classwise"`` with a
        Bonferroni combination.
    """

    statistic: float
    pvalue: float
    method: str
    statistic_name: str
    n_samples: int
    n_resamples: int | None = None
    dof: int | None = None
    null_statistics: np.ndarray | None = field(default=None, compare=False)
    per_class: tuple | None = field(default=None, compare=False)

    def __repr__(self):
        extra = ""
        if self.n_resamples is not None:
            extra += f", n_resamples={self.n_resamples}"
        if self.dof is not None:
            extra += f", dof={self.dof}"
        return (
            f"CalibrationTestResult(method={self.method!r}, "
            f"statistic={self.statistic:.6g}, pvalue={self.pvalue:.6g}"
            f"{extra}, n_samples={self.n_samples})"
        )


def _brier(y, s, w):
    return float(np.sum(w * (y - s) ** 2) / np.sum(w))


def _abs_z(y, s, w):
    return abs(_ct.spiegelhalter(y, s, w)[0])


def _ks(y, s, w):
    return _ct.cumulative_differences(y, s, w)[0]


def _kuiper(y, s, w):
    return _ct.cumulative_differences(y, s, w)[1]


def _bandwidth(bandwidth, s):
    return _ct.median_bandwidth(s) if bandwidth is None else float(bandwidth)


def _task_statistic(statistic, s, w, n_bins, bandwidth):
    """The statistic of one binary task as a function of its labels."""
    if callable(statistic):
        return _cs.FunctionStatistic(statistic, s, w)
    if statistic == "smooth_ece":
        return _SmoothObserved(_cs.SmoothECEStatistic(s, w, _sm.GridGeometry("l1")))
    if statistic == "binned_ece":
        return _cs.BinnedECEStatistic(s, w, uniform_edges(_ECE_BINS))
    funcs = {
        "brier": _brier,
        "spiegelhalter": _abs_z,
        "ks": _ks,
        "kuiper": _kuiper,
    }
    if statistic == "hosmer-lemeshow":
        # labels only: the groups are those of the fixed scores
        return _ct.HosmerLemeshowGroups(s, w, n_bins)
    if statistic == "skce":
        # labels only: the kernel matrix is shared by the observed value and
        # every resample
        return _ct.SKCEKernel(s, w, _bandwidth(bandwidth, s))
    return _cs.FunctionStatistic(funcs[statistic], s, w)


class _SmoothObserved:
    """SmoothECE statistic called on labels in the caller's row order."""

    def __init__(self, stat):
        self.stat = stat

    def __call__(self, y):
        return self.stat.observed(y)


def _consistency(
    data, tasks, multi_class, statistic, n_resamples, seed, n_jobs, n_bins, bandwidth
):
    name = (
        statistic
        if isinstance(statistic, str)
        else getattr(statistic, "__name__", "statistic")
    )
    stats = [_task_statistic(statistic, s, w, n_bins, bandwidth) for _, s, w in tasks]
    observed = float(np.mean([f(y) for f, (y, _, _) in zip(stats, tasks, strict=True)]))
    if statistic == "smooth_ece":
        # Only whether each resample reaches the observed value matters; the
        # lower end of the bisection bracket keeps the count from missing a
        # resample that ties the exact fixed point.
        threshold = max(observed - _sm.SIGMA_TOL, 0.0) if observed > 0 else 0.0
        if len(tasks) == 1:
            batch = _cs.ExceedBatch(stats[0].stat, threshold)
        else:
            batch = _cs.MeanExceedBatch(
                [f.stat for f in stats], _cs.ClassDraw(data.proba), threshold
            )
        exceed = _cs.run_batches(batch, n_resamples, seed, n_jobs)
        pvalue = (1.0 + float(exceed.sum())) / (1.0 + n_resamples)
        return CalibrationTestResult(
            observed, pvalue, "consistency", name, data.n_samples, n_resamples
        )
    if len(tasks) == 1:
        y, s, w = tasks[0]
        if statistic == "skce":
            batch = _cs.SKCEBatch(stats[0])
        else:
            batch = _cs.ValueBatch(stats, _cs.BinaryDraw(s))
    else:
        batch = _cs.ValueBatch(stats, _cs.ClassDraw(data.proba))
    reps = _cs.run_batches(batch, n_resamples, seed, n_jobs)
    return CalibrationTestResult(
        observed,
        _cs.consistency_pvalue(observed, reps),
        "consistency",
        name,
        data.n_samples,
        n_resamples,
        null_statistics=reps,
    )


def _analytic(method, y, s, w, n, *, n_bins, bandwidth, rng):
    if method == "spiegelhalter":
        z, p = _ct.spiegelhalter(y, s, w)
        return CalibrationTestResult(z, p, method, "z", n)
    if method == "hosmer-lemeshow":
        c, p, dof = _ct.hosmer_lemeshow(y, s, w, n_bins)
        return CalibrationTestResult(c, p, method, "chi2", n, dof=dof)
    if method in ("ks", "kuiper"):
        ks, ku = _ct.cumulative_differences(y, s, w)
        if method == "ks":
            return CalibrationTestResult(
                ks, _ct.brownian_max_abs_sf(ks), method, "ks", n
            )
        return CalibrationTestResult(ku, _ct.brownian_range_sf(ku), method, "kuiper", n)
    # skce-linear: the pairs follow a random order of the rows.
    order = rng.permutation(s.shape[0])
    est, p, _ = _ct.skce_linear(y[order], s[order], _bandwidth(bandwidth, s))
    return CalibrationTestResult(est, p, method, "skce_linear", n)


def _bonferroni(results, method, n):
    """One test of several one-vs-rest tests: the smallest p-value times their
    number (valid whatever their dependence), with that class's statistic."""
    best = min(range(len(results)), key=lambda k: results[k].pvalue)
    p = min(1.0, len(results) * results[best].pvalue)
    r = results[best]
    return CalibrationTestResult(
        r.statistic,
        p,
        method,
        r.statistic_name,
        n,
        r.n_resamples,
        r.dof,
        per_class=tuple(results),
    )


@validate_params(
    method=StrOptions(*_METHODS),
    statistic=AnyOf(StrOptions(*_STATISTICS), IsCallable()),
    n_resamples=Interval(numbers.Integral, 1, MAX_BOOTSTRAP),
    n_bins=Interval(numbers.Integral, 2, MAX_BINS),
    bandwidth=NoneOr(Interval(numbers.Real, 0, None, closed="neither")),
    multi_class=StrOptions("top-label", "classwise"),
)
def calibration_test(
    y_true,
    y_proba,
    *,
    method="consistency",
    statistic="smooth_ece",
    n_resamples=1000,
    n_bins=10,
    bandwidth=None,
    multi_class="top-label",
    sample_weight=None,
    pos_label=None,
    labels=None,
    random_state=None,
    n_jobs=None,
):
    """Test the null hypothesis that a classifier's probabilities are calibrated.

    The null hypothesis is that, given the predictions, each label is drawn
    from its predicted distribution: ``y_i ~ Bernoulli(s_i)`` independently
    (binary), or the class from the probability row. A small p-value is
    evidence of miscalibration; a large one is not evidence of calibration,
    and neither says how large the miscalibration is (at large ``n`` a
    negligible miscalibration is rejected, at small ``n`` a large one may not
    be). Report a calibration error such as :func:`smooth_ece` alongside.

    Unlike the metric functions, which return a float, a test returns its
    result object (as :mod:`scipy.stats` tests do): ``res.statistic`` and
    ``res.pvalue``.

    Read more in the :ref:`User Guide <is_calibrated>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities, as in :func:`smooth_ece`.
    method : str, default="consistency"
        * ``"consistency"``: consistency resampling (Broecker & Smith, 2007).
          ``n_resamples`` label vectors are drawn from the predictions and
          the p-value is ``(1 + #{T* >= T}) / (1 + n_resamples)``, which is
          exact (valid at every ``n`` and every ``n_resamples``) for any
          ``statistic``.
        * ``"spiegelhalter"``: Spiegelhalter's (1986) ``Z``, the Brier score
          standardised by its null mean and variance; two-sided normal
          p-value. Sensitive to miscalibration that moves the Brier score,
          blind to errors that cancel in it.
        * ``"hosmer-lemeshow"``: Hosmer & Lemeshow's ``C``-hat over
          ``n_bins`` quantile groups, chi-squared with ``G`` degrees of
          freedom (``G`` non-empty groups: the law for predictions that were
          not fitted on the data tested; the ``G - 2`` of the original
          applies to a logistic model fitted on them). Its value and its
          p-value depend on the groups, and at large ``n`` it rejects
          miscalibration far too small to matter: prefer it for small
          samples, and do not read its p-value as a measure of fit.
        * ``"ks"``, ``"kuiper"``: the Kolmogorov-Smirnov and Kuiper
          statistics of the cumulative differences ``sum_{s_j <= s} (y_j -
          s_j)`` along the sorted scores, scaled by their null standard
          deviation (Arrieta-Ibarra et al., 2022; Tygert, 2023), with the
          asymptotic null laws of the supremum of ``|B|`` and of the range
          of a Brownian motion ``B`` on [0, 1]. No bins, no bandwidth;
          tied scores count as one step (conservative).
        * ``"skce"``: the unbiased quadratic-time squared kernel calibration
          error (Widmann, Lindsten & Zachariah, 2019) with a Gaussian kernel
          on the scores; p-value by consistency resampling (exact). Memory
          ``O(n)``, time ``O(n^2 n_resamples)``.
        * ``"skce-linear"``: the linear-time SKCE over disjoint pairs of
          rows in a random order (from ``random_state``), with its
          asymptotic one-sided normal p-value. Less powerful, ``O(n)``.
    statistic : str or callable, default="smooth_ece"
        Statistic of ``method="consistency"``: ``"smooth_ece"``
        (:func:`smooth_ece`, its default options), ``"binned_ece"``
        (:func:`binned_calibration_error`, its defaults), ``"brier"``,
        ``"spiegelhalter"`` (``|Z|``), ``"hosmer-lemeshow"``, ``"ks"``,
        ``"kuiper"``, ``"skce"``, or a callable ``statistic(y, s, w)`` of a
        binary problem (0/1 labels, scores, weights) where larger means
        less calibrated. Ignored by the other methods.
    n_resamples : int, default=1000
        Label draws of ``"consistency"`` and ``"skce"``. The p-value is
        never below ``1 / (n_resamples + 1)``.
    n_bins : int, default=10
        Quantile groups of ``"hosmer-lemeshow"`` (as a test or a statistic).
    bandwidth : float, default=None
        Gaussian kernel scale of the SKCE; ``None`` uses the median distance
        between scores (computed from the scores only, so that the test
        stays valid).
    multi_class : {"top-label", "classwise"}, default="top-label"
        Multiclass ``y_proba``: ``"top-label"`` tests the confidence of the
        predicted class against its correctness. ``"classwise"`` tests each
        one-vs-rest problem; a consistency test then uses the mean of the
        per-class statistics under joint draws of the class, the other
        methods combine the per-class tests by Bonferroni (``per_class``
        holds them).
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights: Spiegelhalter, Kolmogorov-Smirnov and Kuiper read
        a weight of 2 as two independent observations of the row (integer
        weights give the test of the repeated rows); Hosmer-Lemeshow as
        well, with its groups at the weighted quantiles. The resampling
        tests draw one label per row and weight the statistic, which keeps
        them exact for any weights (a weighted row is then not the same as
        repeated rows, whose labels would be drawn separately).
        ``"skce-linear"`` refuses weights (its pairs are rows).
    pos_label, labels
        As in :func:`smooth_ece`.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the label draws (and the pairs of ``"skce-linear"``). The
        result does not depend on ``n_jobs``.
    n_jobs : int, default=None
        Parallel workers for the resampling (joblib).

    Returns
    -------
    result : CalibrationTestResult
        With ``statistic`` and ``pvalue``.

    See Also
    --------
    smooth_ece : How large the miscalibration is.
    score_decomposition : How much of the Brier score or log-loss it costs.
    calibration_summary : Calibration slope, intercept, Emax, E90, ICI.

    Notes
    -----
    The consistency test with ``statistic="smooth_ece"`` works on the grid
    of the SmoothECE: the scores do not move under the null hypothesis, so
    their grid cells are computed once, and a resample is a segment sum of
    the drawn labels over them and one kernel smoothing (the resample's
    SmoothECE is at least the observed ``T`` exactly when its smoothed
    residual at bandwidth ``T`` has an L1 norm of at least ``T``). A
    resample then costs little more than drawing its labels and binning them
    once (``benchmarks/bench_calibration_tests.py`` prints both).

    References
    ----------
    D. J. Spiegelhalter, "Probabilistic prediction in patient management and
    clinical trials", Statistics in Medicine 5, 1986.
    D. W. Hosmer and S. Lemeshow, Applied Logistic Regression, 2nd ed., 2000.
    J. Broecker and L. A. Smith, "Increasing the reliability of reliability
    diagrams", Weather and Forecasting 22, 2007.
    I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu, "Metrics of
    calibration for probabilistic predictions", JMLR 23, 2022.
    D. Widmann, F. Lindsten and D. Zachariah, "Calibration tests in
    multi-class classification: a unifying framework", NeurIPS 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import calibration_test
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < p                      # calibrated
    >>> res = calibration_test(y, p, n_resamples=200, random_state=0)
    >>> bool(res.pvalue > 0.05)
    True
    >>> y_over = rng.uniform(size=2000) < 0.5 + 0.6 * (p - 0.5)  # over-confident
    >>> calibration_test(y_over, p, method="spiegelhalter")  # doctest: +ELLIPSIS
    CalibrationTestResult(method='spiegelhalter', statistic=..., n_samples=2000)
    >>> calibration_test(y_over, p, method="kuiper").pvalue < 1e-6
    True
    """
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    if method == "skce-linear" and sample_weight is not None:
        raise ValueError(
            "method='skce-linear' does not take sample_weight: its estimate is a "
            "mean over pairs of rows; use method='skce'."
        )
    tasks = binary_tasks(data, multi_class)
    seed = check_seed_sequence(random_state)
    n = data.n_samples
    if method in ("consistency", "skce"):
        stat = "skce" if method == "skce" else statistic
        classwise = data.kind == "multiclass" and multi_class == "classwise"
        if method == "skce" and classwise:
            results = [
                _consistency(
                    data,
                    [t],
                    multi_class,
                    stat,
                    n_resamples,
                    q,
                    n_jobs,
                    n_bins,
                    bandwidth,
                )
                for t, q in zip(tasks, seed.spawn(len(tasks)), strict=True)
            ]
            results = [_rename(r, "skce") for r in results]
            return _bonferroni(results, "skce", n)
        res = _consistency(
            data, tasks, multi_class, stat, n_resamples, seed, n_jobs, n_bins, bandwidth
        )
        return _rename(res, method) if method == "skce" else res
    rngs = [np.random.default_rng(q) for q in seed.spawn(len(tasks))]
    results = [
        _analytic(method, y, s, w, n, n_bins=n_bins, bandwidth=bandwidth, rng=r)
        for (y, s, w), r in zip(tasks, rngs, strict=True)
    ]
    if len(results) == 1:
        return results[0]
    return _bonferroni(results, method, n)


def _rename(res, method):
    return CalibrationTestResult(
        res.statistic,
        res.pvalue,
        method,
        res.statistic_name,
        res.n_samples,
        res.n_resamples,
        res.dof,
        res.null_statistics,
        res.per_class,
    )
