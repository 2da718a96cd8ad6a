"""Write ``api.rst`` from the ``__all__`` of each public module.

Sections, their order and their introductions are fixed here; the entries
come from the code, so the page lists exactly what ``import`` offers.
"""

import importlib
import inspect

SECTIONS = [
    (
        "skcalib.metrics",
        "Metrics and scorers",
        "Calibration measures (smooth, binned, kernel), certified upper bounds, "
        "streaming accumulators and scorer objects for ``cross_val_score`` and "
        "``GridSearchCV``.",
    ),
    (
        "skcalib",
        "Estimators",
        "Meta-estimators and transformers that perturb or recalibrate the "
        "probabilities of a classifier.",
    ),
    (
        "skcalib.losses",
        "Losses",
        "Differentiable twins of the metrics on NumPy, PyTorch and JAX arrays, "
        "and PyTorch criteria for calibration-regularised training (see "
        ":doc:`user_guide/training`).",
    ),
    (
        "skcalib.display",
        "Displays",
        "Plotting classes in the style of :class:`sklearn.metrics.RocCurveDisplay`.",
    ),
    (
        "skcalib.datasets",
        "Datasets",
        "Synthetic problems whose calibration error is known exactly.",
    ),
    (
        "skcalib.spark",
        "Spark and Arrow",
        "Calibration statistics of Spark DataFrames and Arrow record batches "
        "(see :doc:`user_guide/monitoring`).",
    ),
    (
        "skcalib.cli",
        "Command line",
        "The ``skcalib report`` command (see :doc:`user_guide/cli`).",
    ),
]

# Top-level re-exports documented under their own module's section.
_SKIP_TOP_LEVEL = {"__version__"}


def _public_names(module):
    names = getattr(module, "__all__", None)
    if names is None:
        return []
    return [n for n in names if not n.startswith("_") and n not in _SKIP_TOP_LEVEL]


def _entries(modname):
    try:
        module = importlib.import_module(modname)
    except ImportError:
        return None, None
    classes, functions = [], []
    for name in _public_names(module):
        obj = getattr(module, name, None)
        if obj is None or inspect.ismodule(obj) or not callable(obj):
            continue  # constants such as datasets.PROBLEMS are described in text
        if modname == "skcalib" and getattr(obj, "__module__", "").startswith(
            ("skcalib.metrics", "skcalib.display", "skcalib.datasets")
        ):
            continue  # documented in its own section
        (classes if inspect.isclass(obj) else functions).append(name)
    return sorted(classes), sorted(functions)


def write_api_page(path):
    lines = [
        ".. _api:",
        "",
        "=============",
        "API reference",
        "=============",
        "",
        "Every public name of skcalib, generated from the docstrings.",
        "",
    ]
    for modname, title, intro in SECTIONS:
        classes, functions = _entries(modname)
        if not classes and not functions:
            continue
        lines += [title, "=" * len(title), "", intro, ""]
        lines += [f".. currentmodule:: {modname}", ""]
        for kind, names, template in (
            ("Classes", classes, "class.rst"),
            ("Functions", functions, "function.rst"),
        ):
            if not names:
                continue
            lines += [kind, "-" * len(kind), ""]
            lines += [
                ".. autosummary::",
                "   :toctree: generated/",
                f"   :template: autosummary/{template}",
                "",
            ]
            lines += [f"   {n}" for n in names]
            lines.append("")
    text = "\n".join(lines)
    # Rewrite only on change so that Sphinx does not rebuild everything.
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
