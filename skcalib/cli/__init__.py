"""The ``skcalib`` command line: ``skcalib report [FILE] ...``.

``skcalib report`` reads predictions from a file (CSV, plain or gzip'd,
``.npy``, ``.npz``, or Parquet when pyarrow >= 14.0.1 is installed), prints a
table of calibration measures, and writes a reliability diagram
(``reliability.png``) and every number (``report.json``) to an output
directory. Without a file it runs a demo on a built-in dataset.

The package is split in three: :mod:`._read` reads input files chunk by chunk
(bounded memory, hostile input refused), :mod:`._report` assembles the numbers
from the metric functions of :mod:`skcalib.metrics`, :mod:`._write` writes the
outputs atomically without following symlinks.

Errors in the input (unreadable file, missing column, values that are not
probabilities, ...) are reported on one line on stderr with exit code 2; any
other exception is a bug and propagates.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np

from .._backend.progress import Progress
from .._params import MAX_BOOTSTRAP
from ._answers import LEGEND, answers, compare_models, format_answers
from ._html import render_html
from ._progress import StepProgress
from ._read import (
    _SUFFIXES,
    InputError,
    _convert_like,
    open_predictions,
    read_predictions,
)
from ._read import (
    MAX_ROWS as _MAX_ROWS,
)
from ._read import (
    MAX_TEXT_BYTES as _MAX_TEXT_BYTES,
)
from ._report import (
    KDE_MAX_SAMPLES as _KDE_MAX_SAMPLES,
)
from ._report import (
    N_BINS as _N_BINS,
)
from ._report import (
    ReportBuilder,
    _jsonable,
    compute_report,
    format_comparison_table,
    format_table,
    plot_reliability,
)
from ._write import OutputDir

__all__ = ["main", "build_parser", "read_predictions", "compute_report", "format_table"]

EXIT_OK = 0
# Every file ``skcalib report FILE`` may write into --out: those a run does not
# write again are an earlier run's, and are removed.
OUTPUT_NAMES = ("report.json", "report.html") + tuple(
    f"reliability.{fmt}" for fmt in ("png", "svg", "pdf")
)
EXIT_USAGE = 2

# ---------------------------------------------------------------------------
# Demo data
# ---------------------------------------------------------------------------


def demo_predictions(*, perturbation_scale=None, random_state=0):
    """Held-out probabilities of a naive Bayes model on synthetic data.

    Gaussian naive Bayes is over-confident on correlated features, which
    makes its miscalibration visible. When ``perturbation_scale`` is given the
    model is wrapped in :class:`skcalib.PerturbedClassifier` so that the NW
    certified bound applies to its scores.
    """
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(
        n_samples=20_000,
        n_features=20,
        n_informative=6,
        n_redundant=8,
        flip_y=0.05,
        class_sep=0.8,
        random_state=random_state,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.5, random_state=random_state
    )
    model = GaussianNB()
    description = "GaussianNB on make_classification (10000 held-out samples)"
    if perturbation_scale is not None:
        from skcalib import PerturbedClassifier

        model = PerturbedClassifier(
            model, scale=perturbation_scale, random_state=random_state
        )
        description += f", perturbed with scale h={perturbation_scale:g}"
    model.fit(X_train, y_train)
    return y_test, model.predict_proba(X_test)[:, 1], description


def _json_ready(x):
    """``x`` with numpy arrays and scalars as Python objects, and every NaN or
    infinite float as ``None``.

    JSON has no such numbers (Python would write ``NaN``, which strict
    readers reject), and a report can hold them: a slope that one score
    leaves undefined, the standard error of a coefficient the data do not
    inform.
    """
    if isinstance(x, dict):
        return {k: _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if isinstance(x, np.ndarray):
        return _json_ready(x.tolist())
    x = _jsonable(x)
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer, got {value}"
        )
    return value


def _bootstrap_count(text):
    value = _positive_int(text)
    if value > MAX_BOOTSTRAP:
        raise argparse.ArgumentTypeError(
            f"expected at most {MAX_BOOTSTRAP}, got {value}"
        )
    return value


def _bin_count(text):
    value = _positive_int(text)
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"expected 1 to 10000 bins, got {value}")
    return value


def _kde_rows(text):
    value = _positive_int(text)
    if value == 1:
        raise argparse.ArgumentTypeError("expected 0 (all rows) or at least 2, got 1")
    return value


def _ruled_float(rule_name):
    """An ``argparse`` type: a float that obeys the library's rule for the
    parameter (one rule for the API and the command line)."""
    from .._params import RULES

    rule = RULES[rule_name]

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a number, got {text!r}"
            ) from None
        if not rule.accepts(value):
            raise argparse.ArgumentTypeError(f"expected {rule}, got {value}")
        return value

    return parse


def build_parser():
    """The ``argparse`` parser of the ``skcalib`` command.

    Returns
    -------
    argparse.ArgumentParser

    Examples
    --------
    >>> from skcalib.cli import build_parser
    >>> args = build_parser().parse_args(["report", "preds.csv", "--bootstrap", "50"])
    >>> args.file, args.bootstrap
    ('preds.csv', 50)
    """
    parser = argparse.ArgumentParser(
        prog="skcalib",
        description="Measure, certify and plot the calibration of a classifier.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"skcalib {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    rep = sub.add_parser(
        "report",
        help="calibration report of predictions in a file (or a demo)",
        description=(
            "Print calibration measures of predicted probabilities and write "
            "reliability.png and report.json. Without FILE, run a demo on a "
            "built-in dataset."
        ),
        epilog=(
            "examples:\n"
            "  skcalib report\n"
            "  skcalib report preds.csv --y-true label --y-proba score --out report/\n"
            "  skcalib report preds.csv --y-true label --y-proba p_a p_b p_c\n"
            "  skcalib report preds.csv --y-true label --y-proba lr,gbm,nb\n"
            "  skcalib report preds.csv --y-true label --compare\n"
            "  skcalib report preds.npz --bootstrap 500 --bound nw "
            "--perturbation-scale 0.015625"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument(
        "file",
        nargs="?",
        metavar="FILE",
        help=(
            "CSV (with a header; may be gzip'd), .npy, .npz or Parquet file of "
            "predictions"
        ),
    )
    rep.add_argument(
        "--y-true",
        metavar="COL",
        help="label column (default: y_true, y, label, target)",
    )
    rep.add_argument(
        "--y-proba",
        metavar="COL",
        nargs="+",
        help=(
            "probability column(s): one for the positive class, or one per class "
            "(default: y_proba/proba/score, else every other column); "
            "comma-separated names are several models compared in one report "
            "(a,b,c: three binary models; a1,b1 a2,b2: two models of two columns)"
        ),
    )
    rep.add_argument(
        "--compare",
        action="store_true",
        help=(
            "compare several binary models: every numeric column but the label "
            "and weight columns holds one model's probability of the positive "
            "class (or list them: --y-proba a,b,c)"
        ),
    )
    rep.add_argument(
        "--sample-weight",
        metavar="COL",
        help="optional weight column (relative weights: divided by their maximum)",
    )
    rep.add_argument(
        "--max-rows",
        metavar="N",
        type=_positive_int,
        default=None,
        help=(
            f"refuse a file of more than N rows (default: {_MAX_ROWS:,}; 0: no limit)"
        ),
    )
    rep.add_argument(
        "--max-bytes",
        metavar="N",
        type=_positive_int,
        default=None,
        help=(
            "refuse a CSV file of more than N bytes of text once decompressed "
            f"(default: {_MAX_TEXT_BYTES:,}; 0: no limit)"
        ),
    )
    rep.add_argument(
        "--pos-label",
        metavar="LABEL",
        help="positive class of a binary problem: required with one probability "
        "column unless the labels are 0/1, -1/1 or booleans (default: 1; with "
        "two columns, the greater label)",
    )
    rep.add_argument(
        "--bootstrap",
        metavar="N",
        type=_bootstrap_count,
        default=200,
        help="bootstrap resamples for the smooth ECE interval (default: 200; 0: none)",
    )
    rep.add_argument(
        "--confidence-level",
        metavar="Q",
        type=_ruled_float("confidence_level"),
        default=0.95,
        help="level of the bootstrap interval (default: 0.95)",
    )
    rep.add_argument(
        "--bound",
        choices=("nw", "tv"),
        help=(
            "also compute a certified upper bound on the calibration error; nw "
            "is valid only for scores perturbed with the sech kernel of scale "
            "--perturbation-scale"
        ),
    )
    rep.add_argument(
        "--perturbation-scale",
        metavar="H",
        type=_ruled_float("scale"),
        help="scale h of the sech perturbation of the scores (for --bound nw)",
    )
    rep.add_argument(
        "--delta",
        type=_ruled_float("delta"),
        default=0.05,
        help="failure probability of the bound (default: 0.05)",
    )
    rep.add_argument(
        "--kde-max-samples",
        metavar="N",
        type=_kde_rows,
        default=_KDE_MAX_SAMPLES,
        help=(
            "compute ECE-KDE (quadratic cost) on a subsample of at most N rows "
            f"(default: {_KDE_MAX_SAMPLES}; 0: all rows)"
        ),
    )
    rep.add_argument(
        "--n-bins",
        metavar="N",
        type=_bin_count,
        default=_N_BINS,
        help=f"bins of the binned ECE (default: {_N_BINS})",
    )
    rep.add_argument(
        "--multi-class",
        choices=("top-label", "classwise"),
        default="top-label",
        help=(
            "reduction of multiclass input for the smooth and binned ECE: "
            "confidence vs correctness, or the mean over one-vs-rest problems "
            "(default: top-label)"
        ),
    )
    rep.add_argument(
        "--out",
        metavar="DIR",
        default="skcalib-report",
        help=(
            "directory for reliability.png and report.json (default: "
            "skcalib-report/); files are replaced atomically, symlinks in it are "
            "replaced, never followed"
        ),
    )
    rep.add_argument(
        "--no-plot",
        action="store_true",
        help="no figure: write report.json and report.html only",
    )
    rep.add_argument(
        "--format",
        choices=("png", "svg", "pdf"),
        default="png",
        help="format of the reliability diagram (default: png)",
    )
    rep.add_argument(
        "--seed", type=_positive_int, default=0, help="random seed (default: 0)"
    )
    rep.add_argument(
        "--n-jobs", type=int, default=None, help="parallel jobs for the bootstrap"
    )
    rep.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    rep.add_argument(
        "--save-state",
        metavar="STATE",
        default=None,
        help="also write the accumulator state of the predictions to STATE "
        "(for 'skcalib merge')",
    )
    rep.set_defaults(handler=_run_report)
    from ._state import add_merge_parser, run_merge

    add_merge_parser(sub, run_merge)
    return parser


def _file_argument(args):
    """``--y-proba a b FILE``: argparse gives FILE to ``--y-proba`` (it takes
    one or more values); a last value that names a file is the FILE."""
    if args.file is not None or not args.y_proba or len(args.y_proba) < 2:
        return
    last = args.y_proba[-1]
    name = last.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if Path(last).is_file() or Path(name).suffix in _SUFFIXES:
        args.file, args.y_proba = last, args.y_proba[:-1]


def _models_argument(args):
    """The models of ``--y-proba a,b,c`` (one list of columns per model), or
    None for one model. Value i names column i of every model: ``a1,b1
    a2,b2`` are models ``[a1, a2]`` and ``[b1, b2]``."""
    if args.compare and args.y_proba:
        raise InputError(
            "--compare takes every numeric column as a model; to choose the "
            "models, pass --y-proba a,b,c without --compare."
        )
    if not args.y_proba or not any("," in v for v in args.y_proba):
        return None
    parts = [v.split(",") for v in args.y_proba]
    if len({len(p) for p in parts}) > 1 or not all(all(p) for p in parts):
        raise InputError(
            f"--y-proba {' '.join(args.y_proba)}: every value needs one non-empty "
            "name per model, separated by commas (a,b,c: three binary models; "
            "a1,b1 a2,b2: two models with a column per class)."
        )
    return [list(cols) for cols in zip(*parts, strict=True)]


def _one_probability_column(source):
    """Whether the scores are one column (an array, or an opened file)."""
    if isinstance(source, np.ndarray):
        return source.ndim == 1 or source.shape[1] == 1
    arrays = getattr(source.table, "arrays", {})
    width = sum(
        arrays[c].shape[1] if c in arrays and arrays[c].ndim == 2 else 1
        for c in source.proba_cols
    )
    return width == 1


def _run_report(args, progress):
    _file_argument(args)
    if args.file is not None and Path(args.file).is_dir():
        from ._state import report_directory

        # Every predictions file of the directory is one window.
        args.resamples, args.alert_level = 999, 0.001
        return report_directory(args, progress)
    out = OutputDir(args.out)
    if args.bound == "nw" and args.perturbation_scale is None and args.file is not None:
        # Checked before reading a possibly large file.
        raise InputError(
            "--bound nw needs --perturbation-scale H, the scale of the sech "
            "perturbation that produced the scores."
        )
    if args.bound is not None and args.sample_weight is not None:
        raise InputError(
            "certified bounds need one row per sample; --sample-weight cannot be "
            "combined with --bound."
        )
    options = dict(
        n_bins=args.n_bins,
        multi_class=args.multi_class,
        n_bootstrap=args.bootstrap,
        confidence_level=args.confidence_level,
        bound=args.bound,
        delta=args.delta,
        kde_max_samples=args.kde_max_samples,
        random_state=args.seed,
        n_jobs=args.n_jobs,
    )
    if args.file is None:
        if args.y_true or args.y_proba or args.sample_weight or args.compare:
            raise InputError(
                "--y-true, --y-proba, --sample-weight and --compare need a FILE."
            )
        scale = args.perturbation_scale
        if args.bound == "nw" and scale is None:
            scale = 2.0**-6
        progress.start("demo: fitting a model on a built-in dataset")
        y_true, y_proba, source = demo_predictions(
            perturbation_scale=scale, random_state=args.seed
        )
        progress.done()
        info = {"file": None, "demo": source}
        args.perturbation_scale = scale
        plot_title = "demo: " + source.split(" (")[0]
    else:
        models = _models_argument(args)
        progress.start(f"reading the labels of {args.file}")
        pred = open_predictions(
            args.file,
            y_true=args.y_true,
            y_proba=None if models else args.y_proba,
            sample_weight=args.sample_weight,
            models=models,
            compare=args.compare,
            max_rows=args.max_rows,
            max_bytes=args.max_bytes,
        )
        progress.done()
        if len(pred.models) > 1 and args.save_state is not None:
            raise InputError(
                "--save-state keeps the state of one model; with several models "
                "run one report per model."
            )
        # The distinct labels of the file: --pos-label must be one of them.
        y_true = pred.classes
        source = args.file
        plot_title = Path(args.file).name

    pos_label = None
    if args.pos_label is not None:
        converted = _convert_like([args.pos_label], y_true)
        present = np.unique(y_true)
        if converted is None or not np.isin(converted, present).all():
            raise InputError(
                f"--pos-label {args.pos_label!r} is not one of the labels "
                f"{[_jsonable(v) for v in present[:20]]}."
            )
        pos_label = converted[0]
    elif _one_probability_column(y_proba if args.file is None else pred):
        from .._validation import default_pos_label

        present = np.unique(y_true)
        try:
            if present.shape[0] <= 2:  # more classes: refused by the metrics
                default_pos_label(present)
        except ValueError:
            shown = [_jsonable(v) for v in present[:20]]
            raise InputError(
                f"the labels {shown} have no default positive class and the "
                "scores are one probability column: pass --pos-label LABEL, the "
                "class whose probability the column holds."
            ) from None

    out.create()
    if args.file is not None and len(pred.models) > 1:
        return _report_models(args, pred, pos_label, options, out, progress)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if args.file is None:
            report, curve, display = compute_report(
                y_true,
                y_proba,
                pos_label=pos_label,
                perturbation_scale=args.perturbation_scale,
                progress=progress,
                return_display=True,
                **options,
            )
        else:
            builder = _builder(args, pred, pred.models[0], pos_label, options)
            saver = None
            if args.save_state is not None:
                from ._state import StateSaver

                saver = StateSaver(
                    args.save_state,
                    pred,
                    pos_label=pos_label,
                    multi_class=args.multi_class,
                )
            progress.start(f"reading {args.file}")
            with Progress("rows", pred.n_rows) as rows:
                for codes, proba, weight in pred.chunks():
                    builder.add(codes, proba, weight)
                    if saver is not None:
                        saver.add(codes, proba, weight)
                    rows.advance(codes.shape[0])
            progress.done()
            if saver is not None:
                saver.save()
            report, curve = builder.finish(progress)
            display = None if args.no_plot else builder.display(curve)
            info = pred.info()
        report["input"] = info
        report["seed"] = args.seed

        figure = _stage_figure(args, out, progress, display, plot_title)
    report["answers"] = answers(report)
    return _write_report(
        args,
        out,
        report,
        progress,
        caught=caught,
        figure=figure,
        title=f"skcalib report: {source}",
        table=format_table(report),
        shown=report["answers"],
    )


def _builder(args, pred, model, pos_label, options):
    """The ReportBuilder of ``model``'s columns in ``pred``."""
    return ReportBuilder(
        pred.classes,
        model.n_columns,
        weighted=pred.weight_col is not None,
        pos_label=pos_label,
        labels=model.labels,
        perturbation_scale=args.perturbation_scale,
        describe=f"{pred.path} ({pred.describe(model)})",
        **options,
    )


def _stage_figure(args, out, progress, display, title, names=None):
    """Stage the reliability diagram (None with --no-plot); its path."""
    if args.no_plot:
        return None
    figure = out.path / f"reliability.{args.format}"
    progress.start(f"drawing {figure}")
    out.stage(
        figure.name,
        lambda fh: plot_reliability(
            display, fh, title=title, fmt=args.format, names=names
        ),
    )
    progress.done()
    return figure


def _report_models(args, pred, pos_label, options, out, progress):
    """The report of several models read in one pass: a report per model
    under its name, one table with a column per model, one figure."""
    builders = {
        m.name: _builder(args, pred, m, pos_label, options) for m in pred.models
    }
    names = list(builders)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        progress.start(f"reading {args.file} ({len(names)} models)")
        with Progress("rows", pred.n_rows) as rows:
            for codes, probas, weight in pred.model_chunks():
                for builder, proba in zip(builders.values(), probas, strict=True):
                    builder.add(codes, proba, weight)
                rows.advance(codes.shape[0])
        progress.done()
        reports, displays = {}, []
        for name, builder in builders.items():
            progress.note(f"model {name}:")
            report, curve = builder.finish(progress)
            report["answers"] = answers(report)
            reports[name] = report
            if not args.no_plot:
                displays.append(builder.display(curve))
        figure = _stage_figure(
            args, out, progress, displays, Path(args.file).name, names
        )
    comparison = compare_models(reports)
    report = {
        "models": reports,
        "answers": [comparison],
        "input": pred.info(),
        "seed": args.seed,
    }
    # Each question's reading is said once, under the first model.
    shown = [comparison] + [
        {
            **a,
            "question": f"{name}: {a['question']}",
            "key": f"{name}-{a['key']}",
            "how_to_read": a["how_to_read"] if name == names[0] else "",
        }
        for name, r in reports.items()
        for a in r["answers"]
    ]
    return _write_report(
        args,
        out,
        report,
        progress,
        caught=caught,
        figure=figure,
        title=f"skcalib report: {args.file} ({len(names)} models)",
        table=format_comparison_table(reports),
        shown=shown,
    )


def _write_report(
    args,
    out,
    report,
    progress,
    *,
    caught,
    figure,
    title,
    table,
    shown,
):
    """Write report.json and report.html beside the staged figure, and print
    the table and the answers ``shown``."""
    for w in caught:
        progress.note(f"warning: {_one_line(str(w.message))}")

    from .. import __version__

    report["skcalib_version"] = __version__
    report["outputs"] = {
        "reliability_png": None if figure is None else str(figure),
        "report_json": str(out.path / "report.json"),
    }
    if figure is not None and args.format != "png":
        report["outputs"]["reliability_png"] = None
        report["outputs"][f"reliability_{args.format}"] = str(figure)
    report["outputs"]["report_html"] = str(out.path / "report.html")
    text = json.dumps(_json_ready(report), indent=2, allow_nan=False)
    out.stage("report.json", lambda fh: fh.write((text + "\n").encode("utf-8")))
    page = render_html(
        title=title,
        summary=table.splitlines()[0],
        answers=shown,
        legend=LEGEND,
        table="\n".join(table.splitlines()[2:]),
        figure_name=None if figure is None else figure.name,
    )
    out.stage("report.html", lambda fh: fh.write(page.encode("utf-8")))
    out.commit(OUTPUT_NAMES)
    print(title)
    print(table)
    print("\n" + "\n".join(format_answers(shown)))
    written = [
        str(p)
        for p in (figure, out.path / "report.json", out.path / "report.html")
        if p is not None
    ]
    print(f"\nwrote {', '.join(written)}")
    return EXIT_OK


def _one_line(text):
    return " ".join(str(text).split())


def main(argv=None):
    """Entry point of the ``skcalib`` command; returns the exit code.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments without the program name; ``None`` reads ``sys.argv``.

    Returns
    -------
    int
        0 on success, 2 on bad input (one-line message on stderr). Other
        exceptions (bugs) propagate.

    Examples
    --------
    >>> from skcalib.cli import main
    >>> main(["report", "no-such-file.csv", "--quiet"])
    2
    """
    # pyarrow's default allocator (mimalloc) reserves a gigabyte of address
    # space; the system allocator keeps the command within a memory limit.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = StepProgress(not args.quiet)
    try:
        with progress.reporting():
            return args.handler(args, progress)
    except (InputError, OSError) as exc:
        # Only problems with the input or the files: any other exception
        # (TypeError, ...) is a bug and keeps its traceback.
        progress.abort()
        print(f"skcalib {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        progress.abort()
        print("skcalib: interrupted", file=sys.stderr)
        return 130
