"""The Dirichlet map's bandwidth and prior (``method="canonical"``).

The map itself is the Dirichlet-kernel Nadaraya-Watson ratio of
:func:`~skcalib._backend.smoothing.dirichlet_nw` (the ECE-KDE's smoother)
evaluated at new points; here its bandwidth is chosen by leave-one-out log-loss, and a
pseudo-observation with the uniform label distribution is mixed into it.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..kernels import clip_simplex, dirichlet_log_normalizer
from .grid_map import smoothest_best
from .scores import finalize_proba

__all__ = ["dirichlet_prior_mix", "select_dirichlet_loo"]


def dirichlet_prior_mix(R, log_mass, X, bandwidth, prior):
    """Mix a pseudo-observation with uniform label distribution into ``R``.

    ``R = sum_i w_i k(x; f_i) e_i / sum_i w_i k(x; f_i)`` becomes
    ``(m R + c u) / (m + c)`` with ``m = exp(log_mass)`` the kernel mass as a
    share of the total weight, ``u = 1 / K`` and ``c = prior * k(x; x)`` the
    mass of a pseudo-observation of weight ``prior`` (a share of the total
    weight) at ``x`` itself.
    """
    if prior <= 0:
        return R
    X = clip_simplex(X)
    log_self = np.einsum("ij,ij->i", np.log(X), X) / bandwidth
    log_self -= dirichlet_log_normalizer(X, bandwidth)
    # lam = c / (m + c), formed from log(m) - log(c) without overflow
    lam = expit(np.log(prior) + log_self - log_mass)
    return (1.0 - lam)[:, None] * R + (lam / R.shape[1])[:, None]


def select_dirichlet_loo(F, y, w, eps, *, grid, max_samples, random_state=0, prior=0.0):
    """Dirichlet bandwidth minimising the leave-one-out log-loss of the smoother.

    The loss of sample ``j`` is ``-log R_{-j}[y_j]`` with ``R_{-j}`` the
    leave-one-out Nadaraya-Watson ratio (clipped and renormalised as at
    transform time). As for the ``"mle"`` and ``"risk"`` selectors, a random
    subsample of ``max_samples`` points (fixed seed) is used when ``n`` is
    larger: its neighbours are the subsample, so the bandwidth suits a sample
    of that size (a little larger than the best one for all ``n`` points).

    Returns
    -------
    bandwidth : float
    info : dict
        ``grid``, ``scores`` (leave-one-out log-loss per value), ``n_used``.
    """
    from ..smoothing import DirichletCentres, loo_grid_statistics

    n = F.shape[0]
    if n > max_samples:
        rng = np.random.default_rng(random_state)
        keep = np.sort(rng.choice(n, size=max_samples, replace=False))
        F, y, w = F[keep], y[keep], w[keep]
    centres = DirichletCentres(F, y, w)
    Fs, ys, ws = centres.F, centres.y, centres.w
    grid = np.asarray(grid, dtype=np.float64)
    if centres.n >= 2:
        stats = loo_grid_statistics(centres, grid, ratio=True, whole_weight=True)
        rows = np.arange(centres.n)
        log_total = np.log(centres.total_w)
        loss = np.empty(len(grid))
        for g, (b, st) in enumerate(zip(grid, stats, strict=True)):
            R = dirichlet_prior_mix(
                st["ratio"], st["log_mass"] - log_total, Fs, b, prior
            )
            R = finalize_proba(R, eps)
            loss[g] = -np.dot(ws, np.log(R[rows, ys])) / ws.sum()
    else:
        # No neighbour to leave in: every bandwidth predicts the prior alone.
        loss = np.full(len(grid), np.log(centres.K))
    best = smoothest_best(loss, grid)
    info = {"grid": grid, "scores": loss, "n_used": centres.n}
    return float(grid[best]), info
