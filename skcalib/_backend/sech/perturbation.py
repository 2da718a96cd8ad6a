"""Sech-kernel perturbation of probabilities (Ciosek et al. 2025), on the grid.

Every score a certified bound reads — the positive-class probability of a
binary problem, the top-label confidence of a multiclass one — is returned
exactly on the grid ``G = {k / 2**24}`` of
:mod:`skcalib._backend.score_grid`.
"""

from __future__ import annotations

import numpy as np

from ..score_grid import GRID_BITS, GRID_STEP, round_to_grid
from .sampler import RowSumError, sech_noise_async, sech_sample

__all__ = ["RowSumError", "perturb_proba", "perturbation_noise_async"]

# Relative gap kept between the perturbed top-label confidence and the runner-up.
_TIE_MARGIN = 1e-12
# Proposals computed ahead for the redraw of rejected rows, as a fraction
# 1 / _RESERVE_FRACTION of the rows: a confident model (logits ~ 3 N(0, 1))
# has ~8 % of its rows rejected at the default scale, and ~12 % proposals to
# redraw them.
_RESERVE_FRACTION = 8
# Up to this many classes, row maxima are taken column by column.
_FEW_COLUMNS = 8


def _kernel_scale(scale, n_classes):
    # An affine map of [1/K, 1] onto [0, 1] carries the sech kernel of scale h
    # to the sech kernel of scale h / (1 - 1/K): the smoothness lemma, which only
    # involves the kernel shape, holds on the shorter interval with scale h.
    return scale if n_classes <= 2 else scale / (1.0 - 1.0 / n_classes)


def _lowest_confidence(n_classes):
    # The smallest grid point above 1/K. A confidence of exactly 1/K (a grid
    # point when K is a power of two) would tie with the even split of the
    # rest, so it is not allowed either; the point is within one grid step of
    # 1/K, as the discretisation term of the bounds assumes.
    return (2**GRID_BITS // n_classes + 1) * GRID_STEP


def perturbation_noise_async(n_samples, n_classes, scale, rng, n_jobs=None):
    """Start drawing the noise of :func:`perturb_proba` in the background.

    The noise does not depend on the probabilities: drawing it while a model
    computes them hides most of its cost. Returns a future whose result is the
    ``noise`` argument of :func:`perturb_proba` (same draws as without it);
    ``rng`` is advanced at once (see
    :func:`~skcalib._backend.sech.sampler.sech_noise_async`). In the binary
    case the result also holds the buffer the perturbed probabilities are
    written into, allocated in the background thread. The proposals of the
    rows redrawn after a rejection (those of the words that follow) are
    computed there too, for up to ``n_samples / 8`` of them. ``n_jobs`` is
    that of :func:`~skcalib._backend.sech.sampler.sech_noise`.
    """
    if n_classes < 2:
        return sech_noise_async(0, scale, rng)
    h = _kernel_scale(scale, n_classes)
    return sech_noise_async(
        n_samples,
        h,
        rng,
        with_complement=n_classes == 2,
        reserve=n_samples // _RESERVE_FRACTION,
        n_jobs=n_jobs,
    )


def perturb_proba(proba, scale, rng, *, noise=None, row_sum_tol=None, n_jobs=None):
    """Perturb probabilities with the truncated sech kernel, onto the grid.

    1-D ``proba`` (the positive-class probability ``p``) or two columns:
    ``p`` is replaced by a draw from the sech kernel of scale ``scale``
    around ``p`` on [0, 1], rounded to the grid ``G``; the other column is
    ``1 - p``, exact on ``G`` too. ``K >= 3`` columns: the top-label
    confidence ``c`` is replaced by a draw from the sech kernel of scale
    ``scale`` around ``c`` truncated to ``[1/K, 1]`` (the range a top-label
    confidence can take), rounded to ``G`` (to the smallest grid point above
    ``1/K`` if it would fall on or below ``1/K``); the other classes share
    the remaining mass in proportion to their base probabilities, shrunk
    towards an even split only as far as needed to keep the top class on top.

    Parameters
    ----------
    proba : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Base probabilities (rows sum to one). Never modified.
    scale : float
        Kernel scale ``h`` in (0, 1].
    rng : numpy.random.Generator
    noise : tuple, default=None
        From :func:`perturbation_noise_async` with the same ``rng`` and
        ``n_classes`` (2 for a 1-D ``proba``). In the binary case its buffer
        becomes the output; it must not be used again.
    row_sum_tol : float, default=None
        If given (2-D ``proba``), :class:`RowSumError` is raised unless every
        row sums to one within it (NaN fails), checked in the pass that
        perturbs the probabilities rather than in one of its own.
    n_jobs : int, default=None
        Threads of the sampler (see
        :func:`~skcalib._backend.sech.sampler.sech_noise`); the draws do not
        depend on it.

    Returns
    -------
    ndarray of the shape of ``proba``
        A new array (column-major in the binary case).
    """
    proba = np.asarray(proba, dtype=np.float64)
    noise, reserve = (None, None) if noise is None else noise
    if proba.ndim == 1:
        if not _is_buffer(noise, proba.shape[0]):
            return sech_sample(proba, scale, rng, n_jobs=n_jobs)
        return sech_sample(
            proba,
            scale,
            rng,
            out=noise[1],
            noise=noise[1],
            reserve=reserve,
            n_jobs=n_jobs,
        )
    n, n_classes = proba.shape
    if n_classes == 1 or n == 0:
        return proba.copy()
    if n_classes == 2:
        # Each column stored contiguously (returned as the transpose of a
        # (2, n) array): the sampler writes both columns block by block while
        # they are in cache (interleaved columns would cost strided passes),
        # and clips the centres to [0, 1] on the way.
        out = noise if _is_buffer(noise, n) else np.empty((2, n))
        check = None
        if row_sum_tol is not None:
            check = (proba[:, 0], 1.0 - row_sum_tol, 1.0 + row_sum_tol)
        sech_sample(
            proba[:, 1],
            scale,
            rng,
            out=out[1],
            complement=out[0],
            noise=_noise_row(noise, out),
            reserve=reserve if out is noise else None,
            check_sum=check,
            n_jobs=n_jobs,
        )
        return out.T

    top = np.argmax(proba, axis=1)
    # The top class of each row as an index into the C-ordered copies below:
    # a flat index is several times faster than a (row, column) pair.
    rest = proba.copy(order="C")
    flat_top = np.arange(0, n * n_classes, n_classes) + top
    rest = rest.reshape(-1)
    conf = rest[flat_top]
    low = 1.0 / n_classes
    t0 = np.clip((conf - low) / (1.0 - low), 0.0, 1.0)
    h = _kernel_scale(scale, n_classes)
    t = sech_sample(t0, h, rng, noise=noise, reserve=reserve, grid=False, n_jobs=n_jobs)
    # The confidence itself is rounded (rounding t would put c off the grid).
    new_conf = low + (1.0 - low) * t
    round_to_grid(new_conf, out=new_conf)
    np.maximum(new_conf, _lowest_confidence(n_classes), out=new_conf)

    rest[flat_top] = 0.0
    rest = rest.reshape(n, n_classes)
    rest_mass = rest.sum(axis=1)
    if row_sum_tol is not None:
        total = rest_mass + conf
        if not (total.min() >= 1.0 - row_sum_tol and total.max() <= 1.0 + row_sum_tol):
            raise RowSumError("rows of the probabilities must sum to 1.")
    left = 1.0 - new_conf
    even = left / (n_classes - 1)
    # A one-hot base row has no proportions to keep: split the mass evenly.
    # So does a row whose other classes hold a subnormal total, whose
    # proportions are lost to rounding (and whose ratio left / rest_mass
    # would overflow).
    empty = rest_mass < np.finfo(np.float64).tiny
    # The shares, then the output, in place of ``rest``.
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.divide(rest, np.where(empty, 1.0, rest_mass)[:, None], out=rest)
    out *= left[:, None]
    out[empty] = even[empty, None]
    out[empty, top[empty]] = 0.0
    # If a runner-up would reach the new confidence, mix towards the even split
    # (whose share is < the confidence since it is > 1/K) until it is just
    # below: a tie would let argmax pick another class than the perturbed one.
    runner_up = _row_max(out)
    cap = new_conf * (1.0 - _TIE_MARGIN)
    over = runner_up > cap
    if np.any(over):
        with np.errstate(divide="ignore"):
            # All others equal to the even share: the gap is 0, lam -> 1.
            lam = (runner_up[over] - cap[over]) / (runner_up[over] - even[over])
        lam = np.minimum(lam, 1.0)
        out[over] = (1.0 - lam[:, None]) * out[over] + lam[:, None] * even[over, None]
        out[over, top[over]] = 0.0
    out.reshape(-1)[flat_top] = new_conf
    return out


def _row_max(a):
    # max is exact, so any order gives the same values (NaN included); over a
    # few columns, column by column beats numpy's reduction along short rows.
    if a.shape[1] > _FEW_COLUMNS:
        return a.max(axis=1)
    m = a[:, 0].copy()
    for j in range(1, a.shape[1]):
        np.maximum(m, a[:, j], out=m)
    return m


def _is_buffer(noise, n):
    return noise is not None and noise.shape == (2, n)


def _noise_row(noise, buf):
    # The noise sits in row 1 of the buffer it came in.
    return buf[1] if noise is buf else None
