"""Kernels on [0, 1] and on the probability simplex.

* reflected Gaussian (sampled on a periodic grid, used by the grid smoother),
* truncated hyperbolic-secant kernel (perturbation: pdf, cdf, inverse cdf, sampler),
* Beta / Dirichlet log-kernels (ECE-KDE and the multiclass recalibrator).
"""

from __future__ import annotations

import copy
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

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


def sech_sample(s0, h, rng, *, out=None, complement=None):
    """Draw one value from the truncated sech kernel centred at each ``s0``.

    Exact rejection sampling from the untruncated hyperbolic-secant law, keeping
    draws inside [0, 1]. A proposal is ``s0 ± h ln tan(π v / 2)`` with
    ``v`` uniform on (0, 1/2) and a random sign: the symmetric form keeps full
    relative precision in both tails. The acceptance probability
    ``Z(s0, h) / (π h)`` is at least ~1/2 (a centre on the boundary with small
    ``h``) and ~1 for interior centres. Rows still rejected after a few rounds,
    small inputs and large ``h`` (acceptance then falls like ``1 / h``) use the
    closed-form inverse cdf (:func:`sech_ppf`) instead.

    Each proposal uses 32 random bits, one for the sign and 31 for
    ``v = m / 2**32``, ``m = 1 .. 2**31 - 1`` (``m = 0`` is redrawn), and
    ``h ln tan(π v / 2)`` is computed in single precision before being added
    to the double-precision centre. Resolution: ``|s - s0| <= 21.7 h``, i.e.
    the untruncated law is cut where its tail has probability ``2**-31`` per
    draw, and the noise carries a rounding error below about ``1e-6 h``
    (a few ``1e-7`` relative beyond ``h``), which moves the law by a total
    variation distance of order ``1e-6``: far below anything a kernel
    estimate, a certificate or a statistical test can resolve.

    Large inputs are cut into fixed blocks of ``2**17`` draws, processed by up
    to ``min(4, number of usable CPUs)`` threads. Block ``i`` reads its bits
    at its own fixed position of the generator's stream (bit generators with
    ``advance``, such as numpy's default PCG64), so the draws are exactly those
    of a sequential pass, whatever the number of threads; other bit generators
    are read sequentially by one thread.

    Parameters
    ----------
    s0 : float or ndarray
        Centres, clipped to [0, 1] (NaN gives NaN).
    h : float
        Scale, > 0.
    rng : numpy.random.Generator
    out : ndarray of shape (n,), dtype float64, default=None
        Where to write the draws, for a 1-D ``s0`` of length ``n``; it may be
        a strided view and must not overlap ``s0``.
    complement : ndarray of shape (n,), dtype float64, default=None
        If given (with ``out``), also receives ``1 - s``, computed block by
        block while the draws are in cache.

    Returns
    -------
    s : ndarray of the shape of ``s0`` (a float if ``s0`` is a scalar), or
        ``out`` when given.
    """
    s0 = np.asarray(s0, dtype=np.float64)
    if out is None:
        out = np.empty(s0.shape)
    elif s0.ndim != 1 or out.shape != s0.shape:
        raise ValueError("out must have the shape of a 1-D s0.")
    if complement is not None and complement.shape != out.shape:
        raise ValueError("complement must have the shape of out.")
    if h > 0.25 or s0.size < 64:
        out[...] = sech_ppf(rng.random(size=s0.shape), np.clip(s0, 0.0, 1.0), h)
        if complement is not None:
            np.subtract(1.0, out, out=complement)
        return out if out.ndim else float(out)
    centre, dst = s0.reshape(-1), out.reshape(-1)
    n = centre.shape[0]
    n_blocks = -(-n // _SECH_BLOCK)
    bitgen = rng.bit_generator
    n_groups = min(_sech_threads(), n_blocks // _SECH_MIN_BLOCKS_PER_THREAD)
    if n_groups < 2 or not hasattr(bitgen, "advance"):
        rejected = _sech_blocks(centre, h, dst, complement, bitgen, 0, n)
    else:
        # Contiguous runs of whole blocks; two draws per 64-bit word, so a run
        # starting at row ``start`` begins at word ``start // 2`` of the stream.
        bounds = [_SECH_BLOCK * (n_blocks * g // n_groups) for g in range(n_groups)]
        tasks = []
        for start, stop in zip(bounds, bounds[1:] + [n], strict=True):
            stream = copy.copy(bitgen)
            stream.advance(start // 2)
            tasks.append((centre, h, dst, complement, stream, start, stop))
        bitgen.advance((n + 1) // 2)
        pool = _sech_pool()
        futures = [pool.submit(_sech_blocks, *task) for task in tasks[1:]]
        rejected = _sech_blocks(*tasks[0])
        for future in futures:
            rejected += future.result()
    if rejected:
        rejected = np.concatenate(rejected)
        _sech_redraw(centre, h, rng, dst, rejected)
        if complement is not None:
            complement[rejected] = 1.0 - dst[rejected]
    return out


# One proposal from 32 bits (two per 64-bit word of the bit generator): the
# sign bit of an int32 picks the side and the other 31 bits give m, with
# π v / 2 = m π / 2**33 in [0, π/4).
_SIGN_BIT = np.int32(-(2**31))
_LOW_BITS = np.int32(2**31 - 1)
_ANGLE_PER_UNIT = np.float32(np.pi / 2**33)
# Below this scale h * ln tan(...) could underflow in single precision.
_MIN_F32_SCALE = 2.0**-80
# Blocks small enough for the cache: the passes over a block cost little.
# Even, so that every block but the last starts on a whole 64-bit word.
_SECH_BLOCK = 1 << 17
_SECH_MIN_BLOCKS_PER_THREAD = 2
_SECH_MAX_THREADS = 4
_SECH_REJECTION_ROUNDS = 4


def _sech_threads():
    try:
        n_cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        n_cpus = os.cpu_count() or 1
    return max(1, min(_SECH_MAX_THREADS, n_cpus))


_SECH_POOL = None
_SECH_POOL_LOCK = threading.Lock()


def _sech_pool():
    global _SECH_POOL
    with _SECH_POOL_LOCK:
        if _SECH_POOL is None:
            # The calling thread takes a share of the work itself.
            _SECH_POOL = ThreadPoolExecutor(max(1, _SECH_MAX_THREADS - 1))
        return _SECH_POOL


def _forget_sech_pool():
    # A forked child has none of the parent's threads (and may inherit a held
    # lock): it makes its own pool.
    global _SECH_POOL, _SECH_POOL_LOCK
    _SECH_POOL = None
    _SECH_POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_sech_pool)


class _SechScratch:
    """Reusable work buffers of one block (fresh arrays would cost page faults)."""

    def __init__(self, size):
        self.bits = np.empty(size, dtype=np.int32)
        self.noise = np.empty(size, dtype=np.float32)


def _sech_blocks(centre, h, out, complement, bitgen, start, stop):
    """Proposals for rows ``start:stop``, block by block, reading ``bitgen``.

    Returns the list of arrays of rows whose proposal fell outside [0, 1].
    """
    scratch = _SechScratch(min(stop - start, _SECH_BLOCK))
    rejected = []
    for first in range(start, stop, _SECH_BLOCK):
        block = slice(first, min(first + _SECH_BLOCK, stop))
        d = out[block]
        _sech_proposal(centre[block], h, bitgen, d, scratch)
        if complement is not None:
            np.subtract(1.0, d, out=complement[block])
        lo, hi = d.min(), d.max()
        if lo >= 0.0 and hi <= 1.0:
            continue
        # Usually a few draws past one edge: one comparison finds them.
        if lo >= 0.0:
            bad = d > 1.0
        elif hi <= 1.0:
            bad = d < 0.0
        else:
            bad = ~((d >= 0.0) & (d <= 1.0))
        rejected.append(first + np.flatnonzero(bad))
    return rejected


def _sech_proposal(centre, h, bitgen, out, scratch=None):
    """``clip(centre) + X``, X of the untruncated sech law of scale ``h``, in ``out``.

    X has density ``sech(x / h) / (π h)`` (see :func:`sech_sample` for the
    bits used and the resolution).
    """
    n = centre.shape[0]
    if scratch is None:
        scratch = _SechScratch(n)
    bits = bitgen.random_raw((n + 1) // 2).view(np.int32)[:n]
    mag, x = scratch.bits[:n], scratch.noise[:n]
    np.bitwise_and(bits, _LOW_BITS, out=mag)
    np.multiply(mag, _ANGLE_PER_UNIT, out=x, dtype=np.float32)
    np.tan(x, out=x)
    with np.errstate(divide="ignore"):
        # m = 0 gives -inf, hence a draw outside [0, 1] that is redrawn.
        np.log(x, out=x)
    # ln tan(π v / 2) <= 0: flipping its sign bit with the draw's sign bit
    # gives either side with probability 1/2.
    np.bitwise_and(bits, _SIGN_BIT, out=bits)
    xi = x.view(np.int32)
    np.bitwise_xor(xi, bits, out=xi)
    np.clip(centre, 0.0, 1.0, out=out)
    if h >= _MIN_F32_SCALE:
        x *= np.float32(h)
        out += x
    else:
        out += h * x.astype(np.float64)
    return out


def _sech_redraw(centre, h, rng, out, todo):
    """Redraw ``out[todo]`` until inside [0, 1] (the inverse cdf after a few rounds)."""
    for _ in range(_SECH_REJECTION_ROUNDS):
        if todo.size == 0:
            return
        x = _sech_proposal(centre[todo], h, rng.bit_generator, np.empty(todo.size))
        ok = (x >= 0.0) & (x <= 1.0)
        out[todo[ok]] = x[ok]
        todo = todo[~ok]
    if todo.size:
        c = np.clip(centre[todo], 0.0, 1.0)
        out[todo] = sech_ppf(rng.random(size=todo.size), c, h)


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
    F = np.clip(np.asarray(F, dtype=np.float64), eps, 1.0 - eps)
    F /= F.sum(axis=1, keepdims=True)
    return F


def dirichlet_log_normalizer(F, bandwidth):
    """``c_i = sum_k lnGamma(f_ik / b + 1) - lnGamma(1 / b + K)`` for each row of F.

    ``-c_i`` is the log normalising constant of the Dirichlet kernel centred at
    ``f_i`` (parameters ``alpha_i = f_i / b + 1``, which sum to ``1 / b + K``
    because the rows of ``F`` sum to one).
    """
    from scipy.special import gammaln

    F = np.asarray(F, dtype=np.float64)
    inv_b = 1.0 / bandwidth
    return gammaln(F * inv_b + 1.0).sum(axis=1) - gammaln(inv_b + F.shape[1])


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
