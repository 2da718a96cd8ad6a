"""The public metrics of two source trees, timed side by side.

Run: ``python benchmarks/bench_revisions.py BEFORE AFTER [--rounds 5]``,
where BEFORE and AFTER are directories holding a ``skcalib`` package (two
checkouts, e.g. ``git worktree add /tmp/before REV``). Each round runs one
child process per tree, alternating A B A B ..., and every child times each
call once after a warm-up; the table gives the minimum over rounds and the
ratio AFTER / BEFORE (above 1: AFTER is slower). Only default calls are
timed (no option whose name changed), so any two revisions compare.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, time
import numpy as np
import skcalib.metrics as m

rng = np.random.default_rng(0)
n = 10**6
p = rng.uniform(size=n)
y = (rng.uniform(size=n) < p**1.3).astype(int)
P = rng.dirichlet(np.ones(10), size=10**5)
y10 = (rng.uniform(size=(10**5, 1)) > P.cumsum(axis=1)).sum(axis=1).clip(0, 9)
Pm = rng.dirichlet(np.ones(10), size=n)
y10m = (rng.uniform(size=(n, 1)) > Pm.cumsum(axis=1)).sum(axis=1).clip(0, 9)
ys, ps = y[:200_000], p[:200_000]
yk, pk = y[:5000], p[:5000]
calls = {
    "smooth_ece 1e6": lambda: m.smooth_ece(y, p),
    "smooth_ece top-label 1e5 x 10": lambda: m.smooth_ece(y10, P),
    "smooth_ece top-label 1e6 x 10": lambda: m.smooth_ece(y10m, Pm),
    "smooth_ece top-label logit 1e6 x 10": lambda: m.smooth_ece(
        y10m, Pm, metric="logit"
    ),
    "binned uniform 1e6": lambda: m.binned_calibration_error(y, p),
    "binned quantile 1e6": lambda: m.binned_calibration_error(
        y, p, strategy="quantile"
    ),
    "smooth curve 1e6 (no bootstrap)": lambda: m.smooth_calibration_curve(
        y, p, n_bootstrap=0
    ),
    "kde_calibration_error 5e3": lambda: m.kde_calibration_error(yk, pk),
    "calibration_error_bound TV 2e5": lambda: m.calibration_error_bound(
        ys, ps, random_state=0
    ),
}
out = {}
for name, call in calls.items():
    call()
    t = time.perf_counter()
    call()
    out[name] = time.perf_counter() - t
print(json.dumps(out))
"""


def _run(tree):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    # -P: without it ``python -c`` puts the working directory first on
    # sys.path, and run from inside a checkout both children would import
    # that checkout's package instead of the tree given.
    proc = subprocess.run(
        [sys.executable, "-P", "-c", CHILD], env=env, capture_output=True, text=True
    )
    if proc.returncode:
        raise SystemExit(f"{tree}: {proc.stderr.strip().splitlines()[-1]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    best = {}
    for _ in range(args.rounds):
        for tree in (args.before, args.after):
            for name, t in _run(tree).items():
                key = (tree, name)
                best[key] = min(best.get(key, float("inf")), t)
    names = [name for tree, name in best if tree == args.before]
    print(f"{'call':34s} {'before s':>9s} {'after s':>9s} {'ratio':>6s}")
    for name in names:
        a, b = best[(args.before, name)], best[(args.after, name)]
        print(f"{name:34s} {a:9.4f} {b:9.4f} {b / a:6.2f}")


if __name__ == "__main__":
    main()
