"""Hard class predictions passed as probabilities are warned about once."""

import warnings

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from skcalib.exceptions import HardLabelWarning
from skcalib.metrics import (
    binned_calibration_error,
    calibration_test,
    get_scorer,
    kde_calibration_error,
    smooth_ece,
)


def _hard_label_warnings(func, *args, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        func(*args, **kwargs)
    return [w for w in caught if issubclass(w.category, HardLabelWarning)]


@pytest.fixture
def labels_and_predictions():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    predicted = np.where(rng.random(200) < 0.8, y, 1 - y)
    return y, predicted


@pytest.mark.parametrize(
    "metric",
    [smooth_ece, binned_calibration_error, kde_calibration_error, calibration_test],
)
def test_hard_predictions_warn_once_at_the_callers_line(metric, labels_and_predictions):
    y, predicted = labels_and_predictions
    kwargs = {"random_state": 0} if metric is calibration_test else {}
    caught = _hard_label_warnings(metric, y, predicted, **kwargs)
    assert len(caught) == 1
    assert caught[0].filename == __file__
    assert "predict_proba" in str(caught[0].message)
    assert issubclass(HardLabelWarning, UserWarning)


def test_one_hot_multiclass_predictions_warn(labels_and_predictions):
    y = np.arange(60) % 3
    one_hot = np.eye(3)[(y + (np.arange(60) % 7 == 0)) % 3]
    assert len(_hard_label_warnings(smooth_ece, y, one_hot)) == 1


def test_probabilities_do_not_warn(labels_and_predictions):
    y, predicted = labels_and_predictions
    # One interior value among 0s and 1s is enough to be probabilities.
    scores = predicted.astype(float)
    scores[150] = 0.5
    assert _hard_label_warnings(smooth_ece, y, scores) == []
    assert _hard_label_warnings(binned_calibration_error, y, scores) == []


def test_the_warning_can_be_silenced(labels_and_predictions):
    y, predicted = labels_and_predictions
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=HardLabelWarning)
        smooth_ece(y, predicted)


def test_predict_proba_of_a_model_never_warns(labels_and_predictions):
    # A fully grown tree gives exact 0/1 probabilities: they are probabilities.
    y, predicted = labels_and_predictions
    X = np.column_stack([predicted, np.arange(200)])
    tree = DecisionTreeClassifier(random_state=0).fit(X, y)
    assert set(np.unique(tree.predict_proba(X))) <= {0.0, 1.0}
    for name in ["neg_smooth_ece", "neg_l1_calibration_error"]:
        assert _hard_label_warnings(get_scorer(name), tree, X, y) == []
    from skcalib.display import BinnedReliabilityDisplay, SmoothReliabilityDisplay

    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    binned = BinnedReliabilityDisplay.from_estimator
    assert _hard_label_warnings(binned, tree, X, y) == []
    smooth = SmoothReliabilityDisplay.from_estimator
    assert _hard_label_warnings(smooth, tree, X, y, n_bootstrap=0) == []


def test_internal_stand_in_scores_never_warn():
    # The accumulator resolves its positive class on stand-in zeros; a
    # stream of real probabilities must not be reported as hard labels.
    from skcalib.metrics import CalibrationAccumulator, CalibrationMonitor

    rng = np.random.default_rng(1)
    p = rng.uniform(size=500)
    y = rng.uniform(size=500) < p
    acc = CalibrationAccumulator().partial_fit(y, p)
    assert _hard_label_warnings(acc.smooth_ece) == []
    monitor = CalibrationMonitor()
    monitor.partial_fit(y, p, key="a")
    assert _hard_label_warnings(monitor.report, n_bootstrap=0, n_resamples=0) == []
