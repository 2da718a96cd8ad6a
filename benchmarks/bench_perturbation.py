"""Benchmark PerturbedClassifier.

1. ``predict_proba`` overhead on 1e6 rows on top of a LogisticRegression
   (target: under 20 % extra), measured side by side in one run.
2. Certified bound vs AUROC over perturbation scales on real datasets
   (breast cancer; digits as a binary "digit >= 5" problem), from
   :func:`skcalib.select_perturbation_scale`.

Run: ``python benchmarks/bench_perturbation.py [--rows N] [--features D]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skcalib import PerturbedClassifier, select_perturbation_scale
from skcalib._backend.kernels import sech_sample


def _best_time(func, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_overhead(n_rows, n_features, repeat=7):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_rows, n_features))
    beta = rng.standard_normal(n_features) / np.sqrt(n_features)
    y = (rng.uniform(size=n_rows) < 1 / (1 + np.exp(-X @ beta))).astype(int)
    base = LogisticRegression().fit(X[:50_000], y[:50_000])
    clf = PerturbedClassifier(FrozenEstimator(base), random_state=0).fit(X, y)
    p1 = base.predict_proba(X)[:, 1]
    gen = np.random.default_rng(0)

    # Interleave the runs so that both see the same machine state.
    t_base, t_pert, t_samp = [], [], []
    for _ in range(repeat):
        t_base.append(_best_time(lambda: base.predict_proba(X), 1))
        t_pert.append(_best_time(lambda: clf.predict_proba(X), 1))
        t_samp.append(_best_time(lambda: sech_sample(p1, 2**-6, gen), 1))
    tb, tp, ts = min(t_base), min(t_pert), min(t_samp)
    print(
        f"predict_proba on {n_rows:,} rows x {n_features} features (best of {repeat})"
    )
    print(f"  LogisticRegression          : {tb * 1e3:8.1f} ms")
    print(f"  PerturbedClassifier         : {tp * 1e3:8.1f} ms")
    print(f"  sech_sample alone           : {ts * 1e3:8.1f} ms")
    print(
        f"  overhead                    : {100 * (tp / tb - 1):8.1f} %  (target < 20 %)"
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
