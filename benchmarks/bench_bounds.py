"""Tightness and speed of the certified calibration-error bounds.

For synthetic problems with exact ground truth (``skcalib.datasets``) and
sample sizes 1e4 ... --max-n, prints the gap ``upper - CE`` of the NW, TV
(total-variation denoising and isotonic) and Lipschitz-bucketing bounds, the
error ``|ECE_15 - CE|`` of the 15-bin ECE, the empirical log-log rate of each
column, and the wall time of each bound.

With ``--before REV`` the same table is computed a second time with the
package as it was at git revision ``REV`` (extracted to a temporary folder and
run in a subprocess), and both gaps are printed side by side. The total-
variation estimation term is also printed in its two forms (the basic
inequality and the first-order optimality condition) at each n.

Run:  python benchmarks/bench_bounds.py [--max-n 1e7] [--h 0.015625]
                                         [--before REV] [--problems u2,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

from skcalib.datasets import make_calibration_problem
from skcalib.metrics import calibration_error_bound

try:
    from skcalib.metrics import binned_calibration_error
except ImportError:  # pragma: no cover - older checkouts

    def binned_calibration_error(y_true, y_proba, n_bins=15):
        idx = np.minimum((y_proba * n_bins).astype(int), n_bins - 1)
        cnt = np.bincount(idx, minlength=n_bins)
        gap = np.bincount(idx, weights=y_proba - y_true, minlength=n_bins)
        return float(np.abs(gap).sum() / cnt.sum())


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def run_problem(problem, sizes, h, seed, quiet=False):
    rows = []
    for n in sizes:
        d = make_calibration_problem(
            n, problem=problem, perturbation_scale=h, random_state=seed
        )
        y, s, ce = d.y_true, d.y_proba, d.calibration_error
        methods = {
            "NW": dict(method="nw", perturbation_scale=h),
            "TV": dict(method="tv", variation=max(1.0, d.total_variation)),
            "Lipschitz": dict(method="lipschitz", perturbation_scale=h),
        }
        if d.total_variation <= 1.0:
            methods["TV-iso"] = dict(method="tv", assume="monotone")
        row = {"n": n, "ce": ce}
        for name, kw in methods.items():
            upper, t = timed(calibration_error_bound, y, s, random_state=0, **kw)
            row[name] = (upper - ce, t)
        ece, t = timed(binned_calibration_error, y, s, n_bins=15)
        row["ECE15"] = (abs(ece - ce), t)
        # Yardstick measured in the same run: one stable argsort of the scores,
        # a step every bound needs, so that times can be read as multiples of it
        # on a loaded machine.
        row["sort"] = timed(np.argsort, s, kind="stable")[1]
        rows.append(row)
        if not quiet:
            print(format_row(row), flush=True)
    return rows


COLUMNS = ["NW", "TV", "TV-iso", "Lipschitz", "ECE15"]


def format_row(row):
    cells = [f"{row['n']:>9.0e}", f"{row['ce']:.4f}"]
    for c in COLUMNS:
        if c in row:
            gap, t = row[c]
            cells.append(f"{gap:8.4f} ({t:6.2f}s)")
        else:
            cells.append(f"{'-':>18s}")
    cells.append(f"{row['sort']:6.2f}s")
    return " | ".join(cells)


def rates(rows):
    out = []
    logn = np.log([r["n"] for r in rows])
    for c in COLUMNS:
        if c not in rows[0] or len(rows) < 2:
            continue
        gaps = np.array([max(r[c][0], 1e-12) for r in rows])
        out.append(f"{c}: {np.polyfit(logn, np.log(gaps), 1)[0]:+.2f}")
    return ", ".join(out)


def tv_terms_table(sizes, delta=0.05, n_splits=5):
    """TVB from the basic inequality and from the optimality condition."""
    print("\n== total-variation estimation term TVB (V = 1, training part 4n/5) ==")
    print("        n | basic inequality | optimality condition")
    for n in sizes:
        m = int(0.8 * n)
        d = delta / n_splits / 3
        t1 = np.sqrt(np.log(4 / d) / 2)
        t2 = np.sqrt(m * np.log(4 * (m - 1) / d) / 8)
        basic = np.sqrt((2 * t1**2 + 2 * t1 * np.sqrt(t1**2 + 4 * t2) + 4 * t2) / m)
        optimality = np.sqrt(
            (t1**2 / 2 + t1 / 2 * np.sqrt(t1**2 + 8 * t2) + 2 * t2) / m
        )
        print(f"{n:>9.0e} | {basic:16.4f} | {optimality:20.4f}")


def rows_at_revision(rev, args):
    """The gap rows of every problem, computed with the package at ``rev``."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "-C", str(repo), "archive", rev, "skcalib"],
            check=True,
            capture_output=True,
        ).stdout
        archive_path = Path(tmp) / "src.tar"
        archive_path.write_bytes(archive)
        with tarfile.open(archive_path) as tar:
            tar.extractall(tmp, filter="data")
        cmd = [sys.executable, str(Path(__file__).resolve()), "--json"]
        cmd += ["--max-n", str(args.max_n), "--h", str(args.h)]
        cmd += ["--problems", args.problems, "--seed", str(args.seed)]
        env = dict(os.environ, PYTHONPATH=tmp)
        out = subprocess.run(
            cmd, check=True, capture_output=True, text=True, cwd=tmp, env=env
        ).stdout
    return json.loads(out.splitlines()[-1])


def before_after(rev, args, sizes):
    before = rows_at_revision(rev, args)
    print(f"\n== gap (upper - true CE) before ({rev}) -> now ==")
    for problem in args.problems.split(","):
        now = run_problem(problem, sizes, args.h, args.seed, quiet=True)
        print(f"\n-- problem {problem!r} --")
        names = [c for c in COLUMNS[:-1] if c in now[0]]
        print("        n | " + " | ".join(f"{c:>22s}" for c in names))
        for old, new in zip(before[problem], now, strict=True):
            cells = [
                f"{old[c][0]:8.4f} -> {new[c][0]:8.4f}" if c in old else "-"
                for c in names
            ]
            print(f"{new['n']:>9.0e} | " + " | ".join(f"{c:>22s}" for c in cells))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--max-n", type=float, default=1e7)
    p.add_argument("--h", type=float, default=2.0**-6, help="perturbation scale")
    p.add_argument("--problems", default="u2,wiggle,overconfident")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--before", default=None, help="git revision to compare with")
    p.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    sizes = [int(10**k) for k in range(4, 8) if 10**k <= args.max_n]
    if args.json:
        rows = {
            problem: run_problem(problem, sizes, args.h, args.seed, quiet=True)
            for problem in args.problems.split(",")
        }
        print(json.dumps(rows))
        return
    print(
        f"h = {args.h:g}, cores = {os.cpu_count()}, "
        f"load average = {os.getloadavg()[0]:.1f}"
    )
    print("gap = upper bound - true CE (ECE15: |15-bin ECE - true CE|), wall time;")
    print("argsort = time of one stable argsort of the n scores (yardstick)")
    header = ["n", "true CE"] + COLUMNS + ["argsort"]
    for problem in args.problems.split(","):
        print(f"\n== problem {problem!r} ==")
        print(" | ".join(f"{h:>18s}" if i > 1 else h for i, h in enumerate(header)))
        rows = run_problem(problem, sizes, args.h, args.seed)
        print(f"empirical log-log rate of the gap vs n: {rates(rows)}")
        last = rows[-1]
        ratios = ", ".join(
            f"{c}: {last[c][1] / last['sort']:.1f}x" for c in COLUMNS if c in last
        )
        print(f"time at n = {last['n']:.0e} in multiples of one argsort: {ratios}")
    tv_terms_table(sizes)
    if args.before:
        before_after(args.before, args, sizes)


if __name__ == "__main__":
    main()
