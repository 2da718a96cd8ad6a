"""Exact one-dimensional total-variation denoising.

Solves ``min_v (1/2) ||y - v||² + lam * sum_i |v[i+1] - v[i]|`` exactly. The
cumulative sum of the solution is the taut string: the shortest path from
``(0, 0)`` to ``(n, S_n)`` that stays within ``lam`` of the cumulative sum
``S`` of ``y``, and ``v`` is its slope.

The default solver (:func:`_taut_string`) follows the string from one contact
point to the next with whole-array numpy passes, so it needs no compiler. From
a contact point, the string goes straight while some slope keeps it inside the
tube; the first point at which the cone of such slopes closes shows where the
string bends. Finding that point scans the points one by one only inside
blocks of ``_BLOCK`` points: each block is first summarised by the convex
hulls of its points, on which the extreme slopes of the whole block are
attained, so the blocks that the cone crosses cost a few hull vertices each.

Condat's direct algorithm (IEEE Signal Processing Letters, 2013) is kept as
the reference solver (``use_numba=True``/``False``): a sequential sweep,
compiled with numba when numba is importable (the ``fast`` extra).
"""

from __future__ import annotations

import functools

import numpy as np

from .compiled import HAVE_NUMBA
from .concentration import tv_constants

__all__ = [
    "tv_denoise",
    "total_variation",
    "fit_tv_steps",
    "fit_label_steps",
    "tie_averaged_steps",
    "fit_tv_surrogate",
    "step_extension",
    "steps_extension",
    "HAVE_NUMBA",
]

# Points per block of the taut-string solver: large enough that the hulls are
# small against the block (a few dozen vertices for labels), small enough that
# the one block scanned point by point per contact stays cheap.
_BLOCK = 4096


def _last(mask):
    """Index of the last True in ``mask`` (which has one)."""
    return mask.shape[0] - 1 - int(np.argmax(mask[::-1]))


def _block_hull(S, n, block, upper):
    """Vertices ``j`` in ``[1, n - 1]`` of the lower (``upper=False``) or upper
    convex hull of the points ``(j, S_j)`` of each block (block ``q`` holds
    ``j`` in ``[q block + 1, (q + 1) block]``), in increasing order."""
    if n < 4:
        return np.arange(1, n)
    # A point on or above (below) the segment joining two points of its block
    # is no vertex of the lower (upper) hull, so every such point can go at
    # once; rounds repeat until none is left. First round: unit spacing, so
    # the test compares consecutive increments; it runs in slices to keep
    # its temporaries small.
    if block < 3:
        return np.arange(1, n)
    kept = [np.array([1])]
    step = block << 8
    for j0 in range(2, n - 1, step):
        j1 = min(n - 1, j0 + step)  # interior points j0 .. j1 - 1
        inc = np.diff(S[j0 - 1 : j1 + 1])  # S_j - S_{j-1}, then S_{j+1} - S_j
        keep = inc[:-1] > inc[1:] if upper else inc[:-1] < inc[1:]
        del inc
        # Both ends of every block stay (its last point j = 0 mod block and
        # the next block's first).
        last = np.arange((-j0) % block, j1 - j0, block)
        keep[last] = True
        keep[last[last + 1 < j1 - j0] + 1] = True
        # The rounds run on each slice first (a quarter of the points of a
        # label sequence survive the first round: all of them at once would
        # need tens of bytes per point), then once more across the slices
        # for the blocks they cut. Only non-vertices ever go, and the rounds
        # end at the vertices of each block's hull whatever the order.
        kept.append(_hull_rounds(np.flatnonzero(keep) + j0, S, block, upper))
    kept.append(np.array([n - 1]))
    return _hull_rounds(np.concatenate(kept), S, block, upper)


def _hull_rounds(idx, S, block, upper):
    """Drop from ``idx`` every point on or above (below) the segment joining
    its neighbours of the same block, until none is left."""
    v = S[idx]
    while idx.shape[0] >= 3:
        # Point gaps are integers, exact in float64 (n < 2**53).
        cross = (idx[1:-1] - idx[:-2]) * (v[2:] - v[:-2]) - (idx[2:] - idx[:-2]) * (
            v[1:-1] - v[:-2]
        )
        drop = cross >= 0 if upper else cross <= 0
        del cross
        drop &= (idx[:-2] - 1) // block == (idx[2:] - 1) // block
        if not drop.any():
            break
        keep = np.ones(idx.shape[0], dtype=bool)
        keep[1:-1] = ~drop
        idx, v = idx[keep], v[keep]
    return idx


def _block_extreme(values, starts, reduce, carry):
    """Per-block ``reduce`` (min or max) of ``values`` (blocks begin at
    ``starts``), then its running value from ``carry``."""
    per_block = reduce.reduceat(values, starts)
    return per_block, reduce.accumulate(reduce(per_block, carry))


def _running_sum(y):
    """``S`` with ``S[0] = 0`` and ``S[j]`` the float64 sum of ``y[:j]``.

    The labels are copied in first and summed in place: ``np.cumsum`` with a
    ``dtype`` would make a float64 copy of them as well.
    """
    S = np.empty(y.shape[0] + 1)
    S[0] = 0.0
    S[1:] = y
    np.cumsum(S[1:], out=S[1:])
    return S


def _taut_string(y, lam, block=_BLOCK):
    """Exact TV denoising with numpy passes (see the module docstring).

    Returns the solution as steps: ``starts`` (the first index of each
    constant piece, from 0) and its ``values``.
    """
    n = y.shape[0]
    S = _running_sum(y)
    # Point n is pinned at S_n (the tube closes there); it lies in the last
    # block, which is always scanned point by point.
    lo_idx = _block_hull(S, n, block, upper=False)
    up_idx = _block_hull(S, n, block, upper=True)
    lo_q = (lo_idx - 1) // block
    up_q = (up_idx - 1) // block
    last_q = (n - 1) // block
    ends, slopes = [], []
    k0, r0 = 0, 0.0

    def scan(p1, p2, a_max, a_at, b_min, b_at):
        # Slopes from the contact point (k0, r0) to the lower (a) and upper (b)
        # tube points p1..p2, carrying the extremes of the earlier points.
        d = np.arange(p1 - k0, p2 - k0 + 1, dtype=np.float64)
        base = S[p1 : p2 + 1] - r0
        a = (base - lam) / d
        b = (base + lam) / d
        if p2 == n:
            a[-1] = b[-1] = base[-1] / d[-1]
        A = np.maximum(np.maximum.accumulate(a), a_max)
        B = np.minimum(np.minimum.accumulate(b), b_min)
        closed = A > B
        t = int(closed.argmax())
        if closed[t]:
            a_prev, b_prev = (A[t - 1], B[t - 1]) if t > 0 else (a_max, b_min)
            if a[t] > b_prev:
                # Bends up at the last upper point of least slope.
                j = p1 + _last(b[:t] == b_prev) if t and b_prev < b_min else b_at
                return True, (float(b_prev), j, S[j] + lam)
            j = p1 + _last(a[:t] == a_prev) if t and a_prev > a_max else a_at
            return True, (float(a_prev), j, S[j] - lam)
        if A[-1] > a_max:
            a_max = float(A[-1])
            a_at = p1 + _last(a == a_max)
        if B[-1] < b_min:
            b_min = float(B[-1])
            b_at = p1 + _last(b == b_min)
        return False, (a_max, a_at, b_min, b_at, float(a[-1]))

    def _cross_blocks(q1, carry):
        # Whole blocks q1 .. last_q - 1, summarised by their hulls: the least
        # slope to a block's upper points is attained at a vertex of its lower
        # hull, the greatest to its lower points at one of its upper hull.
        # Returns how many blocks the cone crosses without closing, with
        # ``carry`` updated in place over them. The slopes are computed with
        # the very operations of ``scan``, so both see the same numbers.
        a_max, a_at, b_min, b_at = carry
        blocks = np.arange(q1, last_q)
        lo = slice(np.searchsorted(lo_q, q1), np.searchsorted(lo_q, last_q))
        up = slice(np.searchsorted(up_q, q1), np.searchsorted(up_q, last_q))
        lj, uj = lo_idx[lo], up_idx[up]
        l_start = np.searchsorted(lo_q[lo], blocks)
        u_start = np.searchsorted(up_q[up], blocks)
        bv = ((S[lj] - r0) + lam) / (lj - k0).astype(np.float64)
        av = ((S[uj] - r0) - lam) / (uj - k0).astype(np.float64)
        b_blk, b_run = _block_extreme(bv, l_start, np.minimum, b_min)
        a_blk, a_run = _block_extreme(av, u_start, np.maximum, a_max)
        closed = a_run > b_run
        k = int(closed.argmax()) if closed.any() else blocks.shape[0]
        if k > 0:
            if b_run[k - 1] < b_min:
                b_min = float(b_run[k - 1])
                m = _last(b_blk[:k] == b_min)
                s1 = l_start[m + 1] if m + 1 < l_start.shape[0] else bv.shape[0]
                b_at = int(lj[l_start[m] + _last(bv[l_start[m] : s1] == b_min)])
            if a_run[k - 1] > a_max:
                a_max = float(a_run[k - 1])
                m = _last(a_blk[:k] == a_max)
                s1 = u_start[m + 1] if m + 1 < u_start.shape[0] else av.shape[0]
                a_at = int(uj[u_start[m] + _last(av[u_start[m] : s1] == a_max)])
        carry[:] = [a_max, a_at, b_min, b_at]
        return k

    while k0 < n:
        carry = (-np.inf, -1, np.inf, -1)
        q = k0 // block
        p1 = k0 + 1
        while True:
            done, out = scan(p1, min(n, (q + 1) * block), *carry)
            if done or (q + 1) * block >= n:
                break
            carry = list(out[:4])
            q += 1
            if q < last_q:
                q += _cross_blocks(q, carry)
            p1 = q * block + 1
        if not done:
            ends.append(n)
            slopes.append(out[4])
            break
        slope, k0, r0 = out
        ends.append(k0)
        slopes.append(slope)
    starts = np.concatenate([[0], np.asarray(ends[:-1], dtype=np.int64)])
    return starts, np.array(slopes)


def _dense(starts, values, n):
    return np.repeat(values, np.diff(np.append(starts, n)))


def _condat(y, lam, x):  # pragma: no cover - compiled or exercised via wrappers
    # One flat loop (no early return from a nested loop): numba's SSA pass
    # mis-types the nested form.
    n = len(y)
    k = 0
    k0 = 0
    kminus = 0
    kplus = 0
    vmin = y[0] - lam
    vmax = y[0] + lam
    umin = lam
    umax = -lam
    twolam = 2.0 * lam
    while k0 < n:
        if k == n - 1:
            # Right boundary: the last segment must end with zero dual value.
            if umin < 0.0:
                # vmin is too high: emit a segment ending at kminus (at least
                # one sample, even if kminus lies behind k0).
                kend = max(k0, kminus)
                for i in range(k0, kend + 1):
                    x[i] = vmin
                k0 = kend + 1
                k = k0
                kminus = k0
                vmin = y[k]
                umin = lam
                umax = vmin + umin - vmax
            elif umax > 0.0:
                kend = max(k0, kplus)
                for i in range(k0, kend + 1):
                    x[i] = vmax
                k0 = kend + 1
                k = k0
                kplus = k0
                vmax = y[k]
                umax = -lam
                umin = vmax + umax - vmin
            else:
                vmin += umin / (k - k0 + 1)
                for i in range(k0, k + 1):
                    x[i] = vmin
                k0 = k + 1
            continue
        umin += y[k + 1] - vmin
        umax += y[k + 1] - vmax
        if umin < -lam:
            # Downward jump after kminus.
            kend = max(k0, kminus)
            for i in range(k0, kend + 1):
                x[i] = vmin
            k0 = kend + 1
            k = k0
            kminus = k0
            kplus = k0
            vmin = y[k]
            vmax = vmin + twolam
            umin = lam
            umax = -lam
        elif umax > lam:
            kend = max(k0, kplus)
            for i in range(k0, kend + 1):
                x[i] = vmax
            k0 = kend + 1
            k = k0
            kminus = k0
            kplus = k0
            vmax = y[k]
            vmin = vmax - twolam
            umin = lam
            umax = -lam
        else:
            k += 1
            if umin >= lam:
                kminus = k
                vmin += (umin - lam) / (k - k0 + 1)
                umin = lam
            if umax <= -lam:
                kplus = k
                vmax += (umax + lam) / (k - k0 + 1)
                umax = -lam


@functools.cache
def _compiled_solver():
    if not HAVE_NUMBA:
        return _condat
    import numba

    return numba.njit(cache=True, nogil=True)(_condat)


def tv_denoise(y, lam, *, use_numba=None):
    """Exact solution of ``min_v (1/2)||y - v||² + lam ||D v||₁``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Signal, float64.
    lam : float
        Penalty, >= 0.
    use_numba : bool or None, default=None
        ``None`` uses the numpy taut-string solver; ``True`` and ``False``
        select Condat's sweep, compiled with numba or in pure Python (the
        reference the default solver is tested against).

    Returns
    -------
    v : ndarray of shape (n,)
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    if y.shape[0] == 0:
        return np.empty_like(y)
    if lam <= 0.0:
        return y.copy()
    if use_numba is None:
        return _dense(*_taut_string(y, float(lam)), y.shape[0])
    if use_numba and not HAVE_NUMBA:
        raise ImportError("use_numba=True needs numba (pip install skcalib[fast]).")
    x = np.empty_like(y)
    if use_numba:
        _compiled_solver()(y, float(lam), x)
    else:
        # Python floats are much faster than numpy scalars in the sweep.
        xs = [0.0] * y.shape[0]
        _condat(y.tolist(), float(lam), xs)
        x[:] = xs
    return x


def total_variation(v):
    """``sum_i |v[i+1] - v[i]|``."""
    v = np.asarray(v, dtype=np.float64)
    return float(np.abs(np.diff(v)).sum()) if v.shape[0] > 1 else 0.0


def _steps_average_over_ties(s_sorted, starts, values):
    """:func:`.certificate.average_over_ties` of the step function
    ``(starts, values)``: only the tie blocks that a step crosses change."""
    n = s_sorted.shape[0]
    inner = starts[1:]
    crossed = inner[s_sorted[inner - 1] == s_sorted[inner]]
    if crossed.shape[0] == 0:
        return starts, values
    tied = s_sorted[crossed]
    lo = np.unique(np.searchsorted(s_sorted, tied, side="left"))
    hi = np.searchsorted(s_sorted, s_sorted[lo], side="right")
    # Sum of the values over the first i points, from the steps.
    lengths = np.diff(np.append(starts, n))
    before = np.concatenate([[0.0], np.cumsum(values * lengths)])

    def head_sum(i):
        g = np.searchsorted(starts, i, side="right") - 1
        return before[g] + values[g] * (i - starts[g])

    means = (head_sum(hi) - head_sum(lo)) / (hi - lo)
    points = np.unique(np.concatenate([starts, lo, hi[hi < n]]))
    g = np.searchsorted(starts, points, side="right") - 1
    new_values = values[g]
    b = np.searchsorted(lo, points, side="right") - 1
    inside = (b >= 0) & (points < hi[np.maximum(b, 0)])
    new_values[inside] = means[b[inside]]
    return points, new_values


def _lower_hull_chain(idx, S):
    """Vertices of the lower convex hull of the points ``(j, S_j)``, ``j`` in
    the increasing ``idx`` (a monotone chain; collinear points are dropped).

    ``S`` holds integers (exact in float64): the chain compares Python
    integers, so the turns are exact at any ``n``.
    """
    xs = idx.tolist()
    ys = S[idx].astype(np.int64).tolist()
    hx, hy = [], []
    for x, y in zip(xs, ys, strict=True):
        while len(hx) >= 2 and (hx[-1] - hx[-2]) * (y - hy[-2]) <= (x - hx[-2]) * (
            hy[-1] - hy[-2]
        ):
            hx.pop()
            hy.pop()
        hx.append(x)
        hy.append(y)
    return np.array(hx, dtype=np.int64)


def _isotonic_steps(y, block=_BLOCK):
    """Isotonic regression of integer labels, as steps, clipped to [0, 1].

    The fit is the slope of the greatest convex minorant of the cumulative
    sum ``S`` of the labels: the lower convex hull of the points
    ``(j, S_j)``. Its vertices are among those of the hulls of blocks of
    points (:func:`_block_hull`, numpy passes), which a monotone chain then
    joins. The labels are counts, so every turn is decided exactly and each
    piece is the exact mean of its labels, correctly rounded; it needs
    ``8 n`` bytes (``S``), where the solvers of scipy and scikit-learn copy
    the labels, the weights and the block table.
    """
    n = y.shape[0]
    S = _running_sum(y)
    idx = np.concatenate([[0], _block_hull(S, n, block, upper=False), [n]])
    vertices = _lower_hull_chain(idx, S)
    starts = vertices[:-1]
    values = np.clip((S[vertices[1:]] - S[starts]) / np.diff(vertices), 0.0, 1.0)
    # Clipping can make neighbouring pieces equal: they are one piece.
    keep = np.concatenate([[True], values[1:] != values[:-1]])
    return starts[keep], values[keep]


def fit_label_steps(y_sorted, delta1, *, monotone=False):
    """The fit of :func:`fit_tv_steps` before the averaging over ties, from
    the labels alone: ``starts, values, penalty``."""
    n_train = y_sorted.shape[0]
    if monotone:
        if y_sorted.dtype.kind in "bui" and n_train > 0:
            starts, values = _isotonic_steps(y_sorted)
            return starts, values, None
        # A pure function on arrays (no estimator object): the fast exact
        # pool-adjacent-violators solver.
        from sklearn.isotonic import isotonic_regression

        v = isotonic_regression(
            np.asarray(y_sorted, dtype=np.float64),
            y_min=0.0,
            y_max=1.0,
            increasing=True,
        )
        starts = np.flatnonzero(np.concatenate([[True], v[1:] != v[:-1]]))
        return starts, v[starts], None
    _, t2 = tv_constants(n_train, delta1)
    if n_train == 0:
        return np.zeros(1, np.int64), np.zeros(1), t2
    starts, values = _taut_string(np.asarray(y_sorted), float(t2))
    return starts, values, t2 / n_train


def tie_averaged_steps(s_sorted, starts, values, *, monotone=False):
    """:func:`fit_label_steps` averaged over the ties of ``s_sorted``:
    ``starts, values, fitted_variation``."""
    starts, values = _steps_average_over_ties(s_sorted, starts, values)
    if monotone:
        # Still non-decreasing after the averaging: the variation is the rise.
        return starts, values, float(values[-1] - values[0])
    return starts, values, total_variation(values)


def fit_tv_steps(s_sorted, y_sorted, delta1, *, monotone=False):
    """Surrogate ``η̂`` of the total-variation bound, as steps.

    Total-variation denoising of the labels sorted by score with the penalty
    ``t2`` of :func:`.concentration.tv_constants` (``λ = t2 / n`` on the
    ``(1 / 2n) ||y - v||²`` scale), or, with ``monotone=True``, isotonic
    regression, which satisfies the same bound for ``V = 1``. The fitted
    values are then averaged over each block of tied scores, so that they are
    a function of the score (the denoiser alone may give tied points
    different values).

    It is :func:`fit_label_steps` (the labels alone) then
    :func:`tie_averaged_steps` (the scores), which a caller short of memory
    may run with only one of the two arrays at a time.

    Returns
    -------
    starts : ndarray of int
        First sorted training index of each constant piece (the first is 0).
    values : ndarray
        Fitted value of each piece.
    fitted_variation : float
        Total variation of the fit.
    penalty : float or None
        ``λ`` (``None`` for the isotonic fit).
    """
    starts, values, penalty = fit_label_steps(y_sorted, delta1, monotone=monotone)
    return (
        *tie_averaged_steps(s_sorted, starts, values, monotone=monotone),
        penalty,
    )


def fit_tv_surrogate(s_sorted, y_sorted, delta1, *, monotone=False):
    """:func:`fit_tv_steps` with the fitted value of every training point.

    Returns
    -------
    v : ndarray of shape (n,)
        Fitted values at the sorted training points.
    fitted_variation : float
    penalty : float or None
    """
    starts, values, fitted_variation, penalty = fit_tv_steps(
        s_sorted, y_sorted, delta1, monotone=monotone
    )
    return _dense(starts, values, y_sorted.shape[0]), fitted_variation, penalty


def step_extension(s_sorted, values, s):
    """Value of the training point closest at or below each ``s`` (the first
    one below the range)."""
    j = np.searchsorted(s_sorted, s, side="right") - 1
    return values[np.clip(j, 0, s_sorted.shape[0] - 1)]


def steps_extension(s_sorted, starts, values, s):
    """:func:`step_extension` of the fit given as steps."""
    j = np.clip(np.searchsorted(s_sorted, s, side="right") - 1, 0, None)
    return values[np.searchsorted(starts, j, side="right") - 1]
