"""Timing helpers shared by the benchmarks that feed ``run_all.py``.

Contenders are timed in interleaved rounds (one call of each per round, so a
burst of load on a shared machine hits all of them) and the minimum over the
rounds is reported.
"""

from __future__ import annotations

import gc
import time
import tracemalloc

KEYS = (
    "work",
    "n",
    "skcalib_s",
    "peer",
    "peer_s",
    "floor",
    "floor_s",
    "peak_mb",
    "note",
)


def race(contenders, repeat=3, once=()):
    """Best wall time of each callable in ``contenders`` (a dict), interleaved;
    those named in ``once`` (slow peers) are timed in the first round only."""
    best = {name: float("inf") for name in contenders}
    for i in range(repeat):
        for name, fn in contenders.items():
            if fn is None or (i and name in once):
                continue
            gc.collect()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    return {k: (v if v != float("inf") else None) for k, v in best.items()}


def peak_mb(fn):
    """Peak memory allocated during one call of ``fn`` (numpy arrays included;
    tracemalloc sees every allocation made through Python's and numpy's
    allocators), in MB. Measured in a separate, untimed call."""
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / 2**20


def row(work, n, times, *, ours="skcalib", peer=None, floor=None, peak=None, note=""):
    """A table row (see ``run_all.py``) from the output of :func:`race`."""
    return {
        "work": work,
        "n": int(n),
        "skcalib_s": times[ours],
        "peer": peer or "",
        "peer_s": times.get(peer) if peer else None,
        "floor": floor or "",
        "floor_s": times.get(floor) if floor else None,
        "peak_mb": peak,
        "note": note,
    }
