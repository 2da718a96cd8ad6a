"""Labels drawn from the null hypothesis, many resamples at a time.

A resample draws ``y_i ~ Bernoulli(s_i)`` for every row (or, for a row that
stands for ``w_i`` observations, ``Binomial(w_i, s_i)`` positives). Draws come
in blocks: a ``(m, n)`` matrix of ``m`` resamples, so that each statistic is
computed column-wise by a few vectorised passes instead of a Python loop.

The Bernoulli draw is exact without a double per label: a label compares
one random byte ``b`` with ``k = floor(256 s)`` (``b < k``: 1, ``b > k``: 0),
and only the labels whose byte equals ``k`` (1 in 256) compare a uniform
double with ``256 s - k``. The label is then ``1`` exactly when the number
``(b + u) / 256`` (a uniform of 61 bits) is below ``s``, with the
probability a double comparison gives, from an eighth of the random words.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "BLOCK_LABELS",
    "BernoulliDraw",
    "block_sizes",
    "draw_classes",
]

# Labels per block (``m n``): 4 MB of bytes, 32 MB once weighted in float64.
BLOCK_LABELS = 1 << 22
# Resamples per block at most (blocks of tiny problems would only add
# Python calls below this many).
MAX_BLOCK = 1024


def block_sizes(n_resamples, n_rows):
    """Resamples per block: a function of the problem's size only, so that
    the draws (one seed per block) do not depend on the number of workers."""
    size = int(max(1, min(MAX_BLOCK, BLOCK_LABELS // max(n_rows, 1))))
    full, rest = divmod(n_resamples, size)
    return [size] * full + ([rest] if rest else [])


class BernoulliDraw:
    """Exact ``y ~ Bernoulli(s)`` by random bytes (see the module docstring).

    Parameters
    ----------
    s : ndarray of shape (n,)
        Probabilities in [0, 1]. ``s = 0`` never gives 1 and ``s = 1``
        always does.
    """

    def __init__(self, s):
        k = np.minimum(np.floor(s * 256.0), 255.0)
        self.k = k.astype(np.uint8)
        # exact: 256 s is exact and k <= 256 s < k + 1 (s = 1: k = 255, rest 1)
        self.rest = s * 256.0 - k
        self.n = s.shape[0]

    def __call__(self, rng, m):
        """Labels of ``m`` resamples: a boolean ``(m, n)`` matrix."""
        n = self.n
        size = m * n
        raw = rng.bit_generator.random_raw((size + 7) // 8)
        u = raw.view(np.uint8)[:size].reshape(m, n)
        y = np.less(u, self.k)
        tie = np.flatnonzero(np.equal(u, self.k))
        if tie.size:
            y.reshape(-1)[tie] = rng.random(tie.size) < self.rest[tie % n]
        return y


def draw_classes(rng, cum, m):
    """Class indices of ``m`` resamples, ``(m, n)``: the first class whose
    cumulative probability (``cum``, rows of cumulative sums with the last
    column 1) exceeds a uniform double."""
    n, k = cum.shape
    u = rng.random((m, n))
    out = np.zeros((m, n), dtype=np.intp)
    for j in range(k - 1):
        out += u >= cum[:, j]
    return out
