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

import copy
import functools
import numbers

import numpy as np

from .._backend import smece as _sm
from .._backend.binning import binned_error_value, table_as_dict, uniform_edges
from .._backend.certificate import (
    FOLD_DELTA_PARTS,
    aggregate_folds,
    fold_delta,
    smoother_fold_terms,
    tv_fold_terms,
)
from .._backend.distributed import (
    N_BIN_SUMS,
    N_SLOTS,
    add_bin_sums,
    add_cell_moments,
    add_fold_cell_counts,
    add_fold_cell_sums,
    any_dask,
    bin_table_from_sums,
    cell_prefix_sums,
    cell_window_influence,
    cell_window_tables,
    empty_moments,
    grid_bin_table,
    keep_smallest,
    map_reduce_blocks,
    merge_moments,
    moments_by_group,
    node_statistics,
    nw_validation_terms,
    select_window_cells,
    stream_folds,
    stream_priority,
)
from .._backend.grid import FINE_M
from .._backend.tv import fit_tv_surrogate, step_extension
from .._backend.window import NW_HALF_WIDTHS
from .._params import RULES, Interval, StrOptions, check_params
from .._validation import (
    MAX_STREAM_POSITION,
    check_binned_options,
    check_calibration_inputs,
    check_int,
    check_label_chunk,
    check_multi_class,
    check_perturbed_scores,
    check_probability_array,
    check_same_label_kind,
    check_sample_weight,
    check_sigma,
    default_pos_label,
    greater_label,
)

__all__ = [
    "CalibrationAccumulator",
    "StreamingCalibrationBound",
    "any_dask",
    "dask_calibration_error_bound",
    "dask_metric",
]

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
    """Calibration metrics of a binary classifier, accumulated chunk by chunk.

    Keeps, on a fixed grid of ``2**16`` cells of [0, 1], the per-cell moments
    ``sum w``, ``sum w theta``, ``sum w theta^2`` (``theta`` = position inside
    the cell), the sample count and ``sum w^2`` for each class. These are the
    sufficient statistics of every grid-based estimate (SmoothECE, the smooth
    reliability curve, grid-aligned binned errors): they add up over chunks, so
    the accumulator needs about 5 MB whatever the number of samples, and
    accumulators built on separate partitions combine with :meth:`merge`.

    The results equal the in-memory functions run on the concatenated data (up
    to floating-point summation order): :func:`smooth_ece` and
    :func:`smooth_calibration_curve` bin the same fine grid.

    Parameters
    ----------
    pos_label : int, float, bool or str, default=None
        Positive class. ``None`` follows the in-memory metrics: with 1-D
        ``y_proba`` chunks it means 1 for labels in {0, 1} or {-1, 1} and
        ``True`` for booleans, and any other labels are an error asking for
        ``pos_label`` (raised as soon as a chunk shows them); with two-column
        chunks it means the greater label (the last column).
    labels : array-like of shape (2,), default=None
        Both class labels, in the column order of a two-column ``y_proba``
        (default: sorted). Needed when the data may hold a single class whose
        partner cannot be inferred (labels other than 0/1/-1 and booleans), or
        when ``y_proba`` has two columns and ``pos_label`` is given before both
        classes have been seen.

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
    """

    def __init__(self, *, pos_label=None, labels=None):
        self.pos_label = pos_label
        self.labels = labels

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

    def partial_fit(self, y_true, y_proba, sample_weight=None):
        """Add a chunk of labels and predicted probabilities.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : CalibrationAccumulator
        """
        classes, index = check_label_chunk(y_true)
        proba = check_probability_array(y_proba, name="y_proba")
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
        self : CalibrationAccumulator
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

    # -- results ----------------------------------------------------------
    def _slots(self):
        """``(pos_slot, neg_slot)`` after resolving the positive class."""
        if not getattr(self, "n_samples_", 0):
            raise _not_fitted(
                "This CalibrationAccumulator has no data yet; call partial_fit first."
            )
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

    def grid_statistics(self):
        """Grid sufficient statistics ``(sum w, sum w*y, sum w*s)`` per grid point.

        Returns
        -------
        stats : ndarray of shape (2**16 + 1, 3)
            Linearly binned on the grid ``j / 2**16`` (linear binning).
        """
        pos, neg = self._slots()
        return node_statistics(self.moments_, pos, neg)

    def smooth_ece(self, *, sigma=None, return_sigma=False):
        """SmoothECE of the accumulated data (see :func:`smooth_ece`).

        Parameters
        ----------
        sigma : float in [2**-16, 1], default=None
            Fixed bandwidth; ``None`` uses the self-consistent ``sigma*``.
        return_sigma : bool, default=False
            Also return the bandwidth used.

        Returns
        -------
        smece : float
        sigma : float
            Only if ``return_sigma=True``.
        """
        value, sig = self._smece(sigma, self.grid_statistics())
        return (value, sig) if return_sigma else value

    @staticmethod
    def _smece(sigma, stats):
        if sigma is None:
            sig = _sm.solve_sigma(stats, _L1)
            return _sm.self_consistent_value(stats, sig), sig
        sigma = check_sigma(sigma)
        return _sm.smece_at(stats, sigma, _L1), sigma

    def calibration_curve(self, *, sigma=None):
        """Smooth reliability curve of the accumulated data.

        Same as :func:`smooth_calibration_curve` without a bootstrap band.

        Parameters
        ----------
        sigma : float in [2**-16, 1], default=None
            Fixed bandwidth; ``None`` uses the SmoothECE bandwidth ``sigma*``.

        Returns
        -------
        curve : SmoothCalibrationCurve
        """
        from ._smooth import SmoothCalibrationCurve

        stats = self.grid_statistics()
        value, sig = self._smece(sigma, stats)
        scores, y_smooth, dens, _ = _sm.smooth_curve(stats, sig, _L1)
        return SmoothCalibrationCurve(
            scores=scores, y_smooth=y_smooth, density=dens, sigma=sig, smece=value
        )

    def binned_calibration_error(
        self, *, n_bins=15, norm="l1", debias=False, squared=False, return_bins=False
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
        ``return_bins=True``. Weights are frequencies, as in memory.

        Parameters
        ----------
        n_bins : int, default=15
        norm : {"l1", "l2", "max"}, default="l1"
        debias : bool, default=False
            Only for ``norm="l2"`` (see :func:`binned_calibration_error`).
        squared : bool, default=False
            Only for ``norm="l2"``: return the squared error.
        return_bins : bool, default=False
            Also return the bin table (as :func:`binned_calibration_error`).

        Returns
        -------
        error : float
        bins : dict
            Only if ``return_bins=True``.
        """
        n_bins = check_int(n_bins, "n_bins", min_val=1)
        check_binned_options(norm, debias, squared)
        table = self._bin_table(n_bins)
        value = binned_error_value(table, norm, debias, squared)
        if not return_bins:
            return value
        return value, table_as_dict(table)

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

    def _add(self, slot, s, w):
        add_bin_sums(self.moments_, slot, s, w)

    def _bin_table(self, n_bins):
        pos, _ = self._slots()
        return bin_table_from_sums(self.moments_, pos, uniform_edges(n_bins))


# -- dask arrays -------------------------------------------------------------
def _block_accumulator(y, p, w, *, factory):
    return factory().partial_fit(y, p, sample_weight=w)


def _merge_pair(a, b):
    return a.merge(b)


def accumulate_dask(y_true, y_proba, *, sample_weight=None, factory):
    """An accumulator (made by ``factory()``) of dask arrays, reduced on the
    cluster.

    Each block is validated and reduced to its statistics where it lives; only
    those (a few MB per block) travel, and the blocks are never gathered.
    """
    func = functools.partial(_block_accumulator, factory=factory)
    return map_reduce_blocks(func, _merge_pair, (y_true, y_proba, sample_weight))


def _check_dask_options(multi_class, metric, **unsupported):
    check_multi_class(multi_class, ("top-label", "classwise"))
    check_multi_class(metric, ("l1", "logit"), name="metric")
    if metric != "l1":
        raise ValueError("metric='logit' is not available for dask arrays; use 'l1'.")
    for name, (value, default) in unsupported.items():
        if value != default:
            raise ValueError(
                f"{name}={value!r} is not available for dask arrays (it needs the "
                "samples in memory)."
            )


def dask_metric(name, y_true, y_proba, *, sample_weight=None, **kwargs):
    """Run the metric ``name`` on dask arrays (binary problems)."""
    multi_class = kwargs.pop("multi_class", "top-label")
    metric = kwargs.pop("metric", "l1")
    pos_label = kwargs.pop("pos_label", None)
    labels = kwargs.pop("labels", None)
    if name == "smooth_calibration_curve":
        _check_dask_options(
            multi_class, metric, n_bootstrap=(kwargs.pop("n_bootstrap"), 0)
        )
        for key in ("confidence_level", "ci_method", "random_state", "n_jobs"):
            kwargs.pop(key, None)
    elif name == "binned_calibration_error":
        _check_dask_options(
            multi_class, metric, strategy=(kwargs.pop("strategy"), "uniform")
        )
        from ._binned import _n_bins

        n = y_proba.shape[0]
        if sample_weight is not None:
            # "cbrt" counts the rows of positive weight, as in memory.
            w = sample_weight if any_dask(sample_weight) else np.asarray(sample_weight)
            nonzero = (w != 0).sum()
            n = int(nonzero.compute() if hasattr(nonzero, "compute") else nonzero)
        kwargs["n_bins"] = _n_bins(kwargs.get("n_bins", 15), n)
        factory = functools.partial(
            _BinAccumulator,
            n_bins=kwargs["n_bins"],
            pos_label=pos_label,
            labels=labels,
        )
    else:
        _check_dask_options(multi_class, metric)
    if name != "binned_calibration_error":
        factory = functools.partial(
            CalibrationAccumulator, pos_label=pos_label, labels=labels
        )
    acc = accumulate_dask(y_true, y_proba, sample_weight=sample_weight, factory=factory)
    if name == "smooth_ece":
        return acc.smooth_ece(**kwargs)
    if name == "smooth_calibration_curve":
        return acc.calibration_curve(**kwargs)
    return acc.binned_calibration_error(**kwargs)


# -- certified bounds on streamed data ------------------------------------------
_STREAM_METHODS = ("nw", "tv")


def _stream_start(start, default):
    """Position of a chunk's first sample: ``start``, or ``default`` if None."""
    if start is None:
        return default
    return check_int(start, "start", min_val=0, max_val=MAX_STREAM_POSITION)


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
        Samples kept in memory for the ``"tv"`` fits.
    pos_label : int, float, bool or str, default=None
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
    >>> b = sb.result()
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
        "max_train": Interval(numbers.Integral, 2, None),
        "random_state": RULES["random_state"],
    }

    def _setup(self):
        from .._validation import check_random_generator

        check_params(type(self).__name__, self.__dict__, self._parameter_constraints)
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

    def partial_fit(self, y_true, y_proba, *, start=None):
        """Pass 1: add a chunk of labels and scores.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
        start : int, default=None
            Position of the chunk's first sample in the whole stream (for
            partitions fitted separately and merged); by default the chunk
            follows the previous ones.

        Returns
        -------
        self
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

    def partial_validate(self, y_proba, *, start=None):
        """Pass 2: add the scores of a chunk (same stream, same order).

        Parameters
        ----------
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
        start : int, default=None
            Position of the chunk's first sample in the stream.

        Returns
        -------
        self
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
        """Add another partition's state (both in pass 1, or both in pass 2
        with surrogates built from the same merged pass-1 state).

        Parameters
        ----------
        other : StreamingCalibrationBound
            Built with the same parameters and seed, on another part of the
            stream (``start=`` giving its positions); left unchanged.

        Returns
        -------
        self
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

    def result(self):
        """The certified bound.

        Returns
        -------
        CalibrationBound
            As :func:`calibration_error_bound`. For ``"nw"``, ``bandwidth`` is
            the window half-width ``(r + 1/2) / 2**16`` of each fold.
        """
        from ._bounds import CalibrationBound

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


def _block_classes(y, p):
    return check_label_chunk(y)[0]


def _union_classes(a, b):
    try:
        return np.unique(np.concatenate([a, b]))
    except TypeError:
        raise TypeError(
            "y_true mixes label types that cannot be compared; use one type."
        ) from None


def _bound_pass1(offset, y, p, *, params):
    return StreamingCalibrationBound(**params).partial_fit(y, p, start=offset)


def _bound_pass2(frozen, offset, p):
    part = copy.copy(frozen)
    part.valid_moments_ = np.zeros_like(frozen.valid_moments_)
    if frozen.method == "nw":
        part.valid_cells_ = np.zeros_like(frozen.valid_cells_)
    part.n_validated_ = 0
    part.partial_validate(p, start=offset)
    return part.valid_moments_, getattr(part, "valid_cells_", None), part.n_validated_


def _merge_validation(a, b):
    moments = np.stack([merge_moments(a[0][i], b[0][i]) for i in range(2)])
    cells = None if a[1] is None else a[1] + b[1]
    return moments, cells, a[2] + b[2]


def dask_calibration_error_bound(
    y_true,
    y_proba,
    *,
    method,
    delta,
    perturbation_scale,
    lipschitz,
    variation,
    assume,
    n_splits,
    pos_label,
    labels,
    random_state,
):
    """``calibration_error_bound`` on dask arrays: the two-pass scheme of
    :class:`StreamingCalibrationBound` (``"nw"`` or ``"tv"``, binary problems),
    each pass a map-reduce over the blocks."""
    from .._validation import check_random_generator

    if method not in _STREAM_METHODS or lipschitz is not None:
        raise ValueError(
            "On dask arrays calibration_error_bound supports method='nw' and "
            f"method='tv'; got method={method!r}, lipschitz={lipschitz!r}."
        )
    seed = int(check_random_generator(random_state).integers(0, 2**63))
    # The classes of the whole sample, as in memory: a block holding one
    # class alone cannot tell which one it is.
    classes = map_reduce_blocks(_block_classes, _union_classes, (y_true, y_proba))
    if labels is not None:
        classes = np.asarray(labels)
    n = classes.shape[0]
    # Stand-in probabilities of the shape of y_proba: a 1-D y_proba names no
    # class, and the rule of the in-memory metrics decides its positive label.
    one_column = y_proba.ndim == 1 or y_proba.shape[1] == 1
    k = 1 if one_column else y_proba.shape[1]
    dummy = np.zeros(n) if one_column else np.full((n, k), 1.0 / k)
    data = check_calibration_inputs(
        classes, dummy, pos_label=pos_label, require_binary=True
    )
    params = dict(
        method=method,
        perturbation_scale=perturbation_scale,
        variation=variation,
        assume=assume,
        delta=delta,
        n_splits=n_splits,
        pos_label=data.pos_label,
        labels=data.classes,
        random_state=seed,
    )
    # Check the parameters before any work on the cluster.
    StreamingCalibrationBound(**params)._setup()
    fitted = map_reduce_blocks(
        functools.partial(_bound_pass1, params=params),
        _merge_pair,
        (y_true, y_proba),
        offsets=True,
    )
    fitted._freeze()
    # Pass 2 needs the fitted surrogates only, not the pass-1 state.
    shared = copy.copy(fitted)
    shared.sums_ = shared.kept_ = None
    moments, cells, n_valid = map_reduce_blocks(
        _bound_pass2, _merge_validation, (y_proba,), shared=shared, offsets=True
    )
    fitted.valid_moments_, fitted.n_validated_ = moments, n_valid
    if cells is not None:
        fitted.valid_cells_ = cells
    return fitted.result()
