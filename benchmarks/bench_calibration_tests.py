"""Calibration tests: size and power against peers, and the resampling cost.

Run: python benchmarks/bench_calibration_tests.py [--full] [--no-power]

1. Power table: rejection rate at level 0.05 of every test of
   ``calibration_test`` and of the same tests in MAPIE (Spiegelhalter,
   Kolmogorov-Smirnov, Kuiper) and pycaleva (Hosmer-Lemeshow, Spiegelhalter's
   z), on the same data: scores ``s ~ U(0.02, 0.98)`` and labels drawn from
   ``q(s)``, with ``q = s`` (size under H0), over-confident predictions
   (``logit q = 0.6 logit s``), under-confident ones (``logit q = 1.6 logit
   s``) and a local wiggle (``q = s + 0.1 exp(-(s - 0.7)^2 / (2 0.04^2))``).
   model-diagnostics has no calibration test (its ``decompose`` is timed
   against :func:`score_decomposition` below).
2. Timings, interleaved and best of ``--repeat``: the SmoothECE consistency
   test at ``n = 10**6`` (1000 resamples with ``--full``) next to its floor
   (the label draws and one bincount per resample), and the single tests
   next to their peers.

``rows(full)`` returns the timing lines as dicts (keys ``work, n,
skcalib_s, peer, peer_s, floor, floor_s, peak_mb, note``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
import tracemalloc
import warnings

import numpy as np
from scipy import special

from skcalib.metrics import calibration_test, score_decomposition

ALPHA = 0.05


def make(n, alternative, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    lg = np.log(s / (1 - s))
    if alternative == "H0":
        q = s
    elif alternative == "over-confident":
        q = special.expit(0.6 * lg)
    elif alternative == "under-confident":
        q = special.expit(1.6 * lg)
    elif alternative == "wiggle":
        q = np.clip(s + 0.1 * np.exp(-0.5 * ((s - 0.7) / 0.04) ** 2), 0, 1)
    else:
        raise ValueError(alternative)
    y = (rng.uniform(size=n) < q).astype(int)
    return y, s


def _skcalib_tests(n_resamples):
    def t(method, **kw):
        def run(y, s, seed):
            return calibration_test(
                y, s, method=method, n_resamples=n_resamples, random_state=seed, **kw
            ).pvalue

        return run

    return {
        "consistency smECE": t("consistency"),
        "consistency ECE": t("consistency", statistic="binned_ece"),
        "spiegelhalter": t("spiegelhalter"),
        "hosmer-lemeshow": t("hosmer-lemeshow"),
        "ks": t("ks"),
        "kuiper": t("kuiper"),
        "skce": t("skce"),
        "skce-linear": t("skce-linear"),
    }


def _peer_tests():
    out = {}
    try:
        from mapie.metrics import calibration as mc

        out["MAPIE spiegelhalter"] = lambda y, s, seed: mc.spiegelhalter_p_value(y, s)
        out["MAPIE ks"] = lambda y, s, seed: mc.kolmogorov_smirnov_p_value(y, s)
        out["MAPIE kuiper"] = lambda y, s, seed: mc.kuiper_p_value(y, s)
    except ImportError:
        print("# MAPIE not installed: its tests are skipped")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from pycaleva import CalibrationEvaluator

        def hl(y, s, seed):
            ce = CalibrationEvaluator(y, s, outsample=True, n_groups=10)
            return ce.hosmerlemeshow(verbose=False).pvalue

        def z(y, s, seed):
            ce = CalibrationEvaluator(y, s, outsample=True, n_groups=10)
            return ce.z_test().pvalue

        out["pycaleva hosmer-lemeshow"] = hl
        out["pycaleva z"] = z
    except ImportError:
        print("# pycaleva not installed: its tests are skipped")
    return out


def power_table(sizes, reps, n_resamples, skip=(), only=()):
    alternatives = ["H0", "over-confident", "under-confident", "wiggle"]
    tests = {**_skcalib_tests(n_resamples), **_peer_tests()}
    tests = {k: v for k, v in tests.items() if not any(s in k for s in skip)}
    if only:
        tests = {k: v for k, v in tests.items() if any(s in k for s in only)}
    header = f"{'test':<26}{'n':>6}" + "".join(f"{a:>17}" for a in alternatives)
    print(
        f"# rejection rate at level {ALPHA}, {reps} data sets per cell, "
        f"{n_resamples} resamples for the resampling tests"
    )
    print(header)
    for name, fn in tests.items():
        for n in sizes:
            if name == "skce" and n > 5000:
                continue
            cells = []
            for alt in alternatives:
                rej = 0
                for r in range(reps):
                    y, s = make(n, alt, seed=10_000 * sizes.index(n) + r)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        with contextlib.redirect_stdout(io.StringIO()):
                            p = fn(y, s, r)
                    rej += p <= ALPHA
                cells.append(rej / reps)
            print(
                f"{name:<26}{n:>6}" + "".join(f"{c:>17.3f}" for c in cells), flush=True
            )


def best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def peak_mb(fn):
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def _floor(y, s, n_resamples):
    """The least any consistency test does: draw the labels and bin them."""
    rng = np.random.default_rng(0)
    idx = (s * 65536).astype(np.intp)

    def run():
        for _ in range(n_resamples):
            m = rng.random(s.shape[0]) < s
            np.bincount(idx, weights=m, minlength=65537)

    return run


def rows(full=False, repeat=None):
    """Timing lines (see the module docstring)."""
    repeat = repeat or (3 if full else 2)
    n_res = 1000 if full else 100
    n = 10**6
    out = []
    y, s = make(n, "H0", 0)

    def ours():
        calibration_test(y, s, n_resamples=n_res, random_state=0, n_jobs=2)

    floor = _floor(y, s, n_res)
    t_ours, t_floor = np.inf, np.inf
    for _ in range(repeat):  # interleaved
        t_ours = min(t_ours, best_time(ours, 1))
        t_floor = min(t_floor, best_time(floor, 1))
    out.append(
        dict(
            work=f"consistency test, smECE, {n_res} resamples, n_jobs=2",
            n=n,
            skcalib_s=t_ours,
            peer=None,
            peer_s=None,
            floor=f"{n_res} label draws + bincount, 1 core",
            floor_s=t_floor,
            peak_mb=peak_mb(
                lambda: calibration_test(y, s, n_resamples=10, random_state=0)
            ),
            note="no peer resamples labels; peak of 10 resamples in one process",
        )
    )
    peers = _peer_tests()
    for method, peer, m in [
        ("spiegelhalter", "MAPIE spiegelhalter", n),
        ("kuiper", "MAPIE kuiper", n),
        ("ks", "MAPIE ks", n),
        ("hosmer-lemeshow", "pycaleva hosmer-lemeshow", 10**5),
    ]:
        yy, ss = y[:m], s[:m]

        def run_ours(method=method, yy=yy, ss=ss):
            return calibration_test(yy, ss, method=method)

        fn = peers.get(peer)

        def run_peer(fn=fn, yy=yy, ss=ss):
            with contextlib.redirect_stdout(io.StringIO()):
                return fn(yy, ss, 0)

        t_o, t_p = np.inf, np.inf
        for _ in range(repeat):
            t_o = min(t_o, best_time(run_ours, 1))
            if fn is not None:
                t_p = min(t_p, best_time(run_peer, 1))
        p_o = run_ours().pvalue
        p_p = run_peer() if fn is not None else None
        out.append(
            dict(
                work=f"{method} test",
                n=m,
                skcalib_s=t_o,
                peer=peer if fn is not None else None,
                peer_s=t_p if fn is not None else None,
                floor=None,
                floor_s=None,
                peak_mb=peak_mb(run_ours),
                note=(
                    f"p-values {p_o:.4g} vs {p_p:.4g}"
                    + (" (MAPIE's is one-sided)" if method == "spiegelhalter" else "")
                    if fn is not None
                    else "peer not installed"
                ),
            )
        )
    try:
        from model_diagnostics.scoring import SquaredError, decompose
    except ImportError:
        decompose = None
    m = 10**6 if full else 2 * 10**5
    yy, ss = y[:m].astype(float), np.round(s[:m], 4)

    def ours_dc():
        return score_decomposition(yy, ss)

    def peer_dc():
        return decompose(yy, ss, scoring_function=SquaredError())

    t_o, t_p = np.inf, np.inf
    for _ in range(repeat):
        t_o = min(t_o, best_time(ours_dc, 1))
        if decompose is not None:
            t_p = min(t_p, best_time(peer_dc, 1))
    note = "peer not installed"
    if decompose is not None:
        diff = abs(ours_dc().miscalibration - peer_dc()["miscalibration"][0])
        note = f"|MCB difference| {diff:.1e}; scores rounded to 1e-4 (ties)"
    out.append(
        dict(
            work="CORP decomposition, Brier",
            n=m,
            skcalib_s=t_o,
            peer="model-diagnostics decompose" if decompose is not None else None,
            peer_s=t_p if decompose is not None else None,
            floor=None,
            floor_s=None,
            peak_mb=peak_mb(ours_dc),
            note=note,
        )
    )
    return out


def print_rows(rs):
    print(
        f"{'work':<52}{'n':>9}{'skcalib s':>11}{'peer s':>9}{'floor s':>9}"
        f"{'peak MB':>9}  peer / floor / note"
    )
    for r in rs:
        peer_s = "" if r["peer_s"] is None else f"{r['peer_s']:.3f}"
        floor_s = "" if r["floor_s"] is None else f"{r['floor_s']:.3f}"
        extra = " / ".join(str(x) for x in (r["peer"], r["floor"], r["note"]) if x)
        print(
            f"{r['work']:<52}{r['n']:>9}{r['skcalib_s']:>11.3f}{peer_s:>9}"
            f"{floor_s:>9}{r['peak_mb']:>9.1f}  {extra}",
            flush=True,
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--no-power", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--sizes", type=int, nargs="*", default=None)
    ap.add_argument(
        "--only", nargs="*", default=(), help="keep only tests whose name has these"
    )
    ap.add_argument(
        "--skip", nargs="*", default=(), help="leave out tests whose name has these"
    )
    args = ap.parse_args()
    if not args.no_timing:
        print_rows(rows(args.full))
    if not args.no_power:
        reps = args.reps or (500 if args.full else 100)
        sizes = args.sizes or ([500, 2000, 10000] if args.full else [500, 2000])
        power_table(
            sizes, reps, 199 if args.full else 99, skip=args.skip, only=args.only
        )


if __name__ == "__main__":
    main()
