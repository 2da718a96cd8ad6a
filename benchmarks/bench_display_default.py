"""Cost of the default band of SmoothReliabilityDisplay.from_predictions.

``n_bootstrap="auto"`` draws a 100-resample bootstrap band up to 200,000
samples and none above. For each n this prints the time of the default call,
of the same call without a band (``n_bootstrap=0``) and of the bare metric
``smooth_calibration_curve`` without a band, measured side by side
(interleaved, best of ``--repeat``), and the ratio default / no band.

Run: ``python benchmarks/bench_display_default.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skcalib.display import SmoothReliabilityDisplay  # noqa: E402
from skcalib.display._smooth import AUTO_BOOTSTRAP, AUTO_MAX_SAMPLES  # noqa: E402
from skcalib.metrics import smooth_calibration_curve  # noqa: E402


def make_data(n, seed=0):
    """Over-confident scores: P(y = 1 | s) = s**2."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return rng.uniform(size=n) < s**2, s


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - t0
    if hasattr(out, "figure_"):
        plt.close(out.figure_)
    return elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [1_000, 10_000, 100_000, AUTO_MAX_SAMPLES, 1_000_000]
    print(
        f"n_bootstrap='auto': {AUTO_BOOTSTRAP} resamples up to n = "
        f"{AUTO_MAX_SAMPLES}, none above"
    )
    print(f"{'n':>9} {'default':>9} {'no band':>9} {'metric':>9} {'ratio':>7}")
    for n in sizes:
        y, s = make_data(n)
        calls = {
            "default": lambda: SmoothReliabilityDisplay.from_predictions(
                y, s, random_state=0
            ),
            "no band": lambda: SmoothReliabilityDisplay.from_predictions(
                y, s, n_bootstrap=0
            ),
            "metric": lambda: smooth_calibration_curve(y, s),
        }
        best = dict.fromkeys(calls, np.inf)
        for _ in range(args.repeat):
            for key, fn in calls.items():
                best[key] = min(best[key], timed(fn))
        ratio = best["default"] / best["no band"]
        print(
            f"{n:>9} {best['default']:>8.3f}s {best['no band']:>8.3f}s "
            f"{best['metric']:>8.3f}s {ratio:>6.1f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
