"""Calibration tests: size, power against peers, and the cost of exact p-values.

Run: python benchmarks/bench_calibration_tests.py [--size] [--power] [--timing]
     [--reps R] [--write]

With no section named, all three run (hours: the size table is ~1700
cells). ``--write`` saves each table to ``doc/user_guide/`` where the user
guide includes it (``calibration_tests_size.txt``, ``..._power.txt``,
``..._timing.txt``).

1. Size table: the rejection rate of every method of ``calibration_test``
   at its defaults (``pvalue_method="auto"``) under the exact null
   hypothesis, labels drawn from the scores, at alpha = 0.05 and 0.01, for
   four score laws (continuous U(0, 1); 10 discrete values; near 0 and 1,
   Beta(0.2, 0.2); rare positives, Beta(0.5, 200)) x n (30, 100, 1000,
   10000 observations) x three kinds of weights: none; frequency (n / 2
   rows with counts in {1, 2, 3}, each count's labels drawn separately,
   then aggregated into a positive and a negative row per score: read with
   the default, one label per row, which is conservative for counts); and
   importance (w in {1, 2, 3} drawn independently of scores and labels,
   one label per row). Each cell has ``--reps`` data sets (1000) and each
   exact p-value 99 resamples: its validity is a theorem given the
   exchangeability of the observed and the drawn labels, so the table
   checks that the code draws from the right law and breaks ties the right
   way, and alpha = 0.01 and 0.05 are multiples of 1 / (99 + 1). The tests
   whose p-value is always exact (the SmoothECE consistency test, the
   quadratic SKCE, which stops at n = 1000) get a minute per cell and at
   least 200 data sets: the SmoothECE of rare positives needs a fine grid
   (its bandwidth is small), 1-3 s per test at 99 resamples. A rate
   above the upper end of the central 95 % interval of Binomial(reps,
   alpha) / reps is marked ``*``. ``exact %`` is the share of data sets on
   which "auto" simulated the p-value. With ~700 rates, a test of exact size
   lands above its band in ~2.5 % of them by chance: the flagged cells are
   run again on independent data sets, and ``**`` marks a rate above the
   family-wise band (Bonferroni). A second table shows the non-default
   settings that the defaults avoid: the asymptotic laws forced, and
   importance weights read as frequencies.
2. Power table: rejection rate at level 0.05 against over-confidence
   (``logit q = 0.8 logit s``), under-confidence (``1.25 logit s``), a shift
   (``logit s + 0.25``) and a local wiggle (``q = s + 0.06 exp(-(s - 0.7)^2
   / (2 0.04^2))``), scores ``s ~ U(0.02, 0.98)``, next to the same tests in
   pycaleva (Hosmer-Lemeshow, Pigeon-Heyse, Spiegelhalter's z) and MAPIE
   (Spiegelhalter, Kolmogorov-Smirnov, Kuiper).
3. Timing: exact p-values with 999 resamples at n = 1e6, ``n_jobs=2``, each
   test in a fresh process (the first call, with its imports and numba's
   cache load, is the one timed), with numba and without (the default
   install), next to the time of one weighted ``np.bincount`` over the same
   n in the same process: the machine is shared, and the ratio is what
   carries over.

``rows(full)`` returns timing lines for ``run_all.py`` (keys ``work, n,
skcalib_s, peer, peer_s, floor, floor_s, peak_mb, note``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
import tracemalloc
import warnings

import numpy as np
from scipy import special, stats

from skcalib.metrics import calibration_test, score_decomposition

# run_all.py also runs this module without numba
NUMBA_MATTERS = True
HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "doc", "user_guide")

LAWS = ["continuous", "discrete", "near 0/1", "rare"]
SIZES = [30, 100, 1000, 10000]
WEIGHTS = ["none", "frequency", "importance"]
METHODS = [
    ("consistency", {}),
    ("spiegelhalter", {}),
    ("hosmer-lemeshow", {}),
    ("pigeon-heyse", {}),
    ("ks", {}),
    ("kuiper", {}),
    ("skce", {}),
]
ALPHAS = (0.05, 0.01)
N_RESAMPLES = 99


def scores(law, n, rng):
    if law == "continuous":
        return rng.uniform(size=n)
    if law == "discrete":
        return (rng.integers(0, 10, n) + 0.5) / 10.0
    if law == "near 0/1":
        return rng.beta(0.2, 0.2, n)
    if law == "rare":
        return rng.beta(0.5, 200.0, n)
    raise ValueError(law)


def null_data(law, n, weights, rng):
    """``(y, s, w)`` of ``n`` observations under the null hypothesis."""
    if weights == "frequency":
        m = max(n // 2, 1)
        s = scores(law, m, rng)
        count = rng.integers(1, 4, m)
        pos = rng.binomial(count, s)
        y = np.r_[np.ones(m), np.zeros(m)]
        w = np.r_[pos, count - pos].astype(float)
        keep = w > 0
        return y[keep], np.r_[s, s][keep], w[keep]
    s = scores(law, n, rng)
    y = (rng.uniform(size=n) < s).astype(float)
    if weights == "importance":
        return y, s, rng.integers(1, 4, n).astype(float)
    return y, s, None


def _band(reps, alpha):
    lo, hi = stats.binom.ppf([0.025, 0.975], reps, alpha)
    return lo / reps, hi / reps


def size_cell(method, kw, law, n, weights, reps, seed, budget=None, least=None):
    """Rejection counts at ALPHAS, the number of exact p-values and of data
    sets: ``reps``, or fewer (at least ``least``) once ``budget`` seconds
    are spent."""
    counts = np.zeros(len(ALPHAS), dtype=int)
    exact = 0
    start = time.perf_counter()
    for r in range(reps):
        if budget and r >= least and time.perf_counter() - start > budget:
            return counts, exact, r
        rng = np.random.default_rng([seed, r])
        y, s, w = null_data(law, n, weights, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = calibration_test(
                y,
                s,
                method=method,
                sample_weight=w,
                n_resamples=N_RESAMPLES,
                random_state=r,
                **kw,
            )
        counts += [res.pvalue <= a for a in ALPHAS]
        exact += res.pvalue_method == "exact"
    return counts, exact, reps


# The tests whose p-value is always exact (a theorem, given the draws) get a
# time budget per cell: at least 200 data sets, up to --reps.
EXACT_ONLY = ("consistency", "skce")
BUDGET_S, LEAST = 60.0, 200


def _cell_line(method, law, weights, n, k, counts, exact, alpha_count=None):
    """A row of the size table, with ``*`` above the 95 % band of alpha and
    ``**`` above the family-wise band (Bonferroni over ``alpha_count``)."""
    cells, flags = "", []
    for a, c in zip(ALPHAS, counts, strict=True):
        rate = c / k
        flag = ""
        if rate > _band(k, a)[1]:
            flag = "*"
            if alpha_count and c > stats.binom.ppf(1 - 0.05 / alpha_count, k, a):
                flag = "**"
        flags.append(flag)
        cells += f"{rate:>7.3f}{flag:<2}"
    line = f"{method:<16}{law:<11}{weights:<11}{n:>6}{k:>6}{cells}"
    return line + f"{100 * exact / k:>8.0f}%", flags


def size_table(reps, out, *, laws=LAWS, sizes=SIZES, methods=METHODS):
    """The size table; returns the cells flagged ``*`` (to replicate)."""
    cells = [
        (m_i, method, kw, l_i, law, w_i, weights, n)
        for m_i, (method, kw) in enumerate(methods)
        for l_i, law in enumerate(laws)
        for w_i, weights in enumerate(WEIGHTS)
        for n in sizes
        if not (method == "skce" and n > 1000)  # O(n^2) per resample
    ]
    n_tests = len(cells) * len(ALPHAS)
    out(
        "Size at the defaults: rejection rate of calibrated models "
        f"(alpha = {ALPHAS[0]} / {ALPHAS[1]}), {N_RESAMPLES} resamples per "
        "exact p-value; * above the 95 % binomial band of alpha, ** above the "
        f"family-wise band (Bonferroni over the {n_tests} rates)"
    )
    head = f"{'method':<16}{'law':<11}{'weights':<11}{'n':>6}{'reps':>6}"
    head += f"{'a=0.05':>9}{'a=0.01':>9}{'exact %':>9}"
    out(head)
    flagged, strong = [], 0
    for m_i, method, kw, l_i, law, w_i, weights, n in cells:
        seed = 1000 * m_i + 100 * l_i + 10 * w_i + sizes.index(n)
        cap = (BUDGET_S, LEAST) if method in EXACT_ONLY else (None, None)
        counts, exact, k = size_cell(method, kw, law, n, weights, reps, seed, *cap)
        line, flags = _cell_line(method, law, weights, n, k, counts, exact, n_tests)
        out(line)
        strong += flags.count("**")
        if any(flags):
            flagged.append((method, kw, law, weights, n, k, seed))
    out(
        f"rates above the 95 % band: {len(flagged)} cells of {len(cells)} (a test "
        "of exact size lands there in 2.5 % of the rates by chance); above the "
        f"family-wise band: {strong}"
    )
    return flagged


def replicate(flagged, out):
    """The flagged cells again, on independent data sets."""
    if not flagged:
        return
    out("")
    out("The flagged cells on independent data sets (seed + 10**6):")
    for method, kw, law, weights, n, k, seed in flagged:
        counts, exact, _ = size_cell(method, kw, law, n, weights, k, seed + 10**6)
        out(_cell_line(method, law, weights, n, k, counts, exact)[0])


# Non-default settings, each next to the reason the default avoids it.
NON_DEFAULT = [
    ("spiegelhalter", {"pvalue_method": "asymptotic"}, "rare", "none", 30),
    ("spiegelhalter", {"pvalue_method": "asymptotic"}, "rare", "none", 1000),
    ("hosmer-lemeshow", {"pvalue_method": "asymptotic"}, "rare", "none", 30),
    ("hosmer-lemeshow", {"pvalue_method": "asymptotic"}, "rare", "none", 10000),
    ("hosmer-lemeshow", {"pvalue_method": "asymptotic"}, "near 0/1", "none", 100),
    ("pigeon-heyse", {"pvalue_method": "asymptotic"}, "rare", "none", 10000),
    ("ks", {"pvalue_method": "asymptotic"}, "rare", "none", 30),
    ("kuiper", {"pvalue_method": "asymptotic"}, "rare", "none", 1000),
    (
        "spiegelhalter",
        {"sample_weight_kind": "frequency"},
        "continuous",
        "importance",
        1000,
    ),
    (
        "hosmer-lemeshow",
        {"sample_weight_kind": "frequency"},
        "continuous",
        "importance",
        1000,
    ),
    ("kuiper", {"sample_weight_kind": "frequency"}, "continuous", "importance", 1000),
    (
        "spiegelhalter",
        {"sample_weight_kind": "frequency"},
        "continuous",
        "frequency",
        1000,
    ),
    (
        "hosmer-lemeshow",
        {"sample_weight_kind": "frequency"},
        "continuous",
        "frequency",
        1000,
    ),
    ("kuiper", {"sample_weight_kind": "frequency"}, "continuous", "frequency", 1000),
]


def non_default_table(reps, out):
    out("")
    out("Non-default settings (same design)")
    out(
        f"{'method':<16}{'setting':<28}{'law':<11}{'weights':<11}{'n':>6}"
        f"{'a=0.05':>9}{'a=0.01':>9}"
    )
    for i, (method, kw, law, weights, n) in enumerate(NON_DEFAULT):
        counts, _, _ = size_cell(method, kw, law, n, weights, reps, 90_000 + i)
        setting = ", ".join(f"{k}={v}" for k, v in kw.items()).replace(
            "sample_weight_kind", "kind"
        )
        cells = ""
        for a, c in zip(ALPHAS, counts, strict=True):
            flag = "*" if c / reps > _band(reps, a)[1] else ""
            cells += f"{c / reps:>7.3f}{flag:<2}"
        out(f"{method:<16}{setting:<28}{law:<11}{weights:<11}{n:>6}{cells}")


# ---------------------------------------------------------------- power

ALTERNATIVES = ["H0", "over-confident", "under-confident", "shift", "wiggle"]


def make(n, alternative, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    lg = np.log(s / (1 - s))
    if alternative == "H0":
        q = s
    elif alternative == "over-confident":
        q = special.expit(0.8 * lg)
    elif alternative == "under-confident":
        q = special.expit(1.25 * lg)
    elif alternative == "shift":
        q = special.expit(lg + 0.25)
    elif alternative == "wiggle":
        q = np.clip(s + 0.06 * np.exp(-0.5 * ((s - 0.7) / 0.04) ** 2), 0, 1)
    else:
        raise ValueError(alternative)
    y = (rng.uniform(size=n) < q).astype(int)
    return y, s


def _ours():
    def t(method, **kw):
        def run(y, s, seed):
            return calibration_test(
                y, s, method=method, n_resamples=199, random_state=seed, **kw
            ).pvalue

        return run

    return {
        "consistency smECE": t("consistency"),
        "consistency ECE": t("consistency", statistic="binned_ece"),
        "spiegelhalter": t("spiegelhalter"),
        "hosmer-lemeshow": t("hosmer-lemeshow"),
        "pigeon-heyse": t("pigeon-heyse"),
        "ks": t("ks"),
        "kuiper": t("kuiper"),
        "skce": t("skce"),
    }


def _peers():
    """Peer tests: a function of ``(y, s)`` returning ``{name: pvalue}``."""
    out = {}
    try:
        from mapie.metrics import calibration as mc

        def mapie(y, s):
            return {
                "MAPIE spiegelhalter": mc.spiegelhalter_p_value(y, s),
                "MAPIE ks": mc.kolmogorov_smirnov_p_value(y, s),
                "MAPIE kuiper": mc.kuiper_p_value(y, s),
            }

        out["mapie"] = mapie
    except ImportError:
        print("# MAPIE not installed: its tests are skipped")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            from pycaleva import CalibrationEvaluator

        def pycaleva(y, s):
            with contextlib.redirect_stdout(io.StringIO()):
                ce = CalibrationEvaluator(y, s, outsample=True, n_groups=10)
                return {
                    "pycaleva hosmer-lemeshow": ce.hosmerlemeshow(verbose=False).pvalue,
                    "pycaleva pigeon-heyse": ce.pigeonheyse(verbose=False).pvalue,
                    "pycaleva z": ce.z_test().pvalue,
                }

        out["pycaleva"] = pycaleva
    except ImportError:
        print("# pycaleva not installed: its tests are skipped")
    return out


def power_table(sizes, reps, out, alpha=0.05):
    ours, peers = _ours(), _peers()
    out(
        f"Power: rejection rate at level {alpha}, {reps} data sets per cell, "
        "199 resamples per exact p-value"
    )
    out(f"{'test':<26}{'n':>6}" + "".join(f"{a:>17}" for a in ALTERNATIVES))
    for n in sizes:
        rej = {}
        for a_i, alt in enumerate(ALTERNATIVES):
            for r in range(reps):
                y, s = make(n, alt, seed=[n, a_i, r])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    pv = {k: f(y, s, r) for k, f in ours.items() if not _skip(k, n)}
                    for f in peers.values():
                        pv.update(f(y, s))
                for k, p in pv.items():
                    rej.setdefault(k, np.zeros(len(ALTERNATIVES)))[a_i] += p <= alpha
        for k, counts in rej.items():
            out(f"{k:<26}{n:>6}" + "".join(f"{c / reps:>17.3f}" for c in counts))


def _skip(name, n):
    return name == "skce" and n > 2000


# ---------------------------------------------------------------- timing

_TIMED = """
import json, sys, time
if {no_numba}:
    sys.modules["numba"] = None
import numpy as np
from skcalib.metrics import calibration_test
n = {n}
rng = np.random.default_rng(0)
s = rng.uniform(size=n)
y = rng.uniform(size=n) < s
kw = {kw!r}
t0 = time.perf_counter()
res = calibration_test(y, s, n_resamples={b}, random_state=0, n_jobs=2, **kw)
t = time.perf_counter() - t0
idx = (s * 65536).astype(np.intp)
w = np.ones(n)
floor = np.inf
for _ in range(5):
    t1 = time.perf_counter()
    np.bincount(idx, weights=w, minlength=65537)
    floor = min(floor, time.perf_counter() - t1)
print(json.dumps(dict(t=t, floor=floor, p=res.pvalue, kind=res.pvalue_method)))
"""

TIMED = [
    ("spiegelhalter", {"method": "spiegelhalter", "pvalue_method": "exact"}),
    ("hosmer-lemeshow", {"method": "hosmer-lemeshow", "pvalue_method": "exact"}),
    ("pigeon-heyse", {"method": "pigeon-heyse", "pvalue_method": "exact"}),
    ("ks", {"method": "ks", "pvalue_method": "exact"}),
    ("kuiper", {"method": "kuiper", "pvalue_method": "exact"}),
    ("consistency (SmoothECE)", {}),
]


def fresh_process_time(kw, n, b, no_numba):
    code = _TIMED.format(no_numba=no_numba, n=n, kw=kw, b=b)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def timing_table(out, n=10**6, b=999):
    out(
        f"Exact p-values, {b} resamples at n = {n:.0e}, n_jobs=2, first call of "
        "a fresh process; floor: one weighted np.bincount over the same n"
    )
    out(f"{'test':<26}{'numba':<7}{'seconds':>9}{'floor ms':>10}{'/floor':>8}")
    for name, kw in TIMED:
        for no_numba in (False, True):
            r = fresh_process_time(kw, n, b, no_numba)
            out(
                f"{name:<26}{'no' if no_numba else 'yes':<7}{r['t']:>9.2f}"
                f"{1e3 * r['floor']:>10.2f}{r['t'] / r['floor']:>8.0f}"
            )


# ---------------------------------------------------------------- run_all


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


def rows(full=False, repeat=None):
    """Timing lines (see the module docstring)."""
    repeat = repeat or (3 if full else 2)
    n_res = 999 if full else 99
    n = 10**6
    y, s = make(n, "H0", 0)
    idx = (s * 65536).astype(np.intp)
    w = np.ones(n)

    def floor():
        for _ in range(n_res):
            np.bincount(idx, weights=w, minlength=65537)

    out = []
    for name, kw in TIMED:

        def ours(kw=kw):
            return calibration_test(y, s, n_resamples=n_res, random_state=0, **kw)

        t_o, t_f = np.inf, np.inf
        for _ in range(repeat):  # interleaved
            t_o = min(t_o, best_time(ours, 1))
            t_f = min(t_f, best_time(floor, 1))
        out.append(
            dict(
                work=f"exact {name}, {n_res} resamples",
                n=n,
                skcalib_s=t_o,
                peer=None,
                peer_s=None,
                floor=f"{n_res} weighted bincounts",
                floor_s=t_f,
                peak_mb=peak_mb(
                    lambda kw=kw: calibration_test(
                        y, s, n_resamples=10, random_state=0, **kw
                    )
                ),
                note="one core; peak of 10 resamples",
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


class _Tee:
    """Print lines and keep them for ``--write``."""

    def __init__(self):
        self.lines = []

    def __call__(self, line):
        print(line, flush=True)
        self.lines.append(line)

    def write(self, name):
        with open(os.path.join(DOC, name), "w", encoding="utf-8") as f:
            f.write("\n".join(self.lines) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", action="store_true")
    ap.add_argument("--power", action="store_true")
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--reps", type=int, default=1000, help="data sets per size cell")
    ap.add_argument("--power-reps", type=int, default=500)
    ap.add_argument("--write", action="store_true", help="save the tables")
    args = ap.parse_args()
    every = not (args.size or args.power or args.timing)
    t0 = time.perf_counter()
    if args.timing or every:
        tee = _Tee()
        timing_table(tee)
        if args.write:
            tee.write("calibration_tests_timing.txt")
    if args.power or every:
        tee = _Tee()
        power_table([200, 1000], args.power_reps, tee)
        if args.write:
            tee.write("calibration_tests_power.txt")
    if args.size or every:
        tee = _Tee()
        replicate(size_table(args.reps, tee), tee)
        non_default_table(args.reps, tee)
        if args.write:
            tee.write("calibration_tests_size.txt")
    print(f"wall time: {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
