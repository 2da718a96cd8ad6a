"""calibration_summary against logistic fits written here, statsmodels and a
known calibration curve."""

import warnings

import numpy as np
import pytest
from scipy import optimize, special
from sklearn.exceptions import UndefinedMetricWarning

from skcalib._backend.logistic import logistic_fit
from skcalib.metrics import calibration_summary, smooth_calibration_curve


def _problem(n, seed, slope=0.6, shift=0.3):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    lp = np.log(p / (1 - p))
    y = (rng.uniform(size=n) < special.expit(shift + slope * lp)).astype(float)
    return y, p, lp


def _fit(y, X, w, offset):
    def nll(b):
        eta = offset + X @ b
        return -np.sum(w * (y * eta - np.logaddexp(0, eta)))

    b = optimize.minimize(
        nll, np.zeros(X.shape[1]), method="BFGS", options={"gtol": 1e-10}
    ).x
    q = special.expit(offset + X @ b)
    info = X.T @ (X * (w * q * (1 - q))[:, None])
    return b, np.sqrt(np.diag(np.linalg.inv(info)))


def test_slope_and_intercept_against_scipy_fit():
    y, p, lp = _problem(4000, 0)
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    s = calibration_summary(y, p, sample_weight=w)
    b, se = _fit(y, np.column_stack([np.ones_like(lp), lp]), w, np.zeros_like(lp))
    assert s.slope == pytest.approx(b[1], rel=1e-6)
    assert s.slope_se == pytest.approx(se[1], rel=1e-6)
    a, a_se = _fit(y, np.ones((lp.size, 1)), w, lp)
    assert s.intercept == pytest.approx(a[0], rel=1e-6, abs=1e-8)
    assert s.intercept_se == pytest.approx(a_se[0], rel=1e-6)
    assert s.mean_difference == pytest.approx(np.sum(w * (y - p)) / np.sum(w))


def test_against_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    y, p, lp = _problem(3000, 2)
    s = calibration_summary(y, p)
    joint = sm.GLM(y, sm.add_constant(lp), family=sm.families.Binomial()).fit()
    assert s.slope == pytest.approx(joint.params[1], rel=1e-9)
    assert s.slope_se == pytest.approx(joint.bse[1], rel=1e-7)
    off = sm.GLM(
        y, np.ones((y.size, 1)), family=sm.families.Binomial(), offset=lp
    ).fit()
    assert s.intercept == pytest.approx(off.params[0], rel=1e-9)
    assert s.intercept_se == pytest.approx(off.bse[0], rel=1e-7)


def test_gap_quantiles_from_the_smooth_curve():
    y, p, _ = _problem(5000, 3)
    s = calibration_summary(y, p)
    curve = smooth_calibration_curve(y, p)
    ok = np.isfinite(curve.y_smooth)
    gap = np.abs(np.interp(p, curve.scores[ok], curve.y_smooth[ok]) - p)
    assert s.ici == pytest.approx(gap.mean(), rel=1e-12)
    assert s.emax == pytest.approx(gap.max(), rel=1e-12)
    srt = np.sort(gap)
    assert s.e50 == srt[int(np.ceil(0.5 * gap.size)) - 1]
    assert s.e90 == srt[int(np.ceil(0.9 * gap.size)) - 1]


def test_ici_approaches_the_true_curve():
    # E[y | s] = expit(0.3 + 0.6 logit s): the population ICI by quadrature.
    grid = np.linspace(0.02, 0.98, 200001)
    lg = np.log(grid / (1 - grid))
    true_ici = np.mean(np.abs(special.expit(0.3 + 0.6 * lg) - grid))
    y, p, _ = _problem(200000, 4)
    s = calibration_summary(y, p)
    assert s.ici == pytest.approx(true_ici, abs=0.006)
    assert s.slope == pytest.approx(0.6, abs=0.02)


def test_separated_classes_warn():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(RuntimeWarning, match="converge"):
        s = calibration_summary(y, p)
    assert not s.converged


def test_separation_warning_points_at_the_callers_line():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    with pytest.warns(RuntimeWarning, match="converge") as caught:
        calibration_summary(np.array([0, 0, 0, 1, 1, 1]), p)
    assert [w.filename for w in caught] == [__file__]


def test_single_class_says_so():
    p = np.linspace(0.1, 0.9, 40)
    with pytest.warns(RuntimeWarning, match="single class"):
        s = calibration_summary(np.zeros(40), p)
    assert not s.converged


@pytest.mark.parametrize("score", [0.0, 0.3, 1.0])
def test_one_score_leaves_the_slope_undefined(score):
    # A model that predicts one probability (the prevalence, or a constant
    # 0 or 1): no slope fits better than another, but calibration in the
    # large is defined, in closed form: logit(mean y) - logit(s), with
    # standard error 1 / sqrt(n ybar (1 - ybar)).
    y = np.r_[np.ones(13), np.zeros(27)]
    with pytest.warns(UndefinedMetricWarning, match="single value") as caught:
        s = calibration_summary(y, np.full(40, score))
    assert [w.filename for w in caught] == [__file__]
    assert np.isnan(s.slope) and np.isnan(s.slope_se)
    c = np.clip(score, 1e-10, 1 - 1e-10)
    assert s.intercept == pytest.approx(np.log(13 / 27) - special.logit(c), rel=1e-8)
    assert s.intercept_se == pytest.approx(1 / np.sqrt(40 * 13 / 40 * 27 / 40))
    assert s.mean_difference == pytest.approx(13 / 40 - score)


def test_separated_scores_one_row_apart_give_no_nan():
    # Two scores 1e-7 apart, the upper one a single positive: the slope runs
    # off to infinity. The fit stops, says so, and its standard error says
    # the slope is not known (it was NaN, from a negative variance).
    rng = np.random.default_rng(0)
    y = (rng.uniform(size=60) < 0.5).astype(float)
    p = np.r_[np.full(59, 0.3), 0.3000001]
    assert y[-1] == 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = calibration_summary(y, p)
    assert [str(w.message) for w in caught if "converge" not in str(w.message)] == []
    assert not s.converged
    assert s.slope_se > 1e3 * s.intercept_se


def test_a_direction_without_information_has_infinite_standard_error():
    # Two regressors equal to 1e-9: the information about their difference
    # is rounding noise, and its inverse has negative variances.
    y = np.r_[np.ones(13), np.zeros(27)]
    X = np.column_stack([np.ones(40), 1 + 1e-9 * np.arange(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        se = logistic_fit(y, X, np.ones(40)).se
    assert np.all(se == np.inf)


def test_classwise_gives_one_summary_per_class():
    rng = np.random.default_rng(5)
    P = rng.dirichlet([2, 2, 2], 900)
    Y = (rng.uniform(size=900)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    out = calibration_summary(Y, P, multi_class="classwise")
    assert len(out) == 3
    ref = calibration_summary((Y == 1).astype(int), P[:, 1])
    assert out[1].slope == pytest.approx(ref.slope, rel=1e-12)


@pytest.mark.parametrize(
    "name, func",
    [
        (
            "neg_integrated_calibration_index",
            lambda y, P: calibration_summary(y, P).ici,
        ),
        (
            "neg_brier_miscalibration",
            lambda y, P: (
                __import__("skcalib.metrics", fromlist=["x"])
                .score_decomposition(y, P)
                .miscalibration
            ),
        ),
        (
            "neg_log_loss_miscalibration",
            lambda y, P: (
                __import__("skcalib.metrics", fromlist=["x"])
                .score_decomposition(y, P, score="log_loss")
                .miscalibration
            ),
        ),
    ],
)
def test_scorers_are_the_negated_values(name, func):
    from sklearn.linear_model import LogisticRegression

    from skcalib.metrics import get_scorer, get_scorer_names

    rng = np.random.default_rng(6)
    X = rng.normal(size=(600, 3))
    y = (rng.uniform(size=600) < special.expit(X[:, 0] * 2)).astype(int)
    clf = LogisticRegression(C=0.01).fit(X[:300], y[:300])
    assert name in get_scorer_names()
    got = get_scorer(name)(clf, X[300:], y[300:])
    assert got == pytest.approx(-func(y[300:], clf.predict_proba(X[300:])), rel=1e-12)
    assert got < 0
