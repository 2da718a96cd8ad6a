"""Metrics and certified bounds on dask arrays: one explicit entry point per
metric, each a map-reduce of per-block statistics (the blocks are never
gathered). dask is imported only when a graph is built."""

from __future__ import annotations

import copy
import functools

import numpy as np

from .._backend.distributed import any_dask, map_reduce_blocks, merge_moments
from .._params import check_n_bins
from .._validation import check_calibration_inputs, check_label_chunk
from ._accumulator import CalibrationAccumulator, _BinAccumulator
from ._streaming_bound import _STREAM_METHODS, StreamingCalibrationBound

__all__ = [
    "dask_binned_calibration_error",
    "dask_calibration_error_bound",
    "dask_smooth_calibration_curve",
    "dask_smooth_ece",
]


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
    # The rules of the options are checked by the public functions.
    if metric != "l1":
        raise ValueError("metric='logit' is not available for dask arrays; use 'l1'.")
    for name, (value, default) in unsupported.items():
        if value != default:
            raise ValueError(
                f"{name}={value!r} is not available for dask arrays (it needs the "
                "samples in memory)."
            )


def _accumulate(y_true, y_proba, sample_weight, pos_label, labels):
    factory = functools.partial(
        CalibrationAccumulator, pos_label=pos_label, labels=labels
    )
    return accumulate_dask(
        y_true, y_proba, sample_weight=sample_weight, factory=factory
    )


def dask_smooth_ece(
    y_true,
    y_proba,
    *,
    sigma,
    metric,
    multi_class,
    sample_weight,
    pos_label,
    labels,
    return_details,
):
    """:func:`~skcalib.metrics.smooth_ece` on dask arrays (binary problems)."""
    _check_dask_options(multi_class, metric)
    acc = _accumulate(y_true, y_proba, sample_weight, pos_label, labels)
    return acc.smooth_ece(sigma=sigma, return_details=return_details)


def dask_smooth_calibration_curve(
    y_true,
    y_proba,
    *,
    sigma,
    metric,
    multi_class,
    n_bootstrap,
    sample_weight,
    pos_label,
    labels,
):
    """:func:`~skcalib.metrics.smooth_calibration_curve` on dask arrays
    (binary problems, no bootstrap)."""
    _check_dask_options(multi_class, metric, n_bootstrap=(n_bootstrap, 0))
    acc = _accumulate(y_true, y_proba, sample_weight, pos_label, labels)
    return acc.calibration_curve(sigma=sigma)


def dask_binned_calibration_error(
    y_true,
    y_proba,
    *,
    n_bins,
    strategy,
    norm,
    debias,
    root,
    multi_class,
    sample_weight,
    pos_label,
    labels,
    return_details,
):
    """:func:`~skcalib.metrics.binned_calibration_error` on dask arrays
    (binary problems, uniform bins)."""
    _check_dask_options(multi_class, "l1", strategy=(strategy, "uniform"))
    n = y_proba.shape[0]
    if sample_weight is not None:
        # "cbrt" counts the rows of positive weight, as in memory.
        w = sample_weight if any_dask(sample_weight) else np.asarray(sample_weight)
        nonzero = (w != 0).sum()
        n = int(nonzero.compute() if hasattr(nonzero, "compute") else nonzero)
    n_bins = check_n_bins(n_bins, n)
    factory = functools.partial(
        _BinAccumulator, n_bins=n_bins, pos_label=pos_label, labels=labels
    )
    acc = accumulate_dask(y_true, y_proba, sample_weight=sample_weight, factory=factory)
    return acc.binned_calibration_error(
        n_bins=n_bins,
        norm=norm,
        debias=debias,
        root=root,
        return_details=return_details,
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
    return_details=False,
):
    """``calibration_error_bound`` on dask arrays: the two-pass scheme of
    :class:`StreamingCalibrationBound` (``"nw"`` or ``"tv"``, binary problems),
    each pass a map-reduce over the blocks."""
    from .._params import check_random_generator

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
    return fitted.result(return_details=return_details)
