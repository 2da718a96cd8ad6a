"""The result objects of the metrics (a leaf module: it imports no metric)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._params import validate_params

__all__ = [
    "BinnedCalibrationResult",
    "CalibrationBound",
    "GroupedCalibrationResult",
    "KDECalibrationResult",
    "SmoothCalibrationCurve",
    "SmoothECEResult",
]


def _summary(name, fields):
    """``name(k=v, ...)`` on one line: numbers to 4 significant digits,
    strings quoted; arrays, dicts, tuples and ``None`` are left out (the
    result objects give the class count ``n_classes`` of per-class arrays)."""
    parts = []
    for key, value in fields:
        if value is None or isinstance(value, (dict, tuple, list)):
            continue
        if isinstance(value, np.ndarray):
            if value.ndim:
                continue
            value = value.item()
        if isinstance(value, (bool, np.bool_)):
            text = str(bool(value))
        elif isinstance(value, (int, np.integer)):
            text = str(int(value))
        elif isinstance(value, (float, np.floating)):
            text = f"{float(value):.4g}"
        else:
            text = repr(value)
        parts.append(f"{key}={text}")
    return f"{name}({', '.join(parts)})"


@dataclass(frozen=True)
class CalibrationBound:
    """Details of a :func:`calibration_error_bound` evaluation.

    Returned with ``return_details=True`` (also by
    :meth:`StreamingCalibrationBound.result`); without it the bound functions
    return ``upper`` alone.

    Parameters
    ----------
    upper : float
        Upper bound on the L1 calibration error ``CE = E|s - η(s)|``, valid
        with probability at least ``1 - delta``: the smallest of the fold
        bounds, each clipped at 1.
    lower : float
        Lower bound on ``CE`` (the largest fold lower bound, clipped at 0),
        valid with probability at least ``1 - delta`` on its own (the pair
        holds jointly with probability at least ``1 - 2 delta``).
    estimate : float
        Point estimate of ``CE``: mean over folds of ``mean_V |η̂(s) - s|``.
    method : str
        The bound: ``"tv"``, ``"nw"`` or ``"lipschitz"``.
    delta : float
        Failure probability of the bound.
    n_samples : int
        Number of samples the bound uses.
    n_splits : int
        Number of cross-fitting folds.
    terms : dict
        The additive terms of the fold that gives ``upper``
        (``upper == min(1, sum(terms.values()))``).
    per_fold : tuple of dict
        Fold-level ``upper`` (clipped at 1), ``lower``, ``estimate``,
        ``terms``, sizes and tuning parameters.
    vacuous : bool, default=False
        True when ``upper`` is 1: the sample is too small for the bound to
        say anything.
    bandwidth : ndarray of shape (n_splits,) or None, default=None
        Window half-width of each fold (``method="nw"``).
    n_bins : ndarray of shape (n_splits,) or None, default=None
        Bucket count of each fold (``method="lipschitz"``).
    assume : str or None, default=None
        Assumption on the calibration function under which the bound holds
        (``"monotone"`` for the total-variation bound), if any.

    Examples
    --------
    >>> from skcalib.datasets import make_calibration_problem
    >>> from skcalib.metrics import calibration_error_bound
    >>> prob = make_calibration_problem(5000, problem="u2", random_state=0)
    >>> b = calibration_error_bound(
    ...     prob.y_true, prob.y_proba, random_state=0, return_details=True
    ... )
    >>> b
    CalibrationBound(upper=0.4648, lower=0, estimate=0.172, method='tv',
                     delta=0.05, n_samples=5000, n_splits=5)
    >>> b.method, b.n_splits, len(b.per_fold)
    ('tv', 5, 5)
    >>> bool(abs(b.upper - min(1.0, sum(b.terms.values()))) < 1e-12)
    True
    >>> b.vacuous
    False
    >>> bool(b.lower <= b.estimate <= b.upper)
    True
    """

    upper: float
    lower: float
    estimate: float
    method: str
    delta: float
    n_samples: int
    n_splits: int
    terms: dict = field(repr=False)
    per_fold: tuple = field(repr=False)
    vacuous: bool = False
    bandwidth: np.ndarray | None = field(default=None, repr=False)
    n_bins: np.ndarray | None = field(default=None, repr=False)
    assume: str | None = None

    def __repr__(self):
        return _summary(
            "CalibrationBound",
            [
                ("upper", self.upper),
                ("lower", self.lower),
                ("estimate", self.estimate),
                ("method", self.method),
                ("delta", self.delta),
                ("n_samples", self.n_samples),
                ("n_splits", self.n_splits),
                ("assume", self.assume),
                ("vacuous", True if self.vacuous else None),
            ],
        )


class SmoothCalibrationCurve:
    """Smooth reliability-curve data returned by :func:`smooth_calibration_curve`.

    Parameters
    ----------
    **fields : dict
        Values of the attributes below, by name; those not given start as
        None (``n_bootstrap`` as 0).

    Attributes
    ----------
    scores : ndarray of shape (n_points,)
        Predicted-probability values where the curve is evaluated.
    y_smooth : ndarray of shape (n_points,)
        Smoothed observed frequency ``E[y | s]`` at ``scores`` (NaN where the
        score density is below 1e-10 of its maximum: no data there).
    density : ndarray of shape (n_points,)
        Kernel density estimate of the predicted probabilities.
    sigma : float
        Bandwidth of the curve.
    smece : float
        SmoothECE (``sigma`` itself when ``sigma`` was chosen automatically).
    y_smooth_low, y_smooth_high : ndarray or None
        Pointwise bootstrap band of ``y_smooth`` (at the same ``sigma``), by
        ``ci_method``.
    smece_ci : tuple of float or None
        Confidence interval of ``smece`` by ``ci_method`` (see
        :func:`smooth_calibration_curve` for when it covers).
    smece_ci_coverage : tuple of float or None
        Range of the coverage of the population smECE that intervals of this
        ``ci_method`` and ``confidence_level`` reached over the problems of
        ``benchmarks/bench_intervals.py`` (the user guide has the table);
        None where it was not measured. The interval's real level, as far as
        it is known.
    smece_bootstrap : ndarray of shape (n_bootstrap,) or None
        The resampled smECE values the interval is made of.
    smece_bias_corrected : float or None
        Bootstrap bias-corrected smECE, ``max(2 smece - mean(smece_bootstrap),
        0)``. It removed about half of the upward bias of a nearly calibrated
        model at ``n <= 3000`` (and 30 % of its RMSE), but adds noise where
        the bias is small (RMSE 10-23 % larger there); see the user guide.
    n_bootstrap, confidence_level : int, float
    ci_method : str or None
    label : object or None
        The class of a one-vs-rest curve (``multi_class="classwise"``).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_calibration_curve
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> curve = smooth_calibration_curve(rng.uniform(size=1000) < p, p)
    >>> curve.scores.shape == curve.y_smooth.shape == curve.density.shape
    True
    >>> curve.smece == curve.sigma  # sigma* is the SmoothECE
    True
    """

    def __init__(self, **fields):
        self.label = None
        self.y_smooth_low = self.y_smooth_high = self.smece_ci = None
        self.smece_ci_coverage = None
        self.smece_bootstrap = self.smece_bias_corrected = None
        self.n_bootstrap = 0
        self.confidence_level = self.ci_method = None
        for k, v in fields.items():
            setattr(self, k, v)

    def __repr__(self):
        ci = (
            ""
            if self.smece_ci is None
            else f", {100 * self.confidence_level:g}% CI=({self.smece_ci[0]:.4f}, "
            f"{self.smece_ci[1]:.4f})"
        )
        if self.smece_ci is not None and self.ci_method is not None:
            ci += f", ci_method={self.ci_method!r}"
            if self.smece_ci_coverage is not None:
                lo, hi = self.smece_ci_coverage
                ci += f", measured coverage {lo:.2f}-{hi:.2f}"
        lab = "" if self.label is None else f"label={self.label!r}, "
        return (
            f"SmoothCalibrationCurve({lab}smece={self.smece:.4f}{ci}, "
            f"sigma={self.sigma:.4g}, n_points={self.scores.shape[0]})"
        )


@dataclass(frozen=True)
class KDECalibrationResult:
    """Details of a :func:`kde_calibration_error` evaluation.

    Parameters
    ----------
    value : float
        The estimate returned without ``return_details`` (after ``root``).
    bandwidth : float or ndarray of shape (n_classes,)
        Bandwidth used; one per class for ``multi_class="classwise"``.
    effective_sample_size_median : float or ndarray of shape (n_classes,)
        Median over samples (of positive weight) of the effective number of
        neighbours ``1 / sum_i W_ji^2`` of the leave-one-out kernel weights;
        one per class for ``"classwise"``.
    effective_sample_size_min : float or ndarray of shape (n_classes,)
        Minimum over samples of the same; a minimum near 1 means some
        estimates rest on a single neighbour.
    per_sample : ndarray of shape (n_samples,)
        Terms whose weighted mean is the ``p``-th power estimate (before
        ``root``); averaged over classes for ``"classwise"``. NaN for the
        samples not evaluated with ``max_samples``.
    standard_error : float
        Standard error of ``value`` due to evaluating a random subset of
        ``max_samples`` samples (the delta method for ``root=True``); 0 when
        every sample is evaluated. It does not include the statistical error
        of the full-sample estimate itself.
    p : float
        Order of the error.
    debiased : bool
        Whether the estimate was debiased (``debias`` after ``"auto"`` is
        resolved).
    multi_class : str
        ``"binary"`` for binary input, else the reduction used.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import kde_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> proba = rng.dirichlet([1, 1, 1], size=300)
    >>> y = np.array([rng.choice(3, p=q) for q in proba])
    >>> res = kde_calibration_error(
    ...     y, proba, multi_class="classwise", bandwidth=0.1, return_details=True
    ... )
    >>> res.multi_class, res.bandwidth.shape, res.per_sample.shape
    ('classwise', (3,), (300,))
    >>> bool(np.isclose(res.value, res.per_sample.mean()))
    True
    """

    value: float
    bandwidth: object
    effective_sample_size_median: object
    effective_sample_size_min: object
    per_sample: np.ndarray
    standard_error: float
    p: float
    debiased: bool
    multi_class: str

    def __repr__(self):
        return _summary(
            "KDECalibrationResult",
            [
                ("value", self.value),
                ("p", self.p),
                ("debiased", self.debiased),
                ("multi_class", self.multi_class),
                ("bandwidth", self.bandwidth),
                ("effective_sample_size_min", self.effective_sample_size_min),
                ("n_classes", _n_per_class(self.bandwidth)),
            ],
        )


def _n_per_class(per_class):
    """The number of classes of a per-class array, None for a scalar."""
    return len(per_class) if isinstance(per_class, (np.ndarray, tuple)) else None


@dataclass(frozen=True)
class SmoothECEResult:
    """Details of a :func:`smooth_ece` evaluation.

    Parameters
    ----------
    value : float
        The SmoothECE returned without ``return_details``.
    sigma : float or ndarray of shape (n_classes,)
        Bandwidth used (``sigma*`` when it was chosen automatically); one per
        class for ``multi_class="classwise"``.
    metric : str
        ``"l1"`` or ``"logit"``.
    multi_class : str
        ``"binary"`` for binary input, else the reduction used.
    n_samples : int
        Number of rows.
    class_values : ndarray of shape (n_classes,) or None, default=None
        The one-vs-rest SmoothECE of each class (``"classwise"``), whose mean
        is ``value``.
    classes : ndarray of shape (n_classes,) or None, default=None
        The class of each entry of ``class_values`` and ``sigma``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_ece
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < p
    >>> res = smooth_ece(y, p, return_details=True)
    >>> res
    SmoothECEResult(value=0.02522, sigma=0.02522, metric='l1',
                    multi_class='binary', n_samples=2000)
    >>> res.value == smooth_ece(y, p)
    True
    """

    value: float
    sigma: object
    metric: str
    multi_class: str
    n_samples: int
    class_values: np.ndarray | None = None
    classes: np.ndarray | None = None

    def __repr__(self):
        return _summary(
            "SmoothECEResult",
            [
                ("value", self.value),
                ("sigma", self.sigma),
                ("metric", self.metric),
                ("multi_class", self.multi_class),
                ("n_samples", self.n_samples),
                ("n_classes", _n_per_class(self.class_values)),
            ],
        )


@dataclass(frozen=True)
class BinnedCalibrationResult:
    """Details of a :func:`binned_calibration_error` evaluation.

    The value and its bin table. The table lists the non-empty bins only.
    For ``multi_class="classwise"`` on multiclass input each table attribute
    is a tuple with one array per class (in the order of ``classes``).

    Parameters
    ----------
    value : float
        The error returned without ``return_details`` (after ``root``).
    norm : str
        ``"l1"``, ``"l2"`` or ``"max"``.
    debias : bool
        Whether the debiased estimate was used (``norm="l2"``).
    root : bool
        Whether the square root was taken (``norm="l2"``; True for the other
        norms, which have no square).
    strategy : str
        ``"uniform"`` or ``"quantile"``.
    n_bins : int
        Number of bins (after ``"cbrt"`` is resolved), empty ones included.
    multi_class : str
        ``"binary"`` for binary input, else the reduction used.
    n_samples : int
        Number of rows.
    edges : ndarray of shape (n_bins + 1,)
        Bin edges.
    bin : ndarray of int
        Index of each non-empty bin.
    weight : ndarray
        Total weight of each non-empty bin.
    count : ndarray
        Number of rows of each non-empty bin.
    mean_label : ndarray
        Weighted mean label of each non-empty bin.
    mean_score : ndarray
        Weighted mean score of each non-empty bin.
    class_values : ndarray of shape (n_classes,) or None, default=None
        The one-vs-rest error of each class (``"classwise"``), whose mean is
        ``value``.
    classes : ndarray of shape (n_classes,) or None, default=None
        The class of each entry of ``class_values`` and of the tables.

    Examples
    --------
    >>> from skcalib.metrics import binned_calibration_error
    >>> res = binned_calibration_error(
    ...     [0, 0, 1, 1], [0.1, 0.4, 0.6, 1.0], n_bins=2, return_details=True
    ... )
    >>> res
    BinnedCalibrationResult(value=0.225, norm='l1', strategy='uniform', n_bins=2,
                            multi_class='binary', n_samples=4)
    >>> res.mean_score, res.mean_label
    (array([0.25, 0.8 ]), array([0., 1.]))
    """

    value: float
    norm: str
    debias: bool
    root: bool
    strategy: str
    n_bins: int
    multi_class: str
    n_samples: int
    edges: object
    bin: object
    weight: object
    count: object
    mean_label: object
    mean_score: object
    class_values: np.ndarray | None = None
    classes: np.ndarray | None = None

    @classmethod
    def from_tables(cls, value, tables, class_values, classes, **options):
        """Build the result from bin tables (internal).

        Parameters
        ----------
        value : float
            The error.
        tables : sequence of bin tables
            The tables of ``skcalib._backend.binning``: one per class when
            ``class_values`` is given, else one.
        class_values : array-like of shape (n_classes,) or None
            The one-vs-rest error of each class, or None.
        classes : ndarray of shape (n_classes,) or None
            The class of each table, or None.
        **options : dict
            The remaining fields: ``norm``, ``debias``, ``root``,
            ``strategy``, ``n_bins``, ``multi_class`` and ``n_samples``.

        Returns
        -------
        BinnedCalibrationResult
            The result record.
        """

        def column(name):
            cols = tuple(getattr(t, name) for t in tables)
            return cols if class_values is not None else cols[0]

        return cls(
            value=float(value),
            edges=column("edges"),
            bin=column("index"),
            weight=column("weight"),
            count=column("count"),
            mean_label=column("mean_label"),
            mean_score=column("mean_score"),
            class_values=(
                None if class_values is None else np.asarray(class_values, float)
            ),
            classes=classes,
            norm=options["norm"],
            debias=bool(options["debias"]),
            root=bool(options["root"]),
            strategy=options["strategy"],
            n_bins=int(options["n_bins"]),
            multi_class=options["multi_class"],
            n_samples=int(options["n_samples"]),
        )

    def __repr__(self):
        return _summary(
            "BinnedCalibrationResult",
            [
                ("value", self.value),
                ("norm", self.norm),
                ("debias", self.debias if self.norm == "l2" else None),
                ("root", self.root if self.norm == "l2" else None),
                ("strategy", self.strategy),
                ("n_bins", self.n_bins),
                ("multi_class", self.multi_class),
                ("n_samples", self.n_samples),
                ("n_classes", _n_per_class(self.class_values)),
            ],
        )


@dataclass(frozen=True)
class GroupedCalibrationResult:
    """A metric evaluated on each group of samples (the ``groups=`` argument).

    Every metric of :mod:`skcalib.metrics` is a loss, so the worst group is
    the one of the largest value.

    Parameters
    ----------
    metric : str
        Name of the metric function.
    groups : ndarray of shape (n_groups,)
        The distinct group labels, sorted; every per-group array follows
        this order.
    values : ndarray of shape (n_groups,)
        The metric of each group: what the metric returns on that group's
        rows alone (the ``upper`` bound of :func:`calibration_error_bound`).
    counts : ndarray of shape (n_groups,)
        Number of rows of each group.
    weights : ndarray of shape (n_groups,)
        Total ``sample_weight`` of each group (``counts`` without weights).
    details : tuple or None, default=None
        With ``return_details=True``, each group's result object (e.g.
        :class:`SmoothECEResult`), in the order of ``groups``.

    Attributes
    ----------
    worst_group : object
        The group of the largest value (the first such in sorted order).
    worst_value : float
        Its value, ``values.max()``.
    n_groups : int
        Number of groups.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_ece
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=4000)
    >>> group = np.where(rng.uniform(size=4000) < 0.5, "a", "b")
    >>> # calibrated in group "a", over-confident in group "b"
    >>> truth = np.where(group == "a", p, 0.5 + 0.5 * (p - 0.5))
    >>> y = rng.uniform(size=4000) < truth
    >>> res = smooth_ece(y, p, groups=group)
    >>> res
    GroupedCalibrationResult(metric='smooth_ece', n_groups=2, worst_group='b',
                             worst_value=0.108, n_samples=4000)
    >>> res.groups, res.counts
    (array(['a', 'b'], dtype='<U1'), array([1978, 2022]))
    >>> res.frame()
      group     value  count  weight
    0     a  0.021722   1978  1978.0
    1     b  0.107987   2022  2022.0
    >>> rows = group == "b"
    >>> bool(res.values[1] == smooth_ece(y[rows], p[rows]))
    True
    """

    metric: str
    groups: np.ndarray
    values: np.ndarray
    counts: np.ndarray
    weights: np.ndarray
    details: tuple | None = None

    @property
    def n_groups(self):
        """Number of groups."""
        return int(self.groups.shape[0])

    @property
    def worst_group(self):
        """The group of the largest value (the first such in sorted order)."""
        worst = self.groups[int(np.argmax(self.values))]
        return worst.item() if isinstance(worst, np.generic) else worst

    @property
    def worst_value(self):
        """The largest value, ``values.max()``."""
        return float(np.max(self.values))

    @validate_params()
    def frame(self, *, as_frame=True):
        """The per-group values as a table, one row per group.

        Parameters
        ----------
        as_frame : bool, default=True
            Return a :class:`pandas.DataFrame` (pandas is then required);
            ``False`` returns a dict of numpy arrays.

        Returns
        -------
        DataFrame or dict of ndarray
            Columns ``group``, ``value``, ``count`` and ``weight``, in sorted
            group order.
        """
        columns = {
            "group": self.groups,
            "value": self.values,
            "count": self.counts,
            "weight": self.weights,
        }
        if not as_frame:
            return {k: np.asarray(v) for k, v in columns.items()}
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "frame() returns a pandas DataFrame and needs pandas (pip install "
                "pandas); frame(as_frame=False) returns a dict of numpy arrays."
            ) from exc
        return pd.DataFrame(columns)

    def __repr__(self):
        worst = self.worst_group
        return _summary(
            "GroupedCalibrationResult",
            [
                ("metric", self.metric),
                ("n_groups", self.n_groups),
                (
                    "worst_group",
                    worst if isinstance(worst, (int, float, str)) else str(worst),
                ),
                ("worst_value", self.worst_value),
                ("n_samples", int(self.counts.sum())),
            ],
        )
