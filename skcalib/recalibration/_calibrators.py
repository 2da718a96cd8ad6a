"""Held-out scores of a classifier, and calibrators fitted and applied to them."""

import numpy as np
from joblib import Parallel, delayed
from scipy.special import expit, softmax
from sklearn.base import clone
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.validation import (
    _check_method_params,
    _num_samples,
    has_fit_parameter,
)

from .._backend.progress import note
from .._backend.recalibration.scores import normalize_rows
from .._meta import align_proba_columns
from .._validation import check_estimator_proba


def _is_one_dimensional(calibrator):
    """Calibrators that take one column (sklearn tags), e.g. IsotonicRegression."""
    try:
        return not get_tags(calibrator).input_tags.two_d_array
    except (AttributeError, TypeError):  # not a BaseEstimator: assume a matrix
        return False


def _decision_proba(estimator, X):
    """Probabilities whose log-odds (binary) or logits are the decision function.

    A model without ``predict_proba`` (``SVC(probability=False)``) reports
    scores on the log-odds scale at best: ``expit(d)`` has log-odds ``d``
    exactly, which is what the logit map reads back, so its base maps start
    from the model's own scale (as scikit-learn's sigmoid calibration uses
    ``decision_function``).
    """
    d = np.asarray(estimator.decision_function(X), dtype=np.float64)
    n_classes = len(estimator.classes_)
    if d.ndim == 1 or d.shape[1] == 1:
        if n_classes != 2:
            raise ValueError(
                f"{type(estimator).__name__}.decision_function returned one column "
                f"for {n_classes} classes."
            )
        d = d.reshape(-1)
        return np.column_stack([expit(-d), expit(d)])
    return softmax(d, axis=1)


def _full_proba(estimator, X, classes):
    """``predict_proba`` (else the probabilities of the decision function) with
    one column per class of ``classes`` (absent ones 0)."""
    if hasattr(estimator, "predict_proba"):
        raw = estimator.predict_proba(X)
    else:
        raw = _decision_proba(estimator, X)
    proba = check_estimator_proba(raw, estimator, _num_samples(X))
    return align_proba_columns(proba, estimator.classes_, classes)


def _fit_calibrator(calibrator, P, y_idx, sample_weight):
    """Fit one clone of ``calibrator`` (2-D) or one per class column (1-D)."""
    n_classes = P.shape[1]
    if _is_one_dimensional(calibrator):
        cols = [1] if n_classes == 2 else range(n_classes)
        tasks = [(P[:, k], (y_idx == k).astype(np.float64)) for k in cols]
    else:
        tasks = [(P, y_idx)]
    kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
    if kwargs and not has_fit_parameter(calibrator, "sample_weight"):
        raise TypeError(
            f"sample_weight was given but {type(calibrator).__name__}.fit does not "
            "accept it."
        )
    return [clone(calibrator).fit(Xc, yc, **kwargs) for Xc, yc in tasks]


def _apply_calibrators(calibrators, P):
    """Recalibrated probabilities (rows sum to one) from fitted calibrators."""
    n, n_classes = P.shape
    if len(calibrators) == 1 and not _is_one_dimensional(calibrators[0]):
        Q = np.asarray(calibrators[0].transform(P), dtype=np.float64)
        if Q.ndim == 1 or Q.shape[1] == 1:
            q = Q.reshape(-1)
            Q = np.column_stack([1.0 - q, q]) if n_classes == 2 else Q
        if Q.shape != (n, n_classes):
            raise ValueError(
                f"The calibrator returned an array of shape {Q.shape}; expected "
                f"{(n, n_classes)}."
            )
    else:
        cols = [
            np.asarray(
                c.transform(P[:, k if n_classes > 2 else 1]), dtype=np.float64
            ).reshape(-1)
            for k, c in enumerate(calibrators)
        ]
        if n_classes == 2:
            Q = np.column_stack([1.0 - cols[0], cols[0]])
        else:
            Q = np.column_stack(cols)
    if not np.all(np.isfinite(Q)):
        raise ValueError(
            "The calibrator returned NaN or infinite probabilities (for "
            "IsotonicRegression, use out_of_bounds='clip')."
        )
    return normalize_rows(Q)


class _CalibratedPair:
    """A fitted classifier and the calibrator(s) fitted on its held-out output."""

    def __init__(self, estimator, calibrators, classes):
        self.estimator = estimator
        self.calibrators = calibrators
        self.classes = classes

    def predict_proba(self, X):
        return _apply_calibrators(
            self.calibrators, _full_proba(self.estimator, X, self.classes)
        )


def _fold_proba(estimator, X, y, train, test, classes, fit_params):
    """Fit ``estimator`` on ``train``; its probabilities of ``test``."""
    params_train = _check_method_params(X, params=fit_params, indices=train)
    estimator.fit(_safe_indexing(X, train), _safe_indexing(y, train), **params_train)
    return _full_proba(estimator, _safe_indexing(X, test), classes)


def _cross_fitted_proba(estimator, X, y, splits, classes, fit_params, n_jobs):
    """Out-of-fold probabilities of every sample (the test folds must partition
    the samples)."""
    n = _num_samples(X)
    tests = [test for _, test in splits]
    seen = np.bincount(np.concatenate(tests), minlength=n) if tests else np.zeros(n)
    if not np.all(seen == 1):
        raise ValueError(
            "ensemble=False needs a cv whose test folds partition the samples "
            "(each sample in exactly one test fold)."
        )
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_fold_proba)(clone(estimator), X, y, train, test, classes, fit_params)
        for train, test in splits
    )
    P = np.empty((n, classes.shape[0]))
    for test, part in zip(tests, parts, strict=True):
        P[test] = part
    return P


def _fit_pair(
    estimator,
    calibrator,
    X,
    y,
    y_idx,
    train,
    test,
    classes,
    sample_weight,
    fit_params,
    verbose=0,
    fold=None,
):
    if fold is not None:
        note(
            verbose,
            f"fold {fold[0] + 1}/{fold[1]}: {len(train)} rows to fit, "
            f"{len(test)} to calibrate",
        )
    P = _fold_proba(estimator, X, y, train, test, classes, fit_params)
    sw = None if sample_weight is None else sample_weight[test]
    return _CalibratedPair(
        estimator, _fit_calibrator(calibrator, P, y_idx[test], sw), classes
    )
