"""One binary problem at fixed scores, as the exact tests resample it.

The rows are sorted once by score (then weight); equal scores form tie
blocks, and every statistic of the package reads the labels only through
their weighted sums over tie blocks (and over unions of them: groups, bins,
cells). Under the null hypothesis those sums are drawn as follows:

* ``frequency=False`` (a row is one observation, its weight a constant
  factor: importance, survey or inverse-propensity weights): one label per
  row, ``y_i ~ Bernoulli(s_i)``, contributing ``w_i y_i``;
* ``frequency=True`` (a row of integer weight ``w_i`` stands for ``w_i``
  observations with its score: aggregated counts): ``Binomial(w_i, s_i)``
  positives, so that the test equals the test of the repeated rows.

Variances follow the same reading: a row adds ``q_i s_i (1 - s_i)`` with
``q = w^2`` (one label, scaled by ``w``) or ``q = w`` (``w`` labels).
"""

from __future__ import annotations

import numpy as np

from ..sorting import stable_sort
from .draws import BernoulliDraw

__all__ = ["NullTask", "check_frequency_weights"]


def check_frequency_weights(w):
    """Whether ``w`` holds integer counts (the frequency reading needs them)."""
    return bool(np.all(w == np.floor(w)) and np.all(w < 2.0**53))


def _small_integers(w):
    """Integer weights whose total stays below 2**31 (int32 sums)."""
    return bool(np.all(w == np.floor(w))) and float(np.sum(w)) < 2.0**31


def _score_weight_order(s, w):
    """``np.lexsort((w, s))``: by score, equal scores by weight (so that the
    rows a draw reads in turn do not depend on the caller's order), from one
    fast stable sort of the scores and a sort of the tied rows only."""
    order, ss = stable_sort(s)
    tied = np.r_[False, ss[1:] == ss[:-1]]
    if not tied.any() or np.all(w == w[0]):
        return order
    tied[:-1] |= tied[1:]
    rows = np.flatnonzero(tied)
    # block ids of the tied rows are non-decreasing: sort by (block, weight)
    block = np.cumsum(~tied | np.r_[True, ss[1:] != ss[:-1]])[rows]
    sub = rows[np.lexsort((w[order[rows]], block))]
    order[rows] = order[sub]
    return order


class NullTask:
    """Sorted rows, tie blocks and the null law of the labels.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Observed 0/1 labels (float64).
    s : ndarray of shape (n,)
        Scores in [0, 1].
    w : ndarray of shape (n,)
        Non-negative weights.
    frequency : bool, default=False
        The reading of the weights (see the module docstring); ``True``
        needs integer weights.

    Attributes
    ----------
    order : ndarray
        Row order: ``s[order]`` is sorted (ties by weight, then by row).
    s, w, y : ndarray
        Sorted rows.
    starts : ndarray
        First row of every tie block.
    bs, bw, bq : ndarray
        Per tie block: the score, ``sum w`` and ``sum q``.
    """

    def __init__(self, y, s, w, *, frequency=False):
        order = _score_weight_order(s, w)
        self.order = order
        self.s, self.w, self.y = s[order], w[order], y[order]
        self.given_w = self.w
        self.frequency = frequency
        self.n = s.shape[0]
        if not frequency and not _small_integers(self.w):
            # Only the ratios of the weights matter to a row's single label:
            # relative weights keep w^2 from overflowing or underflowing.
            self.w = self.w / self.w.max()
        self.unit = bool(np.all(self.w == 1.0))
        self.q = self.w if frequency else self.w * self.w
        ss = self.s
        self.starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
        self.tied = self.starts.shape[0] < self.n
        self.bs = ss[self.starts]
        self.bw = self._block(self.w)
        self.bq = self._block(self.q)
        self.total = float(self.bw.sum())
        self._draw = BernoulliDraw(self.s)
        # rows whose count is a binomial of more than one observation
        self._many = np.flatnonzero(self.w > 1) if frequency else None
        # Integer weights with a total below 2**31: weighted labels are
        # int32 and their sums are exact (and faster than in float).
        self.integer = _small_integers(self.w)
        self._wint = self.w.astype(np.int32) if self.integer and not self.unit else None

    def _block(self, x):
        return np.add.reduceat(x, self.starts) if self.tied else x.copy()

    def observed(self):
        """The observed labels as a 1-row block of weighted labels."""
        return self.weigh(self.y[None, :] > 0.5)

    def weigh(self, y):
        """Weighted labels ``w y`` of boolean labels ``y``: boolean for unit
        weights (the same thing), int32 for integer weights, else float64."""
        if self.unit:
            return y
        if self._wint is not None:
            return np.multiply(y, self._wint)
        return np.multiply(y, self.w)

    def labels(self, rng, m):
        """Weighted labels of ``m`` resamples drawn from the null hypothesis,
        ``(m, n)`` (types of :meth:`weigh`)."""
        y = self._draw(rng, m)
        if self._many is None or self._many.size == 0:
            return self.weigh(y)
        c = self.weigh(y)
        idx = self._many
        c[:, idx] = rng.binomial(
            self.w[idx].astype(np.int64), self.s[idx], size=(m, idx.size)
        )
        return c

    def segment_sums(self, c, starts):
        """Sums of the weighted labels ``c`` over the runs of rows that begin
        at ``starts``: ``(m, len(starts))`` float64 (exact for integer
        labels)."""
        if c.dtype == np.bool_:
            c = c.view(np.uint8)
        if c.dtype.kind in "iu":
            return np.add.reduceat(c, starts, axis=1, dtype=np.int64).astype(np.float64)
        return np.add.reduceat(c, starts, axis=1)

    def sums(self, c, factor=None, *, copy=True):
        """Sums of ``factor * c`` over the tie blocks: ``(m, n_blocks)``
        float64, a new array unless ``copy=False`` allows ``c`` itself."""
        if factor is not None:
            c = np.multiply(c, factor)
        if self.tied:
            return self.segment_sums(c, self.starts)
        if c.dtype != np.float64:
            return c.astype(np.float64)
        return c.copy() if copy else c

    def walk(self, c):
        """Cumulative sums of the weighted labels along the sorted scores,
        at the end of every tie block: ``(m, n_blocks)``, int32 or int64
        for integer labels (exact), else float64 (a new array)."""
        if c.dtype.kind in "biu":
            acc = np.int32 if self.integer else np.int64
            if c.dtype == np.bool_:
                c = c.view(np.uint8)
            if self.tied:
                c = np.add.reduceat(c, self.starts, axis=1, dtype=acc)
                return np.cumsum(c, axis=1, out=c)
            return np.cumsum(c, axis=1, dtype=acc)
        v = self.sums(c, copy=False)
        return np.cumsum(v, axis=1, out=v)

    def unsorted(self, row):
        """A row of sorted values back in the caller's row order."""
        out = np.empty_like(row)
        out[self.order] = row
        return out
