"""SmoothECE and the smooth reliability curve."""

from __future__ import annotations

import numpy as np

from .._backend import smece as _sm
from .._backend.resampling import bootstrap_smooth_curves
from .._validation import (
    MAX_BOOTSTRAP,
    binary_tasks,
    check_calibration_inputs,
    check_int,
    check_multi_class,
    check_n_jobs,
    check_real,
    check_seed_sequence,
    check_sigma,
)
from ._accumulator import any_dask, dask_metric
from ._scorer import CalibrationScorer, register_scorer

__all__ = ["smooth_ece", "smooth_calibration_curve", "SmoothCalibrationCurve"]

_METRICS = ("l1", "logit")


def _prepare(
    y_true, y_proba, sample_weight, pos_label, labels, multi_class, metric, sigma
):
    check_multi_class(multi_class, ("top-label", "classwise"))
    check_multi_class(metric, _METRICS, name="metric")
    geometry = _sm.GridGeometry(metric)
    if sigma is not None:
        sigma = check_sigma(sigma, minimum=geometry.finest_sigma)
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    return data, binary_tasks(data, multi_class), geometry, sigma


def smooth_ece(
    y_true,
    y_proba,
    *,
    sigma=None,
    metric="l1",
    multi_class="top-label",
    sample_weight=None,
    pos_label=None,
    labels=None,
    return_sigma=False,
):
    """Smooth expected calibration error (SmoothECE).

    The residuals ``y_i - s_i`` are smoothed with a Gaussian kernel of
    bandwidth ``sigma`` reflected at 0 and 1, and ``smECE_sigma`` is the L1
    norm of the smoothed residual:

    .. math::

        r_\\sigma(t) = \\frac{1}{W} \\sum_i w_i \\tilde K_\\sigma(t, s_i)(y_i - s_i),
        \\qquad \\mathrm{smECE}_\\sigma = \\int_0^1 |r_\\sigma(t)|\\,dt .

    With ``sigma=None`` the bandwidth is the fixed point ``sigma*`` with
    ``smECE_sigma* = sigma*`` (found by bisection to 1e-6) and the result *is*
    ``sigma*``: a consistent calibration measure with no free parameter,
    unlike the binned ECE (Blasiok & Nakkiran, 2023).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probability of the positive class, or of each class (columns
        in the order of the sorted labels, as ``predict_proba`` returns them,
        or of ``labels`` when given).
    sigma : float in (0, 1], default=None
        Fixed kernel bandwidth (in logit units for ``metric="logit"``).
        ``None`` uses the self-consistent ``sigma*``. It must be at least one
        step of the finest smoothing grid: ``2**-16`` for ``"l1"``, about
        ``6.7e-4`` for ``"logit"``.
    metric : {"l1", "logit"}, default="l1"
        ``"l1"`` smooths the scores on [0, 1]; ``"logit"`` smooths
        ``logit(s)`` (scores clipped to [1e-6, 1 - 1e-6]) with an ordinary
        Gaussian, which resolves scores piled near 0 and 1 better.
    multi_class : {"top-label", "classwise"}, default="top-label"
        Reduction for multiclass ``y_proba``: confidence of the predicted class
        vs correctness, or the mean of the one-vs-rest errors. Ignored for
        binary problems.
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights: a weight of 2 counts like two copies of the row
        (integer weights give the number of repeated rows). SmoothECE depends
        on the weights' ratios only: rescaling them all changes nothing.
    pos_label : int, float, bool or str, default=None
        Positive class of a binary problem. With a 1-D ``y_proba``, ``None``
        means 1 for labels in {0, 1} or {-1, 1} and ``True`` for booleans; any
        other labels (e.g. strings) need ``pos_label``. With a two-column
        ``y_proba``, ``None`` means the greater label (the last column in
        sorted order).
    labels : array-like, default=None
        All class labels, in the order of the columns of ``y_proba`` (as
        in :func:`sklearn.metrics.roc_auc_score`); needed when ``y_true``
        lacks some class of ``y_proba``.
    return_sigma : bool, default=False
        Also return the bandwidth used (an array of one bandwidth per class
        for ``multi_class="classwise"``).

    Returns
    -------
    smece : float
        In [0, 1]; exactly 0 when the residual ``sum w (y - s)`` vanishes at
        every grid point (e.g. ``y == s`` for every row).
    sigma : float or ndarray
        Only if ``return_sigma=True``.

    See Also
    --------
    smooth_calibration_curve : The reliability curve at ``sigma*`` and its
        bootstrap band.
    binned_calibration_error : The classic binned ECE family.

    References
    ----------
    J. Blasiok and P. Nakkiran, "Smooth ECE: Principled Reliability Diagrams
    via Kernel Smoothing", arXiv:2309.12236, 2023.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_ece
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < p             # calibrated by construction
    >>> smooth_ece(y, p) < 0.05
    True
    >>> y_over = rng.uniform(size=2000) < 0.5 + 0.5 * (p - 0.5)  # over-confident
    >>> smooth_ece(y_over, p) > 0.1
    True
    """
    if any_dask(y_true, y_proba, sample_weight):
        return dask_metric("smooth_ece", **locals())
    data, tasks, geometry, sigma = _prepare(
        y_true, y_proba, sample_weight, pos_label, labels, multi_class, metric, sigma
    )
    values, sigmas = [], []
    for y, s, w in tasks:
        value, sig, _ = _sm.fit(y, s, w, geometry, sigma)
        values.append(value)
        sigmas.append(sig)
    value = float(np.mean(values))
    if not return_sigma:
        return value
    sig_out = float(sigmas[0]) if len(sigmas) == 1 else np.asarray(sigmas)
    return value, sig_out


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
        Percentile bootstrap band of ``y_smooth`` (at the same ``sigma``).
    smece_ci : tuple of float or None
        Percentile bootstrap confidence interval of ``smece``. SmoothECE is
        biased upwards, resamples (with repeated rows) more so, and the
        interval of a nearly calibrated model can lie above ``smece``.
    n_bootstrap, confidence_level : int, float
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
        self.n_bootstrap = 0
        self.confidence_level = None
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


def smooth_calibration_curve(
    y_true,
    y_proba,
    *,
    sigma=None,
    metric="l1",
    multi_class="top-label",
    n_bootstrap=0,
    confidence_level=0.95,
    sample_weight=None,
    pos_label=None,
    labels=None,
    random_state=None,
    n_jobs=None,
):
    """Smooth reliability curve, score density and SmoothECE with bootstrap bands.

    The curve is the Nadaraya-Watson estimate of ``E[y | s]`` with the
    reflected Gaussian kernel at the SmoothECE bandwidth ``sigma*`` (or a given
    ``sigma``), fitted on the full sample. With ``n_bootstrap > 0`` the rows
    are resampled with replacement: the band is the pointwise percentile
    interval of the resampled curves at the same bandwidth, and the smECE
    interval is the percentile interval of the resampled smECE values (each
    with its own ``sigma*``).

    Parameters
    ----------
    y_true, y_proba, sigma, metric
        As in :func:`smooth_ece`.
    multi_class : {"top-label", "classwise"}, default="top-label"
        For multiclass input, ``"classwise"`` returns one curve per class.
    n_bootstrap : int, default=0
        Number of bootstrap resamples (0: no band).
    confidence_level : float in (0, 1), default=0.95
    sample_weight, pos_label, labels
        As in :func:`smooth_ece`.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the resampling. The result does not depend on ``n_jobs``.
    n_jobs : int, default=None
        Parallel workers for the bootstrap (``joblib``; ``-1`` = all cores).
        Works with any ``joblib.parallel_backend``, e.g. dask.

    Returns
    -------
    curve : SmoothCalibrationCurve or list of SmoothCalibrationCurve
        A list (one per class, with ``label`` set) for ``"classwise"``.

    Notes
    -----
    The percentile interval reproduces the sampling spread of smECE (the
    tests check its width against independent samples) but is not
    bias-corrected: like every calibration-error estimate, smECE is biased
    upward at small ``n`` (noise looks like miscalibration), so the interval
    can sit above the population value. For a guarantee, use
    :func:`calibration_error_bound`.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_calibration_curve
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=5000)
    >>> y = rng.uniform(size=5000) < p ** 2
    >>> curve = smooth_calibration_curve(y, p, n_bootstrap=50, random_state=0)
    >>> lo, hi = curve.smece_ci
    >>> bool(0 <= lo <= hi <= 1)
    True
    >>> bool(np.all(curve.y_smooth_low <= curve.y_smooth_high))
    True
    """
    if any_dask(y_true, y_proba, sample_weight):
        return dask_metric("smooth_calibration_curve", **locals())
    n_bootstrap = check_int(
        n_bootstrap, "n_bootstrap", min_val=0, max_val=MAX_BOOTSTRAP
    )
    confidence_level = check_real(
        confidence_level,
        "confidence_level",
        low=0,
        high=1,
        include_low=False,
        include_high=False,
    )
    data, tasks, geometry, sigma = _prepare(
        y_true, y_proba, sample_weight, pos_label, labels, multi_class, metric, sigma
    )
    seeds = check_seed_sequence(random_state).spawn(len(tasks))
    check_n_jobs(n_jobs)
    curves = []
    for (y, s, w), seed in zip(tasks, seeds, strict=True):
        value, sig, stats = _sm.fit(y, s, w, geometry, sigma)
        scores, y_smooth, dens, _ = _sm.smooth_curve(stats, sig, geometry)
        curve = SmoothCalibrationCurve(
            scores=scores, y_smooth=y_smooth, density=dens, sigma=sig, smece=value
        )
        if n_bootstrap:
            band = bootstrap_smooth_curves(
                y,
                s,
                w,
                geometry,
                sigma_curve=sig,
                fixed_sigma=sigma,
                n_bootstrap=n_bootstrap,
                seed=seed,
                n_jobs=n_jobs,
            )
            alpha = 100 * (1 - confidence_level) / 2
            # Grid points with no data in any resample stay NaN (as y_smooth).
            seen = ~np.all(np.isnan(band.curves), axis=0)
            q = np.full((2, band.curves.shape[1]), np.nan)
            q[:, seen] = np.nanpercentile(
                band.curves[:, seen], [alpha, 100 - alpha], axis=0
            )
            curve.y_smooth_low, curve.y_smooth_high = q[0], q[1]
            ci = np.percentile(band.smece, [alpha, 100 - alpha])
            curve.smece_ci = (float(ci[0]), float(ci[1]))
            curve.n_bootstrap = n_bootstrap
            curve.confidence_level = confidence_level
        curves.append(curve)
    if multi_class == "classwise" and data.kind == "multiclass":
        for curve, label in zip(curves, data.classes, strict=True):
            curve.label = label
        return curves
    return curves[0]


register_scorer("neg_smooth_ece", CalibrationScorer(smooth_ece))
