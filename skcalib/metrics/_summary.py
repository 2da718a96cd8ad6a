"""Clinical calibration summary, as ``rms::val.prob`` and Austin & Steyerberg
(2019) define it: slope and intercepts, Emax, E90, E50, ICI, C, Dxy, R2, D,
U, Q and the Brier score."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy import special
from sklearn.exceptions import UndefinedMetricWarning

from .._backend import smece as _sm
from .._backend.loess import lowess
from .._backend.logistic import log_likelihood, logistic_fit
from .._backend.user_warning import warn_user
from .._docstrings import fill_doc
from .._params import Interval, NoneOr, StrOptions, validate_params
from .._validation import binary_tasks, check_calibration_inputs
from ._results import _summary as _repr

__all__ = ["CalibrationSummary", "calibration_summary"]

# Span of the loess curve (R's lowess default, used by val.prob).
_SPAN = 2.0 / 3.0
# The fields computed on the rows with a finite logit.
_LOGIT_FIELDS = (
    "slope",
    "slope_se",
    "intercept",
    "intercept_se",
    "joint_intercept",
    "joint_intercept_se",
    "nagelkerke_r2",
    "discrimination_index",
    "unreliability_index",
    "unreliability_pvalue",
    "quality_index",
)


@dataclass(frozen=True, repr=False)
class CalibrationSummary:
    """Result of :func:`calibration_summary`.

    Each parameter is stored as an attribute of the same name. The names in
    parentheses are those of ``rms::val.prob``.

    Parameters
    ----------
    slope : float
        Calibration slope ``b`` of the joint fit
        ``logit P(y = 1) = a + b logit(s)`` ("Slope"): 1 for calibrated
        predictions; below 1 they are too extreme (over-confident). NaN when
        the rows of the fit hold a single score.
    slope_se : float
        Standard error of ``slope`` (inverse Fisher information).
    intercept : float
        Calibration intercept with the slope fixed at 1, ``a`` of
        ``logit P(y = 1) = a + logit(s)`` (``logit(s)`` an offset):
        calibration-in-the-large on the logit scale, 0 when calibrated,
        above 0 when the predictions are too low on average. NaN when no
        row has a finite logit.
    intercept_se : float
        Standard error of ``intercept``.
    joint_intercept : float
        ``a`` of the joint fit ("Intercept"); NaN where ``slope`` is.
    joint_intercept_se : float
        Standard error of ``joint_intercept``.
    mean_difference : float
        ``mean(y) - mean(s)``: calibration-in-the-large on the probability
        scale, over every row.
    emax : float
        Largest ``|c(s_i) - s_i|`` over the rows ("Emax"), ``c`` the
        calibration curve (see ``curve``).
    e90 : float
        90th percentile of those gaps ("E90"; R's default quantile, linear
        between order statistics).
    e50 : float
        Their median (E50 of Austin & Steyerberg).
    ici : float
        Their mean: the integrated calibration index ("Eavg").
    c_index : float
        Concordance, the area under the ROC curve with tied scores counted
        1/2, over every row (val.prob's "C (ROC)" is computed on the rows of
        the logistic fits, from probabilities binned to 1/5000).
    dxy : float
        Somers' rank correlation ``2 (c_index - 1/2)`` ("Dxy").
    nagelkerke_r2 : float
        Nagelkerke's R2 of the predictions as they are (intercept 0,
        slope 1) against the base rate ("R2").
    discrimination_index : float
        ``D = (LR - 1) / n`` ("D"), ``LR`` the likelihood-ratio chi-square
        of the predictions against the base rate.
    unreliability_index : float
        ``U = (LR_U - 2) / n`` ("U"), ``LR_U`` the likelihood-ratio
        chi-square of the joint recalibration against the predictions as
        they are (intercept 0 and slope 1).
    unreliability_pvalue : float
        The p-value of ``LR_U`` on 2 degrees of freedom ("U:p"): the test of
        intercept 0 and slope 1 (1 degree of freedom when the slope is not
        defined).
    quality_index : float
        ``Q = D - U`` ("Q"), in units of log-likelihood per row.
    brier : float
        Mean ``(s - y)^2`` over every row ("Brier").
    curve : {"loess", "smooth"}
        The calibration curve ``c`` of the gaps.
    sigma : float or None
        Bandwidth of the smooth curve; None for the loess curve.
    n_dropped : int
        Rows left out of the logistic fits because their score is exactly
        0 or 1 (an infinite logit); 0 when ``clip`` is given.
    converged : bool
        Whether the logistic fits converged (separated classes and a single
        class do not).
    n_samples : int
        Number of rows.

    See Also
    --------
    calibration_summary : The function that returns this object.

    Examples
    --------
    >>> from skcalib.metrics import calibration_summary
    >>> p = [0.1, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    >>> s = calibration_summary([0, 0, 1, 0, 1, 1, 0, 1], p)
    >>> s  # val.prob: Slope 0.8861, Emax 0.2466, E90 0.1824, Eavg 0.09412
    CalibrationSummary(slope=0.8861, intercept=-0.2004, c_index=0.75,
                       emax=0.2466, e90=0.1824, e50=0.09316, ici=0.09412,
                       curve='loess', n_samples=8)
    >>> print(f"D {s.discrimination_index:.3f} - U {s.unreliability_index:.3f}"
    ...       f" = Q {s.quality_index:.3f}")
    D 0.098 - U -0.240 = Q 0.338
    """

    slope: float
    slope_se: float
    intercept: float
    intercept_se: float
    joint_intercept: float
    joint_intercept_se: float
    mean_difference: float
    emax: float
    e90: float
    e50: float
    ici: float
    c_index: float
    dxy: float
    nagelkerke_r2: float
    discrimination_index: float
    unreliability_index: float
    unreliability_pvalue: float
    quality_index: float
    brier: float
    curve: str
    sigma: float | None
    n_dropped: int
    converged: bool
    n_samples: int

    def __repr__(self):
        return _repr(
            "CalibrationSummary",
            [
                (name, getattr(self, name))
                for name in (
                    "slope",
                    "intercept",
                    "c_index",
                    "emax",
                    "e90",
                    "e50",
                    "ici",
                    "curve",
                    "n_samples",
                )
            ]
            + [("n_dropped", self.n_dropped or None)],
        )


def _frequency_weights(w):
    """The weights as counts, and whether they are integers: integer weights
    as they are, others rescaled to sum to the number of rows (rms's
    ``normwt=TRUE``)."""
    if np.all(w == np.round(w)):
        return w, True
    return w * (w.size / np.sum(w)), False


def _quantiles(x, w, qs, exact):
    """R's default (type 7) quantiles of the rows repeated ``w`` times:
    linear between the order statistics at position ``1 + q (sum(w) - 1)``.
    ``exact``: the weights are integers (their sums carry no rounding)."""
    order = np.argsort(x, kind="stable")
    xs = x[order]
    cw = np.cumsum(w[order])
    # The order statistic at position t is the first row whose cumulated
    # weight reaches t (with slack for the rounding of rescaled weights).
    slack = 0.0 if exact else 1e-9 * cw[-1]
    out = []
    for q in qs:
        pos = 1.0 + q * (cw[-1] - 1.0)
        lo = np.floor(pos)
        idx = np.searchsorted(cw, np.array([lo, lo + 1.0]) - slack, side="left")
        a, b = xs[np.minimum(idx, xs.size - 1)]
        frac = pos - lo
        out.append(float(a if frac == 0 or a == b else (1.0 - frac) * a + frac * b))
    return out


def _c_index(y, s, w):
    """Weighted concordance of ``s`` with ``y``, ties counted 1/2."""
    u, inv = np.unique(s, return_inverse=True)
    w1 = np.bincount(inv, weights=w * y, minlength=u.size)
    w0 = np.bincount(inv, weights=w * (1.0 - y), minlength=u.size)
    below = np.cumsum(w0) - w0
    return float(np.sum(w1 * (below + 0.5 * w0)) / (w1.sum() * w0.sum()))


def _gaps(y, s, w, curve):
    """``|c(s_i) - s_i|`` for the calibration curve ``c``, and its bandwidth."""
    if curve == "loess":
        return np.abs(lowess(s, y, w, span=_SPAN) - s), None
    geometry = _sm.GridGeometry("l1")
    _, sigma, stats = _sm.fit(y, s, w, geometry)
    grid, smooth, _, _ = _sm.smooth_curve(stats, sigma, geometry)
    ok = np.isfinite(smooth)
    return np.abs(np.interp(s, grid[ok], smooth[ok]) - s), float(sigma)


def _logit_statistics(y, lp, w):
    """Slope, intercepts, Nagelkerke R2, D, U and Q of one set of rows with
    finite logits ``lp`` (val.prob's definitions, weights as counts)."""
    out = dict.fromkeys(_LOGIT_FIELDS, np.nan)
    if lp.size == 0:
        warn_user(
            "Every score is exactly 0 or 1: no row is left for the logistic "
            "fits, whose statistics are NaN (pass clip to keep the rows).",
            UndefinedMetricWarning,
        )
        return out, False
    n = float(np.sum(w))
    offset = logistic_fit(y, np.ones((lp.size, 1)), w, offset=lp)
    converged = offset.converged
    out.update(intercept=float(offset.coef[0]), intercept_se=float(offset.se[0]))
    ybar = float(np.sum(w * y)) / n
    # -2 log-likelihoods: base rate (L0), predictions as they are (L01), and
    # the best recalibration a + b logit(s).
    base = special.xlogy(y, ybar) + special.xlogy(1.0 - y, 1.0 - ybar)
    L0 = -2.0 * float(np.sum(w * base))
    L01 = -2.0 * log_likelihood(y, lp, w)
    if np.ptp(lp) > 0:
        joint = logistic_fit(y, np.column_stack([np.ones_like(lp), lp]), w)
        converged = converged and joint.converged
        out.update(
            joint_intercept=float(joint.coef[0]),
            joint_intercept_se=float(joint.se[0]),
            slope=float(joint.coef[1]),
            slope_se=float(joint.se[1]),
        )
        L_recal, dof = -2.0 * joint.loglik, 2
    else:
        # One score: a + b logit(s) is one number, the base rate's logit at
        # best; any slope fits as well as any other.
        warn_user(
            "y_proba takes a single value on the rows of the logistic fits: the "
            "calibration slope and the joint intercept are not defined and are NaN.",
            UndefinedMetricWarning,
        )
        L_recal, dof = L0, 1
    if not converged:
        why = (
            "y_true holds a single class"
            if np.all(y == y[0])
            else "are the classes separated by the scores?"
        )
        warn_user(
            f"The logistic recalibration did not converge ({why}); slope and "
            "intercepts are unreliable.",
            RuntimeWarning,
        )
    lr = L0 - L01
    u_chi2 = L01 - L_recal
    d = (lr - 1.0) / n
    u = (u_chi2 - dof) / n
    out.update(
        discrimination_index=d,
        unreliability_index=u,
        unreliability_pvalue=float(special.chdtrc(dof, max(u_chi2, 0.0))),
        quality_index=d - u,
    )
    if L0 > 0:
        out["nagelkerke_r2"] = float(-np.expm1(-lr / n) / -np.expm1(-L0 / n))
    return out, converged


def _summary(y, s, w, n, curve, clip):
    keep = w > 0
    w, exact = _frequency_weights(w[keep])
    y, s = y[keep], s[keep]
    W = float(w.sum())
    c = s if clip is None else np.clip(s, clip, 1.0 - clip)
    with np.errstate(divide="ignore"):
        lp = np.log(c) - np.log1p(-c)
    fit = np.isfinite(lp)
    n_dropped = int(np.sum(~fit))
    if n_dropped:
        warn_user(
            f"{n_dropped} of {s.size} rows have a score of exactly 0 or 1 (an "
            "infinite logit) and are left out of the logistic fits (slope, "
            "intercepts, R2, D, U, Q), as in rms::val.prob; pass clip to keep "
            "them with clipped scores.",
            UserWarning,
        )
    stats, converged = _logit_statistics(y[fit], lp[fit], w[fit])
    if np.all(y == y[0]):
        warn_user(
            "y_true holds a single class: c_index, dxy and nagelkerke_r2 are "
            "not defined and are NaN.",
            UndefinedMetricWarning,
        )
        c_index = np.nan
    else:
        c_index = _c_index(y, s, w)
    gap, sigma = _gaps(y, s, w, curve)
    e90, e50 = _quantiles(gap, w, (0.9, 0.5), exact)
    return CalibrationSummary(
        **stats,
        mean_difference=float(np.sum(w * (y - s)) / W),
        emax=float(gap.max()),
        e90=e90,
        e50=e50,
        ici=float(np.sum(w * gap) / W),
        c_index=c_index,
        dxy=2.0 * c_index - 1.0,
        brier=float(np.sum(w * (s - y) ** 2) / W),
        curve=curve,
        sigma=sigma,
        n_dropped=n_dropped,
        converged=bool(converged),
        n_samples=n,
    )


@validate_params(
    multi_class=StrOptions("top-label", "classwise"),
    curve=StrOptions("loess", "smooth"),
    clip=NoneOr(Interval(numbers.Real, 0, 0.5, closed="neither")),
)
@fill_doc
def calibration_summary(
    y_true,
    y_proba,
    *,
    curve="loess",
    clip=None,
    multi_class="top-label",
    sample_weight=None,
    pos_label=None,
    labels=None,
):
    """Clinical calibration summary, as ``rms::val.prob`` computes it.

    What validation studies of clinical prediction models report (Van
    Calster et al., 2019; Austin & Steyerberg, 2019; Harrell's
    ``rms::val.prob``): the calibration slope and intercepts of a logistic
    recalibration on ``logit(s)``; Emax, E90, E50 and the integrated
    calibration index (ICI), the largest, 90th percentile, median and mean
    gap between a loess calibration curve and the predictions; the
    concordance C and Somers' Dxy; Nagelkerke's R2, Harrell's
    discrimination, unreliability and quality indexes D, U and Q; and the
    Brier score.

    The ICI is also the scorer ``"neg_integrated_calibration_index"``.

    Read more in the :ref:`User Guide <calibration_summary>`.

    Parameters
    ----------
    ${y_true}
    ${y_proba}
    curve : {"loess", "smooth"}, default="loess"
        Calibration curve of Emax, E90, E50 and ICI. ``"loess"``: R's
        ``lowess(s, y, iter = 0)`` (span 2/3, no robustness iterations, the
        curve of val.prob and of Austin & Steyerberg), evaluated at every
        score. ``"smooth"``: the SmoothECE kernel curve of
        :func:`smooth_calibration_curve` (reflected Gaussian kernel at the
        self-consistent bandwidth); the gaps then measure something else
        and do not compare with published values.
    clip : float in (0, 0.5) or None, default=None
        ``None``: rows whose score is exactly 0 or 1 (an infinite logit) are
        left out of the logistic fits, with a warning that counts them, and
        every finite logit is used as it is, however extreme (val.prob's
        rule). A float ``eps``: the scores are clipped to
        ``[eps, 1 - eps]`` before the logit and every row is kept.
    multi_class : {"top-label", "classwise"}, default="top-label"
        Multiclass ``y_proba``: the confidence of the predicted class
        against its correctness, or one summary per class (a list).
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights: integer weights give the summary of the repeated
        rows (the loess neighbourhood holds ``floor(2/3 sum(w))`` units of
        weight, the quantiles are those of the repeated rows, the standard
        errors those of the repeated rows). Weights that are not all
        integers are first rescaled to sum to the number of rows (rms's
        ``normwt``), so that multiplying them by a constant changes nothing;
        the standard errors and U's p-value then read them as that many
        rows, which is not a survey-design variance.
    ${pos_label}
    ${labels}

    Returns
    -------
    CalibrationSummary or list of CalibrationSummary
        The summary; one per class for ``multi_class="classwise"`` on
        multiclass data.

    See Also
    --------
    smooth_calibration_curve : The kernel calibration curve of ``curve="smooth"``.
    calibration_test : Tests of calibration, with exact p-values.
    score_decomposition : Miscalibration in the units of a proper score.

    Notes
    -----
    One rule decides which rows each number uses: the logistic fits and
    everything computed from their likelihoods (slope, intercepts, R2, D,
    U, Q) use the rows with a finite ``logit(s)``; C, Dxy, the Brier score,
    the mean difference and the gaps use every row. These are val.prob's
    choices, with two differences: val.prob computes C on the rows of the
    fits from probabilities binned to 1/5000 (this C is exact, over every
    row), and a score of exactly 0 with label 1 makes val.prob's U infinite
    (here it is left out with its row).

    The loess curve is local: at a score far from most others it averages a
    few labels and may sit far from the score although the model is
    calibrated; the kernel curve of ``curve="smooth"`` averages over a
    bandwidth of the whole score range and is the opposite. The two curves
    give different numbers on most data; see the user guide for measured
    examples.

    References
    ----------
    P. C. Austin and E. W. Steyerberg, "The Integrated Calibration Index
    (ICI) and related metrics for quantifying the calibration of logistic
    regression models", Statistics in Medicine 38, 2019.

    W. S. Cleveland, "Robust locally weighted regression and smoothing
    scatterplots", Journal of the American Statistical Association 74, 1979.

    F. E. Harrell, "rms: Regression Modeling Strategies", R package,
    function ``val.prob``.

    B. Van Calster et al., "Calibration: the Achilles heel of predictive
    analytics", BMC Medicine 17, 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import calibration_summary
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.05, 0.95, size=5000)
    >>> lp = np.log(p / (1 - p))
    >>> y = rng.uniform(size=5000) < 1 / (1 + np.exp(-0.5 * lp))  # true slope 0.5
    >>> s = calibration_summary(y, p)
    >>> print(f"slope {s.slope:.2f} +- {s.slope_se:.2f}, intercept {s.intercept:.2f}")
    slope 0.54 +- 0.02, intercept -0.03
    >>> print(f"Emax {s.emax:.3f}, E90 {s.e90:.3f}, ICI {s.ici:.3f}, C {s.c_index:.3f}")
    Emax 0.153, E90 0.141, ICI 0.087, C 0.689
    """
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    out = [
        _summary(y, s, w, data.n_samples, curve, clip)
        for y, s, w in binary_tasks(data, multi_class)
    ]
    if data.kind == "multiclass" and multi_class == "classwise":
        return out
    return out[0]


def _ici(y_true, y_proba, *, labels=None, sample_weight=None):
    # The ICI alone: the logistic fits (and their warnings) are not needed.
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, labels=labels
    )
    ((y, s, w),) = binary_tasks(data, "top-label")
    keep = w > 0
    w, _ = _frequency_weights(w[keep])
    gap, _ = _gaps(y[keep], s[keep], w, "loess")
    return float(np.sum(w * gap) / np.sum(w))
