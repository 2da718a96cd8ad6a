"""The result objects of the metrics (a leaf module: it imports no metric)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["CalibrationBound", "KDECalibrationResult", "SmoothCalibrationCurve"]


@dataclass(frozen=True)
class CalibrationBound:
    """Result of :func:`calibration_error_bound`.

    Attributes
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
    delta : float
    n_samples : int
    n_splits : int
    terms : dict
        The additive terms of the fold that gives ``upper``
        (``upper == min(1, sum(terms.values()))``).
    per_fold : tuple of dict
        Fold-level ``upper`` (clipped at 1), ``lower``, ``estimate``,
        ``terms``, sizes and tuning parameters.
    vacuous : bool
        True when ``upper`` is 1: the sample is too small for the bound to
        say anything.
    bandwidth : ndarray of shape (n_splits,) or None
        Window half-width of each fold (``method="nw"``).
    n_bins : ndarray of shape (n_splits,) or None
        Bucket count of each fold (``method="lipschitz"``).
    assume : str or None

    Examples
    --------
    >>> from skcalib.datasets import make_calibration_problem
    >>> from skcalib.metrics import calibration_error_bound
    >>> prob = make_calibration_problem(5000, problem="u2", random_state=0)
    >>> b = calibration_error_bound(prob.y_true, prob.y_proba, random_state=0)
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
        head = (
            f"CalibrationBound(method={self.method!r}, delta={self.delta:g}, "
            f"n_samples={self.n_samples}, n_splits={self.n_splits}"
            + (f", assume={self.assume!r}" if self.assume else "")
            + ")"
        )
        lines = [
            head,
            f"  upper    = {self.upper:.6f}"
            + ("  (vacuous: too few samples)" if self.vacuous else ""),
            f"  estimate = {self.estimate:.6f}",
            f"  lower    = {self.lower:.6f}",
            "  terms of upper (its fold):",
        ]
        lines += [f"    {k:<22s}{v:.6f}" for k, v in self.terms.items()]
        if self.bandwidth is not None:
            lines.append(
                f"  bandwidth per fold: {np.round(self.bandwidth, 6).tolist()}"
            )
        if self.n_bins is not None:
            lines.append(f"  n_bins per fold: {self.n_bins.tolist()}")
        return "\n".join(lines)


class SmoothCalibrationCurve:
    """Smooth reliability-curve data returned by :func:`smooth_calibration_curve`.

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
        Bootstrap confidence interval of ``smece`` by ``ci_method`` (see
        :func:`smooth_calibration_curve` for when it covers).
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
        lab = "" if self.label is None else f"label={self.label!r}, "
        return (
            f"SmoothCalibrationCurve({lab}smece={self.smece:.4f}{ci}, "
            f"sigma={self.sigma:.4g}, n_points={self.scores.shape[0]})"
        )


@dataclass(frozen=True)
class KDECalibrationResult:
    """Details of a :func:`kde_calibration_error` evaluation.

    Attributes
    ----------
    value : float
        The estimate returned without ``return_details`` (after ``root``).
    bandwidth : float or ndarray of shape (n_classes,)
        Bandwidth used; one per class for ``multi_class="classwise"``.
    effective_sample_size_median, effective_sample_size_min : float or ndarray
        Median and minimum over samples (of positive weight) of the
        effective number of neighbours ``1 / sum_i W_ji^2`` of the
        leave-one-out kernel weights; one per class for ``"classwise"``.
        A minimum near 1 means some estimates rest on a single neighbour.
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
    debiased : bool
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
