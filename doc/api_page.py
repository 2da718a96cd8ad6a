"""Write ``api.rst`` from the ``__all__`` of each public module.

Sections, the groups inside them and their introductions are fixed here; the
entries come from the code. A group names the entries it claims, and
:func:`api_sections` checks the claims against ``__all__``: a claimed name
the module does not export is an error, and a public name no group claims
lands in an ``Other`` group, which ``tests/test_docs.py`` forbids. The page
therefore lists exactly what ``import`` offers, each name once.
"""

import importlib
import inspect

OTHER = "Other"

# (module, title, introduction, [(group, introduction, [names])]). Names are
# listed by purpose, in the order a reader meets them.
SECTIONS = [
    (
        "skcalib.metrics",
        "Metrics and scorers",
        "Measures, certified bounds, tests, streaming accumulators and scorers "
        "of the calibration of binary and multiclass classifiers.",
        [
            (
                "Measures",
                "How far the probabilities are from calibrated (see "
                ":doc:`user_guide/measures`).",
                [
                    "smooth_ece",
                    "smooth_calibration_curve",
                    "binned_calibration_error",
                    "kde_calibration_error",
                    "score_decomposition",
                ],
            ),
            (
                "Certified bounds",
                "Upper bounds on the calibration error that hold with a stated "
                "probability (see :doc:`user_guide/certified`).",
                ["calibration_error_bound", "StreamingCalibrationBound"],
            ),
            (
                "Tests and summaries",
                "Whether the probabilities are calibrated, as a p-value, and the "
                "clinical summary of a validation set (see "
                ":doc:`user_guide/calibration_tests`).",
                ["calibration_test", "calibration_summary"],
            ),
            (
                "Streaming and monitoring",
                "Metrics accumulated chunk by chunk, and calibration watched "
                "window by window (see :doc:`user_guide/monitoring`).",
                ["CalibrationAccumulator", "CalibrationMonitor"],
            ),
            (
                "Scorers",
                "Calibration as the ``scoring`` of ``cross_val_score`` and "
                "``GridSearchCV``.",
                [
                    "CalibrationScorer",
                    "CalibrationBoundScorer",
                    "get_scorer",
                    "get_scorer_names",
                ],
            ),
            (
                "Result records",
                "The objects the functions above return; they are not built by hand.",
                [
                    "SmoothECEResult",
                    "SmoothCalibrationCurve",
                    "BinnedCalibrationResult",
                    "KDECalibrationResult",
                    "ScoreDecomposition",
                    "CalibrationBound",
                    "CalibrationTestResult",
                    "CalibrationSummary",
                    "GroupedCalibrationResult",
                    "MonitoringReport",
                    "ChangeTestResult",
                ],
            ),
        ],
    ),
    (
        "skcalib",
        "Estimators",
        "Meta-estimators and transformers that recalibrate or perturb the "
        "probabilities of a classifier.",
        [
            (
                "Recalibration",
                "Map the probabilities of a fitted classifier to calibrated ones "
                "(see :doc:`user_guide/recalibration`).",
                ["RecalibratedClassifier", "KernelRecalibrator"],
            ),
            (
                "Perturbation",
                "Smooth a classifier's probabilities so that a certified bound "
                "applies (see :doc:`user_guide/certified`).",
                [
                    "PerturbedClassifier",
                    "perturb_proba",
                    "select_perturbation_scale",
                    "PerturbationScaleResult",
                ],
            ),
        ],
    ),
    (
        "skcalib.display",
        "Displays",
        "Plotting classes in the style of :class:`sklearn.metrics.RocCurveDisplay` "
        "(see :doc:`user_guide/plotting`).",
        [
            (
                "Reliability diagrams",
                "Observed frequency against predicted probability.",
                ["SmoothReliabilityDisplay", "BinnedReliabilityDisplay"],
            ),
            (
                "Bounds, perturbation and monitoring",
                "Figures of the certified bound, of the perturbation trade-off "
                "and of a monitored stream.",
                [
                    "CalibrationBoundDisplay",
                    "PerturbationDisplay",
                    "CalibrationOverTimeDisplay",
                ],
            ),
        ],
    ),
    (
        "skcalib.losses",
        "Losses",
        "Calibration losses for training (see :doc:`user_guide/training`).",
        [
            (
                "Differentiable metrics",
                "Twins of the metrics on NumPy, PyTorch and JAX arrays.",
                ["smooth_ece_loss", "kde_calibration_loss", "select_kde_bandwidth"],
            ),
            (
                "PyTorch criteria",
                "Modules for calibration-regularised training.",
                ["CalibratedCrossEntropyLoss", "KDECalibrationLoss"],
            ),
        ],
    ),
    (
        "skcalib.datasets",
        "Datasets",
        "Synthetic problems whose calibration error is known exactly; their "
        "names are in ``skcalib.datasets.PROBLEMS``.",
        [
            (
                "Problems with a known calibration error",
                "Draw a sample, and the exact quantities it estimates.",
                [
                    "make_calibration_problem",
                    "true_calibration_error",
                    "calibration_function",
                    "score_density",
                ],
            ),
        ],
    ),
    (
        "skcalib.spark",
        "Spark and Arrow",
        "Calibration statistics of data that does not fit in memory (see "
        ":doc:`user_guide/monitoring`).",
        [
            (
                "Distributed accumulation",
                "Reduce a Spark DataFrame or Arrow record batches to a "
                ":class:`~skcalib.metrics.CalibrationAccumulator`.",
                ["accumulate", "accumulate_arrow"],
            ),
        ],
    ),
]

# The ``skcalib`` command is documented as a command, not as Python functions:
# ``skcalib.cli`` exports its parts for the tests and for embedding, and the
# API page points to the command's page instead of listing them.
COMMAND_LINE = (
    "Command line",
    "The ``skcalib report`` command is documented in :doc:`user_guide/cli`.",
)

# Top-level re-exports documented under their own module's section.
_SKIP_TOP_LEVEL = {"__version__"}


def public_names(modname):
    """The documented names of a module: its ``__all__`` minus constants.

    Constants such as ``datasets.PROBLEMS`` are described in text, and the
    metrics that ``skcalib`` re-exports are documented in their own section.
    """
    module = importlib.import_module(modname)
    names = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name, None)
        if name.startswith("_") or name in _SKIP_TOP_LEVEL:
            continue
        if obj is None or inspect.ismodule(obj) or not callable(obj):
            continue
        if modname == "skcalib" and getattr(obj, "__module__", "").startswith(
            ("skcalib.metrics", "skcalib.display", "skcalib.datasets")
        ):
            continue
        names.append(name)
    return names


def api_sections():
    """The sections of the API page with their groups, checked against the code.

    Returns
    -------
    sections : list of tuple
        ``(module, title, intro, groups)`` where each group is
        ``(title, intro, names)``. Public names that no group claims are in a
        last group titled :data:`OTHER`. Modules that cannot be imported (an
        optional dependency is missing) are left out.

    Raises
    ------
    ValueError
        If a group claims a name its module does not export, or claims it twice.
    """
    sections = []
    for modname, title, intro, groups in SECTIONS:
        try:
            names = public_names(modname)
        except ImportError:
            continue
        claimed = [n for _, _, group in groups for n in group]
        stale = sorted(set(claimed) - set(names))
        twice = sorted({n for n in claimed if claimed.count(n) > 1})
        if stale or twice:
            raise ValueError(
                f"api_page.SECTIONS for {modname}: not exported {stale}, "
                f"claimed twice {twice}"
            )
        groups = list(groups)
        unclaimed = [n for n in names if n not in claimed]
        if unclaimed:
            groups.append((OTHER, None, unclaimed))
        sections.append((modname, title, intro, groups))
    return sections


def _autosummary(module, names):
    # One table per run of classes or functions (the template differs), so
    # that the group keeps its reading order.
    lines, runs = [], []
    for name in names:
        kind = "class" if inspect.isclass(getattr(module, name)) else "function"
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(name)
        else:
            runs.append((kind, [name]))
    for kind, entries in runs:
        lines += [
            ".. autosummary::",
            "   :toctree: generated/",
            f"   :template: autosummary/{kind}.rst",
            "   :nosignatures:",
            "",
        ]
        lines += [f"   {n}" for n in entries]
        lines.append("")
    return lines


def write_api_page(path):
    lines = [
        ".. _api:",
        "",
        "=============",
        "API reference",
        "=============",
        "",
        "Every public name of skcalib, by module and purpose, with the first "
        "line of its docstring; each name links to its full page.",
        "",
    ]
    for modname, title, intro, groups in api_sections():
        module = importlib.import_module(modname)
        lines += [title, "=" * len(title), "", f"``{modname}``: {intro}", ""]
        lines += [f".. currentmodule:: {modname}", ""]
        for group, group_intro, names in groups:
            lines += [group, "-" * len(group), ""]
            if group_intro:
                lines += [group_intro, ""]
            lines += _autosummary(module, names)
    title, text = COMMAND_LINE
    lines += [title, "=" * len(title), "", text, ""]
    text = "\n".join(lines)
    # Rewrite only on change so that Sphinx does not rebuild everything.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
