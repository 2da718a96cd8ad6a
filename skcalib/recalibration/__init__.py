"""Recalibration: the estimated calibration function as the recalibration map.

:class:`KernelRecalibrator` is a transformer from predicted probabilities to
recalibrated probabilities, ``f -> mu_hat(f) = E_hat[y | f]``.
:class:`RecalibratedClassifier` wraps a classifier and any such calibrator,
with the cross-fitting vocabulary of
:class:`sklearn.calibration.CalibratedClassifierCV`.
"""

from ._classifier import RecalibratedClassifier
from ._kernel import KernelRecalibrator

__all__ = ["KernelRecalibrator", "RecalibratedClassifier"]
