"""calibration_summary speed: skcalib vs R's rms::val.prob vs the np.sort floor.

Run: python benchmarks/bench_summary.py [--full] [--repeat 3]

The summary (loess curve, two logistic fits, C) and R's val.prob on the same
scores, plus the kernel curve (``curve="smooth"``) and the cost of sorting
the scores once. R is timed inside R (``system.time`` of the call alone, the
data already read), once per size; it is skipped if ``Rscript`` or ``rms``
is missing. skcalib's first call in this process is included in its best.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import peak_mb, race, row  # noqa: E402

from skcalib.metrics import calibration_summary  # noqa: E402

R_TIMER = """
suppressPackageStartupMessages(library(rms))
d <- read.csv("{path}")
t <- system.time(v <- val.prob(d$p, d$y, pl = FALSE))[["elapsed"]]
cat(sprintf("%.6f %.17g %.17g\\n", t, v[["Eavg"]], v[["Slope"]]))
"""


def make(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 5, size=n)
    y = (rng.uniform(size=n) < p**0.8).astype(np.float64)
    return y, p


def r_val_prob(y, p):
    """``(seconds, Eavg, Slope)`` of val.prob in R, or None without R."""
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "data.csv")
        np.savetxt(
            path, np.column_stack([p, y]), delimiter=",", header="p,y", comments=""
        )
        run = subprocess.run(
            ["Rscript", "-e", R_TIMER.format(path=path)],
            capture_output=True,
            text=True,
            check=False,
        )
    if run.returncode:
        return None
    t, eavg, slope = map(float, run.stdout.split())
    return t, eavg, slope


def rows(full=False, repeat=3):
    sizes = [10_000, 100_000, 1_000_000] + ([3_000_000] if full else [])
    out = []
    for n in sizes:
        y, p = make(n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = calibration_summary(y, p)
            times = race(
                {
                    "skcalib": lambda y=y, p=p: calibration_summary(y, p),
                    "smooth curve": lambda y=y, p=p: calibration_summary(
                        y, p, curve="smooth"
                    ),
                    "np.sort": lambda p=p: np.sort(p),
                },
                repeat=repeat,
            )
        r = r_val_prob(y, p)
        note = "R not available"
        if r is not None:
            times["R val.prob"] = r[0]
            note = (
                f"ICI - R Eavg {ours.ici - r[1]:+.1e}, "
                f"slope - R {ours.slope - r[2]:+.1e}; "
                f"smooth curve {times['smooth curve']:.2f} s"
            )
        out.append(
            row(
                "calibration_summary",
                n,
                times,
                peer="R val.prob" if r is not None else None,
                floor="np.sort",
                peak=peak_mb(lambda y=y, p=p: calibration_summary(y, p)),
                note=note,
            )
        )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="add 3e6 rows")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{'n':>9}  {'skcalib s':>9}  {'R s':>8}  {'ratio':>6}  "
        f"{'/sort':>6}  {'peak MB':>7}  note"
    )
    for r in rows(args.full, args.repeat):
        ratio = r["skcalib_s"] / r["peer_s"] if r["peer_s"] else float("nan")
        r_s = f"{r['peer_s']:8.2f}" if r["peer_s"] else f"{'-':>8}"
        print(
            f"{r['n']:>9}  {r['skcalib_s']:9.3f}  {r_s}  {ratio:6.3f}  "
            f"{r['skcalib_s'] / r['floor_s']:6.1f}  {r['peak_mb']:7.1f}  {r['note']}",
            flush=True,
        )


if __name__ == "__main__":
    main()
