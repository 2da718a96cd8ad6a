"""Time and peak memory of kde_calibration_error (ECE-KDE).

Target: n = 20000, K = 100 in under 15 s with under 1 GB of extra memory on
2 cores, and time linear in K for fixed n. A dense reference (the whole
n x n kernel matrix at once, as the original implementation does) is timed
side by side where it fits in memory.

Run: ``python benchmarks/bench_kde_ece.py [--quick]``.

``--accuracy`` instead compares the default bandwidth (the ``"risk"`` grid
search refined on the whole sample) with the grid search alone (the default
before the refinement, which held the bandwidth of every ``n > 3000`` at
the value of a 3000-point subsample), for the default estimators (``p=1``
plug-in, ``p=2`` U-statistic), against Monte-Carlo ground truth at ``n =
500, 2000, 10000`` (``python benchmarks/bench_kde_ece.py --accuracy [--reps
3] [--n-jobs 2]``, tens of minutes on 2 cores). The designs
draw ``q ~ Dirichlet(1, ..., 1)``, labels ``y ~ Categorical(q)`` and report
``f = softmax(log(q) / T)``; since ``f -> q`` is invertible,
``E[e_y | f] = q`` and the canonical ``CE_p^p = E ||q - f||_p^p`` is a
Monte-Carlo mean over 10^6 draws of ``q`` (no labels needed). ``T = 1`` is
calibrated, ``T = 0.6`` over-confident, ``T = 1.6`` under-confident. ``K = 2``
is the binary problem (scalar error of the positive class, half the
two-coordinate sum).

``--oracle`` adds the bandwidth (of 25 log-spaced values in ``[3e-4, 1]``)
that minimises the true mean squared error of the smoothed map against
``q``: the best any selector that targets the map can do, and a check of
whether the plug-in's error at these ``n`` is the selector's or the
estimator's. ``--classes 3 --sizes 500 2000 10000 50000`` restricts the
run (above 10^4 points the leave-one-out terms are averaged over 10^4
random rows, each against every centre, as ``max_samples`` does).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
import warnings

import numpy as np
from scipy.special import gammaln, logsumexp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import peak_mb, race, row  # noqa: E402

from skcalib.metrics import kde_calibration_error  # noqa: E402


def make_data(n, K, seed=0):
    """Overconfident predictions of a calibrated Dirichlet model."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(K), size=n)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(q, axis=1)).sum(axis=1), K - 1)
    f = np.exp(np.log(q) / 0.6)
    f /= f.sum(axis=1, keepdims=True)
    if K == 2:
        return y, f[:, 1]
    return y, f


def dense_reference(y, F, b):
    """Canonical L1 ECE-KDE with the full n x n log-kernel matrix in memory."""
    scale = 1.0
    if F.ndim == 1:  # binary: error of the positive class, half the K = 2 sum
        F, scale = np.column_stack([1 - F, F]), 0.5
    n, K = F.shape
    Fc = np.clip(F, 1e-12, 1 - 1e-12)
    Fc /= Fc.sum(axis=1, keepdims=True)
    c = gammaln(Fc / b + 1).sum(axis=1) - gammaln(1 / b + K)
    L = np.log(Fc) @ (Fc / b).T - c
    np.fill_diagonal(L, -np.inf)
    W = np.exp(L - logsumexp(L, axis=1, keepdims=True))
    R = W @ np.eye(K)[y]
    return scale * np.abs(R - F).sum(axis=1).mean()


DESIGNS = {"calibrated": 1.0, "over-confident": 0.6, "under-confident": 1.6}
# The grid search alone (on a subsample of 3000 points beyond that: the
# default before the refinement) and the default (grid, then refined on the
# whole sample).
SELECTORS = ("risk, grid (before)", "risk (default)")
ESTIMATORS = ("L1 plug-in (p=1)", "L2 U-stat (p=2)")
# With --oracle: the bandwidth of this grid that minimises the true mean
# squared error of the smoothed map (known in the designs), a lower limit for
# every selector that targets the map.
ORACLE = "oracle (true-map MSE)"
ORACLE_GRID = np.exp(np.linspace(np.log(3e-4), 0.0, 25))
EVAL_ROWS = 10000


def ground_truth_sample(n, K, T, rng):
    q = rng.dirichlet(np.ones(K), size=n)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(q, axis=1)).sum(axis=1), K - 1)
    f = np.exp(np.log(q) / T)
    f /= f.sum(axis=1, keepdims=True)
    return y, f, q


def true_errors(K, T, n_mc=10**6):
    """Monte-Carlo ``(CE_1, CE_2^2)`` of a design (scalar for K = 2)."""
    _, f, q = ground_truth_sample(n_mc, K, T, np.random.default_rng(12345))
    scale = 0.5 if K == 2 else 1.0
    d = np.abs(q - f)
    return scale * d.sum(axis=1).mean(), scale * (d**2).sum(axis=1).mean()


def accuracy_cell(K, T, n, rep, oracle=False):
    """The selectors and both default estimators on one sample (one smoother
    pass per bandwidth gives the L1 plug-in and the U-statistic).

    Above ``EVAL_ROWS`` points the leave-one-out terms are averaged over that
    many random rows, each against all ``n`` centres (the ``max_samples``
    evaluation of the API): an unbiased estimate of the full mean.
    """
    from skcalib._backend.bandwidth import (
        select_dirichlet_bandwidth,
        select_kde_bandwidth,
    )
    from skcalib._backend.smoothing import dirichlet_nw

    rng = np.random.default_rng([K, int(100 * T), n, rep])
    y, F, q = ground_truth_sample(n, K, T, rng)
    scale = 0.5 if K == 2 else 1.0
    w = np.ones(n)
    rows = None
    if n > EVAL_ROWS:
        rows = np.sort(rng.choice(n, size=EVAL_ROWS, replace=False))
    F_rows = F if rows is None else F[rows]

    def smooth(b):
        return dirichlet_nw(
            F, y, w, None, b, leave_one_out=True, squared_error=True, eval_rows=rows
        )

    def summary(b, res):
        return (
            b,
            scale * np.abs(res.ratio - F_rows).sum(axis=1).mean(),
            scale * res.squared_error.mean(),
            float(np.median(res.effective_sample_size)),
        )

    out = {}
    for sel, select in zip(
        SELECTORS, (select_dirichlet_bandwidth, select_kde_bandwidth), strict=True
    ):
        b, _ = select(F, y, w, "risk", warn=False)
        out[sel] = summary(b, smooth(b))
    if oracle:
        # The bandwidth no data-driven rule can beat at estimating the map:
        # the smallest mean squared error of R against the true E[e_y | f] = q.
        q_rows = q if rows is None else q[rows]
        fits = [(b, smooth(b)) for b in ORACLE_GRID]
        mse = [((res.ratio - q_rows) ** 2).sum(axis=1).mean() for _, res in fits]
        out[ORACLE] = summary(*fits[int(np.argmin(mse))])
    return out


def _rel(est, truth):
    return f"({100 * (est / truth - 1):+.0f}%)" if truth > 1e-6 else f"({est:+.4f})"


def accuracy(reps, n_jobs, sizes=(500, 2000, 10000), classes=(2, 3, 10), oracle=False):
    from joblib import Parallel, delayed

    cells = [(K, T, n) for K in classes for T in DESIGNS.values() for n in sizes]
    selectors = SELECTORS + ((ORACLE,) if oracle else ())
    n_reps = {n: reps if n <= 2000 else max(1, reps - 1) for n in sizes}
    tasks = [(c, r) for c in cells for r in range(n_reps[c[2]])]
    t0 = time.perf_counter()
    # largest first: the pool stays busy to the end
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i][0][2] * tasks[i][0][0])
    results = Parallel(n_jobs=n_jobs, backend="multiprocessing")(
        delayed(accuracy_cell)(*tasks[i][0], tasks[i][1], oracle) for i in order
    )
    by_cell = {}
    for i, res in zip(order, results, strict=True):
        by_cell.setdefault(tasks[i][0], []).append(res)
    names = {v: k for k, v in DESIGNS.items()}
    print(
        "Mean estimate over repetitions ("
        + ", ".join(f"{n_reps[n]} at n = {n}" for n in sizes)
        + ") vs Monte-Carlo truth; error in % of the truth (absolute error for "
        "a calibrated design, truth 0); b = median bandwidth, ESS = median "
        "effective sample size"
    )
    print(
        f"{'K':>3} {'design':<16} {'n':>6} {'selector':<22} {'b':>8} {'ESS':>7} "
        + " ".join(f"{e:>22}" for e in ESTIMATORS)
    )
    err = {}
    for c in cells:
        K, T, n = c
        truths = true_errors(K, T)
        print(
            f"{K:>3} {names[T]:<16} {n:>6} {'truth':<20} {'':>8} {'':>7} "
            + " ".join(f"{t:>22.4f}" for t in truths)
        )
        for sel in selectors:
            arr = np.array([r[sel] for r in by_cell[c]])
            cols = []
            for k, truth in enumerate(truths):
                est = arr[:, k + 1].mean()
                err[c, sel, k] = (est - truth) / truth if truth > 1e-6 else est
                cols.append(f"{est:.4f} {_rel(est, truth):>9}")
            print(
                f"{K:>3} {'':<16} {n:>6} {sel:<22} {np.median(arr[:, 0]):8.4f} "
                f"{np.median(arr[:, 3]):7.1f} " + " ".join(f"{x:>22}" for x in cols),
                flush=True,
            )
    print(
        "\nError of the mean estimate by n (relative; absolute for calibrated "
        "designs): consistency means it shrinks as n grows"
    )
    print(
        f"{'K':>3} {'design':<16} {'selector':<22} "
        + " ".join(f"{e[:10] + ' n=' + str(n):>18}" for e in ESTIMATORS for n in sizes)
    )
    for K in classes:
        for T in DESIGNS.values():
            for sel in selectors:
                cols = [
                    err[(K, T, n), sel, k]
                    for k in range(len(ESTIMATORS))
                    for n in sizes
                ]
                print(
                    f"{K:>3} {names[T]:<16} {sel:<22} "
                    + " ".join(f"{x:>+18.3f}" for x in cols)
                )
    print(f"total {time.perf_counter() - t0:.0f} s")


def measure(func, *args, **kwargs):
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        value = func(*args, **kwargs)
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return value, elapsed, peak / 2**20, cpu


def rows(full=False):
    """ECE-KDE rows for ``run_all.py``.

    The floor is the product ``log(F) @ F.T`` of the n x n log-kernels (one
    BLAS call per chunk of rows, what any exact kernel estimate computes).
    ``max_samples`` rows evaluate a subsample of rows against all centres.
    """
    out = []
    n, K, b = 5000, 10, 0.05
    y, f = make_data(n, K)
    logF = np.log(np.clip(f, 1e-12, 1.0))

    def floor():
        for start in range(0, n, 1000):
            logF[start : start + 1000] @ f.T

    def ours():
        return kde_calibration_error(y, f, bandwidth=b)

    t = race(
        {
            "skcalib": ours,
            "dense n x n reference": lambda: dense_reference(y, f, b),
            "log(F) @ F.T": floor,
        },
        3,
    )
    diff = abs(ours() - dense_reference(y, f, b))
    out.append(
        row(
            f"ECE-KDE p=1, K={K}, b={b}",
            n,
            t,
            peer="dense n x n reference",
            floor="log(F) @ F.T",
            peak=peak_mb(ours),
            note=f"|value - reference| = {diff:.1e}",
        )
    )
    cases = [(10**5, 2000)]
    if full:
        cases = [(10**5, None), (10**5, 2000), (10**6, 2000)]
    for n, m in cases:
        y, f = make_data(n, K)
        logF = np.log(np.clip(f, 1e-12, 1.0))
        rows_floor = n if m is None else m

        def floor():
            for start in range(0, rows_floor, 1000):
                logF[start : min(start + 1000, rows_floor)] @ f.T

        def call(m=m, y=y, f=f):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                return kde_calibration_error(
                    y,
                    f,
                    p=2,
                    max_samples=m,
                    random_state=0,
                    n_jobs=2,
                    return_details=True,
                )

        t = race({"skcalib": call, "log(F) @ F.T": floor}, 1)
        res = call()
        out.append(
            row(
                f"ECE-KDE p=2 default, K={K}"
                + ("" if m is None else f", max_samples={m}"),
                n,
                t,
                floor="log(F) @ F.T",
                peak=peak_mb(call),
                note=f"value {res.value:.5f} +- {res.standard_error:.1e} (SE), "
                "n_jobs=2",
            )
        )
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n up to 5000 only")
    parser.add_argument("--target", action="store_true", help="only n = 20000, K = 100")
    parser.add_argument(
        "--accuracy", action="store_true", help="selectors vs Monte-Carlo truth"
    )
    parser.add_argument("--reps", type=int, default=3, help="with --accuracy")
    parser.add_argument("--n-jobs", type=int, default=2, help="with --accuracy")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[500, 2000, 10000],
        help="with --accuracy",
    )
    parser.add_argument(
        "--classes",
        type=int,
        nargs="*",
        default=[2, 3, 10],
        help="with --accuracy: the numbers of classes K",
    )
    parser.add_argument(
        "--oracle",
        action="store_true",
        help="with --accuracy: add the bandwidth of smallest true-map MSE",
    )
    args = parser.parse_args()
    if args.accuracy:
        return accuracy(
            args.reps,
            args.n_jobs,
            tuple(args.sizes),
            tuple(args.classes),
            args.oracle,
        )
    sizes = (1000, 5000) if args.quick else (1000, 5000, 20000)
    if args.target:
        return target()
    print(f"cores: {os.cpu_count()}; load average: {os.getloadavg()[0]:.1f}")
    print(
        f"{'n':>6} {'K':>4} {'call':<24} {'time s':>8} {'peak MB':>8} "
        f"{'cpu s':>7}  value"
    )
    times, cpu = {}, {}
    for n in sizes:
        for K in (2, 10, 100):
            y, f = make_data(n, K)
            labels = np.arange(K)
            for name, kwargs in (
                ("default (risk)", {}),
                ("bandwidth=0.05", {"bandwidth": 0.05}),
                ("bandwidth=0.05, p=2", {"bandwidth": 0.05, "p": 2}),
            ):
                res = measure(kde_calibration_error, y, f, labels=labels, **kwargs)
                times[n, K, name] = res[1]
                cpu[n, K, name] = res[3]
                print(
                    f"{n:>6} {K:>4} {name:<24} {res[1]:8.2f} {res[2]:8.1f} "
                    f"{res[3]:7.2f}  {res[0]:.4f}"
                )
            if n <= 5000:
                ref = measure(dense_reference, y, f, 0.05)
                ratio = ref[1] / times[n, K, "bandwidth=0.05"]
                print(
                    f"{n:>6} {K:>4} {'dense n x n reference':<24} {ref[1]:8.2f} "
                    f"{ref[2]:8.1f} {ref[3]:7.2f}  {ref[0]:.4f}  (time ratio "
                    "dense/chunked "
                    f"{ratio:.2f})"
                )
    n = sizes[-1]
    for name in ("default (risk)", "bandwidth=0.05"):
        r = times[n, 100, name] / times[n, 10, name]
        rc = cpu[n, 100, name] / cpu[n, 10, name]
        print(
            f"n={n}, {name}: K=100 / K=10 time ratio {r:.2f} wall, {rc:.2f} cpu "
            "(linear would be 10)"
        )
    if (20000, 100, "default (risk)") in times:
        key = (20000, 100, "default (risk)")
        verdict = "MET" if times[key] < 15 else "NOT MET (see load average)"
        print(
            f"target n=20000, K=100 default call < 15 s: {times[key]:.1f} s wall, "
            f"{cpu[key]:.1f} s cpu -> {verdict}"
        )
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


def target():
    """The target case alone, default call and n_jobs=2, with load averages."""
    y, f = make_data(20000, 100)
    labels = np.arange(100)
    for kwargs in ({}, {"n_jobs": 2}, {"bandwidth": 0.05}, {"bandwidth": 0.05, "p": 2}):
        load = os.getloadavg()[0]
        res = measure(kde_calibration_error, y, f, labels=labels, **kwargs)
        verdict = "MET" if res[1] < 15 and res[2] < 1024 else "NOT MET"
        print(
            f"n=20000, K=100, {kwargs or 'default'}: {res[1]:.2f} s wall, "
            f"{res[3]:.2f} s cpu, {res[2]:.1f} MB peak (load {load:.1f}) -> {verdict}"
        )


if __name__ == "__main__":
    main()
