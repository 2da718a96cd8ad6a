"""skcalib: measure, certify, improve and plot the calibration of classifiers."""

from importlib import import_module as _import_module

__version__ = "0.1.0.dev0"

__all__ = [
    "__version__",
    "PerturbedClassifier",
    "PerturbationScaleResult",
    "perturb_proba",
    "select_perturbation_scale",
    "KernelRecalibrator",
    "RecalibratedClassifier",
]


# Public name -> submodule defining it. The estimators need scikit-learn (over
# 100 MB resident once imported), so they load on first access (PEP 562) and
# ``import skcalib.metrics`` for streaming metrics stays light.
_LAZY = {
    "PerturbedClassifier": ".perturbation",
    "PerturbationScaleResult": ".perturbation",
    "perturb_proba": ".perturbation",
    "select_perturbation_scale": ".perturbation",
    "KernelRecalibrator": ".recalibration",
    "RecalibratedClassifier": ".recalibration",
}
# The subpackages are attributes too (``import skcalib; skcalib.metrics``, as
# ``import sklearn; sklearn.metrics``), each imported on first access, so that
# ``import skcalib`` stays light.
_SUBMODULES = (
    "cli",
    "datasets",
    "display",
    "metrics",
    "perturbation",
    "recalibration",
    "losses",
    "spark",
)


def __getattr__(name):
    if name in _LAZY:
        value = getattr(_import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        # importing a submodule binds it in this namespace
        return _import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
