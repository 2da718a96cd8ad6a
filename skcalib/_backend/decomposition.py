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
from .sorting import stable_sort

__all__ = ["brier_terms", "corp", "log_loss_terms", "pav"]


def pav(x, y, w):
    """Weighted isotonic (non-decreasing) regression of ``y`` on ``x``.

    Tied ``x`` are pooled first (their fitted values are equal), then adjacent
    blocks violating the order are merged. Returns the fitted value of every
    row, in the input order. ``O(n log n)`` (the sort).
    """
    order, xs = stable_sort(x)
    ys, ws = y[order], w[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    bw = np.add.reduceat(ws, starts)
    bsum = np.add.reduceat(ws * ys, starts)
    # Blocks on a stack: total weight, weighted sum, number of tie groups.
    W = np.empty(bw.shape[0])
    S = np.empty(bw.shape[0])
    C = np.empty(bw.shape[0], dtype=np.intp)
    top = -1
    for i in range(bw.shape[0]):
        top += 1
        W[top], S[top], C[top] = bw[i], bsum[i], 1
        # Merge while the mean of the block below is larger (cross-multiplied
        # to allow zero-weight groups, which never trigger a merge).
        while top > 0 and S[top - 1] * W[top] > S[top] * W[top - 1]:
            W[top - 1] += W[top]
            S[top - 1] += S[top]
            C[top - 1] += C[top]
            top -= 1
    with np.errstate(invalid="ignore", divide="ignore"):
        means = S[: top + 1] / W[: top + 1]
    group_value = np.repeat(means, C[: top + 1])
    counts = np.diff(np.r_[starts, xs.shape[0]])
    fitted = np.empty(x.shape[0])
    fitted[order] = np.repeat(group_value, counts)
    return fitted


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

    s_hat = pav(s, y, w)
    r = np.full_like(s, float(np.sum(w * y)) / W)
    score, recal, ref = mean(terms(y, s)), mean(terms(y, s_hat)), mean(terms(y, r))
    return score, score - recal, ref - recal, ref
