"""Common tests: every public metric through one battery.

Bad input of every class gets a ``ValueError`` / ``TypeError`` that names the
argument; integer weights equal repeated rows where that is defined; the
value does not depend on the order of the rows; inputs are never modified;
the same ``random_state`` gives the same result.
"""

import inspect

import numpy as np
import pytest

from skcalib.metrics import (
    binned_calibration_error,
    calibration_error_bound,
    calibration_summary,
    calibration_test,
    kde_calibration_error,
    score_decomposition,
    smooth_calibration_curve,
    smooth_ece,
)


def _value(result):
    """The number a metric reports, whatever its return convention."""
    if hasattr(result, "pvalue"):  # a test: its statistic and p-value
        return np.array([result.statistic, result.pvalue])
    if hasattr(result, "miscalibration"):  # a score decomposition
        return np.array(
            [
                result.score,
                result.miscalibration,
                result.discrimination,
                result.uncertainty,
            ]
        )
    if hasattr(result, "slope"):  # a calibration summary
        fields = (
            "slope",
            "slope_se",
            "intercept",
            "intercept_se",
            "mean_difference",
            "emax",
            "e90",
            "e50",
            "ici",
        )
        return np.array([getattr(result, f) for f in fields])
    for attr in ("upper", "value", "ece", "estimate"):
        if hasattr(result, attr):
            return float(getattr(result, attr))
    if isinstance(result, tuple):
        return _value(result[0])
    return float(result)


def _curve_value(result):
    parts = [result.y_smooth, result.density, result.y_smooth_low, result.y_smooth_high]
    return np.concatenate([np.ravel(a) for a in parts if a is not None])


# name -> (function, extra kwargs, takes sample_weight, integer weights are
# repeated rows, random)
METRICS = {
    "smooth_ece": (smooth_ece, {}, True, True, False),
    "smooth_calibration_curve": (
        smooth_calibration_curve,
        {"n_bootstrap": 20, "random_state": 0},
        True,
        False,  # the bootstrap resamples rows, not weights
        True,
    ),
    "binned_ece": (binned_calibration_error, {}, True, True, False),
    "binned_rmsce_debiased": (
        binned_calibration_error,
        {"norm": "l2", "debias": True},
        True,
        True,
        False,
    ),
    "kde_ece": (kde_calibration_error, {"bandwidth": 0.05}, True, False, False),
    # with its details, so that the folds' numbers are compared (the upper
    # bound alone is the vacuous 1 at this sample size)
    "bound_tv": (
        calibration_error_bound,
        {"random_state": 0, "return_details": True},
        False,
        False,
        True,
    ),
    # A resampling test draws one label per row, so a weighted row is not
    # the same as repeated rows (whose labels are drawn separately).
    "test_consistency": (
        calibration_test,
        {"n_resamples": 200, "random_state": 0},
        True,
        False,
        True,
    ),
    "test_consistency_binned": (
        calibration_test,
        {"statistic": "binned_ece", "n_resamples": 200, "random_state": 0},
        True,
        False,
        True,
    ),
    # The default reading of the weights draws one label per row (exact
    # p-values at this size), as the resampling tests.
    "test_spiegelhalter": (
        calibration_test,
        {"method": "spiegelhalter", "random_state": 0},
        True,
        False,
        True,
    ),
    "test_hosmer_lemeshow": (
        calibration_test,
        {"method": "hosmer-lemeshow", "random_state": 0},
        True,
        False,
        True,
    ),
    "test_ks": (
        calibration_test,
        {"method": "ks", "random_state": 0},
        True,
        False,
        True,
    ),
    "test_kuiper": (
        calibration_test,
        {"method": "kuiper", "random_state": 0},
        True,
        False,
        True,
    ),
    "test_skce": (
        calibration_test,
        {"method": "skce", "n_resamples": 199, "random_state": 0},
        True,
        False,
        True,
    ),
    "decomposition_brier": (score_decomposition, {}, True, True, False),
    "decomposition_log_loss": (
        score_decomposition,
        {"score": "log_loss"},
        True,
        True,
        False,
    ),
    "calibration_summary": (calibration_summary, {}, True, True, False),
}
# The tests with frequency weights: integer weights are repeated rows. They
# take integer weights only, so the checks that pass real weights skip them.
for _method in ("spiegelhalter", "hosmer-lemeshow", "pigeon-heyse", "ks", "kuiper"):
    METRICS[f"test_{_method}_frequency"] = (
        calibration_test,
        {
            "method": _method,
            "sample_weight_kind": "frequency",
            "pvalue_method": "asymptotic",
        },
        False,
        True,
        False,
    )
IDS = list(METRICS)


def data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.02, 0.98, n), 2)  # ties on purpose
    y = (rng.uniform(size=n) < p**1.3).astype(int)
    return y, p


def call(name, y, p, **kw):
    func, extra, *_ = METRICS[name]
    return func(y, p, **{**extra, **kw})


def number(name, result):
    if name == "smooth_calibration_curve":
        return _curve_value(result)
    if hasattr(result, "per_fold"):  # a certificate: every fold's numbers
        return np.array(
            [[f["upper"], f["lower"], f["estimate"]] for f in result.per_fold]
        )
    return _value(result)


BAD_INPUTS = [
    # (description, y, p, kwargs, expected exception, word in the message)
    ("nan score", None, "nan", {}, ValueError, "y_proba"),
    ("inf score", None, "inf", {}, ValueError, "y_proba"),
    ("score above 1", None, "above", {}, ValueError, "y_proba"),
    ("score below 0", None, "below", {}, ValueError, "y_proba"),
    ("rows not summing to 1", None, "rows", {}, ValueError, "y_proba"),
    ("length mismatch", "short", None, {}, ValueError, "inconsistent|length"),
    ("empty", "empty", "empty", {}, ValueError, "empty|0 sample"),
    ("3-D scores", None, "3d", {}, ValueError, "y_proba"),
    ("text scores", None, "text", {}, (ValueError, TypeError), "y_proba"),
    ("unknown pos_label", None, None, {"pos_label": 7}, ValueError, "pos_label"),
    (
        "array pos_label",
        None,
        None,
        {"pos_label": [1]},
        (ValueError, TypeError),
        "pos_label",
    ),
    ("labels not a list", None, None, {"labels": 5}, (ValueError, TypeError), "labels"),
    ("nan label", "nan", None, {}, ValueError, "y_true"),
    (
        "three labels, 1-D scores",
        "three",
        None,
        {},
        ValueError,
        "y_true|y_proba|binary|classes",
    ),
]


def corrupt(kind_y, kind_p, y, p):
    y = y.astype(float) if kind_y == "nan" else y.copy()
    p = p.copy()
    if kind_y == "short":
        y = y[:-1]
    elif kind_y == "empty":
        y = y[:0]
    elif kind_y == "nan":
        y[3] = np.nan
    elif kind_y == "three":
        y = np.arange(y.size) % 3
    if kind_p == "nan":
        p[2] = np.nan
    elif kind_p == "inf":
        p[2] = np.inf
    elif kind_p == "above":
        p[2] = 1.5
    elif kind_p == "below":
        p[2] = -0.5
    elif kind_p == "rows":
        p = np.column_stack([1 - p, p]) * 1.2
    elif kind_p == "empty":
        p = p[:0]
    elif kind_p == "3d":
        p = np.stack([1 - p, p], axis=1)[:, :, None]
    elif kind_p == "text":
        p = p.astype(str)
    return y, p


@pytest.mark.parametrize("name", IDS)
@pytest.mark.parametrize(
    "description, kind_y, kind_p, kwargs, exc, word",
    BAD_INPUTS,
    ids=[b[0] for b in BAD_INPUTS],
)
def test_bad_input_is_named(name, description, kind_y, kind_p, kwargs, exc, word):
    y, p = corrupt(kind_y, kind_p, *data())
    with pytest.raises(exc, match=word):
        call(name, y, p, **kwargs)


@pytest.mark.parametrize("name", [n for n in IDS if METRICS[n][2]])
@pytest.mark.parametrize(
    "weights, word",
    [
        ("negative", "sample_weight"),
        ("zeros", "sample_weight"),
        ("nan", "sample_weight"),
        ("short", "sample_weight|inconsistent"),
        ("2-D", "sample_weight"),
    ],
)
def test_bad_weights_are_named(name, weights, word):
    y, p = data()
    w = np.ones(y.size)
    if weights == "negative":
        w[4] = -1.0
    elif weights == "zeros":
        w[:] = 0.0
    elif weights == "nan":
        w[4] = np.nan
    elif weights == "short":
        w = w[:-1]
    elif weights == "2-D":
        w = w[:, None]
    with pytest.raises((ValueError, TypeError), match=word):
        call(name, y, p, sample_weight=w)


@pytest.mark.parametrize(
    "name",
    [n for n in IDS if "multi_class" in inspect.signature(METRICS[n][0]).parameters],
)
def test_bad_multi_class_is_named(name):
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], 300)
    y = np.array([rng.choice(3, p=row) for row in P])
    with pytest.raises(ValueError, match="multi_class"):
        call(name, y, P, multi_class="bogus")


@pytest.mark.parametrize("name", [n for n in IDS if METRICS[n][3]])
def test_integer_weights_are_repeated_rows(name):
    y, p = data(200)
    w = np.random.default_rng(1).integers(0, 4, y.size)
    w[0] = max(w[0], 1)
    repeated = call(name, np.repeat(y, w), np.repeat(p, w))
    weighted = call(name, y, p, sample_weight=w)
    np.testing.assert_allclose(
        number(name, weighted), number(name, repeated), rtol=1e-9, atol=1e-12
    )


@pytest.mark.parametrize("name", [n for n in IDS if not METRICS[n][4]])
def test_row_order_does_not_matter(name):
    y, p = data()
    order = np.random.default_rng(2).permutation(y.size)
    np.testing.assert_allclose(
        number(name, call(name, y[order], p[order])),
        number(name, call(name, y, p)),
        rtol=1e-9,
        atol=1e-12,
    )


@pytest.mark.parametrize("name", IDS)
def test_inputs_are_not_modified(name):
    y, p = data()
    P = np.column_stack([1 - p, p])
    w = np.linspace(0.5, 2.0, y.size)
    copies = y.copy(), P.copy(), w.copy()
    kw = {"sample_weight": w} if METRICS[name][2] else {}
    call(name, y, P, **kw)
    for before, after in zip(copies, (y, P, w), strict=True):
        np.testing.assert_array_equal(before, after)


@pytest.mark.parametrize("name", [n for n in IDS if METRICS[n][4]])
def test_same_random_state_same_result(name):
    y, p = data()
    if name.startswith("test_"):
        # A test of miscalibrated data gives the smallest p-value whatever
        # the seed; under the null hypothesis the p-value moves with it.
        y = (np.random.default_rng(5).uniform(size=p.size) < p).astype(int)
    a = number(name, call(name, y, p, random_state=3))
    b = number(name, call(name, y, p, random_state=3))
    np.testing.assert_array_equal(a, b)
    c = number(name, call(name, y, p, random_state=4))
    assert not np.array_equal(a, c)


# The metrics that take ``groups`` (the curve is drawn per group by the
# displays instead).
GROUPED = [n for n in IDS if "groups" in inspect.signature(METRICS[n][0]).parameters]


@pytest.mark.parametrize("name", GROUPED)
def test_groups_split_the_sample(name):
    y, p = data()
    g = np.arange(y.size) % 3 == 0
    kw = {"sample_weight": np.linspace(0.5, 2.0, y.size)} if METRICS[name][2] else {}
    copies = y.copy(), p.copy(), g.copy()
    res = call(name, y, p, groups=g, **kw)
    for before, after in zip(copies, (y, p, g), strict=True):
        np.testing.assert_array_equal(before, after)
    parts = res.values if res.details is None else res.details
    for part, flag in zip(parts, [False, True], strict=True):
        sub = {k: v[g == flag] for k, v in kw.items()}
        by_hand = call(name, y[g == flag], p[g == flag], **sub)
        np.testing.assert_array_equal(number(name, part), number(name, by_hand))
    # One group is the whole sample.
    one = call(name, y, p, groups=np.zeros(y.size), **kw)
    whole = one.values if one.details is None else one.details
    np.testing.assert_array_equal(
        number(name, whole[0]), number(name, call(name, y, p, **kw))
    )


@pytest.mark.parametrize("name", GROUPED)
@pytest.mark.parametrize("bad", ["short", "nan", "2-D", "scalar"])
def test_bad_groups_are_named(name, bad):
    y, p = data()
    groups = {
        "short": np.zeros(y.size - 1),
        "nan": np.where(y == 1, 0.0, np.nan),
        "2-D": np.zeros((y.size, 2)),
        "scalar": 0,
    }[bad]
    with pytest.raises(ValueError, match="groups"):
        call(name, y, p, groups=groups)


@pytest.mark.parametrize(
    "func, kwargs, word",
    [
        (smooth_ece, {"return_details": "no"}, "return_details"),
        (kde_calibration_error, {"return_details": "no"}, "return_details"),
        (binned_calibration_error, {"debias": 1}, "debias"),
        (binned_calibration_error, {"n_bins": 10**9}, "n_bins"),
        (smooth_calibration_curve, {"n_bootstrap": 10**7}, "n_bootstrap"),
        (kde_calibration_error, {"n_jobs": 2**63, "bandwidth": 0.1}, "n_jobs"),
        (calibration_error_bound, {"n_jobs": 2**63}, "n_jobs"),
        (calibration_error_bound, {"n_splits": 10**9}, "n_splits"),
        (calibration_test, {"n_resamples": 10**7}, "n_resamples"),
        (calibration_test, {"method": "bogus"}, "method"),
        (calibration_test, {"statistic": "bogus"}, "statistic"),
        (calibration_test, {"n_bins": 1, "method": "hosmer-lemeshow"}, "n_bins"),
        (calibration_test, {"bandwidth": -1.0, "method": "skce"}, "bandwidth"),
        (calibration_test, {"n_jobs": 2**63}, "n_jobs"),
        (score_decomposition, {"score": "log"}, "score"),
        (calibration_summary, {"multi_class": "canonical"}, "multi_class"),
    ],
)
def test_flags_and_sizes_are_checked_before_any_work(func, kwargs, word):
    # A flag takes True or False only, and a size no machine can hold is
    # refused by name (n_bootstrap=10**7 would need hundreds of GB).
    y, p = data()
    with pytest.raises((ValueError, TypeError), match=word):
        func(y, p, **kwargs)


# -- the result convention ------------------------------------------------------
# name -> (call(y, p, **kw), result class name, attribute equal to the float,
# the boolean flags of the call)


def _accumulated(y, p):
    from skcalib.metrics import CalibrationAccumulator

    return CalibrationAccumulator().partial_fit(y, p)


def _streamed_bound(y, p, **kw):
    from skcalib.metrics import StreamingCalibrationBound

    sb = StreamingCalibrationBound(method="tv", random_state=0)
    return sb.partial_fit(y, p).partial_validate(p).result(**kw)


RESULTS = {
    "smooth_ece": (smooth_ece, "SmoothECEResult", "value", ["return_details"]),
    "binned_ece": (
        binned_calibration_error,
        "BinnedCalibrationResult",
        "value",
        ["return_details", "debias", "root"],
    ),
    "binned_rmsce": (
        lambda y, p, **kw: binned_calibration_error(y, p, norm="l2", **kw),
        "BinnedCalibrationResult",
        "value",
        ["return_details", "debias", "root"],
    ),
    "kde_ece": (
        lambda y, p, **kw: kde_calibration_error(y, p, bandwidth=0.05, **kw),
        "KDECalibrationResult",
        "value",
        ["return_details", "root"],
    ),
    "bound_tv": (
        lambda y, p, **kw: calibration_error_bound(y, p, random_state=0, **kw),
        "CalibrationBound",
        "upper",
        ["return_details"],
    ),
    "accumulator_smooth_ece": (
        lambda y, p, **kw: _accumulated(y, p).smooth_ece(**kw),
        "SmoothECEResult",
        "value",
        ["return_details"],
    ),
    "accumulator_binned": (
        lambda y, p, **kw: _accumulated(y, p).binned_calibration_error(**kw),
        "BinnedCalibrationResult",
        "value",
        ["return_details", "debias", "root"],
    ),
    "streaming_bound": (
        _streamed_bound,
        "CalibrationBound",
        "upper",
        ["return_details"],
    ),
}


@pytest.mark.parametrize("name", list(RESULTS))
def test_float_by_default_details_on_request(name):
    import dataclasses

    import skcalib.metrics

    func, cls_name, attr, _ = RESULTS[name]
    y, p = data()
    value = func(y, p)
    assert type(value) is float
    details = func(y, p, return_details=True)
    assert type(details) is getattr(skcalib.metrics, cls_name)
    assert getattr(details, attr) == value
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(details, attr, 0.0)
    # A one-line summary of scalars: no array, table or per-fold dump.
    text = repr(details)
    assert text.startswith(f"{cls_name}({attr}=") and text.endswith(")")
    assert "\n" not in text and len(text) < 200
    assert "array" not in text and "[" not in text and "{" not in text


@pytest.mark.parametrize(
    "name, flag",
    [(name, flag) for name, spec in RESULTS.items() for flag in spec[3]],
)
@pytest.mark.parametrize("bad", ["no", 1, 0.0, None, np.array([True])])
def test_flags_take_booleans_only(name, flag, bad):
    func = RESULTS[name][0]
    y, p = data()
    with pytest.raises((ValueError, TypeError), match=f"'{flag}' parameter"):
        func(y, p, **{flag: bad})


@pytest.mark.parametrize(
    "func, old",
    [
        (smooth_ece, "return_sigma"),
        (binned_calibration_error, "return_bins"),
        (binned_calibration_error, "squared"),
    ],
)
def test_old_flag_names_are_gone(func, old):
    y, p = data()
    with pytest.raises(TypeError, match=old):
        func(y, p, **{old: True})
