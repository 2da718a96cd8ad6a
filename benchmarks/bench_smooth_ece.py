"""SmoothECE speed and memory: skcalib vs relplot vs the np.bincount floor.

Run: python benchmarks/bench_smooth_ece.py [--max-n 1e7] [--repeat 3]
[--first-call-sizes 1e6,1e7]

All timings in one table are measured in the same run, interleaved, and the
best of ``--repeat`` runs is reported (the machine may be shared).

The first table is the first call of a fresh process (median of three
processes) and the steady state after it, for each path that numba can
compile (the binning of binary smECE; the top-label reduction and binning
of multiclass smECE), without numba (the default install), with numba under
skcalib's default rule (its loops are loaded only by a call that repays
their loading) and with ``SKCALIB_NUMBA=1`` (loaded at first use).
"""

import argparse
import os
import sys
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import first_calls, peak_mb, print_first_calls, race, row  # noqa: E402

from skcalib.metrics import smooth_calibration_curve, smooth_ece  # noqa: E402


def best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def make(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    y = (rng.uniform(size=n) < p**1.5).astype(np.float64)
    return y, p


def make_multiclass(n, K=10, seed=0):
    """Over-confident softmax scores of K classes and labels drawn from the
    tempered probabilities."""
    rng = np.random.default_rng(seed)
    logits = 2.0 * rng.standard_normal((n, K))
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    Q = np.exp(logits / 1.5)
    Q /= Q.sum(axis=1, keepdims=True)
    y = (Q.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return y, P


_SETUP = """
import numpy as np
from skcalib.metrics import smooth_ece
rng = np.random.default_rng(0)
n, K = {n}, 10
p = rng.beta(2, 2, size=n)
y = (rng.uniform(size=n) < p**1.5).astype(np.float64)
if {multiclass}:
    logits = 2.0 * rng.standard_normal((n, K))
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, K, size=n)
"""

# The paths numba can compile, as the public call that reaches each.
FIRST_CALLS = {
    "smECE, binary": (False, "smooth_ece(y, p)"),
    "smECE, top-label, K = 10": (True, "smooth_ece(y, P)"),
    "smECE, top-label logit, K = 10": (True, "smooth_ece(y, P, metric='logit')"),
}


def first_call_table(sizes, processes=3):
    """First call and steady state of each compiled path, with and without
    numba (see the module's docstring); returns the results by row."""
    cases = {}
    for n in sizes:
        for label, (multiclass, call) in FIRST_CALLS.items():
            setup = _SETUP.format(n=int(n), multiclass=multiclass)
            row_label = f"{label}, n = {n:.0e}"
            cases[row_label] = first_calls(setup, call, processes=processes)
    print_first_calls("first call of a fresh process, and steady state", cases)
    return cases


def _three_bincounts(y, p):
    idx = (p * 65536).astype(np.intp)
    w = np.ones_like(p)

    def floor():
        for col in (w, y, p):
            np.bincount(idx, weights=col, minlength=65537)

    return floor


def rows(full=False):
    """smECE rows for ``run_all.py``: binary scores, and the top-label logit
    smECE of a 10-class problem."""
    try:
        import relplot
    except ImportError:
        relplot = None
    out = []
    for n in [10**6, 10**7] if full else [10**6]:
        y, p = make(n)
        t = race(
            {
                "skcalib": lambda: smooth_ece(y, p),
                "relplot.smECE": (lambda: relplot.smECE(p, y)) if relplot else None,
                "3 bincounts": _three_bincounts(y, p),
            },
            3,
            once=("relplot.smECE",),
        )
        note = "" if relplot else "relplot not installed"
        if relplot:
            note = (
                f"|smECE - relplot| = {abs(smooth_ece(y, p) - relplot.smECE(p, y)):.1e}"
            )
        out.append(
            row(
                "smECE, binary",
                n,
                t,
                peer="relplot.smECE" if relplot else None,
                floor="3 bincounts",
                peak=peak_mb(lambda: smooth_ece(y, p)),
                note=note,
            )
        )
    n = 10**6
    y, P = make_multiclass(n)
    pred = P.argmax(axis=1)
    conf, correct = P.max(axis=1), (pred == y).astype(np.float64)
    bincounts = _three_bincounts(correct, conf)

    def bincounts_and_read():
        # The input is n x K values, not n: a floor that reads it once.
        bincounts()
        P.max()

    t = race(
        {
            "skcalib": lambda: smooth_ece(y, P, metric="logit"),
            "relplot.smECE": (lambda: relplot.smECE(conf, correct))
            if relplot
            else None,
            "3 bincounts": bincounts,
            "3 bincounts+max(P)": bincounts_and_read,
        },
        3,
        once=("relplot.smECE",),
    )
    note = f"{t['skcalib'] / t['3 bincounts']:.1f}x 3 bincounts of n alone"
    if relplot:
        note += "; relplot: l1 smECE of the top-label confidences"
    out.append(
        row(
            "smECE, top-label logit, K = 10",
            n,
            t,
            peer="relplot.smECE" if relplot else None,
            floor="3 bincounts+max(P)",
            peak=peak_mb(lambda: smooth_ece(y, P, metric="logit")),
            note=note,
        )
    )
    # The first call of a fresh process: with numba installed (the default
    # rule) against the default install, where relplot's column stands.
    for label, res in first_call_table([10**6], processes=1 if not full else 3).items():
        out.append(
            {
                "work": f"first call, {label.split(', n =')[0]}",
                "n": 10**6,
                "skcalib_s": res["numba"]["first"],
                "peer": "first call, no numba",
                "peer_s": res["no numba"]["first"],
                "floor": "",
                "floor_s": None,
                "peak_mb": res["numba"]["rss_mb"],
                "note": "fresh process; numba "
                + ("loaded" if res["numba"]["numba"] else "not loaded"),
            }
        )
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-n", type=float, default=1e7)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-relplot", action="store_true")
    ap.add_argument(
        "--first-call-sizes",
        default="1e6",
        help="sizes of the first-call table ('' to skip it)",
    )
    args = ap.parse_args()
    if args.first_call_sizes:
        first_call_table([int(float(x)) for x in args.first_call_sizes.split(",")])
        print()
    try:
        import relplot
    except ImportError:
        relplot = None
    if args.no_relplot:
        relplot = None

    print(
        f"{'n':>10} {'skcalib s':>10} {'relplot s':>10} {'speedup':>8} "
        f"{'3x bincount s':>14} {'ours/floor':>10} {'smECE':>8} {'relplot':>8}"
    )
    n = 10_000
    while n <= args.max_n:
        y, p = make(n)
        w = np.ones(n)
        t_ours = best_time(lambda: smooth_ece(y, p), args.repeat)
        # the floor: three weighted bincount passes over the same data, i.e.
        # the cost of just reading the scores once per sufficient statistic
        idx = (p * 65536).astype(np.intp)

        def floor():
            for col in (w, y, p):
                np.bincount(idx, weights=col, minlength=65537)

        t_floor = best_time(floor, args.repeat)
        ours = smooth_ece(y, p)
        if relplot is not None:
            t_rel = best_time(
                lambda: relplot.smECE(p, y), 1 if n >= 10**6 else args.repeat
            )
            rel = relplot.smECE(p, y)
            rel_s = f"{t_rel:10.4f} {t_rel / t_ours:8.1f}"
            rel_v = f"{rel:8.5f}"
        else:
            rel_s, rel_v = f"{'-':>10} {'-':>8}", f"{'-':>8}"
        print(
            f"{n:>10d} {t_ours:10.4f} {rel_s} {t_floor:14.4f} "
            f"{t_ours / t_floor:10.2f} {ours:8.5f} {rel_v}",
            flush=True,
        )
        n *= 10

    n = int(args.max_n)
    y, p = make(n)
    input_bytes = y.nbytes + p.nbytes
    tracemalloc.start()
    smooth_ece(y, p)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(
        f"\npeak extra memory of smooth_ece at n={n:.0e}: {peak / 2**20:.1f} MiB "
        f"= {peak / input_bytes:.2f} x the input arrays ({input_bytes / 2**20:.0f} MiB)"
    )

    n = 10**6
    y, p = make(n)
    for n_jobs in (1, 2):
        t0 = time.perf_counter()
        c = smooth_calibration_curve(
            y, p, n_bootstrap=200, random_state=0, n_jobs=n_jobs
        )
        t = time.perf_counter() - t0
        print(
            f"smooth_calibration_curve n=1e6, 200 bootstrap, n_jobs={n_jobs}: "
            f"{t:.2f} s "
            f"(smECE {c.smece:.4f}, CI {c.smece_ci[0]:.4f}-{c.smece_ci[1]:.4f})"
        )


if __name__ == "__main__":
    main()
