"""Pieces shared by the meta-estimators that wrap a probabilistic classifier."""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.utils.metadata_routing import (
    MetadataRouter,
    MethodMapping,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.validation import has_fit_parameter


def default_estimator(estimator):
    """``estimator``, or a fresh ``LogisticRegression`` for ``None``.

    Under metadata routing the default model requests ``sample_weight``, so
    that weights reach it without the user configuring an object they did not
    create.
    """
    if estimator is not None:
        return estimator
    estimator = LogisticRegression()
    if _routing_enabled():
        estimator.set_fit_request(sample_weight=True)
    return estimator


def estimator_router(owner, estimator):
    """A router sending the ``fit`` parameters of ``owner`` to ``estimator.fit``."""
    return MetadataRouter(owner=owner).add(
        estimator=estimator,
        method_mapping=MethodMapping().add(caller="fit", callee="fit"),
    )


def route_fit_params(owner, estimator, sample_weight, fit_params, *, strict):
    """Parameters for ``estimator.fit`` and the routing they came from.

    With metadata routing enabled the parameters are those ``estimator``
    requested (``routed`` is the Bunch of :func:`process_routing`); otherwise
    they are ``fit_params`` plus ``sample_weight`` when given, which raises a
    TypeError if ``strict`` and ``estimator.fit`` does not take it, and is
    left out of the estimator's parameters otherwise (``routed`` is None).
    """
    if _routing_enabled():
        routed = process_routing(
            owner, "fit", sample_weight=sample_weight, **fit_params
        )
        return routed.estimator.fit, routed
    params = dict(fit_params)
    if sample_weight is not None:
        if has_fit_parameter(estimator, "sample_weight"):
            params["sample_weight"] = sample_weight
        elif strict:
            raise TypeError(
                f"sample_weight was given but {type(estimator).__name__}"
                ".fit does not accept it."
            )
    return params, None


def copy_fitted_attributes(owner, fitted, methods=("predict_proba",)):
    """Check ``fitted`` has one of ``methods`` and copy its input attributes.

    Features are validated by the base estimator, which may accept input
    (text, mixed-type frames) that generic validation here would reject, so
    ``n_features_in_`` and ``feature_names_in_`` are the base estimator's.
    """
    if not any(hasattr(fitted, m) for m in methods):
        raise TypeError(
            f"estimator must implement {' or '.join(methods)}; "
            f"{type(fitted).__name__} does not."
        )
    for attr in ("n_features_in_", "feature_names_in_"):
        if hasattr(fitted, attr):
            setattr(owner, attr, getattr(fitted, attr))
        elif attr in vars(owner):  # left by an earlier fit on other data
            delattr(owner, attr)


def align_proba_columns(proba, est_classes, classes):
    """Probabilities with one column per class of ``classes`` (absent ones 0).

    ``proba`` has the columns of ``est_classes``, a sorted subset of the
    sorted ``classes`` (a model fitted on a fold where a class is missing).
    """
    proba = np.asarray(proba, dtype=np.float64)
    if est_classes.shape[0] == classes.shape[0]:
        return proba
    out = np.zeros((proba.shape[0], classes.shape[0]))
    out[:, np.searchsorted(classes, est_classes)] = proba
    return out
