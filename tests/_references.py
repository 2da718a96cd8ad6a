"""Independent references shared by the tests: direct formulas, written once.

Nothing here calls the library (the sech noise takes the coefficients of
its tangent from it: they are part of the noise's definition).
"""

import numpy as np

from skcalib._backend.sech.compiled import TAN_P, TAN_Q


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


def dirichlet_smoother_dense(F, y, w, X, b, leave_one_out, whole_weight=False):
    """Dirichlet Nadaraya-Watson statistics from the full ``(m, n)`` kernel table.

    ``F`` (centres, clipped into the open simplex), labels ``y``, frequency
    weights ``w``; rows ``X`` (the centres themselves with
    ``leave_one_out``, which leaves one copy of row ``j``'s own centre out,
    or all of them with ``whole_weight``).
    Pair statistics enumerate the ``n x n`` table of pairs of distinct
    samples: ``w`` copies of a centre form ``w * max(w - 1, 0)`` pairs,
    centres of weight ``<= 1`` none with themselves. Returns a dict of
    ``log_mass``, ``ratio``, ``ess``, ``pairs`` and ``squared_error``.
    """
    from scipy.special import gammaln

    n, K = F.shape
    log_norm = gammaln(F / b + 1.0).sum(axis=1) - gammaln(1.0 / b + K)
    E = np.eye(K)[y]
    out = {k: [] for k in ("log_mass", "ratio", "ess", "pairs", "squared_error")}
    for j, x in enumerate(X):
        v = np.array(w, dtype=float)
        if leave_one_out:
            v[j] = 0.0 if whole_weight else max(v[j] - 1.0, 0.0)
        # v copies of mass k: (v k)^2 = c (v k)^2 (sum over copies of k^2)
        # plus (1 - c) (v k)^2 (the v (v - 1) k^2 pairs of distinct copies)
        c = np.minimum(1.0, 1.0 / np.maximum(v, 1.0))
        with np.errstate(divide="ignore"):
            L = np.log(v) + (F / b) @ np.log(x) - log_norm
            log_self = 2.0 * L + np.log(1.0 - c)
        top = L.max()
        g = np.exp(L - top)
        z = g.sum()
        out["log_mass"].append(top + np.log(z))
        out["ratio"].append(g @ E / z)
        out["ess"].append(z**2 / (c * g**2).sum())
        log_pairs = L[:, None] + L[None, :]
        np.fill_diagonal(log_pairs, log_self)
        pair_w = np.exp(log_pairs - log_pairs.max())
        D = E - x
        out["pairs"].append((pair_w * (E @ E.T)).sum() / pair_w.sum())
        out["squared_error"].append((pair_w * (D @ D.T)).sum() / pair_w.sum())
    return {k: np.array(v) for k, v in out.items()}


def lowess_at_every_point(x, y, f=2 / 3):
    """LOWESS without robustness iterations, fitted directly at every ``x``
    (no interpolation: R's ``lowess(x, y, f, iter = 0, delta = 0)``), from
    its definition: the ``floor(f n)``-th smallest distance ``h`` (at least
    the 2nd), tricube weights of ``r / h`` (1 within ``0.001 h``, 0 beyond
    ``0.999 h``), and the weighted least-squares line at the point unless the
    weighted standard deviation of the neighbourhood's x is at most
    ``0.001`` of the range of x (then the weighted mean). O(n^2)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = x.size
    q = max(2, min(n, int(np.floor(f * n + 1e-7))))
    out = np.empty(n)
    for i in range(n):
        r = np.abs(x - x[i])
        h = np.sort(r)[q - 1]
        if h == 0:
            out[i] = y[r == 0].mean()
            continue
        k = np.where(r <= 0.999 * h, (1 - (r / h) ** 3) ** 3, 0.0)
        k[r <= 0.001 * h] = 1.0
        k /= k.sum()
        a = np.sum(k * x)
        c = np.sum(k * (x - a) ** 2)
        if np.sqrt(c) > 0.001 * (x.max() - x.min()):
            out[i] = np.sum(k * y) + (x[i] - a) * np.sum(k * (x - a) * y) / c
        else:
            out[i] = np.sum(k * y)
    return out
