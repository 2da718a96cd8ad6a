"""CORP decomposition of the Brier score and the log-loss."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning

from .._backend import decomposition as _dc
from .._backend.user_warning import warn_user
from .._docstrings import fill_doc
from .._params import StrOptions, validate_params
from .._validation import binary_tasks, check_calibration_inputs

__all__ = ["ScoreDecomposition", "score_decomposition"]

_TERMS = {"brier": _dc.brier_terms, "log_loss": _dc.log_loss_terms}


@dataclass(frozen=True, repr=False)
class ScoreDecomposition:
    """Result of :func:`score_decomposition`.

    ``score == miscalibration - discrimination + uncertainty`` (to round-off)
    when the score is finite. Each parameter is stored as an attribute of
    the same name.

    Parameters
    ----------
    score : float
        Mean score of the predictions; ``inf`` for a log-loss with a
        prediction of exactly 0 or 1 that its label contradicts.
    miscalibration : float
        MCB: how much the score improves when the predictions are
        recalibrated by isotonic regression (>= 0); ``inf`` when ``score``
        is.
    discrimination : float
        DSC: how much the recalibrated predictions improve on the constant
        prediction ``mean(y)`` (>= 0); always finite.
    uncertainty : float
        UNC: the score of the constant prediction ``mean(y)``; always finite.
    score_name : {"brier", "log_loss"}
        The score decomposed.
    n_samples : int
        Number of rows.

    See Also
    --------
    score_decomposition : The function that returns this object.

    Examples
    --------
    >>> from skcalib.metrics import score_decomposition
    >>> d = score_decomposition([0, 1, 1, 0], [0.1, 0.6, 0.8, 0.7])
    >>> d
    ScoreDecomposition(score_name='brier', score=0.175, miscalibration=0.05,
                       discrimination=0.125, uncertainty=0.25)
    >>> print(f"{d.miscalibration - d.discrimination + d.uncertainty:.3f}")
    0.175
    """

    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float
    score_name: str
    n_samples: int

    def __repr__(self):
        return (
            f"ScoreDecomposition(score_name={self.score_name!r}, "
            f"score={self.score:.6g}, miscalibration={self.miscalibration:.6g}, "
            f"discrimination={self.discrimination:.6g}, "
            f"uncertainty={self.uncertainty:.6g})"
        )


@validate_params(score=StrOptions(*_TERMS))
@fill_doc
def score_decomposition(
    y_true,
    y_proba,
    *,
    score="brier",
    sample_weight=None,
    pos_label=None,
    labels=None,
):
    """CORP decomposition of the Brier score or the log-loss.

    ``score = MCB - DSC + UNC`` (Dimitriadis, Gneiting & Jordan, 2021): the
    predictions are recalibrated by isotonic regression of the labels on
    them (pool-adjacent-violators, which is the optimal non-decreasing
    recalibration for every proper score at once). MCB is the part of the
    score that recalibration removes, DSC what the recalibrated predictions
    gain over predicting the base rate, UNC the score of the base rate.
    No bins, no bandwidth; the decomposition is exact.

    The result is an object of four numbers, not a float; its
    ``miscalibration`` is available as the scorers
    ``"neg_brier_miscalibration"`` and ``"neg_log_loss_miscalibration"``.

    Read more in the :ref:`User Guide <is_calibrated>`.

    Parameters
    ----------
    ${y_true}
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probability of the positive class, or of each class
        (columns in the order of the sorted labels, or of ``labels``). For
        multiclass ``y_proba`` with ``score="brier"`` each term is the sum
        over classes of the one-vs-rest terms (the multiclass Brier score is
        the sum of the one-vs-rest ones); the multiclass log-loss is not
        such a sum, and ``score="log_loss"`` needs a binary problem.
    score : {"brier", "log_loss"}, default="brier"
        The proper score decomposed.
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights (integer weights give the decomposition of the
        repeated rows): weighted means and a weighted isotonic fit.
    ${pos_label}
    ${labels}

    Returns
    -------
    ScoreDecomposition
        The score and its three terms.

    See Also
    --------
    calibration_summary : Slope, intercepts and the gaps of a calibration curve.

    Notes
    -----
    The identity ``score = MCB - DSC + UNC`` is arithmetic only for a finite
    score. The log-loss of a prediction of exactly 0 or 1 that its label
    contradicts is infinite: so is MCB (the recalibration removes the
    infinite term), while DSC and UNC stay finite, and ``MCB - DSC + UNC``
    is ``inf`` as the score is, but ``score - (MCB - DSC + UNC)`` is NaN.
    The function warns and counts those rows; clip the predictions (as
    :func:`sklearn.metrics.log_loss` does) for a finite decomposition of the
    clipped score. The isotonic fit may predict 0 or 1 on runs of equal
    labels, which costs nothing (``0 log 0 = 0``).

    References
    ----------
    T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability
    diagrams for probabilistic classifiers", PNAS 118 (8), 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import score_decomposition
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=5000)
    >>> y = rng.uniform(size=5000) < 0.5 + 0.6 * (p - 0.5)   # over-confident
    >>> d = score_decomposition(y, p)
    >>> d  # doctest: +ELLIPSIS
    ScoreDecomposition(score_name='brier', score=0.2..., miscalibration=0.01...
    >>> bool(abs(d.score - (d.miscalibration - d.discrimination + d.uncertainty))
    ...      < 1e-12)
    True
    """
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    if data.kind == "multiclass" and score == "log_loss":
        raise ValueError(
            "score='log_loss' needs a binary problem: the multiclass log-loss is "
            "not a sum of one-vs-rest terms. Use score='brier' or binarise."
        )
    parts = np.array(
        [
            _dc.corp(y, s, w, _TERMS[score])
            for y, s, w in binary_tasks(data, "classwise")
        ]
    )
    total, mcb, dsc, unc = parts.sum(axis=0)
    if not np.isfinite(total):
        n_inf = sum(
            int(np.sum((w > 0) & np.isinf(_TERMS[score](y, s))))
            for y, s, w in binary_tasks(data, "classwise")
        )
        warn_user(
            f"The {score} is infinite: {n_inf} rows have a predicted probability "
            "of exactly 0 or 1 that their label contradicts. The miscalibration "
            "is infinite too, and score = MCB - DSC + UNC holds only as "
            "inf = inf; clip the predictions for a finite decomposition.",
            UndefinedMetricWarning,
        )
    return ScoreDecomposition(
        float(total), float(mcb), float(dsc), float(unc), score, data.n_samples
    )
