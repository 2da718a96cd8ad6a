"""Predicted probabilities: ranges, row sums, a wrapped model's output,
perturbed scores, and hard class predictions passed as probabilities.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from .._backend.score_grid import (
    DISTINCT_FALSE_ALARM,
    min_distinct_perturbed,
    off_grid,
)
from .arrays import _SCAN_BLOCK, _check_finite, _float_array

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
    from .._backend.user_warning import warn_user
    from ..exceptions import HardLabelWarning

    warn_user(
        f"{name} holds only the values 0 and 1: class predictions (the output of "
        "predict) rather than probabilities (predict_proba)? A calibration measure "
        "of hard predictions says nothing about the model's probabilities. If "
        "these are probabilities, silence this warning with "
        "warnings.filterwarnings('ignore', category=skcalib.exceptions."
        "HardLabelWarning).",
        HardLabelWarning,
    )
