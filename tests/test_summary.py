"""calibration_summary against logistic fits written here, statsmodels, a
direct LOWESS, pairwise concordance and a known calibration curve (R's
val.prob in test_summary_r)."""

import warnings

import numpy as np
import pytest
from scipy import optimize, special
from sklearn.exceptions import UndefinedMetricWarning

from skcalib._backend.logistic import logistic_fit
from skcalib._params import InvalidParameterError
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
    # Weights that are not integers count as rows once rescaled to sum to n.
    y, p, lp = _problem(4000, 0)
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    s = calibration_summary(y, p, sample_weight=w)
    wn = w * y.size / w.sum()
    b, se = _fit(y, np.column_stack([np.ones_like(lp), lp]), wn, np.zeros_like(lp))
    assert s.slope == pytest.approx(b[1], rel=1e-6)
    assert s.slope_se == pytest.approx(se[1], rel=1e-6)
    assert s.joint_intercept == pytest.approx(b[0], rel=1e-6, abs=1e-8)
    assert s.joint_intercept_se == pytest.approx(se[0], rel=1e-6)
    a, a_se = _fit(y, np.ones((lp.size, 1)), wn, lp)
    assert s.intercept == pytest.approx(a[0], rel=1e-6, abs=1e-8)
    assert s.intercept_se == pytest.approx(a_se[0], rel=1e-6)
    assert s.mean_difference == pytest.approx(np.sum(w * (y - p)) / np.sum(w))
    assert s.brier == pytest.approx(np.sum(w * (y - p) ** 2) / np.sum(w))


def test_against_statsmodels():
    sm = pytest.importorskip("statsmodels.api")
    y, p, lp = _problem(3000, 2)
    s = calibration_summary(y, p)
    joint = sm.GLM(y, sm.add_constant(lp), family=sm.families.Binomial()).fit()
    assert s.slope == pytest.approx(joint.params[1], rel=1e-9)
    assert s.slope_se == pytest.approx(joint.bse[1], rel=1e-7)
    assert s.joint_intercept == pytest.approx(joint.params[0], rel=1e-8)
    off = sm.GLM(
        y, np.ones((y.size, 1)), family=sm.families.Binomial(), offset=lp
    ).fit()
    assert s.intercept == pytest.approx(off.params[0], rel=1e-9)
    assert s.intercept_se == pytest.approx(off.bse[0], rel=1e-7)


def _likelihood_indexes(y, lp, w):
    """R2, D, U, Q by their definitions, the recalibration by scipy."""
    n = w.sum()
    ybar = np.sum(w * y) / n
    L0 = -2 * np.sum(w * (y * np.log(ybar) + (1 - y) * np.log(1 - ybar)))
    L01 = -2 * np.sum(w * (y * lp - np.log1p(np.exp(lp))))
    b, _ = _fit(y, np.column_stack([np.ones_like(lp), lp]), w, np.zeros_like(lp))
    eta = b[0] + b[1] * lp
    L_recal = -2 * np.sum(w * (y * eta - np.log1p(np.exp(eta))))
    lr = L0 - L01
    r2 = (1 - np.exp(-lr / n)) / (1 - np.exp(-L0 / n))
    d, u = (lr - 1) / n, (L01 - L_recal - 2) / n
    return r2, d, u, d - u


def test_likelihood_indexes_by_their_definitions():
    y, p, lp = _problem(2000, 7)
    s = calibration_summary(y, p)
    r2, d, u, q = _likelihood_indexes(y, lp, np.ones_like(y))
    assert s.nagelkerke_r2 == pytest.approx(r2, rel=1e-7)
    assert s.discrimination_index == pytest.approx(d, rel=1e-7)
    assert s.unreliability_index == pytest.approx(u, rel=1e-6)
    assert s.quality_index == pytest.approx(q, rel=1e-7)
    # U's p-value is the likelihood-ratio test of intercept 0 and slope 1.
    u_chi2 = u * y.size + 2
    assert s.unreliability_pvalue == pytest.approx(np.exp(-u_chi2 / 2), rel=1e-6)


def test_c_index_counts_pairs_with_ties_as_halves():
    rng = np.random.default_rng(8)
    p = np.round(rng.uniform(0.05, 0.95, size=300), 1)  # many ties
    y = (rng.uniform(size=300) < p).astype(float)
    w = rng.uniform(0.2, 3.0, 300)
    s = calibration_summary(y, p, sample_weight=w)
    pos, neg = y == 1, y == 0
    gt = (p[pos][:, None] > p[neg][None, :]) + 0.5 * (
        p[pos][:, None] == p[neg][None, :]
    )
    pair_w = w[pos][:, None] * w[neg][None, :]
    c = np.sum(pair_w * gt) / np.sum(pair_w)
    assert s.c_index == pytest.approx(c, rel=1e-12)
    assert s.dxy == pytest.approx(2 * c - 1, rel=1e-12)


def test_gaps_of_the_smooth_curve():
    y, p, _ = _problem(5000, 3)
    s = calibration_summary(y, p, curve="smooth")
    curve = smooth_calibration_curve(y, p)
    ok = np.isfinite(curve.y_smooth)
    gap = np.abs(np.interp(p, curve.scores[ok], curve.y_smooth[ok]) - p)
    assert s.curve == "smooth" and s.sigma > 0
    assert s.ici == pytest.approx(gap.mean(), rel=1e-12)
    assert s.emax == pytest.approx(gap.max(), rel=1e-12)
    # R's default quantile, numpy's "linear".
    assert s.e50 == pytest.approx(np.quantile(gap, 0.5), rel=1e-12)
    assert s.e90 == pytest.approx(np.quantile(gap, 0.9), rel=1e-12)
    loess = calibration_summary(y, p)
    assert loess.curve == "loess" and loess.sigma is None
    assert loess.slope == s.slope and loess.ici != s.ici


def _fields(s):
    """The numbers of a summary (counts of rows and names left out)."""
    return {k: v for k, v in vars(s).items() if isinstance(v, float)}


def test_integer_weights_are_repeated_rows():
    rng = np.random.default_rng(9)
    p = rng.beta(1, 3, 400)
    p[:5], p[5:8] = 0.0, 1.0
    y = (rng.uniform(size=400) < p).astype(float)
    w = rng.integers(0, 4, 400)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = calibration_summary(y, p, sample_weight=w)
        b = calibration_summary(np.repeat(y, w), np.repeat(p, w))
    for key, value in _fields(a).items():
        assert value == pytest.approx(getattr(b, key), rel=1e-9, abs=1e-13), key


def test_non_integer_weights_do_not_depend_on_their_scale():
    y, p, _ = _problem(500, 10)
    w = np.random.default_rng(10).uniform(0.1, 3.0, y.size)
    ref = _fields(calibration_summary(y, p, sample_weight=w))
    for scale in (1e-6, 1 / w.sum(), 7.3, 1e6):
        got = _fields(calibration_summary(y, p, sample_weight=scale * w))
        for key, value in ref.items():
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-13), key
    # Equal weights that are not integers are no weights at all.
    half = _fields(calibration_summary(y, p, sample_weight=np.full(y.size, 0.5)))
    for key, value in _fields(calibration_summary(y, p)).items():
        assert half[key] == pytest.approx(value, rel=1e-9, abs=1e-13), key


def test_exact_zero_and_one_leave_the_fits():
    y, p, _ = _problem(600, 11)
    p[:4], p[4:9] = 0.0, 1.0
    y[0], y[4] = 1.0, 0.0  # contradicted: an infinite log-loss
    with pytest.warns(UserWarning, match="9 of 600 rows") as caught:
        s = calibration_summary(y, p)
    assert [w.filename for w in caught] == [__file__]
    assert s.n_dropped == 9
    keep = slice(9, None)
    lp = special.logit(p[keep])
    b, _ = _fit(y[keep], np.column_stack([np.ones_like(lp), lp]), np.ones_like(lp), 0)
    assert s.slope == pytest.approx(b[1], rel=1e-6)
    r2, d, u, q = _likelihood_indexes(y[keep], lp, np.ones_like(lp))
    assert (s.nagelkerke_r2, s.discrimination_index) == pytest.approx((r2, d))
    assert (s.unreliability_index, s.quality_index) == pytest.approx((u, q))
    # Every row counts where no logit is needed.
    assert s.brier == pytest.approx(np.mean((p - y) ** 2))
    assert np.isfinite(s.c_index) and np.isfinite(s.emax)
    # clip keeps every row, on clipped logits.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = calibration_summary(y, p, clip=1e-6)
    lp = special.logit(np.clip(p, 1e-6, 1 - 1e-6))
    b, _ = _fit(y, np.column_stack([np.ones_like(lp), lp]), np.ones_like(lp), 0)
    assert c.slope == pytest.approx(b[1], rel=1e-6) and c.n_dropped == 0
    assert c.ici == s.ici and c.c_index == s.c_index


def test_every_score_zero_or_one_leaves_no_fit():
    y = np.r_[np.ones(10), np.zeros(10)]
    p = np.r_[np.ones(7), np.zeros(3), np.zeros(8), np.ones(2)]
    with pytest.warns(UserWarning, match="20 of 20 rows"):
        with pytest.warns(UndefinedMetricWarning, match="no row is left"):
            s = calibration_summary(y, p)
    assert s.n_dropped == 20 and not s.converged
    assert np.isnan([s.slope, s.intercept, s.nagelkerke_r2, s.quality_index]).all()
    assert s.brier == pytest.approx(0.25)
    assert s.c_index == pytest.approx((7 * 8 + 0.5 * (7 * 2 + 3 * 8)) / 100)


def test_finite_extreme_logits_are_kept():
    # Scores of 1e-300 have a finite logit (-690.8): kept, not clipped.
    y, p, _ = _problem(500, 12)
    p[:3] = [1e-300, 1e-200, 1e-100]
    y[:3] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = calibration_summary(y, p)
    lp = np.log(p) - np.log1p(-p)
    b, _ = _fit(y, np.column_stack([np.ones_like(lp), lp]), np.ones_like(lp), 0)
    assert s.n_dropped == 0
    assert s.slope == pytest.approx(b[1], rel=1e-6)


@pytest.mark.slow
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
        with pytest.warns(UndefinedMetricWarning, match="c_index, dxy"):
            s = calibration_summary(np.zeros(40), p)
    assert not s.converged
    assert np.isnan([s.c_index, s.dxy, s.nagelkerke_r2]).all()


def test_one_score_leaves_the_slope_undefined():
    # A model that predicts one probability (the prevalence, or a constant):
    # no slope fits better than another, but calibration in the large is
    # defined, in closed form: logit(mean y) - logit(s), with standard error
    # 1 / sqrt(n ybar (1 - ybar)); U's chi-square (1 degree of freedom) is
    # 2 n KL(ybar, s).
    y = np.r_[np.ones(13), np.zeros(27)]
    with pytest.warns(UndefinedMetricWarning, match="single value") as caught:
        s = calibration_summary(y, np.full(40, 0.3))
    assert [w.filename for w in caught] == [__file__]
    assert np.isnan([s.slope, s.slope_se, s.joint_intercept]).all()
    assert s.intercept == pytest.approx(np.log(13 / 27) - special.logit(0.3))
    assert s.intercept_se == pytest.approx(1 / np.sqrt(40 * 13 / 40 * 27 / 40))
    assert s.mean_difference == pytest.approx(13 / 40 - 0.3)
    kl = 13 / 40 * np.log(13 / 40 / 0.3) + 27 / 40 * np.log(27 / 40 / 0.7)
    assert s.unreliability_index == pytest.approx((80 * kl - 1) / 40)
    assert s.unreliability_pvalue == pytest.approx(special.chdtrc(1, 80 * kl))
    # The curve of one score is the mean label.
    assert s.emax == s.ici == pytest.approx(13 / 40 - 0.3)


@pytest.mark.parametrize("score", [0.0, 1.0])
def test_one_score_of_zero_or_one_with_clip(score):
    y = np.r_[np.ones(13), np.zeros(27)]
    with pytest.warns(UndefinedMetricWarning, match="single value"):
        s = calibration_summary(y, np.full(40, score), clip=1e-10)
    c = np.clip(score, 1e-10, 1 - 1e-10)
    assert s.intercept == pytest.approx(np.log(13 / 27) - special.logit(c), rel=1e-8)


@pytest.mark.parametrize(
    "kwargs", [{"clip": 0.5}, {"clip": 0.0}, {"clip": "1e-3"}, {"curve": "lowess"}]
)
def test_bad_parameters_are_named(kwargs):
    y, p, _ = _problem(50, 13)
    with pytest.raises(InvalidParameterError, match=next(iter(kwargs))):
        calibration_summary(y, p, **kwargs)


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
