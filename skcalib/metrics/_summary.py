"""Clinical calibration summary: slope, intercept, Emax, E90, E50, ICI."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning

from .._backend import smece as _sm
from .._backend.logistic import logistic_fit
from .._backend.user_warning import warn_user
from .._params import StrOptions, validate_params
from .._validation import binary_tasks, check_calibration_inputs

__all__ = ["CalibrationSummary", "calibration_summary"]

# Scores are clipped to [_CLIP, 1 - _CLIP] before the logit transform.
_CLIP = 1e-10


@dataclass(frozen=True, repr=False)
class CalibrationSummary:
    """Result of :func:`calibration_summary`.

    Attributes
    ----------
    slope, slope_se : float
        Calibration slope ``b`` of ``logit P(y = 1) = a + b logit(s)`` and
        its standard error (1 for calibrated predictions; below 1:
        over-confident, the predictions are too extreme). NaN where the
        scores take a single value (after clipping), which leaves the slope
        undefined.
    intercept, intercept_se : float
        Calibration intercept ``a`` of ``logit P(y = 1) = a + logit(s)``
        (slope fixed at 1, ``logit(s)`` an offset) and its standard error:
        calibration-in-the-large on the logit scale (0 when calibrated;
        above 0: the predictions are too low on average).
    mean_difference : float
        ``mean(y) - mean(s)``: calibration-in-the-large on the probability
        scale.
    emax, e90, e50, ici : float
        Maximum, 90th percentile, median and (weighted) mean of
        ``|c(s_i) - s_i|`` over the rows, with ``c`` the smooth calibration
        curve of :func:`smooth_calibration_curve` (ICI: the integrated
        calibration index of Austin & Steyerberg, 2019).
    sigma : float
        Bandwidth of that curve.
    converged : bool
        Whether the logistic fits converged (separable data and a single
        class do not; the slope is not fitted where it is undefined).
    n_samples : int
    """

    slope: float
    slope_se: float
    intercept: float
    intercept_se: float
    mean_difference: float
    emax: float
    e90: float
    e50: float
    ici: float
    sigma: float
    converged: bool
    n_samples: int

    def __repr__(self):
        return (
            f"CalibrationSummary(slope={self.slope:.4g} (se {self.slope_se:.2g}), "
            f"intercept={self.intercept:.4g} (se {self.intercept_se:.2g}), "
            f"mean_difference={self.mean_difference:.4g}, emax={self.emax:.4g}, "
            f"e90={self.e90:.4g}, e50={self.e50:.4g}, ici={self.ici:.4g})"
        )


def _quantile(x, w, q):
    # The weighted "inverted CDF" quantile: integer weights give the
    # quantile of the repeated rows.
    return float(np.quantile(x, q, weights=w, method="inverted_cdf"))


def _summary(y, s, w, n):
    keep = w > 0
    y, s, w = y[keep], s[keep], w[keep]
    c = np.clip(s, _CLIP, 1.0 - _CLIP)
    lp = np.log(c) - np.log1p(-c)
    offset = logistic_fit(y, np.ones((lp.shape[0], 1)), w, offset=lp)
    converged = offset.converged
    slope = slope_se = np.nan
    if np.ptp(lp) > 0:
        joint = logistic_fit(y, np.column_stack([np.ones_like(lp), lp]), w)
        converged = converged and joint.converged
        slope, slope_se = float(joint.coef[1]), float(joint.se[1])
    else:
        # One score: any slope fits as well as any other, and the solver
        # would return whichever number the rounding of a singular system
        # gave.
        warn_user(
            "y_proba takes a single value (after clipping to "
            f"[{_CLIP:g}, 1 - {_CLIP:g}]): the calibration slope is not "
            "defined and is NaN.",
            UndefinedMetricWarning,
        )
    if not converged:
        why = (
            "y_true holds a single class"
            if np.all(y == y[0])
            else "are the classes separated by the scores?"
        )
        warn_user(
            f"The logistic recalibration did not converge ({why}); slope and "
            "intercept are unreliable.",
            RuntimeWarning,
        )
    geometry = _sm.GridGeometry("l1")
    _, sigma, stats = _sm.fit(y, s, w, geometry)
    grid, curve, _, _ = _sm.smooth_curve(stats, sigma, geometry)
    ok = np.isfinite(curve)
    gap = np.abs(np.interp(s, grid[ok], curve[ok]) - s)
    W = float(w.sum())
    return CalibrationSummary(
        slope=slope,
        slope_se=slope_se,
        intercept=float(offset.coef[0]),
        intercept_se=float(offset.se[0]),
        mean_difference=float(np.sum(w * (y - s)) / W),
        emax=float(gap.max()),
        e90=_quantile(gap, w, 0.9),
        e50=_quantile(gap, w, 0.5),
        ici=float(np.sum(w * gap) / W),
        sigma=float(sigma),
        converged=bool(converged),
        n_samples=n,
    )


@validate_params(multi_class=StrOptions("top-label", "classwise"))
def calibration_summary(
    y_true,
    y_proba,
    *,
    multi_class="top-label",
    sample_weight=None,
    pos_label=None,
    labels=None,
):
    """Calibration slope and intercept, Emax, E90, E50 and ICI.

    The summary of clinical prediction models (Van Calster et al., 2019;
    Austin & Steyerberg, 2019). A logistic recalibration of the labels on
    ``logit(s)`` gives the calibration slope (joint fit of intercept and
    slope) and the calibration intercept (slope fixed at 1: calibration in
    the large), with standard errors from the inverse Fisher information.
    The absolute gaps between the smooth calibration curve and the
    predictions at the rows give Emax, E90, E50 and their mean, the ICI.

    It returns an object of several numbers, not a float; the ICI is also
    available as the scorer ``"neg_integrated_calibration_index"``.

    Read more in the :ref:`User Guide <is_calibrated>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        As in :func:`smooth_ece`; scores are clipped to ``[1e-10, 1 - 1e-10]``
        before the logit.
    multi_class : {"top-label", "classwise"}, default="top-label"
        Multiclass ``y_proba``: the confidence of the predicted class
        against its correctness, or one summary per class (a list).
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights: weighted likelihood, weighted curve and weighted
        quantiles (integer weights give the summary of the repeated rows).
    pos_label, labels
        As in :func:`smooth_ece`.

    Returns
    -------
    summary : CalibrationSummary or list of CalibrationSummary

    Notes
    -----
    Austin & Steyerberg (2019) estimate the calibration curve by loess of
    the labels on the predictions (``rms::val.prob``: lowess with a span of
    2/3 and robustness iterations). The curve here is the SmoothECE's
    Nadaraya-Watson curve: a Gaussian kernel reflected at 0 and 1 with the
    self-consistent bandwidth ``sigma*`` (no span to choose, no robustness
    weights, which would down-weight exactly the rare outcomes that reveal
    miscalibration). The kernel curve is flatter than loess near the ends
    (loess is locally linear and follows a slope into the boundary), so
    Emax, which is often attained at an end, tends to be smaller; E50 and
    ICI agree closely between the two when the curve is smooth.

    References
    ----------
    P. C. Austin and E. W. Steyerberg, "The Integrated Calibration Index
    (ICI) and related metrics for quantifying the calibration of logistic
    regression models", Statistics in Medicine 38, 2019.
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
    >>> bool(s.e50 <= s.e90 <= s.emax)
    True
    """
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    out = [
        _summary(y, s, w, data.n_samples) for y, s, w in binary_tasks(data, multi_class)
    ]
    if data.kind == "multiclass" and multi_class == "classwise":
        return out
    return out[0]
