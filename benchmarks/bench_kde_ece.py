"""Time and peak memory of kde_calibration_error (ECE-KDE).

Target: n = 20000, K = 100 in under 15 s with under 1 GB of extra memory on
2 cores, and time linear in K for fixed n. A dense reference (the whole
n x n kernel matrix at once, as the original implementation does) is timed
side by side where it fits in memory.

Run: ``python benchmarks/bench_kde_ece.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
import warnings

import numpy as np
from scipy.special import gammaln, logsumexp

from skcalib.metrics import kde_calibration_error


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


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n up to 5000 only")
    parser.add_argument("--target", action="store_true", help="only n = 20000, K = 100")
    args = parser.parse_args()
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
                ("default (mle)", {}),
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
    for name in ("default (mle)", "bandwidth=0.05"):
        r = times[n, 100, name] / times[n, 10, name]
        rc = cpu[n, 100, name] / cpu[n, 10, name]
        print(
            f"n={n}, {name}: K=100 / K=10 time ratio {r:.2f} wall, {rc:.2f} cpu "
            "(linear would be 10)"
        )
    if (20000, 100, "default (mle)") in times:
        key = (20000, 100, "default (mle)")
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
