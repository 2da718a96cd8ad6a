"""Bootstrap of grid-based estimates, parallel through joblib."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs

from . import smece as _sm
from .binning import positive_weight_rows
from .grid import (
    FINE_M,
    add_cell_moments,
    cell_keys,
    moment_columns,
    statistics_from_cells,
)


@dataclass
class BootstrapCurves:
    curves: (
        np.ndarray
    )  # (n_bootstrap, n_points) resampled y_smooth at the curve's sigma
    smece: np.ndarray  # (n_bootstrap,) resampled smECE


def bootstrap_smooth_curves(
    y, s, w, geometry, *, sigma_curve, fixed_sigma, n_bootstrap, seed, n_jobs=None
):
    """Percentile-bootstrap ingredients for the smooth reliability curve.

    Each resample draws ``n`` rows with replacement from the ``n`` rows of
    positive weight (weights travel with their rows) from its own child of
    ``seed`` (a ``numpy.random.SeedSequence``), so the output is identical
    for every ``n_jobs`` and joblib backend.

    Resamples are binned on a grid twice as fine as the one the curve needs
    (exact coarsening then gives the curve grid), which is also fine enough for
    each resample's own ``sigma*`` unless it is less than half the original.
    """
    if w is not None:
        # A resample of zero-weight rows alone would have no estimate at all.
        w, y, s = positive_weight_rows(w, y, s)
    m_curve = geometry.grid_size(0.8 * sigma_curve, FINE_M)
    m_boot = min(FINE_M, 2 * m_curve)
    key, theta = cell_keys(y, geometry.to_unit(s), m_boot)
    moments = moment_columns(w, theta, None if geometry.metric == "l1" else s)
    children = seed.spawn(n_bootstrap)
    n_batches = max(1, min(n_bootstrap, effective_n_jobs(n_jobs)))
    batches = [b for b in np.array_split(np.arange(n_bootstrap), n_batches) if b.size]
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_bootstrap_batch)(
            key,
            moments,
            m_boot,
            [children[i] for i in batch],
            geometry,
            sigma_curve,
            fixed_sigma,
        )
        for batch in batches
    )
    curves = np.concatenate([p[0] for p in parts], axis=0)
    values = np.concatenate([p[1] for p in parts])
    return BootstrapCurves(curves, values)


def _bootstrap_batch(key, moments, M, seeds, geometry, sigma_curve, fixed_sigma):
    n = key.shape[0]
    curves, values = [], []
    for seq in seeds:
        rng = np.random.default_rng(seq)
        counts = np.bincount(rng.integers(0, n, size=n), minlength=n).astype(np.float64)
        cells = add_cell_moments(np.zeros((2 * M, len(moments))), key, moments, counts)
        stats = _sm.pyramid(statistics_from_cells(cells, M))
        if fixed_sigma is None:
            values.append(_sm.solve_sigma(stats, geometry))
        else:
            values.append(_sm.smece_at(stats, fixed_sigma, geometry))
        curves.append(_sm.smooth_curve(stats, sigma_curve, geometry)[1])
    return np.asarray(curves), np.asarray(values)
