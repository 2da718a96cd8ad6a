"""KernelRecalibrator and RecalibratedClassifier against independent references."""

import warnings

import numpy as np
import pytest
from _references import reflected_kernel
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_iris, make_classification
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV, KFold, cross_val_predict
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.estimator_checks import (
    check_dict_unchanged,
    check_estimator,
    check_estimators_pickle,
    check_fit2d_1feature,
    check_fit_check_is_fitted,
    check_fit_idempotent,
    check_get_feature_names_out_error,
    check_global_output_transform_pandas,
    check_methods_sample_order_invariance,
    check_methods_subset_invariance,
    check_set_output_transform,
    check_set_output_transform_pandas,
    check_transformer_data_not_an_array,
    check_transformer_general,
    check_transformer_get_feature_names_out,
    check_transformer_get_feature_names_out_pandas,
    parametrize_with_checks,
)

from skcalib import KernelRecalibrator, RecalibratedClassifier
from skcalib._backend.bandwidth import BANDWIDTH_GRID
from skcalib._backend.grid import calibration_statistics
from skcalib._backend.recalibration.grid_map import (
    SIGMA_GRID,
    fit_grid_map,
    loo_log_loss,
    loo_predictions,
    select_sigma_loo,
)
from skcalib.datasets import calibration_function, make_calibration_problem
from skcalib.metrics import smooth_ece

# ---------------------------------------------------------------------------
# Brute-force references: direct reflected-Gaussian kernel sums at the samples.
# ---------------------------------------------------------------------------


def brute_nw(t, y, s, w, sigma):
    K = reflected_kernel(t, s, sigma) * w
    return K @ y / K.sum(axis=1)


def _loo_kernel(s, w, sigma):
    """w_i K(s_j, s_i) with sample j (all its weight) left out of row j."""
    K = reflected_kernel(s, s, sigma) * w
    np.fill_diagonal(K, 0.0)
    return K


def brute_loo(y, s, w, sigma):
    K = _loo_kernel(s, w, sigma)
    return K @ y / K.sum(axis=1)


def brute_loo_log_loss(y, s, w, sigma, eps):
    p = np.clip(brute_loo(y, s, w, sigma), eps, 1 - eps)
    return -np.sum(w * np.where(y > 0.5, np.log(p), np.log(1 - p))) / w.sum()


def _binary(n=400, seed=0, problem="u2"):
    d = make_calibration_problem(n, problem=problem, random_state=seed)
    rng = np.random.default_rng(seed + 100)
    return d.y_true.astype(float), d.y_proba, rng.uniform(0.5, 2.0, n)


# ---------------------------------------------------------------------------
# Backend: the grid map and its leave-one-out criterion
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("sigma", [0.01, 0.05, 0.2, 0.8])
def test_grid_map_matches_direct_kernel_sums(sigma):
    y, s, w = _binary(500, seed=1)
    s[:2] = [0.0, 1.0]  # boundary points: the reflection matters
    gm = fit_grid_map(calibration_statistics(y, s, w), sigma)  # plain NW
    t = np.linspace(0, 1, 301)
    np.testing.assert_allclose(gm(t), brute_nw(t, y, s, w, sigma), atol=2e-4)


@pytest.mark.parametrize("sigma", [0.01, 0.05, 0.3])
def test_loo_matches_brute_force(sigma):
    y, s, w = _binary(300, seed=2)
    stats = calibration_statistics(y, s, w)
    loo = loo_predictions(stats, y, s, w, sigma)
    np.testing.assert_allclose(loo, brute_loo(y, s, w, sigma), atol=3e-4)
    # with a pseudo-observation of label 1/2 and weight c (share c / W)
    c = 1.5
    K = _loo_kernel(s, w, sigma)
    k0 = c / (sigma * np.sqrt(2 * np.pi))
    ref = (K @ y + 0.5 * k0) / (K.sum(axis=1) + k0)
    loo_p = loo_predictions(stats, y, s, w, sigma, prior=c / w.sum())
    np.testing.assert_allclose(loo_p, ref, atol=3e-4)
    eps = 1e-7
    assert loo_log_loss(stats, y, s, w, sigma, eps) == pytest.approx(
        brute_loo_log_loss(y, s, w, sigma, eps), abs=2e-4
    )


def test_loo_equals_grid_refit_without_the_point():
    # The self-kernel removal is exact for the grid estimator: refitting the
    # grid map without sample i and reading it at s_i gives the same number.
    y, s, w = _binary(120, seed=3)
    stats = calibration_statistics(y, s, w)
    sigma = 0.07
    loo = loo_predictions(stats, y, s, w, sigma)
    for i in range(0, 120, 7):
        w_i = w.copy()
        w_i[i] = 0.0  # sample i removed
        gm = fit_grid_map(calibration_statistics(y, s, w_i), sigma)
        assert loo[i] == pytest.approx(gm(s[i : i + 1])[0], abs=1e-12)


def test_loo_isolated_point_takes_nearest_label():
    s = np.array([0.1, 0.11, 0.12, 0.9])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    w = np.ones(4)
    loo = loo_predictions(calibration_statistics(y, s, w), y, s, w, 0.002)
    assert loo[3] == y[2]  # the nearest other sample is s=0.12 (y=1)


def test_selected_bandwidth_is_brute_force_minimiser():
    y, s, w = _binary(250, seed=4, problem="wiggle")
    eps = 1e-7
    stats = calibration_statistics(y, s, w)
    sigma, info = select_sigma_loo(stats, y, s, w, eps)
    brute = np.array([brute_loo_log_loss(y, s, w, g, eps) for g in SIGMA_GRID])
    np.testing.assert_allclose(info["scores"], brute, atol=5e-4)
    # The refined choice is at least as good as the best grid value, by the
    # brute-force criterion (within the grid-approximation tolerance).
    assert brute_loo_log_loss(y, s, w, sigma, eps) <= brute.min() + 5e-4
    assert SIGMA_GRID[0] <= sigma <= SIGMA_GRID[-1]


def test_loo_subsample_on_large_n_is_close():
    y, s, w = _binary(6000, seed=5)
    stats = calibration_statistics(y, s, w)
    full, _ = select_sigma_loo(stats, y, s, w, 1e-7)
    sub, info = select_sigma_loo(stats, y, s, w, 1e-7, max_points=1500)
    assert info["n_used"] == 1500
    assert abs(np.log(sub / full)) < np.log(2.0)


# ---------------------------------------------------------------------------
# KernelRecalibrator: statistical behaviour with known ground truth
# ---------------------------------------------------------------------------


def _ll(y, q):
    q = np.clip(q, 1e-15, 1 - 1e-15)
    return -np.mean(y * np.log(q) + (1 - y) * np.log(1 - q))


@pytest.mark.parametrize("method", ["auto", "grid"])
@pytest.mark.parametrize(
    "problem, tol, sm_tol",
    # A kernel map blurs the jump of "step" over a band of width ~sigma, where
    # the recalibrated score sits between 0.2 and 0.8 while E[y | score] is 0.2
    # or 0.8: a little more log-loss and a visible smECE.
    [("overconfident", 0.01, 0.01), ("u2", 0.01, 0.01), ("step", 0.02, 0.04)],
)
def test_recalibration_reaches_the_calibrated_optimum(problem, tol, sm_tol, method):
    cal = make_calibration_problem(6000, problem=problem, random_state=10)
    test = make_calibration_problem(20000, problem=problem, random_state=11)
    rc = KernelRecalibrator(method=method).fit(cal.y_proba, cal.y_true)
    q = rc.transform(test.y_proba)
    oracle = calibration_function(test.y_proba, problem=problem)
    y = test.y_true
    ll_q, ll_raw, ll_oracle = _ll(y, q), _ll(y, test.y_proba), _ll(y, oracle)
    assert ll_q < ll_raw
    assert ll_q <= ll_oracle * (1 + tol)
    # smECE of the recalibrated scores is at the level of the oracle's, whose
    # smECE on a finite sample is pure estimation noise.
    assert smooth_ece(y, q) <= smooth_ece(y, oracle) + sm_tol
    assert smooth_ece(y, q) < 0.35 * smooth_ece(y, test.y_proba)


@pytest.mark.parametrize("method", ["auto", "grid"])
def test_recalibrator_leaves_calibrated_scores_almost_unchanged(method):
    d = make_calibration_problem(20000, problem="calibrated", random_state=3)
    rc = KernelRecalibrator(method=method).fit(d.y_proba, d.y_true)
    q = rc.transform(d.y_proba)
    assert np.mean(np.abs(q - d.y_proba)) < 0.02


def _multiclass(n, K=4, T=2.5, seed=0):
    """Dirichlet scores whose true class distribution is softmax(log f / T)."""
    rng = np.random.default_rng(seed)
    F = rng.dirichlet(np.full(K, 0.7), size=n)
    F = np.clip(F, 1e-6, None)
    F /= F.sum(axis=1, keepdims=True)
    eta = softmax(np.log(F) / T, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(eta, axis=1)).sum(axis=1)
    return F, np.minimum(y, K - 1), eta


@pytest.mark.parametrize("method", ["logit", "canonical", "classwise"])
def test_multiclass_recalibration_improves_log_loss(method):
    F, y, _ = _multiclass(2500, seed=1)
    Ft, yt, eta_t = _multiclass(4000, seed=2)
    rc = KernelRecalibrator(method=method).fit(F, y)
    Q = rc.transform(Ft)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    labels = np.arange(4)
    ll_q = log_loss(yt, Q, labels=labels)
    ll_raw = log_loss(yt, Ft, labels=labels)
    ll_oracle = log_loss(yt, eta_t, labels=labels)
    assert ll_q < ll_raw
    assert ll_q - ll_oracle < 0.1 * (ll_raw - ll_oracle)
    if method == "classwise":
        assert rc.bandwidth_.shape == (4,)
    else:
        assert np.ndim(rc.bandwidth_) == 0


@pytest.mark.parametrize("bandwidth", ["mle", "risk", 0.05])
def test_canonical_bandwidth_options(bandwidth):
    F, y, _ = _multiclass(600, seed=3)
    rc = KernelRecalibrator(method="canonical", bandwidth=bandwidth).fit(F, y)
    assert rc.method_ == "canonical"
    if isinstance(bandwidth, float):
        assert rc.bandwidth_ == bandwidth
    else:
        # The grid value maximising the criterion written out directly: the
        # leave-one-out log-likelihood of the Dirichlet kernel density ("mle")
        # or minus the squared risk-alignment residuals ("risk").
        from scipy.special import logsumexp

        from skcalib._backend.bandwidth import BANDWIDTH_GRID
        from skcalib._backend.kernels import dirichlet_log_kernel
        from skcalib._backend.smoothing import dirichlet_nw

        n = len(y)
        crit = []
        for g in BANDWIDTH_GRID:
            if bandwidth == "mle":
                L = dirichlet_log_kernel(F, F, g)
                np.fill_diagonal(L, -np.inf)
                crit.append(np.sum(logsumexp(L, axis=1) - np.log(n - 1)))
            else:
                t = ((np.eye(4)[y] - F) ** 2).sum(axis=1)
                R = dirichlet_nw(F, y, np.ones(n), None, g, leave_one_out=True).ratio
                v = 1 - 2 * (R * F).sum(axis=1) + (F * F).sum(axis=1)
                crit.append(-((v - t) ** 2).sum())
        assert rc.bandwidth_ == BANDWIDTH_GRID[int(np.argmax(crit))]
    Q = rc.transform(F[:50])
    assert np.all((Q > 0) & (Q < 1))


def test_canonical_transform_is_dirichlet_nadaraya_watson():
    # Reference: direct Dirichlet kernel weights with scipy.stats.dirichlet.
    from scipy.stats import dirichlet

    F, y, _ = _multiclass(80, K=3, seed=4)
    X = _multiclass(5, K=3, seed=5)[0]
    b = 0.2
    rc = KernelRecalibrator(
        shrinkage=0, method="canonical", bandwidth=b, eps=1e-12, pseudo_count=0
    ).fit(F, y)
    Kmat = np.array([[dirichlet.pdf(x, f / b + 1) for f in F] for x in X])
    R = Kmat @ np.eye(3)[y] / Kmat.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(rc.transform(X), R, rtol=1e-6, atol=1e-10)


def test_canonical_pseudo_count_is_a_uniform_pseudo_observation():
    from scipy.stats import dirichlet

    F, y, _ = _multiclass(60, K=3, seed=6)
    X = _multiclass(4, K=3, seed=7)[0]
    b, c = 0.3, 2.0
    rc = KernelRecalibrator(
        shrinkage=0, method="canonical", bandwidth=b, eps=1e-12, pseudo_count=c
    ).fit(F, y)
    Kmat = np.array([[dirichlet.pdf(x, f / b + 1) for f in F] for x in X])
    k_self = np.array([dirichlet.pdf(x, x / b + 1) for x in X])
    R = (Kmat @ np.eye(3)[y] + c * k_self[:, None] / 3) / (
        Kmat.sum(axis=1) + c * k_self
    )[:, None]
    np.testing.assert_allclose(rc.transform(X), R, rtol=1e-6)


def test_grid_pseudo_count_is_a_half_label_pseudo_observation():
    y, s, w = _binary(400, seed=8)
    sigma, c = 0.03, 3.0
    rc = KernelRecalibrator(shrinkage=0, method="grid", bandwidth=sigma, pseudo_count=c)
    rc.fit(s, y, w)
    t = np.linspace(0, 1, 101)
    K = reflected_kernel(t, s, sigma) * w
    k0 = 1.0 / (sigma * np.sqrt(2 * np.pi))
    ref = (K @ y + 0.5 * c * k0) / (K.sum(axis=1) + c * k0)
    np.testing.assert_allclose(rc.transform(t), ref, atol=2e-4)
    # far from the data it tends to one half
    far = KernelRecalibrator(
        shrinkage=0, method="grid", bandwidth=0.002, pseudo_count=1
    )
    far.fit([0.1, 0.11], [1, 1])
    assert far.transform([0.9])[0] == pytest.approx(0.5)


def test_smece_bandwidth_and_float_bandwidth():
    y, s, w = _binary(2000, seed=6)
    rc = KernelRecalibrator(method="grid", bandwidth="smece").fit(s, y)
    assert rc.bandwidth_ == pytest.approx(
        max(smooth_ece(y, s), SIGMA_GRID[0]), abs=1e-4
    )
    rc = KernelRecalibrator(method="grid", bandwidth=0.1, pseudo_count=0)
    rc.fit(s, y, sample_weight=w)
    t = np.linspace(0, 1, 50)
    np.testing.assert_allclose(rc.transform(t), brute_nw(t, y, s, w, 0.1), atol=2e-4)


@pytest.mark.parametrize(
    "params",
    [
        {"method": "grid", "bandwidth": 0.05},
        {"method": "logit", "base": "platt", "bandwidth": 0.05},
        {"method": "logit", "base": "sigmoid", "bandwidth": 0.2},
    ],
)
def test_integer_weights_equal_repeated_rows(params):
    y, s, _ = _binary(300, seed=7)
    w = np.random.default_rng(0).integers(0, 4, 300).astype(float)
    rep = np.repeat(np.arange(300), w.astype(int))
    a = KernelRecalibrator(**params).fit(s, y, sample_weight=w)
    b = KernelRecalibrator(**params).fit(s[rep], y[rep])
    t = np.linspace(0, 1, 101)
    np.testing.assert_allclose(a.transform(t), b.transform(t), atol=1e-9)


@pytest.mark.parametrize("method", ["grid", "canonical"])
def test_leave_one_out_bandwidth_ignores_the_scale_of_the_weights(method):
    # With no pseudo-count the smoother is a ratio of weighted sums, so
    # multiplying every weight by a constant changes nothing, as long as
    # leave-one-out removes a sample's whole weight: left with a copy of
    # itself, a sample votes for itself and the smallest bandwidth wins.
    rng = np.random.default_rng(11)
    P = rng.dirichlet(np.ones(3), 400)
    y = np.array([rng.choice(3, p=p) for p in softmax(1.5 * np.log(P), axis=1)])
    if method == "grid":
        P, y = P[:, 0], (y == 0).astype(int)
    fits = [
        KernelRecalibrator(shrinkage=0, method=method, pseudo_count=0.0).fit(
            P, y, sample_weight=np.full(400, c)
        )
        for c in (1.0, 2.0, 10.0)
    ]
    for rc in fits[1:]:
        assert rc.bandwidth_ == pytest.approx(fits[0].bandwidth_, rel=1e-12)
        np.testing.assert_allclose(rc.transform(P), fits[0].transform(P), rtol=1e-9)
    assert fits[0].bandwidth_ > 0.01


@pytest.mark.parametrize("method", ["grid", "canonical"])
@pytest.mark.filterwarnings("error")
def test_a_single_calibration_sample_gives_finite_scores_and_the_smoothest_map(
    method,
):
    # Leave-one-out has no neighbour left: every bandwidth scores the same
    # (the prior alone), and the tie goes to the largest bandwidth.
    rc = KernelRecalibrator(method=method).fit([[0.3, 0.7]], [1])
    scores = np.asarray(rc.bandwidth_scores_, dtype=np.float64)
    assert np.all(np.isfinite(scores)) and np.ptp(scores) < 1e-12
    grid = SIGMA_GRID if method == "grid" else BANDWIDTH_GRID
    assert rc.bandwidth_ == pytest.approx(max(grid))
    Q = rc.transform([[0.9, 0.1], [0.3, 0.7]])
    assert np.all(np.isfinite(Q))
    # Other rows of zero weight change nothing (they crashed the canonical
    # leave-one-out, which counted them as neighbours).
    padded = KernelRecalibrator(method=method).fit(
        [[0.3, 0.7], [0.8, 0.2], [0.1, 0.9]], [1, 0, 1], sample_weight=[1, 0, 0]
    )
    np.testing.assert_allclose(padded.transform([[0.9, 0.1], [0.3, 0.7]]), Q)
    if method == "canonical":  # the density selectors agree, without warnings
        for bandwidth in ("mle", "risk"):
            rc = KernelRecalibrator(method=method, bandwidth=bandwidth)
            assert rc.fit([[0.3, 0.7]], [1]).bandwidth_ == pytest.approx(max(grid))


def test_output_layout_and_clipping():
    y, s, _ = _binary(500, seed=8, problem="step")
    rc = KernelRecalibrator(eps=1e-3).fit(np.column_stack([1 - s, s]), y)
    out = rc.transform(np.column_stack([1 - s, s]))
    assert out.shape == (500, 2)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    assert out.min() >= 1e-3 and out.max() <= 1 - 1e-3
    rc1 = KernelRecalibrator(eps=1e-3).fit(s, y)
    np.testing.assert_allclose(rc1.transform(s), out[:, 1])
    assert rc1.n_features_in_ == 1 and rc.n_features_in_ == 2


def test_string_labels_and_missing_class():
    F, y, _ = _multiclass(400, K=3, seed=9)
    names = np.array(["a", "b", "c"])[y]
    rc = KernelRecalibrator(method="classwise").fit(F, names)
    assert list(rc.classes_) == ["a", "b", "c"]
    # A class absent from y is accepted when labels are column indices.
    keep = y != 2
    rc = KernelRecalibrator(method="classwise").fit(F[keep], y[keep])
    assert list(rc.classes_) == [0, 1, 2]
    with pytest.raises(ValueError, match="distinct labels"):
        KernelRecalibrator().fit(F[keep], names[keep])


def test_transform_does_not_modify_input_nor_read_labels():
    y, s, _ = _binary(300, seed=10)
    P = np.column_stack([1 - s, s])
    P0 = P.copy()
    rc = KernelRecalibrator().fit(P, y)
    a = rc.transform(P)
    np.testing.assert_array_equal(P, P0)
    # Same probabilities, whatever labels would go with them.
    np.testing.assert_array_equal(rc.transform(P[::-1])[::-1], a)


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.array([[0.5, 0.7], [0.2, 0.8]]), "Rows of X must sum to 1"),
        (
            np.array([[1.2, -0.2], [0.2, 0.8]]),
            r"X must contain probabilities in \[0, 1\]",
        ),
        (np.array([[np.nan, 0.5], [0.2, 0.8]]), "X"),
        (np.array([[0.2, 0.3, 0.5]]), "X has 3 features"),
        (np.array([0.2, 0.3]), "X has 1 features"),
    ],
)
def test_transform_rejects_bad_probabilities(bad, match):
    y, s, _ = _binary(200, seed=11)
    rc = KernelRecalibrator().fit(np.column_stack([1 - s, s]), y)
    with pytest.raises(ValueError, match=match):
        rc.transform(bad)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"method": "top-label"}, "'method' parameter.* must be one of"),
        ({"bandwidth": "mle"}, "bandwidth='mle' is not available for the 'logit'"),
        ({"bandwidth": "smece"}, "bandwidth='smece' is not available for the 'logit'"),
        (
            {"method": "grid", "bandwidth": "mle"},
            "bandwidth='mle' is not available for the 'grid'",
        ),
        ({"method": "canonical", "bandwidth": 0.0}, "'bandwidth' parameter.* > 0"),
        (
            {"method": "grid", "bandwidth": 0.0},
            r"'bandwidth' parameter.*\[2\*\*-16, 1\]",
        ),
        ({"bandwidth": -1.0}, "'bandwidth' parameter.*>= 0"),
        ({"bandwidth": np.nan}, "bandwidth"),
        (
            {"method": "grid", "bandwidth": 2.0},
            r"'bandwidth' parameter.*\[2\*\*-16, 1\]",
        ),
        ({"base": "isotonic"}, "'base' parameter.* must be one of"),
        ({"bandwidth": np.inf, "base": "temperature"}, None),
        ({"bandwidth": 2.0}, None),
        ({"bandwidth": 0.0}, None),
        ({"eps": 0.7}, r"'eps' parameter.*in \(0, 0.5\)"),
        ({"method": "grid", "bandwidth": 0.1}, None),
        (
            {"method": "classwise", "bandwidth": "risk"},
            "bandwidth='risk' is not available for the 'classwise'",
        ),
        (
            {"method": "canonical", "bandwidth": 0.1, "n_jobs": 0},
            "'n_jobs' parameter.* must be",
        ),
        ({"n_jobs": "2"}, "'n_jobs' parameter.*nonzero int"),
        ({"n_jobs": -1}, None),
    ],
)
def test_bad_parameters(params, match):
    y, s, _ = _binary(200, seed=12)
    if match is None:
        KernelRecalibrator(**params).fit(s, y)
        return
    with pytest.raises((ValueError, TypeError), match=match):
        KernelRecalibrator(**params).fit(s, y)


def test_fit_input_errors():
    y, s, _ = _binary(50, seed=13)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        KernelRecalibrator().fit(s, y[:-1])
    with pytest.raises(ValueError, match="sample_weight"):
        KernelRecalibrator().fit(s, y, sample_weight=-np.ones(50))
    with pytest.raises(ValueError, match="requires y"):
        KernelRecalibrator().fit(s, None)
    with pytest.raises(NotFittedError):
        KernelRecalibrator().transform(s)
    with pytest.raises(ValueError, match="'grid' needs a binary problem"):
        KernelRecalibrator(method="grid").fit(*_multiclass(50)[:2])


def test_feature_names_and_set_output():
    pd = pytest.importorskip("pandas")
    y, s, _ = _binary(300, seed=14)
    df = pd.DataFrame({"no": 1 - s, "yes": s})
    rc = KernelRecalibrator().set_output(transform="pandas").fit(df, y)
    out = rc.transform(df)
    assert list(out.columns) == ["no", "yes"]
    assert list(rc.get_feature_names_out()) == ["no", "yes"]
    np.testing.assert_allclose(out.to_numpy().sum(axis=1), 1.0)
    with pytest.warns(UserWarning, match="feature names"):
        rc.transform(df.to_numpy())
    # a Series is one column
    rc1 = KernelRecalibrator().fit(pd.Series(s, name="p"), y)
    assert rc1.n_features_in_ == 1


def _row_softmax(X):
    return softmax(np.asarray(X, dtype=np.float64), axis=1)


@pytest.mark.parametrize(
    "check",
    [
        check_set_output_transform,
        check_set_output_transform_pandas,
        check_global_output_transform_pandas,
        check_transformer_get_feature_names_out,
        check_transformer_get_feature_names_out_pandas,
        # and common checks that fail on raw X (see _KR_REASONS below)
        check_estimators_pickle,
        check_fit2d_1feature,
        check_fit_idempotent,
        check_methods_sample_order_invariance,
        check_methods_subset_invariance,
        check_transformer_general,
        check_transformer_data_not_an_array,
        check_dict_unchanged,
        check_fit_check_is_fitted,
    ],
)
def test_checks_on_probability_input(check):
    # These checks draw arbitrary real X; a row softmax in front turns it into
    # the probability matrix a recalibrator takes (names pass through it). The
    # set_output and feature-name checks are also those check_estimator skips.
    pytest.importorskip("pandas")
    front = FunctionTransformer(_row_softmax, feature_names_out="one-to-one")
    check("KernelRecalibrator", make_pipeline(front, KernelRecalibrator()))
    check_get_feature_names_out_error("KernelRecalibrator", KernelRecalibrator())


# The common checks draw X from arbitrary real features. A recalibrator's input
# is a probability matrix: such X is rejected at fit with a ValueError naming
# X (values outside [0, 1] or rows not summing to one), by design. Some checks
# fail for a further reason, which they meet with probabilities as X too
# (test_expected_failures_on_probability_input).
_NOT_PROBABILITIES = (
    "X is not a probability matrix: rejected by design (values outside [0, 1] or "
    "rows not summing to one)"
)
_CHECKED_FIRST = (
    "X is not a probability matrix and is refused before {} (values outside "
    "[0, 1] or rows not summing to one)"
)
_THREE_CLASSES = (
    "X is not a probability matrix; besides, y has 3 classes for the 2 columns "
    "of X, and a probability matrix has one column per class"
)
_KR_REASONS = {
    "check_fit_score_takes_y": _NOT_PROBABILITIES,
    "check_positive_only_tag_during_fit": _CHECKED_FIRST.format(
        "anything else: negative values are not probabilities"
    ),
    "check_estimators_dtypes": _NOT_PROBABILITIES,
    "check_estimators_overwrite_params": _THREE_CLASSES,
    "check_dont_overwrite_parameters": _NOT_PROBABILITIES,
    "check_sample_weights_pandas_series": _CHECKED_FIRST.format("the weights"),
    "check_estimators_fit_returns_self": _THREE_CLASSES,
    "check_sample_weights_not_an_array": _NOT_PROBABILITIES,
    "check_readonly_memmap_input": _THREE_CLASSES,
    "check_sample_weights_list": _NOT_PROBABILITIES,
    "check_n_features_in_after_fitting": _NOT_PROBABILITIES,
    "check_estimators_pickle": _NOT_PROBABILITIES,
    "check_all_zero_sample_weights_error": _CHECKED_FIRST.format(
        "the weights, so the error is not about zero weights"
    ),
    "check_sample_weights_shape": _NOT_PROBABILITIES,
    "check_f_contiguous_array_estimator": _NOT_PROBABILITIES,
    "check_sample_weights_not_overwritten": _NOT_PROBABILITIES,
    "check_transformer_data_not_an_array": _NOT_PROBABILITIES,
    "check_sample_weight_equivalence_on_dense_data": (
        "X is not a probability matrix; besides, the default recalibrator "
        "chooses its base and bandwidth on held-out rows, where a weighted row "
        "is held out whole and repeated rows one copy at a time (with a fixed "
        "base and bandwidth, weights equal repeated rows)"
    ),
    "check_transformer_general": _NOT_PROBABILITIES,
    "check_dtype_object": _NOT_PROBABILITIES,
    "check_transformer_preserve_dtypes": _NOT_PROBABILITIES,
    "check_pipeline_consistency": _NOT_PROBABILITIES,
    "check_estimators_nan_inf": _NOT_PROBABILITIES,
    "check_methods_sample_order_invariance": _NOT_PROBABILITIES,
    "check_fit2d_predict1d": (
        "X is not a probability matrix; besides, a 1-D X is read as the "
        "positive-class probabilities of a binary problem, by design, so a "
        "fitted 3-column recalibrator reports a feature-count mismatch rather "
        "than 'Reshape your data'"
    ),
    "check_methods_subset_invariance": _NOT_PROBABILITIES,
    "check_fit2d_1sample": _CHECKED_FIRST.format("the sample count"),
    "check_fit2d_1feature": _CHECKED_FIRST.format("the feature count"),
    "check_dict_unchanged": _NOT_PROBABILITIES,
    "check_fit_idempotent": _NOT_PROBABILITIES,
    "check_fit_check_is_fitted": _NOT_PROBABILITIES,
    "check_n_features_in": _NOT_PROBABILITIES,
}


class _SoftmaxFront(KernelRecalibrator):
    """The recalibrator behind a row softmax: the checks' X made probabilities."""

    def fit(self, X, y=None, sample_weight=None):
        return super().fit(_as_probabilities(X), y, sample_weight)

    def transform(self, X):
        return super().transform(_as_probabilities(X))


def _as_probabilities(X):
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    try:
        A = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        return X  # left to the recalibrator's own error
    if A.ndim != 2 or A.size == 0:
        return X
    with np.errstate(invalid="ignore"):
        return softmax(A, axis=1)


@pytest.mark.slow
def test_expected_failures_on_probability_input():
    # With X made probabilities, the checks whose only reason is the X fail no
    # more; those with a further reason still fail, for that reason.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(
            _SoftmaxFront(), on_fail=None, expected_failed_checks={}
        )
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    further = {name for name, why in _KR_REASONS.items() if "besides" in why}
    assert failed == further


def _expected_failures(estimator):
    if isinstance(estimator, KernelRecalibrator):
        return dict(_KR_REASONS)
    out = {}
    if isinstance(estimator, RecalibratedClassifier) and estimator.cv is None:
        # 10 samples of 3 classes cannot be split in 5 stratified folds; the
        # error says so (cv=3 passes the check).
        out["check_fit2d_1feature"] = "5 folds need 5 samples per class"
    if isinstance(estimator, RecalibratedClassifier) and estimator.calibrator is None:
        reason = (
            "the default calibrator chooses its base and bandwidth by "
            "cross-validation over rows: repeated rows fall in several folds, a "
            "weighted row in one"
        )
        for kind in ("dense", "sparse"):
            out[f"check_sample_weight_equivalence_on_{kind}_data"] = reason
    return out


@parametrize_with_checks(
    [
        KernelRecalibrator(),
        # the meta-estimator's logic with a cheap (fixed-bandwidth) calibrator
        RecalibratedClassifier(
            cv=2, calibrator=KernelRecalibrator(base="temperature", bandwidth=0.1)
        ),
    ],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_common_checks(estimator, check):
    check(estimator)


@pytest.mark.slow
@parametrize_with_checks(
    [
        RecalibratedClassifier(),
        RecalibratedClassifier(
            cv=3, calibrator=IsotonicRegression(out_of_bounds="clip")
        ),
    ],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_common_checks_default_calibrators(estimator, check):
    # Per-class 1-D calibrators (isotonic) go through every check as well.
    check(estimator)


@pytest.mark.slow
def test_default_calibrator_with_three_folds_passes_fit2d_1feature():
    # The one common check the default calibrator is expected to fail above
    # (10 rows of 3 classes cannot fill 5 stratified folds) passes with 3
    # folds; the other checks take the same code path with 5 folds or 3.
    check_fit2d_1feature("RecalibratedClassifier", RecalibratedClassifier(cv=3))


# ---------------------------------------------------------------------------
# RecalibratedClassifier
# ---------------------------------------------------------------------------


def _data(n=1500, n_classes=2, seed=0):
    return make_classification(
        n_samples=n,
        n_features=8,
        n_informative=5,
        n_classes=n_classes,
        random_state=seed,
    )


def test_frozen_prefit_model_calibrated_on_given_data():
    X, y = _data(3000)
    base = GaussianNB().fit(X[:1500], y[:1500])
    clf = RecalibratedClassifier(FrozenEstimator(base), cv=7).fit(X[1500:], y[1500:])
    assert len(clf.calibrated_classifiers_) == 1
    ref = KernelRecalibrator().fit(base.predict_proba(X[1500:]), y[1500:])
    np.testing.assert_allclose(
        clf.predict_proba(X[:100]), ref.transform(base.predict_proba(X[:100]))
    )


def test_frozen_model_classes_are_kept_when_calibration_data_lack_one():
    X, y = _data(3000, n_classes=3, seed=1)
    labels = np.array(["cat", "dog", "emu"])[y]
    base = LogisticRegression().fit(X[:1500], labels[:1500])
    keep = labels[1500:] != "emu"
    X_cal, y_cal = X[1500:][keep], labels[1500:][keep]
    clf = RecalibratedClassifier(FrozenEstimator(base)).fit(X_cal, y_cal)
    np.testing.assert_array_equal(clf.classes_, ["cat", "dog", "emu"])
    # The calibrator saw column indices 0 and 1 of three columns.
    y_idx = np.searchsorted(base.classes_, y_cal)
    ref = KernelRecalibrator().fit(base.predict_proba(X_cal), y_idx)
    np.testing.assert_allclose(
        clf.predict_proba(X[:100]), ref.transform(base.predict_proba(X[:100]))
    )
    P = clf.predict_proba(X[:100])
    np.testing.assert_array_equal(clf.predict(X[:100]), clf.classes_[P.argmax(axis=1)])


def test_frozen_model_rejects_labels_it_was_not_fitted_on():
    X, y = _data(2000, n_classes=3, seed=2)
    base = LogisticRegression().fit(X[:1000], np.array(["a", "b", "c"])[y[:1000]])
    y_cal = np.array(["a", "b", "d"])[y[1000:]]
    with pytest.raises(ValueError, match=r"not fitted on: \['d'\]"):
        RecalibratedClassifier(FrozenEstimator(base)).fit(X[1000:], y_cal)
    with pytest.raises(ValueError, match="not fitted on"):
        RecalibratedClassifier(FrozenEstimator(base)).fit(X[1000:], y[1000:])


@pytest.mark.parametrize("n_classes", [2, 3])
def test_ensemble_false_uses_cross_val_predict(n_classes):
    X, y = _data(900, n_classes)
    cv = KFold(3, shuffle=True, random_state=0)
    clf = RecalibratedClassifier(GaussianNB(), cv=cv, ensemble=False).fit(X, y)
    P = cross_val_predict(GaussianNB(), X, y, cv=cv, method="predict_proba")
    ref = KernelRecalibrator().fit(P, y)
    base = GaussianNB().fit(X, y)
    np.testing.assert_allclose(
        clf.predict_proba(X[:50]), ref.transform(base.predict_proba(X[:50]))
    )


def test_ensemble_averages_fold_pairs():
    X, y = _data(900)
    cv = KFold(3, shuffle=True, random_state=1)
    clf = RecalibratedClassifier(GaussianNB(), cv=cv).fit(X, y)
    assert len(clf.calibrated_classifiers_) == 3
    parts = []
    for train, test in cv.split(X, y):
        m = GaussianNB().fit(X[train], y[train])
        # The uniform mixture is sized on all 900 rows, not on the fold's.
        r = KernelRecalibrator(shrinkage=1 / (2 * 900 + 1))
        r.fit(m.predict_proba(X[test]), y[test])
        parts.append(r.transform(m.predict_proba(X[:40])))
    np.testing.assert_allclose(clf.predict_proba(X[:40]), np.mean(parts, axis=0))


def test_isotonic_calibrator_per_class_matches_calibrated_classifier_cv():
    # sklearn's isotonic CalibratedClassifierCV applies one isotonic regression
    # per class and renormalises: the same rule as for 1-D calibrators here.
    X, y = load_iris(return_X_y=True)
    cv = KFold(3, shuffle=True, random_state=0)
    ours = RecalibratedClassifier(
        GaussianNB(), calibrator=IsotonicRegression(out_of_bounds="clip"), cv=cv
    ).fit(X, y)
    theirs = CalibratedClassifierCV(GaussianNB(), method="isotonic", cv=cv).fit(X, y)
    np.testing.assert_allclose(
        ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12
    )
    Xb, yb = _data(800)
    ours = RecalibratedClassifier(
        GaussianNB(), calibrator=IsotonicRegression(out_of_bounds="clip"), cv=cv
    ).fit(Xb, yb)
    theirs = CalibratedClassifierCV(GaussianNB(), method="isotonic", cv=cv).fit(Xb, yb)
    np.testing.assert_allclose(
        ours.predict_proba(Xb), theirs.predict_proba(Xb), atol=1e-12
    )


def test_isotonic_out_of_bounds_nan_is_an_error():
    X, y = _data(600)
    clf = RecalibratedClassifier(
        GaussianNB(), calibrator=IsotonicRegression(), cv=2
    ).fit(X, y)
    Xf = X.copy()
    Xf[:, :] *= 50  # scores beyond the fitted range
    with pytest.raises(ValueError, match="out_of_bounds='clip'"):
        clf.predict_proba(Xf)


class _WeightProbe(ClassifierMixin, BaseEstimator):
    """LogisticRegression that records the sample weights it was fitted with."""

    def fit(self, X, y, sample_weight=None):
        self.seen_weight_ = sample_weight
        self.model_ = LogisticRegression().fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


def test_sample_weight_routing():
    import sklearn

    X, y = _data(600)
    w = np.random.default_rng(0).uniform(0.5, 2, 600)
    with sklearn.config_context(enable_metadata_routing=True):
        probe = _WeightProbe().set_fit_request(sample_weight=True)
        clf = RecalibratedClassifier(probe, cv=KFold(2)).fit(X, y, sample_weight=w)
        seen = clf.calibrated_classifiers_[0].estimator.seen_weight_
        np.testing.assert_array_equal(seen, w[300:])
        probe = _WeightProbe().set_fit_request(sample_weight=False)
        clf2 = RecalibratedClassifier(probe, cv=KFold(2)).fit(X, y, sample_weight=w)
        assert clf2.calibrated_classifiers_[0].estimator.seen_weight_ is None
    # Without routing, sample_weight goes to both the estimator and calibrator.
    clf3 = RecalibratedClassifier(_WeightProbe(), cv=KFold(2)).fit(
        X, y, sample_weight=w
    )
    np.testing.assert_array_equal(
        clf3.calibrated_classifiers_[0].estimator.seen_weight_, w[300:]
    )
    # The calibrator of fold 0 used the test-part weights.
    pair = clf3.calibrated_classifiers_[0]
    P = pair.estimator.predict_proba(X[:300])
    # ... with the uniform mixture of the whole set's weight (DESIGN 4.7).
    ref = KernelRecalibrator(shrinkage=1 / (2 * w.sum() + 1))
    ref.fit(P, y[:300], sample_weight=w[:300])
    np.testing.assert_allclose(pair.calibrators[0].transform(P), ref.transform(P))


def test_ensemble_false_routes_groups_and_aliased_parameters():
    import sklearn
    from sklearn.model_selection import GroupKFold, ShuffleSplit

    X, y = _data(600)
    groups = np.arange(600) % 6
    w = np.random.default_rng(1).uniform(0.5, 2, 600)
    cv = GroupKFold(3)
    with sklearn.config_context(enable_metadata_routing=True):
        # groups reach the splitter, and a weight requested under an alias
        # reaches every fit (the folds' and the final one) under its name.
        probe = _WeightProbe().set_fit_request(sample_weight="my_w")
        clf = RecalibratedClassifier(probe, cv=cv, ensemble=False).fit(
            X, y, groups=groups, my_w=w
        )
        np.testing.assert_array_equal(
            clf.calibrated_classifiers_[0].estimator.seen_weight_, w
        )
    P = np.empty((600, 2))
    for train, test in cv.split(X, y, groups):
        fold = _WeightProbe().fit(X[train], y[train], sample_weight=w[train])
        P[test] = fold.predict_proba(X[test])
    ref = KernelRecalibrator().fit(P, y)
    base = _WeightProbe().fit(X, y, sample_weight=w)
    np.testing.assert_allclose(
        clf.predict_proba(X[:50]), ref.transform(base.predict_proba(X[:50]))
    )
    with pytest.raises(ValueError, match="partition the samples"):
        RecalibratedClassifier(GaussianNB(), cv=ShuffleSplit(3), ensemble=False).fit(
            X, y
        )


def test_pipeline_clone_and_grid_search_nested_params():
    X, y = _data(600, 3)
    model = RecalibratedClassifier(
        LogisticRegression(max_iter=500),
        calibrator=KernelRecalibrator(method="classwise"),
        cv=2,
    )
    pipe = make_pipeline(StandardScaler(), model)
    search = GridSearchCV(
        pipe,
        {
            "recalibratedclassifier__calibrator__bandwidth": [0.05, "auto"],
            "recalibratedclassifier__estimator__C": [0.1, 1.0],
        },
        scoring="neg_log_loss",
        cv=2,
    ).fit(X, y)
    assert set(search.best_params_) == {
        "recalibratedclassifier__calibrator__bandwidth",
        "recalibratedclassifier__estimator__C",
    }
    proba = search.predict_proba(X[:10])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    c = clone(model)
    assert c.get_params()["calibrator__method"] == "classwise"
    assert not hasattr(c, "classes_")
    # The logit map's end points, parametric (inf) and monotone step (0).
    search = GridSearchCV(
        RecalibratedClassifier(
            LogisticRegression(max_iter=500), calibrator=KernelRecalibrator(), cv=2
        ),
        {"calibrator__bandwidth": [0.0, np.inf]},
        scoring="neg_log_loss",
        cv=2,
    ).fit(X, y)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    fitted = search.best_estimator_.calibrated_classifiers_[0].calibrators[0]
    assert fitted.bandwidth_ == search.best_params_["calibrator__bandwidth"]


def test_string_labels_feature_names_and_improved_log_loss():
    pd = pytest.importorskip("pandas")
    # Redundant (correlated) features make naive Bayes over-confident.
    X, y = make_classification(
        4000, n_features=20, n_informative=3, n_redundant=12, random_state=0
    )
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    labels = np.array(["neg", "pos"])[y]
    clf = RecalibratedClassifier(GaussianNB(), cv=3).fit(df[:3000], labels[:3000])
    assert list(clf.classes_) == ["neg", "pos"]
    assert list(clf.feature_names_in_) == list(df.columns)
    assert clf.n_features_in_ == 20
    assert set(clf.predict(df[3000:])) <= {"neg", "pos"}
    raw = GaussianNB().fit(df[:3000], labels[:3000]).predict_proba(df[3000:])
    ll_raw = log_loss(labels[3000:], raw)
    ll_cal = log_loss(labels[3000:], clf.predict_proba(df[3000:]))
    assert ll_cal < ll_raw


def test_meta_estimator_errors():
    X, y = _data(100)
    with pytest.raises(ValueError, match="'ensemble' parameter.* must be"):
        RecalibratedClassifier(ensemble="yes").fit(X, y)
    with pytest.raises(ValueError, match="'n_jobs' parameter.* must be"):
        RecalibratedClassifier(n_jobs=0).fit(X, y)
    with pytest.raises(TypeError, match="'estimator' parameter.*fit and predict_pr"):
        RecalibratedClassifier(LinearRegression()).fit(X, y)
    with pytest.raises(TypeError, match="'calibrator' parameter.*fit and transform"):
        RecalibratedClassifier(calibrator=LogisticRegression()).fit(X, y)
    with pytest.raises(ValueError, match="1 class"):
        RecalibratedClassifier().fit(X, np.zeros(100))
    with pytest.raises(NotFittedError):
        RecalibratedClassifier().predict(X)


def test_refit_on_plain_arrays_forgets_feature_names():
    pd = pytest.importorskip("pandas")
    from skcalib import PerturbedClassifier

    X, y = _data(300)
    frame = pd.DataFrame(X).add_prefix("f")
    for clf in (
        RecalibratedClassifier(GaussianNB()),
        PerturbedClassifier(GaussianNB()),
    ):
        clf.fit(frame, y)
        assert list(clf.feature_names_in_[:2]) == ["f0", "f1"]
        # As the refitted base model: no names, the new number of features.
        clf.fit(X[:, :3], y)
        assert not hasattr(clf, "feature_names_in_")
        assert clf.n_features_in_ == 3


def test_refit_with_another_method_leaves_no_attribute_of_the_first():
    y, s, _ = _binary(400, seed=3)
    P = np.column_stack([1 - s, s])
    rc = KernelRecalibrator(method="logit").fit(P, y)
    assert hasattr(rc, "base_") and hasattr(rc, "maps_")
    rc.set_params(method="canonical", bandwidth=0.1).fit(P, y)
    assert not hasattr(rc, "base_") and not hasattr(rc, "maps_")
    rc.set_params(method="grid").fit(P, y)
    assert not hasattr(rc, "calibration_points_") and not hasattr(rc, "base_")
    # A fixed classwise bandwidth selects nothing: no scores, as elsewhere.
    y3 = np.arange(300) % 3
    P3 = np.random.default_rng(0).dirichlet(np.ones(3), 300)
    rc = KernelRecalibrator(method="classwise", bandwidth=0.1).fit(P3, y3)
    assert rc.bandwidth_scores_ is None


class _BadOutput(ClassifierMixin, BaseEstimator):
    """A classifier whose predict_proba returns what ``kind`` says."""

    def __init__(self, kind="1-D"):
        self.kind = kind

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        n = len(X)
        if self.kind == "1-D":
            return np.full(n, 0.5)
        if self.kind == "one column":
            return np.full((n, 1), 1.0)
        out = np.full((n, len(self.classes_)), 1.0 / len(self.classes_))
        out[0, 0] = np.nan
        return out


@pytest.mark.parametrize("kind", ["1-D", "one column", "nan"])
def test_wrapped_predict_proba_output_is_checked(kind):
    # Read where it is read: the error names the wrapped estimator.
    X = np.random.default_rng(0).normal(size=(200, 2))
    y = np.arange(200) % 2
    with pytest.raises(ValueError, match="_BadOutput.predict_proba"):
        RecalibratedClassifier(_BadOutput(kind), cv=2).fit(X, y)
