"""Stable sorting of large float arrays.

``np.argsort(x, kind="stable")`` is an indirect merge sort: at 1e7 doubles it
takes 10–20 times as long as ``np.sort`` of the same values, which runs
vectorised on unsigned 64-bit integers. :func:`stable_sort` gets the same
permutation from one ``np.sort`` of packed integer keys: the upper bits of
each value's order-preserving bit pattern above its position. Values that
share those upper bits and are out of order by their lower bits are few
(their group is at most a handful of values unless the data are built to
collide), and only those groups are sorted again.
"""

from __future__ import annotations

import numpy as np

__all__ = ["stable_sort"]

# Below this size the indirect sort is as fast and needs no extra pass.
_PACKED_MIN = 1 << 15
_CHUNK = 1 << 20
_SIGN = np.uint64(1 << 63)


def _ordered_bits(x, out):
    """Write into ``out`` (float64) and return as unsigned integers whose order
    is the order of the finite doubles ``x``; -0.0 and 0.0 map to the same
    integer, as they compare equal."""
    b = np.add(x, 0.0, out=out).view(np.uint64)
    # Negative values: every bit flipped; others: the sign bit set.
    flip = b >> np.uint64(63)
    np.negative(flip, out=flip)
    flip |= _SIGN
    b ^= flip
    return b


def stable_sort(x):
    """Sort ``x`` stably: ``order = np.argsort(x, kind="stable")`` and ``x[order]``.

    Parameters
    ----------
    x : ndarray of shape (n,) of float64
        Finite values (NaN would break the order of the packed keys).

    Returns
    -------
    order : ndarray of shape (n,) of intp
        The stable sorting permutation: ties keep their positions' order.
    x_sorted : ndarray of shape (n,) of float64
        ``x[order]``.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if n < _PACKED_MIN:
        order = np.argsort(x, kind="stable")
        return order, x[order]
    shift = np.uint64((n - 1).bit_length())
    low = np.uint64((1 << int(shift)) - 1)
    key = np.empty(n, dtype=np.uint64)
    for i in range(0, n, _CHUNK):
        part = key[i : i + _CHUNK]
        _ordered_bits(x[i : i + _CHUNK], out=part.view(np.float64))
        part &= ~low
        part |= np.arange(i, i + part.shape[0], dtype=np.uint64)
    key.sort()
    key &= low
    order = key.view(np.intp)
    x_sorted = x[order]
    _resort_groups(x_sorted, order, shift)
    return order, x_sorted


def _resort_groups(x_sorted, order, shift):
    """Sort again, in place, each group of equal upper bits that is out of
    order: the packed sort left it ordered by position only."""
    down = np.flatnonzero(x_sorted[1:] < x_sorted[:-1])
    if down.shape[0] == 0:
        return
    n = x_sorted.shape[0]

    def upper(pos):
        return _ordered_bits(x_sorted[pos], np.empty(pos.shape[0])) >> shift

    # The upper bits are non-decreasing along ``x_sorted``: a vectorised
    # binary search finds where each out-of-order group starts and ends.
    group = upper(down)
    starts = _first_at_least(upper, group, np.zeros_like(down), down)
    ends = _first_at_least(upper, group + np.uint64(1), down + 1, np.full_like(down, n))
    starts, first = np.unique(starts, return_index=True)
    ends = ends[first]
    sizes = ends - starts
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    pos = np.arange(offsets.shape[0]) + offsets
    # Groups follow one another in value order, and within a group the
    # positions are in input order: one stable sort orders them all.
    again = np.argsort(x_sorted[pos], kind="stable")
    order[pos] = order[pos[again]]
    x_sorted[pos] = x_sorted[pos[again]]


def _first_at_least(upper, target, lo, hi):
    """Smallest ``i`` in ``[lo, hi]`` with ``upper(i) >= target`` (``hi`` if
    none below it), elementwise; ``upper`` is non-decreasing."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        ok = np.zeros(lo.shape, dtype=bool)
        ok[active] = upper(mid[active]) >= target[active]
        hi = np.where(active & ok, mid, hi)
        lo = np.where(active & ~ok, mid + 1, lo)
