"""Fused loops of the exact tests, compiled with numba (the ``fast`` extra).

numpy computes a statistic of a block of label vectors in several passes
over the block (a cumulative sum, a subtraction, a maximum); these loops
make one. They run only when numba is installed and a test draws enough
labels to repay loading them (:func:`worth_compiling`); the pure-Python
functions below are their definition, and the numpy passes give the same
values (bit for bit for integer labels, up to the order of additions for
float labels in tie blocks).
"""

from __future__ import annotations

import functools

import numpy as np

from ..compiled import HAVE_NUMBA

__all__ = ["cell_columns", "walk_extremes", "worth_compiling"]

# Labels drawn (rows times resamples) from which a compiled loop pays for
# numba's import and the load of its cache (about 2 s in a fresh process,
# the time numpy takes for ~2e8 labels).
COMPILED_MIN_LABELS = 2 * 10**8


def worth_compiling(n_rows, n_resamples):
    return HAVE_NUMBA and n_rows * n_resamples >= COMPILED_MIN_LABELS


def _walk_extremes(c, starts, drift, zero, hi, lo):
    # Row r of ``c`` (weighted labels in score order): the running sum (in
    # the type of ``zero``: int64 for integer labels, exact) read at the end
    # of each tie block (the sum of the block added to the total, as numpy
    # sums the blocks and then cumulates them), less ``drift``; its maximum
    # and minimum with the start value 0.
    m, n = c.shape
    n_blocks = starts.shape[0]
    for r in range(m):
        acc = zero
        top = 0.0
        bottom = 0.0
        if n_blocks == n:  # no ties: every row ends a block
            for i in range(n):
                acc += c[r, i]
                v = np.float64(acc) - drift[i]
                top = max(top, v)
                bottom = min(bottom, v)
            hi[r] = top
            lo[r] = bottom
            continue
        for j in range(n_blocks):
            end = starts[j + 1] if j + 1 < n_blocks else n
            part = zero
            for i in range(starts[j], end):
                part += c[r, i]
            acc += part
            v = np.float64(acc) - drift[j]
            if v > top:
                top = v
            if v < bottom:
                bottom = v
        hi[r] = top
        lo[r] = bottom


def _cell_columns(wy, starts, cells, theta, col):
    # Linear binning of row r of ``wy`` into ``col[r]`` (zeroed): the run j
    # of rows of grid cell ``cells[j]`` adds ``sum wy (1 - theta)`` (as
    # ``sum wy - sum wy theta``) to that cell and ``sum wy theta`` to the
    # next.
    m, n = wy.shape
    n_runs = starts.shape[0]
    for r in range(m):
        for j in range(n_runs):
            end = starts[j + 1] if j + 1 < n_runs else n
            a = 0.0
            b = 0.0
            for i in range(starts[j], end):
                x = np.float64(wy[r, i])
                a += x
                b += x * theta[i]
            col[r, cells[j]] += a - b
            col[r, cells[j] + 1] += b


@functools.cache
def _compiled():
    import numba

    def jit(func):
        return numba.njit(cache=True, nogil=True, boundscheck=False)(func)

    return jit(_walk_extremes), jit(_cell_columns)


def _integer_view(c):
    return c.view(np.uint8) if c.dtype == np.bool_ else c


def walk_extremes(c, starts, drift):
    """``(max, min)`` per row of the walk of :meth:`NullTask.walk` less
    ``drift``, each with 0 (compiled)."""
    m = c.shape[0]
    hi, lo = np.empty(m), np.empty(m)
    zero = np.float64(0.0) if c.dtype == np.float64 else np.int64(0)
    _compiled()[0](_integer_view(c), starts, drift, zero, hi, lo)
    return hi, lo


def cell_columns(wy, starts, cells, theta, n_cells):
    """Linearly binned weighted labels, ``(m, n_cells)``: per row of ``wy``,
    the rows of each run that begins at ``starts`` (all in the grid cell
    ``cells[j]``, at offsets ``theta``) split between that cell and the
    next (compiled)."""
    col = np.zeros((wy.shape[0], n_cells))
    _compiled()[1](_integer_view(wy), starts, cells, theta, col)
    return col
