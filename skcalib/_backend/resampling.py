"""Bootstrap of grid-based estimates, parallel through joblib.

Two resampling schemes for SmoothECE:

* the ordinary (nonparametric) bootstrap, rows drawn with replacement, for
  the pointwise band of the curve and the basic / percentile intervals;
* the inversion interval (:func:`inversion_interval`), which tests a
  one-parameter family of populations whose smECE is known and keeps those
  the observed smECE does not reject.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from . import smece as _sm
from .binning import positive_weight_rows
from .grid import (
    FINE_M,
    bin_positions,
    cell_keys,
    grid_points,
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


#: Confidence intervals of smECE offered by the smooth reliability curve.
CI_METHODS = ("inversion", "basic", "percentile")

#: Lowest and highest coverage of the population smECE measured for each
#: interval at each level (``benchmarks/bench_intervals.py``: six problems,
#: ``n`` = 500, 1000, 3000, 50-100 seeds each, 200 resamples).
MEASURED_COVERAGE = {
    0.95: {
        "inversion": (0.82, 0.99),
        "basic": (0.00, 0.93),
        "percentile": (0.00, 0.96),
    },
}


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
    elif method in ("basic", "inversion"):  # the band of "inversion" is basic
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


# Largest scale of the residual direction tried by the inversion (the
# populations' calibration functions are clipped to [0, 1] long before).
_MAX_LAMBDA = 2.0**12
# Draws (rows times resamples) held at once, in blocks of resamples; when all
# of them fit, their uniforms are kept for every population (4 bytes each).
_DRAW_ENTRIES = 1 << 22


@dataclass
class InversionInterval:
    """Result of :func:`inversion_interval`.

    ``low`` and ``high`` are the smECE of the populations at the ends;
    ``lambdas``, ``thetas`` and ``quantiles`` (the ``(1 -/+ level) / 2``
    quantiles of the simulated estimates) describe every population tried.
    """

    low: float
    high: float
    lambdas: np.ndarray
    thetas: np.ndarray
    quantiles: np.ndarray


class _Populations:
    """Populations ``eta_lambda(s) = clip(s + lambda d(s), 0, 1)`` on the
    sample's scores, with ``d`` the residual of the smooth curve, and the
    estimates of samples drawn from them (new labels, same scores)."""

    def __init__(self, y, s, w, geometry, curve, M, fixed_sigma, seed, n_resamples):
        self.s, self.w = s, w
        self.geometry = geometry
        self.fixed_sigma = fixed_sigma
        pos = np.array(geometry.to_unit(s), dtype=np.float64)
        grid = grid_points(curve.shape[0] - 1)
        known = np.isfinite(curve)
        self.d = np.interp(pos, grid[known], curve[known]) - s
        self.M = M
        cell, theta = bin_positions(np.clip(pos, 0.0, 1.0), M)
        # rows sorted by cell: each cell's sums are one segment (reduceat)
        self.order = np.argsort(cell, kind="stable")
        cell = cell[self.order]
        self.cells, self.starts = np.unique(cell, return_index=True)
        theta = theta[self.order]
        w_sorted = np.ones_like(theta) if w is None else w[self.order]
        self.left = w_sorted * (1.0 - theta)
        self.right = w_sorted * theta
        self.total = float(s.shape[0]) if w is None else float(w.sum())
        # the scores' share of every residual, the same for every sample
        self.score_part = self._bin(s[self.order][None])[:, 0]
        n = s.shape[0]
        seeds = seed.spawn(n_resamples)
        # blocks of resamples bounded by their draws and their grid columns
        step = max(1, min(_DRAW_ENTRIES // max(n, 1), _BATCH_ENTRIES // (4 * (M + 1))))
        self.blocks = [seeds[i : i + step] for i in range(0, n_resamples, step)]
        # the uniforms of every block are kept when they are few
        self._uniforms = None
        if n * n_resamples <= _DRAW_ENTRIES:
            self._uniforms = [self._draw(block) for block in self.blocks]
        self.guess = None

    def _bin(self, values):
        """Linear binning of ``values`` (rows in cell order, one row of
        ``values`` per sample) onto the grid: ``(M + 1, n_samples)``."""
        out = np.zeros((self.M + 1, values.shape[0]))
        out[self.cells] = np.add.reduceat(values * self.left, self.starts, axis=1).T
        out[self.cells + 1] += np.add.reduceat(
            values * self.right, self.starts, axis=1
        ).T
        return out

    def eta(self, lam):
        return np.clip(self.s + lam * self.d, 0.0, 1.0)

    def _value(self, columns, guess, spread=2.0):
        if self.fixed_sigma is not None:
            return columns.smece_at(np.full(columns.n_columns, self.fixed_sigma))
        return columns.solve_sigma(guess, spread=spread)

    def population_smece(self, lam):
        """smECE of the population ``lam`` itself (no labels drawn): every row
        carries its expected residual ``eta_lambda(s) - s``."""
        resid = self._bin(self.eta(lam)[self.order][None])[:, 0] - self.score_part
        cols = ResidualColumns(
            resid[:, None], np.array([self.total]), self.geometry.length
        )
        return float(self._value(cols, self.guess)[0])

    def estimates(self, lam, guess, spread, n_jobs=None):
        """smECE of ``n_resamples`` samples of the population ``lam``: the
        sample's scores with labels ``y ~ Bernoulli(eta_lambda(s))``. The
        same uniforms serve every ``lam`` (common random numbers). ``guess``
        (one value per sample) starts each bandwidth search."""
        starts = np.cumsum([0] + [len(b) for b in self.blocks])
        parts = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(self._block)(lam, k, guess[starts[k] : starts[k + 1]], spread)
            for k in range(len(self.blocks))
        )
        return np.concatenate(parts)

    def _draw(self, seeds):
        """Uniforms of the samples of ``seeds``, rows in cell order."""
        n = self.s.shape[0]
        # single precision: a label is drawn by comparing with a probability,
        # for which 24 bits are plenty, at half the cost of the draws
        u = np.empty((len(seeds), n), dtype=np.float32)
        for k, seq in enumerate(seeds):
            np.random.default_rng(seq).random(n, dtype=np.float32, out=u[k])
        return u

    def _block(self, lam, k, guess, spread):
        u = self._draw(self.blocks[k]) if self._uniforms is None else self._uniforms[k]
        # booleans: the binning's products with the weights make them floats
        labels = u < self.eta(lam)[self.order].astype(np.float32)
        resid = self._bin(labels) - self.score_part[:, None]
        total = np.full(labels.shape[0], self.total)
        columns = ResidualColumns(resid, total, self.geometry.length)
        return self._value(columns, guess, spread)


def inversion_interval(
    y,
    s,
    w,
    geometry,
    *,
    estimate,
    sigma_curve,
    curve,
    fixed_sigma,
    confidence_level,
    n_resamples,
    seed,
    n_jobs=None,
):
    """Confidence interval of the population smECE by test inversion.

    The populations ``P_lambda`` keep the sample's scores and have the
    calibration function
    ``eta_lambda(s) = clip(s + lambda d(s), 0, 1)``, where ``d = curve - s``
    is the residual of the sample's smooth reliability curve: ``lambda = 0``
    is perfectly calibrated, ``lambda = 1`` reproduces the fitted curve.
    The smECE ``theta(lambda)`` of ``P_lambda`` is computed without sampling
    (every row carries its expected residual) and grows with ``lambda``.
    ``n_resamples`` samples are drawn from ``P_lambda`` (new labels
    ``y ~ Bernoulli(eta_lambda(s))`` for the same scores, from the same
    uniforms for every ``lambda``) and their smECE computed (the
    estimates' own ``sigma*``, or ``fixed_sigma``). A population is kept
    when the observed ``estimate`` lies between the ``(1 -/+ level) / 2``
    quantiles of its simulated estimates; ``lambda = 0`` (``theta = 0``, a
    boundary value) is kept whenever the estimate is below the upper one.
    The interval is ``[theta(lambda_lo), theta(lambda_hi)]`` for the
    smallest and largest kept ``lambda``, located by regula falsi on the
    quantiles to 2 % of ``estimate``.

    The scores are kept rather than resampled: the estimate's spread comes
    from the labels (drawing the scores too changed the quantiles by less
    than their Monte-Carlo error in the benchmark problems), and each
    population then costs ``O(n)`` per sample without gathers.

    The bias of smECE is part of each population's simulated law, so the
    interval accounts for it at every ``theta``, also at ``theta = 0``, where
    no interval built from ordinary resamples can cover. Its coverage still
    depends on how well the fitted shape ``d`` stands for the true one
    (benchmarks/bench_intervals.py).
    """
    y = np.asarray(y, dtype=np.float64)
    if w is not None:
        w, y, s = positive_weight_rows(w, y, s)
    M = min(FINE_M, 2 * geometry.grid_size(0.8 * sigma_curve, FINE_M))
    pop = _Populations(y, s, w, geometry, curve, M, fixed_sigma, seed, n_resamples)
    pop.guess = max(estimate, geometry.finest_sigma)
    alpha = (1.0 - confidence_level) / 2.0
    tried = {}
    last = {"values": np.full(n_resamples, pop.guess), "spread": 2.0}

    def quantiles(lam):
        if lam not in tried:
            # each sample's estimate at the previous lambda starts its search
            est = pop.estimates(lam, last["values"], last["spread"], n_jobs)
            last["values"] = np.maximum(est, geometry.finest_sigma)
            last["spread"] = 1.25
            tried[lam] = np.quantile(est, [alpha, 1.0 - alpha])
        return tried[lam]

    thetas = {0.0: 0.0}

    def theta(lam):
        if lam not in thetas:
            thetas[lam] = pop.population_smece(lam)
        return thetas[lam]

    # The quantiles of n_resamples estimates are themselves uncertain by
    # several % of the estimate; locating the ends more finely is wasted.
    tol = max(0.02 * estimate, 2e-5)

    def smallest_lambda(k):
        """Smallest lambda whose k-th quantile reaches the estimate (the
        quantiles grow with lambda)."""
        lo, g_lo = 0.0, quantiles(0.0)[k] - estimate
        if g_lo >= 0:
            return 0.0
        hi = 1.0
        g_hi = quantiles(hi)[k] - estimate
        while g_hi < 0 and hi < _MAX_LAMBDA:
            if theta(2.0 * hi) <= theta(hi) + tol:
                # clipped to [0, 1] everywhere it matters: no larger smECE
                return hi
            lo, g_lo = hi, g_hi
            hi *= 2.0
            g_hi = quantiles(hi)[k] - estimate
        if g_hi < 0:
            return hi
        for _ in range(30):
            if theta(hi) - theta(lo) <= tol:
                break
            width = hi - lo
            x = lo - g_lo * width / (g_hi - g_lo)
            x = min(max(x, lo + 0.1 * width), hi - 0.1 * width)
            g_x = quantiles(x)[k] - estimate
            if abs(g_x) <= tol:
                # the quantile is the estimate (to within its own noise)
                return x
            if g_x < 0:
                lo, g_lo = x, g_x
            else:
                hi, g_hi = x, g_x
        return lo - g_lo * (hi - lo) / (g_hi - g_lo)

    lam_lo = smallest_lambda(1)
    lam_hi = max(smallest_lambda(0), lam_lo)
    low, high = theta(lam_lo), theta(lam_hi)
    lams = np.array(sorted(tried))
    return InversionInterval(
        low=float(low),
        high=float(high),
        lambdas=lams,
        thetas=np.array([theta(lam) for lam in lams]),
        quantiles=np.array([tried[lam] for lam in lams]),
    )
