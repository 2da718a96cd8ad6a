"""The top-label reduction of a probability matrix: confidence and correctness.

The top-label problem of rows ``P_i`` and labels ``y_i`` has the score
``max_j P_ij`` and the label 1 when the predicted class, the first column
holding that maximum (``np.argmax``'s rule), is ``y_i``. numpy reduces a row
of a few columns at the cost of a call per row, and each column of a
C-ordered matrix is a strided read that touches every cache line of the
matrix; here a block of rows is read as one flat vector instead.
"""

from __future__ import annotations

import functools

import numpy as np

from .compiled import HAVE_NUMBA, use_compiled

# Entries per block (13107 rows of 10 doubles): a block and its temporaries
# stay in the L3 cache; fewer, larger blocks cost fewer numpy calls (a call
# costs about a microsecond, the block's arithmetic some 100): 2**17 rather
# than 2**16 entries is 1.6 ms less per 1e6 x 10 matrix.
_BLOCK = 1 << 17
# Above this many columns numpy's row-wise argmax is as fast (its cost per
# row is then spread over many columns).
_WIDE = 32
# Once loaded (see .compiled), the compiled scan saves _COMPILED_SAVING
# seconds per entry of a matrix of this many entries or more.
_COMPILED_MIN_SIZE = 1 << 20
_COMPILED_SAVING = 1e-8


def top_label_task(P, y):
    """The top-label binary problem of ``P`` and class indices ``y``.

    Parameters
    ----------
    P : ndarray of shape (n_samples, n_classes)
        Finite probabilities (float64, or any float type, converted block by
        block).
    y : ndarray of shape (n_samples,)
        Integer class index of each row, in ``[0, n_classes)``.

    Returns
    -------
    correct : ndarray of shape (n_samples,)
        1.0 where the first column holding the row's maximum is ``y_i``
        (``np.argmax(P, axis=1) == y``), else 0.0.
    conf : ndarray of shape (n_samples,)
        ``np.max(P, axis=1)``.

    Notes
    -----
    Class ``y_i`` is the first maximal column exactly when ``P[i, y_i]``
    equals the maximum and no other column of the row does, or, when the
    maximum is tied, when ``y_i`` is the first of the tied columns. A block
    whose entries equal to their row's maximum are one per row has no tie;
    a block with a tie is reduced by ``np.argmax``.
    """
    n, k = P.shape
    y = np.asarray(y, dtype=np.intp)
    if k > _WIDE or k < 2:
        pred = np.argmax(P, axis=1)
        conf = P[np.arange(n), pred].astype(np.float64)
        return (pred == y).astype(np.float64), conf
    return _reduce(P, y)[:2]


def scan_top_label(P, y, tol=None):
    """:func:`top_label_task` and the extremes a validation needs, in one
    read of ``P``.

    Parameters
    ----------
    P : ndarray of shape (n_samples, n_classes)
        Values to be checked as probabilities (NaN and infinity allowed:
        they propagate into the extremes, and the reduction is then void).
    y : ndarray of shape (n_samples,)
        Integer class index of each row, in ``[0, n_classes)``.
    tol : tuple of two floats, default=None
        ``(value_tol, sum_tol)``: the tolerances the caller checks the
        extremes with (values in ``[-value_tol, 1 + value_tol]``, row sums
        within ``sum_tol`` of 1). Given them, a large matrix is scanned by a
        compiled loop when numba is installed: ``correct``, ``conf``, ``lo``
        and ``hi`` are those of the numpy passes, the row sums within
        rounding (they are added in another order), and the numpy passes
        are run instead whenever the checks might fail, so that they fail
        alike.

    Returns
    -------
    correct, conf : ndarray of shape (n_samples,)
        As :func:`top_label_task`.
    lo, hi : float
        Smallest and largest value of ``P`` (NaN if it holds one).
    sum_lo, sum_hi : float
        Smallest and largest row sum.

    Notes
    -----
    A matrix of ``n x K`` values is read from memory once instead of twice
    (a check, then the reduction); the largest value is that of the row
    maxima. Above ``_WIDE`` columns the two are done one after the other.
    """
    n, k = P.shape
    y = np.asarray(y, dtype=np.intp)
    if k > _WIDE or k < 2:
        sums = P @ np.ones(k)
        correct, conf = top_label_task(P, y)
        return correct, conf, P.min(), P.max(), sums.min(), sums.max()
    if tol is not None and n * k >= _COMPILED_MIN_SIZE:
        scanned = _compiled_scan(P, y, *tol)
        if scanned is not None:
            return scanned
    return _reduce(P, y, scan=True)


def _compiled_scan(P, y, value_tol, sum_tol):
    """:func:`scan_top_label` by the compiled loop, or None (no numba, a
    loop that would not repay its loading, or extremes that the numpy scan
    must give: see there)."""
    n, k = P.shape
    loop = use_compiled(
        _compiled_loop,
        n * k,
        min_size=_COMPILED_MIN_SIZE,
        saved_per_unit=_COMPILED_SAVING,
    )
    if loop is None:
        return None
    y = np.ascontiguousarray(y)
    correct = np.empty(n)
    conf = np.empty(n)
    extremes = np.empty(4)
    if P.flags.c_contiguous and P.dtype == np.float64:
        loop(P, y, correct, conf, extremes, True)
    else:
        # A Fortran-ordered, strided or float32 matrix: blocks copied to
        # float64 (exact), as in the numpy passes.
        size = max(1, _BLOCK // k)
        flat = np.empty((min(n, size), k))
        first = True
        for start in range(0, n, size):
            rows = slice(start, min(start + size, n))
            block = flat[: rows.stop - start]
            np.copyto(block, P[rows])
            loop(block, y[rows], correct[rows], conf[rows], extremes, first)
            first = False
    lo, hi, sum_lo, sum_hi = (float(v) for v in extremes)
    # The loop adds each row from left to right, numpy's matrix-vector
    # product in another order: the sums differ by a few units of 2**-53
    # per column. Unless every one clears the bounds by more than that (and
    # the values are in range), the numpy scan decides, so that the checks
    # fail, and their messages read, exactly as without numba.
    margin = 8.0 * k * np.finfo(np.float64).eps
    if not (
        lo >= -value_tol
        and hi <= 1.0 + value_tol
        and sum_hi - 1.0 <= sum_tol - margin
        and 1.0 - sum_lo <= sum_tol - margin
    ):
        return None
    return correct, conf, lo, hi, sum_lo, sum_hi


def _scan_rows(P, y, correct, conf, extremes, first):
    # One pass over the rows of the C-ordered float64 block ``P``: maximum,
    # first column holding it (np.argmax's rule, NaN aside: the extremes
    # are NaN then and the numpy scan redone), smallest value and row sum.
    # ``extremes`` = (smallest value, largest value, smallest and largest row
    # sum), started afresh if ``first``, else carried on. Four stretches of
    # rows are read side by side: the comparisons and additions along one
    # row each wait on the one before, and a mispredicted comparison stalls
    # one row's chain only (~20 % faster than row after row).
    n, k = P.shape
    if first:
        extremes[0] = np.inf
        extremes[1] = -np.inf
        extremes[2] = np.inf
        extremes[3] = -np.inf
    lo, hi, sum_lo, sum_hi = extremes[0], extremes[1], extremes[2], extremes[3]
    nan = False
    q = n // 4
    for i in range(q):
        i1, i2, i3 = i + q, i + 2 * q, i + 3 * q
        t0, t1, t2, t3 = P[i, 0], P[i1, 0], P[i2, 0], P[i3, 0]
        l0, l1, l2, l3 = t0, t1, t2, t3
        s0, s1, s2, s3 = t0, t1, t2, t3
        a0 = a1 = a2 = a3 = 0
        for j in range(1, k):
            v0, v1, v2, v3 = P[i, j], P[i1, j], P[i2, j], P[i3, j]
            s0 += v0
            s1 += v1
            s2 += v2
            s3 += v3
            if v0 > t0:
                t0, a0 = v0, j
            if v1 > t1:
                t1, a1 = v1, j
            if v2 > t2:
                t2, a2 = v2, j
            if v3 > t3:
                t3, a3 = v3, j
            l0, l1, l2, l3 = min(l0, v0), min(l1, v1), min(l2, v2), min(l3, v3)
        conf[i], conf[i1], conf[i2], conf[i3] = t0, t1, t2, t3
        correct[i] = 1.0 if a0 == y[i] else 0.0
        correct[i1] = 1.0 if a1 == y[i1] else 0.0
        correct[i2] = 1.0 if a2 == y[i2] else 0.0
        correct[i3] = 1.0 if a3 == y[i3] else 0.0
        nan |= (s0 != s0) | (s1 != s1) | (s2 != s2) | (s3 != s3)
        lo = min(lo, min(min(l0, l1), min(l2, l3)))
        hi = max(hi, max(max(t0, t1), max(t2, t3)))
        sum_lo = min(sum_lo, min(min(s0, s1), min(s2, s3)))
        sum_hi = max(sum_hi, max(max(s0, s1), max(s2, s3)))
    for i in range(4 * q, n):
        top = P[i, 0]
        low = top
        total = top
        arg = 0
        for j in range(1, k):
            v = P[i, j]
            total += v
            if v > top:
                top, arg = v, j
            low = min(low, v)
        conf[i] = top
        correct[i] = 1.0 if arg == y[i] else 0.0
        nan |= total != total
        lo = min(lo, low)
        hi = max(hi, top)
        sum_lo = min(sum_lo, total)
        sum_hi = max(sum_hi, total)
    if nan:
        lo = hi = sum_lo = sum_hi = np.nan
    extremes[0] = lo
    extremes[1] = hi
    extremes[2] = sum_lo
    extremes[3] = sum_hi


@functools.cache
def _compiled_loop():
    """``_scan_rows`` compiled with numba (None without it)."""
    if not HAVE_NUMBA:
        return None
    import numba
    from numba import types

    # One signature, read-only inputs: a writable array converts to it, and
    # the caller's matrix is often a read-only view (one compilation, not
    # one per flag).
    def array(dtype, ndim, readonly=False):
        return types.Array(dtype, ndim, "C", readonly=readonly)

    signature = types.void(
        array(types.float64, 2, True),
        array(types.intp, 1, True),
        array(types.float64, 1),
        array(types.float64, 1),
        array(types.float64, 1),
        types.boolean,
    )
    return numba.njit(signature, cache=True, nogil=True, boundscheck=False)(_scan_rows)


def _reduce(P, y, *, scan=False):
    """The block loop of :func:`top_label_task`; with ``scan`` each block's
    smallest value and row sums are taken too (see :func:`scan_top_label`)."""
    n, k = P.shape
    correct = np.empty(n, dtype=np.float64)
    conf = np.empty(n, dtype=np.float64)
    size = min(n, max(1, _BLOCK // k))
    flat = np.empty(size * k)
    pairs = np.empty(size * k)
    equal = np.empty(size * k, dtype=bool)
    base = np.arange(size, dtype=np.intp) * k
    idx = np.empty(size, dtype=np.intp)
    got = np.empty(size)
    same = np.empty(size, dtype=bool)
    direct = P.flags.c_contiguous and P.dtype == np.float64
    if scan:
        ones, sums = np.ones(k), np.empty(size)
        lows, sum_lows, sum_highs = [], [], []
    for start in range(0, n, size):
        stop = min(start + size, n)
        rows = stop - start
        top, hits = conf[start:stop], same[:rows]
        if direct:
            f = P[start:stop].reshape(-1)
        else:  # a Fortran-ordered, strided or float32 block, copied to float64
            f = flat[: rows * k]
            np.copyto(f.reshape(rows, k), P[start:stop])
        if scan:
            # a matrix-vector product: numpy's sum along rows of a few
            # columns costs a call per row
            block = f.reshape(rows, k)
            lows.append(block.min())
            np.matmul(block, ones, out=sums[:rows])
            sum_lows.append(sums[:rows].min())
            sum_highs.append(sums[:rows].max())
        _row_max(f, k, pairs, out=top)
        # the probability of the true class, compared with the maximum
        ix = idx[:rows]
        np.add(base[:rows], y[start:stop], out=ix)
        np.take(f, ix, out=got[:rows])
        np.equal(got[:rows], top, out=hits)
        # one entry per row equal to its maximum: no tie in the block
        eq = equal[: rows * k]
        np.equal(f, np.repeat(top, k), out=eq)
        if np.count_nonzero(eq) > rows:
            block = f.reshape(rows, k)
            np.equal(np.argmax(block, axis=1), y[start:stop], out=hits)
        np.copyto(correct[start:stop], hits)
    if not scan:
        return correct, conf
    # np.min and np.max propagate NaN
    extremes = np.min(lows), np.max(conf), np.min(sum_lows), np.max(sum_highs)
    return (correct, conf, *(float(v) for v in extremes))


def _row_max(f, k, buf, *, out):
    """Maximum of each row of ``k`` entries of the flat block ``f``.

    The maxima of pairs of neighbouring entries first, in one pass over the
    block with unit-stride reads, then of the ``ceil(k / 2)`` pairs that
    cover each row. With ``k`` even the pairs are disjoint; with ``k`` odd
    every neighbouring pair is formed (a pair may straddle two rows) and the
    row's last entry is read on its own.
    """
    n = out.shape[0] * k
    if k % 2 == 0:
        pairs = buf[: n // 2]
        np.maximum(f[0::2], f[1::2], out=pairs)
        cols = [pairs[j : n // 2 : k // 2] for j in range(k // 2)]
    else:
        pairs = buf[: n - 1]
        np.maximum(f[:-1], f[1:], out=pairs)
        cols = [pairs[j : n - 1 : k] for j in range(0, k - 1, 2)]
        cols.append(f[k - 1 :: k])
    if len(cols) == 1:
        np.copyto(out, cols[0])
        return out
    np.maximum(cols[0], cols[1], out=out)
    for col in cols[2:]:
        np.maximum(out, col, out=out)
    return out
