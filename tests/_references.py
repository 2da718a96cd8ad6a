"""Independent references shared by the tests: direct formulas, written once.

Nothing here calls the library (the sech noise takes the coefficients of
its tangent from it: they are part of the noise's definition).
"""

import numpy as np

from skcalib._backend.sech_compiled import TAN_P, TAN_Q


def reflected_kernel(t, s, sigma):
    """Reflected Gaussian ``K(t, s) = sum_m phi(t - s - 2m) + phi(t + s - 2m)``
    over every image that comes within 12 sigma of the points (the rest is
    below 1e-30); shape ``(len(t), len(s))``."""
    t, s = np.asarray(t, dtype=float), np.asarray(s, dtype=float)
    d = t[:, None] - s[None, :]
    e = t[:, None] + s[None, :]
    out = np.zeros_like(d)
    for arg in (d, e):
        lo, hi = arg.min(), arg.max()
        for m in range(
            int(np.floor((lo - 12 * sigma) / 2)),
            int(np.ceil((hi + 12 * sigma) / 2)) + 1,
        ):
            if hi - 2 * m < -12 * sigma or lo - 2 * m > 12 * sigma:
                continue
            out += np.exp(-0.5 * ((arg - 2 * m) / sigma) ** 2)
    return out / (sigma * np.sqrt(2 * np.pi))


def silverman_bandwidth(x):
    """Silverman's rule of thumb ``0.9 min(sd, IQR / 1.349) n^(-1/5)``."""
    x = np.asarray(x, dtype=float)
    q25, q75 = np.percentile(x, [25, 75])
    return 0.9 * min(x.std(), (q75 - q25) / 1.349) * x.size ** (-0.2)


def reflected_kde(at, s, h, lo=0.0, hi=1.0):
    """Gaussian kernel density of ``s`` on ``[lo, hi]``, reflected at both ends,
    by direct kernel sums."""
    span = hi - lo
    u = (np.asarray(at, dtype=float) - lo) / span
    v = (np.asarray(s, dtype=float) - lo) / span
    return reflected_kernel(u, v, h / span).mean(axis=1) / span


def rational_log_tan(theta):
    """``ln tan θ`` on [0, π/4] as the sampler defines it: the tangent
    ``θ + a``, ``a = θ y P(y) / Q(y)``, ``y = θ²``, ``P`` and ``Q`` (monic,
    degree 3) of coefficients ``TAN_P`` and ``TAN_Q`` by Horner's rule, one
    rounding per operation; numpy's logarithm of it, plus the exact error
    ``e`` of the sum ``θ + a`` over the sum. Its accuracy is checked against
    mpmath in ``test_sech``."""
    y = theta * theta
    p = ((TAN_P[3] * y + TAN_P[2]) * y + TAN_P[1]) * y + TAN_P[0]
    q = ((y + TAN_Q[2]) * y + TAN_Q[1]) * y + TAN_Q[0]
    a = p / q * y * theta
    tan = theta + a
    e = (theta - tan) + a
    with np.errstate(divide="ignore"):
        return np.log(tan) + e / np.maximum(tan, 5e-324)


def sech_noise_of_words(words, h):
    """The sech noise of 64-bit generator words, written out: bit 63 of each
    word is the sign, bits 0-62 give ``m``, and the noise is
    ``±h ln tan(m π / 2**65)``, ``ln tan`` by :func:`rational_log_tan`."""
    words = np.asarray(words, dtype=np.uint64)
    m = (words & np.uint64(2**63 - 1)).astype(np.float64)
    mag = rational_log_tan(m * (np.pi / 2.0**65))
    return np.where(words >> np.uint64(63) == 1, -mag, mag) * h
