"""Displays: reliability diagrams, certified-bound and perturbation plots.

They follow scikit-learn's display API (``from_estimator``,
``from_predictions``, ``from_cv_results``, ``plot``; attributes ``line_``,
``ax_``, ``figure_``). matplotlib is imported when a display draws, never at
import time, and its global state (rcParams, styles) is never changed.
"""

from ._binned import BinnedReliabilityDisplay
from ._bound import CalibrationBoundDisplay
from ._over_time import CalibrationOverTimeDisplay
from ._perturbation import PerturbationDisplay
from ._smooth import SmoothReliabilityDisplay

__all__ = [
    "BinnedReliabilityDisplay",
    "CalibrationBoundDisplay",
    "CalibrationOverTimeDisplay",
    "PerturbationDisplay",
    "SmoothReliabilityDisplay",
]
