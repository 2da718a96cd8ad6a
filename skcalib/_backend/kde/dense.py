"""Leave-one-out ECE-KDE terms from dense blocks of the kernel matrix.

A block of ``r`` evaluation rows against all ``n`` centres is formed whole
(``O(r n)`` memory) and reduced to the row sums that
:func:`.statistics.finish_statistics` reads. Everything is a pure function of
the inputs in the namespace ``xp``, so torch and JAX differentiate it; the
bandwidth is a number, outside the graph.
"""

from __future__ import annotations

import math

from ..array_api.namespace import arange, detach, diagonal_mask, full, one_hot
from .statistics import (
    clip_simplex,
    concat_rows,
    finish_statistics,
    kde_error_terms,
    log_normalizer,
    pair_factor,
)

__all__ = ["LabelledCentres", "loo_error_terms"]


class LabelledCentres:
    """Kernel centres with class labels and frequency weights, in ``xp``.

    Parameters
    ----------
    F : array of shape (n, K)
        Probability vectors (clipped into the open simplex here).
    y : array of int of shape (n,)
        Class indices in ``[0, K)``.
    weight : array of shape (n,) or None
        Non-negative frequency weights; None for unit weights.
    eps : float
        Clipping level.
    xp : namespace
    """

    def __init__(self, F, y, weight, eps, xp):
        self.xp = xp
        self.F = clip_simplex(F, eps, xp)
        self.n, self.K = F.shape
        self.y = y
        self.E = one_hot(y, self.K, F.dtype, xp)
        self.w = weight
        if weight is None:
            self.log_w = None
            self.pair_c = xp.ones_like(self.F[:, 0])
        else:
            positive = weight > 0
            self.log_w = xp.where(
                positive,
                xp.log(xp.where(positive, weight, xp.ones_like(weight))),
                full(weight.shape, -math.inf, weight, xp),
            )
            self.pair_c = pair_factor(weight, xp)

    def loo(self, rows):
        """``(log_shift, diag_c)`` of the evaluation rows ``rows`` (centres):
        ``log_shift`` turns ``log(w k)`` into ``log(max(w - 1, 0) k)`` for a
        row's own centre (``-inf`` when no copy is left) and ``diag_c`` is the
        self-pair factor of the copies left."""
        xp = self.xp
        dtype_like = self.F[:, 0]
        if self.w is None:
            neg = full((rows.shape[0],), -math.inf, dtype_like, xp)
            return neg, xp.ones_like(neg)
        w = xp.take(self.w, rows, axis=0)
        rest = w - 1.0
        left = rest > 0
        safe = xp.where(left, rest, xp.ones_like(rest))
        log_shift = xp.where(
            left,
            xp.log(safe) - xp.log(xp.where(w > 0, w, xp.ones_like(w))),
            full(w.shape, -math.inf, w, xp),
        )
        return log_shift, pair_factor(xp.where(left, rest, xp.zeros_like(rest)), xp)

    def row_sums(
        self, rows, bandwidth, log_norm, *, pairs, need_q, by_class, start=None
    ):
        """Sums of the leave-one-out kernel weights of the centres ``rows``
        (``start`` says that they are ``start, start + 1, ...``).

        Returns the ``sums`` dict of :func:`.statistics.finish_statistics`
        and the ``loo`` tuple it takes.
        """
        xp = self.xp
        X = xp.take(self.F, rows, axis=0)
        L = xp.log(X) @ (self.F / bandwidth).T - log_norm[None, :]
        columns = arange(self.n, rows, xp)[None, :]
        if start is None:
            own = columns == rows[:, None]
        else:
            own = diagonal_mask(rows.shape[0], self.n, start, L, xp)
        log_shift, diag_c = self.loo(rows)
        if self.log_w is None:
            # unit weights leave no copy of the own centre
            L = xp.where(own, full((), -math.inf, L, xp), L)
        else:
            L = L + self.log_w[None, :]
            L = xp.where(own, L + log_shift[:, None], L)
        sums = {}
        if pairs:
            # The leader's weight is 1 relative to itself; the others are
            # taken relative to the largest of them.
            istar = xp.argmax(L, axis=1)
            sums["istar"] = istar
            sums["m1"] = xp.take_along_axis(L, istar[:, None], axis=1)[:, 0]
            L = xp.where(columns == istar[:, None], full((), -math.inf, L, xp), L)
        # The reference cancels from every statistic (it scales a row's sums
        # and their normaliser alike): no gradient goes through it, which
        # spares the backward pass of the maximum.
        ref = detach(xp.max(L, axis=1), xp)
        finite = xp.isfinite(ref)
        ref = xp.where(finite, ref, xp.zeros_like(ref))
        if pairs:
            sums["m_ref"], sums["has_rest"] = ref, finite
        else:
            sums["m1"] = ref
        g = xp.exp(L - ref[:, None])
        sums["a"] = g @ self.E
        if need_q:
            g2 = g * g
            if self.w is not None:
                g2 = g2 * self.pair_c[None, :]
            if by_class:
                sums["qk"] = g2 @ self.E
            else:
                sums["q"] = xp.sum(g2, axis=1)
            if self.w is None:
                # unit weights leave no copy of the own centre: no weight
                sums["g_own"] = xp.zeros_like(ref)
            else:
                sums["g_own"] = xp.sum(xp.where(own, g, xp.zeros_like(g)), axis=1)
        return sums, (rows, diag_c)


def loo_error_terms(
    F,
    y,
    weight,
    bandwidth,
    *,
    p,
    debias,
    eps,
    xp,
    rows=None,
    block_rows=None,
    ess=False,
):
    """Leave-one-out ECE-KDE terms ``sum_k |R_jk - f_jk|^p`` (or the debiased
    ``p = 2`` U-statistic) of the rows ``rows`` of one problem.

    Parameters
    ----------
    F : array of shape (n, K)
        Probability vectors of the problem (the terms compare the ratio with
        these; the kernel uses them clipped into the open simplex).
    y : array of int of shape (n,)
        Class indices.
    weight : array of shape (n,) or None
        Frequency weights (None: unit weights).
    bandwidth : float
    p : float
    debias : bool
    eps : float
        Clipping level of the kernel.
    xp : namespace
    rows : array of int or None
        Evaluation rows (all rows when None).
    block_rows : int or None
        Rows per dense block (all at once when None): memory is
        ``O(block_rows * n)``.
    ess : bool
        Also return the effective sample size of each row.

    Returns
    -------
    terms : array of shape (len(rows),)
    ess : array of shape (len(rows),) or None
    """
    centres = LabelledCentres(F, y, weight, eps, xp)
    n = centres.n
    contiguous = rows is None
    if contiguous:
        rows = arange(n, F, xp)
    m = rows.shape[0]
    step = m if block_rows is None else max(1, int(block_rows))
    log_norm = log_normalizer(centres.F, bandwidth, xp)
    term_parts, ess_parts = [], []
    for start in range(0, m, step):
        block = rows[start : min(start + step, m)]
        sums, loo = centres.row_sums(
            block,
            bandwidth,
            log_norm,
            pairs=debias,
            need_q=debias or ess,
            by_class=debias,
            start=start if contiguous else None,
        )
        X = xp.take(centres.F, block, axis=0) if debias else None
        stats = finish_statistics(
            sums,
            labels=centres.y,
            pair_c=centres.pair_c,
            loo=loo,
            ratio=not debias,
            ess=ess,
            pairs=debias,
            X=X,
            xp=xp,
        )
        F_rows = xp.take(F, block, axis=0)
        term_parts.append(kde_error_terms(F_rows, None, stats, p, debias, xp))
        if ess:
            ess_parts.append(stats["ess"])
    terms = concat_rows(term_parts, xp)
    return terms, concat_rows(ess_parts, xp) if ess else None
