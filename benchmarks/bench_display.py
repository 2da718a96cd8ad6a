"""Time of SmoothReliabilityDisplay.from_predictions at scale.

Target: n = 1e6 predictions with 200 bootstrap resamples in under 10 s on 2
cores (``n_jobs=2``). The bare metric call ``smooth_calibration_curve`` with
the same arguments is timed side by side, so the ratio shows what drawing
adds (it should be close to 1: the display only plots ~257-point curves).
Each configuration is timed ``--repeat`` times; the best run is reported.

Run: ``python benchmarks/bench_display.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from skcalib.display import (  # noqa: E402
    BinnedReliabilityDisplay,
    SmoothReliabilityDisplay,
)
from skcalib.metrics import smooth_calibration_curve  # noqa: E402


def make_data(n, seed=0):
    """Over-confident scores: P(y = 1 | s) = s**2."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return rng.uniform(size=n) < s**2, s


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if hasattr(out, "figure_"):
            plt.close(out.figure_)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="n = 1e5, 50 resamples")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    n, n_boot = (10**5, 50) if args.quick else (10**6, 200)
    y, s = make_data(n)
    kw = dict(n_bootstrap=n_boot, random_state=0, n_jobs=2)

    # Start joblib's worker pool before timing: whichever call came first would
    # otherwise pay its start-up alone.
    smooth_calibration_curve(y[:1000], s[:1000], **kw)
    t_metric = best_time(lambda: smooth_calibration_curve(y, s, **kw), args.repeat)
    t_disp = best_time(
        lambda: SmoothReliabilityDisplay.from_predictions(y, s, **kw), args.repeat
    )
    t_panel = best_time(
        lambda: SmoothReliabilityDisplay.from_predictions(
            y, s, density_panel=True, **kw
        ),
        args.repeat,
    )
    curve = smooth_calibration_curve(y, s, **kw)
    t_plot = best_time(
        lambda: SmoothReliabilityDisplay(
            scores=curve.scores,
            y_smooth=curve.y_smooth,
            density=curve.density,
            smece=curve.smece,
            smece_ci=curve.smece_ci,
            y_smooth_low=curve.y_smooth_low,
            y_smooth_high=curve.y_smooth_high,
        ).plot(),
        args.repeat,
    )
    t_binned = best_time(
        lambda: BinnedReliabilityDisplay.from_predictions(y, s), args.repeat
    )
    print(f"n = {n:.0e}, n_bootstrap = {n_boot}, n_jobs = 2")
    print(f"smooth_calibration_curve (metric)          {t_metric:7.2f} s")
    print(
        f"SmoothReliabilityDisplay.from_predictions  {t_disp:7.2f} s  "
        f"ratio to metric {t_disp / t_metric:5.2f}"
    )
    print(
        f"  ... with density_panel=True              {t_panel:7.2f} s  "
        f"ratio to metric {t_panel / t_metric:5.2f}"
    )
    print(f"  ... drawing alone (plot of computed data) {t_plot:7.2f} s")
    print(f"BinnedReliabilityDisplay.from_predictions  {t_binned:7.2f} s")
    print(f"load average (1 min) during the run: {os.getloadavg()[0]:.1f}")
    # CPU seconds of a single-process run: unlike wall time, hardly inflated
    # when other jobs share the machine. Half of it estimates the wall time on
    # two idle cores if the bootstrap parallelises perfectly.
    c0 = time.process_time()
    plt.close(
        SmoothReliabilityDisplay.from_predictions(
            y, s, n_bootstrap=n_boot, random_state=0, n_jobs=1
        ).figure_
    )
    cpu = time.process_time() - c0
    print(
        f"CPU time, n_jobs=1: {cpu:.2f} s (-> about {cpu / 2:.2f} s of wall time "
        "on 2 idle cores)"
    )
    target = 10.0
    verdict = "PASS" if t_disp < target else "FAIL"
    print(
        f"target: display < {target:g} s -> {verdict} ({t_disp / target:.2f} of target)"
    )


if __name__ == "__main__":
    main()
