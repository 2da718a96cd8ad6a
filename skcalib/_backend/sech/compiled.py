"""Compiled inner loops of the sech sampler (numba, the optional ``fast`` extra).

Each loop has a numpy twin in :mod:`skcalib._backend.sech.sampler` doing the same
floating-point operations in the same order, so both give bit-identical draws:
numba only saves the memory passes of the numpy version (one fused pass over a
block instead of several). The loops are compiled on first use and cached on disk.
"""

from __future__ import annotations

import functools

import numpy as np

from ..compiled import HAVE_NUMBA
from ..score_grid import GRID_SCALE, GRID_STEP

# tan θ = θ + θ y P(y) / Q(y), y = θ², on [0, π/4]: a rational minimax
# approximation of R(y) = (tan √y / √y - 1) / y on [0, π²/16], degree 3 over
# degree 3 (numerator coefficients TAN_P[k] of y**k, denominator made monic,
# TAN_Q[k] of y**k below y**3). Derived by the Remez exchange for the
# relative error of R in 40-digit arithmetic (mpmath) from the Padé
# approximant of its Taylor series (Bernoulli numbers): max relative error
# 3.5e-19 with exact coefficients, 7.2e-17 with these double ones (their
# rounding). The term θ y R(y) is at most 27 % of tan θ, so this adds at most
# ~0.2 ulp to tan θ, below the rounding of its evaluation (the test against
# mpmath bounds the whole magnitude). Both the numpy passes
# (``sampler._log_tan_passes``) and the compiled loops evaluate it by
# the same operations in the same order, without fused multiply-adds.
TAN_P = (
    -1302.2752204144215,
    83.76688279271873,
    -0.9564349687521301,
    6.979176796829021e-05,
)
TAN_Q = (-3906.8256612432647, 1814.0309128754618, -95.9479915694313)
_P0, _P1, _P2, _P3 = TAN_P
_Q0, _Q1, _Q2 = TAN_Q
# Divisor of the correction where the tangent is 0 (the angle of m = 0): any
# positive value below the smallest nonzero tangent, ~8.5e-20.
TINY = 5e-324


def _tangents(x, corr):
    # tan of the angles in ``x``, in place, and in ``corr`` the relative
    # error of its rounding, as ``sampler._log_tan_passes``.
    for i in range(x.shape[0]):
        t = x[i]
        y = t * t
        a = _P3 * y
        a = a + _P2
        a = a * y
        a = a + _P1
        a = a * y
        a = a + _P0
        b = y + _Q2
        b = b * y
        b = b + _Q1
        b = b * y
        b = b + _Q0
        a = a / b
        a = a * y
        a = a * t
        tan = t + a
        e = t - tan
        e = e + a
        d = tan if tan > TINY else TINY
        corr[i] = e / d
        x[i] = tan


def _angles(bits, angle, x):
    # m = low 63 bits of each int64, rounded to float64 then scaled, as numpy's
    # ``multiply(m, angle)`` does.
    for i in range(bits.shape[0]):
        x[i] = np.float64(bits[i] & 0x7FFFFFFFFFFFFFFF) * angle


def _sign_and_scale(x, corr, bits, h):
    # ``x + corr`` (the logarithm of the rounded tangent and the rounding's
    # correction), signed and scaled. The sign from the top bit as
    # arithmetic: a branch would stop the loop being vectorised. Exact, like
    # numpy's sign-bit flip.
    for i in range(x.shape[0]):
        v = x[i] + corr[i]
        x[i] = v * np.float64(1 - 2 * ((bits[i] >> 63) & 1)) * h


def _finish(
    noise, centre, out, complement, rows, centres, first, grid, other, low, high, dense
):
    # ``out = clip(centre) + noise``, the clip keeping NaN like numpy's, then
    # rounded to the grid as ``score_grid.round_to_grid`` does (multiply,
    # rint, multiply: each exact or correctly rounded, as in numpy).
    # The rows whose draw is outside [0, 1] (NaN included), offset by
    # ``first``, and their centres are appended to ``rows`` and ``centres``
    # in the same pass: behind a branch when they are rare, by unconditional
    # stores that only advance on a rejection when they are ``dense`` (a
    # mispredicted branch costs more than the stores, which stay in the
    # cache). Returns their number and the number of rows whose ``centre +
    # other`` is outside [low, high] or NaN (0 without ``other``). ``centre``
    # and ``other`` may be strided (the columns of a probability matrix);
    # ``out`` may be ``centre`` or ``noise``: each row is read before it is
    # written.
    n_bad = 0
    n_off = 0
    for i in range(noise.shape[0]):
        c = centre[i]
        if other is not None:
            t = other[i] + c
            n_off += not ((t >= low) & (t <= high))
        cc = 0.0 if c < 0.0 else c
        cc = 1.0 if c > 1.0 else cc
        s = cc + noise[i]
        outside = not ((s >= 0.0) & (s <= 1.0))
        if dense:
            rows[n_bad] = first + i
            centres[n_bad] = c
            n_bad += outside
        elif outside:
            rows[n_bad] = first + i
            centres[n_bad] = c
            n_bad += 1
        if grid:
            s = np.rint(s * GRID_SCALE) * GRID_STEP
        out[i] = s
        if complement is not None:
            complement[i] = 1.0 - s
    return n_bad, n_off


def _accept(cc, noise, pending, values, grid):
    # One round of the redraw of rejected rows (``_accept_passes``): the
    # proposal ``cc[i] + noise[i]`` of row ``pending[i]``, rounded as in
    # ``_finish``, is written to ``values`` (a rejected one is overwritten
    # later); a row whose proposal is outside [0, 1] (or NaN) moves to the
    # front of ``pending`` and ``cc``, in order. Returns the number of rows
    # still rejected. Without branches: acceptance is hard to predict.
    k = 0
    for i in range(cc.shape[0]):
        c = cc[i]
        s = c + noise[i]
        outside = not ((s >= 0.0) & (s <= 1.0))
        if grid:
            s = np.rint(s * GRID_SCALE) * GRID_STEP
        row = pending[i]
        values[row] = s
        pending[k] = row
        cc[k] = c
        k += outside
    return k


def _scatter(rows, values, out, complement):
    # ``out[rows] = values`` and ``complement[rows] = 1 - values`` in one pass.
    for i in range(rows.shape[0]):
        out[rows[i]] = values[i]
        if complement is not None:
            complement[rows[i]] = 1.0 - values[i]


@functools.cache
def compiled_loops():
    """``(angles, sign_and_scale, finish, pcg64_angles, accept, scatter,
    tangents)`` compiled with numba.

    None without numba. ``pcg64_angles`` draws numpy's PCG64 stream and the
    angles in one pass (see :mod:`skcalib._backend.sech.pcg64`).
    """
    if not HAVE_NUMBA:
        return None
    import numba

    from .pcg64 import pcg64_angles

    def jit(func):
        # numpy's error model: a division by zero would give inf instead of
        # raising, and without that check the tangent's loop is vectorised
        # (~4 times faster); no loop here divides by zero.
        return numba.njit(
            cache=True, nogil=True, boundscheck=False, error_model="numpy"
        )(func)

    funcs = (_angles, _sign_and_scale, _finish, _accept, _scatter, _tangents)
    angles, sign_and_scale, finish, accept, scatter, tangents = map(jit, funcs)
    return angles, sign_and_scale, finish, pcg64_angles, accept, scatter, tangents
