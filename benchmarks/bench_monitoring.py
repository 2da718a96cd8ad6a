"""The alert rules of the monitoring guide on simulated streams.

Two rules, each stated in one line on a :class:`skcalib.metrics.MonitoringReport`
or a :class:`skcalib.metrics.CalibrationMonitor`:

* **calibration test**: alert on a day whose test of calibration has
  ``p_value <= alpha`` (``report.frame().query("p_value <= 0.001")``);
* **change test**: alert on a day when the last 7 days differ from a
  30-day reference period, ``change_test(reference, last_7).p_value <= alpha``.

For each: the false-alarm rate on calibrated streams of 365 daily windows
(alarms per window, with a 95 % Clopper-Pearson interval over all windows of
all streams) and the detection delay (days from a known change of the
calibration to the first alarm) on streams whose calibration shifts on a
known day. Usage::

    python benchmarks/bench_monitoring.py --streams 2 --per-day 1000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from skcalib.metrics import CalibrationMonitor


def clopper_pearson(k, n, level=0.95):
    a = (1 - level) / 2
    lo = stats.beta.ppf(a, k, n - k + 1) if k else 0.0
    hi = stats.beta.ppf(1 - a, k + 1, n - k) if k < n else 1.0
    return lo, hi


def stream(rng, days, per_day, shift_day=None, power=1.0):
    """Daily windows of Beta(2, 5) scores; from ``shift_day`` on the labels
    follow ``P(y = 1 | s) = s ** power``."""
    mon = CalibrationMonitor()
    for d in range(days):
        p = rng.beta(2.0, 5.0, size=per_day)
        eta = p if shift_day is None or d < shift_day else p**power
        mon.partial_fit(rng.uniform(size=per_day) < eta, p, key=d)
    return mon


def calibration_rule(mon, alpha, rng):
    report = mon.report(
        n_bootstrap=0, n_resamples=int(round(1 / alpha)) - 1, random_state=rng
    )
    return report.p_value <= alpha


def change_rule(mon, alpha, rng, reference=30, recent=7):
    days = sorted(mon.accumulators_)
    alarms = np.zeros(len(days), dtype=bool)
    ref = days[:reference]
    n_res = int(round(1 / alpha)) - 1
    for i in range(reference + recent - 1, len(days)):
        last = days[i - recent + 1 : i + 1]
        alarms[i] = (
            mon.change_test(ref, last, n_resamples=n_res, random_state=rng).p_value
            <= alpha
        )
    return alarms


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--per-day", type=int, default=2000)
    ap.add_argument("--alpha", type=float, default=0.001)
    ap.add_argument("--shift-day", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    days = 365
    print(
        f"{args.streams} streams of {days} daily windows, {args.per_day} predictions "
        f"a day, alpha = {args.alpha:g}"
    )
    for name, rule in (
        ("calibration test", calibration_rule),
        ("change test", change_rule),
    ):
        t0 = time.perf_counter()
        alarms = checked = 0
        for _ in range(args.streams):
            hits = rule(stream(rng, days, args.per_day), args.alpha, rng)
            first = 0 if rule is calibration_rule else 36
            alarms += int(hits[first:].sum())
            checked += days - first
        lo, hi = clopper_pearson(alarms, checked)
        print(
            f"\n{name}: false alarms on calibrated streams {alarms} / {checked} "
            f"windows = {alarms / checked:.5f} (95% CI [{lo:.5f}, {hi:.5f}]; "
            f"alpha {args.alpha:g}); {alarms / args.streams:.2f} per stream-year"
        )
        for power in (1.15, 1.3):
            delays = []
            for _ in range(args.streams):
                mon = stream(rng, days, args.per_day, args.shift_day, power)
                hits = np.flatnonzero(rule(mon, args.alpha, rng)[args.shift_day :])
                delays.append(int(hits[0]) if hits.size else np.inf)
            print(
                f"  shift to P(y=1|s) = s^{power} on day {args.shift_day}: detection "
                f"delay in days {delays} (median {np.median(delays):g})"
            )
        print(f"  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
