"""Warnings and errors of skcalib, as :mod:`sklearn.exceptions` holds scikit-learn's.

Import a class from here to silence or catch it, e.g.
``warnings.filterwarnings("ignore", category=HardLabelWarning)``.
"""

from ._params import InvalidParameterError

__all__ = ["HardLabelWarning", "InvalidParameterError"]


class HardLabelWarning(UserWarning):
    """Warning that ``y_proba`` holds only the values 0 and 1.

    Such scores are usually hard class predictions (the output of
    ``predict``) passed where probabilities (``predict_proba``) were meant;
    a calibration measure of hard predictions says nothing about the
    model's probabilities. Scores that come from a model's
    ``predict_proba`` (in a scorer or a display's ``from_estimator``) are
    never warned about. If exact 0/1 scores are meant, silence the warning
    with ``warnings.filterwarnings("ignore", category=HardLabelWarning)``.

    Examples
    --------
    >>> import warnings
    >>> from skcalib.exceptions import HardLabelWarning
    >>> from skcalib.metrics import binned_calibration_error
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     error = binned_calibration_error([0, 1, 1, 0], [0, 1, 0, 0])
    >>> error, caught[0].category.__name__
    (0.25, 'HardLabelWarning')
    """
