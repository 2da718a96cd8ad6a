"""skcalib: measure, certify, improve and plot the calibration of classifiers."""

__version__ = "0.1.0.dev0"

from .perturbation import PerturbedClassifier, select_perturbation_scale  # noqa: E402

__all__ = [
    "__version__",
    "PerturbedClassifier",
    "select_perturbation_scale",
]
