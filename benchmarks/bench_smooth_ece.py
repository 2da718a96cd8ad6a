"""SmoothECE speed and memory: skcalib vs relplot vs the np.bincount floor.

Run: python benchmarks/bench_smooth_ece.py [--max-n 1e7] [--repeat 3]

All timings in one table are measured in the same run, interleaved, and the
best of ``--repeat`` runs is reported (the machine may be shared).
"""

import argparse
import time
import tracemalloc

import numpy as np

from skcalib.metrics import smooth_calibration_curve, smooth_ece


def best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def make(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(np.float64)
    return y, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-n", type=float, default=1e7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-relplot", action="store_true")
    args = ap.parse_args()
    try:
        import relplot
    except ImportError:
        relplot = None
    if args.no_relplot:
        relplot = None

    print(
        f"{'n':>10} {'skcalib s':>10} {'relplot s':>10} {'speedup':>8} "
        f"{'3x bincount s':>14} {'ours/floor':>10} {'smECE':>8} {'relplot':>8}"
    )
    n = 10_000
    while n <= args.max_n:
        y, p = make(n)
        w = np.ones(n)
        t_ours = best_time(lambda: smooth_ece(y, p), args.repeat)
        # the floor: three weighted bincount passes over the same data, i.e.
        # the cost of just reading the scores once per sufficient statistic
        idx = (p * 65536).astype(np.intp)

        def floor():
            for col in (w, y, p):
                np.bincount(idx, weights=col, minlength=65537)

        t_floor = best_time(floor, args.repeat)
        ours = smooth_ece(y, p)
        if relplot is not None:
            t_rel = best_time(
                lambda: relplot.smECE(p, y), 1 if n >= 10**6 else args.repeat
            )
            rel = relplot.smECE(p, y)
            rel_s = f"{t_rel:10.4f} {t_rel / t_ours:8.1f}"
            rel_v = f"{rel:8.5f}"
        else:
            rel_s, rel_v = f"{'-':>10} {'-':>8}", f"{'-':>8}"
        print(
            f"{n:>10d} {t_ours:10.4f} {rel_s} {t_floor:14.4f} "
            f"{t_ours / t_floor:10.2f} {ours:8.5f} {rel_v}",
            flush=True,
        )
        n *= 10

    n = int(args.max_n)
    y, p = make(n)
    input_bytes = y.nbytes + p.nbytes
    tracemalloc.start()
    smooth_ece(y, p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\npeak extra memory of smooth_ece at n={n:.0e}: {peak / 2**20:.1f} MiB "
        f"= {peak / input_bytes:.2f} x the input arrays ({input_bytes / 2**20:.0f} MiB)"
    )

    n = 10**6
    y, p = make(n)
    for n_jobs in (1, 2):
        t0 = time.perf_counter()
        c = smooth_calibration_curve(
            y, p, n_bootstrap=200, random_state=0, n_jobs=n_jobs
        )
        t = time.perf_counter() - t0
        print(
            f"smooth_calibration_curve n=1e6, 200 bootstrap, n_jobs={n_jobs}: "
            f"{t:.2f} s "
            f"(smECE {c.smece:.4f}, CI {c.smece_ci[0]:.4f}-{c.smece_ci[1]:.4f})"
        )


if __name__ == "__main__":
    main()
