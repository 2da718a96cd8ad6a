"""The kernel correction of a parametric map, and the map it gives.

At each node the offset maximises the kernel-weighted log-likelihood around
the base fit (bandwidth ``h``), or follows a monotone fit (``MONOTONE``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from ..isotonic import pav_blocks

# The bandwidth that stands for the most local map of all: a monotone step
# function (isotonic regression on the nodes), for calibration functions
# with jumps that a smooth correction can only blur.
MONOTONE = 0.0


# Log-odds offsets are kept within this range where the data cannot pin them.
_ALPHA_LIMIT = 30.0


def node_coordinates(stats):
    """Empirical distribution function at the nodes (mid-point of each mass)."""
    W = stats[1]
    total = W.sum()
    return (np.cumsum(W) - 0.5 * W) / total if total > 0 else np.zeros_like(W)


def correction_kernel(F, h):
    """Gaussian kernels ``exp(-(F_k - F_j)^2 / (2 h^2))`` between node coordinates.

    ``F`` of shape ``(m,)`` or ``(B, m)`` (one matrix per row).
    """
    return kernel_of_squared_gaps(squared_gaps(np.asarray(F)), h)


def squared_gaps(F):
    """``(F_k - F_j)^2`` for the last axis of ``F``, in one new array."""
    gap = F[..., :, None] - F[..., None, :]
    return np.square(gap, out=gap)


# exp of anything below it is 0 in double precision (e^-746 is under half
# the smallest subnormal number, 2^-1075).
_EXP_ZERO_BELOW = -746.0


def kernel_of_squared_gaps(squares, h):
    """:func:`correction_kernel` from :func:`squared_gaps` (kept for other
    bandwidths), in one new array."""
    kern = np.multiply(squares, -0.5 / (h * h))
    far = kern < _EXP_ZERO_BELOW
    if not far.any():
        return np.exp(kern, out=kern)
    # The narrowest kernels are 0 for a third to a half of the pairs, and
    # exp reaches that 0 by a slow path that took four fifths of their time:
    # the zeros are written instead (the same numbers).
    np.exp(kern, out=kern, where=~far)
    np.copyto(kern, 0.0, where=far)
    return kern


def fit_correction(u, stats, h, prior, *, init=None, max_iter=100, tol=1e-9, kern=None):
    """Local-likelihood log-odds offsets ``alpha`` at the nodes ``u``.

    ``alpha_k`` solves ``sum_j K_kj (W1_j - W_j expit(u_j + alpha_k)) +
    prior (expit(u_k) - expit(u_k + alpha_k)) = 0`` with the Gaussian kernel
    ``K_kj = exp(-(F_k - F_j)^2 / (2 h^2))`` in the coordinates ``F`` of
    :func:`node_coordinates` (its peak is 1, so ``prior`` is a weight in the
    units of ``W``; ``kern``, if given, is that matrix, from
    :func:`correction_kernel`, and is overwritten). Each equation is the
    score of a concave one-parameter likelihood; Newton's method from
    ``init`` (default 0) with steps capped at 4, until the offset moves by
    less than ``tol``. Offsets are kept in ``[-30, 30]``: a node whose data
    all carry one label (and no prior) would drift towards an infinite
    offset, and stopping it at the bound rather than wherever its
    probability stops changing keeps the fit independent of the path
    (sample order, warm starts), which matters because ``alpha`` is
    interpolated between nodes. ``h = inf`` returns zeros, ``h = MONOTONE``
    (0) the isotonic fit of :func:`fit_monotone`.
    """
    return fit_corrections(
        u[None],
        np.asarray(stats)[None],
        h,
        prior,
        init=None if init is None else init[None],
        max_iter=max_iter,
        tol=tol,
        kern=None if kern is None else kern[None],
    )[0]


_BLOCK_ROWS = 256


def _newton_step(a, kw, eu, kw1, u, base, prior, P, Q):
    """One Newton step of :func:`fit_corrections` on a block of rows.

    ``P`` and ``Q`` are scratch arrays of the block's shape, reused from
    block to block: the fresh quarter-megabyte arrays of each step cost
    a tenth of its time to allocate.
    """
    np.multiply(np.exp(-a)[:, None], eu, out=P)
    P += 1.0
    # 1 / P by np.divide, the same correctly rounded quotient: np.reciprocal
    # is not vectorised, and took twice as long.
    np.divide(1.0, P, out=P)
    own = expit(u + a)
    grad = kw1 - np.einsum("kj,kj->k", kw, P) + prior * (base - own)
    P *= np.subtract(1.0, P, out=Q)
    curv = np.einsum("kj,kj->k", kw, P) + prior * own * (1.0 - own)
    # np.minimum/np.maximum: np.clip without its Python wrapper, which cost
    # more than the clipping of a block's offsets
    step = np.minimum(np.maximum(grad / np.maximum(curv, 1e-300), -4.0), 4.0)
    step += a
    return np.minimum(np.maximum(step, -_ALPHA_LIMIT, out=step), _ALPHA_LIMIT, out=step)


def fit_corrections(
    U, stats, h, prior, *, init=None, max_iter=100, tol=1e-9, kern=None
):
    """:func:`fit_correction` of ``B`` problems at once.

    ``U`` of shape ``(B, m)``, ``stats`` ``(B, 2, m)``, ``init`` ``(B, m)``
    and ``kern`` ``(B, m, m)``, which is overwritten (its megabytes reused:
    the pages of a new array cost as much as a pass over it); returns the
    offsets, shape ``(B, m)``.
    """
    U = np.asarray(U, dtype=np.float64)
    if not np.isfinite(h):
        return np.zeros_like(U)
    if h == MONOTONE:
        return np.array(
            [fit_monotone(u, st, prior) for u, st in zip(U, stats, strict=True)]
        )
    B, m = U.shape
    W1, W = stats[:, 0], stats[:, 1]
    if kern is None:
        kern = correction_kernel(np.array([node_coordinates(st) for st in stats]), h)
    # Every offset solves its own one-parameter equation: the B m equations
    # are rows of one Newton iteration, and a row leaves it once converged
    # (its next steps would be below round-off, Newton converging
    # quadratically), so that the work follows the rows still moving.
    kw1 = np.matmul(kern, W1[:, :, None])[:, :, 0].reshape(-1)
    kw = np.multiply(kern, W[:, None, :], out=kern).reshape(B * m, m)
    u = U.reshape(-1)
    base = expit(u)
    # expit(u_j + alpha_k) = 1 / (1 + e^-u_j e^-alpha_k): one exponential per
    # node and per offset instead of one per pair (|alpha| <= 30 keeps
    # e^-alpha finite and positive, so an overflow of e^-u_j gives 0).
    with np.errstate(over="ignore"):
        eu = np.repeat(np.exp(-U), m, axis=0)
    alpha = np.zeros(B * m) if init is None else np.array(init, dtype=np.float64)
    alpha = alpha.reshape(-1)
    rows = np.arange(B * m)
    frozen = np.zeros(B * m, dtype=bool)
    a = alpha.copy()
    scratch = np.empty((2, min(_BLOCK_ROWS, B * m), m))
    for _ in range(max_iter):
        new = np.empty_like(a)
        # Blocks of rows small enough for the cache (the work is a few
        # passes over each row).
        for lo in range(0, a.shape[0], _BLOCK_ROWS):
            sl = slice(lo, lo + _BLOCK_ROWS)
            P, Q = scratch[:, : min(_BLOCK_ROWS, a.shape[0] - lo)]
            new[sl] = _newton_step(
                a[sl], kw[sl], eu[sl], kw1[sl], u[sl], base[sl], prior, P, Q
            )
        done = (np.abs(new - a) < tol) & ~frozen
        a = new
        alpha[rows[done]] = a[done]
        frozen |= done
        if frozen.all():
            break
        # Converged rows keep being stepped (and ignored) until they are half
        # of the block: dropping them costs a copy of the rest.
        if 2 * np.count_nonzero(frozen) > frozen.shape[0]:
            keep = ~frozen
            rows, a, kw, eu = rows[keep], a[keep], kw[keep], eu[keep]
            kw1, u, base, frozen = kw1[keep], u[keep], base[keep], frozen[keep]
    else:
        alpha[rows[~frozen]] = a[~frozen]
    return alpha.reshape(B, m)


def fit_monotone(u, stats, prior):
    """Log-odds offsets of the isotonic fit at the nodes ``u``.

    The node frequencies ``W1 / W`` are pooled into non-decreasing blocks
    (:func:`pav_blocks`); each block's frequency is shrunk by
    ``2 prior`` pseudo-observations at the overall frequency ``sum W1 / sum
    W`` (with balanced classes and unit weights, a block of ``k`` positives
    in ``m`` rows gets ``(k + 1) / (m + 2)``, as Venn-Abers predictors
    give), which keeps it away from 0 and 1; the shrunk frequencies, weighted
    by ``size + 2 prior``, are pooled once more where the shrinkage broke
    their order. Nodes without mass take the value interpolated between
    their neighbours. Offsets are ``logit(q) - u`` within ``[-30, 30]``.
    """
    W1, W = stats
    has = W > 0
    if not np.any(has):
        return np.zeros_like(u)
    block = pav_blocks(W1[has] / W[has], W[has])
    size = np.bincount(block, W[has])
    ones = np.bincount(block, W1[has])
    # Shrinking towards the base's probability, as the smooth corrections
    # do, gave blocks of ten negatives a probability of 0.012 where a steep
    # base went there, and a running maximum instead of the second pooling
    # carried a lone small block's 1/3 over half the scores: on a jump
    # truth (exact excess log-loss, 3 samples) 77 / 35 / 7.8e-3 at n = 50 /
    # 200 / 1000 against 41 / 17 / 5.3e-3 now (Venn-Abers 36 / 15 / 5.0).
    weight = size + 2.0 * prior
    # Training statistics are totals less the held-out sums, so a block's
    # positives can exceed its weight by a rounding error; against a total
    # weight of 1e100 the pseudo-observations cannot pull that below 1, and
    # the frequency 1 + 2e-16 had a NaN log-odds.
    q = np.clip((ones + 2.0 * prior * (W1.sum() / W.sum())) / weight, 0.0, 1.0)
    merged = pav_blocks(q, weight)
    q = np.bincount(merged, q * weight) / np.bincount(merged, weight)
    q = np.interp(u, u[has], q[merged[block]])
    with np.errstate(divide="ignore"):
        log_odds = np.log(q) - np.log1p(-q)
    return np.clip(log_odds - u, -_ALPHA_LIMIT, _ALPHA_LIMIT)


@dataclass(frozen=True)
class LogitMap:
    """``u -> expit(u + alpha(u))`` with ``alpha`` interpolated between nodes.

    Beyond the extreme nodes ``alpha`` is constant. With ``clip`` (binary
    maps) the map itself is constant there: no extrapolation beyond the
    most extreme calibration score, where being more confident costs little
    when right and much when wrong. Without it (multiclass maps) the
    parametric base carries the map beyond them: each class clipped to its
    own range and the row renormalised would reorder the classes of a row
    more confident than any calibration row.
    """

    nodes: np.ndarray
    alpha: np.ndarray
    bandwidth: float
    clip: bool = True

    def log_odds(self, u):
        inside = np.clip(u, self.nodes[0], self.nodes[-1])
        if self.clip:
            u = inside
        if not np.any(self.alpha):
            return u
        return u + np.interp(inside, self.nodes, self.alpha)
