"""Turn user input into canonical float64 arrays.

This is the only module that parses ``y_true`` / ``y_proba`` / ``sample_weight``
(and the other array inputs: groups, labels, a wrapped model's probabilities).
Everything downstream (``skcalib._backend``, the metrics, estimators and
displays) may assume the invariants documented on :class:`CalibrationData`.
Scalar parameters have their rules in :mod:`skcalib._params`.

The parsers live in one module per kind of input: :mod:`.arrays` (numbers,
weights, groups), :mod:`.labels`, :mod:`.probabilities`, :mod:`.problem`
(a whole problem checked together) and :mod:`.array_api`.
"""

from .array_api import (
    ArrayAPIData,
    array_namespace_of,
    check_array_api_inputs,
    check_array_api_probabilities,
    check_array_api_weights,
)
from .arrays import (
    check_cv_splits,
    check_groups,
    check_sample_weight,
)
from .labels import (
    check_column_labels,
    check_known_labels,
    check_label_chunk,
    check_same_label_kind,
    check_target,
    default_pos_label,
    encode_class_labels,
    greater_label,
)
from .probabilities import (
    PROBA_TOL,
    ROW_SUM_TOL,
    as_probability_columns,
    check_estimator_proba,
    check_perturbed_scores,
    check_perturbed_spread,
    check_probability_array,
    check_probability_matrix,
    from_predict_proba,
    proba_tolerances,
    row_sum_error,
    warn_hard_labels,
)
from .problem import CalibrationData, binary_tasks, check_calibration_inputs

# The package's parsers, one import away for the modules that use them.
__all__ = [
    "ArrayAPIData",
    "CalibrationData",
    "PROBA_TOL",
    "ROW_SUM_TOL",
    "array_namespace_of",
    "as_probability_columns",
    "binary_tasks",
    "check_array_api_inputs",
    "check_array_api_probabilities",
    "check_array_api_weights",
    "check_calibration_inputs",
    "check_column_labels",
    "check_cv_splits",
    "check_estimator_proba",
    "check_groups",
    "check_known_labels",
    "check_label_chunk",
    "check_perturbed_scores",
    "check_perturbed_spread",
    "check_probability_array",
    "check_probability_matrix",
    "check_same_label_kind",
    "check_sample_weight",
    "check_target",
    "default_pos_label",
    "encode_class_labels",
    "from_predict_proba",
    "greater_label",
    "proba_tolerances",
    "row_sum_error",
    "warn_hard_labels",
]
