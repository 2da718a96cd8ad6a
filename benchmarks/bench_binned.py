"""Binned ECE speed: skcalib vs an ECE from scikit-learn's calibration_curve.

The floor is one index computation and one weighted ``np.bincount`` over the
same scores: the least any binned statistic must do. The target is at most
3x that floor (one index pass and three bincounts) at n = 1e7.

Run: ``python benchmarks/bench_binned.py [--full]`` (or through run_all.py).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from sklearn.calibration import calibration_curve

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import peak_mb, race, row  # noqa: E402

from skcalib.metrics import binned_calibration_error  # noqa: E402

N_BINS = 15


def make(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(np.float64)
    return y, p


def sklearn_ece(y, p, strategy):
    """ECE from ``calibration_curve``'s per-bin means and the bin counts."""
    prob_true, prob_pred = calibration_curve(y, p, n_bins=N_BINS, strategy=strategy)
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, N_BINS + 1)
    else:
        edges = np.percentile(p, np.linspace(0, 1, N_BINS + 1) * 100)
    counts = np.bincount(np.searchsorted(edges[1:-1], p), minlength=N_BINS)
    counts = counts[counts > 0]
    return float(np.sum(counts * np.abs(prob_true - prob_pred)) / counts.sum())


def rows(full=False):
    out = []
    sizes = [10**6, 10**7] if full else [10**6]
    for n in sizes:
        y, p = make(n)
        repeat = 3 if n >= 10**7 else 5

        def floor():
            idx = (p * N_BINS).astype(np.intp)
            np.bincount(idx, weights=y, minlength=N_BINS + 1)

        for strategy in ("uniform", "quantile"):
            t = race(
                {
                    "skcalib": lambda: binned_calibration_error(
                        y, p, n_bins=N_BINS, strategy=strategy
                    ),
                    "sklearn calibration_curve": lambda: sklearn_ece(y, p, strategy),
                    "index + bincount": floor,
                },
                repeat,
            )
            ours = binned_calibration_error(y, p, n_bins=N_BINS, strategy=strategy)
            peer = sklearn_ece(y, p, strategy)
            out.append(
                row(
                    f"binned ECE, {strategy}, 15 bins",
                    n,
                    t,
                    peer="sklearn calibration_curve",
                    floor="index + bincount",
                    peak=peak_mb(
                        lambda: binned_calibration_error(y, p, strategy=strategy)
                    ),
                    note=f"|ECE - peer| = {abs(ours - peer):.1e}",
                )
            )
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true")
    from run_all import print_table

    print_table(rows(ap.parse_args().full))
