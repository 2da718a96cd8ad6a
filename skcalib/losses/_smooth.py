"""SmoothECE at a fixed bandwidth as a differentiable loss."""

from __future__ import annotations

import numbers

from .._backend.array_api.namespace import as_zero_d
from .._backend.array_api.smooth import smooth_ece_at
from .._backend.array_api.tasks import binary_tasks
from .._backend.smece import GridGeometry
from .._params import Interval, check_sigma, validate_params
from .._validation import check_array_api_inputs

__all__ = ["smooth_ece_loss"]


# The smallest sigma depends on the grid: check_sigma in the body.
@validate_params(sigma=Interval(numbers.Real, 0, 1, closed="right"))
def smooth_ece_loss(
    y_true,
    y_proba,
    *,
    sigma,
    multi_class="top-label",
    sample_weight=None,
):
    """Differentiable SmoothECE at a fixed bandwidth.

    ``smECE_sigma`` of :func:`~skcalib.metrics.smooth_ece` with ``sigma``
    given, computed in the namespace of ``y_proba`` (NumPy, PyTorch, JAX or
    array-api-strict) and on its device: the residuals ``y - s`` are binned
    linearly on a uniform grid, smoothed by the Gaussian kernel reflected at
    0 and 1 (by FFT) and the absolute smoothed residual is integrated. At a
    fixed ``sigma`` this is differentiable in the scores except where a
    score crosses a grid point (linear binning is piecewise linear). The
    self-consistent ``sigma*`` of the metric is not differentiated through:
    fix ``sigma`` (e.g. at the metric's ``sigma*`` of a validation set).

    Read more in the :ref:`User Guide <training>`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Class indices in ``[0, n_classes)``; for a 1-D ``y_proba``, 0 or 1.
    y_proba : array of shape (n_samples,) or (n_samples, n_classes)
        Probability of class 1, or of each class (rows summing to one);
        gradients flow to it.
    sigma : float in (0, 1]
        Kernel bandwidth, at least ``2**-16`` (one step of the finest grid).
        The grid has at least 40 steps per ``sigma``: memory is
        ``O(n_samples + 40 / sigma)``.
    multi_class : {"top-label", "classwise"}, default="top-label"
        As in :func:`~skcalib.metrics.smooth_ece`; ignored for binary
        problems.
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights (not differentiated).

    Returns
    -------
    array of shape ()
        ``smECE_sigma`` of the batch, of the namespace, device and floating
        dtype of ``y_proba``.

    See Also
    --------
    skcalib.metrics.smooth_ece : The metric (a float), with ``sigma*``.
    kde_calibration_loss : ECE-KDE as a loss (canonical calibration).

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.losses import smooth_ece_loss
    >>> from skcalib.metrics import smooth_ece
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=500)
    >>> y = (rng.uniform(size=500) < s**2).astype(int)
    >>> smooth_ece_loss(y, s, sigma=0.05)
    array(0.16275998)
    >>> print(f"{smooth_ece(y, s, sigma=0.05):.5f}")
    0.16276
    """
    caller = "smooth_ece_loss"
    sigma = check_sigma(sigma, minimum=GridGeometry("l1").finest_sigma)
    data = check_array_api_inputs(
        y_true, y_proba, sample_weight=sample_weight, class_indices=True, caller=caller
    )
    xp = data.xp
    tasks = binary_tasks(data.kind, data.y, data.proba, multi_class, xp)
    total = None
    for y, s in tasks:
        value = smooth_ece_at(y, s, data.sample_weight, sigma, xp)
        total = value if total is None else total + value
    return as_zero_d(total / float(len(tasks)), xp)
