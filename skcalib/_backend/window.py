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


def window_prefix_sums(s_sorted, y_sorted):
    """Prefix sums used by :func:`window_moments` (each of length ``n + 1``)."""
    c = np.round(s_sorted * _SPLIT) / _SPLIT
    d = s_sorted - c

    def csum(v):
        out = np.empty(v.shape[0] + 1, dtype=np.float64)
        out[0] = 0.0
        np.cumsum(v, out=out[1:])
        return out

    return {
        "y": csum(y_sorted),
        "c": csum(c),
        "d": csum(d),
        "cc": csum(c * c),
        # 2cd + d² in one sum: small terms whose round-off does not matter.
        "cross": csum(d * (2.0 * c + d)),
    }


def window_moments(
    s_sorted, prefix, query, half_width, exclude=None, *, return_ranges=False
):
    """Window statistics of the box kernel at each query point.

    Parameters
    ----------
    s_sorted : ndarray of shape (n,)
        Sorted scores.
    prefix : dict
        :func:`window_prefix_sums` of ``s_sorted`` and the labels.
    query : ndarray
        Points at which to evaluate the smoother.
    half_width : float
    exclude : tuple (mask_cumsum, excluded_prefix), default=None
        Points of ``s_sorted`` to leave out (e.g. a held-out fold):
        ``mask_cumsum[i]`` counts excluded points among the first ``i`` and
        ``excluded_prefix`` holds :func:`window_prefix_sums` of the excluded
        points. Sums over the remaining points are differences, so one set of
        prefix sums serves every fold.

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
    count = hi - lo
    if exclude is not None:
        mask_cumsum, excluded = exclude
        elo, ehi = mask_cumsum[lo], mask_cumsum[hi]
        count = count - (ehi - elo)
    safe = np.maximum(count, 1)

    def wsum(key):
        p = prefix[key]
        total = p[hi] - p[lo]
        if exclude is not None:
            total -= excluded[key][ehi] - excluded[key][elo]
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


def window_influence(lo, hi, count, n_sorted, keep=None):
    """``Σ_j ĉ_j²`` for the box smoother evaluated at ``m`` held-out points.

    Training label ``j`` enters the window mean of held-out point ``v`` with
    weight ``1 / count_v`` when ``lo_v <= j < hi_v``, so it moves
    ``mean_v |η̂(s_v) - η(s_v)|`` by at most
    ``ĉ_j = (1/m) Σ_v [lo_v <= j < hi_v] / count_v``: a difference array over
    the windows' index ranges, ``O(n + m)``. ``keep`` masks the positions of
    ``s_sorted`` that are training points (``None``: all).
    """
    m = lo.shape[0]
    a = np.where(count > 0, 1.0 / (m * np.maximum(count, 1)), 0.0)
    size = n_sorted + 1
    diff = np.bincount(lo, weights=a, minlength=size)
    diff -= np.bincount(hi, weights=a, minlength=size)
    c = np.cumsum(diff[:-1])
    if keep is not None:
        c = c[keep]
    return float(np.dot(c, c))


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


def bucket_prefix_sums(s_train, y_train, n_fine):
    """Prefix sums over the fine cells of the training counts and label sums."""
    cells = fine_cells(s_train, n_fine)
    cum_n = np.concatenate([[0], np.cumsum(np.bincount(cells, minlength=n_fine))])
    cum_y = np.concatenate(
        [[0.0], np.cumsum(np.bincount(cells, weights=y_train, minlength=n_fine))]
    )
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


def bucket_smoother(prefix, edges, cells, s, lipschitz, discretisation=0.0):
    """Bucket means ``η̂`` at scores ``s`` (fine cells ``cells``), the bound
    ``g = min(1, L width + 1 / (2 sqrt(count)) + discretisation)`` on
    ``E_{y_T}|η̂ - η|``, and ``Σ_j ĉ_j² = Σ_b m_b² / (m² n_b)`` (``m_b`` of
    the ``m`` scores and ``n_b`` training points in bucket ``b``).

    ``prefix`` comes from :func:`bucket_prefix_sums`; an empty bucket gives
    ``η̂ = s`` and ``g = 1``.
    """
    cum_n, cum_y = prefix
    n_fine = cum_n.shape[0] - 1
    counts = np.diff(cum_n[edges])
    ysums = np.diff(cum_y[edges])
    widths = np.diff(edges) / n_fine
    # Every edge is a multiple of ``step``: the bucket of a cell is that of
    # its multiple of ``step``, read from a table (no search per score).
    step = max(int(np.gcd.reduce(edges)), 1)
    if n_fine // step <= cells.shape[0]:
        table = np.searchsorted(edges, np.arange(0, n_fine, step), side="right") - 1
        b = table[cells // step]
    else:
        b = np.searchsorted(edges, cells, side="right") - 1
    c = counts[b]
    safe = np.maximum(c, 1)
    eta = np.where(c > 0, ysums[b] / safe, s)
    g = np.where(
        c > 0,
        np.minimum(1.0, lipschitz * widths[b] + 0.5 / np.sqrt(safe) + discretisation),
        1.0,
    )
    m_b = np.bincount(b, minlength=counts.shape[0]).astype(np.float64)
    filled = counts > 0
    influence = np.sum(m_b[filled] ** 2 / counts[filled]) / s.shape[0] ** 2
    return eta, g, float(influence)


def exclusion(s_sorted, y_sorted, mask):
    """The ``exclude`` argument of :func:`window_moments` leaving out the
    points of ``s_sorted`` where ``mask`` is true."""
    mask_cumsum = np.concatenate([[0], np.cumsum(mask)])
    return mask_cumsum, window_prefix_sums(s_sorted[mask], y_sorted[mask])


def select_half_width(s_sorted, prefix, query, grid, lip1, lip2, exclude=None):
    """Half-width of ``grid`` minimising the mean of :func:`nw_error_bound`
    over the ``query`` points (the first one on ties)."""
    crit = np.empty(grid.shape[0])
    for j, hw in enumerate(grid):
        count, _, m1, m2 = window_moments(s_sorted, prefix, query, hw, exclude)
        crit[j] = nw_error_bound(count, m1, m2, lip1, lip2).mean()
    return float(grid[int(np.argmin(crit))])
