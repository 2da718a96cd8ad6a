"""SmoothECE and the smooth reliability curve."""

from __future__ import annotations

import numbers

import numpy as np

from .._backend import smece as _sm
from .._backend.distributed import any_dask
from .._backend.progress import Progress
from .._params import (
    MAX_BOOTSTRAP,
    Interval,
    check_seed_sequence,
    check_sigma,
    validate_params,
)
from .._validation import binary_tasks, check_calibration_inputs
from ._dask import dask_smooth_calibration_curve, dask_smooth_ece
from ._groups import by_group
from ._results import SmoothCalibrationCurve, SmoothECEResult

__all__ = ["smooth_ece", "smooth_calibration_curve"]


def _prepare(
    y_true,
    y_proba,
    sample_weight,
    pos_label,
    labels,
    multi_class,
    metric,
    sigma,
    *,
    unit_as_none=False,
):
    geometry = _sm.GridGeometry(metric)
    if sigma is not None:
        sigma = check_sigma(
            sigma, minimum=geometry.finest_sigma, context=f" with metric={metric!r}"
        )
    data = check_calibration_inputs(
        y_true,
        y_proba,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        top_label=multi_class == "top-label",
    )
    tasks = binary_tasks(data, multi_class, unit_as_none=unit_as_none)
    return data, tasks, geometry, sigma


@validate_params()
@by_group
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
    return_details=False,
    groups=None,
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
    return_details : bool, default=False
        Return a :class:`SmoothECEResult` (the value, the bandwidth used, the
        per-class values) instead of the float.
    groups : array-like of shape (n_samples,), default=None
        Group of each sample (numbers, strings or booleans, as scikit-learn's
        ``groups``). With ``groups`` the SmoothECE is computed on each group's
        rows alone, every other argument unchanged (the classes and the
        positive class are those of the whole sample, so a group lacking some
        class keeps the columns of the others), and a
        :class:`GroupedCalibrationResult` is returned. A group too small for
        the SmoothECE raises a ``ValueError`` that names it. Read more in the
        :ref:`User Guide <groups>`.

    Returns
    -------
    float, SmoothECEResult or GroupedCalibrationResult
        The SmoothECE, in [0, 1]; exactly 0 when the residual
        ``sum w (y - s)`` vanishes at every grid point (e.g. ``y == s`` for
        every row). A :class:`SmoothECEResult` with ``return_details=True``.
        With ``groups``, a :class:`GroupedCalibrationResult` instead,
        whatever ``return_details`` (which then keeps each group's
        :class:`SmoothECEResult` in its ``details``): the per-group breakdown
        is what was asked for.

    See Also
    --------
    smooth_calibration_curve : The reliability curve at ``sigma*``, its
        bootstrap band and a confidence interval of smECE.
    binned_calibration_error : The classic binned ECE family.

    Notes
    -----
    Like every calibration-error estimate, smECE is biased upward: the noise
    of the labels looks like miscalibration. The bias is of the order of the
    sampling noise and dominates for a model that is calibrated to within
    about ``1 / sqrt(n)`` (+120 % at ``n = 500`` and +37 % at ``n = 3000``
    for a model of population smECE 0.019). :func:`smooth_calibration_curve`
    with ``n_bootstrap`` gives a confidence interval that accounts for the
    bias (also for a perfectly calibrated model) and a bias-corrected
    estimate.

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
    >>> smooth_ece(y, p, return_details=True)
    SmoothECEResult(value=0.02522, sigma=0.02522, metric='l1',
                    multi_class='binary', n_samples=2000)
    """
    if any_dask(y_true, y_proba, sample_weight):
        return dask_smooth_ece(
            y_true,
            y_proba,
            sigma=sigma,
            metric=metric,
            multi_class=multi_class,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
            return_details=return_details,
        )
    # fit reads unit weights as None: no array of ones
    data, tasks, geometry, sigma = _prepare(
        y_true,
        y_proba,
        sample_weight,
        pos_label,
        labels,
        multi_class,
        metric,
        sigma,
        unit_as_none=True,
    )
    values, sigmas = [], []
    for y, s, w in tasks:
        value, sig = _sm.fit_value(y, s, w, geometry, sigma)
        values.append(value)
        sigmas.append(sig)
    value = float(np.mean(values))
    if not return_details:
        return value
    classwise = multi_class == "classwise" and data.kind == "multiclass"
    return SmoothECEResult(
        value=value,
        sigma=np.asarray(sigmas, dtype=float) if classwise else float(sigmas[0]),
        metric=metric,
        multi_class=multi_class if data.kind == "multiclass" else "binary",
        n_samples=int(data.n_samples),
        class_values=np.asarray(values, dtype=float) if classwise else None,
        classes=data.classes if classwise else None,
    )


@validate_params(n_bootstrap=Interval(numbers.Integral, 0, MAX_BOOTSTRAP))
def smooth_calibration_curve(
    y_true,
    y_proba,
    *,
    sigma=None,
    metric="l1",
    multi_class="top-label",
    n_bootstrap=0,
    confidence_level=0.95,
    ci_method="inversion",
    sample_weight=None,
    pos_label=None,
    labels=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
):
    """Smooth reliability curve, score density and SmoothECE with bootstrap bands.

    The curve is the Nadaraya-Watson estimate of ``E[y | s]`` with the
    reflected Gaussian kernel at the SmoothECE bandwidth ``sigma*`` (or a given
    ``sigma``), fitted on the full sample. With ``n_bootstrap > 0`` the rows
    are resampled with replacement: the band is the pointwise interval of the
    resampled curves at the same bandwidth, and the interval of smECE is
    either made of the resampled smECE values (each with its own ``sigma*``)
    or, by default, obtained by test inversion (see Notes).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels, as in :func:`smooth_ece`.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities, as in :func:`smooth_ece`.
    sigma : float in (0, 1], default=None
        Fixed kernel bandwidth, as in :func:`smooth_ece`; ``None`` uses the
        self-consistent ``sigma*``.
    metric : {"l1", "logit"}, default="l1"
        Smoothing on [0, 1] or on ``logit(s)``, as in :func:`smooth_ece`.
    multi_class : {"top-label", "classwise"}, default="top-label"
        For multiclass input, ``"classwise"`` returns one curve per class.
    n_bootstrap : int, default=0
        Number of bootstrap resamples (0: no band and no interval). With
        ``ci_method="inversion"`` it is also the number of samples simulated
        from each population the interval tests.
    confidence_level : float in (0, 1), default=0.95
        Level of the interval of smECE and of the pointwise band.
    ci_method : {"inversion", "basic", "percentile"}, default="inversion"
        How the interval of smECE is formed (see Notes). ``"inversion"``
        keeps the populations of known smECE that the observed smECE does
        not reject: a family around the sample, from perfectly calibrated to
        the fitted curve and beyond. ``"basic"`` and ``"percentile"`` are
        formed from the ordinary resamples, with ``q_lo, q_hi`` their
        ``(1 -/+ confidence_level) / 2`` quantiles and ``est`` the estimate:
        ``[2 est - q_hi, 2 est - q_lo]`` (reverse percentile) and
        ``[q_lo, q_hi]``, clipped to [0, 1]. The pointwise band of the curve
        is the basic one for ``"inversion"`` and ``"basic"``, the percentile
        one for ``"percentile"``.
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights, as in :func:`smooth_ece`. Resamples draw rows,
        and the weights travel with them.
    pos_label : int, float, bool or str, default=None
        Positive class of a binary problem, as in :func:`smooth_ece`.
    labels : array-like, default=None
        All class labels, in the order of the columns of ``y_proba``.
    random_state : int, Generator, RandomState or None, default=None
        Seeds the resampling. The result does not depend on ``n_jobs``.
    n_jobs : int, default=None
        Parallel workers for the bootstrap (``joblib``; ``-1`` = all cores).
        Works with any ``joblib.parallel_backend``, e.g. dask.
    verbose : int, default=0
        Report the bootstrap's progress on stderr when positive.

    Returns
    -------
    SmoothCalibrationCurve or list of SmoothCalibrationCurve
        A list (one per class, with ``label`` set) for ``"classwise"``.

    Notes
    -----
    smECE is biased upward (noise looks like miscalibration), the more so the
    closer the model is to calibrated relative to ``1 / sqrt(n)``: for scores
    ``s ~ U(0, 1)`` with ``E[y | s] = s + 0.03 sin(2 pi s)`` (population smECE
    0.019) the mean estimate is 0.042 at ``n = 500`` and 0.026 at
    ``n = 3000``. Resamples are biased upward once more, and by less than
    the estimate is (the bias shrinks as the smECE grows), so no interval
    made of the ordinary resamples can cover when the bias exceeds the
    spread: the percentile interval never covered that model at
    ``n <= 3000``, the basic one in 0.73-0.93 of the samples, and for a
    perfectly calibrated model (``theta = 0``) they cover only through the
    clipping at 0.

    The inversion interval simulates the bias instead of reading it off the
    resamples. The populations ``P_lambda`` keep the sample's scores and
    have the calibration function
    ``clip(s + lambda (curve(s) - s), 0, 1)``, with ``curve`` the fitted
    curve: ``lambda = 0`` is perfectly calibrated, ``lambda = 1`` the fitted
    curve. Their smECE ``theta(lambda)`` is computed exactly, and
    ``n_bootstrap`` samples of each (new labels for the same scores, from
    the same uniforms for every ``lambda``) give the law of the estimate
    there, bias included. A population is kept
    when the observed smECE lies between the ``(1 -/+ confidence_level) / 2``
    quantiles of its simulated estimates (``lambda = 0`` whenever it is below
    the upper one); the interval runs from the smallest to the largest kept
    ``theta``, located by regula falsi (about five populations). It covers a
    calibrated model, and holds 0 whenever the data do not reject perfect
    calibration. Its level is not exact: the fitted shape stands for the
    true one, and the measured coverage of the 95 % interval was 0.82-0.99
    over six problems (calibrated, nearly calibrated, over- and
    under-confident, rare positives, ten discrete scores) at ``n`` = 500 to
    3000, against 0.00-0.93 for the basic interval (user guide, from
    ``benchmarks/bench_intervals.py``); the result's ``repr`` shows the
    measured range. For a guarantee that holds at every ``n``, use
    :func:`calibration_error_bound`.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import smooth_calibration_curve
    >>> rng = np.random.default_rng(3)
    >>> p = rng.uniform(size=3000)
    >>> y = rng.uniform(size=3000) < p + 0.03 * np.sin(2 * np.pi * p)
    >>> # The population smECE of this model is 0.0190.
    >>> curve = smooth_calibration_curve(y, p, n_bootstrap=100, random_state=0)
    >>> print(f"smECE {curve.smece:.4f}, 95% CI "
    ...       f"[{curve.smece_ci[0]:.4f}, {curve.smece_ci[1]:.4f}]")
    smECE 0.0266, 95% CI [0.0027, 0.0324]
    >>> curve.ci_method, curve.smece_ci_coverage  # its measured coverage
    ('inversion', (0.82, 0.99))
    >>> basic = smooth_calibration_curve(y, p, n_bootstrap=100, random_state=0,
    ...                                  ci_method="basic")
    >>> print(f"basic 95% CI [{basic.smece_ci[0]:.4f}, {basic.smece_ci[1]:.4f}]")
    basic 95% CI [0.0088, 0.0315]
    >>> pct = smooth_calibration_curve(y, p, n_bootstrap=100, random_state=0,
    ...                                ci_method="percentile")
    >>> print(f"percentile 95% CI [{pct.smece_ci[0]:.4f}, {pct.smece_ci[1]:.4f}]")
    percentile 95% CI [0.0217, 0.0444]
    >>> print(f"bias-corrected smECE {curve.smece_bias_corrected:.4f}")
    bias-corrected smECE 0.0218
    >>> bool(np.all(curve.y_smooth_low <= curve.y_smooth_high))
    True
    """
    # Here, not with the module: resampling imports joblib (a tenth of a
    # second), which smooth_ece does not need.
    from .._backend.resampling import (
        MEASURED_COVERAGE,
        bootstrap_interval,
        bootstrap_smooth_curves,
        inversion_interval,
    )

    if any_dask(y_true, y_proba, sample_weight):
        return dask_smooth_calibration_curve(
            y_true,
            y_proba,
            sigma=sigma,
            metric=metric,
            multi_class=multi_class,
            n_bootstrap=n_bootstrap,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
        )
    data, tasks, geometry, sigma = _prepare(
        y_true, y_proba, sample_weight, pos_label, labels, multi_class, metric, sigma
    )
    seeds = check_seed_sequence(random_state).spawn(len(tasks))
    curves = []
    for (y, s, w), seed in zip(tasks, seeds, strict=True):
        value, sig, stats = _sm.fit(y, s, w, geometry, sigma)
        scores, y_smooth, dens, _ = _sm.smooth_curve(stats, sig, geometry)
        curve = SmoothCalibrationCurve(
            scores=scores, y_smooth=y_smooth, density=dens, sigma=sig, smece=value
        )
        if n_bootstrap:
            with Progress("bootstrap", n_bootstrap, verbose) as progress:
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
                    progress=progress,
                )
            lo, hi = bootstrap_interval(
                y_smooth, band.curves, confidence_level, ci_method
            )
            curve.y_smooth_low, curve.y_smooth_high = lo, hi
            if ci_method == "inversion":
                inv = inversion_interval(
                    y,
                    s,
                    w,
                    geometry,
                    estimate=value,
                    sigma_curve=sig,
                    curve=y_smooth,
                    fixed_sigma=sigma,
                    confidence_level=confidence_level,
                    n_resamples=n_bootstrap,
                    seed=seed.spawn(1)[0],
                    n_jobs=n_jobs,
                )
                lo, hi = inv.low, inv.high
            else:
                lo, hi = bootstrap_interval(
                    value, band.smece, confidence_level, ci_method
                )
            curve.smece_ci = (float(lo), float(hi))
            coverage = MEASURED_COVERAGE.get(round(confidence_level, 6), {})
            curve.smece_ci_coverage = coverage.get(ci_method)
            curve.smece_bootstrap = band.smece
            curve.smece_bias_corrected = max(2 * value - float(band.smece.mean()), 0.0)
            curve.ci_method = ci_method
            curve.n_bootstrap = n_bootstrap
            curve.confidence_level = confidence_level
        curves.append(curve)
    if multi_class == "classwise" and data.kind == "multiclass":
        for curve, label in zip(curves, data.classes, strict=True):
            curve.label = label
        return curves
    return curves[0]
