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


# How a fresh process finds numba: hidden (the default install, without the
# ``fast`` extra), installed under skcalib's default rule, or opted in.
FIRST_CALL_MODES = {
    "no numba": {"hide_numba": True, "env": {}},
    "numba": {"hide_numba": False, "env": {}},
    "opt-in": {"hide_numba": False, "env": {"SKCALIB_NUMBA": "1"}},
}

_FIRST_CHILD = r"""
import json, resource, sys, time
if {hide_numba}:
    sys.modules["numba"] = None
{setup}
def _rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
_base = _rss()
_t = time.perf_counter()
{call}
_first = time.perf_counter() - _t
_grew = _rss() - _base
_steady = float("inf")
for _ in range({repeat}):
    _t = time.perf_counter()
    {call}
    _steady = min(_steady, time.perf_counter() - _t)
print("FIRST" + json.dumps({{"first": _first, "steady": _steady, "rss_mb": _grew,
    "numba": sys.modules.get("numba") is not None}}))
"""


def first_calls(setup, call, *, repeat=3, processes=3, modes=FIRST_CALL_MODES):
    """The first call of ``call`` in fresh processes, and its steady state.

    ``setup`` (code run before the clock starts: imports and data) and
    ``call`` (one statement) are source text. Each mode of ``modes`` runs
    ``processes`` fresh interpreters, interleaved with the other modes; per
    mode: the median first call, the best of the ``repeat`` calls after it
    (the steady state), the median growth of the peak memory over the first
    call (MB) and whether numba was imported.
    """
    import json
    import os
    import subprocess
    import sys

    import numpy as np

    code = {
        name: _FIRST_CHILD.format(
            hide_numba=mode["hide_numba"], setup=setup, call=call, repeat=repeat
        )
        for name, mode in modes.items()
    }
    runs = {name: [] for name in modes}
    for _ in range(processes):
        for name, mode in modes.items():
            out = subprocess.run(
                [sys.executable, "-c", code[name]],
                env={**os.environ, "SKCALIB_NUMBA": "", **mode["env"]},
                capture_output=True,
                text=True,
            )
            lines = [x for x in out.stdout.splitlines() if x.startswith("FIRST")]
            if not lines:
                raise RuntimeError(out.stderr[-2000:])
            runs[name].append(json.loads(lines[-1][5:]))
    return {
        name: {
            "first": float(np.median([r["first"] for r in rs])),
            "steady": min(r["steady"] for r in rs),
            "rss_mb": float(np.median([r["rss_mb"] for r in rs])),
            "numba": any(r["numba"] for r in rs),
        }
        for name, rs in runs.items()
    }


def print_first_calls(title, cases, modes=FIRST_CALL_MODES):
    """A table of :func:`first_calls` results: ``cases`` maps a row label to
    its result. ``opt-in`` is ``SKCALIB_NUMBA=1``; ``+MB`` the first call's
    growth of the peak memory with numba installed; ``numba / no numba``
    compares the first calls of the default rule and of the default install:
    above 1, installing numba made the first call slower."""
    names = list(modes)
    head = (
        f"{'':<42} {'first call (s)':^29} {'steady state (s)':^29} "
        f"{'+MB':>5} {'numba / no numba':>17}"
    )
    cols = " ".join(f"{n:>9}" for n in names)
    print(f"\n{title}\n{head}\n{'':<42} {cols} {cols}")
    for label, res in cases.items():
        first = " ".join(f"{res[n]['first']:>9.3f}" for n in names)
        steady = " ".join(f"{res[n]['steady']:>9.3f}" for n in names)
        ratio = res["numba"]["first"] / res["no numba"]["first"]
        loaded = " (numba loaded)" if res["numba"]["numba"] else ""
        print(
            f"{label:<42} {first} {steady} {res['numba']['rss_mb']:>5.0f} "
            f"{ratio:>16.2f}x{loaded}",
            flush=True,
        )
