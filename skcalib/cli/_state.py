"""Portable states on the command line.

* ``skcalib report FILE --save-state STATE`` also writes the accumulator state
  of the predictions it read (:meth:`CalibrationAccumulator.to_bytes`);
* ``skcalib merge STATE... --out DIR`` reports on states, merged, without the
  predictions: one window per state, the per-window table, the over-time
  figure, and the report of the merged state;
* ``skcalib report DIR`` reads every predictions file of a directory as one
  window (a daily file, say) and writes the same outputs.

A state file that is not a state, truncated or corrupt is an input error: one
line on stderr and exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._read import _SUFFIXES, InputError
from ._write import OutputDir

__all__ = ["add_merge_parser", "report_directory", "run_merge", "StateSaver"]

# A state of the 2**16-cell grid is at most a few megabytes per class; a file
# far larger is not one.
_MAX_STATE_BYTES = 1 << 30


class StateSaver:
    """Feeds the chunks ``skcalib report`` reads to an accumulator and writes
    its state to ``path``."""

    def __init__(self, path, pred, *, pos_label, multi_class):
        from ..metrics import CalibrationAccumulator

        self.path = Path(path)
        self.classes = pred.classes
        labels = pred.labels
        if labels is None and pred.n_columns > 2:
            labels = pred.classes
        self.accumulator = CalibrationAccumulator(
            pos_label=pos_label,
            labels=None if labels is None else np.asarray(labels),
            multi_class=multi_class,
        )

    def add(self, codes, proba, weight):
        if np.asarray(codes).shape[0]:
            self.accumulator.partial_fit(self.classes[codes], proba, weight)

    def save(self):
        _write_bytes(self.path, self.accumulator.to_bytes())


def _write_bytes(path, data):
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}.") from None


def read_state(path):
    """The accumulator of a state file; any problem is an :class:`InputError`."""
    from ..metrics import CalibrationAccumulator

    path = Path(path)
    try:
        size = path.stat().st_size
        if size > _MAX_STATE_BYTES:
            raise InputError(f"{path}: {size} bytes is too large for a state file.")
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}.") from None
    try:
        return CalibrationAccumulator.from_bytes(data)
    except ValueError as exc:
        raise InputError(f"{path}: not a usable skcalib state: {exc}") from None


def add_merge_parser(sub, handler):
    """The ``merge`` sub-command."""
    import argparse

    merge = sub.add_parser(
        "merge",
        help="report on accumulator states (from report --save-state), merged",
        description=(
            "Merge accumulator states written by 'skcalib report --save-state' "
            "(or CalibrationAccumulator.to_bytes) and report on them without the "
            "predictions: one window per state (table and over-time figure), the "
            "merged calibration, and the merged state."
        ),
        epilog=(
            "examples:\n"
            "  skcalib merge day1.state day2.state day3.state --out week/\n"
            "  skcalib merge states/*.state --out month/ --bootstrap 0"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    merge.add_argument("states", nargs="+", metavar="STATE", help="state files")
    _window_options(merge)
    merge.set_defaults(handler=handler)
    return merge


def _window_options(parser):
    parser.add_argument(
        "--out",
        metavar="DIR",
        default="skcalib-report",
        help="directory for report.json, over_time.png, reliability.png and "
        "merged.state (default: skcalib-report/)",
    )
    parser.add_argument(
        "--bootstrap",
        metavar="B",
        type=int,
        default=100,
        help="bootstrap resamples of each window's SmoothECE interval (0: none)",
    )
    parser.add_argument(
        "--resamples",
        metavar="B",
        type=int,
        default=999,
        help="null draws of each window's test of calibration (0: none)",
    )
    parser.add_argument("--alert-level", metavar="ALPHA", type=float, default=0.001)
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--no-plot", action="store_true", help="no figures")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress")


def run_merge(args, progress):
    """Handler of ``skcalib merge``."""
    windows = {}
    for path in args.states:
        progress.start(f"reading {path}")
        acc = read_state(path)
        progress.done()
        name = Path(path).stem
        if name in windows:
            name = str(path)
        windows[name] = acc
    return write_window_report(windows, args, progress, source="merged states")


def report_directory(args, progress):
    """Handler of ``skcalib report DIR``: every predictions file is a window."""
    from ._read import open_predictions

    folder = Path(args.file)
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and _suffix(p) in _SUFFIXES and not p.name.startswith(".")
    )
    if not files:
        raise InputError(f"{folder}: no predictions file (.csv, .npz, .parquet, ...).")
    windows = {}
    for path in files:
        progress.start(f"reading {path}")
        pred = open_predictions(
            path,
            y_true=args.y_true,
            y_proba=args.y_proba,
            sample_weight=args.sample_weight,
            max_rows=getattr(args, "max_rows", None),
            max_bytes=getattr(args, "max_bytes", None),
        )
        pos_label = _pos_label(args.pos_label, pred.classes)
        saver = StateSaver(
            path, pred, pos_label=pos_label, multi_class=args.multi_class
        )
        for codes, proba, weight in pred.chunks():
            saver.add(codes, proba, weight)
        progress.done()
        windows[path.stem] = saver.accumulator
    return write_window_report(windows, args, progress, source=str(folder))


def _suffix(path):
    name = path.name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    return Path(name).suffix


def _pos_label(text, classes):
    if text is None:
        return None
    for c in classes:
        if str(c) == text:
            return c
    raise InputError(
        f"--pos-label {text!r} is not one of the labels {classes.tolist()}."
    )


def write_window_report(windows, args, progress, *, source):
    """report.json, the per-window table, over_time.png, reliability.png and
    merged.state of ``windows`` (name -> accumulator)."""
    from ..metrics import CalibrationMonitor

    out = OutputDir(args.out)
    first = next(iter(windows.values()))
    monitor = CalibrationMonitor(pos_label=first.pos_label, labels=first.labels)
    try:
        for name, acc in windows.items():
            monitor.add(name, acc)
        merged = monitor.merged()
    except (ValueError, TypeError) as exc:
        raise InputError(f"the states cannot be merged: {exc}") from None
    for name, acc in windows.items():
        if getattr(acc, "tasks_", None) is not None or not acc.n_samples_:
            raise InputError(
                f"{name}: the window report needs binary predictions with samples."
            )
    progress.start("computing the report of every window")
    report = monitor.report(
        n_bootstrap=args.bootstrap,
        n_resamples=args.resamples,
        random_state=args.seed,
    )
    progress.done()
    rows = []
    for i, name in enumerate(report.window):
        rows.append(
            {
                "window": str(name),
                "n_samples": int(report.n_samples[i]),
                "smece": float(report.smece[i]),
                "smece_interval": _pair(report.smece_low[i], report.smece_high[i]),
                "ece": float(report.ece[i]),
                "observed_rate": float(report.observed_rate[i]),
                "expected_rate": float(report.expected_rate[i]),
                "p_value": _number(report.p_value[i]),
                "alert": bool(report.p_value[i] <= args.alert_level),
            }
        )
    from .. import __version__

    result = {
        "source": source,
        "skcalib_version": __version__,
        "n_windows": len(rows),
        "alert_rule": f"p_value <= {args.alert_level:g}",
        "merged": {
            "n_samples": int(merged.n_samples_),
            "smece": merged.smooth_ece(),
            "ece": merged.binned_calibration_error(n_bins=16),
        },
        "windows": rows,
        "outputs": {},
    }
    out.create()
    out.stage("merged.state", lambda fh: fh.write(merged.to_bytes()))
    result["outputs"]["merged_state"] = str(out.path / "merged.state")
    if not args.no_plot:
        progress.start("drawing the figures")
        out.stage("over_time.png", lambda fh: _over_time_png(report, fh, args))
        out.stage("reliability.png", lambda fh: _reliability_png(merged, fh))
        progress.done()
        result["outputs"]["over_time_png"] = str(out.path / "over_time.png")
        result["outputs"]["reliability_png"] = str(out.path / "reliability.png")
    result["outputs"]["report_json"] = str(out.path / "report.json")
    text = json.dumps(result, indent=2, allow_nan=False)
    out.stage("report.json", lambda fh: fh.write((text + "\n").encode("utf-8")))
    out.commit()
    print(_table(result))
    print(f"\nwrote {', '.join(result['outputs'].values())}")
    return 0


def _number(x):
    return None if not np.isfinite(x) else float(x)


def _pair(a, b):
    return None if not (np.isfinite(a) and np.isfinite(b)) else [float(a), float(b)]


def _table(result):
    lines = [
        f"skcalib windows: {result['source']} ({result['n_windows']} windows, "
        f"alert when {result['alert_rule']})",
        f"{'window':<24} {'n':>10} {'smECE':>8} {'interval':>17} {'ECE':>7} "
        f"{'obs-exp':>8} {'p':>7}",
    ]
    for r in result["windows"]:
        ci = r["smece_interval"]
        ci = "" if ci is None else f"[{ci[0]:.4f}, {ci[1]:.4f}]"
        p = "" if r["p_value"] is None else f"{r['p_value']:.4f}"
        gap = r["observed_rate"] - r["expected_rate"]
        flag = "  ALERT" if r["alert"] else ""
        lines.append(
            f"{r['window'][:24]:<24} {r['n_samples']:>10} {r['smece']:>8.4f} "
            f"{ci:>17} {r['ece']:>7.4f} {gap:>+8.4f} {p:>7}{flag}"
        )
    m = result["merged"]
    lines.append(
        f"{'merged':<24} {m['n_samples']:>10} {m['smece']:>8.4f} {'':>17} "
        f"{m['ece']:>7.4f}"
    )
    return "\n".join(lines)


def _over_time_png(report, fh, args):
    # A bare Figure (no pyplot): the command changes no global matplotlib state.
    from matplotlib.figure import Figure

    from ..display import CalibrationOverTimeDisplay

    fig = Figure(figsize=(8, 4), layout="constrained")
    CalibrationOverTimeDisplay.from_report(
        report, ax=fig.subplots(), alert_level=args.alert_level
    )
    fig.savefig(fh, format="png", dpi=100)


def _reliability_png(merged, fh):
    from matplotlib.figure import Figure

    from ..display import SmoothReliabilityDisplay

    fig = Figure(figsize=(5, 5), layout="constrained")
    SmoothReliabilityDisplay.from_accumulator(merged, ax=fig.subplots(), name="merged")
    fig.savefig(fh, format="png", dpi=100)
