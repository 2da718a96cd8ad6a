"""Calibration by group: one metric evaluated on each group's rows."""

from __future__ import annotations

import functools
import inspect

import numpy as np

from .._backend.distributed import any_dask
from .._params import InvalidParameterError
from .._validation import check_calibration_inputs, check_groups
from ._results import GroupedCalibrationResult

__all__ = ["by_group"]


def _rows(x, index):
    return None if x is None else x[index]


def _as_rows(x):
    """``x`` as a numpy array that can be indexed by rows (or None)."""
    if x is None:
        return None
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        return x.to_numpy()
    return np.asarray(x)


def _label(x):
    return x.item() if isinstance(x, np.generic) else x


def _value_of(result):
    """The loss a metric returned (its ``upper`` bound for a certificate)."""
    for attr in ("upper", "value"):
        if hasattr(result, attr):
            return float(getattr(result, attr))
    return float(result)


def by_group(metric):
    """Give ``metric`` (which declares ``groups=None``) its per-group form.

    With ``groups``, the labels, scores and weights are validated once on the
    whole sample, split by group, and ``metric`` is called on each group with
    every other argument unchanged. The classes of the whole sample are
    passed to each call as ``labels`` (and the positive class as
    ``pos_label``), so that a group lacking some class keeps the columns and
    the positive class of the others.
    """
    signature = inspect.signature(metric)
    name = metric.__name__
    takes_weight = "sample_weight" in signature.parameters

    @functools.wraps(metric)
    def wrapper(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        groups = bound.arguments.pop("groups", None)
        if groups is None:
            return metric(*args, **kwargs)
        arguments = bound.arguments
        y_true, y_proba = arguments.pop("y_true"), arguments.pop("y_proba")
        weight = arguments.pop("sample_weight", None)
        if any_dask(y_true, y_proba, weight, groups):
            raise TypeError(
                f"{name} does not take groups with dask arrays; compute them, "
                "or evaluate each group's rows separately."
            )
        data = check_calibration_inputs(
            y_true,
            y_proba,
            sample_weight=weight,
            pos_label=arguments.get("pos_label"),
            labels=arguments.get("labels"),
        )
        _, names, index = check_groups(groups, data.n_samples)
        # The checked weights: a scalar weight is one weight per row by now.
        weight = data.sample_weight
        y_true, y_proba = _as_rows(y_true), _as_rows(y_proba)
        arguments["labels"] = data.classes
        if data.kind == "binary":
            arguments["pos_label"] = data.pos_label
        details = bool(arguments.get("return_details", False))
        rows_of = np.argsort(index, kind="stable")
        sizes = np.bincount(index, minlength=names.shape[0])
        ends = np.cumsum(sizes)
        values, counts, weights, results = [], [], [], []
        for g in range(names.shape[0]):
            rows = rows_of[ends[g] - sizes[g] : ends[g]]
            part = {"y_true": y_true[rows], "y_proba": y_proba[rows]}
            if takes_weight:
                part["sample_weight"] = _rows(weight, rows)
            try:
                result = metric(**part, **arguments)
            except InvalidParameterError:
                raise  # about a parameter, not about this group
            except ValueError as exc:
                size = f"{rows.shape[0]} samples"
                if weight is not None and takes_weight:
                    size += f", total weight {float(data.weight[rows].sum()):.6g}"
                raise ValueError(
                    f"{name} cannot be evaluated on group {_label(names[g])!r} "
                    f"({size}): {exc}"
                ) from exc
            values.append(_value_of(result))
            counts.append(rows.shape[0])
            weights.append(float(data.weight[rows].sum()))
            results.append(result)
        return GroupedCalibrationResult(
            metric=name,
            groups=names,
            values=np.asarray(values, dtype=float),
            counts=np.asarray(counts, dtype=np.int64),
            weights=np.asarray(weights, dtype=float),
            details=tuple(results) if details else None,
        )

    return wrapper
