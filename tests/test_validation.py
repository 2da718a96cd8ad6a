"""Every bad input gets a clear error that names the argument."""

import numpy as np
import pytest

from skcalib._validation import binary_tasks, check_calibration_inputs
from skcalib.metrics import binned_calibration_error, smooth_ece

METRICS = [smooth_ece, binned_calibration_error]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize(
    "y_true, y_proba, kwargs, exc, match",
    [
        ([0, 1], [0.1, np.nan], {}, ValueError, "y_proba"),
        ([0, 1], [0.1, np.inf], {}, ValueError, "y_proba"),
        ([0.0, np.nan], [0.1, 0.2], {}, ValueError, "y_true"),
        ([0, 1], [0.1, 1.2], {}, ValueError, r"y_proba.*\[0, 1\]"),
        ([0, 1], [-0.1, 0.5], {}, ValueError, r"y_proba.*\[0, 1\]"),
        ([0, 1, 2], [[0.2, 0.3, 0.4]] * 3, {}, ValueError, "sum to 1"),
        ([0, 1], [0.1, 0.2, 0.3], {}, ValueError, "inconsistent numbers of samples"),
        ([], [], {}, ValueError, "empty"),
        (["a", "a"], [0.1, 0.2], {"pos_label": "a"}, ValueError, "single class"),
        (["a", "b"], [0.1, 0.2], {}, ValueError, "pass pos_label"),
        ([0, 1], [0.1, 0.2], {"sample_weight": [-1, 1]}, ValueError, "sample_weight"),
        ([0, 1], [0.1, 0.2], {"sample_weight": [0, 0]}, ValueError, "sample_weight"),
        ([0, 1], [0.1, 0.2], {"sample_weight": [1, 1, 1]}, ValueError, "sample_weight"),
        (
            [0, 1],
            [0.1, 0.2],
            {"sample_weight": [1e308, 1e308]},
            ValueError,
            "sample_weight sums to infinity",
        ),
        (
            [0, 1],
            [0.1, 0.2],
            {"sample_weight": [5e-324, 1.0]},
            ValueError,
            "sample_weight has subnormal",
        ),
        (
            [0, 1],
            [0.1, 0.2],
            {"sample_weight": [1, np.nan]},
            ValueError,
            "sample_weight",
        ),
        (["a", "b"], [0.1, 0.2], {"pos_label": "c"}, ValueError, "pos_label"),
        ([0, 1, 2], [0.1, 0.2, 0.3], {}, ValueError, "3 classes"),
        ([0, 1, 1], np.eye(3), {}, ValueError, "labels="),
        ([0, 1, 2], np.eye(3), {"pos_label": 1}, ValueError, "pos_label"),
        ([0, 1], [0.1, 0.2], {"multi_class": "bogus"}, ValueError, "multi_class"),
        ([0, 1], [["a", "b"], ["c", "d"]], {}, ValueError, "y_proba"),
        ([[0, 1], [1, 0]], [0.1, 0.2], {}, ValueError, "y_true"),
        ([0, 3], [0.1, 0.2], {"labels": [0, 1]}, ValueError, "labels"),
        # The message blames labels=, not y_true, when labels= is the cause.
        (
            [0, 1],
            [0.1, 0.2],
            {"labels": [0, 1, 2]},
            ValueError,
            "labels has 3 entries but y_proba describes a binary problem",
        ),
        (
            [0, 1, 2],
            np.eye(3),
            {"labels": [0, 1, 2, 3]},
            ValueError,
            "y_proba has 3 columns but labels has 4 entries",
        ),
    ],
)
def test_bad_input(metric, y_true, y_proba, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        metric(y_true, y_proba, **kwargs)


def test_tolerance_then_clip():
    d = check_calibration_inputs([0, 1], [-1e-10, 1 + 1e-10])
    np.testing.assert_array_equal(d.proba, [0.0, 1.0])


def test_pos_label_and_single_class_rules():
    # numeric 0/1 labels: a fold with a single class is still binary
    d = check_calibration_inputs([1, 1], [0.2, 0.9])
    np.testing.assert_array_equal(d.y, [1.0, 1.0])
    d = check_calibration_inputs([0, 0], [0.2, 0.9])
    np.testing.assert_array_equal(d.y, [0.0, 0.0])
    # string labels: the absent class is given by pos_label or labels
    d = check_calibration_inputs(["no", "no"], [0.2, 0.9], pos_label="yes")
    np.testing.assert_array_equal(d.y, [0.0, 0.0])
    d = check_calibration_inputs(
        ["b", "b"], [0.2, 0.9], labels=["a", "b"], pos_label="b"
    )
    np.testing.assert_array_equal(d.y, [1.0, 1.0])
    # ... but labels= alone does not say which class a 1-D y_proba is about
    with pytest.raises(ValueError, match="labels takes values .* pass pos_label"):
        check_calibration_inputs(["b", "b"], [0.2, 0.9], labels=["a", "b"])
    # two-column input follows the label order; pos_label selects the column
    d = check_calibration_inputs(["a", "b"], [[0.7, 0.3], [0.1, 0.9]], pos_label="a")
    np.testing.assert_array_equal(d.proba, [0.7, 0.1])
    np.testing.assert_array_equal(d.y, [1.0, 0.0])


def test_positive_class_of_1d_scores_does_not_depend_on_label_order():
    # labels= sets the column order of a 2-D y_proba, not the positive class:
    # a 1-D P("yes") needs pos_label="yes", and means the same thing
    # whatever order labels= lists the classes in.
    y = np.array(["no", "yes", "yes", "no", "yes"])
    p = np.array([0.1, 0.8, 0.6, 0.3, 0.9])
    brute = np.mean(np.abs((y == "yes") - p))  # one sample per bin at n_bins=10
    for labels in (None, ["no", "yes"], ["yes", "no"]):
        with pytest.raises(ValueError, match="pos_label"):
            check_calibration_inputs(y, p, labels=labels)
        d = check_calibration_inputs(y, p, labels=labels, pos_label="yes")
        assert d.pos_label == "yes"
        np.testing.assert_array_equal(d.y, y == "yes")
        assert binned_calibration_error(
            y, p, labels=labels, n_bins=10, pos_label="yes"
        ) == pytest.approx(brute)
    # Two columns in the order of labels=["yes", "no"]: P("yes") is column 0.
    d = check_calibration_inputs(y, np.column_stack([p, 1 - p]), labels=["yes", "no"])
    np.testing.assert_array_equal(d.proba, p)


def test_labels_for_missing_class_in_multiclass():
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    d = check_calibration_inputs(["a", "c"], P, labels=["a", "b", "c"])
    np.testing.assert_array_equal(d.y, [0, 2])


def test_top_label_reduction():
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3]])
    d = check_calibration_inputs([0, 1, 1], P, labels=[0, 1, 2])
    ((y, s, w),) = binary_tasks(d, "top-label")
    np.testing.assert_array_equal(s, [0.7, 0.6, 0.5])
    np.testing.assert_array_equal(y, [1.0, 0.0, 1.0])


def test_inputs_never_modified():
    y = np.array([0, 1, 1])
    p = np.array([[0.5, 0.5 + 1e-10], [0.2, 0.8], [1e-10, 1.0]])
    p0 = p.copy()
    w = np.array([1.0, 2.0, 3.0])
    smooth_ece(y, p, sample_weight=w)
    binned_calibration_error(y, p, sample_weight=w, strategy="quantile")
    np.testing.assert_array_equal(p, p0)
    np.testing.assert_array_equal(w, [1.0, 2.0, 3.0])


def test_pandas_na_labels_are_reported_as_missing():
    pd = pytest.importorskip("pandas")
    y = pd.Series(["a", "b", pd.NA, "a"], dtype="string")
    with pytest.raises(ValueError, match="y_true contains None, NA or NaN"):
        smooth_ece(y, [0.1, 0.2, 0.3, 0.4])


@pytest.mark.parametrize(
    "labels",
    [
        np.array([-100, 100, 5, 5, -100, 7], dtype=np.int8),
        np.array([3, 7, 9, 3, 250], dtype=np.uint8),
        np.array([2**40, 2**40 + 3, 2**40 + 1, 2**40]),
        np.array([0, 2**62 + 5, 3]),  # too wide a range for a table
        np.arange(12)[::-1].repeat(3),
    ],
)
def test_integer_classes_and_indices_are_those_of_unique_and_search(labels):
    # the table lookups for integer labels against np.unique / np.searchsorted
    K = np.unique(labels).shape[0]
    proba = np.full((labels.shape[0], K), 1.0 / K)
    data = check_calibration_inputs(labels, proba)
    ref = np.unique(labels)
    np.testing.assert_array_equal(data.classes, ref)
    assert data.classes.dtype == ref.dtype
    np.testing.assert_array_equal(data.y, np.searchsorted(ref, labels))


def test_validated_matrix_cannot_write_through_to_the_input():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=20)
    before = P.copy()
    data = check_calibration_inputs(rng.integers(0, 3, 20), P)
    with pytest.raises(ValueError, match="read-only"):
        data.proba[0, 0] = 0.5
    np.testing.assert_array_equal(P, before)
    assert P.flags.writeable
