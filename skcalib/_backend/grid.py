"""Uniform grids on [0, 1]: linear binning, exact coarsening, reflected smoothing.

A score ``s`` between grid points ``j`` and ``j + 1`` (grid ``t_j = j / M``)
gives weight ``1 - theta`` to ``j`` and ``theta`` to ``j + 1``. Histograms of
this kind are sufficient statistics for every grid-based estimate in skcalib:
they are sums over samples, so chunks and partitions merge by addition.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import fft as _fft

from .compiled import use_compiled
from .kernels import periodized_gaussian_spectrum

# Finest grid used anywhere: 2**16 cells keeps the sufficient statistics at
# ~1.5 MB (cache resident while binning) and resolves sigma down to ~6e-4 with
# MIN_STEPS_PER_SIGMA steps.
FINE_M = 2**16
# The Gaussian must span this many grid steps for linear binning and the
# trapezoid rule to be accurate to ~1e-5 relative (the error is
# ~ theta (1 - theta) / 2 * (step / sigma)**2).
MIN_STEPS_PER_SIGMA = 40
MIN_M = 64

# Samples are binned in chunks so that temporaries stay small whatever n is.
_CHUNK = 2**17
# From this many samples :func:`residual_statistics` bins by compiled loops
# (numba, once loaded: see .compiled), which do the numpy passes' operations
# in the same order, saving _COMPILED_SAVING seconds per sample.
_COMPILED_MIN_SIZE = 1 << 18
_COMPILED_SAVING = 2e-8


def grid_size(sigma, fine_m=FINE_M):
    """Grid cells for bandwidth ``sigma``: a power of two dividing ``fine_m``."""
    want = MIN_STEPS_PER_SIGMA / max(float(sigma), 1e-300)
    m = MIN_M
    while m < want and m < fine_m:
        m *= 2
    return min(m, fine_m)


def grid_points(M):
    """The ``M + 1`` grid points ``j / M``."""
    return np.linspace(0.0, 1.0, M + 1)


def bin_positions(s, M):
    """Left grid index and fractional position of each score (``s`` in [0, 1])."""
    x = s * M
    idx = np.minimum(x.astype(np.intp), M - 1)
    theta = x - idx
    return idx, theta


def calibration_statistics(y, s, w, M=FINE_M, *, scores=None, transform=None):
    """Grid sufficient statistics ``(sum w, sum w*y, sum w*s)`` per grid point.

    ``y`` must hold 0/1 labels and ``s`` the grid positions in [0, 1]; ``w``
    the weights, or None for unit weights (no array of ones needed). When
    the positions are the scores themselves (``scores=None``), three weighted
    histograms are enough instead of six: per cell and label, ``A = sum w``,
    ``B = sum w theta`` and ``C = sum w theta^2``; since ``s = (c + theta) / M``
    in cell ``c``, the linearly binned ``sum w s`` follows exactly: the cell's
    left node receives ``[c (A - B) + B - C] / M`` and its right node
    ``[c B + C] / M``. When the positions are a transform of the scores (the
    logit grid), pass the probabilities as ``scores``: the cells then carry
    ``sum w s`` and ``sum w s theta`` instead of ``C``. With ``transform``,
    ``s`` holds the scores and the positions are ``transform(chunk, out,
    tmp)`` of each chunk of them (an elementwise map writing into ``out``,
    with ``tmp`` as scratch): no array of the positions of every sample is
    made.

    Returns
    -------
    stats : ndarray of shape (M + 1, 3)
    """
    n = s.shape[0]
    # column by column in memory: each bincount is added to a contiguous column
    cells = np.zeros((3 if scores is None else 4, 2 * M), dtype=np.float64).T
    # Unit weights: ``1 * v`` is ``v`` and a sum of ones below 2**53 is exact,
    # so the sums are those of the weighted columns, bit for bit, without the
    # products and with a count for the first column.
    unit = w is None or bool(w.min() == 1.0 and w.max() == 1.0)
    work = _ChunkBuffers(min(n, _CHUNK))
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(start + _CHUNK, n))
        buf = work.rows(sl.stop - start)
        pos = s[sl] if transform is None else transform(s[sl], buf.pos, buf.tmp)
        key, theta = _cell_keys_into(y[sl], pos, M, buf)
        if unit:
            cells[:, 0] += np.bincount(key, minlength=2 * M)
            if scores is None:
                cols = (theta, np.multiply(theta, theta, out=buf.tmp))
            else:
                ts = np.multiply(theta, scores[sl], out=buf.tmp)
                cols = (theta, scores[sl], ts)
            add_cell_moments(cells[:, 1:], key, cols)
        else:
            cols = moment_columns(w[sl], theta, None if scores is None else scores[sl])
            add_cell_moments(cells, key, cols)
    return statistics_from_cells(cells, M)


class _ChunkBuffers:
    """Scratch arrays for one chunk of :func:`calibration_statistics`, reused
    from chunk to chunk: a fresh megabyte-sized temporary per operation costs
    page faults that can exceed the arithmetic."""

    def __init__(self, size):
        self.pos = np.empty(size)
        self.tmp = np.empty(size)
        self.theta = np.empty(size)
        self.key = np.empty(size, dtype=np.intp)
        self.label = np.empty(size, dtype=np.intp)
        self.positive = np.empty(size, dtype=bool)

    def rows(self, n):
        """The same buffers cut to the first ``n`` entries."""
        view = _ChunkBuffers.__new__(_ChunkBuffers)
        for name, arr in vars(self).items():
            setattr(view, name, arr[:n])
        return view


def residual_statistics(
    y, s, w, M=FINE_M, *, transform=None, interior=False, logit=None
):
    """Linearly binned residuals ``sum w (y - s)`` per grid point and ``sum w``.

    All that SmoothECE needs (:func:`calibration_statistics` also gives the
    density and the curve): per cell, ``R = sum w r`` and ``T = sum w r
    theta`` with ``r = y - s``; the cell's left node receives ``R - T`` and
    its right node ``T``. Two histograms of ``M`` cells instead of three or
    four of ``2 M`` (the label needs no key of its own). ``s`` holds the
    scores; with ``transform`` the positions are ``transform(chunk, out,
    tmp)`` as in :func:`calibration_statistics`, else the scores themselves.
    ``interior=True`` promises positions below 1, so that no index needs
    clamping to the last cell.

    ``logit=(eps, lo, length)`` says that ``transform`` is the map
    ``(log(c / (1 - c)) - lo) / length`` of ``c = clip(s, eps, 1 - eps)``,
    computed by these operations in this order: large samples are then
    binned by compiled loops (numba, when installed) doing the same
    operations (numpy's logarithm included), so that the sums are the same
    bit for bit; so are those of the scores themselves.

    Returns
    -------
    resid : ndarray of shape (M + 1,)
    total : float
        ``sum w`` (the number of samples for ``w=None``).
    """
    n = s.shape[0]
    cells = np.zeros((2, M), dtype=np.float64).T
    work = _ChunkBuffers(min(n, _CHUNK))
    loops = _binning_loops(n, s, y, w, transform is None or logit is not None)
    sums = None if loops is None else np.empty((2, M))
    for start in range(0, n, _CHUNK):
        sl = slice(start, min(start + _CHUNK, n))
        buf = work.rows(sl.stop - start)
        if loops is not None and _binned_compiled(
            loops,
            y[sl],
            s[sl],
            None if w is None else w[sl],
            M,
            cells,
            sums,
            buf,
            logit,
            interior,
        ):
            continue
        pos = s[sl] if transform is None else transform(s[sl], buf.pos, buf.tmp)
        key, theta = _cell_index_into(pos, M, buf, clamp=not interior)
        r = np.subtract(y[sl], s[sl], out=buf.tmp)
        if w is not None:
            r *= w[sl]
        rt = np.multiply(r, theta, out=buf.theta)
        add_cell_moments(cells, key, (r, rt))
    resid = np.zeros(M + 1, dtype=np.float64)
    resid[:-1] += cells[:, 0] - cells[:, 1]
    resid[1:] += cells[:, 1]
    total = float(n) if w is None else float(w.sum())
    return resid, total


def _binning_loops(n, s, y, w, known_map):
    """The compiled loops of :func:`residual_statistics`, or None (numpy
    passes): small samples, loops that would not repay their loading, an
    unknown transform, numba missing, or arrays that are not contiguous
    float64."""
    if n < _COMPILED_MIN_SIZE or not known_map:
        return None
    for a in (s, y) if w is None else (s, y, w):
        if a.dtype != np.float64 or not a.flags.c_contiguous:
            return None
    return use_compiled(
        _compiled_binning,
        n,
        min_size=_COMPILED_MIN_SIZE,
        saved_per_unit=_COMPILED_SAVING,
    )


def _binned_compiled(loops, y, s, w, M, cells, sums, buf, logit, interior):
    """One chunk of :func:`residual_statistics` by the compiled loops (its
    sums in the work array ``sums`` of shape (2, M), then added to
    ``cells``); False (nothing added) if a position falls outside the grid,
    for the numpy passes to deal with (and raise) as without numba."""
    ratio, bin_chunk = loops
    pos = buf.pos
    lo = length = 0.0
    if logit is not None:
        eps, lo, length = logit
        ratio(s, eps, 1.0 - eps, pos)
        with np.errstate(divide="ignore", invalid="ignore"):
            np.log(pos, out=pos)
    ok = bin_chunk(
        s if logit is None else pos,
        logit is not None,
        lo,
        length,
        y,
        s,
        w,
        M,
        not interior,
        sums,
    )
    if ok:
        cells[:, 0] += sums[0]
        cells[:, 1] += sums[1]
    return ok


def _logit_ratio(s, low, high, out):
    # ``c / (1 - c)`` of ``c = clip(s, low, high)``, as ``GridGeometry.to_unit``
    # computes it (np.clip, then a subtraction and a division).
    for i in range(s.shape[0]):
        c = s[i]
        c = low if c < low else c
        c = high if c > high else c
        out[i] = c / (1.0 - c)


def _bin_residuals(pos, shift, lo, length, y, s, w, M, clamp, sums):
    # The numpy passes of residual_statistics on one chunk, fused: position
    # (``(pos - lo) / length`` if ``shift``), cell and offset theta as
    # _cell_index_into, then ``r = y - s`` (times ``w``) and ``r theta``
    # added to their cells in sample order, as np.bincount adds them, into
    # zeroed ``sums`` (2, M). Returns False at a position outside the grid.
    sums[:] = 0.0
    scale = np.float64(M)
    for i in range(pos.shape[0]):
        p = pos[i]
        if shift:
            p = p - lo
            p = p / length
        x = p * scale
        if not (x >= 0.0 and x < scale + 1.0):
            return False
        key = np.intp(x)
        if clamp:
            key = min(key, M - 1)
        if key >= M:
            return False
        theta = x - np.float64(key)
        r = y[i] - s[i]
        if w is not None:
            r = r * w[i]
        sums[0, key] += r
        sums[1, key] += r * theta
    return True


@functools.cache
def _compiled_binning():
    """``(ratio, bin_chunk)``: ``_logit_ratio`` and ``_bin_residuals``
    compiled with numba."""
    import numba

    def jit(func):
        return numba.njit(cache=True, nogil=True, boundscheck=False)(func)

    return jit(_logit_ratio), jit(_bin_residuals)


def _cell_index_into(s, M, buf, *, clamp=True):
    """:func:`bin_positions` written into the buffers of ``buf`` (with
    ``clamp=False`` for positions known to be below 1)."""
    x = np.multiply(s, M, out=buf.pos)
    key = buf.key
    np.copyto(key, x, casting="unsafe")  # truncation, as ``astype``
    if clamp:
        np.minimum(key, M - 1, out=key)
    theta = np.subtract(x, key, out=buf.theta)
    return key, theta


def _cell_keys_into(y, s, M, buf):
    """:func:`cell_keys` written into the buffers of ``buf``.

    ``s`` may be ``buf.pos``; it is overwritten then.
    """
    key, theta = _cell_index_into(s, M, buf)
    # ``np.add(..., where=)`` is several times slower than these three passes
    np.greater(y, 0.5, out=buf.positive)
    np.copyto(buf.label, buf.positive)
    buf.label *= M
    key += buf.label
    return key, theta


def cell_keys(y, s, M):
    """Cell-and-label key (``c`` for label 0, ``M + c`` for label 1) and ``theta``."""
    idx, theta = bin_positions(s, M)
    idx += M * (y > 0.5)
    return idx, theta


def moment_columns(w, theta, scores=None):
    """Per-sample quantities whose per-cell sums are the sufficient statistics."""
    wt = w * theta
    if scores is None:
        return (w, wt, wt * theta)
    return (w, wt, w * scores, wt * scores)


def add_cell_moments(cells, key, columns, counts=None):
    """Add per-key sums of ``columns`` (optionally times ``counts``) to ``cells``."""
    size = cells.shape[0]
    for j, col in enumerate(columns):
        v = col if counts is None else counts * col
        cells[:, j] += np.bincount(key, weights=v, minlength=size)
    return cells


def statistics_from_cells(cells, M):
    """Node statistics ``(sum w, sum w*y, sum w*s)`` from per-cell moments.

    ``cells`` has shape ``(2 * M, k)``: rows ``c`` (label 0) and ``M + c``
    (label 1) of cell ``c`` hold the sums of :func:`moment_columns`.
    """
    lab0, lab1 = cells[:M], cells[M:]
    A, B = lab0[:, 0] + lab1[:, 0], lab0[:, 1] + lab1[:, 1]
    out = np.zeros((M + 1, 3), dtype=np.float64)
    out[:-1, 0] += A - B
    out[1:, 0] += B
    out[:-1, 1] += lab1[:, 0] - lab1[:, 1]
    out[1:, 1] += lab1[:, 1]
    if cells.shape[1] == 3:
        C = lab0[:, 2] + lab1[:, 2]
        c = np.arange(M, dtype=np.float64)
        out[:-1, 2] += (c * (A - B) + B - C) / M
        out[1:, 2] += (c * B + C) / M
    else:
        S, ST = lab0[:, 2] + lab1[:, 2], lab0[:, 3] + lab1[:, 3]
        out[:-1, 2] += S - ST
        out[1:, 2] += ST
    return out


def coarsen(hist, M):
    """Exact linear binning onto a coarser grid from a finer one.

    Linear binning composed with linear interpolation of the fine grid points
    onto a coarser grid whose cells are unions of fine cells equals linear
    binning of the original samples onto the coarser grid (the hat functions
    are linear inside each coarse cell). ``hist.shape[0] - 1`` must be ``M``
    times a power of two; the grid is halved repeatedly.
    """
    while hist.shape[0] - 1 > M:
        hist = _halve(hist)
    if hist.shape[0] - 1 != M:
        raise ValueError(f"grid cannot be coarsened to {M} cells")
    return hist


def _halve(hist):
    if (hist.shape[0] - 1) % 2:
        raise ValueError("grid with an odd number of cells cannot be halved")
    odd = 0.5 * hist[1::2]
    out = hist[::2].copy()
    out[:-1] += odd
    out[1:] += odd
    return out


class GridPyramid:
    """Fine-grid histograms with their exact coarsenings, computed on demand."""

    def __init__(self, hist):
        self.fine_m = hist.shape[0] - 1
        self._levels = {self.fine_m: hist}

    def at(self, M):
        if M not in self._levels:
            finer = min(m for m in self._levels if m > M)
            self._levels[M] = coarsen(self._levels[finer], M)
        return self._levels[M]


def reflected_smooth(hist, sigma):
    """Convolve grid masses with the reflected Gaussian kernel on [0, 1].

    ``out[k] = sum_j hist[j] * K(t_k, t_j)`` where ``K(t, s)`` is the Gaussian
    density of scale ``sigma`` reflected about 0 and 1 (all images), so that
    ``integral_0^1 K(t, s) dt = 1`` for every ``s`` — a mass at exactly 0 or 1
    keeps all of it. Computed as a circular convolution of the evenly extended
    signal by FFT in O(M log M).

    Parameters
    ----------
    hist : ndarray of shape (M + 1,) or (M + 1, k)
    sigma : float > 0

    Returns
    -------
    ndarray of the same shape: densities at the grid points.
    """
    squeeze = hist.ndim == 1
    h = hist[:, None] if squeeze else hist
    M = h.shape[0] - 1
    ext = np.empty((2 * M, h.shape[1]), dtype=np.float64)
    ext[: M + 1] = h
    ext[M + 1 :] = h[M - 1 : 0 : -1]
    # The end points are their own mirror images: count them twice.
    ext[0] *= 2.0
    ext[M] *= 2.0
    spec = _fft.rfft(ext, axis=0) * _kernel_spectrum(M, float(sigma))[:, None]
    out = _fft.irfft(spec, n=2 * M, axis=0)[: M + 1]
    return out[:, 0] if squeeze else out


# A Gaussian loses less than 1e-22 of its mass beyond this many widths
# (erfc(10 / sqrt(2)) = 1.5e-23): far below the round-off of the FFT.
SUPPORT_WIDTHS = 10.0


def support_window(mass, sigma):
    """Grid points ``(lo, hi)`` holding every non-zero ``mass`` (first
    axis) and ``SUPPORT_WIDTHS`` kernel widths of ``sigma`` either side,
    clipped to the grid; None when the window is not under half the grid.

    Masses on ``[lo, hi]`` smoothed by :func:`windowed_smooth` equal their
    :func:`reflected_smooth` there up to round-off, and the full smoothing
    is below round-off outside: scores packed near 0 or 1 (rare positives)
    then cost a window instead of the whole grid.
    """
    M = mass.shape[0] - 1
    nz = np.flatnonzero(mass)
    if nz.size == 0:
        return None
    pad = int(np.ceil(SUPPORT_WIDTHS * sigma * M))
    lo, hi = max(int(nz[0]) - pad, 0), min(int(nz[-1]) + pad, M)
    if 2 * (hi - lo) > M:
        return None
    # a window of a power-of-two length: fast transforms, few kernels cached
    size = 1 << max(int(hi - lo - 1).bit_length(), 1)
    if lo == 0 or hi + (size - (hi - lo)) <= M:
        return lo, lo + size
    return M - size, M


def windowed_smooth(part, sigma, M):
    """:func:`reflected_smooth` at the grid points of a window of
    :func:`support_window` of a grid of ``M`` cells, from the masses
    ``part`` on that window alone: the window is smoothed as a grid of its
    own, reflected at its ends. A true end of the grid reflects as in the
    full grid; an inner end lies ``SUPPORT_WIDTHS`` kernel widths from the
    masses, so its images add below round-off."""
    scale = M / (part.shape[0] - 1)
    return reflected_smooth(part, sigma * scale) * scale


@functools.lru_cache(maxsize=16)
def _kernel_spectrum(M, sigma):
    """Spectrum of :func:`periodized_gaussian`, cached: a resampling loop
    smooths thousands of histograms at the same few ``(M, sigma)``."""
    spec = periodized_gaussian_spectrum(M, sigma)
    spec.flags.writeable = False
    return spec


def trapezoid(values, M):
    """Trapezoid rule on the grid ``j / M`` (first axis)."""
    return (values.sum(axis=0) - 0.5 * (values[0] + values[-1])) / M
