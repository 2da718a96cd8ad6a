"""Bootstrap of grid-based estimates, parallel through joblib."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from . import smece as _sm
from .grid import FINE_M, accumulate, bin_positions


@dataclass
class BootstrapCurves:
    curves: np.ndarray  # (n_bootstrap, n_points) resampled y_smooth at the curve's sigma
    smece: np.ndarray  # (n_bootstrap,) resampled smECE


def bootstrap_smooth_curves(
    y, s, w, geometry, *, sigma_curve, fixed_sigma, n_bootstrap, seed, n_jobs=None
):
    """Percentile-bootstrap ingredients for the smooth reliability curve.

    Each resample draws ``n`` rows with replacement (weights travel with their
    rows) from its own child of ``seed`` (a ``numpy.random.SeedSequence``), so
    the output is identical for every ``n_jobs`` and joblib backend.

    Resamples are binned on a grid twice as fine as the one the curve needs
    (exact coarsening then gives the curve grid), which is also fine enough for
    each resample's own ``sigma*`` unless it is less than half the original.
    """
    m_curve = geometry.grid_size(sigma_curve, FINE_M)
    m_boot = min(FINE_M, 2 * m_curve)
    idx, theta = bin_positions(geometry.to_unit(s), m_boot)
    columns = (w, w * y, w * s)
    children = seed.spawn(n_bootstrap)
    n_batches = max(1, min(n_bootstrap, effective_n_jobs(n_jobs)))
    batches = [b for b in np.array_split(np.arange(n_bootstrap), n_batches) if b.size]
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_bootstrap_batch)(
            idx, theta, columns, m_boot, [children[i] for i in batch], geometry,
            sigma_curve, fixed_sigma,
        )
        for batch in batches
    )
    curves = np.concatenate([p[0] for p in parts], axis=0)
    values = np.concatenate([p[1] for p in parts])
    return BootstrapCurves(curves, values)


def _bootstrap_batch(idx, theta, columns, M, seeds, geometry, sigma_curve, fixed_sigma):
    n = idx.shape[0]
    curves, values = [], []
    for seq in seeds:
        rng = np.random.default_rng(seq)
        counts = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(np.float64)
        hist = np.zeros((M + 1, 3))
        accumulate(hist, idx, theta, [counts * c for c in columns])
        if fixed_sigma is None:
            values.append(_sm.solve_sigma(hist, geometry))
        else:
            values.append(_sm.smece_at(hist, fixed_sigma, geometry))
        curves.append(_sm.smooth_curve(hist, sigma_curve, geometry)[1])
    return np.asarray(curves), np.asarray(values)
