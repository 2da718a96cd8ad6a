"""Turn user input into canonical float64 arrays.

This is the only module that parses ``y_true`` / ``y_proba`` / ``sample_weight``
(and the other array inputs: groups, labels, a wrapped model's probabilities).
Everything downstream (``skcalib._backend``, the metrics, estimators and
displays) may assume the invariants documented on :class:`CalibrationData`.
Scalar parameters have their rules in :mod:`skcalib._params`.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import numbers
import sys
from dataclasses import dataclass

import numpy as np

from ._backend.score_grid import (
    DISTINCT_FALSE_ALARM,
    min_distinct_perturbed,
    off_grid,
)
from ._backend.top_label import scan_top_label, top_label_task
from ._params import check_param

__all__ = [
    "CalibrationData",
    "check_cv_splits",
    "check_calibration_inputs",
    "binary_tasks",
    "check_probability_matrix",
    "check_sample_weight",
    "default_pos_label",
]

# Probabilities slightly outside [0, 1] (float round-off in a model's softmax)
# are clipped; anything further out is an error.
PROBA_TOL = 1e-8
# Rows of a probability matrix must sum to one within this tolerance; float32
# softmax outputs over a few hundred classes drift by ~1e-6.
ROW_SUM_TOL = 1e-5


def proba_tolerances(y_proba, n_classes):
    """``(value_tol, sum_tol)`` for probabilities given as ``y_proba``.

    ``PROBA_TOL`` and ``ROW_SUM_TOL``, widened to the precision of a
    low-precision input: one machine epsilon of its dtype for a value, and
    ``n_classes`` of them for a row sum, which bounds the rounding of a
    softmax computed and stored in that precision (float16 rows of 10
    classes: off by up to 4.9e-4 measured, tolerance 9.8e-3).
    """
    try:
        dtype = np.dtype(getattr(y_proba, "dtype", None))
    except TypeError:  # not a numpy dtype (a tensor's, say)
        return PROBA_TOL, ROW_SUM_TOL
    if dtype.kind != "f":
        return PROBA_TOL, ROW_SUM_TOL
    eps = float(np.finfo(dtype).eps)
    return max(PROBA_TOL, eps), max(ROW_SUM_TOL, n_classes * eps)


@dataclass(frozen=True)
class CalibrationData:
    """Canonical form of a calibration problem.

    Attributes
    ----------
    kind : {"binary", "multiclass"}
    classes : ndarray of shape (n_classes,)
        Sorted class labels (or ``labels`` as given by the user).
    y : ndarray of shape (n_samples,)
        Binary: float64 indicator of the positive class. Multiclass: int64
        index into ``classes``.
    proba : ndarray
        Binary: float64 array of shape (n_samples,), probability of the
        positive class. Multiclass: float64 array of shape
        (n_samples, n_classes) whose rows sum to one.
    sample_weight : ndarray of shape (n_samples,) or None
        The checked weights, or None when none were given.
    pos_label : object or None
        The positive label (binary only).
    weight : ndarray of shape (n_samples,)
        Non-negative float64 weights with positive sum: ``sample_weight``,
        or ones (made on first use: an unweighted statistic that never reads
        them does not pay for them).
    unit_weight : bool
        No weights were given (all weights are 1).
    top_label : tuple of two ndarrays or None
        ``(correct, conf)`` of the top-label reduction when it was made
        while the probabilities were checked (``top_label=True``).
    """

    kind: str
    classes: np.ndarray
    y: np.ndarray
    proba: np.ndarray
    sample_weight: np.ndarray | None
    pos_label: object = None
    top_label: tuple | None = None

    @functools.cached_property
    def weight(self):
        if self.sample_weight is None:
            return np.ones(self.y.shape[0], dtype=np.float64)
        return self.sample_weight

    @property
    def unit_weight(self):
        return self.sample_weight is None

    @property
    def n_samples(self):
        return self.y.shape[0]

    def one_hot(self):
        """Labels as a float64 indicator matrix matching :meth:`proba_matrix`."""
        if self.kind == "binary":
            return np.column_stack([1.0 - self.y, self.y])
        onehot = np.zeros(self.proba.shape, dtype=np.float64)
        onehot[np.arange(self.y.shape[0]), self.y] = 1.0
        return onehot

    def proba_matrix(self):
        """Probabilities as an (n_samples, n_classes) matrix; binary gives (1-s, s)."""
        if self.kind == "binary":
            return np.column_stack([1.0 - self.proba, self.proba])
        return self.proba


def _is_pandas_like(x):
    return (
        hasattr(x, "iloc") or hasattr(x, "to_numpy") and not isinstance(x, np.ndarray)
    )


def _pandas_na():
    """``pandas.NA`` if pandas is already imported (data from it may hold it)."""
    pd = sys.modules.get("pandas")
    return getattr(pd, "NA", None) if pd is not None else None


def _check_y_true(y_true, name="y_true", *, finite=True):
    if y_true is None:
        raise ValueError(f"{name} must not be None.")
    if _is_pandas_like(y_true):
        y_true = y_true.to_numpy()
    y_true = np.asarray(y_true)
    if y_true.dtype.kind == "c":
        # scikit-learn's column_or_1d would print the whole array
        raise ValueError(_COMPLEX.format(name))
    if y_true.ndim == 2 and y_true.shape[1] == 1:
        y_true = y_true[:, 0]
    if y_true.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of labels, got an array of shape "
            f"{y_true.shape}."
        )
    y_true = _column_or_1d(y_true)
    if y_true.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is required.")
    if y_true.dtype.kind == "f" and finite:
        # One sum is finite exactly when every element is, barring overflow,
        # which the element-wise check then clears.
        with np.errstate(over="ignore", invalid="ignore"):
            finite = np.isfinite(y_true.sum())
        if not finite and not np.all(np.isfinite(y_true)):
            raise ValueError(f"{name} contains NaN or infinity.")
    elif y_true.dtype.kind == "O":
        na = _pandas_na()
        if any(
            v is None
            or (v is na and na is not None)
            or (isinstance(v, float) and not np.isfinite(v))
            for v in y_true
        ):
            raise ValueError(f"{name} contains None, NA or NaN.")
    return y_true


def check_target(y, n_samples, *, name="y"):
    """Labels ``y`` of ``n_samples`` rows of ``X`` (a display's ``from_estimator``),
    checked before the model is asked for its probabilities."""
    try:
        y = _check_y_true(y, name)
    except TypeError as exc:
        raise TypeError(f"{name} must be an array-like of labels; {exc}") from None
    if y.shape[0] != n_samples:
        raise ValueError(
            f"X and {name} have inconsistent numbers of samples: {n_samples} and "
            f"{y.shape[0]}."
        )
    return y


def check_probability_array(y_proba, *, name="y_proba", allow_1d=True, scan=True):
    """Validate probabilities: finite, in [0, 1] (tolerance then clip), rows sum to 1.

    Returns float64 scores: a read-only view of the caller's 2-D array when it
    needs no conversion, never a writable view of the caller's data.
    ``scan=False`` checks the type and shape only and returns the float64
    array: the caller checks the values later (:func:`_checked_values`).
    """
    if y_proba is None:
        raise ValueError(f"{name} must not be None.")
    try:
        # NaN and infinity are found by the range check below, which reads
        # every value anyway (both propagate into the extremes).
        arr = _float_array(y_proba, name, finite=False)
    except ValueError as exc:
        msg = str(exc)
        if name not in msg:
            msg = f"{name}: {msg}"
        raise ValueError(msg) from None
    except TypeError as exc:
        msg = str(exc)
        if name not in msg:
            msg = f"{name} must be numeric probabilities: {msg}"
        raise TypeError(msg) from None
    if arr.ndim == 2 and arr.shape[1] == 1 and allow_1d:
        arr = arr[:, 0]
    if arr.ndim == 1 and not allow_1d:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_classes), got a "
            "1-D array."
        )
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D or 2-D, got {arr.ndim} dimensions.")
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is required.")
    if not scan:
        return arr
    wide = arr.ndim == 2 and arr.shape[1] >= 2
    return _checked_values(arr, y_proba, name, _scan_probabilities(arr, wide))


def _checked_values(arr, y_proba, name, scan):
    """The value checks of :func:`check_probability_array` on ``arr`` (the
    float64 form of ``y_proba``), from its extremes ``scan = (lo, hi,
    (sum_lo, sum_hi))`` (the row sums only for a matrix)."""
    lo, hi, sums = scan
    wide = arr.ndim == 2 and arr.shape[1] >= 2
    value_tol, sum_tol = proba_tolerances(y_proba, arr.shape[-1] if wide else 2)
    if not (lo >= -value_tol and hi <= 1 + value_tol):
        _check_finite(arr, name)
        raise ValueError(
            f"{name} must contain probabilities in [0, 1]; found values in "
            f"[{lo:.6g}, {hi:.6g}]."
        )
    if lo < 0 or hi > 1:
        arr = np.clip(arr, 0.0, 1.0)  # a new array: the caller's is never written
        if wide:
            sums = _scan_probabilities(arr, wide)[2]
    elif arr.ndim == 2 and np.may_share_memory(arr, y_proba):
        # 1-D scores are only ever read downstream and may stay a view (memory
        # at 1e8 rows); matrices become a read-only view, so that no later
        # step can write through to the caller's array (a copy of n x K
        # doubles costs more than all the checks).
        arr = arr.view()
        arr.flags.writeable = False
    if arr.ndim == 2:
        if arr.shape[1] < 2:
            raise ValueError(
                f"{name} must have at least 2 columns, got {arr.shape[1]}."
            )
        if not (sums[1] - 1.0 <= sum_tol and 1.0 - sums[0] <= sum_tol):
            worst = int(np.argmax(np.abs(_row_sums(arr) - 1.0)))
            raise ValueError(
                f"Rows of {name} must sum to 1 (tolerance {sum_tol:g}); "
                f"row {worst} "
                f"sums to {arr[worst].sum():.8g}."
            )
    return arr


# Values per block of :func:`_scan_probabilities`: a block read from memory
# by its first reduction is in the cache (L2/L3) for the others; 2**17
# rather than 2**15 values per block (a megabyte) takes a quarter of the
# numpy calls, 1.5 ms less per 1e6 x 10 matrix.
_SCAN_BLOCK = 1 << 17


def _scan_probabilities(arr, wide):
    """Smallest and largest value of ``arr`` (NaN if it holds one) and, for
    a matrix (``wide``), the smallest and largest row sum, in one read of
    the array by blocks."""
    rows = max(1, _SCAN_BLOCK // (arr.shape[1] if arr.ndim == 2 else 1))
    n = arr.shape[0]
    if wide:
        ones = np.ones(arr.shape[1])
        sums = np.empty(min(n, rows))
    lows, highs, sum_lows, sum_highs = [], [], [], []
    for start in range(0, n, rows):
        block = arr[start : start + rows]
        lows.append(block.min())
        highs.append(block.max())
        if wide:
            # a matrix-vector product: numpy's sum along rows of a few
            # columns costs a call per row (the tolerance dwarfs the
            # rounding either way)
            part = sums[: block.shape[0]]
            np.matmul(block, ones, out=part)
            sum_lows.append(part.min())
            sum_highs.append(part.max())
    # np.min and np.max propagate NaN
    row_sums = (np.min(sum_lows), np.max(sum_highs)) if wide else None
    return np.min(lows), np.max(highs), row_sums


def _row_sums(arr):
    return arr @ np.ones(arr.shape[1])


def check_estimator_proba(proba, estimator, n_samples, *, row_sums=True):
    """Check what a wrapped estimator's ``predict_proba`` returned.

    It must be a probability matrix with one row per sample and one column per
    class of ``estimator.classes_`` (without ``classes_``: one row per sample,
    one or two dimensions), values in [0, 1] and rows summing to one; anything
    else is reported with the estimator's name instead of failing later
    inside numpy, or passing once clipped. ``row_sums=False`` leaves the row
    sums, and NaN or infinity, to a caller that checks them in a pass of its
    own.

    Returns
    -------
    proba : ndarray
        The float64 probabilities (clipped to [0, 1] within the tolerance).
    """
    name = _proba_name(estimator)
    classes = getattr(estimator, "classes_", None)
    shape = np.shape(proba)
    if classes is not None:
        ok, expected = shape == (n_samples, len(classes)), (n_samples, len(classes))
    else:
        ok, expected = len(shape) in (1, 2) and shape[0] == n_samples, (n_samples,)
    if not ok:
        raise ValueError(
            f"{name} returned an array of shape {shape}; expected "
            f"{expected}: one row per sample"
            + (" and one column per class of classes_." if classes is not None else ".")
        )
    name = f"the output of {name}"
    if row_sums:
        return check_probability_array(proba, name=name)
    arr = _float_array(proba, name, finite=False)
    lo, hi, _ = _scan_probabilities(arr, wide=False)
    value_tol, _ = proba_tolerances(proba, arr.shape[-1])
    # NaN and infinity are left to the caller's row check, which names the row.
    if (
        np.isfinite(lo)
        and np.isfinite(hi)
        and not (lo >= -value_tol and hi <= 1 + value_tol)
    ):
        raise ValueError(
            f"{name} must contain probabilities in [0, 1]; found values in "
            f"[{lo:.6g}, {hi:.6g}]."
        )
    return arr


def row_sum_error(proba, estimator, tol=ROW_SUM_TOL):
    """The error for an estimator's probabilities whose rows do not all sum
    to one (within ``tol``) or that hold NaN, naming the worst row."""
    proba = np.asarray(proba, dtype=np.float64)
    dev = np.abs(proba.sum(axis=1) - 1.0)
    worst = int(np.argmax(np.where(np.isnan(dev), np.inf, dev)))
    return ValueError(
        f"Rows of the output of {_proba_name(estimator)} must sum to 1 "
        f"(tolerance {tol:g}) and hold no NaN; row {worst} is "
        f"{np.array2string(proba[worst], threshold=6, precision=8)}."
    )


def _proba_name(estimator):
    # A frozen model is named by the model it wraps.
    inner = getattr(estimator, "estimator", None)
    if type(estimator).__name__ == "FrozenEstimator" and inner is not None:
        estimator = inner
    return f"{type(estimator).__name__}.predict_proba"


def check_probability_matrix(P, *, name="X", n_classes=None):
    """Validate a 2-D probability matrix as given to a recalibrator.

    A 1-D array or a single column is read as the probability of the positive
    class of a binary problem and expanded to two columns ``(1 - p, p)``.
    """
    arr = check_probability_array(P, name=name, allow_1d=True)
    if arr.ndim == 1:
        arr = np.column_stack([1.0 - arr, arr])
    if n_classes is not None and arr.shape[1] != n_classes:
        raise ValueError(
            f"{name} has {arr.shape[1]} columns but {n_classes} were expected "
            "(one probability per class)."
        )
    return arr


def check_sample_weight(
    sample_weight, n_samples, *, name="sample_weight", allow_zero_sum=False
):
    """Return float64 weights: finite, non-negative, positive sum; ones if None.

    ``allow_zero_sum=True`` accepts all-zero weights (one chunk of a stream,
    whose other chunks may carry the weight).
    """
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if isinstance(sample_weight, numbers.Number):
        sample_weight = np.full(n_samples, sample_weight, dtype=np.float64)
    w = _float_array(sample_weight, name, copy=True)
    if w.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {w.shape}.")
    if w.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {w.shape[0]} elements but there are {n_samples} samples."
        )
    if np.any(w < 0):
        raise ValueError(f"{name} must be non-negative; found {w.min():.6g}.")
    with np.errstate(over="ignore"):  # an infinite sum is reported below
        total = w.sum()
    if not total > 0 and not (allow_zero_sum and total == 0):
        raise ValueError(f"{name} must have a positive sum; all weights are zero.")
    if not np.isfinite(total):
        raise ValueError(
            f"{name} sums to infinity in double precision; rescale the weights."
        )
    tiny = np.finfo(np.float64).tiny
    if np.any((w > 0) & (w < tiny)):
        raise ValueError(
            f"{name} has subnormal values (below {tiny:.3g}), which lose their "
            "precision in every sum; rescale the weights."
        )
    return w


def check_groups(groups, n_samples):
    """Group labels as an array of shape (n_samples,), their sorted distinct
    values and each row's index into them.

    Any hashable, mutually comparable labels (numbers, strings, booleans);
    NaN, None and ``pandas.NA`` are refused, as a row of no group would
    silently drop out of every group.
    """
    if _is_pandas_like(groups):
        groups = groups.to_numpy()
    if np.ndim(groups) != 1:
        raise ValueError(
            "groups must be a 1-D array-like of shape (n_samples,) with the group "
            f"of each sample; got {'a scalar' if np.ndim(groups) == 0 else 'shape '}"
            f"{'' if np.ndim(groups) == 0 else np.shape(groups)}."
        )
    groups = np.asarray(groups)
    if groups.shape[0] != n_samples:
        raise ValueError(
            f"groups has {groups.shape[0]} elements but there are {n_samples} samples."
        )
    if groups.dtype.kind == "f" and np.any(np.isnan(groups)):
        raise ValueError("groups contains NaN; every sample needs a group.")
    if groups.dtype.kind == "O":
        na = _pandas_na()
        if any(
            v is None
            or (v is na and na is not None)
            or (isinstance(v, float) and v != v)
            for v in groups
        ):
            raise ValueError(
                "groups contains None, NA or NaN; every sample needs a group."
            )
    try:
        names, index = np.unique(groups, return_inverse=True)
    except TypeError:
        raise TypeError(
            "groups mixes label types that cannot be compared; use one type."
        ) from None
    return groups, names, index.reshape(-1)


def _unique_labels(y_true, summary=None):
    """``np.unique`` with a sort-free path for numeric two-class labels.

    ``summary`` is :func:`_label_summary` of ``y_true`` if the caller has it.
    """
    if y_true.dtype.kind in "biuf":
        lo, hi, two = _label_summary(y_true) if summary is None else summary
        if lo == hi:
            return np.array([lo], dtype=y_true.dtype)
        if two:
            return np.array([lo, hi], dtype=y_true.dtype)
        if _dense_int_labels(y_true, lo, hi):
            # labels from 0 need no shifted copy to be counted
            shifted = (
                y_true
                if lo == 0 and np.can_cast(y_true.dtype, np.intp)
                else np.subtract(y_true, int(lo), dtype=np.int64)
            )
            counts = np.bincount(shifted)
            return (np.flatnonzero(counts) + lo).astype(y_true.dtype)
    return np.unique(y_true)


# Labels per step of :func:`_label_summary`: a step's temporaries stay in the
# cache, so the labels are read from memory once.
_LABEL_CHUNK = 1 << 15


def _label_summary(y_true):
    """``(min, max, only_two)`` of numeric labels, ``only_two`` saying that
    every label is the min or the max, in one read by chunks (NaN propagates
    into the extremes).

    Each chunk's extremes are labels and each chunk is checked to hold only
    its own two: the labels are two values exactly when the chunks' extremes
    are two values.
    """
    n = y_true.shape[0]
    size = min(n, _LABEL_CHUNK)
    eq_lo, eq_hi = np.empty(size, dtype=bool), np.empty(size, dtype=bool)
    lows, highs, two = [], [], True
    for start in range(0, n, _LABEL_CHUNK):
        part = y_true[start : start + _LABEL_CHUNK]
        k = part.shape[0]
        lo, hi = part.min(), part.max()
        lows.append(lo)
        highs.append(hi)
        if two:
            a, b = eq_lo[:k], eq_hi[:k]
            np.equal(part, lo, out=a)
            np.equal(part, hi, out=b)
            np.logical_or(a, b, out=a)
            two = bool(a.all())
    lows, highs = np.array(lows), np.array(highs)
    lo, hi = lows.min(), highs.max()
    if two:
        seen = np.concatenate([lows, highs])
        two = bool(np.all((seen == lo) | (seen == hi)))
    return lo, hi, two


def _indicator(y_true, pos_label, classes):
    """``(y_true == pos_label)`` as float64 (never the caller's writable array).

    Numeric labels in {0, 1} with 1 positive are their own indicator: their
    float64 values (a read-only view of float64 labels, which makes no copy;
    a label -0.0 then stays -0.0, which no sum or product of the numerics
    tells from 0.0).
    """
    if (
        y_true.dtype.kind in "biuf"
        and not isinstance(pos_label, (str, bytes))
        and pos_label == 1
        and set(classes.tolist()) <= {0, 1}
    ):
        if y_true.dtype != np.float64:
            return y_true.astype(np.float64)
        y = y_true.view()
        y.flags.writeable = False
        return y
    return _label_equal(y_true, pos_label).astype(np.float64)


def _dense_int_labels(y_true, lo, hi):
    """Integer labels of a range small enough for a table indexed by label."""
    if y_true.dtype.kind not in "iu" or not -(2**62) < int(lo) <= int(hi) < 2**62:
        return False
    return int(hi) - int(lo) <= max(1 << 16, y_true.shape[0])


def _class_index(classes, y_true):
    """``np.searchsorted(classes, y_true)`` for labels all in ``classes``
    (sorted): a table lookup for integer labels of a small range."""
    if y_true.dtype.kind in "iu" and classes.dtype.kind in "iu":
        lo, hi = int(classes[0]), int(classes[-1])
        if lo == 0 and hi == classes.shape[0] - 1 and y_true.dtype == np.int64:
            # classes 0, 1, ..., K - 1: the labels are their own indices (a
            # read-only view: the caller's array is never written)
            index = y_true.view()
            index.flags.writeable = False
            return index
        if _dense_int_labels(y_true, lo, hi):
            table = np.zeros(hi - lo + 1, dtype=np.int64)
            table[classes.astype(np.int64) - lo] = np.arange(classes.shape[0])
            return table[np.subtract(y_true, lo, dtype=np.int64)]
    return np.searchsorted(classes, y_true)


def _resolve_classes(y_true, labels, summary=None):
    try:
        present = _unique_labels(y_true, summary)
    except TypeError:  # mixed types, e.g. ["a", 1]
        raise TypeError(
            "y_true mixes label types that cannot be compared; use one type."
        ) from None
    if labels is None:
        return present
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] == 0:
        raise ValueError(
            "labels must be a non-empty 1-D list of class labels; got "
            f"{labels.tolist()!r}."
        )
    if labels.shape[0] != np.unique(labels).shape[0]:
        raise ValueError("labels must not contain duplicates.")
    try:
        missing = np.setdiff1d(present, labels)
    except TypeError:
        raise TypeError(
            "labels and y_true must contain labels of the same type."
        ) from None
    if missing.size:
        raise ValueError(
            f"y_true contains labels {missing.tolist()} that are not in labels="
            f"{labels.tolist()}."
        )
    return labels


def check_calibration_inputs(
    y_true,
    y_proba,
    *,
    sample_weight=None,
    pos_label=None,
    labels=None,
    require_binary=False,
    top_label=False,
):
    """Validate ``(y_true, y_proba, sample_weight, pos_label, labels)``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (numbers, strings or booleans).
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Probability of the positive class (1-D) or of every class (2-D, columns
        in the order of the sorted labels, i.e. ``estimator.classes_``, or
        of ``labels`` when given).
    sample_weight : array-like of shape (n_samples,), default=None
    pos_label : int, float, bool or str, default=None
        Binary problems only. With a 1-D ``y_proba``, ``None`` means 1 for
        labels in {0, 1} or {-1, 1} (or a subset) and ``True`` for booleans;
        any other labels need ``pos_label`` (see :func:`default_pos_label`).
        With a two-column ``y_proba``, ``None`` means the greater label, whose
        column is the last in sorted order (``estimator.classes_[-1]``).
    labels : array-like, default=None
        All class labels in column order, for data (e.g. a CV fold) where some
        class is absent.
    require_binary : bool, default=False
        Raise if the problem has more than two classes.
    top_label : bool, default=False
        The caller will reduce a multiclass problem to its top-label one:
        the reduction is then made while ``y_proba`` is checked (one read of
        the matrix instead of two) and kept on the result, whose checks of
        the values come after those of the labels.

    Returns
    -------
    CalibrationData
    """
    check_param("pos_label", pos_label)
    y_true = _check_y_true(y_true, finite=False)
    # the extremes and the two-label test of numeric labels in one read; NaN
    # and infinity are seen in the extremes
    summary = None
    if y_true.dtype.kind in "biuf":
        summary = _label_summary(y_true)
        if y_true.dtype.kind == "f" and not np.isfinite([summary[0], summary[1]]).all():
            raise ValueError("y_true contains NaN or infinity.")
    proba = check_probability_array(y_proba, name="y_proba", scan=not top_label)
    if top_label and not (proba.ndim == 2 and proba.shape[1] > 2):
        # not a multiclass matrix: checked now, as without top_label
        wide = proba.ndim == 2 and proba.shape[1] >= 2
        proba = _checked_values(
            proba, y_proba, "y_proba", _scan_probabilities(proba, wide)
        )
        top_label = False
    n = y_true.shape[0]
    if proba.shape[0] != n:
        raise ValueError(
            f"y_true and y_proba have inconsistent numbers of samples: {n} and "
            f"{proba.shape[0]}."
        )
    weight = None if sample_weight is None else check_sample_weight(sample_weight, n)
    classes = _resolve_classes(y_true, labels, summary)

    if proba.ndim == 2 and proba.shape[1] > 2:
        if require_binary:
            raise ValueError(
                f"This function needs a binary problem, but y_proba has "
                f"{proba.shape[1]} columns."
            )
        if pos_label is not None:
            raise ValueError(
                "pos_label is only meaningful for binary problems; y_proba has "
                f"{proba.shape[1]} columns."
            )
        if classes.shape[0] != proba.shape[1]:
            source = (
                "y_true has {} distinct labels; pass labels= with all {} class "
                "labels in column order"
                if labels is None
                else "labels has {} entries; it must hold the {} class labels "
                "in column order"
            )
            raise ValueError(
                f"y_proba has {proba.shape[1]} columns but "
                + source.format(classes.shape[0], proba.shape[1])
                + "."
            )
        y_idx = (
            _class_index(classes, y_true)
            if labels is None
            else _index_of(classes, y_true)
        )
        reduced = None
        if top_label:
            proba, reduced = _checked_top_label(proba, y_proba, y_idx)
        warn_hard_labels(proba)
        return CalibrationData(
            "multiclass",
            classes,
            y_idx.astype(np.int64, copy=False),
            proba,
            weight,
            top_label=reduced,
        )

    # Binary problem.
    if classes.shape[0] > 2:
        if labels is not None:
            raise ValueError(
                f"labels has {classes.shape[0]} entries but y_proba describes a "
                "binary problem; pass the two class labels."
            )
        raise ValueError(
            f"y_true has {classes.shape[0]} classes but y_proba describes a binary "
            "problem; pass a 2-D y_proba with one column per class."
        )
    if pos_label is None and proba.ndim == 1:
        pos_label = default_pos_label(classes, from_labels=labels is not None)
    if classes.shape[0] == 1:
        classes = _complete_single_class(classes, pos_label)
    if pos_label is None:
        pos_label = greater_label(classes)
    else:
        if not np.any(_label_equal(classes, pos_label)):
            raise ValueError(
                f"pos_label={pos_label!r} is not a valid label; labels are "
                f"{classes.tolist()}."
            )
        pos_label = classes[np.flatnonzero(_label_equal(classes, pos_label))[0]]
    if proba.ndim == 2:
        # Columns follow ``classes``; the positive one is where pos_label sits.
        col = int(np.flatnonzero(_label_equal(classes, pos_label))[0])
        scores = np.ascontiguousarray(proba[:, col])
    else:
        scores = proba
    y = _indicator(y_true, pos_label, classes)
    warn_hard_labels(scores)
    return CalibrationData("binary", classes, y, scores, weight, pos_label)


def _checked_top_label(arr, y_proba, y_idx):
    """Check the values of the probability matrix ``arr`` (the float64 form
    of ``y_proba``) and reduce it to its top-label problem in the same read:
    ``(checked matrix, (correct, conf))``."""
    correct, conf, lo, hi, sum_lo, sum_hi = scan_top_label(
        arr, y_idx, tol=proba_tolerances(y_proba, arr.shape[1])
    )
    checked = _checked_values(arr, y_proba, "y_proba", (lo, hi, (sum_lo, sum_hi)))
    if not np.may_share_memory(checked, arr):
        # values just outside [0, 1] were clipped: reduce the clipped ones
        correct, conf = top_label_task(checked, y_idx)
    return checked, (correct, conf)


def default_pos_label(classes, *, from_labels=False):
    """The positive class of a 1-D ``y_proba`` given without ``pos_label``.

    scikit-learn's rule (``brier_score_loss``, ``calibration_curve``): labels
    in {0, 1} or {-1, 1}, or a subset of one of them, or booleans, make 1
    (``True``) positive. For any other labels the probability of the positive
    class does not say which class it is about: guessing (e.g. the greater
    label of ``["churn", "stay"]``) would silently invert the score, so it is
    an error asking for ``pos_label``.

    Parameters
    ----------
    classes : ndarray
        Sorted distinct labels of ``y_true`` (or the ``labels`` given).
    from_labels : bool, default=False
        ``classes`` are the user's ``labels=`` (for the message).

    Returns
    -------
    pos_label : object
        The element of ``classes`` equal to 1, or ``1`` (of the labels' type)
        when only the negative label is present.
    """
    kind = classes.dtype.kind
    if kind in "biuf" and 0 < classes.shape[0] <= 2:
        values = set(classes.tolist())
        if values <= {0, 1} or values <= {-1, 1}:
            return classes.dtype.type(1)
    shown = ", ".join(repr(c) for c in classes[:10].tolist())
    if classes.shape[0] > 10:
        shown += ", ..."
    source = "labels" if from_labels else "y_true"
    raise ValueError(
        f"{source} takes values in {{{shown}}} and pos_label is not specified: "
        "a 1-D y_proba is the probability of the positive class, so pass "
        "pos_label= (the label it is the probability of), or use labels in "
        "{0, 1}, {-1, 1} or booleans."
    )


def greater_label(classes):
    """The default positive class: the greater label, wherever ``labels=``
    put it among the columns."""
    return classes[np.argsort(classes, kind="stable")[-1]]


def check_same_label_kind(seen, classes, *, name="y_true"):
    """Refuse text labels after numeric ones (or the reverse) in one stream:
    numpy would turn the numbers into strings, and 1 and "1" would merge."""
    if seen.shape[0] and (seen.dtype.kind in "USO") != (classes.dtype.kind in "USO"):
        raise TypeError(
            f"{name} labels {classes.tolist()} are not of the type of the "
            f"labels seen so far {seen.tolist()}."
        )


def _label_equal(values, label):
    values = np.asarray(values)
    if values.dtype.kind in "US" or values.dtype.kind == "O":
        return np.array([v == label for v in values], dtype=bool)
    try:
        return values == label
    except Exception:  # pragma: no cover - exotic label types
        return np.array([v == label for v in values], dtype=bool)


def _index_of(classes, y_true):
    order = np.argsort(classes, kind="stable")
    pos = np.searchsorted(classes[order], y_true)
    return order[pos]


def _complete_single_class(classes, pos_label):
    """A sample with one label: binary only if the other label can be inferred."""
    only = classes[0]
    if pos_label is not None and not np.all(_label_equal(classes, pos_label)):
        # pos_label is the absent class: the two labels are known.
        try:
            return np.asarray(
                sorted([only.item() if hasattr(only, "item") else only, pos_label])
            )
        except TypeError:
            raise TypeError(
                f"pos_label={pos_label!r} cannot be compared with the labels of y_true."
            ) from None
    if classes.dtype.kind in "biuf" and only in (0, 1, -1):
        other = 1 if only in (0, -1) else 0
        return np.array(sorted([only, other]), dtype=classes.dtype)
    if classes.dtype.kind == "b":
        return np.array([False, True])
    raise ValueError(
        f"y_true contains a single class ({only!r}); pass labels= with both class "
        "labels, or pos_label=, so that the positive class is defined."
    )


def binary_tasks(data, multi_class, *, unit_as_none=False):
    """Reduce a problem to a list of binary ``(y, s, w)`` calibration problems.

    Binary data gives one task whatever ``multi_class`` is. Multiclass data gives
    one task for ``"top-label"`` (confidence vs correctness) and one task per
    class for ``"classwise"`` (one-vs-rest), to be averaged by the caller.
    With ``unit_as_none=True`` the weights ``w`` are None when none were
    given (for a caller that takes unit weights without an array of ones).
    """
    w = None if unit_as_none and data.unit_weight else data.weight
    if data.kind == "binary":
        return [(data.y, data.proba, w)]
    P = data.proba
    if multi_class == "top-label":
        if data.top_label is not None:
            return [(*data.top_label, w)]
        correct, conf = top_label_task(P, data.y)
        return [(correct, conf, w)]
    if multi_class == "classwise":
        return [
            (
                (data.y == k).astype(np.float64),
                np.ascontiguousarray(P[:, k]),
                w,
            )
            for k in range(P.shape[1])
        ]
    raise ValueError(
        f"multi_class={multi_class!r} does not reduce to binary problems; use "
        "'top-label' or 'classwise'."
    )


def check_perturbed_scores(s, method, name="y_proba"):
    """Refuse scores that the sech perturbation cannot have produced.

    Perturbed scores are rounded to the grid ``k / 2**24``; a bound that rests
    on the smoothness the perturbation creates is false for other scores.
    Being on the grid is necessary, not sufficient: unperturbed scores can
    happen to lie on it (see :func:`check_perturbed_spread`).
    """
    bad = off_grid(s)
    if bad >= 0:
        raise ValueError(
            f"{name} holds scores that were not perturbed (row {bad}: "
            f"{float(np.asarray(s)[bad])!r} is not on the perturbation grid "
            f"k / 2**24). method={method!r} certifies only scores perturbed by "
            "the sech kernel: perturb them with skcalib.perturb_proba or "
            "PerturbedClassifier, or use method='tv'. (Being on the grid is "
            "necessary, not sufficient: the bound is false for unperturbed "
            "scores that happen to lie on it.)"
        )


def check_perturbed_spread(s_sorted, scale, method, name="y_proba"):
    """Refuse grid scores with too few distinct values to have been perturbed.

    Scores perturbed at ``scale`` spread over many grid points whatever their
    base scores; :func:`~skcalib._backend.score_grid.min_distinct_perturbed`
    gives a count that genuinely perturbed scores reach except with
    probability ``DISTINCT_FALSE_ALARM`` (1e-9). Fewer distinct values (e.g.
    two atoms on the grid) mean unperturbed scores. ``s_sorted`` holds the
    scores in sorted order.
    """
    n = s_sorted.shape[0]
    if n < 2:
        return
    n_distinct = 1 + int(np.count_nonzero(s_sorted[1:] != s_sorted[:-1]))
    need = min_distinct_perturbed(n, scale)
    if n_distinct < need:
        raise ValueError(
            f"{name} has only {n_distinct} distinct values among {n} scores; "
            f"scores perturbed by the sech kernel of scale {scale:g} "
            f"(perturbation_scale) take at least {int(np.ceil(need))} distinct "
            f"values except with probability {DISTINCT_FALSE_ALARM:g}, whatever "
            "the model. These scores lie on the perturbation grid k / 2**24 but "
            "were not perturbed at this scale (being on the grid is necessary, "
            f"not sufficient), so method={method!r} cannot certify them: perturb "
            "them with skcalib.perturb_proba or PerturbedClassifier at "
            "perturbation_scale, or use method='tv'."
        )


def check_label_chunk(y_true):
    """Labels of one chunk of a streamed binary problem, before the classes are known.

    A chunk may hold one or both classes; which one is positive is decided when
    all chunks have been seen. Boolean, integer and float labels take a fast
    path (no sort), so streaming stays cheap.

    Returns
    -------
    classes : ndarray of shape (1,) or (2,)
        Sorted distinct labels of the chunk.
    index : ndarray of shape (n_samples,), dtype uint8
        Position of each label in ``classes`` (0 or 1); one byte per sample
        keeps large chunks cheap.
    """
    y_true = _check_y_true(y_true)
    kind = y_true.dtype.kind
    if kind == "b":
        index = y_true.view(np.uint8)
        has_true = bool(index.any())
        has_false = not bool(index.all())
        if has_true and has_false:
            return np.array([False, True]), index
        return np.array([has_true]), np.zeros(y_true.shape[0], dtype=np.uint8)
    if kind in "iuf":
        lo, hi = y_true.min(), y_true.max()
        if lo == hi:
            return np.array([lo]), np.zeros(y_true.shape[0], dtype=np.uint8)
        top = y_true == hi
        n_top = int(np.count_nonzero(top))
        if n_top + int(np.count_nonzero(y_true == lo)) == y_true.shape[0]:
            return np.array([lo, hi]), top.view(np.uint8)
    try:
        classes, index = np.unique(y_true, return_inverse=True)
    except TypeError as exc:  # mixed types in y_true, e.g. ["a", 1]
        raise TypeError(f"y_true labels cannot be sorted: {exc}") from None
    if classes.shape[0] > 2:
        raise ValueError(
            f"y_true has {classes.shape[0]} classes but a binary problem is expected; "
            f"found labels {classes[:5].tolist()}."
        )
    return classes, index.astype(np.uint8)


def encode_class_labels(y, *, name="y"):
    """Sorted distinct class labels of ``y`` and the index of each label in them.

    Integer-valued numeric labels spanning a small range take a sort-free path
    (counting), so that millions of labels encode in a few milliseconds.
    Continuous (non-integer float) targets, NaN and mixed types are rejected.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
    index : ndarray of shape (n_samples,), dtype intp
    """
    y = _column_or_1d(np.asarray(y), warn=True)
    if y.shape[0] == 0:
        raise ValueError(f"{name} is empty; at least one sample is required.")
    kind = y.dtype.kind
    if kind == "b":
        y = y.astype(np.intp)
    if kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{name} contains NaN or infinity.")
        if np.any(y != np.round(y)):
            raise ValueError(
                f"Unknown label type: continuous {name}. Class labels are expected, "
                "not a regression target."
            )
    if kind in "biuf":
        lo, hi = y.min(), y.max()
        if hi - lo < 2**20:
            offset = (y - lo).astype(np.intp)
            present = np.flatnonzero(np.bincount(offset))
            lookup = np.zeros(int(hi - lo) + 1, dtype=np.intp)
            lookup[present] = np.arange(present.shape[0])
            classes = (present + lo).astype(y.dtype)
            if kind == "b":
                classes = classes.astype(bool)
            return classes, lookup[offset]
    if kind == "O" and any(v is None for v in y):
        raise ValueError(f"{name} contains None.")
    try:
        classes, index = np.unique(y, return_inverse=True)
    except TypeError:
        raise TypeError(f"{name} mixes label types that cannot be compared.") from None
    return classes, index.astype(np.intp)


def check_cv_splits(cv, X, y, groups=None, **split_params):
    """The ``(train, test)`` index pairs of ``cv`` (as ``sklearn.model_selection
    .check_cv`` with ``classifier=True``), with errors that name ``cv``."""
    from sklearn.model_selection import check_cv

    if groups is not None:
        split_params["groups"] = groups
    try:
        splits = list(check_cv(cv, y, classifier=True).split(X, y, **split_params))
    except (ValueError, TypeError) as exc:
        raise ValueError(f"cv={cv!r} gives no usable splits: {exc}") from None
    if not splits:
        raise ValueError(f"cv={cv!r} gives no splits.")
    return splits


def as_probability_columns(X):
    """A 1-D input (list, array, Series) becomes one column; anything else as is.

    A recalibrator reads one column as the positive-class probability of a
    binary problem; other shapes are left to the feature validation.
    """
    if getattr(X, "ndim", None) == 1 or (
        not hasattr(X, "ndim") and not hasattr(X, "__array__") and np.ndim(X) == 1
    ):
        return np.asarray(X).reshape(-1, 1)
    return X


def check_known_labels(present, classes, *, name="y"):
    """The classes of a fitted model, of which ``present`` must be a subset.

    The model's ``predict_proba`` columns are its classes; new data may lack
    some of them (they keep a column), but a label the model has never seen
    has no column.
    """
    classes = np.asarray(classes)
    unseen = present[~np.isin(present, classes)]
    if unseen.shape[0]:
        raise ValueError(
            f"{name} contains labels the frozen estimator was not fitted on: "
            f"{unseen.tolist()}; its classes_ are {classes.tolist()}."
        )
    return classes


def check_column_labels(y, n_samples, n_columns, *, name="y"):
    """Labels of the rows of a probability matrix with ``n_columns`` columns.

    All labels present: they are the classes, sorted. Fewer labels than columns
    (e.g. a fold where a class is absent) is only understood when the labels
    are column indices, integers in ``[0, n_columns)``.

    Returns
    -------
    classes : ndarray of shape (n_columns,)
    index : ndarray of shape (n_samples,), dtype intp
        Column of each row's label.
    """
    present, index = encode_class_labels(y, name=name)
    if index.shape[0] != n_samples:
        raise ValueError(
            f"X and {name} have inconsistent numbers of samples: {n_samples} and "
            f"{index.shape[0]}."
        )
    if present.shape[0] == n_columns:
        return present, index
    if present.dtype.kind == "O" and all(
        isinstance(v, numbers.Integral) for v in present
    ):
        # integers held as objects (a pandas object column) are integers
        present = present.astype(np.int64)
    if (
        present.shape[0] < n_columns
        and present.dtype.kind in "biuf"
        and present.min() >= 0
        and present.max() < n_columns
    ):
        return np.arange(n_columns), present[index].astype(np.intp)
    raise ValueError(
        f"{name} has {present.shape[0]} distinct labels but X has {n_columns} "
        "probability columns; pass one column per class (in sorted label order), "
        f"or labels that are column indices 0..{n_columns - 1}."
    )


# scikit-learn's validators cost over 100 MB of imports; the two helpers below
# give their result with numpy alone for plain numeric arrays (every chunk of a
# stream) and defer to scikit-learn for everything else (lists, dataframes,
# sparse or object input), so that streaming metrics never import it.


def _column_or_1d(y, *, warn=False):
    """``sklearn.utils.column_or_1d(y, warn=warn)``."""
    if isinstance(y, np.ndarray) and y.ndim == 1 and y.dtype.kind in "biufUS":
        return np.ascontiguousarray(y)
    from sklearn.utils import column_or_1d

    return column_or_1d(y, warn=warn)


def _refuse_text(x, name):
    # numpy and check_array would parse "0.3" as a number: text is a mistake
    # about the column, not a probability. check_array would print a whole
    # complex array in its message.
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is None and not hasattr(x, "__array__"):
        kind = np.asarray(x, dtype=object).dtype.kind
        values = np.asarray(x, dtype=object).ravel()
    elif kind == "O":
        values = np.asarray(x, dtype=object).ravel()
    else:
        values = ()
    if kind in ("U", "S") or any(isinstance(v, (str, bytes)) for v in values):
        raise ValueError(f"{name} must be numeric probabilities, got text values.")
    if kind == "c" or any(isinstance(v, complex) for v in values):
        raise ValueError(_COMPLEX.format(name))


_COMPLEX = "{} holds complex numbers; labels, probabilities and weights are real."


def _float_array(x, name, *, copy=False, finite=True):
    """``sklearn.utils.check_array`` as a float64 array of 1 or 2 dimensions.

    Same as ``check_array(x, ensure_2d=False, dtype=np.float64,
    ensure_min_samples=0, input_name=name, copy=copy)``, including its errors
    for NaN and infinity, except that ``assume_finite`` is not honoured.
    ``finite=False`` leaves NaN and infinity in a numpy array to the caller
    (who then reports them through :func:`_check_finite`).
    """
    if not (
        isinstance(x, np.ndarray)
        and x.dtype.kind in "biuf"
        and (x.ndim == 1 or (x.ndim == 2 and x.shape[1] > 0))
    ):
        from sklearn.utils import check_array

        _refuse_text(x, name)

        try:
            return check_array(
                x,
                ensure_2d=False,
                dtype=np.float64,
                input_name=name,
                ensure_min_samples=0,
                copy=copy,
            )
        except (TypeError, ValueError) as exc:
            # e.g. a dict or an arbitrary object: numpy's message names no
            # argument.
            if name in str(exc):
                raise
            raise type(exc)(f"{name} must be array-like of numbers: {exc}") from None
    arr = np.array(x, dtype=np.float64, copy=True if copy else None)
    if not finite:
        return arr
    # One sum is finite exactly when every element is (barring overflow, which
    # the element-wise checks then clear).
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(arr.sum()):
            return arr
    _check_finite(arr, name)
    return arr


def _check_finite(arr, name):
    """Raise ``check_array``'s error if ``arr`` holds NaN or infinity."""
    if np.isnan(arr).any():
        raise ValueError(f"Input {name} contains NaN.")
    if np.isinf(arr).any():
        raise ValueError(
            f"Input {name} contains infinity or a value too large for {arr.dtype!r}."
        )


# -- hard class predictions passed as probabilities ---------------------------

# True while the probabilities being checked come from a model's
# predict_proba (a scorer, a display's from_estimator): those are
# probabilities by construction, even when they are all 0 or 1.
_FROM_PREDICT_PROBA = contextvars.ContextVar("from_predict_proba", default=False)
# Values read before the whole array is: real probabilities are found in the
# first few almost always, so the common case costs one small read.
_HARD_LABEL_PROBE = 1024


@contextlib.contextmanager
def from_predict_proba():
    """Context in which ``y_proba`` is a model's ``predict_proba`` output,
    which :func:`warn_hard_labels` never takes for hard labels."""
    token = _FROM_PREDICT_PROBA.set(True)
    try:
        yield
    finally:
        _FROM_PREDICT_PROBA.reset(token)


def _only_zeros_and_ones(arr):
    flat = arr.reshape(-1)
    probe = flat[:_HARD_LABEL_PROBE]
    if np.any((probe != 0.0) & (probe != 1.0)):
        return False
    for start in range(_HARD_LABEL_PROBE, flat.shape[0], _SCAN_BLOCK):
        block = flat[start : start + _SCAN_BLOCK]
        if np.any((block != 0.0) & (block != 1.0)):
            return False
    return True


def warn_hard_labels(proba, name="y_proba"):
    """Warn (:class:`~skcalib.exceptions.HardLabelWarning`, at the user's
    line) when the checked probabilities ``proba`` are all 0 or 1: hard
    class predictions passed where probabilities were meant."""
    if _FROM_PREDICT_PROBA.get() or not _only_zeros_and_ones(proba):
        return
    from ._backend.user_warning import warn_user
    from .exceptions import HardLabelWarning

    warn_user(
        f"{name} holds only the values 0 and 1: class predictions (the output of "
        "predict) rather than probabilities (predict_proba)? A calibration measure "
        "of hard predictions says nothing about the model's probabilities. If "
        "these are probabilities, silence this warning with "
        "warnings.filterwarnings('ignore', category=skcalib.exceptions."
        "HardLabelWarning).",
        HardLabelWarning,
    )


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

    from ._backend.array_api.namespace import check_supported

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

    from ._backend.array_api.namespace import from_numpy, to_numpy

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
    from ._backend.array_api.namespace import detach, has_values

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
    from ._backend.array_api.namespace import detach

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
    from ._backend.array_api.namespace import has_values, to_numpy

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
