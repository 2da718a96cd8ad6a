"""Benchmark PerturbedClassifier.

1. ``predict_proba`` overhead on 1e6 rows on top of a LogisticRegression
   (target: under 20 % extra), measured side by side in one run: median of
   the per-round ratios and ratio of the best times, with the compiled loops
   (numba) and with numpy passes only; then the parts alone. The noise is
   drawn in a background thread while the base model predicts, and the
   perturbed probabilities are written into the base model's output.
   "cores" is CPU time over wall time: BLAS worker threads that keep spinning
   after a matrix product count there.
2. Certified bound vs AUROC over perturbation scales on real datasets
   (breast cancer; digits as a binary "digit >= 5" problem), from
   :func:`skcalib.select_perturbation_scale`.

Run: ``python benchmarks/bench_perturbation.py [--rows N] [--features D]``.
"""

from __future__ import annotations

import argparse
import time
from contextlib import contextmanager

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info

from skcalib import PerturbedClassifier, select_perturbation_scale
from skcalib._backend import sech_sampler
from skcalib._backend.perturbation import perturb_proba
from skcalib._backend.sech_sampler import sech_noise, sech_sample
from skcalib.perturbation import DEFAULT_SCALE


@contextmanager
def _patched(**values):
    """Temporarily change module constants of the sampler (for comparisons)."""
    saved = {name: getattr(sech_sampler, name) for name in values}
    for name, value in values.items():
        setattr(sech_sampler, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(sech_sampler, name, value)


def _with(func, **values):
    def run():
        with _patched(**values):
            return func()

    return run


def _interleaved(runs, repeat):
    """Wall and CPU times of each run, interleaved so all see the same machine."""
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    for _ in range(repeat):
        for name, func in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            func()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
    return {k: np.array(v) for k, v in wall.items()}, {
        k: np.array(v) for k, v in cpu.items()
    }


def _print_times(wall, cpu):
    for name in wall:
        cores = np.median(cpu[name] / wall[name])
        print(
            f"  {name:<44}: best {wall[name].min() * 1e3:7.2f} ms, median "
            f"{np.median(wall[name]) * 1e3:7.2f} ms   cores {cores:4.2f}"
        )


def bench_overhead(n_rows, n_features, repeat=60):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, n_features))
    beta = rng.standard_normal(n_features) / np.sqrt(n_features)
    y = (rng.uniform(size=n_rows) < 1 / (1 + np.exp(-X @ beta))).astype(int)
    base = LogisticRegression().fit(X[:50_000], y[:50_000])
    clf = PerturbedClassifier(FrozenEstimator(base), random_state=0).fit(X, y)
    blas = [
        f"{info['internal_api']}: {info['num_threads']} threads"
        for info in threadpool_info()
    ]
    print(
        f"predict_proba on {n_rows:,} rows x {n_features} features, "
        f"{repeat} interleaved rounds; cores = CPU time / wall time (median)"
    )
    n_threads = sech_sampler._sech_threads()
    print(f"  thread pools: {', '.join(blas)}; sampler threads: {n_threads}")

    # 1. The user's view: the two predict_proba calls side by side, alone in
    # the loop (other work in between changes the allocator's and the BLAS
    # threads' state, and with them the timings); then the same with the
    # sampler's numpy passes only (numba not installed).
    lr_run = {"LogisticRegression": lambda: base.predict_proba(X)}
    variants = {
        "PerturbedClassifier": lambda: clf.predict_proba(X),
        "PerturbedClassifier, numpy passes only": _with(
            lambda: clf.predict_proba(X), _COMPILED_MIN_SIZE=np.inf
        ),
    }
    for name, func in variants.items():
        wall, cpu = _interleaved({**lr_run, name: func}, repeat)
        _print_times(wall, cpu)
        lr = wall["LogisticRegression"]
        paired = np.median(wall[name] / lr) - 1.0
        best = wall[name].min() / lr.min() - 1.0
        print(
            f"  -> overhead {100 * paired:5.1f} % (median of paired ratios), "
            f"{100 * best:5.1f} % (best times); target < 20 %"
        )

    # 2. The parts, alone.
    P = base.predict_proba(X)
    gen = np.random.default_rng(0)
    h = DEFAULT_SCALE
    noise = sech_noise(n_rows, h, gen)

    def in_place():
        Q = P.copy()
        start = time.perf_counter()
        perturb_proba(Q, DEFAULT_SCALE, gen, overwrite_input=True, noise=noise)
        return time.perf_counter() - start

    runs = {
        "sech_noise": lambda: sech_noise(n_rows, DEFAULT_SCALE, gen),
        "sech_noise, 1 thread": _with(
            lambda: sech_noise(n_rows, DEFAULT_SCALE, gen), _SECH_MAX_THREADS=1
        ),
        "sech_noise, numpy passes": _with(
            lambda: sech_noise(n_rows, DEFAULT_SCALE, gen), _COMPILED_MIN_SIZE=np.inf
        ),
        "perturb_proba, new array": lambda: perturb_proba(
            P, DEFAULT_SCALE, gen, noise=noise
        ),
        "sech_sample, noise included": lambda: sech_sample(P[:, 1], h, gen),
    }
    print("\n  parts:")
    wall, cpu = _interleaved(runs, repeat)
    _print_times(wall, cpu)
    times = [in_place() for _ in range(repeat)]
    print(
        f"  {'perturb_proba in place, noise given':<44}: best "
        f"{min(times) * 1e3:7.2f} ms, median {np.median(times) * 1e3:7.2f} ms"
    )


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
    args = parser.parse_args()
    bench_overhead(args.rows, args.features)
    bench_bound_table()
