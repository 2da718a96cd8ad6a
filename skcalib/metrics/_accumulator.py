"""Calibration metrics and certified bounds on data larger than memory.

* :class:`CalibrationAccumulator`: grid sufficient statistics accumulated chunk
  by chunk (``partial_fit``) and merged across partitions (``merge``).
* The same statistics, computed per block and summed on the cluster, give the
  dask-array versions of :func:`smooth_ece`, :func:`smooth_calibration_curve`
  and :func:`binned_calibration_error` (binary problems; pass dask arrays as
  ``y_true`` / ``y_proba`` / ``sample_weight``).
* :class:`StreamingCalibrationBound`: the NW and TV certified bounds from two
  passes over a stream; :func:`calibration_error_bound` uses it for dask
  arrays.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._backend import smece as _sm
from .._backend.binning import binned_error_value, uniform_edges
from .._backend.distributed import (
    N_BIN_SUMS,
    N_SLOTS,
    add_bin_sums,
    add_cell_moments,
    bin_table_from_sums,
    empty_moments,
    grid_bin_table,
    node_statistics,
)
from .._backend.grid import FINE_M
from .._params import (
    MAX_BINS,
    RULES,
    Interval,
    check_binned_options,
    check_estimator_params,
    check_sigma,
    validate_params,
)
from .._validation import (
    binary_tasks,
    check_calibration_inputs,
    check_label_chunk,
    check_probability_array,
    check_same_label_kind,
    check_sample_weight,
    default_pos_label,
    greater_label,
)

__all__ = ["CalibrationAccumulator"]

_L1 = _sm.GridGeometry("l1")


def _not_fitted(message):
    # sklearn's class, so that ``except NotFittedError`` works; imported only
    # here to keep streaming (partial_fit, merge, metrics) free of scikit-learn.
    from sklearn.exceptions import NotFittedError

    return NotFittedError(message)


def _position(classes, label):
    hits = [i for i, c in enumerate(classes) if c == label]
    return hits[0] if hits else None


class CalibrationAccumulator:
    """Calibration metrics of a classifier, accumulated chunk by chunk.

    Keeps, on a fixed grid of ``2**16`` cells of [0, 1], the per-cell moments
    ``sum w``, ``sum w theta``, ``sum w theta^2`` (``theta`` = position inside
    the cell) and the sample count for each class. These are the sufficient
    statistics of every grid-based estimate (SmoothECE, the smooth
    reliability curve, grid-aligned binned errors): they add up over chunks, so
    the accumulator needs about 4 MB whatever the number of samples, and
    accumulators built on separate partitions combine with :meth:`merge`.

    The results equal the in-memory functions run on the concatenated data (up
    to floating-point summation order): :func:`smooth_ece` and
    :func:`smooth_calibration_curve` bin the same fine grid.

    Multiclass chunks (``y_proba`` with three or more columns, the class of
    each column given by ``labels``) reduce to binary problems as in the
    in-memory metrics: one for ``multi_class="top-label"`` (confidence vs
    correctness) and one per class for ``"classwise"``, each with its own grid.

    Parameters
    ----------
    pos_label : int, float, bool or str, default=None
        Positive class. ``None`` follows the in-memory metrics: with 1-D
        ``y_proba`` chunks it means 1 for labels in {0, 1} or {-1, 1} and
        ``True`` for booleans, and any other labels are an error asking for
        ``pos_label`` (raised as soon as a chunk shows them); with two-column
        chunks it means the greater label (the last column).
    labels : array-like of shape (n_classes,), default=None
        The class labels, in the column order of ``y_proba``. Binary: both
        labels (default: sorted); needed when the data may hold a single class
        whose partner cannot be inferred (labels other than 0/1/-1 and
        booleans), or when ``y_proba`` has two columns and ``pos_label`` is
        given before both classes have been seen. Multiclass: required, since
        a chunk need not show every class.
    multi_class : {"top-label", "classwise"}, default="top-label"
        How multiclass chunks reduce to binary problems, as in
        :func:`smooth_ece`; ignored for binary problems.

    Attributes
    ----------
    n_samples_ : int
        Number of samples accumulated.
    classes_ : ndarray of shape (n_seen,)
        Labels seen so far (sorted), or ``labels``.

    See Also
    --------
    smooth_ece, smooth_calibration_curve, binned_calibration_error :
        In-memory versions; they also accept dask arrays.

    Notes
    -----
    ``y_proba`` may be 1-D (probability of the positive class) or have two
    columns in the order of the sorted labels (as ``predict_proba`` returns
    them), or of ``labels`` when given. Each chunk is validated like the input
    of the in-memory functions. Chunks of at least ~1e5 samples amortise the
    fixed per-call cost of adding the grid arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import CalibrationAccumulator, smooth_ece
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=30_000)
    >>> y = rng.uniform(size=30_000) < p ** 2
    >>> acc = CalibrationAccumulator()
    >>> for chunk in np.array_split(np.arange(30_000), 3):
    ...     acc = acc.partial_fit(y[chunk], p[chunk])
    >>> acc.n_samples_
    30000
    >>> bool(abs(acc.smooth_ece() - smooth_ece(y, p)) < 1e-6)
    True
    >>> other = CalibrationAccumulator().partial_fit(y[:100], p[:100])
    >>> acc.merge(other).n_samples_
    30100

    Multiclass chunks need the class of each column:

    >>> P = rng.dirichlet(np.ones(3), size=30_000)
    >>> labels = np.array(["a", "b", "c"])
    >>> y3 = labels[(rng.uniform(size=(30_000, 1)) > P.cumsum(axis=1)).sum(axis=1)]
    >>> acc3 = CalibrationAccumulator(labels=labels, multi_class="classwise")
    >>> for chunk in np.array_split(np.arange(30_000), 3):
    ...     acc3 = acc3.partial_fit(y3[chunk], P[chunk])
    >>> acc3.smooth_ece(return_details=True)
    SmoothECEResult(value=0.01022, metric='l1', multi_class='classwise',
                    n_samples=30000, n_classes=3)
    >>> print(round(smooth_ece(y3, P, labels=labels, multi_class="classwise"), 5))
    0.01022
    """

    _parameter_constraints = {
        "pos_label": RULES["pos_label"],
        "labels": RULES["labels"],
        "multi_class": RULES["multi_class"],
    }

    def __init__(self, *, pos_label=None, labels=None, multi_class="top-label"):
        self.pos_label = pos_label
        self.labels = labels
        self.multi_class = multi_class

    def __repr__(self):
        n = getattr(self, "n_samples_", 0)
        return f"CalibrationAccumulator(n_samples={n})"

    # -- accumulation -----------------------------------------------------
    def _empty(self):
        return empty_moments(FINE_M)

    def _add(self, slot, s, w):
        add_cell_moments(self.moments_, slot, s, w)

    def _ensure_state(self):
        if hasattr(self, "moments_"):
            return
        if self.labels is not None:
            labels = np.asarray(self.labels)
            if labels.ndim != 1 or labels.shape[0] != 2 or labels[0] == labels[1]:
                raise ValueError(
                    "labels must hold the two distinct class labels of a binary "
                    f"problem; got {self.labels!r}."
                )
            if self.pos_label is not None and _position(labels, self.pos_label) is None:
                raise ValueError(
                    f"pos_label={self.pos_label!r} is not a valid label; labels are "
                    f"{labels.tolist()}."
                )
            self.classes_ = labels
        else:
            self.classes_ = np.array([])
        self.moments_ = self._empty()
        self.n_samples_ = 0
        self._total_weight = 0.0
        # Whether a chunk gave the positive-class probability only (1-D): the
        # positive label then has to be known without reading the columns.
        self._one_column = False

    def _admit(self, classes, name="y_true"):
        """Slots of ``classes`` in the accumulator; grows and reorders ``classes_``."""
        if self.labels is not None:
            slots = [_position(self.classes_, c) for c in classes]
            if None in slots:
                bad = [c for c, s in zip(classes, slots, strict=True) if s is None]
                raise ValueError(
                    f"{name} contains labels {np.asarray(bad).tolist()} that are "
                    f"not in labels={self.classes_.tolist()}."
                )
            return np.asarray(slots)
        seen = self.classes_
        check_same_label_kind(seen, classes, name=name)
        try:
            union = (
                np.unique(np.concatenate([seen, classes])) if seen.shape[0] else classes
            )
        except TypeError as exc:
            raise TypeError(f"{name} labels cannot be compared: {exc}") from None
        if union.shape[0] > N_SLOTS:
            raise ValueError(
                f"{name} brings the number of classes to {union.shape[0]} "
                f"({union.tolist()}); a binary problem is expected."
            )
        if seen.shape[0] == 1 and union.shape[0] == 2 and union[1] == seen[0]:
            # The new class sorts first: keep slots in sorted-label order.
            self.moments_ = self.moments_[:, ::-1].copy()
        self.classes_ = union
        return np.asarray([_position(union, c) for c in classes])

    def _positive_scores(self, proba):
        if proba.ndim == 1:
            return proba
        if proba.shape[1] != 2:
            raise ValueError(
                f"y_proba has {proba.shape[1]} columns; CalibrationAccumulator handles "
                "binary problems (1-D y_proba or two columns)."
            )
        if self.labels is None and self.pos_label is None:
            return proba[:, 1]  # columns of sorted labels: the greater is last
        if self.classes_.shape[0] < 2:
            raise ValueError(
                "With a 2-column y_proba and pos_label set, pass labels= to "
                "CalibrationAccumulator so that the column of pos_label is known."
            )
        # Columns follow classes_ (labels= order, as in the in-memory metrics).
        pos = greater_label(self.classes_) if self.pos_label is None else self.pos_label
        return proba[:, _position(self.classes_, pos)]

    @validate_params()
    def partial_fit(self, y_true, y_proba, sample_weight=None):
        """Add a chunk of labels and predicted probabilities.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True labels of the chunk.
        y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
            Predicted probability of the positive class, or of each class in
            the order of ``labels``.
        sample_weight : array-like of shape (n_samples,), default=None
            Frequency weights of the chunk.

        Returns
        -------
        CalibrationAccumulator
            The accumulator (``self``), with the chunk added.
        """
        proba = check_probability_array(y_proba, name="y_proba")
        if self._multiclass_chunk(proba):
            return self._partial_fit_tasks(y_true, proba, sample_weight)
        classes, index = check_label_chunk(y_true)
        n = index.shape[0]
        if proba.shape[0] != n:
            raise ValueError(
                f"y_true and y_proba have inconsistent numbers of samples: {n} and "
                f"{proba.shape[0]}."
            )
        w = (
            None
            if sample_weight is None
            else check_sample_weight(sample_weight, n, allow_zero_sum=True)
        )
        self._ensure_state()
        slots = self._admit(classes)
        if proba.ndim == 1 and self.pos_label is None:
            # Labels only accumulate, so labels without a default positive
            # class now have none at the end either.
            default_pos_label(self.classes_, from_labels=self.labels is not None)
            self._one_column = True
        s = self._positive_scores(proba)
        if slots.shape[0] == 1:
            slot = int(slots[0])
        elif slots[0] == 0 and slots[1] == 1:
            slot = index
        else:
            slot = slots[index]
        self._add(slot, s, w)
        self.n_samples_ += n
        self._total_weight += n if w is None else float(w.sum())
        return self

    # -- multiclass: one binary accumulator per reduced problem -------------
    def _multiclass_chunk(self, proba):
        """Whether ``proba`` is a multiclass chunk (raises on a change of kind)."""
        check_estimator_params(self)
        multiclass = proba.ndim == 2 and proba.shape[1] > 2
        started = getattr(self, "n_samples_", 0) > 0 or hasattr(self, "tasks_")
        if started and multiclass != hasattr(self, "tasks_"):
            before = "multiclass" if hasattr(self, "tasks_") else "binary"
            raise ValueError(
                f"y_proba has shape {proba.shape} but the earlier chunks were "
                f"{before}; every chunk must have the same columns."
            )
        return multiclass

    def _task_accumulator(self):
        return CalibrationAccumulator(labels=np.array([0.0, 1.0]), pos_label=1.0)

    def _start_tasks(self, n_classes):
        if self.labels is None:
            raise ValueError(
                f"y_proba has {n_classes} columns: pass labels= (the class of each "
                "column) to CalibrationAccumulator, since a chunk need not show "
                "every class."
            )
        if self.pos_label is not None:
            raise ValueError(
                f"pos_label={self.pos_label!r} applies to binary problems only; "
                f"y_proba has {n_classes} columns."
            )
        n_tasks = 1 if self.multi_class == "top-label" else n_classes
        return [self._task_accumulator() for _ in range(n_tasks)]

    def _partial_fit_tasks(self, y_true, proba, sample_weight):
        tasks = (
            self.tasks_
            if hasattr(self, "tasks_")
            else self._start_tasks(proba.shape[1])
        )
        # Every check before any state changes: a rejected chunk leaves the
        # accumulator as it was.
        data = check_calibration_inputs(y_true, proba, labels=self.labels)
        w = (
            None
            if sample_weight is None
            else check_sample_weight(sample_weight, data.n_samples, allow_zero_sum=True)
        )
        self.tasks_ = tasks
        self.classes_ = data.classes
        for acc, (y, s, _) in zip(
            tasks, binary_tasks(data, self.multi_class), strict=True
        ):
            acc.partial_fit(y, s, sample_weight=w)
        self.n_samples_ = getattr(self, "n_samples_", 0) + data.n_samples
        return self

    def _merge_tasks(self, other):
        if not hasattr(other, "tasks_"):
            if getattr(other, "n_samples_", 0):
                raise ValueError(
                    "Cannot merge a binary accumulator into a multiclass one."
                )
            return self
        if self.multi_class != other.multi_class:
            raise ValueError(
                "Cannot merge accumulators with different multi_class: "
                f"{self.multi_class!r} vs {other.multi_class!r}."
            )
        if not hasattr(self, "tasks_"):
            if getattr(self, "n_samples_", 0):
                raise ValueError(
                    "Cannot merge a multiclass accumulator into a binary one."
                )
            self.tasks_ = [self._task_accumulator() for _ in other.tasks_]
            self.classes_ = other.classes_
            self.n_samples_ = 0
        for mine, theirs in zip(self.tasks_, other.tasks_, strict=True):
            mine.merge(theirs)
        self.n_samples_ += other.n_samples_
        return self

    def merge(self, other):
        """Add the statistics of another accumulator (e.g. of another partition).

        Merging is associative and order-independent: any grouping of the same
        partitions gives the same statistics (up to floating-point summation
        order).

        Parameters
        ----------
        other : CalibrationAccumulator
            Built with the same ``pos_label`` and ``labels``; left unchanged.

        Returns
        -------
        CalibrationAccumulator
            The accumulator (``self``), holding both partitions.
        """
        if type(other) is not type(self):
            raise TypeError(
                f"other must be a {type(self).__name__}, got {type(other).__name__}."
            )
        same_labels = (self.labels is None) == (other.labels is None) and (
            self.labels is None
            or np.array_equal(np.asarray(self.labels), np.asarray(other.labels))
        )
        if not same_labels or self.pos_label != other.pos_label:
            raise ValueError(
                "Cannot merge accumulators with different pos_label or labels: "
                f"({self.pos_label!r}, {self.labels!r}) vs "
                f"({other.pos_label!r}, {other.labels!r})."
            )
        if hasattr(self, "tasks_") or hasattr(other, "tasks_"):
            return self._merge_tasks(other)
        self._ensure_state()
        if not hasattr(other, "moments_") or other.n_samples_ == 0:
            return self
        n_other = other.classes_.shape[0]
        slots = self._admit(other.classes_, name="other")
        self.moments_[:, slots] += other.moments_[:, :n_other]
        self.n_samples_ += other.n_samples_
        self._total_weight += other._total_weight
        self._one_column |= getattr(other, "_one_column", False)
        return self

    # -- portable state ---------------------------------------------------
    def to_bytes(self):
        """The state of the accumulator as portable, versioned bytes.

        The bytes hold the parameters, the classes seen and the moments of
        the occupied grid cells only (compressed), so their size grows with
        the number of distinct cells the scores fall in, not with the number
        of samples. Unlike a pickle they can be stored and shared: later
        versions of skcalib read them, and reading runs no code from them.
        Read more in the :ref:`User Guide <monitoring>`.

        Returns
        -------
        bytes
            The state; read it back with :meth:`from_bytes`.

        See Also
        --------
        from_bytes : The accumulator of the bytes.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.metrics import CalibrationAccumulator
        >>> rng = np.random.default_rng(0)
        >>> p = rng.beta(2, 5, size=10_000)
        >>> acc = CalibrationAccumulator().partial_fit(rng.uniform(size=10_000) < p, p)
        >>> data = acc.to_bytes()
        >>> copy = CalibrationAccumulator.from_bytes(data)
        >>> copy.smooth_ece() == acc.smooth_ece()
        True
        """
        from ._state import StateWriter, encode_labels, encode_scalar

        writer = StateWriter(type(self).__name__)
        header = writer.header
        header["grid"] = FINE_M
        header["params"] = {
            "pos_label": encode_scalar(self.pos_label),
            "labels": encode_labels(self.labels),
            "multi_class": self.multi_class,
        }
        header["n_samples"] = int(getattr(self, "n_samples_", 0))
        if hasattr(self, "tasks_"):
            header["classes"] = encode_labels(self.classes_)
            header["tasks"] = [
                task._write_moments(writer, f"task{i}.")
                for i, task in enumerate(self.tasks_)
            ]
        elif hasattr(self, "moments_"):
            header["binary"] = self._write_moments(writer, "")
        return writer.tobytes()

    def _write_moments(self, writer, prefix):
        from ._state import encode_cells, encode_labels

        moments = self.moments_
        occupied = np.flatnonzero(np.any(moments != 0, axis=(0, 1)))
        # Unit weights: the weight of a cell and its sum of squared weights
        # are its count, kept once as an integer (which compresses far better
        # than its float).
        count_is_weight = bool(
            np.array_equal(moments[3], moments[0])
            and np.array_equal(moments[4], moments[0])
        )
        sums = moments[1:3] if count_is_weight else moments[[0, 1, 2, 4]]
        writer.add_array(prefix + "cells", encode_cells(occupied))
        writer.add_array(prefix + "counts", moments[3][:, occupied].astype(np.int64))
        writer.add_array(prefix + "sums", sums[:, :, occupied])
        return {
            "classes": encode_labels(self.classes_),
            "n_samples": int(self.n_samples_),
            "total_weight": float(self._total_weight),
            "one_column": bool(self._one_column),
            "count_is_weight": count_is_weight,
        }

    @classmethod
    @validate_params()
    def from_bytes(cls, data):
        """The accumulator whose state :meth:`to_bytes` wrote.

        Every field is checked: bytes that are not a state, truncated,
        corrupt, of an unknown format version or with impossible values
        (negative counts, non-finite sums, moments that exceed their
        weights) raise a ``ValueError`` saying what is wrong, before any
        array larger than the bytes declare is allocated.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            The output of :meth:`to_bytes` (of this version or an earlier one).

        Returns
        -------
        accumulator : CalibrationAccumulator
            Equal to the one that wrote ``data``: its results, and those of
            its merges with other accumulators, are the same bit for bit.

        See Also
        --------
        to_bytes : The bytes of an accumulator.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.metrics import CalibrationAccumulator
        >>> rng = np.random.default_rng(0)
        >>> days = []
        >>> for day in range(3):
        ...     p = rng.beta(2, 5, size=5_000)
        ...     y = rng.uniform(size=5_000) < p
        ...     days.append(CalibrationAccumulator().partial_fit(y, p).to_bytes())
        >>> total = CalibrationAccumulator()
        >>> for data in days:
        ...     total = total.merge(CalibrationAccumulator.from_bytes(data))
        >>> total.n_samples_
        15000
        >>> CalibrationAccumulator.from_bytes(b"not a state")
        Traceback (most recent call last):
        ...
        ValueError: data is not a skcalib state: ...
        """
        from ._state import StateReader, decode_labels, decode_scalar

        state = StateReader(data, cls.__name__)
        state.check_grid(FINE_M)
        params = state.get("params", dict)
        multi_class = state.get("multi_class", str, params)
        if multi_class not in ("top-label", "classwise"):
            raise ValueError(f"The state's multi_class {multi_class!r} is unknown.")
        obj = cls(
            pos_label=decode_scalar(params.get("pos_label"), "pos_label"),
            labels=decode_labels(params.get("labels"), "labels"),
            multi_class=multi_class,
        )
        n_samples = state.get("n_samples", int)
        if "tasks" in state.header:
            obj._read_tasks(state, n_samples)
        elif "binary" in state.header:
            obj._read_moments(state, state.get("binary", dict), "", n_samples)
        elif n_samples:
            raise ValueError("The state declares samples but holds no moments.")
        return obj

    def _read_moments(self, state, info, prefix, n_samples):
        from ._state import (
            check_nonnegative,
            check_not_above,
            decode_cells,
            decode_labels,
        )

        count_is_weight = state.get("count_is_weight", bool, info)
        cells = decode_cells(state.array(prefix + "cells"), FINE_M, "cells")
        k = cells.shape[0]
        count = state.array(prefix + "counts", (N_SLOTS, k))
        sums = state.array(prefix + "sums", (2 if count_is_weight else 4, N_SLOTS, k))
        count = count.astype(np.float64)
        if count_is_weight:
            weight, theta, theta2, squares = count, sums[0], sums[1], count
        else:
            weight, theta, theta2, squares = sums
        check_nonnegative(weight, "weights")
        if np.any(count < 0) or count.sum() > 2**53:
            raise ValueError("The state's counts must be non-negative and below 2**53.")
        check_nonnegative(theta, "first moments")
        check_nonnegative(theta2, "second moments")
        check_not_above(theta, weight, "first moments", "weights")
        check_not_above(theta2, theta, "second moments", "first moments")
        check_nonnegative(squares, "sums of squared weights")
        # 0 <= sum w^2 <= (sum w)^2 <= count * sum w^2 (Cauchy-Schwarz)
        check_not_above(squares, weight * weight, "sums of squared weights", "bound")
        check_not_above(weight * weight, count * squares, "weights", "bound")
        if np.any((count == 0) & (weight > 0)):
            raise ValueError("The state has weight in cells that hold no sample.")
        if state.get("n_samples", int, info) != n_samples or count.sum() != n_samples:
            raise ValueError(
                f"The state declares {n_samples} samples but its cells count "
                f"{count.sum():.0f}."
            )
        total = state.get("total_weight", (int, float), info)
        held = float(weight.sum())
        if not (np.isfinite(total) and total >= 0) or abs(total - held) > 1e-9 * max(
            total, held, 1e-300
        ):
            raise ValueError(
                f"The state's total weight {total!r} does not match its cells ({held})."
            )
        classes = decode_labels(state.get("classes", dict, info), "classes")
        self._check_classes(classes, n_samples)
        moments = empty_moments(FINE_M)
        for row, values in enumerate((weight, theta, theta2, count, squares)):
            moments[row][:, cells] = values
        used = np.any(moments != 0, axis=(0, 2))
        if np.any(used[classes.shape[0] :]):
            raise ValueError("The state has moments in a slot of no class.")
        self.moments_ = moments
        self.classes_ = classes
        self.n_samples_ = n_samples
        self._total_weight = float(total)
        self._one_column = state.get("one_column", bool, info)

    def _check_classes(self, classes, n_samples):
        n = classes.shape[0]
        bad = n > N_SLOTS or (n_samples > 0 and n == 0)
        if not bad and self.labels is not None:
            bad = not np.array_equal(classes, np.asarray(self.labels))
        elif not bad and n == 2:
            bad = not classes[0] < classes[1]
        if bad:
            raise ValueError(
                f"The state's classes {classes.tolist()} do not fit its labels "
                f"{self.labels!r} and samples."
            )

    def _read_tasks(self, state, n_samples):
        from ._state import decode_labels

        tasks = state.get("tasks", list)
        labels = None if self.labels is None else np.asarray(self.labels)
        if labels is None or labels.shape[0] < 3 or self.pos_label is not None:
            raise ValueError(
                "The state has multiclass tasks but not the labels of a "
                "multiclass problem."
            )
        want = 1 if self.multi_class == "top-label" else labels.shape[0]
        if len(tasks) != want:
            raise ValueError(
                f"The state has {len(tasks)} tasks; multi_class={self.multi_class!r} "
                f"with {labels.shape[0]} classes has {want}."
            )
        classes = decode_labels(state.get("classes", dict), "classes")
        if not np.array_equal(classes, labels):
            raise ValueError("The state's classes differ from its labels.")
        self.tasks_ = []
        for i, info in enumerate(tasks):
            if not isinstance(info, dict):
                raise ValueError("Each task of the state must be an object.")
            task = self._task_accumulator()
            task._read_moments(state, info, f"task{i}.", n_samples)
            self.tasks_.append(task)
        self.classes_ = classes
        self.n_samples_ = n_samples

    # -- results ----------------------------------------------------------
    def _parts(self):
        """The binary accumulators whose results are combined: ``self``, or
        one per reduced problem of multiclass chunks."""
        if not getattr(self, "n_samples_", 0):
            raise _not_fitted(
                "This CalibrationAccumulator has no data yet; call partial_fit first."
            )
        return getattr(self, "tasks_", [self])

    def _reduction(self):
        """``multi_class`` of the results: "binary" or the reduction used."""
        return self.multi_class if hasattr(self, "tasks_") else "binary"

    def _slots(self):
        """``(pos_slot, neg_slot)`` after resolving the positive class."""
        if not self._total_weight > 0:
            raise ValueError(
                "sample_weight must have a positive sum; all weights are zero."
            )
        seen = self.classes_
        # Stand-in probabilities of the shape the chunks had, so that the
        # positive class is resolved by the rule of the in-memory metrics.
        n = seen.shape[0]
        dummy = np.zeros(n) if self._one_column else np.full((n, 2), 0.5)
        data = check_calibration_inputs(
            seen, dummy, pos_label=self.pos_label, labels=self.labels
        )
        pos = _position(seen, data.pos_label)
        neg_label = [c for c in data.classes if c != data.pos_label][0]
        return pos, _position(seen, neg_label)

    def _statistics(self):
        pos, neg = self._slots()
        return node_statistics(self.moments_, pos, neg)

    def grid_statistics(self):
        """Grid sufficient statistics ``(sum w, sum w*y, sum w*s)`` per grid point.

        Returns
        -------
        ndarray of shape (2**16 + 1, 3) or (n_classes, 2**16 + 1, 3)
            Linearly binned on the grid ``j / 2**16`` (linear binning); one
            table per class for ``multi_class="classwise"``.
        """
        stats = [part._statistics() for part in self._parts()]
        return np.stack(stats) if self._reduction() == "classwise" else stats[0]

    @validate_params()
    def smooth_ece(self, *, sigma=None, return_details=False):
        """SmoothECE of the accumulated data (see :func:`smooth_ece`).

        Parameters
        ----------
        sigma : float in [2**-16, 1], default=None
            Fixed bandwidth; ``None`` uses the self-consistent ``sigma*``.
        return_details : bool, default=False
            Return a :class:`SmoothECEResult` instead of the float.

        Returns
        -------
        float or SmoothECEResult
            The SmoothECE; the mean over classes for
            ``multi_class="classwise"``.
        """
        fits = [self._smece(sigma, part._statistics()) for part in self._parts()]
        value = float(np.mean([v for v, _ in fits]))
        if not return_details:
            return value
        from ._results import SmoothECEResult

        classwise = self._reduction() == "classwise"
        sigmas = np.array([float(sig) for _, sig in fits])
        return SmoothECEResult(
            value=value,
            sigma=sigmas if classwise else float(sigmas[0]),
            metric="l1",
            multi_class=self._reduction(),
            n_samples=int(self.n_samples_),
            class_values=np.array([float(v) for v, _ in fits]) if classwise else None,
            classes=self.classes_ if classwise else None,
        )

    @staticmethod
    def _smece(sigma, stats):
        if sigma is None:
            sig = _sm.solve_sigma(stats, _L1)
            return _sm.self_consistent_value(stats, sig), sig
        sigma = check_sigma(sigma)
        return _sm.smece_at(stats, sigma, _L1), sigma

    @validate_params()
    def calibration_curve(self, *, sigma=None):
        """Smooth reliability curve of the accumulated data.

        Same as :func:`smooth_calibration_curve` without a bootstrap band.

        Parameters
        ----------
        sigma : float in [2**-16, 1], default=None
            Fixed bandwidth; ``None`` uses the SmoothECE bandwidth ``sigma*``.

        Returns
        -------
        SmoothCalibrationCurve or list of SmoothCalibrationCurve
            The curve; a list (one per class, with ``label`` set) for
            ``multi_class="classwise"``.
        """
        from ._results import SmoothCalibrationCurve

        curves = []
        for part in self._parts():
            stats = part._statistics()
            value, sig = self._smece(sigma, stats)
            scores, y_smooth, dens, _ = _sm.smooth_curve(stats, sig, _L1)
            curves.append(
                SmoothCalibrationCurve(
                    scores=scores,
                    y_smooth=y_smooth,
                    density=dens,
                    sigma=sig,
                    smece=value,
                )
            )
        if self._reduction() != "classwise":
            return curves[0]
        for curve, label in zip(curves, self.classes_, strict=True):
            curve.label = label
        return curves

    @validate_params(n_bins=Interval(numbers.Integral, 1, MAX_BINS))
    def binned_calibration_error(
        self, *, n_bins=15, norm="l1", debias=False, root=True, return_details=False
    ):
        """Binned calibration error (uniform bins) of the accumulated data.

        Bins are built from whole grid cells: their edges are the uniform edges
        ``k / n_bins`` moved to the nearest multiple of ``2**-16``, and a
        score on an edge is in the bin below it (the rule of
        :func:`binned_calibration_error` and of scikit-learn's
        ``calibration_curve``). When ``n_bins`` divides ``2**16`` (1, 2, 4,
        ..., 65536) the edges are exact and the result equals
        :func:`binned_calibration_error` with ``strategy="uniform"``.
        Otherwise (e.g. the default 15) it is the binned error with edges
        moved by at most ``2**-17``: only samples that close to an edge can
        fall in a different bin. The edges used are returned with
        ``return_details=True``. Weights are frequencies, as in memory.

        Parameters
        ----------
        n_bins : int, default=15
            Number of bins, from 1 to ``2**16``.
        norm : {"l1", "l2", "max"}, default="l1"
            Norm of the gaps between mean label and mean score over the
            bins: weighted mean absolute, root mean squared or largest.
        debias : bool, default=False
            Only for ``norm="l2"`` (see :func:`binned_calibration_error`).
        root : bool, default=True
            Only for ``norm="l2"``: the root mean squared gap (default) or,
            with ``False``, the mean squared gap.
        return_details : bool, default=False
            Return a :class:`BinnedCalibrationResult` (the value and the bin
            table) instead of the float.

        Returns
        -------
        float or BinnedCalibrationResult
            The binned error; the mean over classes for
            ``multi_class="classwise"``.
        """
        check_binned_options(norm, debias, root)
        tables = [part._bin_table(n_bins) for part in self._parts()]
        values = [binned_error_value(t, norm, debias, not root) for t in tables]
        value = float(np.mean(values))
        if not return_details:
            return value
        from ._results import BinnedCalibrationResult

        classwise = self._reduction() == "classwise"
        return BinnedCalibrationResult.from_tables(
            value,
            tables,
            values if classwise else None,
            self.classes_ if classwise else None,
            norm=norm,
            debias=debias,
            root=root,
            strategy="uniform",
            n_bins=n_bins,
            multi_class=self._reduction(),
            n_samples=self.n_samples_,
        )

    def _bin_table(self, n_bins):
        pos, _ = self._slots()
        return grid_bin_table(self.moments_, pos, n_bins)


class _BinAccumulator(CalibrationAccumulator):
    """Exact per-bin sums for ``n_bins`` uniform bins (any count).

    Bins are assigned exactly as :func:`binned_calibration_error` assigns
    them; the binned metrics of dask arrays use it.
    """

    def __init__(self, *, n_bins, pos_label=None, labels=None):
        super().__init__(pos_label=pos_label, labels=labels)
        self.n_bins = n_bins

    def _empty(self):
        return np.zeros((N_BIN_SUMS, N_SLOTS, self.n_bins))

    def _task_accumulator(self):
        return _BinAccumulator(
            n_bins=self.n_bins, labels=np.array([0.0, 1.0]), pos_label=1.0
        )

    def _add(self, slot, s, w):
        add_bin_sums(self.moments_, slot, s, w)

    def _bin_table(self, n_bins):
        pos, _ = self._slots()
        return bin_table_from_sums(self.moments_, pos, uniform_edges(n_bins))
