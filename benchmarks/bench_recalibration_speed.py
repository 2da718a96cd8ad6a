"""Fit time of ``KernelRecalibrator`` against temperature scaling.

Run: ``python benchmarks/bench_recalibration_speed.py [--full] [--repeats R]``.

The cases are the fit-time targets of the recalibration benchmark: binary
problems of 200, 1000 and 1e6 rows, and 10-class problems of 1000 and 1e5
rows. The reference is temperature scaling (one inverse temperature on the
log-probabilities by maximum likelihood, written below), the least a
post-hoc recalibrator fits. Contenders are timed in interleaved rounds and
the minimum of the rounds is reported; ``peak MB`` is the memory allocated
by one fit at its peak (tracemalloc). ``--full`` adds a 1e6-row 10-class fit.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax, softmax

from skcalib import KernelRecalibrator


def temperature_scaling(P, y):
    """Reference: ``softmax(beta log P)``, ``beta`` by maximum likelihood."""
    L = np.log(np.clip(P, 1e-12, 1.0))
    rows = np.arange(y.shape[0])

    def nll(t):
        return -log_softmax(np.exp(t) * L, axis=1)[rows, y].mean()

    return np.exp(minimize_scalar(nll, bounds=(-8, 8), method="bounded").x)


def binary(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2, 3, n)
    return np.column_stack([1 - s, s]), (rng.random(n) < s**1.5).astype(int)


def multi(n, k=10, seed=0):
    rng = np.random.default_rng(seed)
    T = rng.normal(0.0, 1.5, (n, k))
    y = (softmax(T, axis=1).cumsum(axis=1) < rng.random(n)[:, None]).sum(axis=1)
    return softmax(np.exp(T / 2), axis=1), y


def cases(full):
    out = [
        ("binary", 200, binary, 0.2),
        ("binary", 1000, binary, 0.2),
        ("K=10", 1000, multi, 1.0),
        ("binary", 10**6, binary, 1.0),
        ("K=10", 10**5, multi, 1.0),
    ]
    if full:
        out.append(("K=10", 10**6, multi, None))
    return out


def _fit(P, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        KernelRecalibrator().fit(P, y)


def _peak_mb(P, y):
    tracemalloc.start()
    try:
        _fit(P, y)
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def time_case(P, y, repeats):
    ours, ref = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _fit(P, y)
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        temperature_scaling(P, y)
        ref.append(time.perf_counter() - t0)
    return min(ours), min(ref)


def rows(full: bool, repeats: int = 3) -> list[dict]:
    """One row per case, in the format of ``benchmarks/run_all.py``.

    Keys ``work, n, skcalib_s, peer, peer_s, floor, floor_s, peak_mb, note``;
    the peer is the temperature-scaling reference, the note the target.
    """
    out = []
    for work, n, make, target in cases(full):
        P, y = make(n)
        a, b = time_case(P, y, repeats)
        out.append(
            {
                "work": f"KernelRecalibrator fit, {work}",
                "n": n,
                "skcalib_s": a,
                "peer": "temperature scaling",
                "peer_s": b,
                "floor": "",
                "floor_s": None,
                "peak_mb": _peak_mb(P, y),
                "note": "" if target is None else f"target < {target} s",
            }
        )
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--full", action="store_true", help="add K=10 n=1e6")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"fit time (s), minimum of {args.repeats} interleaved repeats\n")
    print(
        f"{'case':32s} {'n':>8s} {'ours':>8s} {'temp.':>8s} {'ratio':>7s} "
        f"{'peak MB':>8s}  target"
    )
    for r in rows(args.full, args.repeats):
        print(
            f"{r['work']:32s} {r['n']:8d} {r['skcalib_s']:8.3f} {r['peer_s']:8.3f} "
            f"{r['skcalib_s'] / r['peer_s']:7.1f} {r['peak_mb']:8.1f}  {r['note']}"
        )


if __name__ == "__main__":
    main()
