"""Speed and peak memory of the in-memory certified bounds, with and without numba.

Every case runs in a fresh subprocess, so that its peak memory is its own and
numba can be made unimportable (``sys.modules["numba"] = None`` before skcalib
is imported; skcalib looks numba up with ``importlib.util.find_spec``, which
then finds nothing). In the child, the bound's first call is timed alone (the
first call of a process, imports included: numba is never imported by the
bounds, whose TV solver is the numpy taut string; Condat's compiled sweep is
the reference only), then the bound and the floor (``np.sort`` of the same
scores) alternate ``--repeats`` times and the minimum of each is kept.

The data are the "u2" problem of ``skcalib.datasets`` with scores perturbed at
``h = 2**-4`` (on the grid that ``method="nw"`` needs), made once per size and
saved to the temporary folder; each child loads them.

Peak memory is the child's whole peak resident set size (``ru_maxrss``) minus
its resident set size after the imports (interpreter, numpy, scikit-learn,
skcalib), before any data exist: the input arrays (float64 scores, bool
labels, 9 bytes per sample) count.

With ``--before DIR`` every case is also run against the skcalib found in
``DIR`` (e.g. an exported older revision), next to the current one.

Run:  python benchmarks/bench_bounds_speed.py [--full] [--before DIR]
                                               [--methods tv,monotone,nw,lipschitz]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_METHOD_KWARGS = {
    "tv": {"method": "tv"},
    "monotone": {"method": "tv", "assume": "monotone"},
    "nw": {"method": "nw", "perturbation_scale": 2.0**-4},
    "lipschitz": {"method": "lipschitz", "lipschitz": 2.0},
}

_CHILD = r"""
import json, resource, sys, time
if {no_numba}:
    sys.modules["numba"] = None
import numpy as np
import sklearn.isotonic
import skcalib
from skcalib.metrics import calibration_error_bound

def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

base = rss_mb()
n, kwargs, repeats = {n}, {kwargs}, {repeats}
y = np.load({data!r} + "_y.npy")
s = np.load({data!r} + "_s.npy")
t0 = time.perf_counter()
calibration_error_bound(y, s, random_state=0, **kwargs)
first = time.perf_counter() - t0
best, floor = np.inf, np.inf
for _ in range(repeats):
    t0 = time.perf_counter()
    b = calibration_error_bound(y, s, random_state=0, **kwargs)
    best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    np.sort(s)
    floor = min(floor, time.perf_counter() - t0)
upper = float(getattr(b, "upper", b))
print(json.dumps({{"seconds": best, "first": first, "floor": floor,
                   "peak_mb": rss_mb() - base, "upper": upper,
                   "numba_loaded": sys.modules.get("numba") is not None,
                   "file": skcalib.__file__}}))
"""


_SOLVER_CHILD = r"""
import json, sys, time
import numpy as np
from skcalib._backend import tv
from skcalib._backend.concentration import tv_constants

n, repeats, peers = {n}, {repeats}, {peers}
s = np.load({data!r} + "_s.npy")[:n]
order = np.argsort(s, kind="stable")
s = s[order]
y = np.load({data!r} + "_y.npy")[:n][order].astype(np.float64)
lam = tv_constants(n, 0.05 / 15)[1]  # the penalty of a fold of the bound
names = ["taut"] + peers
best = dict.fromkeys(names + ["floor"], np.inf)
for _ in range(repeats):
    for name in names:
        use = {{"taut": None, "condat-numba": True, "condat-python": False}}[name]
        t0 = time.perf_counter()
        v = tv.tv_denoise(y, lam, use_numba=use)
        best[name] = min(best[name], time.perf_counter() - t0)
    t0 = time.perf_counter()
    np.sort(s)
    best["floor"] = min(best["floor"], time.perf_counter() - t0)
print(json.dumps(best))
"""


def run_solver(n, *, repeats, peers, src=ROOT):
    """Time the TV solvers alone on the labels of one fold (``n`` = |T|)."""
    code = _SOLVER_CHILD.format(
        n=int(n), repeats=repeats, peers=list(peers), data=_data(int(n / 0.8))
    )
    env = dict(os.environ, PYTHONPATH=str(src))
    # In the folder of the version: ``python -c`` puts the current folder
    # first on the path, ahead of PYTHONPATH.
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=src,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _solver_peers(n):
    peers = ["condat-numba"] if _have_numba() else []
    if n <= 10**6:
        peers.append("condat-python")
    return peers


def _data(n):
    """Files of the problem of size n (made once, then loaded by each child,
    so that the child's peak memory is the bound's and not the generator's).

    The "u2" problem with scores perturbed at h = 2**-4: they lie on the
    2**-24 grid that "nw" needs, and every method accepts them.
    """
    import tempfile

    stem = Path(tempfile.gettempdir()) / f"skcalib_bench_bounds_{int(n)}"
    if not Path(f"{stem}_s.npy").exists():
        # In a child: Linux carries the peak RSS of a process over to the
        # children it starts, so the runner itself must stay small.
        code = (
            "import numpy as np\n"
            "from skcalib.datasets import make_calibration_problem\n"
            f"d = make_calibration_problem({int(n)}, problem='u2', "
            "perturbation_scale=2.0**-4, random_state=0)\n"
            f"np.save('{stem}_y.npy', np.asarray(d.y_true).astype(bool))\n"
            f"np.save('{stem}_s.npy', np.asarray(d.y_proba, dtype=np.float64))\n"
        )
        subprocess.run([sys.executable, "-c", code], check=True)
    return str(stem)


def run_case(method, n, *, numba, repeats, src=ROOT):
    """Run one case in a subprocess; returns its measurements."""
    code = _CHILD.format(
        no_numba=not numba,
        n=int(n),
        kwargs=_METHOD_KWARGS[method],
        repeats=repeats,
        data=_data(n),
    )
    env = dict(os.environ, PYTHONPATH=str(src))
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=src,  # as in run_solver
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{method} n={n}: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _have_numba():
    import importlib.util

    return importlib.util.find_spec("numba") is not None


def _cases(full, methods):
    sizes = [10**7] if full else [10**5, 10**6]
    for n in sizes:
        for method in methods:
            # numba only changes the compiled solvers (TV's reference one and
            # nothing else in the bounds), so both are run for TV.
            variants = [False, True] if method == "tv" and _have_numba() else [False]
            for numba in variants:
                yield method, n, numba


def _repeats(n):
    return 2 if n >= 10**7 else 3


def rows(full: bool, methods=tuple(_METHOD_KWARGS)) -> list[dict]:
    """One row per case, for ``benchmarks/run_all.py``.

    Keys ``work, n, skcalib_s, peer, peer_s, floor, floor_s, peak_mb, note``;
    the floor is ``np.sort`` of the same scores; there is no peer.
    """
    out = []
    # The solver alone at the training size of a fold, against Condat's.
    for n in [8 * 10**6] if full else [8 * 10**4, 8 * 10**5]:
        peers = _solver_peers(n)
        r = run_solver(n, repeats=_repeats(n), peers=peers)
        for peer in peers or [""]:
            out.append(
                {
                    "work": "tv solver",
                    "n": n,
                    "skcalib_s": r["taut"],
                    "peer": peer,
                    "peer_s": r.get(peer),
                    "floor": "np.sort",
                    "floor_s": r["floor"],
                    "peak_mb": None,
                    "note": "exact TV denoising of one fold's labels",
                }
            )
    for method, n, numba in _cases(full, methods):
        r = run_case(method, n, numba=numba, repeats=_repeats(n))
        out.append(
            {
                "work": f"bound {method}",
                "n": n,
                "skcalib_s": r["seconds"],
                "peer": "",
                "peer_s": None,
                "floor": "np.sort",
                "floor_s": r["floor"],
                "peak_mb": r["peak_mb"],
                "note": ("numba" if numba else "no numba")
                + f"; first call {r['first']:.3g} s"
                + ("; numba loaded" if r["numba_loaded"] else ""),
            }
        )
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="n = 1e7")
    parser.add_argument("--before", default=None, help="folder of an older skcalib")
    parser.add_argument("--src", default=str(ROOT), help="folder of the current one")
    parser.add_argument("--methods", default=",".join(_METHOD_KWARGS))
    parser.add_argument("--sizes", default=None, help="e.g. 1e5,1e7 (overrides)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--numba", default="both", choices=["both", "yes", "no"])
    args = parser.parse_args()
    methods = args.methods.split(",")
    if args.sizes:
        sizes = [int(float(x)) for x in args.sizes.split(",")]
        cases = [
            (m, n, nb)
            for n in sizes
            for m in methods
            for nb in ([False, True] if m == "tv" and _have_numba() else [False])
        ]
    else:
        cases = list(_cases(args.full, methods))
    if args.numba != "both":
        cases = [c for c in cases if c[2] == (args.numba == "yes")]
    versions = [("now", Path(args.src))]
    if args.before:
        versions.insert(0, ("before", Path(args.before)))
    header = (
        f"{'work':<16} {'n':>9} {'numba':>6} {'version':>7} {'first s':>9} "
        f"{'seconds':>9} {'x np.sort':>9} {'peak MB':>8} {'upper':>8}"
    )
    print(header)
    print("-" * len(header))
    if "tv" in methods:
        for n in sorted(
            {
                int(0.8 * m)
                for m in (
                    sizes if args.sizes else ([10**7] if args.full else [10**5, 10**6])
                )
            }
        ):
            peers = _solver_peers(n)
            r = run_solver(
                n, repeats=args.repeats or _repeats(n), peers=peers, src=args.src
            )
            for name in ["taut"] + peers:
                print(
                    f"{'tv solver ' + name:<24} {n:>9.0e} "
                    f"{r[name]:>9.2f}s {r[name] / r['floor']:>9.1f} x np.sort",
                    flush=True,
                )
    for method, n, numba in cases:
        # The versions of one case run back to back (interleaved).
        for label, src in versions:
            r = run_case(
                method, n, numba=numba, repeats=args.repeats or _repeats(n), src=src
            )
            print(
                f"{'bound ' + method:<16} {n:>9.0e} {'yes' if numba else 'no':>6} "
                f"{label:>7} {r.get('first', float('nan')):>9.2f} {r['seconds']:>9.2f} "
                f"{r['seconds'] / r['floor']:>9.1f} {r['peak_mb']:>8.0f} "
                f"{r['upper']:>8.4f}"
                + ("  numba loaded" if r.get("numba_loaded") else ""),
                flush=True,
            )


if __name__ == "__main__":
    main()
