"""The engine of the calibration tests.

It owns everything a test of ``y ~ Bernoulli(s)`` needs on arrays: the exact
label draws in blocks (:mod:`.draws`), one binary problem at fixed scores
with its reading of the weights (:mod:`.task`), the statistics computed on
blocks of label vectors (:mod:`.statistics`), their asymptotic laws and
the indices that say when those laws hold (:mod:`.laws`), and the exact
p-value by simulation (:mod:`.engine`). The SmoothECE statistic, which
shares the grid of :mod:`..smece`, is in :mod:`..consistency`.
"""

from .engine import RTOL, count_at_least, exact_pvalue, run_blocks
from .laws import brownian_max_abs_sf, brownian_range_sf
from .statistics import median_bandwidth
from .task import NullTask

__all__ = [
    "RTOL",
    "NullTask",
    "brownian_max_abs_sf",
    "brownian_range_sf",
    "count_at_least",
    "exact_pvalue",
    "median_bandwidth",
    "run_blocks",
]
