"""Benchmark PerturbedClassifier.

0. The targets, for the default install (no numba; here the numpy passes,
   ``SKCALIB_NUMBA=0``), each measured side by side in one run:

   * overhead of ``predict_proba`` on realistic models, a
     HistGradientBoostingClassifier and a RandomForestClassifier, at 1e5 and
     1e6 rows of 20 features: at most 10 % (median of paired ratios);
   * on a LogisticRegression at 1e6 x 20, the time added to its
     ``predict_proba`` at most 1.5 times the NumPy floor of drawing the same
     noise: the uniform 64-bit words, the transcendental passes (``tan``,
     ``log``) and one add of the noise to the probabilities, one thread;
   * with the ``fast`` extra, the sampler never slower than without it, first
     call of a fresh process included: the first call and the steady state
     of ``perturb_proba`` and of ``PerturbedClassifier.predict_proba`` in
     fresh processes without numba, with numba under skcalib's default rule
     and with ``SKCALIB_NUMBA=1`` (median of three processes each), and the
     loaded compiled loops against the numpy passes in one process.

1. ``predict_proba`` overhead on 1e6 rows on top of a LogisticRegression,
   measured side by side in one run: median of the per-round ratios and
   ratio of the best times, with the compiled loops (numba, opted in) and
   with numpy passes only (as an install without numba runs: the noise is
   still drawn in the background); for a base model with logits ~ N(0, 1)
   (~0.03 % of the rows rejected at the default scale) and a confident one
   (logits spread 3 times more: ~8 % of the rows rejected and redrawn); then
   the parts
   alone. The noise (64 random bits and a double-precision ``h ln tan`` per
   proposal) is drawn in a background thread while the base model predicts,
   into a buffer that then receives the perturbed probabilities, rounded to
   the grid ``k / 2**24``, together with the proposals of the words that
   follow, which the redraw of rejected rows takes. With ``--old-rev REV``
   (default: the commit before the float64 sampler: float32 noise, 32 bits
   per proposal, no grid, written into the base model's output) the sampler
   of that revision is timed in the same rounds, from a copy of its package
   taken with ``git archive``. "cores" is CPU time over wall time: BLAS
   worker threads that keep spinning after a matrix product count there.
   Overheads are also given in CPU time (all threads) and in the caller's
   thread CPU time (the background noise left out): on a loaded machine
   they say more than wall times, and on an idle one the wall-time overhead
   lies between them.
2. Certified bound vs AUROC over perturbation scales on real datasets
   (breast cancer; digits as a binary "digit >= 5" problem), from
   :func:`skcalib.select_perturbation_scale`.

Run: ``python benchmarks/bench_perturbation.py [--rows N] [--features D]
[--old-rev REV | --old-rev ""] [--skip-targets] [--skip-details]
[--skip-table]``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info

from skcalib import PerturbedClassifier, select_perturbation_scale
from skcalib._backend.sech import sampler as sech_sampler
from skcalib._backend.sech.perturbation import perturb_proba, perturbation_noise_async
from skcalib._backend.sech.sampler import sech_noise, sech_sample
from skcalib.perturbation import DEFAULT_SCALE

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import first_calls, print_first_calls  # noqa: E402

# run_all.py runs rows() again with numba unimportable.
NUMBA_MATTERS = True

# The last commit with the float32 sampler.
OLD_REV = "d70e486"


@contextmanager
def _patched(module, **values):
    """Temporarily change module constants of a sampler (for comparisons)."""
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)


def _with(func, module=sech_sampler, **values):
    def run():
        with _patched(module, **values):
            return func()

    return run


@contextmanager
def _numba_mode(mode):
    """``SKCALIB_NUMBA`` set to ``mode`` ("0": numpy passes, "1": compiled
    loops from their steady size), restored on exit."""
    saved = os.environ.get("SKCALIB_NUMBA")
    os.environ["SKCALIB_NUMBA"] = mode
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SKCALIB_NUMBA"]
        else:
            os.environ["SKCALIB_NUMBA"] = saved


def _in_mode(func, mode):
    def run():
        with _numba_mode(mode):
            return func()

    return run


def _old_package(rev, where):
    """The ``skcalib`` package of ``rev``, imported as ``skcalib_old``.

    Its imports are relative, so a renamed copy loads beside the current one.
    """
    repo = Path(__file__).resolve().parents[1]
    archive = subprocess.run(
        ["git", "-C", str(repo), "archive", rev, "skcalib"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    Path(where, "skcalib").rename(Path(where, "skcalib_old"))
    sys.path.insert(0, where)
    return importlib.import_module("skcalib_old")


def _interleaved(runs, repeat):
    """Wall, CPU and caller's-thread CPU times of each run, interleaved so all
    see the same machine."""
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    caller = {name: [] for name in runs}
    for _ in range(repeat):
        for name, func in runs.items():
            w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
            func()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
            caller[name].append(time.thread_time() - t0)
    return tuple(
        {k: np.array(v) for k, v in times.items()} for times in (wall, cpu, caller)
    )


def _print_times(wall, cpu):
    for name in wall:
        cores = np.median(cpu[name] / wall[name])
        print(
            f"  {name:<48}: best {wall[name].min() * 1e3:7.2f} ms, median "
            f"{np.median(wall[name]) * 1e3:7.2f} ms   cores {cores:4.2f}"
        )


def _print_overheads(wall, cpu, caller, base="LogisticRegression"):
    # CPU time as well: on a machine shared with other work, wall times
    # mostly measure the other work, CPU time what each call costs. The
    # caller's thread CPU leaves out the noise drawn in the background: on an
    # idle machine the wall-time overhead lies between the two.
    lr, lr_cpu, lr_caller = wall[base], cpu[base], caller[base]
    for name, times in wall.items():
        if name == base:
            continue
        paired = np.median(times / lr) - 1.0
        best = times.min() / lr.min() - 1.0
        paired_cpu = np.median(cpu[name] / lr_cpu) - 1.0
        paired_caller = np.median(caller[name] / lr_caller) - 1.0
        print(
            f"  -> {name:<45}: overhead {100 * paired:5.1f} % (median of paired "
            f"ratios), {100 * best:5.1f} % (best times), {100 * paired_cpu:5.1f} "
            f"% (CPU time), {100 * paired_caller:5.1f} % (caller's thread CPU; "
            "medians of paired ratios)"
        )


# Logit spreads of the base models: today's, and a confident one.
SPREADS = {"logits ~ N(0, 1)": 1.0, "confident, logits ~ 3 N(0, 1)": 3.0}


def _model(n_rows, n_features, spread):
    """Data and a LogisticRegression fitted on it, with logits ~ spread
    N(0, 1); its PerturbedClassifier."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, n_features))
    beta = spread * rng.standard_normal(n_features) / np.sqrt(n_features)
    y = (rng.uniform(size=n_rows) < 1 / (1 + np.exp(-X @ beta))).astype(int)
    base = LogisticRegression().fit(X[:50_000], y[:50_000])
    clf = PerturbedClassifier(FrozenEstimator(base), random_state=0).fit(X, y)
    return X, y, base, clf


def _rejected_share(base, X):
    """Share of the rows whose first proposal falls outside [0, 1]."""
    p = base.predict_proba(X)[:, 1]
    noise = sech_noise(p.size, DEFAULT_SCALE, np.random.default_rng(1))
    s = p + noise
    return np.mean((s < 0.0) | (s > 1.0))


def bench_overhead(n_rows, n_features, repeat=60, old=None):
    blas = [
        f"{info['internal_api']}: {info['num_threads']} threads"
        for info in threadpool_info()
    ]
    print(
        f"predict_proba on {n_rows:,} rows x {n_features} features, "
        f"{repeat} interleaved rounds; cores = CPU time / wall time (median); "
        "target < 20 % overhead"
    )
    n_threads = sech_sampler._threads(n_rows, None)
    print(f"  thread pools: {', '.join(blas)}; sampler threads: {n_threads}")
    for label, spread in SPREADS.items():
        X, y, base, clf = _model(n_rows, n_features, spread)
        share = _rejected_share(base, X)
        print(f"\n  base model: {label}; {100 * share:.2f} % of the rows rejected")
        _bench_calls(X, y, base, clf, repeat, old)
    _bench_parts(base, X, n_rows, repeat, old)


def _bench_calls(X, y, base, clf, repeat, old):
    # 1. The user's view: the predict_proba calls side by side, alone in the
    # loop (other work in between changes the allocator's and the BLAS
    # threads' state, and with them the timings); then the same with the
    # samplers' numpy passes only (numba not installed: the compiled loops
    # are patched away, the noise is still drawn in the background).
    lr_run = {"LogisticRegression": lambda: base.predict_proba(X)}
    compiled = {
        "PerturbedClassifier, compiled": _in_mode(lambda: clf.predict_proba(X), "1")
    }
    passes = {
        "PerturbedClassifier, numpy passes": _in_mode(lambda: clf.predict_proba(X), "0")
    }
    if old is not None:
        old_clf = old.perturbation.PerturbedClassifier(
            FrozenEstimator(base), random_state=0
        ).fit(X, y)
        old_sampler = old._backend.sech_sampler
        compiled[f"old sampler ({old.rev})"] = lambda: old_clf.predict_proba(X)
        passes[f"old sampler ({old.rev}), numpy passes"] = _with(
            lambda: old_clf.predict_proba(X),
            old_sampler,
            # Old revisions' version takes (n, h).
            _sech_loops=lambda *args: None,
        )
    for variants in (compiled, passes):
        wall, cpu, caller = _interleaved({**lr_run, **variants}, repeat)
        _print_times(wall, cpu)
        _print_overheads(wall, cpu, caller)


def _bench_parts(base, X, n_rows, repeat, old=None):
    # 2. The parts, alone (the last base model).
    P = base.predict_proba(X)
    gen = np.random.default_rng(0)
    h = DEFAULT_SCALE

    def given_noise():
        noise = perturbation_noise_async(n_rows, 2, h, gen).result()
        start = time.perf_counter()
        perturb_proba(P, h, gen, noise=noise)
        return time.perf_counter() - start

    runs = {
        "sech_noise, compiled": _in_mode(lambda: sech_noise(n_rows, h, gen), "1"),
        "sech_noise, 1 thread": lambda: sech_noise(n_rows, h, gen, n_jobs=1),
        "sech_noise, numpy passes": _in_mode(lambda: sech_noise(n_rows, h, gen), "0"),
        "noise buffer in the background, waited for": lambda: perturbation_noise_async(
            n_rows, 2, h, gen
        ).result(),
        "perturb_proba, noise included": lambda: perturb_proba(P, h, gen),
        "sech_sample, noise included": lambda: sech_sample(P[:, 1], h, gen),
    }
    old_sampler = None if old is None else old._backend.sech_sampler
    if hasattr(old_sampler, "sech_noise"):
        # The noise of the old revision's sampler, in the same rounds.
        runs[f"old sampler ({old.rev}): sech_noise"] = lambda: old_sampler.sech_noise(
            n_rows, h, gen
        )
        runs[f"old sampler ({old.rev}): sech_noise, numpy passes"] = _with(
            lambda: old_sampler.sech_noise(n_rows, h, gen),
            old_sampler,
            _sech_loops=lambda *args: None,
        )
    print("\n  parts:")
    wall, cpu, _ = _interleaved(runs, repeat)
    _print_times(wall, cpu)
    times = [given_noise() for _ in range(repeat)]
    print(
        f"  {'perturb_proba into the noise buffer':<48}: best "
        f"{min(times) * 1e3:7.2f} ms, median {np.median(times) * 1e3:7.2f} ms"
    )


# ---------------------------------------------------------------------------
# 0. The targets of the default install
# ---------------------------------------------------------------------------

OVERHEAD_TARGET = 0.10
FLOOR_TARGET = 1.5


def _realistic(kind, n_features=20, n_train=20_000, seed=0):
    """A fitted tree ensemble on a problem with interactions, and a sampler
    of its test rows."""
    rng = np.random.default_rng(seed)
    beta = rng.standard_normal(n_features) / np.sqrt(n_features)

    def draw(n):
        X = rng.standard_normal((n, n_features))
        logit = X @ beta + 0.5 * X[:, 0] * X[:, 1] - 0.3 * X[:, 2] ** 2
        return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)

    X, y = draw(n_train)
    if kind == "HistGradientBoosting":
        base = HistGradientBoostingClassifier(random_state=0).fit(X, y)
    else:
        base = RandomForestClassifier(
            n_estimators=100, min_samples_leaf=5, random_state=0
        ).fit(X, y)
    return base, draw


def noise_floor(p, h, bitgen):
    """The NumPy floor of perturbing ``p``: ``n`` uniform 64-bit words, their
    angles, the transcendental passes (``tan``, ``log``) and one add, in one
    thread. (No rejection, no grid, no second column: less than the sampler
    does.)"""
    x = bitgen.random_raw(p.shape[0]).astype(np.float64)
    x *= np.pi / 2.0**66  # angles in [0, pi/4)
    np.tan(x, out=x)
    np.log(x, out=x)
    x *= h
    x += p
    return x


def _paired_overhead(base, clf, X, repeat):
    """Median over interleaved rounds of PerturbedClassifier's time over the
    base model's, less one; and the median times."""
    wall, _, _ = _interleaved(
        {"base": lambda: base.predict_proba(X), "clf": lambda: clf.predict_proba(X)},
        repeat,
    )
    ratio = float(np.median(wall["clf"] / wall["base"]) - 1.0)
    return ratio, float(np.median(wall["base"])), float(np.median(wall["clf"]))


def bench_targets(sizes=(10**5, 10**6), n_features=20, repeat=7):
    """The three targets (see the module's docstring); returns their rows."""
    out = []
    print(
        "targets of the default install (numpy passes, SKCALIB_NUMBA=0); "
        f"{repeat} interleaved rounds, medians"
    )
    with _numba_mode("0"):
        for kind in ("HistGradientBoosting", "RandomForest"):
            base, draw = _realistic(kind, n_features)
            for n in sizes:
                X, y = draw(n)
                clf = PerturbedClassifier(FrozenEstimator(base), random_state=0)
                clf.fit(X[:100], y[:100])
                overhead, t_base, t_clf = _paired_overhead(
                    base, clf, X, max(3, repeat if n <= 10**5 else repeat // 2)
                )
                ok = "ok" if overhead <= OVERHEAD_TARGET else "MISSED"
                print(
                    f"  {kind:<22} {n:>9,d} x {n_features}: base "
                    f"{t_base * 1e3:8.1f} ms, perturbed {t_clf * 1e3:8.1f} ms, "
                    f"overhead {100 * overhead:5.1f} % (target <= "
                    f"{100 * OVERHEAD_TARGET:.0f} %: {ok})",
                    flush=True,
                )
                out.append((f"{kind} {n:.0e}", overhead, OVERHEAD_TARGET))
        n = 10**6
        X, y, base, clf = _model(n, n_features, 1.0)
        p = np.ascontiguousarray(base.predict_proba(X)[:, 1])
        bitgen = np.random.PCG64(1)
        wall, _, _ = _interleaved(
            {
                "LogisticRegression": lambda: base.predict_proba(X),
                "PerturbedClassifier": lambda: clf.predict_proba(X),
                "floor": lambda: noise_floor(p, DEFAULT_SCALE, bitgen),
            },
            3 * repeat,
        )
        t = {k: float(np.median(v)) for k, v in wall.items()}
        added = float(
            np.median(wall["PerturbedClassifier"] - wall["LogisticRegression"])
        )
        ratio = added / t["floor"]
        ok = "ok" if ratio <= FLOOR_TARGET else "MISSED"
        print(
            f"  {'LogisticRegression':<22} {n:>9,d} x {n_features}: base "
            f"{t['LogisticRegression'] * 1e3:8.1f} ms, perturbed "
            f"{t['PerturbedClassifier'] * 1e3:8.1f} ms; added "
            f"{added * 1e3:6.1f} ms = {ratio:.2f} x the NumPy floor of the noise "
            f"({t['floor'] * 1e3:.1f} ms; target <= {FLOOR_TARGET}: {ok})",
            flush=True,
        )
        out.append(("LogisticRegression 1e6: added / floor", ratio, FLOOR_TARGET))
    out.extend(bench_fast(n_features=n_features, repeat=3 * repeat))
    return out


_FIRST_SETUP = """
import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from skcalib import PerturbedClassifier, perturb_proba
rng = np.random.default_rng(0)
n, d = {n}, {d}
X = rng.standard_normal((n, d))
y = (rng.uniform(size=n) < 1 / (1 + np.exp(-X @ (rng.standard_normal(d) / 4)))) * 1
base = LogisticRegression().fit(X[:20000], y[:20000])
P = base.predict_proba(X)
clf = PerturbedClassifier(FrozenEstimator(base), random_state=0).fit(X[:100], y[:100])
"""


def bench_fast(n=10**6, n_features=20, repeat=21):
    """The sampler with the ``fast`` extra against without it, first call
    included; returns the rows of the targets."""
    from skcalib._backend.compiled import HAVE_NUMBA

    setup = _FIRST_SETUP.format(n=n, d=n_features)
    cases = {
        f"perturb_proba, n = {n:.0e}": first_calls(
            setup, "perturb_proba(P, random_state=0)", processes=5
        ),
        f"PerturbedClassifier, {n:.0e} x {n_features}": first_calls(
            setup, "clf.predict_proba(X)", processes=5
        ),
    }
    print_first_calls("the sampler's first call in a fresh process", cases)
    out = []
    for label, r in cases.items():
        ratio = r["numba"]["first"] / r["no numba"]["first"]
        if r["numba"]["numba"]:
            out.append((f"first call, {label}: numba / no numba", ratio, 1.0))
        else:
            # numba not loaded: both ran the numpy passes, and the ratio
            # measures the noise between fresh processes.
            out.append((f"first call, {label}: numba / no numba", ratio))
    if not HAVE_NUMBA:
        print("  numba is not installed: no compiled loops to compare")
        return out
    X, y, base, clf = _model(n, n_features, 1.0)
    P = base.predict_proba(X)
    gen = np.random.default_rng(0)
    with _numba_mode("1"):
        perturb_proba(P, DEFAULT_SCALE, gen)  # loads the compiled loops
    wall, _, _ = _interleaved(
        {
            "compiled": _in_mode(lambda: perturb_proba(P, DEFAULT_SCALE, gen), "1"),
            "numpy passes": _in_mode(lambda: perturb_proba(P, DEFAULT_SCALE, gen), "0"),
        },
        repeat,
    )
    ratio = float(np.median(wall["compiled"] / wall["numpy passes"]))
    print(
        f"  loaded compiled loops / numpy passes, perturb_proba of {n:,d} rows: "
        f"{ratio:.2f} (median of {repeat} paired rounds; target <= 1)"
    )
    out.append(("steady: compiled / numpy passes", ratio, 1.0))
    return out


def rows(full=False):
    """``predict_proba`` of PerturbedClassifier vs its LogisticRegression
    (the peer: ratio - 1 is the overhead of isolated calls, target < 0.2),
    for ``run_all.py``; the note adds the median overhead of calls made
    back to back."""
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _common import peak_mb, race, row

    from skcalib._backend.sech.compiled import HAVE_NUMBA

    n_rows, n_features = (10**6, 20) if full else (2 * 10**5, 20)
    out = []
    for label, spread in SPREADS.items():
        X, y, base, clf = _model(n_rows, n_features, spread)
        t = race(
            {
                "skcalib": lambda clf=clf, X=X: clf.predict_proba(X),
                "LogisticRegression": lambda base=base, X=X: base.predict_proba(X),
            },
            30,
        )
        overhead = 100 * (t["skcalib"] / t["LogisticRegression"] - 1)
        # race() collects garbage before each call, which leaves time for the
        # BLAS worker threads to stop spinning; calls back to back find them
        # still spinning on the cores the background noise needs.
        wall = _interleaved(
            {
                "skcalib": lambda clf=clf, X=X: clf.predict_proba(X),
                "base": lambda base=base, X=X: base.predict_proba(X),
            },
            30,
        )[0]
        in_a_row = 100 * (np.median(wall["skcalib"] / wall["base"]) - 1)
        note = f"{n_features} features, {label}; overhead {overhead:.0f} %"
        note += f", {in_a_row:.0f} % for calls back to back (target < 20 %)"
        note += f"; numba {'found' if HAVE_NUMBA else 'not found'}"
        name = "PerturbedClassifier.predict_proba"
        if spread != 1.0:
            name += " (confident model)"
        out.append(
            row(
                name,
                n_rows,
                t,
                peer="LogisticRegression",
                peak=peak_mb(lambda clf=clf, X=X: clf.predict_proba(X)),
                note=note,
            )
        )
    return out


def _table(name, model, X, y, scales):
    start = time.perf_counter()
    res = select_perturbation_scale(
        model, X, y, scales=scales, cv=5, bound_method="nw", random_state=0
    )
    elapsed = time.perf_counter() - start
    print(
        f"\n{name}: n={len(y)}, 5-fold AUROC and NW bound (delta={res.delta}) "
        f"on pooled out-of-fold perturbed scores  [{elapsed:.1f} s]"
    )
    print(
        f"  unperturbed: AUROC {res.base_score_mean:.4f} +- {res.base_score_std:.4f}"
        f"   TV/monotone bound {res.base_bound_upper:.4f}"
        f" (estimate {res.base_bound_estimate:.4f})"
    )
    print("     scale     AUROC      +-     loss   NW bound  CE estimate")
    for k, h in enumerate(res.scales):
        mark = " <- recommended" if h == res.recommended_scale else ""
        print(
            f"  2^{np.log2(h):>5.1f}  {res.score_mean[k]:.4f}  {res.score_std[k]:.4f}"
            f"  {res.score_loss[k]:+.4f}  {res.bound_upper[k]:9.4f}"
            f"  {res.bound_estimate[k]:11.4f}{mark}"
        )


def bench_bound_table():
    scales = 2.0 ** -np.arange(1, 10)
    X, y = load_breast_cancer(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression())
    _table("breast cancer, LogisticRegression", model, X, y, scales)
    X, digit = load_digits(return_X_y=True)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1))
    _table("digits (digit >= 5), LogisticRegression", model, X, digit >= 5, scales)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--features", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=60)
    parser.add_argument(
        "--old-rev",
        default=OLD_REV,
        help="revision whose sampler is timed alongside ('' to skip)",
    )
    parser.add_argument("--skip-targets", action="store_true")
    parser.add_argument("--skip-details", action="store_true")
    parser.add_argument("--skip-table", action="store_true")
    args = parser.parse_args()
    if not args.skip_targets:
        results = bench_targets(n_features=args.features)
        print("\nsummary of the targets (value, target):")
        for label, value, *target in results:
            if target:
                mark = "ok" if value <= target[0] else "MISSED"
                print(f"  {label:<62} {value:7.3f}  <= {target[0]:<5} {mark}")
            else:
                print(f"  {label:<62} {value:7.3f}  (numba not loaded: same path)")
        print()
    if not args.skip_details:
        with tempfile.TemporaryDirectory() as tmp:
            old = None
            if args.old_rev:
                try:
                    old = _old_package(args.old_rev, tmp)
                    old.rev = args.old_rev
                    importlib.import_module("skcalib_old.perturbation")
                except (OSError, subprocess.CalledProcessError) as exc:
                    print(f"old sampler unavailable ({exc}); timing the current one")
            bench_overhead(args.rows, args.features, args.repeat, old)
    if not args.skip_table:
        bench_bound_table()
