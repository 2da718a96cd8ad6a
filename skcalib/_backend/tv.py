"""Exact one-dimensional total-variation denoising.

Solves ``min_v (1/2) ||y - v||² + lam * sum_i |v[i+1] - v[i]|`` exactly with
Condat's direct algorithm (IEEE Signal Processing Letters, 2013): a single
left-to-right sweep that keeps the range of admissible values of the current
segment and emits a segment as soon as the taut string must bend. It is
sequential, so it is compiled with numba when numba is importable (the ``fast``
extra); the pure-Python version gives the same result, only slower.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np

__all__ = ["tv_denoise", "total_variation", "HAVE_NUMBA"]


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


# numba is optional (the ``fast`` extra) and costs ~70 MB and a second to
# import, so it is only looked for, not imported, until the solver first runs.
HAVE_NUMBA = importlib.util.find_spec("numba") is not None


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
        ``None`` uses the compiled solver when numba is available.

    Returns
    -------
    v : ndarray of shape (n,)
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    x = np.empty_like(y)
    if y.shape[0] == 0:
        return x
    if lam <= 0.0:
        x[:] = y
        return x
    if use_numba and not HAVE_NUMBA:
        raise ImportError("use_numba=True needs numba (pip install skcalib[fast]).")
    solver = _compiled_solver() if (use_numba is None or use_numba) else _condat
    if solver is _condat:
        # Python floats are much faster than numpy scalars in the sweep.
        xs = [0.0] * y.shape[0]
        _condat(y.tolist(), float(lam), xs)
        x[:] = xs
    else:
        solver(y, float(lam), x)
    return x


def total_variation(v):
    """``sum_i |v[i+1] - v[i]|``."""
    v = np.asarray(v, dtype=np.float64)
    return float(np.abs(np.diff(v)).sum()) if v.shape[0] > 1 else 0.0
