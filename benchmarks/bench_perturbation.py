"""Benchmark PerturbedClassifier.

1. ``predict_proba`` overhead on 1e6 rows on top of a LogisticRegression
   (target: under 20 % extra), measured side by side in one run, with the
   sampler's default threads and with one thread, and the parts alone.
   "cores" is CPU time over wall time: BLAS worker threads that keep spinning
   after a matrix product count there, and compete with the sampler's
   second thread.
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
from skcalib._backend import kernels
from skcalib._backend.kernels import sech_sample
from skcalib._backend.perturbation import perturb_proba


@contextmanager
def _sampler_threads(n_threads):
    """Temporarily cap the threads of the sech sampler (for the comparison)."""
    saved = kernels._SECH_MAX_THREADS
    kernels._SECH_MAX_THREADS = n_threads
    try:
        yield
    finally:
        kernels._SECH_MAX_THREADS = saved


def _single_thread(func):
    def run():
        with _sampler_threads(1):
            func()

    return run


def bench_overhead(n_rows, n_features, repeat=15):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, n_features))
    beta = rng.standard_normal(n_features) / np.sqrt(n_features)
    y = (rng.uniform(size=n_rows) < 1 / (1 + np.exp(-X @ beta))).astype(int)
    base = LogisticRegression().fit(X[:50_000], y[:50_000])
    clf = PerturbedClassifier(FrozenEstimator(base), random_state=0).fit(X, y)
    P = base.predict_proba(X)
    p1 = P[:, 1]
    gen = np.random.default_rng(0)
    runs = {
        "LogisticRegression": lambda: base.predict_proba(X),
        "PerturbedClassifier": lambda: clf.predict_proba(X),
        "PerturbedClassifier, 1 thread": _single_thread(lambda: clf.predict_proba(X)),
        "perturb_proba alone": lambda: perturb_proba(P, 2**-6, gen),
        "sech_sample alone": lambda: sech_sample(p1, 2**-6, gen),
        "sech_sample alone, 1 thread": _single_thread(
            lambda: sech_sample(p1, 2**-6, gen)
        ),
    }
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    # Interleave the runs so that all see the same machine state; keep the
    # best wall time, and CPU time / wall time as the number of busy cores.
    for _ in range(repeat):
        for name, func in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            func()
            wall[name].append(time.perf_counter() - w0)
            cpu[name].append(time.process_time() - c0)
    best = {name: min(times) for name, times in wall.items()}
    print(
        f"predict_proba on {n_rows:,} rows x {n_features} features "
        f"(best of {repeat}, interleaved; cores = CPU time / wall time, median)"
    )
    blas = [
        f"{info['internal_api']}: {info['num_threads']} threads"
        for info in threadpool_info()
    ]
    print(
        f"  thread pools: {', '.join(blas)}; sampler threads: {kernels._sech_threads()}"
    )
    for name in runs:
        cores = np.median(np.array(cpu[name]) / np.array(wall[name]))
        print(f"  {name:<30}: {best[name] * 1e3:8.2f} ms   cores {cores:4.2f}")
    tb = best["LogisticRegression"]
    for name in ("PerturbedClassifier", "PerturbedClassifier, 1 thread"):
        extra = best[name] - tb
        print(
            f"  overhead, {name:<19}: {100 * extra / tb:6.1f} %  "
            f"({extra * 1e3:.2f} ms; target < 20 %)"
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
