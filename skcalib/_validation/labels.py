"""Class labels: the classes of ``y_true``, the positive label, label
chunks of a stream and label columns.
"""

from __future__ import annotations

import numbers

import numpy as np

from .arrays import _COMPLEX, _column_or_1d, _is_pandas_like, _pandas_na


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
