"""ECE-KDE as a differentiable loss, and its bandwidth selectors per batch."""

from __future__ import annotations

import numpy as np

from .._backend.array_api.namespace import as_zero_d, has_values, to_numpy
from .._backend.array_api.tasks import simplex_tasks
from .._backend.bandwidth import select_kde_bandwidth as _metric_bandwidth
from .._backend.kde.dense import loo_error_terms
from .._backend.kernels import SIMPLEX_EPS
from .._params import KDE_RULES, StrOptions, check_kde_debias, validate_params
from .._validation import check_array_api_inputs

__all__ = ["kde_calibration_loss", "select_kde_bandwidth"]


def _weighted_mean(terms, weight, xp):
    """``sum_j w_j t_j / sum_j w_j`` (rows of zero weight contribute 0 even
    where their term is not finite)."""
    if weight is None:
        return xp.mean(terms)
    kept = xp.where(weight > 0, terms, xp.zeros_like(terms))
    return xp.sum(weight * kept) / xp.sum(weight)


def _check_enough_samples(data, debias, caller):
    n_needed = 3 if debias else 2
    n = data.proba.shape[0]
    if data.sample_weight is not None and data.checked:
        n = int(data.xp.count_nonzero(data.sample_weight > 0))
    if n < n_needed:
        raise ValueError(
            f"{caller} needs at least {n_needed} samples with positive "
            f"sample_weight ({'debiased ' if debias else ''}leave-one-out estimate)."
        )


def _selected_bandwidths(tasks, weight, method, xp, *, warn):
    """The ``method`` bandwidth of each problem, chosen on detached host copies
    of the scores by the metric's selector."""
    if not has_values(tasks[0][0]):
        raise ValueError(
            f"bandwidth={method!r} reads the values of y_proba, which are not "
            "known inside jax.jit: choose the bandwidth outside the traced "
            "function (select_kde_bandwidth) and pass it as a float."
        )
    n = tasks[0][0].shape[0]
    w = np.ones(n) if weight is None else to_numpy(weight, xp).astype(np.float64)
    return [
        _metric_bandwidth(
            to_numpy(F, xp).astype(np.float64), to_numpy(y, xp), w, method, warn=warn
        )[0]
        for F, y, _ in tasks
    ]


@validate_params(**KDE_RULES)
def kde_calibration_loss(
    y_true,
    y_proba,
    *,
    bandwidth,
    p=1,
    multi_class="canonical",
    debias="auto",
    sample_weight=None,
):
    """Differentiable ECE-KDE estimate of the L_p calibration error.

    The estimate of :func:`~skcalib.metrics.kde_calibration_error`, computed
    in the namespace of ``y_proba`` (NumPy, PyTorch, JAX or
    array-api-strict) and on its device, and returned as a 0-d array of that
    namespace which carries gradients: ``CE_p^p`` estimated by the
    leave-one-out Nadaraya-Watson ratio with a Dirichlet kernel
    (Popordanoska, Sayer & Blaschko, 2022). Added to the cross-entropy it is
    the calibration-regularised objective ``KDE-XE``; alone it is not a
    proper score (see the user guide). The bandwidth is a number outside the
    graph: a float, or a selector run per call on a detached copy.

    Read more in the :ref:`User Guide <training>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class indices in ``[0, n_classes)`` (integers, booleans or integral
        floats), as ``torch.nn.CrossEntropyLoss`` takes them; for a 1-D
        ``y_proba``, 0 or 1. A batch may lack some classes. Arrays of
        another namespace (or lists) are brought to that of ``y_proba``.
    y_proba : array of shape (n_samples,) or (n_samples, n_classes)
        Probability of class 1, or of each class (rows summing to one);
        gradients flow to it. Its dtype (float32 or float64) is the dtype of
        the computation; float64 agrees with
        :func:`~skcalib.metrics.kde_calibration_error` to rounding.
    bandwidth : {"mle", "risk"} or float > 0
        Kernel bandwidth ``b``. A string runs the selector of
        :func:`~skcalib.metrics.kde_calibration_error` on a detached host
        copy of the batch (:func:`select_kde_bandwidth`, without its
        end-of-grid warning) at every call; inside ``jax.jit`` pass a float.
    p : float >= 1, default=1
        Order of the error.
    multi_class : {"canonical", "classwise", "top-label"}, default="canonical"
        As in :func:`~skcalib.metrics.kde_calibration_error`; ignored for
        binary problems (a 1-D or two-column ``y_proba``).
    debias : "auto" or bool, default="auto"
        ``"auto"`` means ``True`` for ``p=2``: the U-statistic that drops the
        pairs ``i = i'``, centred near 0 on calibrated data (it can be
        negative).
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights, as in the metric (not differentiated).

    Returns
    -------
    array of shape ()
        ``CE_p^p`` of the batch, of the namespace, device and floating dtype
        of ``y_proba``.

    See Also
    --------
    skcalib.metrics.kde_calibration_error : The same estimate as a float,
        with bandwidth selection, subsampling and per-sample details.
    smooth_ece_loss : SmoothECE at a fixed bandwidth as a loss.
    KDECalibrationLoss : This loss as a ``torch.nn.Module``.

    Notes
    -----
    Memory and time are ``O(n_samples^2 * n_classes)`` (the whole kernel
    matrix of the batch is formed, once per problem for ``"classwise"``).
    Inside ``jax.jit`` (with ``static_argnames=("bandwidth", "p",
    "multi_class", "debias")``) the values of the inputs are unknown, so
    only their shapes are checked: the ranges, the row sums and the labels
    are checked when the function runs outside a trace.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.losses import kde_calibration_loss
    >>> from skcalib.metrics import kde_calibration_error
    >>> rng = np.random.default_rng(0)
    >>> proba = rng.dirichlet([1, 1, 1], size=200)
    >>> y = np.array([rng.choice(3, p=q) for q in proba])
    >>> kde_calibration_loss(y, proba, bandwidth=0.1)
    array(0.16032247)
    >>> print(f"{kde_calibration_error(y, proba, bandwidth=0.1):.8f}")
    0.16032247
    """
    caller = "kde_calibration_loss"
    p = float(p)
    bandwidth = bandwidth if isinstance(bandwidth, str) else float(bandwidth)
    debias = check_kde_debias(debias, p)
    data = check_array_api_inputs(
        y_true, y_proba, sample_weight=sample_weight, class_indices=True, caller=caller
    )
    _check_enough_samples(data, debias, caller)
    xp = data.xp
    tasks = simplex_tasks(data.kind, data.y, data.proba, multi_class, xp)
    if isinstance(bandwidth, str):
        bandwidths = _selected_bandwidths(
            tasks, data.sample_weight, bandwidth, xp, warn=False
        )
    else:
        bandwidths = [bandwidth] * len(tasks)
    total = None
    for (F, y, scale), b in zip(tasks, bandwidths, strict=True):
        terms, _ = loo_error_terms(
            F, y, data.sample_weight, b, p=p, debias=debias, eps=SIMPLEX_EPS, xp=xp
        )
        total = scale * terms if total is None else total + scale * terms
    return as_zero_d(
        _weighted_mean(total / float(len(tasks)), data.sample_weight, xp), xp
    )


@validate_params(method=StrOptions("risk", "mle"), multi_class=KDE_RULES["multi_class"])
def select_kde_bandwidth(
    y_true,
    y_proba,
    *,
    method="risk",
    multi_class="canonical",
    sample_weight=None,
):
    """Bandwidth of the ECE-KDE estimate of a batch, outside the autograd graph.

    Runs the selector of :func:`~skcalib.metrics.kde_calibration_error` on a
    detached copy of the batch on the host (the bandwidth is not optimised
    through): ``"mle"`` maximises the leave-one-out likelihood of the
    Dirichlet kernel density of the scores (the choice of Popordanoska et
    al.), ``"risk"`` (the metric's default) aligns the kernel estimate of
    each sample's Brier risk with the observed one. The criterion is searched
    on 15 log-spaced values in ``[1e-5, 0.1]`` and ``0.2, 0.4, ..., 1.0``,
    then refined continuously on the whole batch, as for the metric.

    Read more in the :ref:`User Guide <training>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class indices, as for :func:`kde_calibration_loss`.
    y_proba : array of shape (n_samples,) or (n_samples, n_classes)
        Probabilities, of any supported namespace.
    method : {"risk", "mle"}, default="risk"
        Selector.
    multi_class : {"canonical", "classwise", "top-label"}, default="canonical"
        Reduction whose kernel is chosen (one bandwidth per class for
        ``"classwise"``).
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights.

    Returns
    -------
    float or ndarray of shape (n_classes,)
        The bandwidth, or one per class for ``"classwise"`` on a multiclass
        problem. A warning says when it is an end of the grid.

    See Also
    --------
    kde_calibration_loss : The loss that takes this bandwidth.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.losses import select_kde_bandwidth
    >>> rng = np.random.default_rng(0)
    >>> proba = rng.dirichlet([2, 2, 2], size=256)
    >>> y = np.array([rng.choice(3, p=q) for q in proba])
    >>> print(f"{select_kde_bandwidth(y, proba, method='mle'):.4f}")
    0.0932
    >>> print(f"{select_kde_bandwidth(y, proba):.4f}")
    0.0316
    """
    caller = "select_kde_bandwidth"
    data = check_array_api_inputs(
        y_true, y_proba, sample_weight=sample_weight, class_indices=True, caller=caller
    )
    _check_enough_samples(data, False, caller)
    tasks = simplex_tasks(data.kind, data.y, data.proba, multi_class, data.xp)
    chosen = _selected_bandwidths(tasks, data.sample_weight, method, data.xp, warn=True)
    if len(chosen) == 1:
        return float(chosen[0])
    return np.asarray(chosen, dtype=float)
