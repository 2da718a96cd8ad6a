"""Binned calibration error against hand computations and sklearn."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from skcalib.metrics import binned_calibration_error


def test_hand_computed_small_case():
    y = np.array([0, 1, 0, 1, 1])
    p = np.array([0.05, 0.2, 0.45, 0.8, 1.0])
    # 2 uniform bins: [0, .5] holds 0.05, 0.2, 0.45 (labels 0, 1, 0);
    # (.5, 1] holds 0.8, 1.0
    g0 = abs(1 / 3 - (0.05 + 0.2 + 0.45) / 3)
    g1 = abs(1.0 - 0.9)
    assert binned_calibration_error(y, p, n_bins=2) == pytest.approx(
        0.6 * g0 + 0.4 * g1
    )
    assert binned_calibration_error(y, p, n_bins=2, norm="max") == pytest.approx(
        max(g0, g1)
    )
    l2 = np.sqrt(0.6 * g0**2 + 0.4 * g1**2)
    assert binned_calibration_error(y, p, n_bins=2, norm="l2") == pytest.approx(l2)
    assert binned_calibration_error(
        y, p, n_bins=2, norm="l2", root=False
    ) == pytest.approx(l2**2)


def test_score_one_is_in_last_bin():
    # A score of exactly 1.0 must not be dropped or put in an extra bin.
    bins = binned_calibration_error([1, 1], [0.95, 1.0], n_bins=10, return_details=True)
    np.testing.assert_array_equal(bins.bin, [9])
    np.testing.assert_array_equal(bins.count, [2])


def test_weighted_equals_repetition():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p**2).astype(int)
    reps = rng.integers(1, 4, size=200)
    for norm in ("l1", "l2", "max"):
        a = binned_calibration_error(y, p, sample_weight=reps, norm=norm)
        b = binned_calibration_error(np.repeat(y, reps), np.repeat(p, reps), norm=norm)
        assert a == pytest.approx(b)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [5, 10, "cbrt"])
def test_against_sklearn_calibration_curve(strategy, n_bins):
    rng = np.random.default_rng(1)
    p = rng.beta(2, 5, size=1000)
    y = (rng.uniform(size=1000) < np.sqrt(p)).astype(int)
    nb = int(np.ceil(1000 ** (1 / 3))) if n_bins == "cbrt" else n_bins
    prob_true, prob_pred = calibration_curve(y, p, n_bins=nb, strategy=strategy)
    # bin masses recomputed with sklearn's edges and rule (interior edges in
    # the bin below: searchsorted with side="left")
    if strategy == "uniform":
        edges = np.linspace(0, 1, nb + 1)
    else:
        edges = np.percentile(p, np.linspace(0, 1, nb + 1) * 100)
    idx = np.searchsorted(edges[1:-1], p, side="left")
    counts = np.bincount(idx, minlength=nb)
    mass = counts[counts > 0] / len(p)
    ece = np.sum(mass * np.abs(prob_true - prob_pred))
    l2 = np.sqrt(np.sum(mass * (prob_true - prob_pred) ** 2))
    mce = np.max(np.abs(prob_true - prob_pred))
    kw = dict(n_bins=n_bins, strategy=strategy)
    assert binned_calibration_error(y, p, **kw) == pytest.approx(ece)
    assert binned_calibration_error(y, p, norm="l2", **kw) == pytest.approx(l2)
    assert binned_calibration_error(y, p, norm="max", **kw) == pytest.approx(mce)


def test_debiased_l2_is_unbiased_at_perfect_calibration():
    # Calibrated data: the plug-in squared error is positive on average, the
    # debiased one averages to ~0 (Kumar et al. 2019).
    rng = np.random.default_rng(3)
    plug, deb = [], []
    for _ in range(200):
        p = rng.uniform(size=300)
        y = (rng.uniform(size=300) < p).astype(int)
        plug.append(binned_calibration_error(y, p, norm="l2", root=False, n_bins=10))
        deb.append(
            binned_calibration_error(
                y, p, norm="l2", root=False, n_bins=10, debias=True
            )
        )
    se = np.std(deb) / np.sqrt(len(deb))
    assert abs(np.mean(deb)) < 3 * se + 1e-4
    assert np.mean(plug) > 10 * se


def test_debiased_l2_converges_to_truth():
    # E[y|s] = s^2 with s ~ U(0,1): the binned L2 with 10 bins has population
    # value computable exactly per bin: gap_k = mean(s^2 - s) over the bin.
    edges = np.linspace(0, 1, 11)
    a, b = edges[:-1], edges[1:]
    gap = (b**3 - a**3) / 3 / (b - a) - (a + b) / 2
    truth = np.sum(0.1 * gap**2)
    rng = np.random.default_rng(4)
    vals = []
    for _ in range(100):
        p = rng.uniform(size=400)
        y = (rng.uniform(size=400) < p**2).astype(int)
        vals.append(
            binned_calibration_error(
                y, p, norm="l2", root=False, n_bins=10, debias=True
            )
        )
    assert np.mean(vals) == pytest.approx(truth, abs=3 * np.std(vals) / 10)


def test_multiclass_classwise_and_top_label():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=500)
    y = np.array([rng.choice(3, p=p) for p in P])
    conf, pred = P.max(1), P.argmax(1)
    assert binned_calibration_error(y, P) == pytest.approx(
        binned_calibration_error((pred == y).astype(int), conf)
    )
    cw = np.mean(
        [binned_calibration_error((y == k).astype(int), P[:, k]) for k in range(3)]
    )
    assert binned_calibration_error(y, P, multi_class="classwise") == pytest.approx(cw)
    res = binned_calibration_error(y, P, multi_class="classwise", return_details=True)
    assert len(res.edges) == len(res.count) == 3 and list(res.classes) == [0, 1, 2]
    # each class's table and value are those of its one-vs-rest problem
    for k in range(3):
        one = binned_calibration_error(
            (y == k).astype(int), P[:, k], return_details=True
        )
        assert res.class_values[k] == one.value
        np.testing.assert_array_equal(res.count[k], one.count)
        np.testing.assert_array_equal(res.mean_score[k], one.mean_score)
    assert res.value == pytest.approx(res.class_values.mean(), abs=1e-15)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(n_bins=0), "n_bins"),
        (dict(n_bins="sqrt"), "n_bins"),
        (dict(n_bins=2.5), "n_bins"),
        (dict(strategy="kmeans"), "strategy"),
        (dict(norm="l3"), "norm"),
        (dict(debias=True), "debias"),
        (dict(root=False, norm="max"), "root=False is only defined for norm='l2'"),
        (dict(root=False, norm="l1"), "root=False is only defined for norm='l2'"),
        (dict(debias="yes", norm="l2"), "'debias' parameter.* must be a bool"),
        (dict(root=1, norm="l2"), "'root' parameter.* must be a bool"),
        (dict(return_details="no"), "'return_details' parameter.* must be a bool"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        binned_calibration_error([0, 1], [0.2, 0.7], **kwargs)


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_unit_and_constant_weights_equal_no_weights_for_quantile_bins(norm):
    rng = np.random.default_rng(0)
    s = rng.uniform(size=1500)
    y = (rng.uniform(size=1500) < s**2).astype(int)
    kw = dict(n_bins=5, strategy="quantile", norm=norm)
    base = binned_calibration_error(y, s, **kw)
    assert binned_calibration_error(y, s, sample_weight=np.ones(1500), **kw) == base
    assert binned_calibration_error(
        y, s, sample_weight=np.full(1500, 3.0), **kw
    ) == pytest.approx(base, rel=1e-12)


@pytest.mark.parametrize("scale", [1e-200, 1e200])
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_plain_norms_do_not_depend_on_the_scale_of_the_weights(scale, norm):
    # Only ratios of weights enter ECE, RMSCE and MCE, even where the
    # squares of the weights would underflow or overflow.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    y = (rng.uniform(size=200) < s**1.5).astype(int)
    w = rng.integers(1, 4, size=200)
    kw = dict(norm=norm, n_bins=5)
    base = binned_calibration_error(np.repeat(y, w), np.repeat(s, w), **kw)
    scaled = binned_calibration_error(y, s, sample_weight=w * scale, **kw)
    assert scaled == pytest.approx(base, rel=1e-12)


def test_debiased_l2_reads_weights_as_frequencies():
    # Weights 3 are each row three times: the bins hold three times as many
    # samples, and the variance correction is smaller accordingly.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    y = (rng.uniform(size=200) < s**1.5).astype(int)
    kw = dict(norm="l2", debias=True, root=False, n_bins=5)
    tripled = binned_calibration_error(np.repeat(y, 3), np.repeat(s, 3), **kw)
    got = binned_calibration_error(y, s, sample_weight=np.full(200, 3.0), **kw)
    assert got == pytest.approx(tripled, rel=1e-12)
    assert got != pytest.approx(binned_calibration_error(y, s, **kw), rel=1e-3)


def test_quantile_bins_move_continuously_with_the_weights():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200)
    y = (rng.uniform(size=200) < s).astype(int)
    kw = dict(n_bins=7, strategy="quantile", return_details=True)
    ref = binned_calibration_error(y, s, **kw)
    np.testing.assert_allclose(
        ref.edges, np.percentile(s, 100 * np.linspace(0, 1, 8)), atol=1e-15
    )
    w = np.ones(200)
    w[0] = 1 + 1e-12  # a negligible change of weight, a negligible change of bins
    near = binned_calibration_error(y, s, sample_weight=w, **kw)
    np.testing.assert_allclose(near.edges, ref.edges, atol=1e-12)
    w[0] = 0.0  # a zero weight is the same as no row
    a = binned_calibration_error(y, s, sample_weight=w, **kw).value
    b = binned_calibration_error(y[1:], s[1:], **kw).value
    assert a == pytest.approx(b, abs=1e-15)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_cbrt_bins_count_rows_of_positive_weight(strategy):
    rng = np.random.default_rng(4)
    p = rng.uniform(size=200)
    y = (rng.uniform(size=200) < p).astype(int)
    w = np.r_[np.ones(64), np.zeros(136)]
    kw = dict(n_bins="cbrt", strategy=strategy, return_details=True)
    bins = binned_calibration_error(y, p, sample_weight=w, **kw)
    ref_bins = binned_calibration_error(y[:64], p[:64], **kw)
    assert bins.edges.shape[0] == 4 + 1  # ceil(64 ** (1/3)) bins
    assert bins.n_bins == 4
    assert bins.value == pytest.approx(ref_bins.value)
    np.testing.assert_allclose(bins.edges, ref_bins.edges)
