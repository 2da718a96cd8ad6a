"""Coverage of the confidence intervals of SmoothECE.

Six binary problems whose population smECE is computed without sampling
(quadrature of the score law, or its atoms; each node enters the grid
statistics as a label 1 of weight ``eta`` and a label 0 of weight
``1 - eta``, i.e. with the population residual ``eta(s) - s``):

* ``calibrated``: ``f ~ U(0, 1)``, ``eta(f) = f`` (smECE 0);
* ``nearly calibrated``: ``f ~ U(0, 1)``, ``eta(f) = f + 0.03 sin(2 pi f)``;
* ``over-confident``: ``f ~ U(0, 1)``, ``eta(f) = expit(logit(f) / 2)``;
* ``under-confident``: ``f ~ U(0, 1)``, ``eta(f) = expit(1.5 logit(f))``;
* ``rare positives``: ``f ~ Beta(1, 24)`` (mean 0.04), ``eta(f) = 1.5 f``;
* ``discrete scores``: ``f`` uniform on the ten values ``0.05, ..., 0.95``,
  ``eta(f) = expit(0.7 logit(f))``.

For every problem, ``n`` and seed, one call of
:func:`skcalib.metrics.smooth_calibration_curve` (``ci_method="inversion"``,
the default) gives the inversion interval and the ordinary bootstrap
replicates, from which the basic (the default before) and percentile
intervals are formed on the same resamples. The table gives the RMSE of the
estimate and of the bootstrap bias-corrected estimate ``smece_bias_corrected``
("BC"), and for each interval the coverage of the population smECE with its
Wilson 95 % interval and the mean width.

Run: ``python benchmarks/bench_intervals.py [--quick] [--n-jobs 2]
[--sizes 500 1000 3000] [--seeds 100]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from joblib import Parallel, delayed
from scipy import stats as _stats
from scipy.special import expit, logit

from skcalib._backend import smece as _sm
from skcalib._backend.resampling import bootstrap_interval
from skcalib.metrics import smooth_calibration_curve


def _logit(f):
    return logit(np.clip(f, 1e-15, 1 - 1e-15))


_LEVELS = (np.arange(10) + 0.5) / 10

# name: (score sampler rng -> n scores, calibration function, quadrature
# nodes and weights of the score law)
PROBLEMS = {
    "calibrated": (
        lambda rng, n: rng.random(n),
        lambda f: f,
        "uniform",
    ),
    "nearly calibrated": (
        lambda rng, n: rng.random(n),
        lambda f: f + 0.03 * np.sin(2 * np.pi * f),
        "uniform",
    ),
    "over-confident": (
        lambda rng, n: rng.random(n),
        lambda f: expit(0.5 * _logit(f)),
        "uniform",
    ),
    "under-confident": (
        lambda rng, n: rng.random(n),
        lambda f: expit(1.5 * _logit(f)),
        "uniform",
    ),
    "rare positives": (
        lambda rng, n: rng.beta(1.0, 24.0, n),
        lambda f: np.minimum(1.5 * f, 1.0),
        "beta(1, 24)",
    ),
    "discrete scores": (
        lambda rng, n: rng.choice(_LEVELS, size=n),
        lambda f: expit(0.7 * _logit(f)),
        "ten levels",
    ),
}

METHODS = ("inversion", "basic", "percentile")


def _nodes(law, n_nodes=2**18):
    if law == "ten levels":
        return _LEVELS, np.full(10, 0.1)
    u = (np.arange(n_nodes) + 0.5) / n_nodes
    s = u if law == "uniform" else _stats.beta(1.0, 24.0).ppf(u)
    return s, np.full(n_nodes, 1.0 / n_nodes)


def population_smece(name):
    """smECE of the population itself (0 for a calibrated one)."""
    _, eta, law = PROBLEMS[name]
    s, p = _nodes(law)
    e = eta(s)
    if np.array_equal(e, s):
        return 0.0
    y = np.r_[np.ones(s.shape[0]), np.zeros(s.shape[0])]
    w = np.r_[e * p, (1.0 - e) * p]
    return _sm.fit(y, np.r_[s, s], w, _sm.GridGeometry("l1"))[0]


def one_replicate(name, n, seed, n_bootstrap, level):
    draw, eta, _ = PROBLEMS[name]
    rng = np.random.default_rng([seed, n, list(PROBLEMS).index(name)])
    f = draw(rng, n)
    y = (rng.random(n) < eta(f)).astype(np.int64)
    c = smooth_calibration_curve(
        y, f, n_bootstrap=n_bootstrap, confidence_level=level, random_state=seed
    )
    out = {"est": c.smece, "bc": c.smece_bias_corrected, "inversion": c.smece_ci}
    for method in ("basic", "percentile"):
        out[method] = bootstrap_interval(c.smece, c.smece_bootstrap, level, method)
    return out


def wilson(k, m, z=1.959964):
    """Wilson score interval of a binomial proportion ``k / m``."""
    p = k / m
    centre = (p + z * z / (2 * m)) / (1 + z * z / m)
    half = z * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    return centre - half, centre + half


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="30 seeds, n = 500")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--n-bootstrap", type=int, default=200)
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--problems", nargs="*", default=None, help="subset to run")
    ap.add_argument("--sizes", nargs="*", type=int, default=None)
    args = ap.parse_args()
    seeds = args.seeds or (30 if args.quick else 100)
    sizes = args.sizes or ((500,) if args.quick else (500, 1000, 3000))
    names = args.problems or list(PROBLEMS)
    B = args.n_bootstrap
    print(
        f"{seeds} seeds, {B} resamples, level {args.level:g}: coverage of the "
        "population smECE [Wilson 95 % interval] and mean width"
    )
    print(
        f"{'problem':<18} {'truth':>6} {'n':>6} {'mean est':>8} {'RMSE':>6} "
        f"{'BC RMSE':>7} "
        + " ".join(f"{m + ' coverage':>24} {'width':>6}" for m in METHODS)
    )
    t0 = time.perf_counter()
    for name in names:
        theta = population_smece(name)
        for n in sizes:
            res = Parallel(n_jobs=args.n_jobs, backend="multiprocessing")(
                delayed(one_replicate)(name, n, s, B, args.level) for s in range(seeds)
            )
            est = np.array([r["est"] for r in res])
            bc = np.array([r["bc"] for r in res])
            rmse = np.sqrt(np.mean((est - theta) ** 2))
            rmse_bc = np.sqrt(np.mean((bc - theta) ** 2))
            cols = [f"{rmse:6.4f} {rmse_bc:7.4f}"]
            for method in METHODS:
                lo = np.array([r[method][0] for r in res])
                hi = np.array([r[method][1] for r in res])
                hits = int(np.sum((lo <= theta) & (theta <= hi)))
                a, b = wilson(hits, seeds)
                cols.append(
                    f"{hits / seeds:>9.2f} [{a:.2f}, {b:.2f}]".rjust(24)
                    + f" {np.mean(hi - lo):6.4f}"
                )
            print(
                f"{name:<18} {theta:6.4f} {n:6d} {est.mean():8.4f} " + " ".join(cols),
                flush=True,
            )
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
