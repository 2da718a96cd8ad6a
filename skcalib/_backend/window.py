"""Box-kernel Nadaraya–Watson on sorted scores with prefix sums.

For a query ``t`` and half-width ``hw`` the window is ``{i : |s_i - t| <= hw}``
over sorted training scores ``s``. With equal weights ``1 / c`` on the ``c``
points of the window, the functions below return the smoother ``mean(y)`` and
the moments ``m1 = mean(s_i - t)``, ``m2 = mean((s_i - t)²)`` in
``O(log n)`` per query after an ``O(n)`` pass.
"""

from __future__ import annotations

import numpy as np

from .score_grid import discretisation_term

# Scores are split as s = c + d with c on a dyadic grid of 2**-14: prefix sums of
# c and c² are then exact in float64 for up to 2**24 points, and only the small
# parts d (|d| <= 2**-15) accumulate round-off. This keeps m2 accurate for tiny
# windows deep inside a long prefix sum.
_SPLIT = 2.0**14
# Window half-widths tried by the NW bound, in memory and in streaming (where
# they are rounded to whole cells); chosen on the training part.
NW_HALF_WIDTHS = np.geomspace(1e-4, 0.25, 40)
# Points per slice of the passes over the whole sample.
_SLICE = 1 << 18


# Prefix sums are kept at every ``_STRIDE``-th point only (five float64 sums
# of n + 1 values would cost 40 bytes per sample); a sum at any other point is
# carried on from the checkpoint before it, with the very additions of the
# running sum, so it is the same number. Samples of up to ``_FULL_PREFIX``
# points keep every sum (40 MB at most): the window search reads them 80
# times per fold, and carrying on is most of its cost there.
_STRIDE = 16
_FULL_PREFIX = 1 << 20


def _window_values(s, y):
    """The summands of the window statistics at scores ``s``, labels ``y``."""
    c = np.round(s * _SPLIT) / _SPLIT
    d = s - c
    return {
        "y": y,
        "c": c,
        "d": d,
        "cc": c * c,
        # 2cd + d² in one sum: small terms whose round-off does not matter.
        "cross": d * (2.0 * c + d),
    }


class WindowSums:
    """Prefix sums of the summands of :func:`window_moments` over sorted
    scores and labels, or over the points at ``positions`` among them.

    ``at(i)`` gives, for each key, the sum of the first ``i`` summands, equal
    to ``np.cumsum`` of all of them (a sequential sum) at ``i - 1``; five
    sums kept every ``_STRIDE`` points cost ``40 / _STRIDE`` bytes per point.
    """

    def __init__(self, s_sorted, y_sorted, positions=None):
        self.s, self.y, self.positions = s_sorted, y_sorted, positions
        self.size = s_sorted.shape[0] if positions is None else positions.shape[0]
        self.stride = 1 if self.size <= _FULL_PREFIX else _STRIDE
        n_check = self.size // self.stride + 1
        self.checkpoints = {k: np.zeros(n_check) for k in _window_values(0.0, 0)}
        carry = dict.fromkeys(self.checkpoints, 0.0)
        # Slices of whole strides: checkpoint q is the running sum at q * stride.
        step = _SLICE - _SLICE % self.stride
        for i in range(0, self.size, step):
            at = slice(i, min(self.size, i + step))
            pos = at if positions is None else positions[at]
            for key, v in _window_values(s_sorted[pos], y_sorted[pos]).items():
                run = np.empty(v.shape[0] + 1)
                run[0] = carry[key]
                run[1:] = v
                np.cumsum(run, out=run)
                carry[key] = run[-1]
                # run[j] is the sum of the first i + j summands (i is a
                # multiple of the stride).
                taken = run[:: self.stride]
                q0 = i // self.stride
                self.checkpoints[key][q0 : q0 + taken.shape[0]] = taken

    def count_below(self, i):
        """How many of the points come before position ``i`` of the sorted
        sample (all ``i`` of them without ``positions``)."""
        if self.positions is None:
            return np.asarray(i, dtype=np.int64)
        return np.searchsorted(self.positions, i, side="left")

    def at(self, i):
        """Dict of the prefix sums at the counts ``i`` (in ``[0, size]``)."""
        i = np.asarray(i, dtype=np.int64)
        if self.size == 0:
            return {k: np.zeros(i.shape[0]) for k in self.checkpoints}
        if self.stride == 1:
            return {k: v[i] for k, v in self.checkpoints.items()}
        q = i // _STRIDE
        r = i - q * _STRIDE
        rows = np.arange(i.shape[0])
        # The summands from each checkpoint on (clipped at the last point:
        # those beyond ``r`` are never read).
        pos = np.minimum(q[:, None] * _STRIDE + np.arange(_STRIDE), self.size - 1)
        if self.positions is not None:
            pos = self.positions[pos]
        out = {}
        for key, v in _window_values(self.s[pos], self.y[pos]).items():
            run = np.empty((i.shape[0], _STRIDE + 1))
            run[:, 0] = self.checkpoints[key][q]
            run[:, 1:] = v
            np.cumsum(run, axis=1, out=run)
            out[key] = run[rows, r]
        return out


def window_prefix_sums(s_sorted, y_sorted):
    """Prefix sums used by :func:`window_moments` (a :class:`WindowSums`)."""
    return WindowSums(s_sorted, y_sorted)


def window_moments(
    s_sorted, prefix, query, half_width, exclude=None, *, return_ranges=False
):
    """Window statistics of the box kernel at each query point.

    Parameters
    ----------
    s_sorted : ndarray of shape (n,)
        Sorted scores.
    prefix : WindowSums
        :func:`window_prefix_sums` of ``s_sorted`` and the labels.
    query : ndarray
        Points at which to evaluate the smoother.
    half_width : float
    exclude : WindowSums, default=None
        Points of ``s_sorted`` to leave out (e.g. a held-out fold), from
        :func:`exclusion`. Sums over the remaining points are differences, so
        one set of prefix sums serves every fold.

    Returns
    -------
    count : ndarray of int
        Number of (non-excluded) points in the window.
    eta : ndarray
        Window mean of ``y`` (the query itself where the window is empty).
    m1, m2 : ndarray
        First and second moments of ``s_i - t`` over the window (0 if empty).
    lo, hi : ndarray of int
        With ``return_ranges``: each window is ``s_sorted[lo:hi]`` (excluded
        points included).
    """
    lo = np.searchsorted(s_sorted, query - half_width, side="left")
    hi = np.searchsorted(s_sorted, query + half_width, side="right")
    m = lo.shape[0]
    count = hi - lo
    sums = prefix.at(np.concatenate([lo, hi]))
    if exclude is not None:
        elo, ehi = exclude.count_below(lo), exclude.count_below(hi)
        count = count - (ehi - elo)
        excluded = exclude.at(np.concatenate([elo, ehi]))
    safe = np.maximum(count, 1)

    def wsum(key):
        p = sums[key]
        total = p[m:] - p[:m]
        if exclude is not None:
            e = excluded[key]
            total -= e[m:] - e[:m]
        return total

    s1 = wsum("c") + wsum("d")
    s2 = wsum("cc") + wsum("cross")
    mean_s = s1 / safe
    m1 = mean_s - query
    # mean((s - t)^2) = mean(s^2) - 2 t mean(s) + t^2, assembled around t.
    m2 = np.maximum(s2 / safe - 2.0 * query * mean_s + query * query, 0.0)
    empty = count == 0
    eta = np.where(empty, query, wsum("y") / safe)
    m1[empty] = 0.0
    m2[empty] = 0.0
    if return_ranges:
        return count, eta, m1, m2, lo, hi
    return count, eta, m1, m2


def window_influence(lo, hi, count, n_sorted, excluded=None):
    """``Σ_j ĉ_j²`` for the box smoother evaluated at ``m`` held-out points.

    Training label ``j`` enters the window mean of held-out point ``v`` with
    weight ``1 / count_v`` when ``lo_v <= j < hi_v``, so it moves
    ``mean_v |η̂(s_v) - η(s_v)|`` by at most
    ``ĉ_j = (1/m) Σ_v [lo_v <= j < hi_v] / count_v``: a difference array over
    the windows' index ranges. ``ĉ`` is constant between consecutive window
    ends, so the sum runs over those ``O(m)`` pieces, each weighted by its
    number of training points. ``excluded`` holds the sorted positions among
    the ``n_sorted`` that are not training points (``None``: none).
    """
    m = lo.shape[0]
    a = np.where(count > 0, 1.0 / (m * np.maximum(count, 1)), 0.0)
    ends, inverse = np.unique(np.concatenate([lo, hi]), return_inverse=True)
    diff = np.bincount(inverse[:m], weights=a, minlength=ends.shape[0])
    diff -= np.bincount(inverse[m:], weights=a, minlength=ends.shape[0])
    c = np.cumsum(diff)
    # Piece t is [ends[t], ends[t + 1]) (the last one ends at n_sorted).
    bounds = np.minimum(np.append(ends, n_sorted), n_sorted)
    points = np.diff(bounds)
    if excluded is not None:
        points -= np.diff(np.searchsorted(excluded, bounds, side="left"))
    return float(np.dot(c * c, points))


def nw_error_bound(count, m1, m2, lip1, lip2):
    """Bound ``g`` on the expected error (over the training labels) of the box
    smoother at perturbed scores on the grid, for a smooth calibration
    function with ``|η'| <= lip1`` and ``|η''| <= lip2``.

    ``g = min(1, lip1 |m1| + (lip2 / 2) m2 + ν / 2 + 2 lip1 2**-24)`` with
    ``ν = 1/sqrt(count)`` (the norm of the equal window weights) and the
    discretisation term of the grid; 1 on empty windows.
    """
    safe = np.maximum(count, 1)
    g = (
        lip1 * np.abs(m1)
        + 0.5 * lip2 * m2
        + 0.5 / np.sqrt(safe)
        + discretisation_term(lip1)
    )
    return np.where(count == 0, 1.0, np.minimum(g, 1.0))


# -- uniform buckets (the Lipschitz baseline) ----------------------------------
def fine_cells(s, n_fine):
    """Index of the cell of ``s`` among ``n_fine`` uniform cells (1 in the last)."""
    return np.minimum((s * n_fine).astype(np.int64), n_fine - 1)


def bucket_prefix_sums(s, y, n_fine, keep=None):
    """Prefix sums over the fine cells of the training counts and label sums.

    ``keep`` masks the training points among ``s`` (``None``: all). The
    points are taken in slices, so that no per-point array of the whole
    sample is made; the sums are of integers, exact in any order.
    """
    counts = np.zeros(n_fine, dtype=np.int64)
    ysums = np.zeros(n_fine)
    for i in range(0, s.shape[0], _SLICE):
        cells, y_part = fine_cells(s[i : i + _SLICE], n_fine), y[i : i + _SLICE]
        if keep is not None:
            part = keep[i : i + _SLICE]
            cells, y_part = cells[part], y_part[part]
        counts += np.bincount(cells, minlength=n_fine)
        ysums += np.bincount(cells, weights=y_part, minlength=n_fine)
    cum_n = np.concatenate([[0], np.cumsum(counts)])
    cum_y = np.concatenate([[0.0], np.cumsum(ysums)])
    return cum_n, cum_y


def bucket_edges(n_buckets, shift, n_shifts, n_fine):
    """Edges (in fine cells) of ``n_buckets`` uniform buckets shifted by
    ``shift / n_shifts`` of a bucket, clipped to ``[0, n_fine]``.

    ``n_fine`` must be a multiple of ``n_buckets * n_shifts``.
    """
    per_bucket = n_fine // n_buckets
    inner = (np.arange(n_buckets + 1) * n_shifts + shift) * (per_bucket // n_shifts)
    edges = np.clip(np.concatenate([[0], inner, [n_fine]]), 0, n_fine)
    # Already sorted: dropping repeats is what np.unique would do, without
    # its sort (this runs for every bucket count, shift and fold).
    return edges[np.concatenate([[True], edges[1:] != edges[:-1]])]


def bucket_smoother(
    prefix, edges, cells, s, lipschitz, discretisation=0.0, cell_order=None
):
    """Bucket means ``η̂`` at scores ``s`` (fine cells ``cells``), the bound
    ``g = min(1, L width + 1 / (2 sqrt(count)) + discretisation)`` on
    ``E_{y_T}|η̂ - η|``, and ``Σ_j ĉ_j² = Σ_b m_b² / (m² n_b)`` (``m_b`` of
    the ``m`` scores and ``n_b`` training points in bucket ``b``).

    ``prefix`` comes from :func:`bucket_prefix_sums`; an empty bucket gives
    ``η̂ = s`` and ``g = 1``. ``cell_order`` is ``np.argsort(cells,
    kind="stable")``, for a caller that tries many buckets on the same
    scores.
    """
    cum_n, cum_y = prefix
    n_fine = cum_n.shape[0] - 1
    m = cells.shape[0]
    if cell_order is None:
        cell_order = np.argsort(cells, kind="stable")
    # Only the buckets that hold a score matter (at most m of up to 2**16):
    # along the sorted cells they are runs, found with one search per score.
    b_sorted = np.searchsorted(edges, cells[cell_order], side="right") - 1
    first = np.concatenate([[True], b_sorted[1:] != b_sorted[:-1]])
    held = b_sorted[first]
    m_b = np.diff(np.append(np.flatnonzero(first), m))
    run = np.empty(m, dtype=np.int64)
    run[cell_order] = np.cumsum(first) - 1
    lo, hi = edges[held], edges[held + 1]
    counts = cum_n[hi] - cum_n[lo]
    filled = counts > 0
    safe = np.maximum(counts, 1)
    eta_b = (cum_y[hi] - cum_y[lo]) / safe
    g_b = np.minimum(
        1.0, lipschitz * ((hi - lo) / n_fine) + 0.5 / np.sqrt(safe) + discretisation
    )
    g_b[~filled] = 1.0
    eta = np.where(filled[run], eta_b[run], s)
    influence = np.sum(m_b[filled].astype(np.float64) ** 2 / counts[filled]) / m**2
    return eta, g_b[run], float(influence)


def exclusion(s_sorted, y_sorted, mask):
    """The ``exclude`` argument of :func:`window_moments` leaving out the
    points of ``s_sorted`` where ``mask`` is true (their sorted positions are
    its ``positions``)."""
    return WindowSums(s_sorted, y_sorted, positions=np.flatnonzero(mask))


def select_half_width(s_sorted, prefix, query, grid, lip1, lip2, exclude=None):
    """Half-width of ``grid`` minimising the mean of :func:`nw_error_bound`
    over the ``query`` points (the first one on ties)."""
    crit = np.empty(grid.shape[0])
    for j, hw in enumerate(grid):
        count, _, m1, m2 = window_moments(s_sorted, prefix, query, hw, exclude)
        crit[j] = nw_error_bound(count, m1, m2, lip1, lip2).mean()
    return float(grid[int(np.argmin(crit))])
