"""The alert rules of the monitoring guide on simulated streams.

Two rules, each stated in one line on a :class:`skcalib.metrics.MonitoringReport`
or a :class:`skcalib.metrics.CalibrationMonitor`:

* **calibration test**: alert on a day whose test of calibration has
  ``p_value <= alpha`` (``report.frame().query("p_value <= 0.001")``);
* **change test**: alert on a day when the last 7 days differ from a
  30-day reference period, ``change_test(reference, last_7).p_value <= alpha``
  (checked weekly, on non-overlapping weeks, for the false-alarm rate).

For each: the false-alarm rate on calibrated streams of 365 daily windows
(alarms per window, with a 95 % Clopper-Pearson interval over all windows of
all streams) and the detection delay (days from a known change of the
calibration to the first alarm) on streams whose calibration shifts on a
known day. Usage::

    python benchmarks/bench_monitoring.py --streams 2 --per-day 1000
"""

from __future__ import annotations

import argparse
import copy
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


def calibration_rule(mon, alpha, rng, days=None):
    """Alarms of the daily test of calibration on the windows ``days``."""
    sub = mon if days is None else copy.copy(mon)
    if days is not None:
        sub.accumulators_ = {d: mon.accumulators_[d] for d in days}
    report = sub.report(
        n_bootstrap=0, n_resamples=int(round(1 / alpha)) - 1, random_state=rng
    )
    return report.p_value <= alpha


def change_rule(mon, alpha, rng, days, reference=30, recent=7):
    """Alarms of the change test of the 7 days up to each of ``days`` against
    the first 30 days."""
    ref = list(range(reference))
    n_res = int(round(1 / alpha)) - 1
    return np.array(
        [
            mon.change_test(
                ref,
                list(range(d - recent + 1, d + 1)),
                n_resamples=n_res,
                random_state=rng,
            ).p_value
            <= alpha
            for d in days
        ]
    )


def first_alarm(rule, mon, alpha, rng, start, horizon=60, step=5):
    """Days from ``start`` to the first alarm (checked ``step`` days at a
    time; inf if none within ``horizon``)."""
    for lo in range(start, min(start + horizon, 365), step):
        days = list(range(lo, min(lo + step, 365)))
        hits = np.flatnonzero(rule(mon, alpha, rng, days=days))
        if hits.size:
            return days[hits[0]] - start
    return np.inf


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", type=int, default=2)
    ap.add_argument("--per-day", type=int, default=1000)
    ap.add_argument("--alpha", type=float, default=0.001)
    ap.add_argument("--shift-day", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-daily-false-alarms",
        action="store_true",
        help="skip the false alarms of the daily test (365 reports a stream)",
    )
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    days = 365
    print(
        f"{args.streams} streams of {days} daily windows, {args.per_day} predictions "
        f"a day, alpha = {args.alpha:g}"
    )
    # the change test on non-overlapping weeks after the reference month
    weeks = list(range(36, days, 7))
    for name, rule, checked_days in (
        ("calibration test, every day", calibration_rule, None),
        ("change test, last 7 days vs first 30, weekly", change_rule, weeks),
    ):
        t0 = time.perf_counter()
        alarms = checked = 0
        skip = rule is calibration_rule and args.no_daily_false_alarms
        for _ in range(0 if skip else args.streams):
            mon = stream(rng, days, args.per_day)
            hits = rule(mon, args.alpha, rng, days=checked_days)
            alarms += int(hits.sum())
            checked += hits.size
        if skip:
            print(f"\n{name}: false alarms not measured this run", flush=True)
        else:
            lo, hi = clopper_pearson(alarms, checked)
            print(
                f"\n{name}: false alarms on calibrated streams {alarms} / {checked} "
                f"tests = {alarms / checked:.5f} (95% CI [{lo:.5f}, {hi:.5f}]; "
                f"alpha {args.alpha:g})",
                flush=True,
            )
        for power in (1.15, 1.3):
            delays = [
                first_alarm(
                    rule,
                    stream(rng, days, args.per_day, args.shift_day, power),
                    args.alpha,
                    rng,
                    args.shift_day,
                )
                for _ in range(args.streams)
            ]
            print(
                f"  shift to P(y=1|s) = s^{power} on day {args.shift_day}: detection "
                f"delay in days {delays} (median {np.median(delays):g})",
                flush=True,
            )
        print(f"  ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
