"""Exact sampler of the truncated hyperbolic-secant kernel, on the score grid.

A draw is ``clip(s0) + h X``, X of the untruncated sech law drawn in double
precision from 64 random bits, redrawn while outside [0, 1]; the accepted
value is then rounded to the fixed grid ``G = {k / 2**24}``
(:mod:`skcalib._backend.score_grid`). Draws around every centre share that one
support, so a perturbed score does not reveal the centre it was drawn around
(noise added in finite precision to a centre lives on a lattice shifted by the
centre). The noise ``h X`` does not depend on the centres, so it is drawn by
:func:`sech_noise` (possibly while the centres are still being computed, see
:func:`sech_noise_async`) and added by :func:`sech_sample`.
"""

from __future__ import annotations

import copy
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..compiled import use_compiled
from ..kernels import sech_ppf
from ..score_grid import GRID_BITS, round_to_grid
from ..threads import usable_cpus, worker_threads
from .compiled import TAN_P as _TAN_P
from .compiled import TAN_Q as _TAN_Q
from .compiled import TINY as _TAN_TINY
from .compiled import compiled_loops

__all__ = [
    "ProposalReserve",
    "RowSumError",
    "sech_noise",
    "sech_noise_async",
    "sech_sample",
]


class RowSumError(ValueError):
    """A row of the probabilities checked by ``sech_sample(check_sum=...)``
    does not sum to one (or holds NaN)."""


_ROW_SUM_MESSAGE = "rows of the probabilities must sum to 1 and hold no NaN."

# One proposal per 64-bit word of the bit generator: the sign bit of the word
# (read as an int64) picks the side and the other 63 bits give m, with the
# angle π v / 2 = m π / 2**65 in [0, π/4).
_SIGN_BIT = np.int64(-(2**63))
_LOW_BITS = np.int64(2**63 - 1)
_ANGLE_PER_UNIT = np.pi / 2.0**65
# Blocks small enough for the cache: the passes over a block cost little.
_SECH_BLOCK = 1 << 17
# 2**28: its last bit is worth 2**-24, the grid step (see _add_noise_blocks).
_GRID_SHIFT = 2.0 ** (52 - GRID_BITS)
_COMPILED_NOISE_BLOCK = 1 << 18
_SECH_MIN_BLOCKS_PER_THREAD = 2
_SECH_MAX_THREADS = 4
_SECH_REJECTION_ROUNDS = 4
# Above one rejected row in this many, the compiled loop collects them
# without a branch.
_DENSE_REJECTIONS = 64
# Above one rejected row in this many, the numpy passes find them in flags
# followed by this many set ones (see _flagged): 1 / 9 of the scanned flags
# at least are then set.
_FLAG_DENSE = 32
_FLAG_PADDING = _SECH_BLOCK // 8
# Rows of the first block of a run whose rejections decide how the compiled
# loop collects those of the rest.
_DENSE_PROBE = 1 << 12
# From this many rows the compiled loops, once loaded (see
# skcalib._backend.compiled), save _COMPILED_SAVING seconds per row.
_COMPILED_MIN_SIZE = 1 << 16
_COMPILED_SAVING = 5e-8
# Nor a background thread for their noise.
_BACKGROUND_MIN_SIZE = 1 << 16
# Below this size (or above this scale) the inverse cdf is used directly.
_PROPOSAL_MIN_SIZE = 64
_PROPOSAL_MAX_SCALE = 0.25


def sech_sample(
    s0,
    h,
    rng,
    *,
    out=None,
    complement=None,
    noise=None,
    reserve=None,
    grid=True,
    check_sum=None,
    n_jobs=None,
):
    """Draw one value from the truncated sech kernel centred at each ``s0``.

    Exact rejection sampling from the untruncated hyperbolic-secant law, keeping
    draws inside [0, 1], then rounding them to the grid ``G = {k / 2**24}``
    (ties to even). A proposal is ``s0 ± h ln tan(π v / 2)`` with ``v``
    uniform on (0, 1/2) and a random sign: the symmetric form keeps full
    relative precision in both tails. The acceptance probability
    ``Z(s0, h) / (π h)`` is at least ~1/2 (a centre on the boundary with small
    ``h``) and ~1 for interior centres. Rows still rejected after a few rounds,
    small inputs and large ``h`` (acceptance then falls like ``1 / h``) use the
    closed-form inverse cdf (:func:`~skcalib._backend.kernels.sech_ppf`)
    instead, rounded to the grid in the same way.

    Each proposal reads one 64-bit word: its top bit is the sign and the
    other 63 bits give ``v = m / 2**64``, ``m = 1 .. 2**63 - 1`` (``m = 0``,
    an infinite proposal, is redrawn); ``h ln tan(π v / 2)`` is computed in
    double precision, the tangent by a rational approximation
    (``_log_tan_passes``) and the logarithm by numpy: ``ln tan`` is within
    about 3.5 units of ``2**-53 max(|ln tan|, 1/2)`` of its exact value, the
    rounding of the angle ``π v / 2`` to a double (up to π units) included,
    as with ``np.log(np.tan)``.
    What this leaves of the exact law:

    * the tail beyond ``|s - s0| = 44.4 h`` (``m < 1``) is cut, an event of
      probability at most ``2**-62`` per draw (``2**-63`` for the untruncated
      law, at most doubled by the truncation). A certificate at level
      ``delta`` on ``n`` perturbed scores stays valid at level
      ``delta + n 2**-62``, i.e. nothing measurable; the ``2**63`` values of
      ``m`` put every other quantile of the law within ``2**-62`` of its
      exact place;
    * rounding errors of a few units in the last place of ``h ln tan`` and of
      the sum move a draw by at most about ``4e-16``: they change its grid
      point only when it falls that close to a cell edge. For ``h`` well
      above the grid step this moves the probability of each grid point (and
      the calibration function there) by a relative ``2e-8`` or less.

    The first proposals are drawn by :func:`sech_noise` (see there for blocks
    and threads); rejected rows are redrawn afterwards, in order, from the
    words of ``rng`` that follow (those of a ``reserve`` drawn beforehand by
    :func:`sech_noise_async`, as far as it goes). With numba
    installed (the ``fast`` extra), large inputs go through compiled loops that
    do the same floating-point operations as the numpy passes, so the draws do
    not depend on whether numba is present.

    Parameters
    ----------
    s0 : float or ndarray
        Centres, clipped to [0, 1] (NaN gives NaN).
    h : float
        Scale, > 0.
    rng : numpy.random.Generator
    out : ndarray of shape (n,), dtype float64, default=None
        Where to write the draws, for a 1-D ``s0`` of length ``n``; it may be
        a strided view, and either ``s0`` itself (the centres are replaced by
        the draws) or an array that does not overlap it.
    complement : ndarray of shape (n,), dtype float64, default=None
        If given (with ``out``), also receives ``1 - s`` (exact: ``s`` is on
        the grid), computed block by block while the draws are in cache. Must
        not overlap ``s0`` or ``out``.
    noise : ndarray of shape (n,), default=None
        ``sech_noise(s0.size, h, rng)``, drawn beforehand from the same
        ``rng``; the draws are then exactly those without it. It may be
        ``out`` itself (the noise is then replaced by the draws), or must not
        overlap ``out`` or ``complement``.
    reserve : ProposalReserve, default=None
        The proposals of the words that follow the noise in ``rng``'s stream,
        from ``sech_noise_async(..., reserve=k)`` together with ``noise``:
        the redraw of rejected rows takes them instead of reading ``rng``
        (which is then advanced past the words used), so the draws are again
        exactly those without it. Ignored unless ``rng`` still stands where
        the reserve starts.
    grid : bool, default=True
        Round the draws to the grid. ``False`` keeps the unrounded draws, for
        a caller that maps them affinely before rounding (the top-label
        confidence).
    check_sum : tuple (other, low, high), default=None
        Check, in the pass that adds the noise, that every ``s0 + other``
        (``other`` of the shape of ``s0``: the other column of a binary
        probability matrix) lies in ``[low, high]``; :class:`RowSumError` is
        raised if one does not (or is NaN).
    n_jobs : int, default=None
        Threads that draw and add the noise (see :func:`sech_noise`); the
        draws do not depend on it.

    Returns
    -------
    s : ndarray of the shape of ``s0`` (a float if ``s0`` is a scalar), or
        ``out`` when given.
    """
    s0 = np.asarray(s0, dtype=np.float64)
    if out is None:
        out = np.empty(s0.shape)
    elif s0.ndim != 1 or out.shape != s0.shape:
        raise ValueError("out must have the shape of a 1-D s0.")
    elif _overlaps(out, s0) and not _same_view(out, s0):
        raise ValueError("out must be s0 itself or not overlap it.")
    if complement is not None:
        if complement.shape != out.shape:
            raise ValueError("complement must have the shape of out.")
        if _overlaps(complement, out) or _overlaps(complement, s0):
            raise ValueError("complement must not overlap s0 or out.")
    if check_sum is not None:
        other, low, high = check_sum
        other = np.asarray(other, dtype=np.float64)
        if other.shape != s0.shape:
            raise ValueError("check_sum: other must have the shape of s0.")
        check_sum = (other.reshape(-1), float(low), float(high))
    if not _uses_proposals(s0.size, h):
        if reserve is not None:
            reserve.cancel()
        if check_sum is not None:
            _check_sums(s0.reshape(-1), *check_sum)
        draws = np.asarray(
            sech_ppf(rng.random(size=s0.shape), np.clip(s0, 0.0, 1.0), h),
            dtype=np.float64,
        )
        out[...] = round_to_grid(draws, out=draws) if grid else draws
        if complement is not None:
            np.subtract(1.0, out, out=complement)
        return out if out.ndim else float(out)
    if noise is None:
        noise = sech_noise(s0.size, h, rng, n_jobs=n_jobs)
    elif noise.shape != (s0.size,):
        raise ValueError("noise must have one value per centre.")
    elif (
        _overlaps(noise, s0)
        or (_overlaps(noise, out) and not _same_view(noise, out))
        or (complement is not None and _overlaps(noise, complement))
    ):
        raise ValueError(
            "noise must be out itself or not overlap s0, out or complement."
        )
    centre, dst = s0.reshape(-1), out.reshape(-1)
    n_threads = _threads(dst.shape[0], n_jobs)
    rows, centres, n_off = _add_noise(
        centre, noise, dst, complement, grid, n_threads, check_sum
    )
    if n_off:
        raise RowSumError(_ROW_SUM_MESSAGE)
    if rows.size:
        loops = _sech_loops(dst.shape[0])
        proposals = _Proposals(h, rng.bit_generator, reserve, loops)
        _sech_redraw(centres, h, rng, proposals, dst, complement, rows, grid, loops)
    elif reserve is not None:
        reserve.cancel()
    return out


def sech_noise(n, h, rng, *, out=None, n_jobs=None):
    """The noise ``h X`` of ``n`` sech proposals (see :func:`sech_sample`).

    Reads ``n`` 64-bit words from ``rng`` (none for small ``n`` or large
    ``h``, where :func:`sech_sample` uses the inverse cdf and an empty array,
    or ``out`` untouched, is returned). Large inputs are cut into fixed blocks
    of ``2**17`` draws, shared by up to ``n_jobs`` threads (at least two
    blocks each). Block ``i`` reads its bits at its own fixed position of the
    generator's stream (PCG64, numpy's default, and PCG64DXSM, whose
    ``advance`` skips words), so the noise is exactly that of a sequential pass,
    whatever the number of threads; other bit generators are read
    sequentially by one thread.

    Parameters
    ----------
    n : int
        Number of proposals.
    h : float
        Scale, > 0.
    rng : numpy.random.Generator
    out : ndarray of shape (n,), dtype float64, default=None
        Contiguous array to write the noise into.
    n_jobs : int, default=None
        Threads, the calling one included (``-1``: all usable CPUs).
        ``None``: the ``n_jobs`` of an active joblib configuration
        (``joblib.parallel_config``) if it sets one, else up to 4 threads, no
        more than the usable CPUs and no more than any native thread pool is
        allowed (``threadpoolctl.threadpool_limits``, ``OMP_NUM_THREADS``).
        See :func:`skcalib._backend.threads.worker_threads`.

    Returns
    -------
    noise : ndarray of shape (n,) (or (0,)), float64
    """
    return _sech_noise(n, h, rng.bit_generator, _threads(n, n_jobs), out)


def sech_noise_async(n, h, rng, *, with_complement=False, reserve=0, n_jobs=None):
    """Start :func:`sech_noise` in a background thread; returns a future.

    The noise does not depend on the centres, so it can be drawn while they
    are computed (by a model's ``predict_proba``, say). ``rng`` is advanced
    at once, past the bits the noise reads, and is not used by the background
    thread: it is free for other draws, which come after the noise in its
    stream. Small inputs, bit generators other than PCG64 and PCG64DXSM
    (whose ``advance`` skips a number of 64-bit words), and ``n_jobs`` that
    allows one thread only (see :func:`sech_noise`) are drawn at once, in the
    calling thread.

    The future's result is a pair ``(noise, reserve)``. With
    ``with_complement`` the noise is a new C-ordered array of shape
    ``(2, n)`` whose row 1 holds the noise (when :func:`sech_sample` uses
    proposals) and row 0 is free: the caller can draw in place with
    ``out=buf[1], complement=buf[0], noise=buf[1]``, and the array is
    allocated (and its pages touched) in the background too. With
    ``reserve=k`` (and a background draw), ``reserve`` is a
    :class:`ProposalReserve` of the proposals of the ``k`` words that follow
    the noise, computed in the background after it; ``rng`` is not advanced
    past them (only the redraw of rejected rows takes them, see
    :func:`sech_sample`). Otherwise it is None.
    """
    bitgen = rng.bit_generator
    if (
        n < _BACKGROUND_MIN_SIZE
        or not _uses_proposals(n, h)
        or not _skips(bitgen)
        or worker_threads(n_jobs, _SECH_MAX_THREADS) == 1
    ):
        noise = _noise_buffer(n, h, bitgen, _threads(n, n_jobs), with_complement)
        return _DoneFuture((noise, None))
    # Only the state is read here, and set on the background thread's own
    # generator there: a copy of the generator costs more.
    start = bitgen.state
    _skip(bitgen, n)
    # One thread: the other cores are busy computing the centres.
    pool = _noise_pool()
    noise = pool.submit(_noise_buffer, n, h, (type(bitgen), start), 1, with_complement)
    ahead = None
    if reserve >= _PROPOSAL_MIN_SIZE:
        state = bitgen.state
        # Queued after the noise on the same thread: never in its way.
        # By the compiled loops, which the noise itself uses: below their
        # threshold (a reserve of n / 8 from 2**16 rows) numpy passes would
        # take twice the time.
        words = pool.submit(
            _noise_buffer, reserve, h, (type(bitgen), state), 1, False, n
        )
        ahead = ProposalReserve(bitgen, state, words)
    return _PairFuture(noise, ahead)


class ProposalReserve:
    """Proposals of the words that follow the noise in a generator's stream.

    Made by :func:`sech_noise_async`; taken (once) by the redraw of
    :func:`sech_sample`, provided the generator still stands where they
    start.
    """

    def __init__(self, bitgen, state, words):
        self._bitgen, self._state, self._words = bitgen, state, words

    def take(self, bitgen):
        """The proposals (None if ``bitgen`` has moved or they were taken)."""
        words, self._words = self._words, None
        if words is None or bitgen is not self._bitgen or bitgen.state != self._state:
            if words is not None:
                words.cancel()
            return None
        return words.result()

    def cancel(self):
        """Give the proposals up (their background draw, if not begun)."""
        if self._words is not None:
            self._words.cancel()
            self._words = None


class _PairFuture:
    def __init__(self, noise, reserve):
        self._noise, self._reserve = noise, reserve

    def result(self):
        return self._noise.result(), self._reserve


# numpy's bit generators whose ``advance(k)`` skips ``k`` 64-bit words
# (Philox's skips ``k`` blocks of four: it is read sequentially).
_SKIPPING = (np.random.PCG64, np.random.PCG64DXSM)
_STREAMS = threading.local()


def _skips(bitgen):
    return type(bitgen) in _SKIPPING


def _skip(bitgen, k):
    """Advance ``bitgen`` by ``k`` words, as ``random_raw(k)`` would: a pending
    32-bit half word (which ``advance`` drops) is kept."""
    pending = bitgen.state
    bitgen.advance(k)
    if pending["has_uint32"]:
        state = bitgen.state
        state["has_uint32"], state["uinteger"] = 1, pending["uinteger"]
        bitgen.state = state


def _stream(kind, state):
    """A generator of class ``kind`` (kept by this thread) set to ``state``."""
    streams = getattr(_STREAMS, "by_kind", None)
    if streams is None:
        streams = _STREAMS.by_kind = {}
    if kind not in streams:
        streams[kind] = kind(0)
    streams[kind].state = state
    return streams[kind]


class _DoneFuture:
    def __init__(self, value):
        self._value = value

    def result(self):
        return self._value


def _noise_buffer(n, h, bitgen, n_threads, with_complement, size=None):
    if isinstance(bitgen, tuple):
        bitgen = _stream(*bitgen)
    if not with_complement:
        return _sech_noise(n, h, bitgen, n_threads, None, size)
    buf = np.empty((2, n))
    _sech_noise(n, h, bitgen, n_threads, buf[1])
    # Touch the free row's pages here, off the caller's thread: faulting them
    # in when the complement is first written costs about as much as the
    # writes themselves.
    buf[0].fill(0.0)
    return buf


def _uses_proposals(n, h):
    return n >= _PROPOSAL_MIN_SIZE and h <= _PROPOSAL_MAX_SCALE


def _sech_noise(n, h, bitgen, n_threads, out, size=None):
    # ``size``: the sample size that decides on the compiled loops, if not n.
    if not _uses_proposals(n, h):
        return np.empty(0) if out is None else out
    noise = np.empty(n) if out is None else out
    if noise.shape != (n,) or noise.dtype != np.float64 or not noise.flags.c_contiguous:
        raise ValueError("out must be a contiguous float64 array of shape (n,).")
    loops = _sech_loops(n if size is None else size)
    groups = _block_groups(n, n_threads if _skips(bitgen) else 1)
    if len(groups) == 1:
        _noise_blocks(noise, h, bitgen, 0, n, loops)
        return noise
    tasks = []
    for start, stop in groups:
        # One word per row: a run starting at row ``start`` begins at word
        # ``start`` of the stream.
        stream = copy.copy(bitgen)
        stream.advance(start)
        tasks.append((noise, h, stream, start, stop, loops))
    _skip(bitgen, n)
    _run_groups(_noise_blocks, tasks)
    return noise


def _block_groups(n, n_threads):
    """Contiguous runs of whole blocks, one per thread: ``[(start, stop), ...]``."""
    n_blocks = -(-n // _SECH_BLOCK)
    n_groups = max(1, min(n_threads, n_blocks // _SECH_MIN_BLOCKS_PER_THREAD))
    bounds = [_SECH_BLOCK * (n_blocks * g // n_groups) for g in range(n_groups)]
    return list(zip(bounds, bounds[1:] + [n], strict=True))


def _run_groups(func, tasks):
    """``func(*task)`` for each task, the first in this thread; the results."""
    pool = _sech_pool(len(tasks) - 1) if len(tasks) > 1 else None
    futures = [pool.submit(func, *task) for task in tasks[1:]]
    results = [func(*tasks[0])]
    return results + [future.result() for future in futures]


def _noise_blocks(noise, h, bitgen, start, stop, loops):
    """Noise of rows ``start:stop``, block by block, reading ``bitgen``."""
    scratch = _sech_scratch()
    # numpy's default bit generator is stepped inside the compiled loop
    # itself (the same words as ``random_raw``, without its array).
    pcg = loops is not None and type(bitgen) is np.random.PCG64
    if pcg:
        state = bitgen.state
        inc, position = state["state"]["inc"], state["state"]["state"]
    # The compiled path makes four passes over a block, the numpy one seven:
    # it takes larger blocks (fewer calls, each of which waits for the GIL).
    block = _SECH_BLOCK if loops is None else _COMPILED_NOISE_BLOCK
    for first in range(start, stop, block):
        x = noise[first : min(first + block, stop)]
        if pcg:
            bits = scratch.noise_bits[: x.shape[0]]
            position = _pcg64_block(loops[3], position, inc, bits, x)
        else:
            bits = bitgen.random_raw(x.shape[0]).view(np.int64)
        if loops is None:
            m = x.shape[0]
            _noise_passes(bits, h, x, scratch.bits[:m], scratch.tan_work[:, :m])
        else:
            angles, sign_and_scale, tangents = loops[0], loops[1], loops[6]
            if not pcg:
                angles(bits, _ANGLE_PER_UNIT, x)
            corr = scratch.noise_corr[: x.shape[0]]
            tangents(x, corr)
            _log_in_place(x)
            sign_and_scale(x, corr, bits, np.float64(h))
    if pcg:
        # As ``random_raw`` leaves it (the 32-bit buffer untouched).
        state["state"]["state"] = position
        bitgen.state = state


_MASK_64 = (1 << 64) - 1
_MASK_128 = (1 << 128) - 1


def _pcg64_block(pcg64_angles, position, inc, bits, x):
    """Words and angles of one block from the PCG64 state ``position``; the
    state after them."""
    seg = bits.shape[0] // 4
    mult, add = _pcg64_jump(seg)
    add = add * inc & _MASK_128
    lanes = [position]
    for _ in range(3):
        lanes.append((lanes[-1] * mult + add) & _MASK_128)
    lane_hi = np.array([lane >> 64 for lane in lanes], dtype=np.uint64)
    lane_lo = np.array([lane & _MASK_64 for lane in lanes], dtype=np.uint64)
    hi, lo = pcg64_angles(
        lane_hi,
        lane_lo,
        np.uint64(inc >> 64),
        np.uint64(inc & _MASK_64),
        seg,
        bits.view(np.uint64),
        _ANGLE_PER_UNIT,
        x,
    )
    return (int(hi) << 64) | int(lo)


@functools.lru_cache(maxsize=16)
def _pcg64_jump(k):
    """``(A, B)``: ``k`` steps of PCG64 take the state ``s`` to
    ``A s + B inc`` (mod 2**128)."""
    from .pcg64 import PCG64_MULTIPLIER

    mult, add = 1, 0
    step_mult, step_add = PCG64_MULTIPLIER, 1
    while k:
        if k & 1:
            mult = mult * step_mult & _MASK_128
            add = (add * step_mult + step_add) & _MASK_128
        step_mult, step_add = (
            step_mult * step_mult & _MASK_128,
            (step_add * step_mult + step_add) & _MASK_128,
        )
        k >>= 1
    return mult, add


def _noise_passes(bits, h, out, mag, work=None):
    """``h X`` in ``out`` from the int64 draws ``bits``, by numpy passes.

    The twin of the compiled loops (same operations, same rounding).
    ``bits`` is overwritten; ``mag`` is an int64 work array of its shape and
    ``work`` a float64 one of shape (2, n) (allocated if None).
    """
    np.bitwise_and(bits, _LOW_BITS, out=mag)
    np.multiply(mag, _ANGLE_PER_UNIT, out=out)
    if work is None:
        work = np.empty((2, out.shape[0]))
    # ``mag`` is free once the angles are formed: a work array too.
    _log_tan_passes(out, mag.view(np.float64), work[0], work[1])
    # ln tan(π v / 2) <= 0: flipping its sign bit with the draw's sign bit
    # gives either side with probability 1/2.
    np.bitwise_and(bits, _SIGN_BIT, out=bits)
    xi = out.view(np.int64)
    np.bitwise_xor(xi, bits, out=xi)
    out *= np.float64(h)
    return out


def _log_tan_passes(x, y, a, b):
    """``ln tan x`` in place for angles ``x`` in [0, π/4], by numpy passes.

    ``tan x = x + x y P(y) / Q(y)``, ``y = x²``, with the rational
    approximation of :data:`~skcalib._backend.sech.compiled.TAN_P` and
    ``TAN_Q``: a dozen multiplications and additions cost less than
    ``np.tan`` (a libm call per value). The rounding error ``e`` of the last
    addition is exact (the larger term comes first), and ``ln tan x`` is
    ``ln(rounded tan) + e / rounded tan``: that half unit of the tangent no
    longer reaches the result. The compiled twins (``compiled``'s
    ``_tangents``, numpy's logarithm, then ``_sign_and_scale``) do the same
    operations in the same order. ``y``, ``a`` and ``b`` are float64 work
    arrays of the shape of ``x``.
    """
    np.multiply(x, x, out=y)
    np.multiply(y, _TAN_P[3], out=a)
    a += _TAN_P[2]
    a *= y
    a += _TAN_P[1]
    a *= y
    a += _TAN_P[0]
    np.add(y, _TAN_Q[2], out=b)
    b *= y
    b += _TAN_Q[1]
    b *= y
    b += _TAN_Q[0]
    a /= b
    a *= y
    a *= x
    np.add(x, a, out=b)
    x -= b
    x += a
    # m = 0 has tangent 0 and no error: the correction is 0, the
    # logarithm -inf.
    np.maximum(b, _TAN_TINY, out=y)
    x /= y
    _log_in_place(b)
    x += b
    return x


def _log_in_place(x):
    # The logarithm stays numpy's on both paths: a compiled one could round
    # differently.
    with np.errstate(divide="ignore"):
        # m = 0 gives -inf, hence a draw outside [0, 1] that is redrawn.
        np.log(x, out=x)


def _add_noise(centre, noise, out, complement, grid, n_threads, check_sum=None):
    """``out = round(clip(centre) + noise)`` (and ``complement = 1 - out``).

    By blocks; returns the rows outside [0, 1], their centres and the number
    of blocks failing ``check_sum`` (``out`` may be ``centre`` or ``noise``
    itself).
    """
    n = centre.shape[0]
    loops = _sech_loops(n)
    tasks = [
        (centre, noise, out, complement, grid, loops, start, stop, check_sum)
        for start, stop in _block_groups(n, n_threads)
    ]
    rows, centres, n_off = [], [], 0
    for group_rows, group_centres, group_off in _run_groups(_add_noise_blocks, tasks):
        rows += group_rows
        centres += group_centres
        n_off += group_off
    if not rows:
        return np.empty(0, dtype=np.intp), np.empty(0), n_off
    return np.concatenate(rows), np.concatenate(centres), n_off


def _add_noise_blocks(
    centre, noise, out, complement, grid, loops, start, stop, check_sum
):
    """:func:`_add_noise` on rows ``start:stop``: lists of rows and centres,
    and the number of blocks failing ``check_sum``."""
    scratch = _sech_scratch()
    rows, centres, n_off = [], [], 0
    other, low, high = (None, 0.0, 0.0) if check_sum is None else check_sum
    # Rejections are rare around most models; a block with many of them
    # (a confident model, see _finish) makes the next one expect many too.
    dense = False
    for first in range(start, stop, _SECH_BLOCK):
        block = slice(first, min(first + _SECH_BLOCK, stop))
        c, d, x = centre[block], out[block], noise[block]
        e = None if complement is None else complement[block]
        o = None if other is None else other[block]
        m = d.shape[0]
        if loops is None:
            if o is not None:
                n_off += _check_sums(c, o, low, high, scratch.sums[:m], fail=False)
            # Computed in a contiguous buffer, then written: ``out`` and
            # ``complement`` are often strided, where numpy passes are slow.
            s = scratch.draws[:m]
            np.clip(c, 0.0, 1.0, out=s)
            s += x
            lo, hi = s.min(), s.max()
            if not (lo >= 0.0 and hi <= 1.0):
                flags = scratch.bad[:m]
                np.logical_not((s >= 0.0) & (s <= 1.0), out=flags)
                bad = _flagged(scratch.bad, m)
                # Read before ``out``, which may be ``centre``, is written.
                rows.append(first + bad)
                centres.append(c[bad])
            if grid:
                # round_to_grid in two passes, the second writing ``out``:
                # adding 2**28 leaves a last bit worth 2**-24, so the sum is
                # rounded to the grid (ties to even) and the difference is
                # exact. Only for draws in [0, 1], the others are redrawn.
                s += _GRID_SHIFT
                np.subtract(s, _GRID_SHIFT, out=d)
            else:
                np.copyto(d, s)
            if e is not None:
                np.subtract(1.0, d, out=e)
            continue
        # Strided centres (a column of a probability matrix) are read in
        # place: the loop is bound by memory, not by arithmetic.
        head = 0
        n_bad = block_off = 0
        if first == start and m > 2 * _DENSE_PROBE:
            # No block before it to go by: its first rows tell. Collecting
            # a confident model's rejections behind a branch costs twice the
            # block's time.
            head = _DENSE_PROBE
            n_bad, block_off = _finish_rows(
                loops, x, c, d, e, o, 0, head, scratch, 0, first, grid, low, high, False
            )
            dense = n_bad > head // _DENSE_REJECTIONS
        rest_bad, rest_off = _finish_rows(
            loops, x, c, d, e, o, head, m, scratch, n_bad, first, grid, low, high, dense
        )
        n_bad += rest_bad
        block_off += rest_off
        dense = n_bad > m // _DENSE_REJECTIONS
        n_off += block_off > 0
        if n_bad:
            rows.append(scratch.rows[:n_bad].copy())
            centres.append(scratch.saved[:n_bad].copy())
    return rows, centres, n_off


def _finish_rows(
    loops, x, c, d, e, o, start, stop, scratch, n_bad, first, grid, low, high, dense
):
    """The compiled loop ``_finish`` on rows ``start:stop`` of a block, its
    rejected rows stored after the ``n_bad`` found before them."""
    rows = slice(start, stop)
    return loops[2](
        x[rows],
        c[rows],
        d[rows],
        None if e is None else e[rows],
        scratch.rows[n_bad:],
        scratch.saved[n_bad:],
        first + start,
        grid,
        None if o is None else o[rows],
        low,
        high,
        dense,
    )


def _flagged(flags, m):
    """``np.flatnonzero(flags[:m])``, ``flags`` having room for
    ``_FLAG_PADDING`` more values after ``m``.

    numpy finds the nonzero entries of a bool array with a branch per entry
    when at most 10 % of them are set, and without one above: at a few per
    cent (a confident model's rejections) its branch mispredicts so often
    that scanning more entries without a branch is cheaper (~0.47 ms per 1e6
    rows instead of 1.5 ms at 10 %). The flags are then followed by enough
    set entries to lift the share above 10 %; the indices past ``m`` come
    last and are dropped.
    """
    count = np.count_nonzero(flags[:m])
    if count * _FLAG_DENSE <= m:
        return np.flatnonzero(flags[:m])
    pad = flags[m : m + _FLAG_PADDING]
    pad.fill(True)
    return np.flatnonzero(flags[: m + _FLAG_PADDING])[:count]


def _check_sums(centre, other, low, high, work=None, *, fail=True):
    """Whether some ``centre + other`` is outside [low, high] or NaN (raises
    :class:`RowSumError` if ``fail``)."""
    t = np.add(other, centre, out=work)
    off = not (t.min() >= low and t.max() <= high)
    if off and fail:
        raise RowSumError(_ROW_SUM_MESSAGE)
    return off


def _sech_redraw(centres, h, rng, proposals, out, complement, rows, grid, loops):
    """Redraw ``out[rows]`` (and ``complement[rows]``) around ``centres``
    until inside [0, 1].

    Round after round, the rows still rejected take the next proposals of
    the stream in row order; the inverse cdf takes over after a few rounds.
    The values are kept in a contiguous array, the rejected rows compacted
    in place, and written once at the end. ``loops`` are the compiled loops
    or None (numpy passes).
    """
    cc = np.clip(centres, 0.0, 1.0, out=centres)
    pending = np.arange(rows.shape[0])
    values = np.empty(rows.shape[0])
    k = rows.shape[0]
    # The numpy passes round every value once, at the end (a pass per round
    # otherwise); the compiled loop rounds as it goes, at no cost.
    accept = _accept_passes if loops is None else loops[4]
    round_each = grid and loops is not None
    for _ in range(_SECH_REJECTION_ROUNDS):
        if k == 0:
            break
        k = accept(cc[:k], proposals.take(k), pending[:k], values, round_each)
    proposals.release()
    if k:
        x = sech_ppf(rng.random(size=k), cc[:k], h)
        values[pending[:k]] = round_to_grid(x, out=x) if round_each else x
    if loops is None:
        if grid:
            round_to_grid(values, out=values)
        out[rows] = values
        if complement is not None:
            complement[rows] = np.subtract(1.0, values, out=values)
    else:
        loops[5](rows, values, out, complement)


def _accept_passes(cc, noise, pending, values, grid):
    """One round of the redraw, by numpy passes (twin of the compiled loop).

    Row ``pending[i]`` (clipped centre ``cc[i]``) proposes ``cc[i] +
    noise[i]``, written to ``values[pending[i]]`` (a rejected proposal is
    overwritten later: cheaper than selecting the accepted ones); the
    rejected rows are moved, in order, to the front of ``pending`` and
    ``cc``. Returns their number.
    """
    s = np.add(cc, noise)
    outside = s >= 0.0
    np.logical_and(outside, s <= 1.0, out=outside)
    np.logical_not(outside, out=outside)
    if grid:
        round_to_grid(s, out=s)
    values[pending] = s
    # Positions, then gathers: cheaper than two boolean selections.
    still = np.flatnonzero(outside)
    k = still.shape[0]
    pending[:k] = pending[still]
    cc[:k] = cc[still]
    return k


class _Proposals:
    """Noise of the proposals that follow the first ones, in stream order:
    those of a reserve computed beforehand (if it starts where ``bitgen``
    stands), then fresh draws from ``bitgen`` (by the compiled ``loops``
    unless None)."""

    def __init__(self, h, bitgen, reserve, loops=None):
        self._h, self._bitgen, self._loops = h, bitgen, loops
        self._ahead = None if reserve is None else reserve.take(bitgen)
        # Words of the reserve taken and not yet skipped in ``bitgen``.
        self._used = 0

    def take(self, k):
        """The noise of the next ``k`` proposals."""
        if self._ahead is None:
            return self._fresh(k)
        part = self._ahead[self._used : self._used + k]
        self._used += part.shape[0]
        if part.shape[0] == k:
            return part
        # The reserve is spent: read on from the generator, past it.
        self.release()
        self._ahead = None
        return np.concatenate([part, self._fresh(k - part.shape[0])])

    def release(self):
        """Move ``bitgen`` past the reserve's words taken so far."""
        if self._used:
            _skip(self._bitgen, self._used)
            self._ahead = self._ahead[self._used :]
            self._used = 0

    def _fresh(self, k):
        if self._loops is not None:
            # Past the reserve of a confident model, tens of thousands of
            # proposals: the compiled loops take about half the time of the
            # numpy passes.
            noise = np.empty(k)
            _noise_blocks(noise, self._h, self._bitgen, 0, k, self._loops)
            return noise
        bits = self._bitgen.random_raw(k).view(np.int64)
        return _noise_passes(bits, self._h, np.empty(k), np.empty_like(bits))


def _overlaps(a, b):
    return np.may_share_memory(a, b) and np.shares_memory(a, b)


def _same_view(a, b):
    return (
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and a.strides == b.strides
    )


def _sech_loops(n):
    """The compiled block loops when they pay off (None: the numpy passes)."""
    return use_compiled(
        compiled_loops,
        n,
        min_size=_COMPILED_MIN_SIZE,
        saved_per_unit=_COMPILED_SAVING,
    )


# ---------------------------------------------------------------------------
# Threads and work buffers
# ---------------------------------------------------------------------------


def _threads(n, n_jobs):
    """Threads for ``n`` draws: one where the blocks are too few to share,
    else :func:`~skcalib._backend.threads.worker_threads`."""
    if -(-n // _SECH_BLOCK) < 2 * _SECH_MIN_BLOCKS_PER_THREAD:
        return 1
    return worker_threads(n_jobs, _SECH_MAX_THREADS)


class _SechScratch:
    """Work buffers of one block."""

    def __init__(self, size):
        self.bits = np.empty(size, dtype=np.int64)
        # Rows (and their centres) rejected by the compiled loop.
        self.rows = np.empty(size, dtype=np.intp)
        self.saved = np.empty(size)
        self.draws = np.empty(size)
        self.bad = np.empty(size + _FLAG_PADDING, dtype=bool)
        self.sums = np.empty(size)
        self.noise_bits = np.empty(_COMPILED_NOISE_BLOCK, dtype=np.int64)
        self.noise_corr = np.empty(_COMPILED_NOISE_BLOCK)
        self.tan_work = np.empty((2, size))


_SECH_SCRATCH = threading.local()


def _sech_scratch():
    # Kept per thread: fresh buffers at every call would cost page faults.
    scratch = getattr(_SECH_SCRATCH, "buffers", None)
    if scratch is None:
        scratch = _SECH_SCRATCH.buffers = _SechScratch(_SECH_BLOCK)
    return scratch


_POOLS = {}
_POOLS_LOCK = threading.Lock()


def _pool(name, n_workers):
    """The pool ``name`` with room for ``n_workers`` (threads start as tasks
    need them). A pool too small is replaced, not shut down: a caller may
    still be submitting to it."""
    with _POOLS_LOCK:
        pool, size = _POOLS.get(name, (None, 0))
        if size < n_workers:
            pool, size = ThreadPoolExecutor(n_workers), n_workers
            _POOLS[name] = pool, size
        return pool


def _sech_pool(n_workers):
    # The calling thread takes a share of the work itself: usable CPUs less
    # one are room enough unless n_jobs asks for more.
    return _pool("blocks", max(n_workers, usable_cpus() - 1))


def _noise_pool():
    # Separate from the block pool, whose tasks never wait on it: no deadlock
    # however many callers draw at once.
    return _pool("noise", 1)


def _forget_pools():
    # A forked child has none of the parent's threads (and may inherit a held
    # lock): it makes its own pools.
    global _POOLS, _POOLS_LOCK
    _POOLS = {}
    _POOLS_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)
