"""The ``neg_calibration_error_bound`` scorer: a certified bound as a model score."""

from __future__ import annotations

from .._params import validate_params
from ._bounds import calibration_error_bound
from ._scorer import CalibrationScorer, register_scorer

__all__ = ["CalibrationBoundScorer"]


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
        return calibration_error_bound(
            y_true, proba, labels=labels, **options, **self._kwargs, **metadata
        )


register_scorer("neg_calibration_error_bound", CalibrationBoundScorer())
