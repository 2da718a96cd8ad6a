"""SmoothECE of many binned samples at once (resamples, simulated samples).

The scalar solver (:mod:`.smece`) evaluates ``smECE_sigma`` one histogram and
one bandwidth at a time; a resampling method needs it for hundreds of
histograms, each at its own bandwidth. Here the histograms are the columns of
one matrix, transformed once, and every evaluation is one inverse FFT of the
columns with a Gaussian factor per column: the reflected Gaussian kernel is
diagonal in the cosine basis (``exp(-(pi l u)^2 / 2)`` for frequency ``l``
and unit bandwidth ``u``), whatever the bandwidth of each column.

The fixed point ``sigma*`` of each column is found by a vectorised Illinois
(regula falsi) search; ``smECE_sigma - sigma`` decreases with slope at most
-1, so a point where it is within ``tol`` of 0 is within ``tol`` of the root.
"""

from __future__ import annotations

import numpy as np
from scipy import fft as _fft

from .grid import FINE_M, coarsen, grid_size

__all__ = ["ResidualColumns", "bin_residual_columns"]

# Evaluation grid steps per (unit) bandwidth: |r_sigma| is integrated by the
# trapezoid rule on a grid of at least this many steps per sigma, which
# agrees with the scalar solver to ~1e-6 (tests).
_EVAL_STEPS_PER_SIGMA = 20
# The Gaussian factor is below 1e-17 from frequency 9 / (pi u) on.
_SPECTRUM_CUT = 9.0 / np.pi
_SIGMA_TOL = 1e-6
# Entries of the complex work array of one inverse transform (64 MB).
_BLOCK_ENTRIES = 1 << 22
_MAX_STEPS = 100


def bin_residual_columns(cell, theta, resid, M):
    """Linear binning of ``resid`` (one row per column) onto ``M + 1`` points.

    ``cell`` and ``theta`` (same shape as ``resid``, ``(n_columns, n)``) are
    the left grid index and fractional position of each entry. Returns an
    array of shape ``(M + 1, n_columns)``.
    """
    n_cols = resid.shape[0]
    offset = (np.arange(n_cols, dtype=np.intp) * (M + 1))[:, None]
    key = (cell + offset).ravel()
    right = resid * theta
    size = n_cols * (M + 1)
    out = np.bincount(key, weights=(resid - right).ravel(), minlength=size)
    out += np.bincount(key + 1, weights=right.ravel(), minlength=size)
    return out.reshape(n_cols, M + 1).T


class ResidualColumns:
    """Binned residuals ``sum w (y - s)`` of several samples, one per column.

    Parameters
    ----------
    resid : ndarray of shape (M + 1, n_columns)
        Residual sums at the points ``j / M`` of the unit grid (scores mapped
        by the geometry), ``M`` a power of two.
    total : ndarray of shape (n_columns,)
        Total weight of each sample.
    length : float
        Length of the geometry's interval (1 for ``"l1"``): bandwidths are
        in its units.
    """

    def __init__(self, resid, total, length=1.0):
        self.M = resid.shape[0] - 1
        self.length = float(length)
        self._levels = {self.M: resid / np.asarray(total, dtype=np.float64)}
        self._spectra = {}

    @property
    def n_columns(self):
        return self._levels[self.M].shape[1]

    def _spectrum(self, M):
        """Transform of the even extension of the histograms coarsened to
        ``M`` cells (the reflected kernel's basis; the end points are their
        own mirror images). Exact coarsening is linear binning on the coarser
        grid, so a level is as accurate as binning there directly."""
        if M not in self._spectra:
            if M not in self._levels:
                finer = min(m for m in self._levels if m > M)
                self._levels[M] = coarsen(self._levels[finer], M)
            h = self._levels[M]
            ext = np.empty((2 * M, h.shape[1]))
            ext[: M + 1] = h
            ext[M + 1 :] = h[M - 1 : 0 : -1]
            ext[0] *= 2.0
            ext[M] *= 2.0
            self._spectra[M] = _fft.rfft(ext, axis=0)
        return self._spectra[M]

    def smece_at(self, sigma, columns=None):
        """``smECE_sigma`` of each column at its own ``sigma``.

        Each column's value depends on its own data and ``sigma`` only (its
        grid, frequencies and evaluation points follow from its ``sigma``),
        not on the other columns evaluated with it: results do not depend on
        how samples are batched.
        """
        if columns is None:
            columns = np.arange(self.n_columns)
        columns = np.asarray(columns)
        u = np.broadcast_to(
            np.asarray(sigma, dtype=np.float64) / self.length, columns.shape
        )
        u = np.maximum(u, 1.0 / self.M)
        # the grid the scalar solver would use for this bandwidth
        level = np.array([grid_size(x, self.M) for x in u])
        n_freq = np.minimum(level + 1, (_SPECTRUM_CUT / u).astype(np.int64) + 1)
        # |r| is evaluated on its own grid, a power of two: r is band-limited,
        # so any grid of at least n_freq points represents it, and the
        # trapezoid needs a few points per sigma.
        want = np.maximum(np.ceil(_EVAL_STEPS_PER_SIGMA / u), n_freq)
        m_eval = 2 ** np.ceil(np.log2(np.minimum(want, 2 * FINE_M))).astype(np.int64)
        out = np.empty(columns.shape[0])
        for lev, m in set(zip(level.tolist(), m_eval.tolist(), strict=True)):
            group = np.flatnonzero((level == lev) & (m_eval == m))
            step = max(1, _BLOCK_ENTRIES // (m + 1))
            for start in range(0, group.shape[0], step):
                sel = group[start : start + step]
                out[sel] = self._evaluate(columns[sel], u[sel], n_freq[sel], lev, m)
        return out

    def _evaluate(self, columns, u, n_freq, level, m_eval):
        top = int(n_freq.max())
        freq = np.arange(top, dtype=np.float64)[:, None]
        gauss = np.exp(-0.5 * (np.pi * u * freq) ** 2)
        gauss[freq >= n_freq] = 0.0  # each column keeps its own frequencies
        prod = np.zeros((m_eval + 1, columns.shape[0]), dtype=np.complex128)
        prod[:top] = self._spectrum(level)[:top, columns] * (m_eval * gauss)
        r = np.abs(_fft.irfft(prod, n=2 * m_eval, axis=0)[: m_eval + 1])
        return (r.sum(axis=0) - 0.5 * (r[0] + r[-1])) / m_eval

    def solve_sigma(self, guess, *, tol=_SIGMA_TOL, lower=None, spread=2.0):
        """The fixed point ``sigma*`` (``smECE_sigma* = sigma*``) of each column.

        ``guess`` (a scalar or one value per column) starts the bracket
        ``[guess / spread, guess * spread]``, widened until it holds the
        root; a column
        whose excess is still positive at 1 gets 1 (the scalar solver's
        range), one that is not positive at ``lower`` gets ``lower``.
        """
        n = self.n_columns
        if lower is None:
            lower = self.length / FINE_M
        guess = np.broadcast_to(np.asarray(guess, dtype=np.float64), (n,))
        a = np.clip(guess / spread, lower, 1.0)
        b = np.clip(guess * spread, lower, 1.0)
        fa = self._excess(a)
        fb = self._excess(b)
        # widen the bracket: the excess decreases
        for _ in range(_MAX_STEPS):
            low = (fa <= 0) & (a > lower)
            if not low.any():
                break
            b[low], fb[low] = a[low], fa[low]
            a[low] = np.maximum(0.25 * a[low], lower)
            fa[low] = self._excess(a[low], low)
        for _ in range(_MAX_STEPS):
            high = (fb > 0) & (b < 1.0)
            if not high.any():
                break
            a[high], fa[high] = b[high], fb[high]
            b[high] = np.minimum(2.0 * b[high], 1.0)
            fb[high] = self._excess(b[high], high)
        x = np.where(fa <= 0, a, np.where(fb > 0, b, 0.5 * (a + b)))
        active = (fa > 0) & (fb <= 0) & (b - a > tol)
        kept = np.zeros(n, dtype=np.int8)  # side kept last: +1 a, -1 b
        for step in range(_MAX_STEPS):
            idx = np.flatnonzero(active)
            if idx.size == 0:
                break
            xa, xb, ya, yb = a[idx], b[idx], fa[idx], fb[idx]
            xn = (xa * yb - xb * ya) / (yb - ya)
            # bisect when the secant leaves the bracket, and every fifth step
            # (a kink from a change of grid can stall regula falsi)
            bisect = ~((xn > xa) & (xn < xb)) | (step % 5 == 4)
            xn = np.where(bisect, 0.5 * (xa + xb), xn)
            fn = self._excess(xn, idx)
            x[idx] = xn
            up = fn > 0
            ia, ib = idx[up], idx[~up]
            # Illinois: halve the stale end's value when a side is kept twice
            fb[ia] = np.where(kept[ia] == 1, 0.5 * fb[ia], fb[ia])
            a[ia], fa[ia], kept[ia] = xn[up], fn[up], 1
            fa[ib] = np.where(kept[ib] == -1, 0.5 * fa[ib], fa[ib])
            b[ib], fb[ib], kept[ib] = xn[~up], fn[~up], -1
            done = (np.abs(fn) <= tol) | (b[idx] - a[idx] <= tol)
            active[idx[done]] = False
        return x

    def _excess(self, sigma, columns=None):
        if columns is not None and columns.dtype == bool:
            columns = np.flatnonzero(columns)
        return self.smece_at(sigma, columns) - sigma
