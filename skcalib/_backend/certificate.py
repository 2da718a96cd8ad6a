"""The template shared by every certified calibration-error bound.

A fold bound is ``E|η̂ - s|`` (estimated on held-out scores, plus an empirical
Bernstein term) plus a method-specific bound on ``E_s|η̂(s) - η(s)|`` for the
realised surrogate ``η̂``. Each fold runs at ``δ_f = δ / n_splits``, split in
three equal parts; on the union event every fold bound holds, so the smallest
one is reported. The same functions serve the in-memory, streaming and dask
bounds. The derivations are in the user guide (certified bounds).
"""

from __future__ import annotations

import numpy as np

from .concentration import (
    empirical_bernstein,
    mcdiarmid,
    self_bounded_mean,
    tv_estimation_term,
    tv_transfer_term,
)

__all__ = [
    "FOLD_DELTA_PARTS",
    "aggregate_folds",
    "average_over_ties",
    "fold_delta",
    "smoother_fold_terms",
    "tv_fold_terms",
]

# The events of a fold bound: validation deviation, then either (label
# deviation, transfer) for a smoother or (TVB, PTB) for total variation.
FOLD_DELTA_PARTS = 3


def fold_delta(delta, n_splits):
    """Failure probability of each of the three events of one fold."""
    return delta / n_splits / FOLD_DELTA_PARTS


def smoother_fold_terms(n_valid, error_moments, mean_g, sum_sq_influence, delta):
    """Additive terms of a smoother fold bound (NW and Lipschitz buckets).

    Parameters
    ----------
    n_valid : int
        Number ``m`` of held-out scores.
    error_moments : (float, float)
        Mean and variance (``ddof=0``) of ``|η̂(s) - s|`` over them.
    mean_g : float
        Mean over them of ``g_T``, a bound on ``E_{y_T}|η̂(s) - η(s)|`` given
        every score.
    sum_sq_influence : float
        ``Σ_j ĉ_j²``, with ``ĉ_j`` the most that training label ``j`` can move
        ``mean_V |η̂ - η|``.
    delta : float
        Failure probability of each event (:func:`fold_delta`).

    Returns
    -------
    terms : dict
        ``validation_error + validation_deviation`` bound ``E|η̂ - s|``;
        ``smoother_error + label_deviation`` bound ``mean_V |η̂ - η|``
        (McDiarmid over the training labels) and ``transfer`` lifts it to
        ``E_s|η̂ - η|`` (Bernstein with the variance bounded by the mean).
    lower : float
        The matching lower bound ``Ê - BB - E_s|η̂ - η|``.
    """
    mean_err, var_err = error_moments
    deviation = empirical_bernstein(n_valid, delta, var_err)
    labels = mcdiarmid(delta, sum_sq_influence)
    realised = self_bounded_mean(n_valid, delta, mean_g + labels)
    terms = {
        "validation_error": float(mean_err),
        "validation_deviation": deviation,
        "smoother_error": float(mean_g),
        "label_deviation": labels,
        "transfer": realised - float(mean_g) - labels,
    }
    return terms, float(mean_err) - deviation - realised


def tv_fold_terms(n_valid, error_moments, n_train, delta, variation, fitted_variation):
    """Additive terms of a total-variation fold bound, each event at ``delta``.

    ``error_moments`` is ``(mean, variance)`` of ``|s - η̂(s)|`` over the
    ``n_valid`` held-out scores. Returns the terms and the lower bound.
    """
    mean_err, var_err = error_moments
    terms = {
        "validation_error": float(mean_err),
        "validation_deviation": empirical_bernstein(n_valid, delta, var_err),
        "tv_estimation": tv_estimation_term(n_train, delta, variation),
        "tv_transfer": tv_transfer_term(n_train, delta, variation, fitted_variation),
    }
    slack = sum(v for k, v in terms.items() if k != "validation_error")
    return terms, float(mean_err) - slack


def aggregate_folds(folds):
    """Combine fold results into the certificate.

    Every fold dict has ``terms`` (additive, unclipped) and ``lower``. Each
    fold bound is clipped at 1 (the calibration error never exceeds it); on
    the union event all fold bounds hold, so the smallest upper and the
    largest lower bound are reported, with the terms of the fold that gives
    the upper bound.

    Returns
    -------
    dict
        ``upper``, ``lower`` (clipped at 0), ``estimate`` (mean over folds of
        the validation error), ``terms``, ``best_fold`` and ``vacuous`` (the
        upper bound is 1: it says nothing).
    """
    raw = np.array([sum(f["terms"].values()) for f in folds])
    for f, r in zip(folds, raw, strict=True):
        f["upper"] = float(min(1.0, r))
    best = int(np.argmin(raw))
    upper = float(min(1.0, raw[best]))
    return {
        "upper": upper,
        "lower": max(0.0, float(max(f["lower"] for f in folds))),
        "estimate": float(np.mean([f["terms"]["validation_error"] for f in folds])),
        "terms": dict(folds[best]["terms"]),
        "best_fold": best,
        "vacuous": bool(upper >= 1.0),
    }


def average_over_ties(s_sorted, values):
    """``values`` averaged over each block of equal sorted scores.

    Every surrogate is a function of the score, so tied training points must
    share one fitted value; averaging is the projection onto such vectors,
    which can only lower the fitted error and the total variation.
    """
    n = s_sorted.shape[0]
    if n < 2:
        return values.copy()
    starts = np.flatnonzero(np.concatenate([[True], s_sorted[1:] != s_sorted[:-1]]))
    if starts.shape[0] == n:
        return values.copy()
    sizes = np.diff(np.append(starts, n))
    means = np.add.reduceat(values, starts) / sizes
    return np.repeat(means, sizes)
