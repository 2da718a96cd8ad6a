"""Coverage of the bootstrap intervals of SmoothECE.

Three binary problems with scores ``f ~ Uniform(0, 1)`` and labels
``y ~ Bernoulli(eta(f))`` whose population smECE is computed by quadrature of
the known calibration function ``eta`` (no labels are drawn: each quadrature
node enters the grid statistics as a label 1 of weight ``eta`` and a label 0
of weight ``1 - eta``, which is the population residual ``eta(s) - s``):

* ``nearly calibrated``: ``eta(f) = f + 0.03 sin(2 pi f)`` (smECE 0.0190);
* ``over-confident``: ``eta(f) = expit(logit(f) / 2)`` (smECE 0.0924);
* ``under-confident``: ``eta(f) = expit(1.5 logit(f))`` (smECE 0.0571);
* with ``--calibrated`` also ``calibrated``: ``eta(f) = f`` (smECE 0), where
  the bias is the whole estimate.

For every problem, ``n`` and seed one call of
:func:`skcalib.metrics.smooth_calibration_curve` gives the estimate and its
bootstrap replicates, from which the percentile and the basic
(reverse-percentile) intervals are formed on the same resamples, and the
bootstrap bias-corrected estimate ``2 est - mean(est*)``.

Run: ``python benchmarks/bench_intervals.py [--quick] [--n-jobs 2]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from joblib import Parallel, delayed
from scipy.special import expit, logit

from skcalib._backend import smece as _sm
from skcalib._backend.resampling import bootstrap_interval
from skcalib.metrics import smooth_calibration_curve


def _near(f):
    return f + 0.03 * np.sin(2 * np.pi * f)


def _over(f):
    with np.errstate(divide="ignore"):
        return expit(0.5 * logit(f))


def _under(f):
    with np.errstate(divide="ignore"):
        return expit(1.5 * logit(f))


def _calibrated(f):
    return f


PROBLEMS = {
    "nearly calibrated": _near,
    "over-confident": _over,
    "under-confident": _under,
    "calibrated": _calibrated,
}


def population_smece(eta, n_nodes=2**18):
    """smECE of the population ``f ~ U(0, 1)``, ``P(y = 1 | f) = eta(f)``."""
    s = (np.arange(n_nodes) + 0.5) / n_nodes
    e = eta(s)
    y = np.r_[np.ones(n_nodes), np.zeros(n_nodes)]
    w = np.r_[e, 1.0 - e] / n_nodes
    return _sm.fit(y, np.r_[s, s], w, _sm.GridGeometry("l1"))[0]


def one_replicate(name, n, seed, n_bootstrap, level):
    rng = np.random.default_rng([seed, n, list(PROBLEMS).index(name)])
    f = rng.random(n)
    y = (rng.random(n) < PROBLEMS[name](f)).astype(np.int64)
    c = smooth_calibration_curve(
        y, f, n_bootstrap=n_bootstrap, confidence_level=level, random_state=seed
    )
    reps = c.smece_bootstrap
    out = {"est": c.smece, "bc": 2 * c.smece - reps.mean()}
    for method in ("percentile", "basic"):
        out[method] = bootstrap_interval(c.smece, reps, level, method)
    return out


def _rel(value, theta):
    """Bias in % of the truth, or the absolute value when the truth is 0."""
    return f"{100 * (value / theta - 1):+.0f}" if theta > 0 else f"{value:+.4f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="30 seeds, n <= 3000")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--n-bootstrap", type=int, default=200)
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--calibrated", action="store_true", help="add eta(f) = f")
    ap.add_argument("--problems", nargs="*", default=None, help="subset to run")
    ap.add_argument("--sizes", nargs="*", type=int, default=None)
    args = ap.parse_args()
    seeds = args.seeds or (30 if args.quick else 100)
    sizes = args.sizes or ((500, 3000) if args.quick else (500, 3000, 20000))
    names = args.problems or [
        p for p in PROBLEMS if p != "calibrated" or args.calibrated
    ]
    B = 100 if args.quick else args.n_bootstrap
    # A calibrated population has no residual; bisection then returns ~1e-6.
    truth = {name: population_smece(PROBLEMS[name]) for name in names}
    truth = {name: (t if t > 1e-5 else 0.0) for name, t in truth.items()}
    print(
        f"{seeds} seeds, {B} bootstrap resamples, level {args.level:g}; "
        "coverage of the population smECE (binomial s.e. "
        f"~{np.sqrt(args.level * (1 - args.level) / seeds):.3f})"
    )
    head = (
        f"{'problem':<18} {'truth':>6} {'n':>6} {'mean est':>8} {'bias %':>7} "
        f"{'BC bias %':>9} {'RMSE':>6} {'BC RMSE':>7} {'cov pct':>7} "
        f"{'cov basic':>9} {'width':>6}"
    )
    print(head)
    t0 = time.perf_counter()
    for name in names:
        theta = truth[name]
        for n in sizes:
            res = Parallel(n_jobs=args.n_jobs, backend="multiprocessing")(
                delayed(one_replicate)(name, n, s, B, args.level) for s in range(seeds)
            )
            est = np.array([r["est"] for r in res])
            bc = np.array([r["bc"] for r in res])

            def cover(method, res=res):
                lo = np.array([r[method][0] for r in res])
                hi = np.array([r[method][1] for r in res])
                return np.mean((lo <= theta) & (theta <= hi)), np.mean(hi - lo)

            cp, wp = cover("percentile")
            cb, wb = cover("basic")
            rmse = np.sqrt(np.mean((est - theta) ** 2))
            rmse_bc = np.sqrt(np.mean((bc - theta) ** 2))
            print(
                f"{name:<18} {theta:6.4f} {n:6d} {est.mean():8.4f} "
                f"{_rel(est.mean(), theta):>7} {_rel(bc.mean(), theta):>9} "
                f"{rmse:6.4f} {rmse_bc:7.4f} "
                f"{cp:7.2f} {cb:9.2f} {wb:6.4f}",
                flush=True,
            )
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
