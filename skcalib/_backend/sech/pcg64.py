"""numpy's PCG64 stream drawn inside a compiled loop (numba, the ``fast`` extra).

Imported only by :func:`skcalib._backend.sech.compiled.compiled_loops`. The
words are those of ``PCG64.random_raw`` bit for bit (the same 128-bit
linear congruential step and XSL-RR output); the loop runs four stretches
of the stream side by side, each started from the state a jump of the
generator gives, so that the steps, which each wait on the one before,
overlap.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

# numpy's PCG64 multiplier (pcg64.h: PCG_DEFAULT_MULTIPLIER_HIGH, _LOW).
PCG64_MULTIPLIER = (2549297995355413924 << 64) | 4865540595714422341
_LOW_BITS = np.uint64(2**63 - 1)


@intrinsic
def _pcg64_next(typingctx, hi, lo, inc_hi, inc_lo):
    """One step of the generator: ``(new state hi, new state lo, word)``."""
    u64 = types.uint64
    sig = types.UniTuple(u64, 3)(u64, u64, u64, u64)

    def codegen(context, builder, signature, args):
        i64, i128 = ir.IntType(64), ir.IntType(128)

        def wide(high, low):
            high = builder.shl(builder.zext(high, i128), ir.Constant(i128, 64))
            return builder.or_(high, builder.zext(low, i128))

        # state = state * multiplier + inc (mod 2**128), then the output of
        # the new state: rotate (high ^ low) right by the top 6 bits.
        state = builder.add(
            builder.mul(wide(args[0], args[1]), ir.Constant(i128, PCG64_MULTIPLIER)),
            wide(args[2], args[3]),
        )
        high = builder.trunc(builder.lshr(state, ir.Constant(i128, 64)), i64)
        low = builder.trunc(state, i64)
        x = builder.xor(high, low)
        rot = builder.lshr(high, ir.Constant(i64, 58))
        back = builder.sub(ir.Constant(i64, 64), rot)
        back = builder.and_(back, ir.Constant(i64, 63))
        word = builder.or_(builder.lshr(x, rot), builder.shl(x, back))
        return context.make_tuple(builder, signature.return_type, (high, low, word))

    return sig, codegen


@numba.njit(cache=True, nogil=True, boundscheck=False)
def pcg64_angles(lane_hi, lane_lo, inc_hi, inc_lo, seg, bits, angle, x):
    """``bits`` = the next words of the stream and ``x`` = their angles.

    Lane ``j`` (state before its first word in ``lane_hi[j], lane_lo[j]``)
    writes words ``j seg .. (j + 1) seg - 1``, the last lane also the rest.
    The angle is ``float64(word & (2**63 - 1)) * angle``, as the numpy passes
    compute it. Returns the state after the last word.
    """
    n = bits.shape[0]
    h0, l0 = lane_hi[0], lane_lo[0]
    h1, l1 = lane_hi[1], lane_lo[1]
    h2, l2 = lane_hi[2], lane_lo[2]
    h3, l3 = lane_hi[3], lane_lo[3]
    for k in range(seg):
        h0, l0, w0 = _pcg64_next(h0, l0, inc_hi, inc_lo)
        h1, l1, w1 = _pcg64_next(h1, l1, inc_hi, inc_lo)
        h2, l2, w2 = _pcg64_next(h2, l2, inc_hi, inc_lo)
        h3, l3, w3 = _pcg64_next(h3, l3, inc_hi, inc_lo)
        bits[k] = w0
        bits[seg + k] = w1
        bits[2 * seg + k] = w2
        bits[3 * seg + k] = w3
        x[k] = np.float64(np.int64(w0 & _LOW_BITS)) * angle
        x[seg + k] = np.float64(np.int64(w1 & _LOW_BITS)) * angle
        x[2 * seg + k] = np.float64(np.int64(w2 & _LOW_BITS)) * angle
        x[3 * seg + k] = np.float64(np.int64(w3 & _LOW_BITS)) * angle
    for k in range(4 * seg, n):
        h3, l3, w3 = _pcg64_next(h3, l3, inc_hi, inc_lo)
        bits[k] = w3
        x[k] = np.float64(np.int64(w3 & _LOW_BITS)) * angle
    return h3, l3
