"""Calibration metrics and scorers."""

from importlib import import_module as _import_module

__all__ = [
    "BinnedCalibrationResult",
    "binned_calibration_error",
    "calibration_summary",
    "calibration_test",
    "CalibrationBound",
    "calibration_error_bound",
    "CalibrationAccumulator",
    "CalibrationBoundScorer",
    "CalibrationMonitor",
    "ChangeTestResult",
    "CalibrationScorer",
    "CalibrationSummary",
    "CalibrationTestResult",
    "get_scorer",
    "get_scorer_names",
    "GroupedCalibrationResult",
    "KDECalibrationResult",
    "kde_calibration_error",
    "SmoothCalibrationCurve",
    "smooth_calibration_curve",
    "score_decomposition",
    "ScoreDecomposition",
    "smooth_ece",
    "SmoothECEResult",
    "StreamingCalibrationBound",
    "MonitoringReport",
]

# Public name -> submodule defining it, loaded on first access (PEP 562), so
# that ``from skcalib.metrics import CalibrationAccumulator`` loads only what
# streaming needs (numpy, scipy.fft). The metric modules import scikit-learn
# (over 100 MB resident) only inside the functions that need it; streaming a
# numpy array never does.
_LAZY = {
    "CalibrationAccumulator": "._accumulator",
    "StreamingCalibrationBound": "._streaming_bound",
    "binned_calibration_error": "._binned",
    "BinnedCalibrationResult": "._results",
    "CalibrationBoundScorer": "._scorer",
    "CalibrationBound": "._results",
    "calibration_error_bound": "._bounds",
    "KDECalibrationResult": "._results",
    "kde_calibration_error": "._kde",
    "CalibrationScorer": "._scorer",
    "CalibrationSummary": "._summary",
    "calibration_summary": "._summary",
    "CalibrationTestResult": "._calibration_test",
    "calibration_test": "._calibration_test",
    "ScoreDecomposition": "._decomposition",
    "score_decomposition": "._decomposition",
    "get_scorer": "._scorer",
    "get_scorer_names": "._scorer",
    "GroupedCalibrationResult": "._results",
    "SmoothCalibrationCurve": "._results",
    "smooth_calibration_curve": "._smooth",
    "smooth_ece": "._smooth",
    "SmoothECEResult": "._results",
    "CalibrationMonitor": "._monitor",
    "ChangeTestResult": "._monitor",
    "MonitoringReport": "._monitor",
}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(_import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
