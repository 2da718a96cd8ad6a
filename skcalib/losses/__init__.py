"""Differentiable calibration losses on the array API (NumPy, PyTorch, JAX).

The functions take arrays of any supported namespace and return a 0-d array
of that namespace, on the input's device, that carries gradients; the
PyTorch modules wrap them as criteria (``torch.nn.CrossEntropyLoss``-style)
for training loops and skorch. PyTorch and JAX are imported only when their
arrays are given (or a PyTorch module is asked for).
"""

from importlib import import_module as _import_module

__all__ = [
    "CalibratedCrossEntropyLoss",
    "KDECalibrationLoss",
    "kde_calibration_loss",
    "select_kde_bandwidth",
    "smooth_ece_loss",
]

# Public name -> submodule defining it, loaded on first access (PEP 562).
_LAZY = {
    "CalibratedCrossEntropyLoss": "._torch",
    "KDECalibrationLoss": "._torch",
    "kde_calibration_loss": "._kde",
    "select_kde_bandwidth": "._kde",
    "smooth_ece_loss": "._smooth",
}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(_import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
