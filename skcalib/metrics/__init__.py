"""Calibration metrics and scorers."""

from ._accumulator import CalibrationAccumulator, StreamingCalibrationBound
from ._binned import binned_calibration_error
from ._bound_scorer import CalibrationBoundScorer
from ._bounds import CalibrationBound, calibration_error_bound
from ._kde import KDECalibrationResult, kde_calibration_error
from ._scorer import CalibrationScorer, get_scorer, get_scorer_names
from ._smooth import SmoothCalibrationCurve, smooth_calibration_curve, smooth_ece

__all__ = [
    "binned_calibration_error",
    "CalibrationBound",
    "calibration_error_bound",
    "CalibrationAccumulator",
    "CalibrationBoundScorer",
    "CalibrationScorer",
    "get_scorer",
    "get_scorer_names",
    "KDECalibrationResult",
    "kde_calibration_error",
    "SmoothCalibrationCurve",
    "smooth_calibration_curve",
    "smooth_ece",
    "StreamingCalibrationBound",
]
