"""Numeric arrays from user input: float arrays, weights, groups, splits.

Shared by the parsers of labels and probabilities: text, complex and
non-finite values are refused here, naming the argument.
"""

from __future__ import annotations

import numbers
import sys

import numpy as np


def _is_pandas_like(x):
    return (
        hasattr(x, "iloc") or hasattr(x, "to_numpy") and not isinstance(x, np.ndarray)
    )


def _pandas_na():
    """``pandas.NA`` if pandas is already imported (data from it may hold it)."""
    pd = sys.modules.get("pandas")
    return getattr(pd, "NA", None) if pd is not None else None


# Values per block of :func:`_scan_probabilities`: a block read from memory
# by its first reduction is in the cache (L2/L3) for the others; 2**17
# rather than 2**15 values per block (a megabyte) takes a quarter of the
# numpy calls, 1.5 ms less per 1e6 x 10 matrix.
_SCAN_BLOCK = 1 << 17


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
