"""Calibration by group: ``groups=`` on the metrics and the reliability displays.

The reference for every per-group number is the metric called by hand on that
group's rows (with the classes of the whole sample as ``labels``).
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from skcalib.display import (  # noqa: E402
    BinnedReliabilityDisplay,
    SmoothReliabilityDisplay,
)
from skcalib.metrics import (  # noqa: E402
    GroupedCalibrationResult,
    binned_calibration_error,
    calibration_error_bound,
    kde_calibration_error,
    smooth_ece,
)

# name -> (function, extra kwargs, takes sample_weight)
METRICS = {
    "smooth_ece": (smooth_ece, {}, True),
    "smooth_ece_sigma": (smooth_ece, {"sigma": 0.05, "metric": "logit"}, True),
    "binned": (binned_calibration_error, {"n_bins": 10}, True),
    "binned_l2_quantile": (
        binned_calibration_error,
        {"norm": "l2", "strategy": "quantile", "debias": True},
        True,
    ),
    "kde": (kde_calibration_error, {"bandwidth": 0.1}, True),
    "kde_auto": (kde_calibration_error, {"p": 2}, True),
    "bound": (calibration_error_bound, {"random_state": 0}, False),
    "bound_details": (
        calibration_error_bound,
        {"random_state": 0, "return_details": True, "method": "tv"},
        False,
    ),
}


def _value(result):
    for attr in ("upper", "value"):
        if hasattr(result, attr):
            return float(getattr(result, attr))
    return float(result)


def binary_data(n=900, seed=0):
    """Three groups: calibrated, over-confident, under-confident."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.02, 0.98, n), 2)  # ties on purpose
    g = rng.choice(np.array(["x", "y", "z"]), size=n, p=[0.5, 0.3, 0.2])
    truth = np.select(
        [g == "x", g == "y"], [p, 0.5 + 0.6 * (p - 0.5)], 0.5 + 1.2 * (p - 0.5)
    )
    y = (rng.uniform(size=n) < np.clip(truth, 0, 1)).astype(int)
    w = rng.integers(1, 4, n).astype(float)
    return y, p, g, w


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("weighted", [False, True])
def test_each_group_is_the_metric_on_its_rows(name, weighted):
    func, extra, takes_weight = METRICS[name]
    if weighted and not takes_weight:
        pytest.skip("the bound takes no weights")
    y, p, g, w = binary_data()
    sw = {"sample_weight": w} if weighted else {}
    res = func(y, p, groups=g, **extra, **sw)
    assert isinstance(res, GroupedCalibrationResult)
    assert res.metric == func.__name__
    assert res.groups.tolist() == ["x", "y", "z"]
    for k, label in enumerate(["x", "y", "z"]):
        rows = g == label
        sub = {"sample_weight": w[rows]} if weighted else {}
        by_hand = func(y[rows], p[rows], **extra, **sub)
        assert res.values[k] == _value(by_hand)
        assert res.counts[k] == rows.sum()
        assert res.weights[k] == (w[rows].sum() if weighted else rows.sum())
        if extra.get("return_details"):
            assert res.details[k].per_fold == by_hand.per_fold
        else:
            assert res.details is None
    k = int(np.argmax(res.values))
    assert res.worst_group == ["x", "y", "z"][k]
    assert res.worst_value == res.values.max()


def test_worst_group_is_the_miscalibrated_one():
    # Group "x" is calibrated; "y" and "z" are not (by construction).
    y, p, g, _ = binary_data(6000, seed=1)
    res = smooth_ece(y, p, groups=g)
    assert res.worst_group in ("y", "z")
    assert res.values[0] < 0.05 < res.worst_value


def test_details_are_each_groups_result():
    y, p, g, w = binary_data()
    res = smooth_ece(y, p, groups=g, sample_weight=w, return_details=True)
    for k, label in enumerate(res.groups):
        rows = g == label
        by_hand = smooth_ece(
            y[rows], p[rows], sample_weight=w[rows], return_details=True
        )
        assert res.details[k] == by_hand


def test_label_type_and_order_do_not_matter():
    y, p, g, w = binary_data()
    ref = smooth_ece(y, p, groups=g, sample_weight=w)
    as_int = np.select([g == "x", g == "y"], [10, 20], 30)
    res = smooth_ece(y, p, groups=as_int, sample_weight=w)
    assert res.groups.tolist() == [10, 20, 30]
    np.testing.assert_array_equal(res.values, ref.values)
    assert res.worst_group == {"x": 10, "y": 20, "z": 30}[ref.worst_group]
    # Labels sorting the other way round reverse the order, not the values.
    reverse = np.select([g == "x", g == "y"], ["c", "b"], "a")
    res = smooth_ece(y, p, groups=reverse.tolist(), sample_weight=w)
    np.testing.assert_array_equal(res.values, ref.values[::-1])
    # Object labels (e.g. tuples are not allowed, but mixed-width strings are).
    res = smooth_ece(y, p, groups=np.array(reverse, dtype=object), sample_weight=w)
    np.testing.assert_array_equal(res.values, ref.values[::-1])
    # Shuffling the rows changes nothing but rounding.
    perm = np.random.default_rng(3).permutation(y.size)
    res = smooth_ece(y[perm], p[perm], groups=g[perm], sample_weight=w[perm])
    np.testing.assert_allclose(res.values, ref.values, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(res.counts, ref.counts)


def test_boolean_groups_and_pandas_input():
    pd = pytest.importorskip("pandas")
    y, p, g, _ = binary_data()
    flag = g == "x"
    res = binned_calibration_error(pd.Series(y), pd.Series(p), groups=pd.Series(flag))
    assert res.groups.tolist() == [False, True]
    assert res.values[1] == binned_calibration_error(y[flag], p[flag])
    assert res.values[0] == binned_calibration_error(y[~flag], p[~flag])


def test_integer_weights_are_repeated_rows_in_each_group():
    y, p, g, w = binary_data(400)
    reps = w.astype(int)
    res = smooth_ece(y, p, groups=g, sample_weight=w)
    rep = smooth_ece(np.repeat(y, reps), np.repeat(p, reps), groups=np.repeat(g, reps))
    np.testing.assert_allclose(res.values, rep.values, rtol=1e-9)
    np.testing.assert_array_equal(res.weights, rep.counts)


@pytest.mark.parametrize("multi_class", ["top-label", "classwise"])
def test_multiclass_group_lacking_a_class(multi_class):
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], size=600)
    y = np.array([rng.choice(3, p=q) for q in P])
    g = np.where(np.arange(600) < 200, "small", "big")
    # Group "small" never shows class 2, but y_proba has its column.
    y[(g == "small") & (y == 2)] = 0
    res = smooth_ece(y, P, groups=g, multi_class=multi_class)
    for k, label in enumerate(res.groups):
        rows = g == label
        by_hand = smooth_ece(
            y[rows], P[rows], multi_class=multi_class, labels=[0, 1, 2]
        )
        assert res.values[k] == by_hand
    # Without the classes of the whole sample the group alone is refused.
    with pytest.raises(ValueError, match="labels="):
        smooth_ece(y[g == "small"], P[g == "small"], multi_class=multi_class)


def test_string_labels_two_columns_single_class_group():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    y = np.where(rng.uniform(size=300) < p, "yes", "no")
    g = np.where(np.arange(300) < 20, "g1", "g2")
    y[:20] = "no"  # group g1 holds the negative class only
    P = np.column_stack([1 - p, p])
    res = binned_calibration_error(y, P, groups=g)
    by_hand = binned_calibration_error(y[:20], P[:20], labels=["no", "yes"])
    assert res.values[0] == by_hand
    # The positive class is "yes" (the greater label) in every group.
    assert by_hand == pytest.approx(np.mean(p[:20]), abs=0.1)


@pytest.mark.parametrize(
    "func, kwargs, size, minimum",
    [
        (kde_calibration_error, {"p": 2}, 2, "at least 3"),
        (kde_calibration_error, {"p": 1}, 1, "at least 2"),
        (calibration_error_bound, {"n_splits": 5}, 9, "= 10"),
        (calibration_error_bound, {"n_splits": 3}, 5, "= 6"),
    ],
)
def test_small_group_is_named_with_its_size(func, kwargs, size, minimum):
    y, p, g, _ = binary_data(300)
    g = g.astype(object)
    g[:size] = "tiny"
    with pytest.raises(ValueError) as info:
        func(y, p, groups=g, **kwargs)
    msg = str(info.value)
    assert "group 'tiny'" in msg
    assert f"{size} samples" in msg
    assert minimum in msg
    assert func.__name__ in msg


def test_group_of_zero_weight_is_named():
    y, p, g, w = binary_data(300)
    w[g == "y"] = 0
    with pytest.raises(ValueError, match="group 'y'.*total weight 0.*sample_weight"):
        smooth_ece(y, p, groups=g, sample_weight=w)


def test_a_bad_parameter_is_not_blamed_on_a_group():
    y, p, g, _ = binary_data(300)
    with pytest.raises(ValueError) as info:
        calibration_error_bound(y, p, groups=g, method="nope")
    assert "method" in str(info.value) and "group" not in str(info.value)


@pytest.mark.parametrize(
    "bad, exc, match",
    [
        ("short", ValueError, "groups has 899 elements"),
        ("nan", ValueError, "groups contains NaN"),
        ("none", ValueError, "groups contains None"),
        ("2d", ValueError, "groups must be a 1-D"),
        ("scalar", ValueError, "'groups' parameter.* must be None or an array-like"),
        ("mixed", TypeError, "groups mixes"),
    ],
)
def test_bad_groups_are_named(bad, exc, match):
    y, p, g, _ = binary_data()
    groups = {
        "short": g[:-1],
        "nan": np.where(g == "x", 1.0, np.nan),
        "none": np.array([None] + g[1:].tolist(), dtype=object),
        "2d": np.column_stack([g, g]),
        "scalar": "x",
        "mixed": np.array([1] + g[1:].tolist(), dtype=object),
    }[bad]
    for func in (smooth_ece, binned_calibration_error, calibration_error_bound):
        with pytest.raises(exc, match=match):
            func(y, p, groups=groups)


def test_result_repr_and_frame():
    y, p, g, w = binary_data()
    res = smooth_ece(y, p, groups=g, sample_weight=w)
    text = repr(res)
    assert "\n" not in text and "array" not in text
    assert text.startswith("GroupedCalibrationResult(metric='smooth_ece', n_groups=3")
    assert f"worst_group={res.worst_group!r}" in text
    table = res.frame(as_frame=False)
    assert list(table) == ["group", "value", "count", "weight"]
    np.testing.assert_array_equal(table["value"], res.values)
    pd = pytest.importorskip("pandas")
    frame = res.frame()
    assert isinstance(frame, pd.DataFrame)
    assert frame.group.tolist() == ["x", "y", "z"]
    assert frame["count"].sum() == y.size
    with pytest.raises(TypeError, match="as_frame"):
        res.frame(as_frame="yes")
    with pytest.raises(AttributeError):
        res.metric = "other"  # frozen


def test_bound_delta_is_per_group():
    # Each group's bound is the bound of its rows at the same delta; the
    # Bonferroni delta / n_groups gives wider (joint) bounds.
    y, p, g, _ = binary_data(6000, seed=2)
    per_group = calibration_error_bound(y, p, groups=g, random_state=0, delta=0.05)
    joint = calibration_error_bound(y, p, groups=g, random_state=0, delta=0.05 / 3)
    rows = g == "x"
    assert per_group.values[0] == calibration_error_bound(
        y[rows], p[rows], random_state=0, delta=0.05
    )
    assert np.all(joint.values >= per_group.values)


# --- displays --------------------------------------------------------------


@pytest.mark.parametrize(
    "display, metric, kwargs",
    [
        (SmoothReliabilityDisplay, smooth_ece, {"n_bootstrap": 0}),
        (BinnedReliabilityDisplay, binned_calibration_error, {"n_bins": 10}),
    ],
)
def test_display_draws_one_curve_per_group(display, metric, kwargs):
    y, p, g, w = binary_data()
    disp = display.from_predictions(y, p, groups=g, sample_weight=w, **kwargs)
    assert len(disp.line_) == 3
    assert disp.group == ["x", "y", "z"]
    for line, label in zip(disp.line_, ["x", "y", "z"], strict=True):
        rows = g == label
        value = metric(y[rows], p[rows], sample_weight=w[rows], **kwargs_of(kwargs))
        assert line.get_label().startswith(
            f"group={label} (n={rows.sum()}) ({disp._metric_name} = {value:.3f}"
        )
        assert line.axes is disp.ax_
    colors = {line.get_color() for line in disp.line_}
    assert len(colors) == 3
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert sum(text.startswith("group=") for text in legend) == 3
    table = disp.frame(as_frame=False)
    assert set(table["group"].tolist()) == {"x", "y", "z"}
    # Each group's rows of the table are its own curve's data.
    single = display.from_predictions(
        y[g == "y"], p[g == "y"], sample_weight=w[g == "y"], **kwargs
    ).frame(as_frame=False)
    mine = table["group"] == "y"
    for col in single:
        np.testing.assert_array_equal(table[col][mine], single[col])
    plt.close("all")


def kwargs_of(kwargs):
    """Display keywords that are metric keywords too."""
    return {k: v for k, v in kwargs.items() if k in ("n_bins",)}


def test_display_classwise_panels_hold_one_curve_per_group():
    pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], size=900)
    y = np.array([rng.choice(3, p=q) for q in P])
    g = np.where(np.arange(900) < 300, 1, 2)
    y[(g == 1) & (y == 2)] = 1  # group 1 lacks class 2
    disp = SmoothReliabilityDisplay.from_predictions(
        y, P, groups=g, multi_class="classwise", n_bootstrap=0
    )
    assert disp.ax_.shape == (3,)
    assert len(disp.line_) == 6
    for ax in disp.ax_:
        assert len([ln for ln in ax.get_lines() if ln.get_label().startswith("group=")])
    frame = disp.frame()
    assert frame.groupby(["group", "label"]).ngroups == 6
    assert frame["group"].dtype == np.int64
    plt.close("all")


def test_display_from_estimator_with_groups():
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    X, y = make_classification(n_samples=1200, random_state=0)
    clf = LogisticRegression().fit(X[:600], y[:600])
    g = (X[600:, 0] > 0).astype(int)
    disp = BinnedReliabilityDisplay.from_estimator(clf, X[600:], y[600:], groups=g)
    assert len(disp.line_) == 2
    proba = clf.predict_proba(X[600:])[:, 1]
    ref = binned_calibration_error(y[600:][g == 1], proba[g == 1])
    assert f"ECE = {ref:.3f}" in disp.line_[1].get_label()
    plt.close("all")


def test_display_small_group_and_bad_groups_are_named():
    y, p, g, _ = binary_data()
    with pytest.raises(ValueError, match="groups has"):
        SmoothReliabilityDisplay.from_predictions(y, p, groups=g[:10])
    with pytest.raises(ValueError, match="'groups' parameter.* an array-like"):
        BinnedReliabilityDisplay.from_predictions(y, p, groups=7)
    w = np.ones(y.size)
    w[g == "z"] = 0
    with pytest.raises(ValueError, match="group 'z'.*sample_weight"):
        BinnedReliabilityDisplay.from_predictions(y, p, groups=g, sample_weight=w)
    plt.close("all")
