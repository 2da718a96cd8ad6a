"""The ``neg_calibration_error_bound`` scorer: a certified bound as a model score."""

from __future__ import annotations

from .._validation import binary_tasks, check_calibration_inputs
from ._bounds import calibration_error_bound
from ._scorer import CalibrationScorer, register_scorer

__all__ = ["CalibrationBoundScorer", "certified_bound"]


def certified_bound(
    y_true,
    y_proba,
    *,
    labels=None,
    method="nw",
    perturbation_scale=None,
    assume=None,
    delta=0.05,
    n_splits=5,
    random_state=None,
    sample_weight=None,
):
    """Certified bound on the calibration error of binary or top-label scores.

    Binary input is bounded as is (positive class); a probability matrix with
    three or more classes is reduced to its top-label problem (confidence vs
    correctness of the predicted class), the one :class:`PerturbedClassifier`
    perturbs.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities (1-D: of the positive class).
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of ``y_proba``.
    method, perturbation_scale, assume, delta, n_splits, random_state
        As in :func:`skcalib.metrics.calibration_error_bound`.
    sample_weight : None
        Not supported (a ValueError is raised): the bound is for unweighted
        i.i.d. samples.

    Returns
    -------
    bound : CalibrationBound

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics._bound_scorer import certified_bound
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=4000)
    >>> y = (rng.uniform(size=4000) < p).astype(int)   # calibrated scores
    >>> bound = certified_bound(y, p, method="tv", assume="monotone",
    ...                         random_state=0)
    >>> bool(0.0 <= bound.estimate <= bound.upper < 1.0)
    True
    """
    if sample_weight is not None:
        # The concentration inequalities behind the bound are for i.i.d.
        # unweighted samples; silently ignoring weights would mislead.
        raise ValueError(
            "sample_weight is not supported by the certified calibration error "
            "bound; score without it."
        )
    data = check_calibration_inputs(y_true, y_proba, labels=labels)
    ((y, score, _),) = binary_tasks(data, "top-label")
    return calibration_error_bound(
        y,
        score,
        method=method,
        delta=delta,
        perturbation_scale=perturbation_scale,
        assume=assume,
        n_splits=n_splits,
        pos_label=1.0,
        random_state=random_state,
    )


def _final_estimator(estimator):
    """The last step of (possibly nested) pipelines."""
    while hasattr(estimator, "steps") and hasattr(estimator, "__getitem__"):
        estimator = estimator[-1]
    return estimator


class CalibrationBoundScorer(CalibrationScorer):
    """Score a classifier by minus a certified upper bound on its calibration error.

    The bound, which holds with probability ``1 - delta``, is computed on the
    scored data by :func:`skcalib.metrics.calibration_error_bound`:

    * for a fitted :class:`skcalib.PerturbedClassifier` (or a pipeline ending
      in one), the Nadaraya-Watson bound ``method="nw"`` with
      ``perturbation_scale`` set to the estimator's ``scale`` — valid for any
      base model because the perturbation makes the calibration function
      smooth;
    * for any other classifier, the total-variation bound with
      ``assume="monotone"``: valid only if the probability of the positive
      class (of a correct prediction, with three or more classes) is a
      non-decreasing function of the score. This assumption is not checked.

    Multiclass probabilities are reduced to top-label confidence vs
    correctness, the problem :class:`skcalib.PerturbedClassifier` perturbs.
    Greater is better (the bound is negated).

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

    def __init__(self, *, delta=0.05, n_splits=5, random_state=0):
        super().__init__(
            certified_bound,
            sign=-1,
            delta=delta,
            n_splits=n_splits,
            random_state=random_state,
        )

    def __repr__(self):
        kw = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"CalibrationBoundScorer({kw})"

    def _score(self, estimator, y_true, proba, labels, **metadata):
        from ..perturbation import PerturbedClassifier

        final = _final_estimator(estimator)
        if isinstance(final, PerturbedClassifier):
            options = {"method": "nw", "perturbation_scale": final.scale}
        else:
            options = {"method": "tv", "assume": "monotone"}
        bound = certified_bound(
            y_true, proba, labels=labels, **options, **self._kwargs, **metadata
        )
        return float(bound.upper)


register_scorer("neg_calibration_error_bound", CalibrationBoundScorer())
