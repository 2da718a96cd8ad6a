"""Statistics of the goodness-of-fit tests of calibration and their null laws.

Every function takes one binary problem: 0/1 labels ``y``, scores ``s`` in
[0, 1] and non-negative frequency weights ``w`` (a weight of 2 counts as two
observations of the row), float64 arrays of one length. The null hypothesis
is ``y_i ~ Bernoulli(s_i)`` independently.
"""

from __future__ import annotations

import numpy as np
from scipy import special, stats

from .binning import assign_bins, quantile_edges
from .sorting import stable_sort

__all__ = [
    "brownian_max_abs_sf",
    "brownian_range_sf",
    "cumulative_differences",
    "HosmerLemeshowGroups",
    "hosmer_lemeshow",
    "SKCEKernel",
    "skce_linear",
    "skce_quadratic",
    "skce_quadratic_many",
    "spiegelhalter",
]


def spiegelhalter(y, s, w):
    """Spiegelhalter's ``Z`` and its two-sided normal p-value.

    ``Z = sum w (y - s)(1 - 2 s) / sqrt(sum w (1 - 2 s)^2 s (1 - s))``: the
    Brier score centred at its null mean and scaled by its null standard
    deviation. A zero variance (every score in {0, 1/2, 1}) gives ``Z = 0``
    when the numerator is 0 too and an infinite ``Z`` otherwise.
    """
    a = 1.0 - 2.0 * s
    num = float(np.sum(w * (y - s) * a))
    var = float(np.sum(w * a * a * s * (1.0 - s)))
    if var > 0:
        z = num / np.sqrt(var)
    else:
        z = 0.0 if num == 0 else np.copysign(np.inf, num)
    return z, float(2.0 * special.ndtr(-abs(z)))


def hosmer_lemeshow(y, s, w, n_bins, df_offset=0):
    """Hosmer-Lemeshow ``C``-hat over quantile groups of the scores.

    ``C = sum_g (O_g - E_g)^2 / (E_g (1 - E_g / N_g))`` with ``O_g = sum w y``,
    ``E_g = sum w s`` and ``N_g = sum w`` per group. Groups are the quantile
    bins of :func:`binning.quantile_edges` (tied scores share a group, so
    there may be fewer than ``n_bins``); groups with ``E_g`` of 0 or ``N_g``
    contribute only if their labels disagree with it (an infinite term).
    The null law is chi-squared with ``G - df_offset`` degrees of freedom
    (``G`` non-empty groups).

    Returns ``(statistic, pvalue, dof)``.
    """
    groups = HosmerLemeshowGroups(s, w, n_bins)
    stat = groups(y)
    dof = groups.n_groups - df_offset
    if dof < 1:
        return stat, float("nan"), dof
    return stat, float(stats.chi2.sf(stat, dof)), dof


class HosmerLemeshowGroups:
    """The Hosmer-Lemeshow ``C``-hat of fixed scores as a function of the
    labels: the groups, ``N_g``, ``E_g`` and the variances are computed once
    (a consistency test evaluates it on every resample)."""

    def __init__(self, s, w, n_bins):
        self.w, self.n_bins = w, n_bins
        self.bins = assign_bins(s, quantile_edges(s, w, n_bins))
        n_g = np.bincount(self.bins, weights=w, minlength=n_bins)
        e_g = np.bincount(self.bins, weights=w * s, minlength=n_bins)
        self.keep = n_g > 0
        self.n_groups = int(self.keep.sum())
        n_g, self.e_g = n_g[self.keep], e_g[self.keep]
        self.var = self.e_g * (1.0 - self.e_g / n_g)
        self.positive = self.var > 0
        self.safe_var = np.where(self.positive, self.var, 1.0)

    def __call__(self, y):
        o_g = np.bincount(self.bins, weights=self.w * y, minlength=self.n_bins)
        diff2 = (o_g[self.keep] - self.e_g) ** 2
        terms = np.where(self.positive, diff2 / self.safe_var, 0.0)
        terms = np.where(~self.positive & (diff2 > 0), np.inf, terms)
        return float(terms.sum())


def cumulative_differences(y, s, w):
    """Normalised Kolmogorov-Smirnov and Kuiper statistics of the cumulative
    differences (Arrieta-Ibarra, Gujral, Tannen, Tygert & Xu, 2022).

    With rows sorted by score, ``C_k = sum_{j <= k} w_j (y_j - s_j) / W`` is a
    random walk under the null hypothesis whose variance at the end is
    ``sigma^2 = sum w s (1 - s) / W^2``. Tied scores are one step of the walk
    (the path is read at the end of each block of equal scores), so the
    statistics do not depend on the order of tied rows and the tests are
    conservative with ties. ``KS = max_k |C_k| / sigma`` and
    ``Kuiper = (max_k C_k - min_k C_k) / sigma`` (with ``C_0 = 0``) tend under
    the null hypothesis to the supremum of ``|B|`` and the range of a standard
    Brownian motion ``B`` on [0, 1].

    Returns ``(ks, kuiper)``; both 0 when ``sigma = 0`` and the walk is flat,
    infinite when ``sigma = 0`` and it is not.
    """
    order, ss = stable_sort(s)
    r = (w * (y - s))[order]
    total = float(np.sum(w))
    ends = np.flatnonzero(np.r_[ss[1:] != ss[:-1], True])
    c = np.r_[0.0, np.cumsum(r)[ends]] / total
    sigma = np.sqrt(float(np.sum(w * s * (1.0 - s)))) / total
    ks, kuiper = float(np.max(np.abs(c))), float(np.max(c) - np.min(c))
    if sigma > 0:
        return ks / sigma, kuiper / sigma
    return (0.0 if ks == 0 else np.inf), (0.0 if kuiper == 0 else np.inf)


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


def _residual_matrix(y, P):
    """``e_y - p`` rows for a binary problem given as labels and scores."""
    return np.column_stack([(1.0 - y) - (1.0 - P), y - P])


def gaussian_kernel_rows(S, rows, bandwidth):
    """Gaussian kernel ``exp(-|s_i - s_j|^2 / (2 b^2))`` between ``rows`` and all."""
    K = S[rows, None] - S[None, :]
    K *= 1.0 / bandwidth
    np.square(K, out=K)
    K *= -0.5
    return np.exp(K, out=K)


class SKCEKernel:
    """Unbiased quadratic SKCE of residual vectors on fixed scores.

    The binary matrix-valued kernel ``k(s, s') I_2`` gives
    ``h_ij = 2 k(s_i, s_j) (y_i - s_i)(y_j - s_j)`` (the two coordinates of
    ``e_y - p`` are opposite). With frequency weights the U-statistic counts
    the ordered pairs of distinct copies: ``sum_{i != j} w_i w_j h_ij +
    sum_i w_i (w_i - 1) h_ii`` over ``W^2 - W`` (``W = sum w``); unit weights
    give the estimator of Widmann, Lindsten & Zachariah (2019).

    Only the labels change between the observed statistic and its resamples,
    so the kernel matrix is computed once and kept when it has at most
    ``chunk`` rows; larger ones are rebuilt in row chunks per call (memory
    ``O(chunk n)``).
    """

    def __init__(self, s, w, bandwidth, chunk=2048):
        self.s, self.w, self.bandwidth, self.chunk = s, w, bandwidth, chunk
        n = s.shape[0]
        self._K = (
            gaussian_kernel_rows(s, slice(None), bandwidth) if n <= chunk else None
        )

    def values(self, R):
        """One SKCE per column of residuals ``R = y - s`` (``O(n^2)`` each)."""
        s, w = self.s, self.w
        n = s.shape[0]
        R = R.reshape(n, -1)
        WR = w[:, None] * R
        if self._K is not None:
            total = np.einsum("ij,ij->j", WR, self._K @ WR)
        else:
            total = np.zeros(R.shape[1])
            for start in range(0, n, self.chunk):
                rows = slice(start, min(start + self.chunk, n))
                K = gaussian_kernel_rows(s, rows, self.bandwidth)
                total += np.einsum("ij,ij->j", WR[rows], K @ WR)
        # The diagonal (k(s, s) = 1): remove w_i^2 r_i^2, put back w_i (w_i - 1) r_i^2.
        total -= np.sum(w[:, None] * R * R, axis=0)
        W = float(np.sum(w))
        return 2.0 * total / (W * W - W)

    def __call__(self, y):
        """The SKCE of one label vector."""
        return float(self.values((y - self.s)[:, None])[0])


def skce_quadratic_many(s, w, R, bandwidth, chunk=2048):
    """:meth:`SKCEKernel.values`: one SKCE per column of residuals ``R``."""
    return SKCEKernel(s, w, bandwidth, chunk).values(R)


def skce_quadratic(y, s, w, bandwidth):
    """:func:`skce_quadratic_many` of one label vector."""
    return SKCEKernel(s, w, bandwidth)(y)


def skce_linear(y, s, bandwidth):
    """Linear-time SKCE and its one-sided asymptotic p-value.

    The mean of ``h`` over the disjoint pairs ``(2i, 2i + 1)`` of the rows in
    their given order (``floor(n / 2)`` pairs) is unbiased; under the null
    hypothesis each pair's ``h`` has mean 0, so
    ``z = sqrt(m) mean(h) / std(h)`` is asymptotically standard normal and
    large values indicate miscalibration (Widmann et al., 2019).

    Returns ``(statistic, pvalue, z)``.
    """
    m = s.shape[0] // 2
    r = y - s
    a, b = slice(0, 2 * m, 2), slice(1, 2 * m, 2)
    k = np.exp(-0.5 * ((s[a] - s[b]) / bandwidth) ** 2)
    h = 2.0 * k * r[a] * r[b]
    est = float(h.mean())
    sd = float(h.std(ddof=1)) if m > 1 else 0.0
    if sd > 0:
        z = np.sqrt(m) * est / sd
    else:
        z = 0.0 if est == 0 else np.copysign(np.inf, est)
    return est, float(special.ndtr(-z)), float(z)


def median_bandwidth(s, max_points=2000):
    """Median heuristic on the scores alone (fixed under the null hypothesis,
    so the test stays valid): the median of ``|s_i - s_j|`` over pairs of an
    evenly spaced subsample of the sorted scores, floored at 1e-3."""
    ss = np.sort(s)
    n = ss.shape[0]
    if n > max_points:
        ss = ss[np.linspace(0, n - 1, max_points).astype(np.intp)]
        n = max_points
    # every pair once, by lag: no n-by-n matrix and no index arrays
    d = np.empty(n * (n - 1) // 2)
    at = 0
    for lag in range(1, n):
        np.subtract(ss[lag:], ss[: n - lag], out=d[at : at + n - lag])
        at += n - lag
    med = float(np.median(d)) if d.size else 0.0
    return max(med, 1e-3)
