"""Scorer objects for calibration metrics and the table of their names.

scikit-learn has no public way to register scorers, so skcalib declares its
own table (:func:`_scorer_table`, one line per name) and :func:`get_scorer`
falls back to :func:`sklearn.metrics.get_scorer` for every other name.
sklearn's private scorer table is never touched.

The metric modules know nothing of scorers; this module imports them when
the table is first read, and scikit-learn when a scorer is looked up or
routed, so that ``CalibrationScorer`` alone loads neither.
"""

from __future__ import annotations

import copy
import functools
import numbers

from .._params import IsCallable, Options, validate_params
from .._validation import check_estimator_proba, from_predict_proba

__all__ = [
    "CalibrationBoundScorer",
    "CalibrationScorer",
    "get_scorer",
    "get_scorer_names",
]


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
        from sklearn.utils.validation import _num_samples

        # Checked here, so that bad output names the estimator that made it.
        proba = check_estimator_proba(
            estimator.predict_proba(X), estimator, _num_samples(X)
        )
        labels = getattr(estimator, "classes_", None)
        # predict_proba's output: probabilities even where all are 0 or 1.
        with from_predict_proba():
            value = self._score(estimator, y_true, proba, labels, **kwargs)
        return self._sign * value

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
        CalibrationScorer
            The scorer, with the requests recorded.
        """
        request = self.get_metadata_routing()
        for param, alias in kwargs.items():
            request.score.add_request(param=param, alias=alias)
        self._metadata_request = request
        return self

    def get_metadata_routing(self):
        """Get the metadata routing of this scorer.

        See scikit-learn's metadata routing user guide.

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRequest
            The metadata this scorer requests; ``sample_weight`` is known but
            not requested until :meth:`set_score_request` asks for it.
        """
        request = getattr(self, "_metadata_request", None)
        if request is None:
            from sklearn.utils.metadata_routing import MetadataRequest

            # As sklearn's scorers: sample_weight is known but not requested,
            # so passing it without a request is an error, not silently dropped.
            request = MetadataRequest(owner=self)
            request.score.add_request(param="sample_weight", alias=None)
        return request


def _final_estimator(estimator):
    """The last step of (possibly nested) pipelines."""
    while hasattr(estimator, "steps") and hasattr(estimator, "__getitem__"):
        estimator = estimator[-1]
    return estimator


class CalibrationBoundScorer(CalibrationScorer):
    """Score a classifier by minus a certified upper bound on its calibration error.

    The bound, which holds with probability ``1 - delta``, is computed on the
    scored data by :func:`skcalib.metrics.calibration_error_bound`:

    * for a model that perturbs its scores (a fitted
      :class:`skcalib.PerturbedClassifier`, or a pipeline ending in one,
      recognised by its fitted ``scale_``), the Nadaraya-Watson bound
      ``method="nw"`` at that scale — valid for any base model because the
      perturbation makes the calibration function smooth;
    * for any other classifier, the total-variation bound with
      ``assume="monotone"``: valid only if the probability of the positive
      class (of a correct prediction, with three or more classes) is a
      non-decreasing function of the score. This assumption is not checked.

    Multiclass probabilities are reduced to top-label confidence vs
    correctness, the problem :class:`skcalib.PerturbedClassifier` perturbs.
    Greater is better (the bound is negated). The bound is for unweighted
    i.i.d. samples: ``sample_weight`` is refused.

    Read more in the :ref:`User Guide <certified>`.

    Parameters
    ----------
    delta : float, default=0.05
        Failure probability of the bound.
    n_splits : int, default=5
        Cross-fitting folds of the bound.
    random_state : int, Generator or None, default=0
        Randomness of the bound (a fixed seed keeps model selection
        reproducible).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skcalib import PerturbedClassifier
    >>> from skcalib.metrics import get_scorer
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> search = GridSearchCV(
    ...     PerturbedClassifier(LogisticRegression(), random_state=0),
    ...     {"scale": [2.0**-6, 2.0**-3]},
    ...     scoring={"auc": "roc_auc",
    ...              "ce_bound": get_scorer("neg_calibration_error_bound")},
    ...     refit="auc", cv=3,
    ... ).fit(X, y)
    >>> bool((search.cv_results_["mean_test_ce_bound"] < 0).all())
    True
    """

    @validate_params()
    def __init__(self, *, delta=0.05, n_splits=5, random_state=0):
        from ._bounds import calibration_error_bound

        super().__init__(
            calibration_error_bound,
            sign=-1,
            delta=delta,
            n_splits=n_splits,
            random_state=random_state,
        )

    def __repr__(self):
        kw = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"CalibrationBoundScorer({kw})"

    def _score(self, estimator, y_true, proba, labels, **metadata):
        if metadata.pop("sample_weight", None) is not None:
            # The concentration inequalities behind the bound are for i.i.d.
            # unweighted samples; silently ignoring weights would mislead.
            raise ValueError(
                "sample_weight is not supported by the certified calibration "
                "error bound; score without it."
            )
        scale = getattr(_final_estimator(estimator), "scale_", None)
        if scale is not None:
            options = {"method": "nw", "perturbation_scale": scale}
        else:
            options = {"method": "tv", "assume": "monotone"}
        return self._score_func(
            y_true, proba, labels=labels, **options, **self._kwargs, **metadata
        )


# The scorers that wrap a result's field rather than a metric's value.


def brier_miscalibration(y_true, y_proba, *, labels=None, sample_weight=None):
    """The miscalibration term of the Brier score's decomposition."""
    from ._decomposition import score_decomposition

    return score_decomposition(
        y_true, y_proba, score="brier", labels=labels, sample_weight=sample_weight
    ).miscalibration


def log_loss_miscalibration(y_true, y_proba, *, labels=None, sample_weight=None):
    """The miscalibration term of the log loss's decomposition."""
    from ._decomposition import score_decomposition

    return score_decomposition(
        y_true, y_proba, score="log_loss", labels=labels, sample_weight=sample_weight
    ).miscalibration


def integrated_calibration_index(y_true, y_proba, *, labels=None, sample_weight=None):
    """The ICI of :func:`calibration_summary`."""
    # The ICI alone: the logistic fits of the summary (and their warnings)
    # are not needed.
    from ._summary import _ici

    return _ici(y_true, y_proba, labels=labels, sample_weight=sample_weight)


# The binning of scikit-learn's proposed ``calibration_error`` (pull request
# 34261): ``ceil(n ** (1/3))`` bins of equal mass.
PROPOSED_BINNING = {"n_bins": "cbrt", "strategy": "quantile"}


@functools.cache
def _scorer_table():
    """Every skcalib scorer by name: one line per scorer (a new name is a new
    line), built on first use. ``get_scorer`` hands out copies."""
    from ._binned import binned_calibration_error
    from ._kde import kde_calibration_error
    from ._smooth import smooth_ece

    def binned(**options):
        return CalibrationScorer(binned_calibration_error, **options)

    return {
        "neg_smooth_ece": CalibrationScorer(smooth_ece),
        # scikit-learn's names (norm="l1" | "l2" | "max", squared=...)
        "neg_l1_calibration_error": binned(norm="l1", **PROPOSED_BINNING),
        "neg_l2_calibration_error": binned(norm="l2", **PROPOSED_BINNING),
        "neg_l2_squared_calibration_error": binned(
            norm="l2", root=False, **PROPOSED_BINNING
        ),
        "neg_max_calibration_error": binned(norm="max", **PROPOSED_BINNING),
        # the classic ECE of the literature: 15 bins of equal width
        "neg_expected_calibration_error": binned(
            n_bins=15, strategy="uniform", norm="l1"
        ),
        "neg_kde_calibration_error": CalibrationScorer(kde_calibration_error),
        "neg_brier_miscalibration": CalibrationScorer(brier_miscalibration),
        "neg_log_loss_miscalibration": CalibrationScorer(log_loss_miscalibration),
        "neg_integrated_calibration_index": CalibrationScorer(
            integrated_calibration_index
        ),
        "neg_calibration_error_bound": CalibrationBoundScorer(),
    }


def _unknown_name(scoring):
    """The error for a name neither skcalib nor scikit-learn knows: skcalib's
    names (scikit-learn's list is long and has no calibration measure)."""
    import difflib

    from sklearn.metrics import get_scorer_names as sklearn_get_scorer_names

    ours = sorted(_scorer_table())
    close = difflib.get_close_matches(
        scoring, ours + list(sklearn_get_scorer_names()), n=1
    )
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return ValueError(
        f"scoring={scoring!r} is not a scorer name.{hint} skcalib's scorers are "
        f"{', '.join(map(repr, ours))}; every name of "
        "sklearn.metrics.get_scorer_names() (e.g. 'neg_log_loss', 'roc_auc') is "
        "accepted too."
    )


@validate_params()
def get_scorer(scoring):
    """Get a scorer from a string, skcalib's names first, then sklearn's.

    Read more in the :ref:`User Guide <scorers>`.

    Parameters
    ----------
    scoring : str, callable or None
        A skcalib scorer name (see Notes and :func:`get_scorer_names`), any
        name of :func:`sklearn.metrics.get_scorer_names`, or a callable
        (returned as is).

    Returns
    -------
    callable
        A fresh copy of the scorer (so ``set_score_request`` on it does not
        affect the registry).

    Raises
    ------
    ValueError
        For a name neither skcalib nor scikit-learn knows; the message lists
        skcalib's names.

    See Also
    --------
    get_scorer_names : Every accepted name.
    CalibrationScorer : Build a scorer with other options.

    Notes
    -----
    **Why not** ``scoring="neg_smooth_ece"``? scikit-learn checks a
    ``scoring`` string against its own registry of names, which other
    libraries cannot extend without editing scikit-learn's private state, so
    ``cross_val_score(model, X, y, scoring="neg_smooth_ece")`` raises
    ``InvalidParameterError``. Pass the scorer object instead,
    ``scoring=get_scorer("neg_smooth_ece")``, or a dict of objects and
    scikit-learn names for several metrics at once, e.g. ``scoring={"ece":
    get_scorer("neg_smooth_ece"), "auc": "roc_auc"}``.

    skcalib's names (losses, negated so that greater is better):

    * ``"neg_smooth_ece"``: :func:`smooth_ece`.
    * ``"neg_l1_calibration_error"``, ``"neg_l2_calibration_error"``,
      ``"neg_l2_squared_calibration_error"``, ``"neg_max_calibration_error"``:
      :func:`binned_calibration_error` with ``norm="l1"``, ``"l2"`` (and
      ``root=False`` for the squared one) or ``"max"``, on
      ``ceil(n ** (1/3))`` bins of equal mass (``strategy="quantile",
      n_bins="cbrt"``): the names and binning of the ``calibration_error``
      proposed for scikit-learn.
    * ``"neg_expected_calibration_error"``: the classic ECE, ``norm="l1"`` on
      15 bins of equal width.
    * ``"neg_kde_calibration_error"``: :func:`kde_calibration_error`.
    * ``"neg_brier_miscalibration"``, ``"neg_log_loss_miscalibration"``: the
      miscalibration terms of :func:`score_decomposition`.
    * ``"neg_integrated_calibration_index"``: the ICI of
      :func:`calibration_summary`.
    * ``"neg_calibration_error_bound"``: :class:`CalibrationBoundScorer`.

    Examples
    --------
    >>> from skcalib.metrics import get_scorer
    >>> get_scorer("neg_l2_calibration_error")  # doctest: +ELLIPSIS
    CalibrationScorer(binned_calibration_error, greater_is_better=False, ...)
    >>> get_scorer("roc_auc")
    make_scorer(roc_auc_score, response_method=('decision_function', 'predict_proba'))

    In model selection, the object rather than its name:

    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import cross_val_score
    >>> X, y = make_classification(n_samples=600, random_state=0)
    >>> scores = cross_val_score(LogisticRegression(random_state=0), X, y, cv=3,
    ...                          scoring=get_scorer("neg_smooth_ece"))
    >>> print(scores.round(3))
    [-0.024 -0.032 -0.038]
    """
    if isinstance(scoring, str):
        if scoring in _scorer_table():
            return copy.deepcopy(_scorer_table()[scoring])
        from sklearn.metrics import get_scorer_names as sklearn_get_scorer_names

        if scoring not in sklearn_get_scorer_names():
            raise _unknown_name(scoring)
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

    return sorted(set(_scorer_table()) | set(sklearn_get_scorer_names()))
