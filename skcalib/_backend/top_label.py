"""The top-label reduction of a probability matrix: confidence and correctness.

The top-label problem of rows ``P_i`` and labels ``y_i`` has the score
``max_j P_ij`` and the label 1 when the predicted class, the first column
holding that maximum (``np.argmax``'s rule), is ``y_i``. numpy reduces a row
of a few columns at the cost of a call per row, and each column of a
C-ordered matrix is a strided read that touches every cache line of the
matrix; here a block of rows is read as one flat vector instead.
"""

from __future__ import annotations

import numpy as np

# Entries per block (13107 rows of 10 doubles): a block and its temporaries
# stay in the L3 cache; fewer, larger blocks cost fewer numpy calls (a call
# costs about a microsecond, the block's arithmetic some 100): 2**17 rather
# than 2**16 entries is 1.6 ms less per 1e6 x 10 matrix.
_BLOCK = 1 << 17
# Above this many columns numpy's row-wise argmax is as fast (its cost per
# row is then spread over many columns).
_WIDE = 32


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
    for start in range(0, n, size):
        stop = min(start + size, n)
        rows = stop - start
        top, hits = conf[start:stop], same[:rows]
        if direct:
            f = P[start:stop].reshape(-1)
        else:  # a Fortran-ordered, strided or float32 block, copied to float64
            f = flat[: rows * k]
            np.copyto(f.reshape(rows, k), P[start:stop])
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
    return correct, conf


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
