"""A whole calibration problem: ``y_true``, ``y_proba`` and
``sample_weight`` checked together into :class:`CalibrationData`, and its
binary tasks.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .._backend.top_label import scan_top_label, top_label_task
from .._params import check_param
from .arrays import check_sample_weight
from .labels import (
    _check_y_true,
    _class_index,
    _complete_single_class,
    _index_of,
    _indicator,
    _label_equal,
    _label_summary,
    _resolve_classes,
    default_pos_label,
    greater_label,
)
from .probabilities import (
    _checked_values,
    _scan_probabilities,
    check_probability_array,
    proba_tolerances,
    warn_hard_labels,
)


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
