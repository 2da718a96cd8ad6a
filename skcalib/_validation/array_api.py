"""Array-API inputs: the losses, and the metrics under array-API dispatch,
checked in their own namespace and on their own device.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .._params import check_param
from .arrays import _is_pandas_like
from .labels import _label_equal
from .probabilities import PROBA_TOL, ROW_SUM_TOL, check_probability_array
from .problem import check_calibration_inputs

# ---------------------------------------------------------------------------
# Array-API inputs: the losses, and the metrics under array_api_dispatch
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ArrayAPIData:
    """Canonical form of a calibration problem held in an array-API namespace.

    Attributes
    ----------
    kind : {"binary", "multiclass"}
    classes : ndarray of shape (n_classes,)
        The class labels (on the host).
    y : array of shape (n_samples,)
        Binary: indicator of the positive class, in the dtype of ``proba``.
        Multiclass: int64 index into ``classes``.
    proba : array
        Binary: shape (n_samples,), probability of the positive class.
        Multiclass: shape (n_samples, n_classes), rows summing to one.
    sample_weight : array of shape (n_samples,) or None
        The checked weights, or None when none were given.
    xp : namespace
    device : object
        Device of the arrays.
    checked : bool
        The values were checked (not under a JAX trace, whose values are
        unknown until the traced function runs; the shapes always are).
    """

    kind: str
    classes: np.ndarray
    y: object
    proba: object
    sample_weight: object
    xp: object
    device: object
    checked: bool = True

    @property
    def unit_weight(self):
        return self.sample_weight is None

    @property
    def n_samples(self):
        return self.proba.shape[0]


def array_namespace_of(y_proba, caller):
    """``(xp, device, y_proba)`` of the probabilities given to ``caller``.

    Any array of a supported namespace (NumPy, PyTorch, JAX,
    array-api-strict), whatever scikit-learn's ``array_api_dispatch`` says;
    a list or other array-like becomes a NumPy array. Other namespaces
    raise a ``TypeError`` that names them.
    """
    from sklearn.externals.array_api_compat import array_namespace, device

    from .._backend.array_api.namespace import check_supported

    if y_proba is None:
        raise ValueError("y_proba must not be None.")
    try:
        xp = array_namespace(y_proba)
    except TypeError:
        y_proba = check_probability_array(y_proba, scan=False)
        xp = array_namespace(y_proba)
    check_supported(xp, caller)
    return xp, device(y_proba), y_proba


def _as_namespace(x, xp, device, name):
    """``x`` (of any namespace, or array-like) as an array of ``xp`` on ``device``."""
    from sklearn.externals.array_api_compat import array_namespace
    from sklearn.externals.array_api_compat import device as device_of

    from .._backend.array_api.namespace import from_numpy, to_numpy

    try:
        own = array_namespace(x)
    except TypeError:
        if _is_pandas_like(x):
            x = x.to_numpy()
        x = np.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(
                f"{name} must hold numbers when y_proba is an array of "
                f"{xp.__name__}; got dtype {x.dtype}."
            ) from None
        return from_numpy(x, xp, device)
    # A JAX array being traced has no device (None): it stays where it is.
    if own is xp and (device is None or device_of(x) == device):
        return x
    return from_numpy(to_numpy(x, own), xp, device)


def _xp_float_dtype(arr, xp, name):
    """A real floating array: integer and boolean input become float64."""
    if xp.isdtype(arr.dtype, "real floating"):
        return arr
    if xp.isdtype(arr.dtype, ("integral", "bool")):
        return xp.astype(arr, xp.float64)
    raise TypeError(f"{name} must be numeric probabilities; got dtype {arr.dtype}.")


def check_array_api_probabilities(y_proba, xp):
    """The checks of :func:`check_probability_array` in the namespace ``xp``.

    Returns the probabilities (values in ``[-1e-8, 0)`` or ``(1, 1 + 1e-8]``
    clipped, by a new array) and whether their values could be read.
    """
    from .._backend.array_api.namespace import detach, has_values

    name = "y_proba"
    arr = _xp_float_dtype(y_proba, xp, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim > 2:
        # the words of scikit-learn's check_array, as for NumPy input
        raise ValueError(
            f"{name} must be array-like of numbers: Found array with dim "
            f"{arr.ndim}, while dim <= 2 is required."
        )
    if arr.ndim == 0:
        raise ValueError(f"{name} must be 1-D or 2-D, got 0 dimensions.")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is required.")
    if not has_values(arr):
        return arr, False
    # The checks read values only: no autograd graph for them.
    values = detach(arr, xp)
    lo, hi = float(xp.min(values)), float(xp.max(values))
    if not (lo >= -PROBA_TOL and hi <= 1 + PROBA_TOL):
        if not bool(xp.all(xp.isfinite(values))):
            what = "NaN" if bool(xp.any(xp.isnan(values))) else "infinity"
            raise ValueError(f"Input {name} contains {what}.")
        raise ValueError(
            f"{name} must contain probabilities in [0, 1]; found values in "
            f"[{lo:.6g}, {hi:.6g}]."
        )
    if lo < 0 or hi > 1:
        arr = xp.clip(arr, 0.0, 1.0)
    if arr.ndim == 2:
        sums = xp.sum(xp.clip(values, 0.0, 1.0), axis=1)
        gap = xp.abs(sums - 1.0)
        if float(xp.max(gap)) > ROW_SUM_TOL:
            worst = int(xp.argmax(gap))
            raise ValueError(
                f"Rows of {name} must sum to 1 (tolerance {ROW_SUM_TOL:g}); "
                f"row {worst} sums to {float(sums[worst]):.8g}."
            )
    return arr, True


def check_array_api_weights(sample_weight, n_samples, xp, device, *, checked=True):
    """The checks of :func:`check_sample_weight` in the namespace ``xp``
    (None stays None: unit weights)."""
    name = "sample_weight"
    if sample_weight is None:
        return None
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
    from .._backend.array_api.namespace import detach

    w = _xp_float_dtype(_as_namespace(sample_weight, xp, device, name), xp, name)
    w = detach(w, xp)
    if w.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(w.shape)}.")
    if w.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {w.shape[0]} elements but there are {n_samples} samples."
        )
    if not checked:
        return w
    if not bool(xp.all(xp.isfinite(w))):
        what = "NaN" if bool(xp.any(xp.isnan(w))) else "infinity"
        raise ValueError(f"Input {name} contains {what}.")
    low = float(xp.min(w))
    if low < 0:
        raise ValueError(f"{name} must be non-negative; found {low:.6g}.")
    total = float(xp.sum(w))
    if not total > 0:
        raise ValueError(f"{name} must have a positive sum; all weights are zero.")
    if not np.isfinite(total):
        raise ValueError(
            f"{name} sums to infinity in double precision; rescale the weights."
        )
    return w


def _xp_labels(y_true, xp, device):
    """``y_true`` as a non-empty 1-D array of ``xp`` on ``device``."""
    if y_true is None:
        raise ValueError("y_true must not be None.")
    y = _as_namespace(y_true, xp, device, "y_true")
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(
            "y_true must be a 1-D array of labels, got an array of shape "
            f"{tuple(y.shape)}."
        )
    if y.shape[0] == 0:
        raise ValueError("y_true is empty; at least one sample is required.")
    return y


def check_array_api_inputs(
    y_true,
    y_proba,
    *,
    sample_weight=None,
    pos_label=None,
    labels=None,
    class_indices=False,
    caller,
):
    """:func:`check_calibration_inputs` for arrays of an array-API namespace.

    The namespace and device are those of ``y_proba``; ``y_true`` and
    ``sample_weight`` are brought to them. The probabilities and weights
    are checked in their namespace (the same rules and messages as for
    NumPy input).

    With ``class_indices=True`` (the losses) ``y_true`` holds class indices:
    integers (or integral floats, or booleans) in ``[0, n_classes)``, with
    ``{0, 1}`` for a 1-D ``y_proba`` (the probability of class 1); a batch
    may lack classes. Otherwise the labels are any numbers or booleans,
    resolved with ``labels`` and ``pos_label`` by the rules (and errors) of
    :func:`check_calibration_inputs`, which reads their distinct values
    only (on the host).

    Returns
    -------
    ArrayAPIData
    """
    from .._backend.array_api.namespace import has_values, to_numpy

    check_param("pos_label", pos_label)
    xp, device, y_proba = array_namespace_of(y_proba, caller)
    # the order of the NumPy checks: labels, probabilities, lengths, weights
    y = _xp_labels(y_true, xp, device)
    proba, checked = check_array_api_probabilities(y_proba, xp)
    n = proba.shape[0]
    if y.shape[0] != n:
        raise ValueError(
            f"y_true and y_proba have inconsistent numbers of samples: "
            f"{y.shape[0]} and {n}."
        )
    checked = checked and has_values(y)
    weight = check_array_api_weights(sample_weight, n, xp, device, checked=checked)
    n_columns = proba.shape[1] if proba.ndim == 2 else 2
    if class_indices:
        kind = "multiclass" if n_columns > 2 else "binary"
        y = _check_class_indices(y, n_columns, proba.ndim, xp, checked)
        classes = np.arange(n_columns)
        if kind == "binary":
            if proba.ndim == 2:
                proba = proba[:, 1]
            y = xp.astype(y == 1, proba.dtype)
        return ArrayAPIData(kind, classes, y, proba, weight, xp, device, checked)
    if not xp.isdtype(y.dtype, ("integral", "bool", "real floating")):
        raise TypeError(f"y_true must hold numeric or boolean labels; got {y.dtype}.")
    present = to_numpy(xp.unique_values(y), xp)
    # The label rules (and their errors) of the NumPy inputs, on the distinct
    # labels with placeholder probabilities of the same shape.
    stub_shape = (present.shape[0],) + tuple(proba.shape[1:])
    width = proba.shape[1] if proba.ndim == 2 else 2
    parsed = check_calibration_inputs(
        present, np.full(stub_shape, 1.0 / width), pos_label=pos_label, labels=labels
    )
    classes = parsed.classes
    if parsed.kind == "multiclass":
        order = np.argsort(classes, kind="stable")
        ordered = xp.asarray(classes[order], dtype=y.dtype, device=device)
        position = xp.searchsorted(ordered, y)
        index = xp.take(xp.asarray(order, device=device), position, axis=0)
        y = xp.astype(index, xp.int64)
        return ArrayAPIData(
            "multiclass", classes, y, proba, weight, xp, device, checked
        )
    positive = parsed.pos_label
    positive = positive.item() if isinstance(positive, np.generic) else positive
    if proba.ndim == 2:
        column = int(np.flatnonzero(_label_equal(classes, positive))[0])
        proba = proba[:, column]
    y = xp.astype(y == positive, proba.dtype)
    return ArrayAPIData("binary", classes, y, proba, weight, xp, device, checked)


def _check_class_indices(y, n_columns, proba_ndim, xp, checked):
    """Integer class indices in ``[0, n_columns)``, as int64."""
    if xp.isdtype(y.dtype, "bool"):
        return xp.astype(y, xp.int64)
    integral = xp.isdtype(y.dtype, "integral")
    if not integral and not xp.isdtype(y.dtype, "real floating"):
        raise TypeError(f"y_true must hold integer class indices; got {y.dtype}.")
    if checked:
        if not integral:
            if not bool(xp.all(xp.isfinite(y))):
                raise ValueError("y_true contains NaN or infinity.")
            if not bool(xp.all(y == xp.round(y))):
                raise ValueError(
                    "y_true must hold integer class indices; found non-integer values."
                )
        lo, hi = int(xp.min(y)), int(xp.max(y))
        if lo < 0 or hi >= n_columns:
            what = (
                "0/1 labels (y_proba is the probability of class 1)"
                if proba_ndim == 1
                else f"class indices in [0, {n_columns}) (the columns of y_proba)"
            )
            raise ValueError(
                f"y_true must hold {what}; found labels from {lo} to {hi}."
            )
    return xp.astype(y, xp.int64)
