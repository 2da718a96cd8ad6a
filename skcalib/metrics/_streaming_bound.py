"""Certified bounds on streamed data: :class:`StreamingCalibrationBound`, two
passes over a stream with memory that does not grow with the sample."""

from __future__ import annotations

import numbers

import numpy as np

from .._backend.certificate import (
    FOLD_DELTA_PARTS,
    aggregate_folds,
    fold_delta,
    smoother_fold_terms,
    tv_fold_terms,
)
from .._backend.distributed import (
    add_fold_cell_counts,
    add_fold_cell_sums,
    cell_prefix_sums,
    cell_window_influence,
    cell_window_tables,
    keep_smallest,
    merge_moments,
    moments_by_group,
    nw_validation_terms,
    select_window_cells,
    stream_folds,
    stream_priority,
)
from .._backend.grid import FINE_M
from .._backend.tv import fit_tv_surrogate, step_extension
from .._backend.window import NW_HALF_WIDTHS
from .._params import (
    MAX_STREAM_POSITION,
    RULES,
    Interval,
    NoneOr,
    StrOptions,
    check_estimator_params,
    validate_params,
)
from .._validation import (
    check_calibration_inputs,
    check_perturbed_scores,
    check_probability_array,
)
from ._accumulator import _not_fitted, _position
from ._results import CalibrationBound

__all__ = ["StreamingCalibrationBound"]

_STREAM_METHODS = ("nw", "tv")
_MIN_TRAIN = 100
# Position of a chunk's first sample in the stream.
_START = NoneOr(Interval(numbers.Integral, 0, MAX_STREAM_POSITION))


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _plain(x):
    """A parameter as a JSON number (numpy scalars included)."""
    if x is None or isinstance(x, (bool, str)):
        return x
    return int(x) if _is_int(x) else float(x)


def _state_limit():
    from ._state import MAX_DENSE_BYTES

    return MAX_DENSE_BYTES


def _stream_start(start, default):
    """Position of a chunk's first sample: ``start``, or ``default`` if None."""
    return default if start is None else int(start)


class StreamingCalibrationBound:
    """Certified bound on the calibration error, from two passes over a stream.

    The larger-than-memory version of :func:`calibration_error_bound` for the
    ``"nw"`` and ``"tv"`` methods: memory does not grow with the number of
    samples. Each sample goes to fold ``hash(seed, position) mod n_splits``; the
    fold depends on the position in the stream and the seed, never on the data.

    * **Pass 1** (:meth:`partial_fit` on every chunk) collects what the
      surrogate ``η̂`` of each fold needs from its training part (the other
      folds).
    * **Pass 2** (:meth:`partial_validate` on the scores of the same stream, in
      the same order): every held-out sample contributes ``|η̂(s) - s|`` (and
      ``g(s)`` for NW) to running means and variances, which give the empirical
      Bernstein terms. The whole held-out fold is used (no subsample).

    ``method="nw"`` (scores from the sech perturbation of scale
    ``perturbation_scale``, so ``|η'| <= 1/(2h)``, ``|η''| <= 3/(2h²)``): pass 1
    keeps per fold and grid cell (``2**16`` cells) the count, the in-cell
    position moments and the label sum. The surrogate is the box-kernel
    Nadaraya–Watson smoother whose window is ``2 r + 1`` whole cells around the
    query's cell, all training points in it weighted equally: its moments
    ``m1``, ``m2`` and ``ν = 1/sqrt(count)`` are exact functions of the cell
    sums, so ``g`` bounds ``E_{y_T}|η̂ - η|`` as in the in-memory method.
    ``r`` minimises the mean of ``g`` over the training part (at cell
    centres). Pass 2 also counts the held-out scores per cell, which gives the
    label-deviation term of the realised ``η̂``. Fold bound: the same terms as
    in memory, with the whole held-out fold as validation part.

    ``method="tv"`` (``η`` of total variation at most ``variation``): pass 1
    keeps the ``max_train`` samples of smallest hash priority (a random subset
    chosen without looking at the data; all samples if there are fewer). The
    training part of a fold is the kept samples of the other folds; the exact
    TV denoiser (or isotonic regression with ``assume="monotone"``) is fitted
    on it (values averaged over tied scores) and extended by steps. Fold
    bound: ``mean|s - η̂| + BB + TVB + PTB`` with ``|T|`` the number of kept
    training samples.

    With ``δ_f = delta / n_splits``, every fold bound holds on one event of
    probability ``1 - delta`` and :meth:`result` reports the smallest (each
    clipped at 1). Read more in the :ref:`User Guide <certified>`.

    Assumptions: the samples are i.i.d.; the method's assumption on ``η``
    holds; the second pass sees the same samples in the same order (checked by
    count only).

    Parameters
    ----------
    method : {"nw", "tv"}, default="nw"
    perturbation_scale : float, default=None
        Scale ``h`` of the sech perturbation (required for ``"nw"``).
    variation : float, default=1.0
        Bound on the total variation of ``η`` (``"tv"``).
    assume : {None, "monotone"}, default=None
        ``"monotone"`` fits isotonic regression (``"tv"`` with variation 1).
    delta : float, default=0.05
        Failure probability.
    n_splits : int, default=5
        Number of folds, >= 2.
    max_train : int, default=500_000
        Samples kept in memory for the ``"tv"`` fits; at least 100.
    pos_label : int, float, bool or str, default=None
        Positive class, as in :func:`calibration_error_bound`.
    labels : array-like, default=None
        Both class labels (needed when the first chunk holds one class whose
        partner cannot be inferred).
    random_state : int, Generator, RandomState or None, default=None
        Seeds the fold hash (drawn once, at the first chunk).

    Attributes
    ----------
    n_samples_ : int
        Samples seen in pass 1.
    n_validated_ : int
        Samples seen in pass 2.
    window_cells_ : ndarray of shape (n_splits,)
        NW window half-width ``r`` (in cells) of each fold, after pass 1.

    Examples
    --------
    >>> from skcalib.datasets import make_calibration_problem
    >>> from skcalib.metrics import StreamingCalibrationBound
    >>> d = make_calibration_problem(
    ...     60_000, problem="u2", perturbation_scale=2**-4, random_state=0
    ... )
    >>> sb = StreamingCalibrationBound(perturbation_scale=2**-4, random_state=0)
    >>> for i in range(0, 60_000, 20_000):
    ...     sb = sb.partial_fit(d.y_true[i:i + 20_000], d.y_proba[i:i + 20_000])
    >>> for i in range(0, 60_000, 20_000):
    ...     sb = sb.partial_validate(d.y_proba[i:i + 20_000])
    >>> bool(d.calibration_error <= sb.result())
    True
    >>> b = sb.result(return_details=True)
    >>> bool(b.lower <= d.calibration_error <= b.upper)
    True
    """

    def __init__(
        self,
        *,
        method="nw",
        perturbation_scale=None,
        variation=1.0,
        assume=None,
        delta=0.05,
        n_splits=5,
        max_train=500_000,
        pos_label=None,
        labels=None,
        random_state=None,
    ):
        self.method = method
        self.perturbation_scale = perturbation_scale
        self.variation = variation
        self.assume = assume
        self.delta = delta
        self.n_splits = n_splits
        self.max_train = max_train
        self.pos_label = pos_label
        self.labels = labels
        self.random_state = random_state

    _parameter_constraints = {
        "method": StrOptions(*_STREAM_METHODS),
        "perturbation_scale": RULES["perturbation_scale"],
        "variation": RULES["variation"],
        "assume": RULES["assume"],
        "delta": RULES["delta"],
        "n_splits": RULES["n_splits"],
        # Each fold is fitted on the kept samples of the other folds: with
        # fewer than 100 kept, one fold can be left with almost none of them.
        "max_train": Interval(numbers.Integral, _MIN_TRAIN, None),
        "pos_label": RULES["pos_label"],
        "labels": RULES["labels"],
        "random_state": RULES["random_state"],
    }

    def _setup(self):
        from .._params import check_random_generator

        check_estimator_params(self)
        self.n_splits_ = int(self.n_splits)
        if self.method == "nw":
            if self.perturbation_scale is None:
                raise ValueError("method='nw' needs perturbation_scale.")
            self.scale_ = float(self.perturbation_scale)
            self.sums_ = np.zeros((4, self.n_splits_, FINE_M), dtype=np.float64)
        else:
            self.variation_ = float(self.variation)
            if self.assume == "monotone" and self.variation_ != 1.0:
                raise ValueError("assume='monotone' fixes the variation to 1.")
            self.max_train_ = int(self.max_train)
            self.kept_ = (np.empty(0), [np.empty(0), np.empty(0), np.empty(0, int)])
        self.delta_ = float(self.delta)
        rng = check_random_generator(self.random_state)
        self.seed_ = int(rng.integers(0, 2**63))
        self.n_samples_ = 0
        self.n_validated_ = 0

    def _settings(self):
        """Everything that two mergeable partitions must share."""
        return (
            self.seed_,
            self.n_splits_,
            self.method,
            self.delta_,
            self.assume,
            *(getattr(self, a, None) for a in ("scale_", "variation_", "max_train_")),
        )

    @property
    def _lips(self):
        return 1.0 / (2.0 * self.scale_), 3.0 / (2.0 * self.scale_**2)

    def _keep(self, priority, columns):
        """Merge rows into the kept set of smallest priorities (``"tv"``)."""
        kept_p, kept_cols = self.kept_
        self.kept_ = keep_smallest(
            np.concatenate([kept_p, priority]),
            [np.concatenate([a, b]) for a, b in zip(kept_cols, columns, strict=True)],
            self.max_train_,
        )

    @validate_params(start=_START)
    def partial_fit(self, y_true, y_proba, *, start=None):
        """Pass 1: add a chunk of labels and scores.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True labels of the chunk.
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
            Predicted probability of the positive class, or of both classes.
        start : int, default=None
            Position of the chunk's first sample in the whole stream (for
            partitions fitted separately and merged); by default the chunk
            follows the previous ones.

        Returns
        -------
        StreamingCalibrationBound
            The bound (``self``), with the chunk added.
        """
        if not hasattr(self, "seed_"):
            self._setup()
        if hasattr(self, "valid_moments_"):
            raise ValueError(
                "partial_fit is pass 1; it cannot follow partial_validate."
            )
        data = check_calibration_inputs(
            y_true,
            y_proba,
            pos_label=getattr(self, "pos_label_", self.pos_label),
            labels=getattr(self, "classes_", self.labels),
            require_binary=True,
        )
        self.classes_, self.pos_label_ = data.classes, data.pos_label
        n = data.n_samples
        start = _stream_start(start, self.n_samples_)
        fold = stream_folds(start, n, self.seed_, self.n_splits_)
        if self.method == "nw":
            check_perturbed_scores(data.proba, self.method)
            add_fold_cell_sums(self.sums_, fold, data.proba, data.y)
        else:
            self._keep(
                stream_priority(start, n, self.seed_), [data.proba, data.y, fold]
            )
        self.n_samples_ += n
        return self

    def _freeze(self):
        """Fit the surrogate of every fold from the pass-1 state."""
        if not getattr(self, "n_samples_", 0):
            raise _not_fitted("Call partial_fit on the data (pass 1) first.")
        if self.method == "nw":
            lip1, lip2 = self._lips
            total = self.sums_.sum(axis=1)
            cand = np.unique(np.rint(NW_HALF_WIDTHS * FINE_M - 0.5))
            tables, cells = [], []
            for k in range(self.n_splits_):
                prefix = cell_prefix_sums(total - self.sums_[:, k])
                r = select_window_cells(prefix, cand.astype(int), lip1, lip2)
                cells.append(r)
                tables.append(cell_window_tables(prefix, r))
            self.window_cells_ = np.array(cells)
            self.tables_ = tuple(np.stack(t) for t in zip(*tables, strict=True))
            self.valid_cells_ = np.zeros((self.n_splits_, FINE_M))
        else:
            self.fits_ = [self._fit_tv(k) for k in range(self.n_splits_)]
        self.valid_moments_ = np.zeros((2, 3, self.n_splits_))

    def _fit_tv(self, k):
        priority, (s, y, fold) = self.kept_
        train = fold != k
        # Sort by score; ties by priority, which does not depend on the labels.
        order = np.lexsort((priority[train], s[train]))
        s_train, y_train = s[train][order], y[train][order]
        n_train = s_train.shape[0]
        if n_train < 2:
            raise ValueError(f"Fold {k} has fewer than 2 training samples.")
        v, fitted_variation, _ = fit_tv_surrogate(
            s_train,
            y_train,
            fold_delta(self.delta_, self.n_splits_),
            monotone=self.assume == "monotone",
        )
        return s_train, v, fitted_variation

    @validate_params(start=_START)
    def partial_validate(self, y_proba, *, start=None):
        """Pass 2: add the scores of a chunk (same stream, same order).

        Parameters
        ----------
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
            Predicted probabilities of the chunk, as given to
            :meth:`partial_fit`.
        start : int, default=None
            Position of the chunk's first sample in the stream.

        Returns
        -------
        StreamingCalibrationBound
            The bound (``self``), with the chunk's scores added.
        """
        if not hasattr(self, "valid_moments_"):
            self._freeze()
        proba = check_probability_array(y_proba, name="y_proba")
        if proba.ndim == 2:
            if proba.shape[1] != 2:
                raise ValueError(
                    f"y_proba has {proba.shape[1]} columns; a binary problem is "
                    "expected."
                )
            proba = proba[:, _position(self.classes_, self.pos_label_)]
        n = proba.shape[0]
        start = _stream_start(start, self.n_validated_)
        fold = stream_folds(start, n, self.seed_, self.n_splits_)
        if self.method == "nw":
            check_perturbed_scores(proba, self.method)
            values = nw_validation_terms(self.tables_, fold, proba, *self._lips)
            add_fold_cell_counts(self.valid_cells_, fold, proba)
        else:
            err = np.empty(n)
            for k, (s_train, v, _) in enumerate(self.fits_):
                mine = fold == k
                err[mine] = np.abs(
                    proba[mine] - step_extension(s_train, v, proba[mine])
                )
            values = (err, np.zeros(n))
        for i, v in enumerate(values):
            part = moments_by_group(v, fold, self.n_splits_)
            self.valid_moments_[i] = merge_moments(self.valid_moments_[i], part)
        self.n_validated_ += n
        return self

    def merge(self, other):
        """Add another partition's state.

        Both must be in pass 1, or both in pass 2 with surrogates built from
        the same merged pass-1 state.

        Parameters
        ----------
        other : StreamingCalibrationBound
            Built with the same parameters and seed, on another part of the
            stream (``start=`` giving its positions); left unchanged.

        Returns
        -------
        StreamingCalibrationBound
            The bound (``self``), holding both partitions.
        """
        if not isinstance(other, StreamingCalibrationBound):
            raise TypeError(
                "other must be a StreamingCalibrationBound, got "
                f"{type(other).__name__}."
            )
        if not hasattr(self, "seed_"):
            self._setup()
        if not hasattr(other, "seed_"):
            return self
        if self._settings() != other._settings():
            raise ValueError(
                "Cannot merge: the two objects use different seeds, n_splits, "
                "methods or bound parameters (delta, perturbation_scale, "
                "variation, assume, max_train)."
            )
        if not hasattr(other, "classes_"):
            pass
        elif not hasattr(self, "classes_"):
            self.classes_, self.pos_label_ = other.classes_, other.pos_label_
        elif not (
            np.array_equal(self.classes_, other.classes_)
            and self.pos_label_ == other.pos_label_
        ):
            raise ValueError(
                "Cannot merge: the two objects resolved different classes or "
                f"positive labels ({self.classes_.tolist()}, {self.pos_label_!r}) "
                f"vs ({other.classes_.tolist()}, {other.pos_label_!r}); pass "
                "labels= (and pos_label=) so that every partition agrees."
            )
        if hasattr(other, "valid_moments_"):
            if not hasattr(self, "valid_moments_"):
                raise ValueError("Cannot merge pass-2 results into a pass-1 object.")
            for i in range(2):
                self.valid_moments_[i] = merge_moments(
                    self.valid_moments_[i], other.valid_moments_[i]
                )
            if self.method == "nw":
                self.valid_cells_ += other.valid_cells_
            self.n_validated_ += other.n_validated_
            return self
        if hasattr(self, "valid_moments_"):
            raise ValueError("Cannot merge pass-1 state after pass 2 has started.")
        if self.method == "nw":
            self.sums_ += other.sums_
        else:
            self._keep(*other.kept_)
        self.n_samples_ += other.n_samples_
        return self

    # -- portable state ---------------------------------------------------
    def to_bytes(self):
        """The state of the two passes as portable, versioned bytes.

        The bytes hold the parameters, the fold seed, the pass-1 statistics
        (occupied grid cells only for ``"nw"``, the kept samples for
        ``"tv"``) and the pass-2 sums: a partition's state can be stored and
        merged elsewhere, and a later version of skcalib reads it. The
        surrogates are refitted from the pass-1 statistics when the bytes are
        read (the same fits, bit for bit). ``random_state`` is kept when it
        is an int or None; the seed the folds were drawn with is always kept.
        Read more in the :ref:`User Guide <monitoring>`.

        Returns
        -------
        bytes
            The state; read it back with :meth:`from_bytes`.

        See Also
        --------
        from_bytes : The object of the bytes.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.metrics import StreamingCalibrationBound
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=20_000)
        >>> y = rng.uniform(size=20_000) < p
        >>> sb = StreamingCalibrationBound(method="tv", random_state=0)
        >>> sb = sb.partial_fit(y, p).partial_validate(p)
        >>> copy = StreamingCalibrationBound.from_bytes(sb.to_bytes())
        >>> copy.result() == sb.result()
        True
        """
        from ._state import StateWriter, encode_cells, encode_labels, encode_scalar

        writer = StateWriter(type(self).__name__)
        header = writer.header
        header["grid"] = FINE_M
        rs = self.random_state
        header["params"] = {
            "method": self.method,
            "perturbation_scale": _plain(self.perturbation_scale),
            "variation": _plain(self.variation),
            "assume": self.assume,
            "delta": _plain(self.delta),
            "n_splits": _plain(self.n_splits),
            "max_train": _plain(self.max_train),
            "pos_label": encode_scalar(self.pos_label),
            "labels": encode_labels(self.labels),
            "random_state": _plain(rs) if rs is None or _is_int(rs) else None,
        }
        if not hasattr(self, "seed_"):
            return writer.tobytes()
        header["seed"] = int(self.seed_)
        header["n_samples"] = int(self.n_samples_)
        header["n_validated"] = int(self.n_validated_)
        header["pass2"] = hasattr(self, "valid_moments_")
        if hasattr(self, "classes_"):
            header["classes"] = encode_labels(self.classes_)
            header["pos_label_"] = encode_scalar(self.pos_label_)
        if self.method == "nw":
            occupied = np.flatnonzero(self.sums_.any(axis=(0, 1)))
            writer.add_array("sums.cells", encode_cells(occupied))
            writer.add_array("sums", self.sums_[:, :, occupied])
        else:
            priority, (s, y, fold) = self.kept_
            for name, arr in zip(
                ("priority", "scores", "labels", "folds"),
                (priority, s, y, fold),
                strict=True,
            ):
                writer.add_array("kept." + name, arr)
        if header["pass2"]:
            writer.add_array("valid_moments", self.valid_moments_)
            if self.method == "nw":
                cells = self.valid_cells_
                occupied = np.flatnonzero(cells.any(axis=0))
                writer.add_array("valid_cells.cells", encode_cells(occupied))
                writer.add_array("valid_cells", cells[:, occupied].astype(np.int64))
        return writer.tobytes()

    @classmethod
    @validate_params()
    def from_bytes(cls, data):
        """The object whose state :meth:`to_bytes` wrote.

        Every field is checked; bytes that are not such a state, truncated,
        corrupt, of an unknown format version or with impossible values raise
        a ``ValueError`` saying what is wrong.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            The output of :meth:`to_bytes` (of this version or an earlier one).

        Returns
        -------
        bound : StreamingCalibrationBound
            Equal to the object that wrote ``data``: its next passes, merges
            and :meth:`result` are the same bit for bit.

        See Also
        --------
        to_bytes : The bytes of the object.

        Examples
        --------
        >>> from skcalib.metrics import StreamingCalibrationBound
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=20_000)
        >>> y = rng.uniform(size=20_000) < p
        >>> parts = []
        >>> for start in (0, 10_000):
        ...     sb = StreamingCalibrationBound(method="tv", random_state=0)
        ...     sb = sb.partial_fit(y[start:start + 10_000], p[start:start + 10_000],
        ...                         start=start)
        ...     parts.append(sb.to_bytes())
        >>> merged = StreamingCalibrationBound.from_bytes(parts[0])
        >>> merged = merged.merge(StreamingCalibrationBound.from_bytes(parts[1]))
        >>> merged.n_samples_
        20000
        >>> round(merged.partial_validate(p).result(), 3)
        0.222
        """
        from ._state import StateReader, decode_labels, decode_scalar

        state = StateReader(data, cls.__name__)
        state.check_grid(FINE_M)
        params = dict(state.get("params", dict))
        for name in ("method", "perturbation_scale", "variation", "assume", "delta"):
            if name not in params:
                raise ValueError(f"The state lacks the parameter {name!r}.")
        params["pos_label"] = decode_scalar(params.get("pos_label"), "pos_label")
        params["labels"] = decode_labels(params.get("labels"), "labels")
        try:
            obj = cls(**params)
            check_estimator_params(obj)
        except TypeError as exc:
            raise ValueError(f"The state's parameters are invalid: {exc}") from None
        if "seed" in state.header:
            obj._read_state(state)
        return obj

    def _read_state(self, state):
        from ._state import check_int, decode_labels, decode_scalar

        seed = check_int(state.get("seed", int), "seed", 0, 2**63 - 1)
        n_samples = check_int(
            state.get("n_samples", int), "n_samples", 0, MAX_STREAM_POSITION
        )
        n_validated = check_int(
            state.get("n_validated", int), "n_validated", 0, n_samples
        )
        pass2 = state.get("pass2", bool)
        if self.method == "nw" and self.perturbation_scale is None:
            raise ValueError("The state's method 'nw' lacks perturbation_scale.")
        if self.method == "nw" and (
            4 * int(self.n_splits) * FINE_M * 8 > _state_limit()
        ):
            raise ValueError(
                f"The state's n_splits={self.n_splits} needs more memory than a "
                "state may take."
            )
        self.random_state = 0  # _setup draws a seed; the state's replaces it
        self._setup()
        self.random_state = state.header["params"].get("random_state")
        self.seed_ = seed
        if "classes" in state.header:
            classes = decode_labels(state.get("classes", dict), "classes")
            pos = decode_scalar(state.get("pos_label_", dict), "pos_label_")
            if classes.shape[0] > 2 or _position(classes, pos) is None:
                raise ValueError(
                    f"The state's classes {classes.tolist()} do not hold its "
                    f"positive label {pos!r}."
                )
            self.classes_, self.pos_label_ = classes, classes[_position(classes, pos)]
        elif n_samples:
            raise ValueError("The state declares samples but no classes.")
        if self.method == "nw":
            self._read_sums(state, n_samples)
        else:
            self._read_kept(state, n_samples)
        self.n_samples_ = n_samples
        if not pass2:
            if n_validated:
                raise ValueError("The state counts pass-2 samples before pass 2.")
            return
        if not n_samples:
            raise ValueError("The state is in pass 2 without pass-1 samples.")
        self._freeze()
        self._read_validation(state, n_validated)
        self.n_validated_ = n_validated

    def _read_sums(self, state, n_samples):
        from ._state import check_nonnegative, check_not_above, decode_cells

        cells = decode_cells(state.array("sums.cells"), FINE_M, "sums.cells")
        k = self.n_splits_
        sums = state.array("sums", (4, k, cells.shape[0]))
        count, theta, theta2, y = sums
        for name, arr in (("counts", count), ("label sums", y)):
            check_nonnegative(arr, name)
            if not np.all(arr == np.rint(arr)):
                raise ValueError(f"The state's {name} must be whole numbers.")
        check_nonnegative(theta, "first moments")
        check_nonnegative(theta2, "second moments")
        check_not_above(theta, count, "first moments", "counts")
        check_not_above(theta2, theta, "second moments", "first moments")
        check_not_above(y, count, "label sums", "counts")
        if count.sum() != n_samples:
            raise ValueError(
                f"The state declares {n_samples} samples but its cells count "
                f"{count.sum():.0f}."
            )
        self.sums_[:, :, cells] = sums

    def _read_kept(self, state, n_samples):
        priority = state.array("kept.priority")
        m = priority.shape[0]
        if priority.ndim != 1 or m > min(self.max_train_, n_samples):
            raise ValueError(
                f"The state keeps {m} samples; at most max_train={self.max_train_} "
                f"and n_samples={n_samples} may be kept."
            )
        s = state.array("kept.scores", (m,))
        y = state.array("kept.labels", (m,))
        fold = state.array("kept.folds", (m,))
        if priority.dtype != np.float64 or s.dtype != np.float64:
            raise ValueError("The state's kept priorities and scores must be floats.")
        ok = (
            np.all((priority >= 0) & (priority < 1))
            and np.all(np.diff(priority) >= 0)
            and np.all((s >= 0) & (s <= 1))
            and np.all((y == 0) | (y == 1))
            and np.all((fold >= 0) & (fold < self.n_splits_))
        )
        if not ok:
            raise ValueError(
                "The state's kept samples must have sorted priorities in [0, 1), "
                "scores in [0, 1], 0/1 labels and folds below n_splits."
            )
        self.kept_ = (priority, [s, y, fold.astype(np.intp)])

    def _read_validation(self, state, n_validated):
        from ._state import check_nonnegative, decode_cells

        moments = state.array("valid_moments", (2, 3, self.n_splits_))
        check_nonnegative(moments, "pass-2 moments")
        counts = moments[:, 0]
        if not (
            np.all(counts == np.rint(counts))
            and np.all(counts.sum(axis=1) == n_validated)
            and np.all(moments[:, 1] <= 1)
        ):
            raise ValueError(
                "The state's pass-2 moments must count the validated samples and "
                "have means in [0, 1]."
            )
        self.valid_moments_ = moments
        if self.method == "nw":
            cells = decode_cells(
                state.array("valid_cells.cells"), FINE_M, "valid_cells.cells"
            )
            held = state.array("valid_cells", (self.n_splits_, cells.shape[0]))
            if np.any(held < 0) or held.sum(dtype=np.float64) != n_validated:
                raise ValueError(
                    "The state's pass-2 cell counts must be non-negative and add "
                    "up to the validated samples."
                )
            self.valid_cells_[:, cells] = held

    def _fold_terms(self, k, n_v, moments):
        (mean_e, m2_e), (mean_g, _) = moments
        delta = fold_delta(self.delta_, self.n_splits_)
        if self.method == "nw":
            r = int(self.window_cells_[k])
            train_counts = self.sums_[0].sum(axis=0) - self.sums_[0, k]
            influence = cell_window_influence(
                train_counts, self.valid_cells_[k], self.tables_[0][k], r
            )
            terms, lower = smoother_fold_terms(
                n_v, (mean_e, m2_e / n_v), mean_g, influence, delta
            )
            extra = {
                "n_train": int(self.n_samples_ - n_v),
                "bandwidth": (r + 0.5) / FINE_M,
                "window_cells": r,
            }
            return terms, lower, extra
        s_train, _, fitted_variation = self.fits_[k]
        n_train = s_train.shape[0]
        terms, lower = tv_fold_terms(
            n_v,
            (mean_e, m2_e / n_v),
            n_train,
            delta,
            self.variation_,
            fitted_variation,
        )
        extra = {"n_train": int(n_train), "fitted_variation": fitted_variation}
        return terms, lower, extra

    @validate_params()
    def result(self, *, return_details=False):
        """The certified bound.

        Parameters
        ----------
        return_details : bool, default=False
            Return a :class:`CalibrationBound` instead of the float upper
            bound.

        Returns
        -------
        float or CalibrationBound
            The certified upper bound, or its details with
            ``return_details=True``, as :func:`calibration_error_bound`. For
            ``"nw"``, the ``bandwidth`` of the :class:`CalibrationBound` is
            the window half-width ``(r + 1/2) / 2**16`` of each fold.
        """
        if not hasattr(self, "valid_moments_") or self.n_validated_ == 0:
            raise _not_fitted("Run partial_validate over the data (pass 2) first.")
        if self.n_validated_ != self.n_samples_:
            raise ValueError(
                f"Pass 2 saw {self.n_validated_} samples but pass 1 saw "
                f"{self.n_samples_}; both passes must cover the same stream."
            )
        folds = []
        for k in range(self.n_splits_):
            n_v = self.valid_moments_[0, 0, k]
            if n_v == 0:
                raise ValueError(f"Fold {k} received no samples; use more data.")
            terms, lower, extra = self._fold_terms(
                k, n_v, self.valid_moments_[:, 1:, k]
            )
            folds.append(
                {
                    "lower": float(lower),
                    "estimate": terms["validation_error"],
                    "terms": terms,
                    "n_valid": int(n_v),
                    "delta": fold_delta(self.delta_, self.n_splits_) * FOLD_DELTA_PARTS,
                    **extra,
                }
            )
        combined = aggregate_folds(folds)
        if not return_details:
            return float(combined["upper"])
        return CalibrationBound(
            upper=combined["upper"],
            lower=combined["lower"],
            estimate=combined["estimate"],
            method=self.method,
            delta=self.delta_,
            n_samples=int(self.n_samples_),
            n_splits=self.n_splits_,
            terms=combined["terms"],
            per_fold=tuple(folds),
            vacuous=combined["vacuous"],
            bandwidth=(
                np.array([f["bandwidth"] for f in folds])
                if self.method == "nw"
                else None
            ),
            assume=self.assume,
        )
