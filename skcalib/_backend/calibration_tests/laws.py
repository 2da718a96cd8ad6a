"""Asymptotic null laws of the calibration tests, and when to trust them.

The laws: the standard normal (Spiegelhalter's ``Z``), chi-squared
(Hosmer-Lemeshow, Pigeon-Heyse), the supremum of ``|B|`` and the range of a
standard Brownian motion ``B`` on [0, 1] (Kolmogorov-Smirnov and Kuiper
statistics of the cumulative differences).

Each statistic is a function of sums of independent, centred, skewed terms
``c_i (y_i - s_i)``; the normal approximation of such a sum is as good as
its Lyapunov ratio ``L = sum |c_i|^3 rho_i / (sum c_i^2 v_i)^(3/2)`` is
small (Berry-Esseen: the distribution functions differ by less than
``0.56 L``), with ``v = s (1 - s)`` and ``rho = E|y - s|^3 = v (s^2 +
(1 - s)^2)``. :func:`effective_size` returns ``1 / L^2``: the number of
fair coin flips whose sum has the same ratio (``sum s (1 - s)`` for
unit weights and scores near 1/2, the expected number of events for rare
positives, less when a few weights dominate).
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = [
    "brownian_max_abs_sf",
    "brownian_range_sf",
    "chi2_sf",
    "effective_size",
    "normal_two_sided",
]


def normal_two_sided(z):
    """``P(|N(0, 1)| >= |z|)``."""
    return float(2.0 * special.ndtr(-abs(z)))


def chi2_sf(x, dof):
    """``P(chi2_dof >= x)``; with no degree of freedom (a degenerate null
    law, the statistic 0 with certainty) 1 for ``x = 0`` and 0 otherwise."""
    if dof < 1:
        return 1.0 if x == 0 else 0.0
    return float(special.chdtrc(dof, x))


def effective_size(coef, s, count):
    """``1 / L^2`` for the sum ``sum_i c_i (y_i - s_i)`` over observations.

    ``coef`` is ``c`` per row and ``count`` the number of observations the
    row stands for: 1 (one label per row, weighted by ``c``) or ``w`` (a
    row of frequency weight ``w`` is ``w`` observations with coefficient
    ``c / w``). Infinite when the sum has no random part.
    """
    v = s * (1.0 - s)
    rho = v * (s * s + (1.0 - s) * (1.0 - s))
    a = np.abs(coef)
    if count is None:
        var = float(np.sum(a * a * v))
        third = float(np.sum(a**3 * rho))
    else:
        # c / w per observation, w of them
        unit = np.divide(a, count, out=np.zeros_like(a), where=count > 0)
        var = float(np.sum(count * unit * unit * v))
        third = float(np.sum(count * unit**3 * rho))
    if not third > 0:
        return np.inf
    return var**3 / (third * third)


def brownian_max_abs_sf(x):
    """``P(sup_{[0, 1]} |B| > x)`` for a standard Brownian motion ``B``.

    Two series of the same function (Feller): ``4 sum_k (-1)^k
    Phi-bar((2k + 1) x)`` from the reflection principle, accurate in the tail
    (x >= 1), and one minus ``(4 / pi) sum_k (-1)^k / (2k + 1)
    exp(-(2k + 1)^2 pi^2 / (8 x^2))`` for small ``x``.
    """
    x = float(x)
    if not x > 0:
        return 1.0
    if np.isinf(x):
        return 0.0
    k = np.arange(60)
    if x >= 1.0:
        terms = (-1.0) ** k * special.ndtr(-(2 * k + 1) * x)
        return float(min(1.0, max(0.0, 4.0 * terms.sum())))
    odd = 2 * k + 1
    cdf = (4 / np.pi) * np.sum(
        (-1.0) ** k / odd * np.exp(-(odd**2) * np.pi**2 / (8 * x * x))
    )
    return float(min(1.0, max(0.0, 1.0 - cdf)))


def brownian_range_sf(x):
    """``P(max B - min B > x)`` over [0, 1] for a standard Brownian motion.

    Feller's (1951) law of the range. Its distribution function is
    ``sum_{k >= 0} (8 / x^2 + 2 / (h_k^2 pi^2)) exp(-2 h_k^2 pi^2 / x^2)``
    with ``h_k = k + 1/2``, used below ``x = 2.5``; above, one minus it
    cancels, and the survival function is summed directly from the density
    ``8 sum_{k >= 1} (-1)^(k-1) k^2 phi(k x)``: term by term,
    ``8 sum_{k >= 1} (-1)^(k-1) k Phi-bar(k x)``.
    """
    x = float(x)
    if not x > 0:
        return 1.0
    if np.isinf(x):
        return 0.0
    if x >= 2.5:
        k = np.arange(1, 40, dtype=np.float64)
        sf = 8.0 * np.sum((-1.0) ** (k - 1) * k * special.ndtr(-k * x))
        return float(min(1.0, max(0.0, sf)))
    h = np.arange(200) + 0.5
    cdf = np.sum(
        (8 / (x * x) + 2 / (h * h * np.pi**2)) * np.exp(-2 * h * h * np.pi**2 / (x * x))
    )
    return float(min(1.0, max(0.0, 1.0 - cdf)))
