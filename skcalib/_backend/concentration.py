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

    The first-order optimality condition of the denoiser gives
    ``e² <= t1 e + 2 t2 V`` for ``e = ||v - η_T||``, hence
    ``TVB = e / sqrt(n) <= sqrt([t1²/2 + (t1/2) sqrt(t1² + 8 t2 V) + 2 t2 V] / n)``.
    """
    t1, t2 = tv_constants(n_train, delta1)
    inner = (
        0.5 * t1**2
        + 0.5 * t1 * np.sqrt(t1**2 + 8.0 * t2 * variation)
        + 2.0 * t2 * variation
    )
    return float(np.sqrt(inner / n_train))


def tv_transfer_term(n_train, delta2, variation, fitted_variation):
    """Term ``PTB = (V + V̂) sqrt(ln(2/δ2) / (2n))`` moving the in-sample error
    of a function of variation ``V + V̂`` to the population (DKW)."""
    return float((variation + fitted_variation) * dkw(n_train, delta2))


def mcdiarmid(delta, sum_sq_differences):
    """One-sided McDiarmid term ``sqrt(ln(1/δ) Σ c_j² / 2)`` for a function of
    independent variables with bounded differences ``c_j``."""
    return float(np.sqrt(np.log(1.0 / delta) * max(sum_sq_differences, 0.0) / 2.0))


def self_bounded_mean(n, delta, mean_bound):
    """Upper bound on the mean ``μ`` of a variable in [0, 1] from a bound on
    the average of ``n`` i.i.d. draws of it.

    Bernstein's inequality with ``Var <= μ`` (the variable is in [0, 1]) gives,
    with probability ``1 - δ``, ``μ <= m̂ + sqrt(2 μ L / n) + 2 L / (3n)``,
    ``L = ln(1/δ)``; solving for ``sqrt(μ)``:
    ``μ <= (sqrt(L / (2n)) + sqrt(m̂ + 7 L / (6n)))²``.
    """
    log_term = np.log(1.0 / delta)
    root = np.sqrt(log_term / (2.0 * n)) + np.sqrt(
        max(mean_bound, 0.0) + 7.0 * log_term / (6.0 * n)
    )
    return float(root * root)
