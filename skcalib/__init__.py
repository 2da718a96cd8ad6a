"""skcalib: measure, certify, improve and plot the calibration of classifiers."""

__version__ = "0.1.0.dev0"

from .perturbation import PerturbedClassifier, select_perturbation_scale  # noqa: E402
from .recalibration import KernelRecalibrator, RecalibratedClassifier  # noqa: E402

__all__ = [
    "__version__",
    "PerturbedClassifier",
    "select_perturbation_scale",
    "KernelRecalibrator",
    "RecalibratedClassifier",
]


def __getattr__(name):
    # ``skcalib.display`` loads on first access so that ``import skcalib``
    # stays free of plotting imports.
    if name == "display":
        import importlib

        return importlib.import_module(".display", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
