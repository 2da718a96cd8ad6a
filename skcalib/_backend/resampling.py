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
    y,
    s,
    w,
    geometry,
    *,
    sigma_curve,
    fixed_sigma,
    n_bootstrap,
    seed,
    n_jobs=None,
    progress=None,
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
    if progress is not None and progress.enabled:
        # Smaller batches, so that progress can be reported between them;
        # each resample keeps its own seed, so the result is the same.
        n_batches = min(n_bootstrap, 20 * n_batches)
    batches = [b for b in np.array_split(np.arange(n_bootstrap), n_batches) if b.size]
    parts = Parallel(n_jobs=n_jobs, return_as="generator")(
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
    if progress is not None:
        parts = progress.track(parts, steps=[b.size for b in batches])
    parts = list(parts)
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


#: Bootstrap confidence intervals offered by the smooth reliability curve.
CI_METHODS = ("basic", "percentile")


def bootstrap_interval(estimate, replicates, confidence_level, method, *, clip=(0, 1)):
    """Two-sided bootstrap interval of ``estimate`` from its ``replicates``.

    ``replicates`` has one row per resample (NaN entries are ignored, so
    columns of a curve with no data in some resamples still get an interval;
    all-NaN columns give NaN). With ``q_lo, q_hi`` the ``(1 - level) / 2`` and
    ``(1 + level) / 2`` quantiles of the replicates:

    * ``"percentile"``: ``[q_lo, q_hi]``;
    * ``"basic"`` (reverse percentile): ``[2 est - q_hi, 2 est - q_lo]``. It
      assumes that ``est - theta`` is distributed like ``est* - est``, so an
      upward bias of the resamples relative to the estimate (which mirrors
      the bias of the estimate relative to the population value) moves the
      interval *down*, where the percentile interval moves it up.

    Both ends are then clipped to ``clip``.
    """
    est = np.asarray(estimate, dtype=np.float64)
    alpha = (1 - confidence_level) / 2
    q = column_quantiles(replicates, [alpha, 1 - alpha])
    if method == "percentile":
        lo, hi = q[0], q[1]
    elif method == "basic":
        lo, hi = 2 * est - q[1], 2 * est - q[0]
    else:  # pragma: no cover - validated by the callers
        raise ValueError(f"unknown bootstrap interval {method!r}")
    lo, hi = np.clip(lo, *clip), np.clip(hi, *clip)
    return lo, hi


def column_quantiles(values, q):
    """``numpy.nanquantile(values, q, axis=0)`` (linear interpolation), NaN for
    all-NaN columns and without a warning for them.

    ``nanquantile`` sorts column by column in Python once any NaN is present;
    the columns without NaN (nearly all of a bootstrapped curve's) go through
    the vectorised ``numpy.quantile`` instead, which gives the same numbers.
    """
    values = np.asarray(values, dtype=np.float64)
    out = np.full((len(q),) + values.shape[1:], np.nan)
    nan = np.isnan(values)
    full = ~np.any(nan, axis=0)
    if np.any(full):
        out[:, full] = np.quantile(values[:, full], q, axis=0)
    partial = ~full & ~np.all(nan, axis=0)
    if np.any(partial):
        out[:, partial] = np.nanquantile(values[:, partial], q, axis=0)
    return out
