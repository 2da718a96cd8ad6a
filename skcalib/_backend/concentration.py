"""Concentration terms used by the certified calibration-error bounds.

All functions return a non-negative deviation term ``t`` such that an average
of ``n`` i.i.d. variables (or an empirical CDF, for :func:`dkw`) is within
``t`` of its expectation on one side with probability at least ``1 - delta``.
"""

from __future__ import annotations

import numpy as np


def empirical_bernstein(n, delta, variance, value_range=1.0):
    """Empirical Bernstein term ``sqrt(2 σ² ln(3/δ) / n) + 3 R ln(3/δ) / n``.

    ``variance`` is the empirical variance (``ddof=0``) of the ``n`` values,
    which lie in ``[0, value_range]``; the bound for values scaled to [0, 1] is
    scaled back by ``value_range``.
    """
    log_term = np.log(3.0 / delta)
    variance = max(float(variance), 0.0)
    return float(
        np.sqrt(2.0 * variance * log_term / n) + 3.0 * value_range * log_term / n
    )


def hoeffding(n, delta, value_range=1.0):
    """One-sided Hoeffding term ``R sqrt(ln(1/δ) / (2n))``."""
    return float(value_range * np.sqrt(np.log(1.0 / delta) / (2.0 * n)))


def dkw(n, delta):
    """Dvoretzky–Kiefer–Wolfowitz (Massart) term ``sqrt(ln(2/δ) / (2n))``."""
    return float(np.sqrt(np.log(2.0 / delta) / (2.0 * n)))


def tv_constants(n_train, delta1):
    """Constants ``(t1, t2)`` of the total-variation bound.

    ``t1 = sqrt(ln(4/δ1) / 2)`` and ``t2 = sqrt(n ln(4 (n - 1) / δ1) / 8)``; the
    denoising penalty on the ``(1 / 2n) ||y - v||²`` scale is ``λ = t2 / n``.
    """
    t1 = np.sqrt(np.log(4.0 / delta1) / 2.0)
    t2 = np.sqrt(n_train * np.log(4.0 * max(n_train - 1, 1) / delta1) / 8.0)
    return float(t1), float(t2)


def tv_estimation_term(n_train, delta1, variation):
    """In-sample error term ``TVB`` of the total-variation denoiser.

    ``TVB = sqrt([2 t1² + 2 t1 sqrt(t1² + 4 t2 V) + 4 t2 V] / n)``.
    """
    t1, t2 = tv_constants(n_train, delta1)
    inner = (
        2 * t1**2 + 2 * t1 * np.sqrt(t1**2 + 4 * t2 * variation) + 4 * t2 * variation
    )
    return float(np.sqrt(inner / n_train))


def tv_transfer_term(n_train, delta2, delta3, variation, fitted_variation):
    """Term ``PTB`` moving the in-sample error to the population.

    ``PTB = (V + V̂) sqrt(ln(2/δ2) / (2n)) + sqrt(ln(2/δ3) / (2n))``.
    """
    return float(
        (variation + fitted_variation) * dkw(n_train, delta2) + dkw(n_train, delta3)
    )


def smoother_fold_terms(n_valid, error_moments, smoother_moments, delta_fold):
    """Additive terms of a smoother-based fold bound (NW and Lipschitz buckets).

    ``error_moments`` and ``smoother_moments`` are ``(mean, variance)`` of
    ``|η̂(s) - s|`` and of the smoother error bound ``g`` over the ``n_valid``
    held-out scores; each gets an empirical Bernstein term at ``delta_fold / 2``.
    """
    (mean_err, var_err), (mean_g, var_g) = error_moments, smoother_moments
    return {
        "validation_error": float(mean_err),
        "validation_deviation": empirical_bernstein(n_valid, delta_fold / 2, var_err),
        "smoother_error": float(mean_g),
        "smoother_deviation": empirical_bernstein(n_valid, delta_fold / 2, var_g),
    }


def tv_fold_terms(n_valid, error_moments, n_train, delta, variation, fitted_variation):
    """Additive terms of a total-variation fold bound, each at ``delta``
    (= a quarter of the fold's failure probability).

    ``error_moments`` is ``(mean, variance)`` of ``|s - η̂(s)|`` over the
    ``n_valid`` held-out scores.
    """
    mean_err, var_err = error_moments
    return {
        "validation_error": float(mean_err),
        "validation_deviation": empirical_bernstein(n_valid, delta, var_err),
        "tv_estimation": tv_estimation_term(n_train, delta, variation),
        "tv_transfer": tv_transfer_term(
            n_train, delta, delta, variation, fitted_variation
        ),
    }
