"""Kernels on [0, 1] and on the probability simplex.

* reflected Gaussian (sampled on a periodic grid, used by the grid smoother),
* truncated hyperbolic-secant kernel (perturbation: pdf, cdf, inverse cdf; the
  sampler is in :mod:`skcalib._backend.sech.sampler`),
* Beta / Dirichlet log-kernels (ECE-KDE and the multiclass recalibrator).
"""

from __future__ import annotations

import numpy as np

from .kde.statistics import clip_simplex as _clip_simplex
from .kde.statistics import log_normalizer as _log_normalizer

# ---------------------------------------------------------------------------
# Reflected Gaussian
# ---------------------------------------------------------------------------

# Gaussian tail mass beyond this many standard deviations is < 1e-12.
_GAUSS_TAIL_SD = 7.5


def periodized_gaussian(M, sigma):
    """Gaussian density of scale ``sigma`` wrapped on a circle of length 2.

    Sampled at the ``2 * M`` points ``k / M`` (k = 0 .. 2M - 1) of the circle
    ``[0, 2)``. Reflecting a signal on ``[0, 1]`` evenly about 0 and extending it
    with period 2 turns the reflected-Gaussian kernel on ``[0, 1]`` into a
    circular convolution with this kernel, with every image of the reflection
    included (no truncation, whatever ``sigma``).

    Returns
    -------
    g : ndarray of shape (2 * M,)
        Density values (they integrate to 1 over the circle).
    """
    k = np.arange(2 * M, dtype=np.float64)
    d = k / M
    d = np.where(d > 1.0, d - 2.0, d)  # signed distance on the circle, in (-1, 1]
    n_img = int(np.ceil((_GAUSS_TAIL_SD * sigma + 1.0) / 2.0))
    g = np.zeros(2 * M, dtype=np.float64)
    inv = 1.0 / sigma
    for m in range(-n_img, n_img + 1):
        z = (d - 2.0 * m) * inv
        g += np.exp(-0.5 * z * z)
    g *= inv / np.sqrt(2.0 * np.pi)
    return g


# Spectral form of the sampled kernel when the Gaussian spans at least this
# many grid steps: the aliased series below then needs at most ~6 terms.
_SPECTRAL_MIN_STEPS = 0.5


def periodized_gaussian_spectrum(M, sigma):
    """``numpy.fft.rfft(periodized_gaussian(M, sigma))`` without sampling it.

    The circle has length 2, so the Fourier coefficients of the wrapped
    Gaussian are ``c_j = exp(-(pi j sigma)^2 / 2)``; sampling at ``k / M``
    aliases them: ``G_l = M * sum_m c_(l + 2 M m)`` (Poisson summation). Terms
    with ``pi |j| sigma > 9`` are below 1e-17 and left out. When the kernel is
    narrower than half a grid step the series would need many aliases, and the
    sampled kernel is transformed instead.

    Returns
    -------
    spec : ndarray of shape (M + 1,)
        Real: the kernel is even, so its transform has no imaginary part
        (``rfft`` leaves round-off there).
    """
    if M * sigma < _SPECTRAL_MIN_STEPS:
        return np.fft.rfft(periodized_gaussian(M, sigma)).real
    a = 0.5 * (np.pi * sigma) ** 2
    cut = 9.0 / (np.pi * sigma)  # c_j < 1e-17 beyond
    spec = np.zeros(M + 1)
    l = np.arange(min(M, int(cut)) + 1, dtype=np.float64)
    spec[: l.shape[0]] = np.exp(-a * l * l)
    if cut > M:
        # aliases reach back into [0, M]: add every term within the cut
        l = np.arange(M + 1, dtype=np.float64)
        for m in range(1, int(np.ceil(cut / (2 * M))) + 1):
            for j in (l + 2 * M * m, l - 2 * M * m):
                spec += np.exp(-a * j * j)
    spec *= M
    return spec


# ---------------------------------------------------------------------------
# Truncated hyperbolic secant on [0, 1]
# ---------------------------------------------------------------------------
#
# k(s | s0) = sech((s - s0) / h) / Z(s0, h) on [0, 1]. With A(x) = arctan(e^x),
# the antiderivative of sech is 2 A(x) (up to a constant), so every quantity is
# a difference of A at two points. Differences are formed by ``_atan_exp_diff``
# without cancellation, which keeps the tails accurate for h down to 2**-12 and
# for kernels centred on the boundary (s0 = 0 or 1).


def _sech(x):
    # 2 e^-|x| / (1 + e^-2|x|): no overflow of cosh for large |x|.
    e = np.exp(-np.abs(x))
    return 2.0 * e / (1.0 + e * e)


def _atan_exp(x):
    """A(x) = arctan(exp(x)), for x <= 0 (no overflow)."""
    return np.arctan(np.exp(x))


def _atan_exp_diff(x1, x2):
    """A(x2) - A(x1) for x1 <= x2, to full relative precision.

    arctan(e^x2) - arctan(e^x1) = atan2(e^x2 - e^x1, 1 + e^(x1 + x2)); both
    arguments are scaled by e^-c, c = max(0, x2, x1 + x2), so that nothing
    overflows, and e^x2 - e^x1 is formed with ``expm1``.
    """
    x1 = np.asarray(x1, dtype=np.float64)
    x2 = np.asarray(x2, dtype=np.float64)
    c = np.maximum(np.maximum(x2, x1 + x2), 0.0)
    num = -np.expm1(x1 - x2) * np.exp(x2 - c)
    den = np.exp(-c) + np.exp(x1 + x2 - c)
    return np.arctan2(num, den)


def _sech_limits(s0, h):
    s0 = np.asarray(s0, dtype=np.float64)
    return -s0 / h, (1.0 - s0) / h


def sech_normalizer(s0, h):
    """Normaliser ``Z(s0, h) = ∫_0^1 sech((s - s0) / h) ds`` of the truncated sech.

    ``Z = h [gd((1 - s0) / h) + gd(s0 / h)]`` with ``gd`` the Gudermannian
    function, evaluated without overflow for any ``h > 0``.

    Parameters
    ----------
    s0 : float or ndarray
        Centres in [0, 1].
    h : float
        Scale, > 0.

    Returns
    -------
    Z : ndarray (or float) broadcast from ``s0``.
    """
    a, b = _sech_limits(s0, h)
    return 2.0 * h * _atan_exp_diff(a, b)


def sech_pdf(s, s0, h):
    """Density of the sech kernel of scale ``h`` centred at ``s0``, truncated to [0, 1].

    Zero outside [0, 1]. ``s`` and ``s0`` broadcast against each other.
    """
    s = np.asarray(s, dtype=np.float64)
    s0 = np.asarray(s0, dtype=np.float64)
    dens = _sech((s - s0) / h) / sech_normalizer(s0, h)
    return np.where((s >= 0.0) & (s <= 1.0), dens, 0.0)


def sech_cdf(s, s0, h):
    """Distribution function of the truncated sech kernel (0 below 0, 1 above 1)."""
    s = np.asarray(s, dtype=np.float64)
    a, b = _sech_limits(s0, h)
    z = np.clip((s - np.asarray(s0, dtype=np.float64)) / h, a, b)
    return np.clip(_atan_exp_diff(a, z) / _atan_exp_diff(a, b), 0.0, 1.0)


def sech_ppf(u, s0, h):
    """Inverse distribution function of the truncated sech kernel, in closed form.

    ``F⁻¹(u | s0) = s0 + h ln tan θ`` with ``θ = A(a) + u (A(b) - A(a))``,
    ``A(x) = arctan(e^x)``, ``a = -s0 / h``, ``b = (1 - s0) / h``. Both
    ``θ`` and ``π/2 - θ = A(-b) + (1 - u)(A(b) - A(a))`` are formed as sums of
    positive terms, and ``ln tan θ = ln sin θ - ln sin(π/2 - θ)``, so neither
    tail loses precision. The result is clipped to [0, 1].
    """
    u = np.asarray(u, dtype=np.float64)
    a, b = _sech_limits(s0, h)
    mass = _atan_exp_diff(a, b)
    theta = _atan_exp(a) + u * mass
    theta_c = _atan_exp(-b) + (1.0 - u) * mass
    with np.errstate(divide="ignore"):
        # u = 0 (or 1) with a kernel far from the other edge gives ln 0 = -inf,
        # which the clip maps to the edge of [0, 1].
        x = np.log(np.sin(theta)) - np.log(np.sin(theta_c))
    out = np.clip(np.asarray(s0, dtype=np.float64) + h * x, 0.0, 1.0)
    return out if out.ndim else float(out)


# ---------------------------------------------------------------------------
# Beta / Dirichlet log-kernels (ECE-KDE, multiclass recalibration)
# ---------------------------------------------------------------------------

# Probabilities are clipped to [SIMPLEX_EPS, 1 - SIMPLEX_EPS] before taking
# logs: an exact zero would give ``0 * log(0) = nan`` in the kernel.
SIMPLEX_EPS = 1e-12


def clip_simplex(F, eps=SIMPLEX_EPS):
    """Clip the rows of ``F`` to ``[eps, 1 - eps]`` and renormalise them to sum to 1.

    Returns a new float64 array of shape ``(n, K)``.
    """
    return _clip_simplex(np.asarray(F, dtype=np.float64), eps, np)


def dirichlet_log_normalizer(F, bandwidth):
    """``c_i = sum_k lnGamma(f_ik / b + 1) - lnGamma(1 / b + K)`` for each row of F.

    ``-c_i`` is the log normalising constant of the Dirichlet kernel centred at
    ``f_i`` (parameters ``alpha_i = f_i / b + 1``, which sum to ``1 / b + K``
    because the rows of ``F`` sum to one); the definition is
    :func:`skcalib._backend.kde.statistics.log_normalizer`.
    """
    return _log_normalizer(np.asarray(F, dtype=np.float64), bandwidth, np)


def dirichlet_log_kernel(X, F, bandwidth):
    """Dirichlet log-kernel matrix ``L[j, i] = log Dir(x_j; alpha = f_i / b + 1)``.

    ``L = log(X) (F / b)^T - 1 c^T`` with ``c`` from :func:`dirichlet_log_normalizer`.
    Rows of ``X`` and ``F`` must lie in the open simplex (see :func:`clip_simplex`).

    Parameters
    ----------
    X : ndarray of shape (m, K)
        Evaluation points.
    F : ndarray of shape (n, K)
        Kernel centres.
    bandwidth : float
        ``b > 0``; the kernel concentrates on its centre as ``b -> 0``.

    Returns
    -------
    L : ndarray of shape (m, n)
    """
    F = np.asarray(F, dtype=np.float64)
    L = np.log(np.asarray(X, dtype=np.float64)) @ (F / bandwidth).T
    L -= dirichlet_log_normalizer(F, bandwidth)
    return L


def beta_log_kernel(x, s, bandwidth):
    """Beta log-kernel ``L[j, i] = log Beta(x_j; s_i / b + 1, (1 - s_i) / b + 1)``.

    The Dirichlet kernel of :func:`dirichlet_log_kernel` on the two-class
    simplex, with the positive class as the second coordinate. Values must lie
    in the open interval (0, 1).
    """
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    s = np.asarray(s, dtype=np.float64).reshape(-1)
    return dirichlet_log_kernel(
        np.column_stack([1.0 - x, x]), np.column_stack([1.0 - s, s]), bandwidth
    )
