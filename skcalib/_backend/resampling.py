"""Bootstrap of grid-based estimates, parallel through joblib."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from . import smece as _sm
from .binning import positive_weight_rows
from .grid import (
    FINE_M,
    cell_keys,
    moment_columns,
    statistics_from_cells,
)
from .smece_batch import ResidualColumns

# Grid entries (cells times resamples) of one batch of the ordinary bootstrap,
# and its number of resamples (enough to vectorise, few enough to report
# progress and share the work between jobs).
_BATCH_ENTRIES = 1 << 22
_BATCH_RESAMPLES = 25


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
    # Batches of resamples handled together, fixed by the sample alone (never
    # by n_jobs or progress reporting: a batch's transforms round the same
    # way only when it holds the same resamples), and capped at ~32 MB of
    # grid statistics.
    per_batch = max(1, min(_BATCH_RESAMPLES, _BATCH_ENTRIES // (4 * (m_boot + 1))))
    batches = [
        np.arange(i, min(i + per_batch, n_bootstrap))
        for i in range(0, n_bootstrap, per_batch)
    ]
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
    """Curves and smECE of the resamples drawn from ``seeds``, all at once:
    the per-cell sums of every resample by one ``bincount``, their smECE by
    the batched solver, their curves by one smoothing of all columns."""
    n = key.shape[0]
    n_rep = len(seeds)
    counts = np.empty((n_rep, n))
    for k, seq in enumerate(seeds):
        rng = np.random.default_rng(seq)
        counts[k] = np.bincount(rng.integers(0, n, size=n), minlength=n)
    size = 2 * M
    keys = (key[None, :] + size * np.arange(n_rep)[:, None]).ravel()
    cells = np.stack(
        [
            np.bincount(keys, weights=(counts * col).ravel(), minlength=n_rep * size)
            for col in moments
        ],
        axis=-1,
    ).reshape(n_rep, size, len(moments))
    stats = [_sm.pyramid(statistics_from_cells(c, M)) for c in cells]
    fine = np.stack([st.at(M) for st in stats], axis=-1)  # (M + 1, 3, n_rep)
    total = fine[:, 0].sum(axis=0)
    columns = ResidualColumns(fine[:, 1] - fine[:, 2], total, geometry.length)
    if fixed_sigma is None:
        values = columns.solve_sigma(sigma_curve)
    else:
        values = columns.smece_at(np.full(n_rep, fixed_sigma))
    m_curve = geometry.grid_size(sigma_curve, M)
    h = np.stack([st.at(m_curve) for st in stats], axis=-1) / total
    sm = geometry.smooth(h.reshape(m_curve + 1, -1), sigma_curve)
    sm = sm.reshape(h.shape)
    dens, num = sm[:, 0], sm[:, 1]
    curves = np.full((m_curve + 1, n_rep), np.nan)
    ok = dens > 1e-10 * dens.max(axis=0)
    curves[ok] = np.clip(num[ok] / dens[ok], 0.0, 1.0)
    return curves.T, values


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
