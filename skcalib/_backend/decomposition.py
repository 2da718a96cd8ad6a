"""CORP score decomposition (Dimitriadis, Gneiting & Jordan, 2021).

The forecast is recalibrated by isotonic regression of the labels on the
scores (pool-adjacent-violators, PAV); with ``S`` the mean score of a
forecast, ``s_hat`` the recalibrated forecast and ``r`` the constant
forecast ``mean(y)``:

* miscalibration ``MCB = S(s) - S(s_hat)``,
* discrimination ``DSC = S(r) - S(s_hat)``,
* uncertainty ``UNC = S(r)``,

so ``S(s) = MCB - DSC + UNC`` holds by construction. Both components are
non-negative for the Brier score and the log-loss: the PAV fit minimises
every proper score among non-decreasing recalibrations, and the constant
``r`` is one of them.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .binning import positive_weight_rows
from .isotonic import isotonic_fit

__all__ = ["brier_terms", "corp", "log_loss_terms"]


def brier_terms(y, s):
    """Per-row Brier score ``(s - y)^2``."""
    return (s - y) ** 2


def log_loss_terms(y, s):
    """Per-row log-loss ``-y log s - (1 - y) log(1 - s)`` with ``0 log 0 = 0``
    (a recalibrated value of 0 or 1 on pure blocks costs nothing; a score of
    0 or 1 contradicted by its label costs ``inf``)."""
    return -special.xlogy(y, s) - special.xlogy(1.0 - y, 1.0 - s)


def corp(y, s, w, terms):
    """``(score, mcb, dsc, unc)`` of one binary problem for the per-row score
    ``terms(y, s)``, weighted means with frequency weights ``w``."""
    w, y, s = positive_weight_rows(w, y, s)
    W = float(np.sum(w))

    def mean(v):
        return float(np.sum(w * v) / W)

    s_hat = isotonic_fit(s, y, w)
    r = np.full_like(s, float(np.sum(w * y)) / W)
    score, recal, ref = mean(terms(y, s)), mean(terms(y, s_hat)), mean(terms(y, r))
    return score, score - recal, ref - recal, ref
