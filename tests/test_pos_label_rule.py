"""The default positive class of a 1-D ``y_proba`` follows scikit-learn's rule.

With the probability of the positive class only, ``pos_label=None`` is 1 for
labels in {0, 1}, {-1, 1} (or a subset) and ``True`` for booleans; any other
labels are an error asking for ``pos_label``, as in
``sklearn.calibration.calibration_curve`` and ``brier_score_loss``.
"""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.linear_model import LogisticRegression

from skcalib.metrics import (
    CalibrationAccumulator,
    binned_calibration_error,
    get_scorer,
    kde_calibration_error,
    smooth_calibration_curve,
    smooth_ece,
)


def brute_force_ece(y, s, n_bins=10):
    """Uniform-bin ECE by a loop over the bins ``(k/B, (k+1)/B]`` (first closed)."""
    y, s = np.asarray(y, dtype=float), np.asarray(s, dtype=float)
    total = 0.0
    for k in range(n_bins):
        lo, hi = k / n_bins, (k + 1) / n_bins
        mask = (s > lo) & (s <= hi) if k > 0 else (s >= lo) & (s <= hi)
        if mask.any():
            total += mask.mean() * abs(y[mask].mean() - s[mask].mean())
    return total


def _churn(n=400, seed=0):
    rng = np.random.default_rng(seed)
    p_churn = rng.uniform(size=n)
    churn = rng.uniform(size=n) < p_churn  # calibrated for "churn"
    return np.where(churn, "churn", "stay"), p_churn, churn


METRICS = [
    lambda y, p, **kw: smooth_ece(y, p, **kw),
    lambda y, p, **kw: smooth_calibration_curve(y, p, **kw),
    lambda y, p, **kw: binned_calibration_error(y, p, **kw),
    lambda y, p, **kw: kde_calibration_error(y, p, bandwidth=0.1, **kw),
]


@pytest.mark.parametrize("metric", METRICS)
def test_text_labels_with_one_probability_column_need_pos_label(metric):
    labels, p, _ = _churn()
    with pytest.raises(ValueError, match="pos_label") as info:
        metric(labels, p)
    assert "y_true" in str(info.value)


@pytest.mark.parametrize(
    "y",
    [
        ["churn", "stay"],
        ["a"],
        [1, 2],
        [2],
        [-1, 0],
        [0, 2],
        np.array(["0", "1"]),
        [0, 1],
        [0],
        [1],
        [-1],
        [-1, 1],
        [0.0, 1.0],
        [True, False],
        [False],
    ],
)
def test_error_exactly_when_calibration_curve_refuses(y):
    # scikit-learn's calibration_curve is the reference for when pos_label=None
    # is allowed with 1-D probabilities.
    y = np.asarray(y)
    y = np.resize(y, 12)
    p = np.linspace(0.05, 0.95, 12)
    try:
        calibration_curve(y, p, n_bins=3)
        sklearn_refuses = False
    except ValueError:
        sklearn_refuses = True
    if sklearn_refuses:
        with pytest.raises(ValueError, match="pos_label"):
            binned_calibration_error(y, p, n_bins=3)
    else:
        ours = binned_calibration_error(y, p, n_bins=3)
        assert ours == pytest.approx(brute_force_ece(y == 1, p, n_bins=3), abs=1e-12)


def test_text_labels_with_pos_label_score_that_class():
    labels, p, churn = _churn()
    ece = binned_calibration_error(labels, p, n_bins=10, pos_label="churn")
    assert ece == pytest.approx(brute_force_ece(churn, p), abs=1e-12)
    # the well-calibrated model is measured as such (0.82-ish if inverted)
    assert smooth_ece(labels, p, pos_label="churn") < 0.1


def test_two_columns_keep_the_sorted_label_order_without_pos_label():
    labels, p, churn = _churn()
    P = np.column_stack([p, 1 - p])  # columns of sorted labels: churn, stay
    ece = binned_calibration_error(labels, P, n_bins=10)
    assert ece == pytest.approx(brute_force_ece(~churn, 1 - p), abs=1e-12)
    # labels= gives the column order
    ece = binned_calibration_error(
        labels, P[:, ::-1], n_bins=10, labels=["stay", "churn"]
    )
    assert ece == pytest.approx(brute_force_ece(~churn, 1 - p), abs=1e-12)


def test_scorer_passes_the_last_class_of_the_estimator():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 2))
    y = np.where(X[:, 0] + rng.normal(size=600) > 0, "yes", "no")
    clf = LogisticRegression().fit(X, y)
    p = clf.predict_proba(X)[:, list(clf.classes_).index("yes")]
    scorer = get_scorer("neg_expected_calibration_error")
    ref = brute_force_ece(y == "yes", p, n_bins=15)
    assert -scorer(clf, X, y) == pytest.approx(ref, abs=1e-12)


def test_accumulator_refuses_text_labels_of_one_column_at_the_chunk():
    labels, p, churn = _churn()
    acc = CalibrationAccumulator()
    with pytest.raises(ValueError, match="pos_label"):
        acc.partial_fit(labels[:100], p[:100])
    acc = CalibrationAccumulator(pos_label="churn")
    for part in np.array_split(np.arange(400), 4):
        acc.partial_fit(labels[part], p[part])
    ece = acc.binned_calibration_error(n_bins=16)
    assert ece == pytest.approx(brute_force_ece(churn, p, n_bins=16), abs=1e-12)


def test_accumulator_two_columns_and_text_labels_need_no_pos_label():
    labels, p, churn = _churn()
    acc = CalibrationAccumulator()
    for part in np.array_split(np.arange(400), 4):
        acc.partial_fit(labels[part], np.column_stack([p, 1 - p])[part])
    ece = acc.binned_calibration_error(n_bins=16)
    assert ece == pytest.approx(brute_force_ece(~churn, 1 - p, n_bins=16), abs=1e-12)


def test_accumulator_numeric_labels_decided_on_the_whole_stream():
    p = np.linspace(0.05, 0.95, 40)
    y = np.r_[np.zeros(20, int), np.full(20, -1)]  # {0} then {-1}: no default
    a = CalibrationAccumulator().partial_fit(y[:20], p[:20])
    b = CalibrationAccumulator().partial_fit(y[20:], p[20:])
    with pytest.raises(ValueError, match="pos_label"):
        a.merge(b).smooth_ece()
    with pytest.raises(ValueError, match="pos_label"):
        CalibrationAccumulator().partial_fit(y[:20], p[:20]).partial_fit(y[20:], p[20:])
    # {0} alone is a subset of {0, 1}: 1 is positive, as in calibration_curve
    acc = CalibrationAccumulator().partial_fit(y[:20], p[:20])
    ece = acc.binned_calibration_error(n_bins=16)
    assert ece == pytest.approx(brute_force_ece(np.zeros(20), p[:20], 16), abs=1e-12)


def test_dask_metrics_follow_the_rule():
    da = pytest.importorskip("dask.array")
    labels, p, churn = _churn()
    yd, pd_ = da.from_array(labels, chunks=100), da.from_array(p, chunks=100)
    with pytest.raises(ValueError, match="pos_label"):
        binned_calibration_error(yd, pd_, n_bins=10)
    ece = binned_calibration_error(yd, pd_, n_bins=10, pos_label="churn")
    assert ece == pytest.approx(brute_force_ece(churn, p), abs=1e-12)
