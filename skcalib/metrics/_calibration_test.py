"""Goodness-of-fit tests of calibration with p-values."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from .._backend import calibration_tests as _ct
from .._backend import consistency as _cs
from .._backend.calibration_tests import statistics as _st
from .._backend.calibration_tests.task import check_frequency_weights
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
    "pigeon-heyse",
    "ks",
    "kuiper",
    "skce",
)
_STATISTICS = (
    "smooth_ece",
    "binned_ece",
    "brier",
    "spiegelhalter",
    "hosmer-lemeshow",
    "pigeon-heyse",
    "ks",
    "kuiper",
    "skce",
)
# The methods with an asymptotic null law.
_ASYMPTOTIC = ("spiegelhalter", "hosmer-lemeshow", "pigeon-heyse", "ks", "kuiper")
# pvalue_method="auto" takes the asymptotic law when (see calibration_test):
# Spiegelhalter's sum has an effective size of at least this many fair coin
# flips (laws.effective_size) ...
AUTO_MIN_SIZE_Z = 100.0
# ... the walk of the KS / Kuiper statistics at least this many ...
AUTO_MIN_SIZE_WALK = 1000.0
# ... and every Hosmer-Lemeshow / Pigeon-Heyse group expects at least this
# many (effective) events and non-events.
AUTO_MIN_EXPECTED = 5.0
# The binned ECE of the consistency test: binned_calibration_error's defaults.
_ECE_BINS = 15


@dataclass(frozen=True, repr=False)
class CalibrationTestResult:
    """Result of :func:`calibration_test`.

    Parameters
    ----------
    statistic : float
        The test statistic (see ``method`` in :func:`calibration_test`).
    pvalue : float
        Probability under the null hypothesis of calibration of a statistic
        at least as extreme.
    method : str
        The test, as ``method`` in :func:`calibration_test`.
    statistic_name : str
        What ``statistic`` is, e.g. ``"smooth_ece"`` or ``"z"``.
    n_samples : int
        Rows of the data tested.
    n_resamples : int or None, default=None
        Label draws of an exact p-value; None for an asymptotic one.
    dof : int or None, default=None
        Degrees of freedom of the chi-squared law (Hosmer-Lemeshow,
        Pigeon-Heyse): the groups whose null variance is positive.
    null_statistics : ndarray or None, default=None
        The statistics of the labels drawn for an exact p-value (``|Z|``
        for Spiegelhalter's test), when they were computed (the SmoothECE
        only decides whether each reaches the observed value, and leaves
        this None).
    per_class : tuple of CalibrationTestResult or None, default=None
        The one-vs-rest tests of ``multi_class="classwise"`` with a
        Bonferroni combination.
    pvalue_method : {"exact", "asymptotic"} or None, default=None
        How the p-value was computed: by simulation of the null law
        (``"exact"``), or from the statistic's asymptotic law.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import calibration_test
    >>> p = np.linspace(0.05, 0.95, 40)
    >>> y = (np.arange(40) % 2).astype(int)
    >>> res = calibration_test(y, p, method="ks", random_state=0)
    >>> res.pvalue_method, res.n_resamples
    ('exact', 999)
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
    pvalue_method: str | None = None

    def __repr__(self):
        extra = ""
        if self.pvalue_method is not None:
            extra += f", pvalue_method={self.pvalue_method!r}"
        if self.n_resamples is not None:
            extra += f", n_resamples={self.n_resamples}"
        if self.dof is not None:
            extra += f", dof={self.dof}"
        return (
            f"CalibrationTestResult(method={self.method!r}, "
            f"statistic={self.statistic:.6g}, pvalue={self.pvalue:.6g}"
            f"{extra}, n_samples={self.n_samples})"
        )


def _statistic(name, task, *, n_bins, bandwidth):
    """The statistic ``name`` (a string of ``_STATISTICS``) of one task."""
    if name == "smooth_ece":
        return _cs.SmoothECETest(task)
    if name == "binned_ece":
        return _st.BinnedECE(task, _ECE_BINS)
    if name == "brier":
        return _st.Brier(task)
    if name == "spiegelhalter":
        return _st.Spiegelhalter(task)
    if name in ("hosmer-lemeshow", "pigeon-heyse"):
        return _st.GroupedChiSquare(task, n_bins, name)
    if name in ("ks", "kuiper"):
        return _st.CumulativeDifferences(task, name)
    # skce: a bandwidth from the scores alone keeps the test exact
    if bandwidth is not None:
        b = float(bandwidth)
    else:
        b = _ct.median_bandwidth(task.s, counts=task.w if task.frequency else None)
    return _st.SKCE(task, b)


def _law_is_reliable(stat):
    """The rule of ``pvalue_method="auto"`` (see :func:`calibration_test`)."""
    if isinstance(stat, _st.Spiegelhalter):
        return stat.effective_size() >= AUTO_MIN_SIZE_Z
    if isinstance(stat, _st.CumulativeDifferences):
        return stat.effective_size() >= AUTO_MIN_SIZE_WALK
    return stat.min_expected() >= AUTO_MIN_EXPECTED


def _test(stat, method, n, pvalue_method, n_resamples, seed, n_jobs):
    """The test of one statistic (one binary task, or a classwise mean)."""
    dof = getattr(stat, "dof", None)
    if pvalue_method == "asymptotic" or (
        pvalue_method == "auto" and method in _ASYMPTOTIC and _law_is_reliable(stat)
    ):
        value = stat.observed_value()
        return CalibrationTestResult(
            stat.reported(),
            stat.asymptotic_pvalue(value),
            method,
            stat.name,
            n,
            dof=dof,
            pvalue_method="asymptotic",
        )
    value, pvalue, null = _ct.exact_pvalue(stat, n_resamples, seed, n_jobs)
    # a named test reports its own statistic (Spiegelhalter's signed Z), a
    # consistency test the statistic it counts
    reported = value if method == "consistency" else stat.reported()
    return CalibrationTestResult(
        reported,
        pvalue,
        method,
        stat.name,
        n,
        n_resamples,
        dof,
        null_statistics=null,
        pvalue_method="exact",
    )


def _bonferroni(results, method, n):
    """One test of several one-vs-rest tests: the smallest p-value times their
    number (valid whatever their dependence), with that class's statistic."""
    best = min(range(len(results)), key=lambda k: results[k].pvalue)
    r = results[best]
    return CalibrationTestResult(
        r.statistic,
        min(1.0, len(results) * r.pvalue),
        method,
        r.statistic_name,
        n,
        r.n_resamples,
        r.dof,
        per_class=tuple(results),
        pvalue_method=r.pvalue_method,
    )


def _check_options(method, statistic, pvalue_method, kind, data, multi_class):
    """Combinations of options that have no meaning, named."""
    if pvalue_method == "asymptotic" and method not in _ASYMPTOTIC:
        raise ValueError(
            f"pvalue_method='asymptotic' is not available for method={method!r}, "
            "whose null law is known only by simulation; use 'exact' or 'auto'. "
            "Asymptotic laws: " + ", ".join(repr(m) for m in _ASYMPTOTIC) + "."
        )
    if kind != "frequency":
        return
    if data.sample_weight is not None and not check_frequency_weights(
        data.sample_weight
    ):
        raise ValueError(
            "sample_weight must hold integer counts with "
            "sample_weight_kind='frequency' (a row of weight w stands for w "
            "observations); use sample_weight_kind='importance' for other weights."
        )
    if method == "consistency" and callable(statistic):
        raise ValueError(
            "A callable statistic reads one label per row; it cannot be used with "
            "sample_weight_kind='frequency' (repeat the rows instead)."
        )
    if method == "consistency" and data.kind == "multiclass":
        if multi_class == "classwise":
            raise ValueError(
                "multi_class='classwise' with method='consistency' draws one class "
                "per row; it cannot be used with sample_weight_kind='frequency'."
            )


@validate_params(
    method=StrOptions(*_METHODS),
    statistic=AnyOf(StrOptions(*_STATISTICS), IsCallable()),
    pvalue_method=StrOptions("auto", "exact", "asymptotic"),
    n_resamples=Interval(numbers.Integral, 1, MAX_BOOTSTRAP),
    n_bins=Interval(numbers.Integral, 2, MAX_BINS),
    bandwidth=NoneOr(Interval(numbers.Real, 0, None, closed="neither")),
    multi_class=StrOptions("top-label", "classwise"),
    sample_weight_kind=StrOptions("importance", "frequency"),
)
def calibration_test(
    y_true,
    y_proba,
    *,
    method="consistency",
    statistic="smooth_ece",
    pvalue_method="auto",
    n_resamples=999,
    n_bins=10,
    bandwidth=None,
    multi_class="top-label",
    sample_weight=None,
    sample_weight_kind="importance",
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

    The null hypothesis fixes the law of the labels, so every test has an
    exact p-value: ``n_resamples`` label vectors are drawn from the
    predictions (same scores, same weights), and the p-value is ``(1 +
    #{T* >= T}) / (n_resamples + 1)``, valid at every sample size, every
    score distribution and every ``n_resamples`` (a test at level ``alpha``
    rejects with probability at most ``alpha``; the resampling costs only
    power). Ties count against rejection.

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
        * ``"consistency"``: consistency resampling (Broecker & Smith, 2007)
          of ``statistic``: the exact p-value above, for any statistic.
          With the SmoothECE, never the weakest test in the benchmark
          (power 0.60-0.74 at n = 1000 against over-, under-confidence and
          a shift).
        * ``"spiegelhalter"``: Spiegelhalter's (1986) ``Z``, the Brier score
          standardised by its null mean and variance; two-sided. The most
          powerful against over- and under-confidence (0.85, 0.92), blind to
          errors that cancel in the Brier score (0.05 against a shift of all
          the probabilities).
        * ``"hosmer-lemeshow"``: Hosmer & Lemeshow's ``C``-hat over
          ``n_bins`` quantile groups of the scores, chi-squared with as many
          degrees of freedom as groups with positive null variance (the law
          for predictions not fitted on the data tested; ``G - 2`` holds
          only for a logistic model fitted on them).
        * ``"pigeon-heyse"``: Pigeon & Heyse's (1999) ``J^2``: the same
          groups, each divided by its exact null variance ``sum s (1 - s)``
          instead of the binomial variance of its mean score. Both grouped
          tests were in the middle of the benchmark (0.64, 0.41, 0.57).
        * ``"ks"``, ``"kuiper"``: the Kolmogorov-Smirnov and Kuiper
          statistics of the cumulative differences ``sum_{s_j <= s} (y_j -
          s_j)`` along the sorted scores, scaled by their null standard
          deviation (Arrieta-Ibarra et al., 2022), with the laws of the
          supremum of ``|B|`` and of the range of a Brownian motion ``B`` on
          [0, 1]. No bins, no bandwidth; tied scores count as one step.
          The most powerful against a shift (0.91, 0.90), the weakest
          against over- and under-confidence (0.24-0.35).
        * ``"skce"``: the unbiased quadratic-time squared kernel calibration
          error (Widmann, Lindsten & Zachariah, 2019) with a Gaussian kernel
          on the scores; exact p-value only. Time ``O(d^2 n_resamples)`` for
          ``d`` distinct scores. Power 0.51, 0.48, 0.90.

        The powers are the benchmark's at n = 1000 against over-confidence,
        under-confidence and a shift; every method keeps its level at its
        defaults there. The tables are in the
        :ref:`User Guide <is_calibrated>`.
    statistic : str or callable, default="smooth_ece"
        Statistic of ``method="consistency"``: ``"smooth_ece"``
        (:func:`smooth_ece`, its default options), ``"binned_ece"``
        (:func:`binned_calibration_error`, its defaults), ``"brier"``,
        ``"spiegelhalter"`` (``|Z|``), ``"hosmer-lemeshow"``,
        ``"pigeon-heyse"``, ``"ks"``, ``"kuiper"``, ``"skce"``, or a
        callable ``statistic(y, s, w)`` of a binary problem (0/1 labels,
        scores, weights, rows in the order given) returning a real number,
        larger meaning less calibrated; it must be finite on the observed
        data and never NaN. Ignored by the other methods.
    pvalue_method : {"auto", "exact", "asymptotic"}, default="auto"
        ``"exact"``: by simulation (above). ``"asymptotic"``: from the
        statistic's asymptotic law (Spiegelhalter, Hosmer-Lemeshow,
        Pigeon-Heyse, KS, Kuiper only), fast at any ``n`` but accurate only
        with enough events. ``"auto"``: asymptotic where the benchmark
        found it accurate, exact otherwise: for Spiegelhalter when its sum
        has an effective size of at least 100 fair coin flips, for KS and
        Kuiper at least 1000 (the effective size ``1 / L^2`` from the
        Lyapunov ratio ``L`` of the weighted sum: ``sum s (1 - s)`` for
        unit weights and scores near 1/2, the expected number of events for
        rare positives, less when a few weights dominate), and for
        Hosmer-Lemeshow and Pigeon-Heyse when every group expects at least
        5 events and 5 non-events (Kish's effective counts for importance
        weights). The result's ``pvalue_method`` says which was used.
    n_resamples : int, default=999
        Label draws of an exact p-value, which is never below ``1 /
        (n_resamples + 1)``.
    n_bins : int, default=10
        Quantile groups of Hosmer-Lemeshow and Pigeon-Heyse (as a test or a
        statistic).
    bandwidth : float, default=None
        Gaussian kernel scale of the SKCE; ``None`` uses the median distance
        between scores (computed from the scores only, so that the test
        stays exact).
    multi_class : {"top-label", "classwise"}, default="top-label"
        Multiclass ``y_proba``: ``"top-label"`` tests the confidence of the
        predicted class against its correctness. ``"classwise"`` tests each
        one-vs-rest problem; a consistency test then uses the mean of the
        per-class statistics under joint draws of the class, the other
        methods combine the per-class tests by Bonferroni (``per_class``
        holds them).
    sample_weight : array-like of shape (n_samples,), default=None
        Sample weights, read as ``sample_weight_kind`` says.
    sample_weight_kind : {"importance", "frequency"}, default="importance"
        What a weight means, for every method and p-value alike:

        * ``"importance"``: each row is one observation, whose label the
          weight multiplies in the statistic (survey, importance or
          inverse-propensity weights that do not depend on the label). The
          exact p-value draws one label per row and weights it; the
          asymptotic laws use the variances ``sum w^2 s (1 - s)`` (Kish's
          effective counts). Rescaling all the weights changes no p-value.
          Aggregated counts read this way give a valid, conservative test.
        * ``"frequency"``: a row of integer weight ``w`` stands for ``w``
          observations with its score and label (aggregated data); the
          test equals the test of the repeated rows, and the exact p-value
          draws ``Binomial(w, s)`` positives per row. Importance weights
          read this way give a test that rejects calibrated models far more
          often than its level.

        Weights that depend on the label (class balancing) change the
        population: its weighted calibration differs from the unweighted
        one, and a test rejects a model calibrated on the original data.
    pos_label : int, float, bool or str, default=None
        The positive class of a binary problem, as in :func:`smooth_ece`.
    labels : array-like of shape (n_classes,), default=None
        The class labels in column order of ``y_proba``, as in
        :func:`smooth_ece`.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the label draws of an exact p-value. The result does not
        depend on ``n_jobs``.
    n_jobs : int, default=None
        Parallel workers (threads) for the label draws.

    Returns
    -------
    CalibrationTestResult
        With ``statistic``, ``pvalue`` and ``pvalue_method``.

    See Also
    --------
    smooth_ece : How large the miscalibration is.
    score_decomposition : How much of the Brier score or log-loss it costs.
    calibration_summary : Calibration slope, intercept, Emax, E90, ICI.

    Notes
    -----
    The exact p-values draw a block of label vectors at a time (one random
    byte per label, a double for 1 label in 256), sort the scores once and
    compute each statistic on the whole block: cumulative sums for KS and
    Kuiper, segment sums for the groups of Hosmer-Lemeshow, Pigeon-Heyse
    and the binned ECE, one product for Spiegelhalter and the Brier score.
    The SmoothECE of a resample is decided by one kernel smoothing: it is at
    least the observed ``T`` exactly when the smoothed residual at bandwidth
    ``T`` has an L1 norm of at least ``T``.
    ``benchmarks/bench_calibration_tests.py`` prints their cost.

    References
    ----------
    D. J. Spiegelhalter, "Probabilistic prediction in patient management and
    clinical trials", Statistics in Medicine 5, 1986.
    D. W. Hosmer and S. Lemeshow, Applied Logistic Regression, 2nd ed., 2000.
    D. Pigeon and J. F. Heyse, "An improved goodness of fit statistic for
    probability prediction models", Biometrical Journal 41, 1999.
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
    >>> res = calibration_test(y, p, n_resamples=199, random_state=0)
    >>> bool(res.pvalue > 0.05)
    True
    >>> y_over = rng.uniform(size=2000) < 0.5 + 0.6 * (p - 0.5)  # over-confident
    >>> res = calibration_test(y_over, p, method="spiegelhalter")
    >>> res.pvalue_method, bool(res.pvalue < 1e-6)
    ('asymptotic', True)
    >>> calibration_test(y_over, p, method="kuiper", random_state=0).pvalue
    0.001
    """
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    _check_options(
        method, statistic, pvalue_method, sample_weight_kind, data, multi_class
    )
    frequency = sample_weight_kind == "frequency"
    tasks = [
        _ct.NullTask(y, s, w, frequency=frequency)
        for y, s, w in binary_tasks(data, multi_class)
    ]
    seed = check_seed_sequence(random_state)
    n = data.n_samples
    run = dict(
        n=n,
        pvalue_method=pvalue_method,
        n_resamples=n_resamples,
        n_jobs=n_jobs,
    )
    if method == "consistency":
        if callable(statistic):
            name = getattr(statistic, "__name__", "statistic")
            stats = [_st.FunctionStatistic(t, statistic, name) for t in tasks]
        else:
            stats = [
                _statistic(statistic, t, n_bins=n_bins, bandwidth=bandwidth)
                for t in tasks
            ]
        if len(stats) == 1:
            stat = stats[0]
        elif statistic == "smooth_ece":
            stat = _cs.ClasswiseSmoothECE(stats, data.proba)
        else:
            stat = _st.ClasswiseMean(stats, data.proba)
        return _test(stat, method, seed=seed, **run)
    stats = [_statistic(method, t, n_bins=n_bins, bandwidth=bandwidth) for t in tasks]
    if len(stats) == 1:
        return _test(stats[0], method, seed=seed, **run)
    results = [
        _test(f, method, seed=q, **run)
        for f, q in zip(stats, seed.spawn(len(stats)), strict=True)
    ]
    return _bonferroni(results, method, n)
