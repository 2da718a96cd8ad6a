"""Probability matrices in and out of a map: the log-odds and log-probabilities
of the input scores (with their floors), and the output rows clipped and
renormalised."""

from __future__ import annotations

import numpy as np

# Added to probabilities before the logarithm (as scikit-learn's temperature
# scaling does), so that a zero probability becomes a finite log-odds of -27.6.
LOGIT_FLOOR = 1e-12


# Scores of a class below this share of its smallest positive calibration
# score are raised to it (see score_floor). For atoms j / k (k neighbours,
# k trees) a share of 1/2 would put the 0 atom as far below the first as the
# second is above it, in log-probability; but the labels' log-odds step from
# atom 0 to atom 1 is the wider one where the model's scores pile up at 0
# and 1 (about twice the next one for k-neighbour shares of a Beta(1/2, 1/2)
# probability), and 1/4 was as good as or better than 1/2, 1/3 and 1/10 on
# the tuning seeds of the benchmark's forest and neighbour models.
ZERO_SCORE_FRACTION = 0.25


def score_floor(P):
    """Per-column floor: ``ZERO_SCORE_FRACTION`` of the smallest positive score.

    Models with a few distinct scores (k-nearest neighbours, forests) give
    exact 0s and 1s; ``log(0 + LOGIT_FLOOR)`` would put them at log-odds of
    about -27.6, far beyond every other score, and that gap would decide the
    nodes, the bandwidth's coordinates and the fit of the base. Raised to a
    share of the column's smallest positive score, they sit one step beyond
    it (see ``ZERO_SCORE_FRACTION`` for the size of the step). Only columns
    with an exact 0 get a floor (the others 0, and ``LOGIT_FLOOR`` alone then
    applies): without one nothing says that the scores are atoms, and a
    multiclass map follows its base beyond the calibration range, however
    small a new score is. Returns an array of shape ``(K,)``.
    """
    atoms = np.any(P == 0, axis=0)
    if not atoms.any():
        return np.zeros(P.shape[1])
    positive = np.where(P > 0, P, np.inf).min(axis=0)
    atoms &= np.isfinite(positive)
    return np.where(atoms, ZERO_SCORE_FRACTION * np.where(atoms, positive, 0.0), 0.0)


def log_probabilities(P, floor=None):
    """``log(max(P, floor) + LOGIT_FLOOR)`` (``floor`` per column, default 0)."""
    if floor is not None:
        P = np.maximum(P, floor)
    return np.log(P + LOGIT_FLOOR)


def binary_log_odds(P, floor=None):
    """Log-odds of the second column of a two-column probability matrix."""
    L = log_probabilities(P, floor)
    return L[:, 1] - L[:, 0]


def finalize_proba(Q, eps):
    """Clip class probabilities to ``[eps, 1 - eps]`` and renormalise the rows."""
    Q = np.clip(Q, eps, 1.0 - eps)
    Q /= Q.sum(axis=1, keepdims=True)
    return Q


def normalize_rows(Q):
    """Clip to [0, 1] and divide each row by its sum.

    A row that is all zeros (every one-vs-rest map says 0) carries no
    information and becomes the even split.
    """
    Q = np.clip(Q, 0.0, 1.0)
    total = Q.sum(axis=1, keepdims=True)
    return np.divide(Q, total, out=np.full_like(Q, 1.0 / Q.shape[1]), where=total > 0)
