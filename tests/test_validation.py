"""Every bad input gets a clear error that names the argument."""

import numpy as np
import pytest

from skcalib._validation import binary_tasks, check_calibration_inputs
from skcalib._validation.labels import _label_summary, _unique_labels
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


def _matrix(n, k, seed):
    return np.random.default_rng(seed).dirichlet(np.ones(k), size=n)


@pytest.mark.parametrize("where", [0, 5_000, 69_999])
def test_matrix_errors_in_any_block_are_those_of_a_full_check(where):
    # 70,000 rows of 10 columns span many blocks of the one-read scan; the
    # errors and the reported row are those of whole-array checks
    P = _matrix(70_000, 10, where)
    y = np.arange(70_000) % 10
    bad = P.copy()
    bad[where, 3] = np.nan
    with pytest.raises(ValueError, match="Input y_proba contains NaN"):
        check_calibration_inputs(y, bad)
    bad = P.copy()
    bad[where, 3] = np.inf
    with pytest.raises(ValueError, match="Input y_proba contains infinity"):
        check_calibration_inputs(y, bad)
    bad = P.copy()
    bad[where, 3] = 1.0 + 1e-7
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        check_calibration_inputs(y, bad)
    bad = P.copy()
    bad[where] *= 1.001
    bad[(where + 7) % 70_000] *= 1.0005  # a smaller deviation elsewhere
    with pytest.raises(ValueError, match=f"row {where} sums to"):
        check_calibration_inputs(y, bad)


def test_nan_in_scores_is_reported_as_nan_not_as_range():
    p = np.random.default_rng(0).uniform(size=100_000)
    p[77_777] = np.nan
    with pytest.raises(ValueError, match="Input y_proba contains NaN"):
        check_calibration_inputs((p > 0.5).astype(int), p)
    p[77_777] = -np.inf
    with pytest.raises(ValueError, match="Input y_proba contains infinity"):
        check_calibration_inputs(np.zeros(100_000), p)


def test_rows_within_tolerance_are_clipped_in_a_copy_and_summed_after():
    P = _matrix(50_000, 4, 1)
    P[123] = [0.5 + 5e-9, 0.5 + 5e-9, -5e-9, -5e-9]  # outside [0, 1] by 5e-9
    before = P.copy()
    data = check_calibration_inputs(np.arange(50_000) % 4, P)
    np.testing.assert_array_equal(data.proba, np.clip(before, 0.0, 1.0))
    np.testing.assert_array_equal(P, before)


@pytest.mark.parametrize("layout", ["F", "strided", "float32", "pandas"])
def test_matrix_layouts_validate_alike(layout):
    P = _matrix(40_000, 5, 2)
    y = np.random.default_rng(2).integers(0, 5, size=40_000)
    ref = check_calibration_inputs(y, P)
    if layout == "F":
        Q = np.asfortranarray(P)
    elif layout == "strided":
        Q = np.zeros((40_000, 10))
        Q[:, 1::2] = P
        Q = Q[:, 1::2]
    elif layout == "float32":
        P = P.astype(np.float32).astype(np.float64)
        ref = check_calibration_inputs(y, P)
        Q = P.astype(np.float32)
    else:
        pd = pytest.importorskip("pandas")
        Q = pd.DataFrame(P)
    data = check_calibration_inputs(y, Q)
    np.testing.assert_array_equal(data.proba, ref.proba)
    np.testing.assert_array_equal(data.y, ref.y)
    for multi_class in ("top-label", "classwise"):
        for a, b in zip(
            binary_tasks(data, multi_class), binary_tasks(ref, multi_class), strict=True
        ):
            for u, v in zip(a, b, strict=True):
                np.testing.assert_array_equal(u, v)


def test_labels_that_are_their_own_indices_are_not_copied_for_writing():
    y = np.random.default_rng(3).integers(0, 6, size=1000)
    before = y.copy()
    data = check_calibration_inputs(y, _matrix(1000, 6, 3))
    np.testing.assert_array_equal(data.y, before)
    assert data.y.dtype == np.int64
    assert not (np.shares_memory(data.y, y) and data.y.flags.writeable)
    # a missing class: indices into labels=, not the labels
    data = check_calibration_inputs(y + 1, _matrix(1000, 7, 3), labels=np.arange(7))
    np.testing.assert_array_equal(data.y, before + 1)
    data = check_calibration_inputs(y + 1, _matrix(1000, 6, 3))
    np.testing.assert_array_equal(data.y, before)
    np.testing.assert_array_equal(y, before)


def test_unit_weights_are_ones_when_read():
    y, p = [0, 1, 1], [0.2, 0.6, 0.9]
    data = check_calibration_inputs(y, p)
    assert data.unit_weight and data.sample_weight is None
    np.testing.assert_array_equal(data.weight, np.ones(3))
    ((_, _, w),) = binary_tasks(data, "top-label", unit_as_none=True)
    assert w is None
    data = check_calibration_inputs(y, p, sample_weight=[1.0, 1.0, 1.0])
    assert not data.unit_weight
    np.testing.assert_array_equal(data.weight, np.ones(3))


@pytest.mark.parametrize(
    "make",
    [
        lambda n: np.zeros(n),
        lambda n: np.ones(n),
        lambda n: (np.arange(n) % 2).astype(float),
        lambda n: np.where(np.arange(n) < n - 1, 0.0, 1.0),  # one 1 at the end
        lambda n: np.where(np.arange(n) < n // 2, -1.0, 1.0),  # one per chunk
        lambda n: np.where(np.arange(n) == n - 1, 0.5, (np.arange(n) % 2) * 1.0),
        lambda n: np.where(
            np.arange(n) < 40_000, 0.0, np.where(np.arange(n) < 80_000, 1.0, 2.0)
        ),  # two per chunk, three in all
        lambda n: (np.arange(n) % 3).astype(np.int8),
        lambda n: np.arange(n) % 2 == 1,
    ],
)
def test_label_summary_is_min_max_and_two_valued(make):
    y = make(100_003)  # several chunks, the last one short
    lo, hi, two = _label_summary(y)
    assert lo == y.min() and hi == y.max()
    assert two == bool(np.all((y == y.min()) | (y == y.max())))
    np.testing.assert_array_equal(_unique_labels(y), np.unique(y))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_labels_in_any_chunk_are_reported(bad):
    y = (np.arange(100_003) % 2).astype(float)
    for where in (0, 50_000, 100_002):
        z = y.copy()
        z[where] = bad
        with pytest.raises(ValueError, match="y_true contains NaN or infinity"):
            check_calibration_inputs(z, np.full(z.shape[0], 0.5))
