"""Recalibration maps in log-odds space: a parametric fit plus a kernel correction.

The map of a binary problem is ``q(z) = expit(u + alpha(u))`` with ``z`` the
log-odds of the input probability, ``u = a z + b`` a Platt (or, with ``b = 0``,
temperature; with ``+ c log p(1 - p)``, beta) fit and ``alpha`` a
local-likelihood correction: at each node
``u_k`` the offset ``alpha_k`` maximises the kernel-weighted log-likelihood
``sum_i w_i K_h(u_k - u_i) log p(y_i | expit(u_i + alpha_k))``, shrunk towards
0 by a pseudo-observation whose label is the base prediction ``expit(u_k)``.
As ``h -> infinity`` the correction vanishes (Platt's first-order conditions
already hold), so the family runs from the parametric fit to a local one, and
the bandwidth is chosen by cross-validated log-loss with ``h = inf`` among the
candidates. Multiclass maps apply the same correction to each class's
log-odds after temperature (or matrix) scaling, then renormalise the rows.

Working in log-odds keeps the resolution where confident models put their
scores (a probability-space kernel cannot tell 0.999 from 0.99999). Beyond
the calibration data the correction is constant; a binary map is constant
there too, a multiclass map follows its parametric base (see
:class:`.correction.LogitMap`).

All kernel sums run over ``m <= MAX_NODES`` nodes at quantiles of the data,
onto which the samples are binned linearly (weights and first moments kept
exactly), so a fit costs ``O(n + m^2)`` per bandwidth after one binning pass.

This module is the engine's entry point: probability matrices in and out
(the parts beside it are listed in the package's docstring).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..binning import positive_weight_rows, relative_weights
from .binary import fit_binary_logit_map
from .multiclass import fit_multiclass_logit_map
from .scores import binary_log_odds, log_probabilities, score_floor

__all__ = ["fit_logit_map", "logit_map_proba"]


# Larger total weights are scaled down to it (see fit_logit_map).
MAX_TOTAL_WEIGHT = 1e100


def fit_logit_map(P, y_idx, w, *, prior, eps, bandwidth="auto", base="auto"):
    """The binary or multiclass map of a probability matrix ``P`` (n, K).

    Returns ``(fit, scores)`` of :func:`fit_binary_logit_map` (``K = 2``) or
    :func:`fit_multiclass_logit_map`. Rows of zero weight are dropped first;
    the scores are raised to the :func:`score_floor` of those rows, which the
    fit keeps (``score_floor``) for :func:`logit_map_proba`.
    """
    options = {"prior": prior, "eps": eps, "bandwidth": bandwidth, "base": base}
    w, P, y_idx = positive_weight_rows(w, P, y_idx)
    if float(w.max()) * w.shape[0] > MAX_TOTAL_WEIGHT:
        # Against this much weight the priors weigh nothing at double
        # precision anyway; smaller weights keep every sum finite.
        w = relative_weights(w) * (MAX_TOTAL_WEIGHT / w.shape[0])
    floor = score_floor(P)
    if P.shape[1] == 2:
        fit, scores = fit_binary_logit_map(
            binary_log_odds(P, floor), y_idx.astype(np.float64), w, **options
        )
    else:
        fit, scores = fit_multiclass_logit_map(
            log_probabilities(P, floor), y_idx, w, **options
        )
    return replace(fit, score_floor=floor), scores


def logit_map_proba(fit, P):
    """Recalibrated probability matrix of ``P`` under a fitted map."""
    if P.shape[1] == 2:
        q = fit(binary_log_odds(P, fit.score_floor))
        return np.column_stack([1.0 - q, q])
    return fit(log_probabilities(P, fit.score_floor))
