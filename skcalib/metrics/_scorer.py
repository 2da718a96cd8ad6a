"""Scorer objects for calibration metrics and a registry that extends sklearn's.

scikit-learn has no public way to register scorers, so skcalib keeps its own
small registry and :func:`get_scorer` falls back to :func:`sklearn.metrics.get_scorer`
for every other name. sklearn's private scorer table is never touched.

scikit-learn is imported only when a scorer is looked up or routed, so that the
metric modules, which register their scorers here, load without it.
"""

from __future__ import annotations

import copy
import importlib
import numbers

from .._params import IsCallable, Options, validate_params

__all__ = ["CalibrationScorer", "get_scorer", "get_scorer_names"]


class CalibrationScorer:
    """Score a fitted classifier by a calibration loss of its ``predict_proba``.

    The scorer calls ``estimator.predict_proba(X)`` and passes the full
    probability matrix to ``score_func`` together with
    ``labels=estimator.classes_``, so that a cross-validation fold that lacks a
    class is still scored correctly (sklearn's ``make_scorer`` cannot do this).
    Losses are negated (``sign=-1``) so that greater is better, as sklearn's
    model selection tools expect.

    Parameters
    ----------
    score_func : callable
        ``score_func(y_true, y_proba, *, labels=None, sample_weight=None, **kwargs)``.
    sign : {1, -1}, default=-1
        Multiplier applied to ``score_func``'s value.
    **kwargs : dict
        Extra keyword arguments for ``score_func``.

    Notes
    -----
    ``sample_weight`` reaches the scorer through metadata routing: enable it with
    ``sklearn.set_config(enable_metadata_routing=True)`` and call
    ``scorer.set_score_request(sample_weight=True)``, exactly as for sklearn's
    own scorers.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> from skcalib.metrics import get_scorer
    >>> X, y = make_classification(n_samples=400, random_state=0)
    >>> scores = cross_val_score(LogisticRegression(), X, y, cv=3,
    ...                          scoring=get_scorer("neg_smooth_ece"))
    >>> bool((scores <= 0).all())
    True
    """

    _response_method = "predict_proba"

    @validate_params(score_func=IsCallable(), sign=Options(numbers.Integral, 1, -1))
    def __init__(self, score_func, *, sign=-1, **kwargs):
        self._score_func = score_func
        self._sign = sign
        self._kwargs = kwargs

    def __repr__(self):
        kw = "".join(f", {k}={v!r}" for k, v in self._kwargs.items())
        sign = "" if self._sign > 0 else ", greater_is_better=False"
        return (
            f"CalibrationScorer({self._score_func.__name__}{sign}, "
            f"response_method='predict_proba'{kw})"
        )

    def __call__(self, estimator, X, y_true, sample_weight=None, **kwargs):
        """Return ``sign * score_func(y_true, estimator.predict_proba(X))``."""
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        proba = estimator.predict_proba(X)
        labels = getattr(estimator, "classes_", None)
        return self._sign * self._score(estimator, y_true, proba, labels, **kwargs)

    def _score(self, estimator, y_true, proba, labels, **metadata):
        """Hook for subclasses that need the estimator itself."""
        return float(
            self._score_func(y_true, proba, labels=labels, **self._kwargs, **metadata)
        )

    # --- metadata routing (same protocol as sklearn's scorers) -------------
    def set_score_request(self, **kwargs):
        """Request metadata (e.g. ``sample_weight=True``) passed to the scorer.

        Parameters
        ----------
        **kwargs : dict
            ``param_name=alias`` with alias in ``{True, False, None, str}``.

        Returns
        -------
        self : CalibrationScorer
        """
        request = self.get_metadata_routing()
        for param, alias in kwargs.items():
            request.score.add_request(param=param, alias=alias)
        self._metadata_request = request
        return self

    def get_metadata_routing(self):
        """Metadata routing of this scorer (see sklearn's metadata routing guide)."""
        request = getattr(self, "_metadata_request", None)
        if request is None:
            from sklearn.utils.metadata_routing import MetadataRequest

            # As sklearn's scorers: sample_weight is known but not requested,
            # so passing it without a request is an error, not silently dropped.
            request = MetadataRequest(owner=self)
            request.score.add_request(param="sample_weight", alias=None)
        return request


# name -> scorer object; filled by the metric modules at import time.
_SCORERS: dict[str, CalibrationScorer] = {}


def _registry():
    """The registry, after importing every module that may add to it.

    ``skcalib.metrics`` loads its submodules on first access, and each metric
    module registers its scorers when imported.
    """
    from . import _LAZY

    for module in sorted(set(_LAZY.values())):
        importlib.import_module(module, __package__)
    return _SCORERS


def register_scorer(name, scorer):
    """Add ``scorer`` to skcalib's registry under ``name`` (internal use)."""
    _SCORERS[name] = scorer
    return scorer


@validate_params()
def get_scorer(scoring):
    """Get a scorer from a string, skcalib's names first, then sklearn's.

    scikit-learn resolves a ``scoring`` string in its own registry, which
    other libraries cannot extend, so ``cross_val_score(...,
    scoring="neg_smooth_ece")`` raises ``InvalidParameterError``. Pass the
    object instead: ``scoring=get_scorer("neg_smooth_ece")`` (or a dict of
    such objects for multi-metric search).

    Read more in the :ref:`User Guide <measures>`.

    Parameters
    ----------
    scoring : str, callable or None
        A skcalib scorer name (see :func:`get_scorer_names`), any name sklearn
        knows, or a callable returned as is.

    Returns
    -------
    scorer : callable
        A fresh copy of the scorer (so ``set_score_request`` on it does not
        affect the registry).

    Examples
    --------
    >>> from skcalib.metrics import get_scorer
    >>> get_scorer("neg_smooth_ece")  # doctest: +ELLIPSIS
    CalibrationScorer(smooth_ece, greater_is_better=False, ...)
    >>> get_scorer("roc_auc")
    make_scorer(roc_auc_score, response_method=('decision_function', 'predict_proba'))

    In model selection:

    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> X, y = make_classification(n_samples=600, random_state=0)
    >>> scores = cross_val_score(LogisticRegression(random_state=0), X, y, cv=3,
    ...                          scoring=get_scorer("neg_smooth_ece"))
    >>> print(scores.round(3))
    [-0.024 -0.032 -0.038]
    """
    if isinstance(scoring, str) and scoring in _registry():
        return copy.deepcopy(_SCORERS[scoring])
    from sklearn.metrics import get_scorer as sklearn_get_scorer

    return sklearn_get_scorer(scoring)


def get_scorer_names():
    """All scorer names accepted by :func:`get_scorer`, skcalib's and sklearn's.

    Returns
    -------
    list of str
        Sorted names.

    Examples
    --------
    >>> from skcalib.metrics import get_scorer_names
    >>> "neg_smooth_ece" in get_scorer_names() and "accuracy" in get_scorer_names()
    True
    """
    from sklearn.metrics import get_scorer_names as sklearn_get_scorer_names

    return sorted(set(_registry()) | set(sklearn_get_scorer_names()))
