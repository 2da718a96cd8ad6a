"""Every benchmark at a quick setting, as one table.

Run: ``python benchmarks/run_all.py [--full] [--only NAME ...]``.

Each benchmark module listed in ``MODULES`` exposes ``rows(full: bool)``
returning dicts with the keys ``work, n, skcalib_s, peer, peer_s, floor,
floor_s, peak_mb, note``; within a row the contenders are timed in
interleaved rounds and the minimum of the rounds is reported. ``ratio`` is
skcalib's time over the peer's (below 1: skcalib is faster) and ``/floor``
skcalib's time over the floor's: the cost of the least work any
implementation must do on the same data (``np.bincount``, ``np.sort`` or a
matrix product, named in the row). ``peak MB`` is the memory allocated by
one skcalib call at its peak (tracemalloc, numpy arrays included).

Modules marked ``NUMBA_MATTERS`` are also run in a child process in which
numba cannot be imported (``sys.modules["numba"] = None`` before skcalib is
imported), i.e. the default install without the ``fast`` extra; their rows
say "with numba" / "without numba". ``--full`` adds the large sizes (1e7
scores). A module or peer that is not installed is skipped with a note.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

MODULES = [
    "bench_binned",
    "bench_smooth_ece",
    "bench_kde_ece",
    "bench_perturbation",
    "bench_bounds_speed",
    "bench_recalibration_speed",
    "bench_calibration_tests",
]


def _module_rows(name, full):
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name in (name, "numba"):
            return [_note_row(name, f"skipped: {exc.name} not found")], None
        raise
    if not hasattr(mod, "rows"):
        return [_note_row(name, "skipped: no rows()")], None
    return mod.rows(full), getattr(mod, "NUMBA_MATTERS", False)


def _note_row(name, note):
    return {
        "work": name,
        "n": 0,
        "skcalib_s": None,
        "peer": "",
        "peer_s": None,
        "floor": "",
        "floor_s": None,
        "peak_mb": None,
        "note": note,
    }


_CHILD = """
import json, sys
sys.modules["numba"] = None
sys.path.insert(0, {here!r})
import importlib
mod = importlib.import_module({name!r})
import skcalib._backend.sech.compiled as c
assert not c.HAVE_NUMBA
print("ROWS" + json.dumps(mod.rows({full!r})))
"""


def _rows_without_numba(name, full):
    code = _CHILD.format(here=HERE, name=name, full=full)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ
    )
    for line in out.stdout.splitlines():
        if line.startswith("ROWS"):
            return json.loads(line[4:])
    tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
    return [_note_row(name, f"without numba failed: {tail}")]


def _fmt_s(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def _fmt_ratio(a, b):
    if a is None or b is None or b <= 0:
        return "-"
    return f"{a / b:.2f}"


def print_table(rows):
    head = (
        f"{'work':<44} {'n':>9} {'skcalib s':>9} {'peer':<22} {'peer s':>8} "
        f"{'ratio':>6} {'floor':<18} {'/floor':>7} {'peak MB':>8}  note"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        n = f"{r['n']:.0e}".replace("e+0", "e") if r["n"] else ""
        peak = "-" if r["peak_mb"] is None else f"{r['peak_mb']:.0f}"
        peer, floor = r["peer"] or "", r["floor"] or ""  # None: no peer / floor
        print(
            f"{r['work'][:44]:<44} {n:>9} {_fmt_s(r['skcalib_s']):>9} "
            f"{peer[:22]:<22} {_fmt_s(r['peer_s']):>8} "
            f"{_fmt_ratio(r['skcalib_s'], r['peer_s']):>6} {floor[:18]:<18} "
            f"{_fmt_ratio(r['skcalib_s'], r['floor_s']):>7} {peak:>8}  {r['note']}",
            flush=True,
        )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also the large sizes")
    ap.add_argument("--only", nargs="*", help="run only these modules")
    args = ap.parse_args(argv)
    names = args.only or MODULES
    rows = []
    for name in names:
        try:
            got, numba_matters = _module_rows(name, args.full)
        except Exception:  # report and go on with the other benchmarks
            traceback.print_exc()
            got, numba_matters = [_note_row(name, "failed (traceback above)")], False
        if numba_matters:
            for r in got:
                r["note"] = ("with numba; " + r["note"]).rstrip("; ")
            without = _rows_without_numba(name, args.full)
            for r in without:
                r["note"] = ("without numba; " + r["note"]).rstrip("; ")
            got = got + without
        rows.extend(got)
        print(f"[{name}: {len(got)} rows]", file=sys.stderr, flush=True)
    print_table(rows)
    return rows


if __name__ == "__main__":
    main()
