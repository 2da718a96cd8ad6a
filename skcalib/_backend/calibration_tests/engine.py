"""The exact p-value of any statistic: labels drawn from the null hypothesis.

Under the null hypothesis the law of the labels given the scores is known,
so the observed statistic ``T`` and ``B`` statistics ``T*`` of labels drawn
from that law (same scores, same weights) are exchangeable, and

    p = (1 + #{b : T*_b >= T}) / (B + 1)

satisfies ``P(p <= alpha) <= alpha`` for every ``alpha``, every ``B`` and
every sample size (Barnard 1963; Davison & Hinkley 1997, sec. 4.2), with
equality at ``alpha = k / (B + 1)`` when ties have probability 0. Ties count
against rejection, and so do values below ``T`` by less than ``RTOL |T|``
(sums of the same labels in another order can differ by round-off); any
such margin only makes ``p`` larger, so it keeps the guarantee.

Resamples are drawn in blocks (:func:`draws.block_sizes`); block ``i`` uses
the ``i``-th child of the seed, so the result does not depend on
``n_jobs``.
"""

from __future__ import annotations

import numpy as np

from .draws import block_sizes

__all__ = ["RTOL", "count_at_least", "exact_pvalue", "run_blocks"]

# Relative margin of a tie: round-off of sums over 1e6 rows stays far below.
RTOL = 1e-9


def count_at_least(observed, null):
    """``#{T* >= T}`` with ties (within ``RTOL``) counted."""
    null = np.asarray(null, dtype=np.float64)
    if np.isnan(null).any():
        raise ValueError("a statistic of labels drawn from the null law is NaN.")
    if observed == np.inf:
        return int(np.sum(null == np.inf))
    finite = np.abs(null[np.isfinite(null)])
    scale = max(abs(observed), float(finite.max()) if finite.size else 0.0)
    return int(np.sum(null >= observed - RTOL * scale))


def run_blocks(func, n_resamples, n_rows, seed, n_jobs=None):
    """``func(rng, m)`` over the blocks of ``n_resamples`` resamples of a
    problem of ``n_rows`` rows, concatenated (threads: numpy releases the
    GIL in the passes over the blocks)."""
    sizes = block_sizes(n_resamples, n_rows)
    seeds = seed.spawn(len(sizes))
    if len(sizes) > 1:
        from joblib import Parallel, delayed, effective_n_jobs

        if effective_n_jobs(n_jobs) > 1:
            parts = Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(_run)(func, q, m) for q, m in zip(seeds, sizes, strict=True)
            )
            return np.concatenate(parts)
    parts = [_run(func, q, m) for q, m in zip(seeds, sizes, strict=True)]
    return np.concatenate(parts)


def _run(func, seed, m):
    return func(np.random.default_rng(seed), m)


def exact_pvalue(statistic, n_resamples, seed, n_jobs=None):
    """``(observed, pvalue, null)`` of a statistic of :mod:`.statistics`.

    A statistic with an ``exceeds(labels, observed)`` method decides
    ``T* >= T`` without computing ``T*`` (its own margin); ``null`` is then
    None.
    """
    statistic.prepare(n_resamples)
    observed = statistic.observed_value()
    n_rows = statistic.n_rows
    if hasattr(statistic, "exceeds"):

        def block(rng, m):
            return statistic.exceeds(statistic.draw(rng, m), observed)

        hits = run_blocks(block, n_resamples, n_rows, seed, n_jobs)
        count, null = int(hits.sum()), None
    else:

        def block(rng, m):
            return statistic.values(statistic.draw(rng, m))

        null = run_blocks(block, n_resamples, n_rows, seed, n_jobs)
        count = count_at_least(observed, null)
    return observed, (1.0 + count) / (1.0 + n_resamples), null
