"""Binned calibration errors: the bin rule of scikit-learn, the debiased L2 of
Kumar et al. (2019), and weights that mean repeated rows.

Every reference here is written out independently: exact rational bin edges,
``sklearn.calibration.calibration_curve``, loops over bins, repeated rows.
"""

from fractions import Fraction

import numpy as np
import pytest
from sklearn.calibration import calibration_curve

from skcalib.metrics import (
    CalibrationAccumulator,
    binned_calibration_error,
    kde_calibration_error,
    smooth_ece,
)

TIES = [0.0, 0.1, 0.2, 0.3, 0.35, 0.6, 0.7, 0.75, 1.0, 0.25, 0.5, 0.125]


def tied_sample(n=600, seed=0, values=TIES):
    rng = np.random.default_rng(seed)
    s = rng.choice(values, size=n)
    y = (rng.uniform(size=n) < 0.8 * s + 0.1).astype(int)
    return y, s


def exact_bin(s, n_bins):
    """Bin of ``s`` for the edges ``k/B`` (Python's correctly rounded
    division): ``[0, 1/B]``, then ``(k/B, (k+1)/B]``, the rule of
    ``calibration_curve``; the first ``k`` with ``s <= (k + 1)/B``, found by
    bisection over ``k`` (the edges increase with ``k``)."""
    lo, hi = 0, n_bins - 1  # the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if s <= (mid + 1) / n_bins:
            hi = mid
        else:
            lo = mid + 1
    return lo


def brute_force_binned(y, s, n_bins, norm="l1", w=None, debias=False):
    """Binned error by a loop over the bins of :func:`exact_bin`.

    ``debias`` is Kumar et al.'s estimate with ``n_k`` the bin's count (here
    the total frequency weight): bins of fewer than 2 samples contribute 0.
    """
    y = np.asarray(y, dtype=float)
    s = np.asarray(s, dtype=float)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=float)
    bins = np.array([exact_bin(v, n_bins) for v in s])
    W = w.sum()
    terms, gaps = [], []
    for k in range(n_bins):
        m = bins == k
        wk = w[m].sum()
        if wk == 0:
            continue
        ybar = (w[m] * y[m]).sum() / wk
        sbar = (w[m] * s[m]).sum() / wk
        gap = ybar - sbar
        gaps.append(abs(gap))
        if norm == "l1":
            terms.append(wk / W * abs(gap))
        elif debias:
            terms.append(
                wk / W * (gap**2 - ybar * (1 - ybar) / (wk - 1)) if wk > 1 else 0.0
            )
        else:
            terms.append(wk / W * gap**2)
    if norm == "max":
        return max(gaps)
    return sum(terms)


# -- the bin rule ------------------------------------------------------------


@pytest.mark.parametrize("n_bins", [3, 5, 10, 12, 15, 20])
def test_uniform_edges_are_exactly_k_over_B(n_bins):
    bins = binned_calibration_error(
        [0, 1], [0.2, 0.8], n_bins=n_bins, return_details=True
    )
    edges = bins.edges
    for k in range(n_bins + 1):
        # the double nearest to k/B: within half an ulp of the fraction
        err = abs(Fraction(float(edges[k])) - Fraction(k, n_bins))
        assert err <= Fraction(np.spacing(edges[k])) / 2
    np.testing.assert_array_equal(bins.edges, np.arange(n_bins + 1) / n_bins)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("n_bins", [2, 4, 5, 8, 10, 20])
def test_tied_scores_bin_as_calibration_curve(n_bins, strategy):
    y, s = tied_sample()
    prob_true, prob_pred = calibration_curve(y, s, n_bins=n_bins, strategy=strategy)
    bins = binned_calibration_error(
        y, s, n_bins=n_bins, strategy=strategy, return_details=True
    )
    np.testing.assert_allclose(bins.mean_label, prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bins.mean_score, prob_pred, rtol=0, atol=1e-12)
    # The ECE computed from scikit-learn's curve, with the bin masses written
    # out from its rule (np.searchsorted(edges[1:-1], s), side="left").
    if strategy == "uniform":
        edges = np.linspace(0, 1, n_bins + 1)
    else:
        edges = np.percentile(s, np.linspace(0, 1, n_bins + 1) * 100)
    mass = np.bincount(np.searchsorted(edges[1:-1], s), minlength=n_bins) / len(s)
    mass = mass[mass > 0]
    ref = float(np.sum(mass * np.abs(prob_true - prob_pred)))
    ece = binned_calibration_error(y, s, n_bins=n_bins, strategy=strategy)
    assert ece == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("n_bins", [3, 5, 7, 10, 15, 16])
@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_uniform_bins_match_exact_rational_edges(n_bins, norm):
    edges = [k / n_bins for k in range(n_bins + 1)]
    near = np.clip(
        np.concatenate([edges, np.nextafter(edges, 2), np.nextafter(edges, -1)]), 0, 1
    )
    y, s = tied_sample(values=np.concatenate([TIES, near]), seed=n_bins)
    kw = dict(n_bins=n_bins, norm=norm, root=norm != "l2")
    ref = brute_force_binned(y, s, n_bins, norm)
    assert binned_calibration_error(y, s, **kw) == pytest.approx(ref, abs=1e-12)


def test_zero_in_the_first_bin_and_one_in_the_last():
    bins = binned_calibration_error(
        [0, 1, 1], [0.0, 1.0, 1.0], n_bins=15, return_details=True
    )
    np.testing.assert_array_equal(bins.bin, [0, 14])
    np.testing.assert_array_equal(bins.count, [1, 2])


def test_uniform_assignment_is_the_search_of_the_rule():
    from skcalib._backend.binning import assign_uniform_bins

    rng = np.random.default_rng(0)
    for n_bins in [*range(1, 60), 1000, 3**9, 2**16]:
        e = np.arange(n_bins + 1) / n_bins
        if n_bins > 1000:
            e = rng.choice(e, size=1000)
        s = np.clip(
            np.concatenate(
                [e, np.nextafter(e, 2), np.nextafter(e, -1), rng.uniform(size=500)]
            ),
            0,
            1,
        )
        np.testing.assert_array_equal(
            assign_uniform_bins(s, n_bins), [exact_bin(v, n_bins) for v in s]
        )


@pytest.mark.parametrize("n_bins", [3, 10, 15, 64, 997, 10**6])
def test_uniform_assignment_of_many_scores_is_the_rule(n_bins):
    # more scores than one chunk of the vectorised assignment, the edges and
    # their neighbours spread over all chunks, 0.0, 1.0 and a subnormal
    rng = np.random.default_rng(n_bins)
    e = np.arange(n_bins + 1) / n_bins
    if n_bins > 2000:
        e = rng.choice(e, size=2000)
    special = np.concatenate(
        [e, np.nextafter(e, 2), np.nextafter(e, -1), [0.0, 1.0, 5e-324]]
    )
    s = np.clip(np.concatenate([rng.uniform(size=70_000), special]), 0, 1)
    s = s[rng.permutation(s.shape[0])]
    from skcalib._backend.binning import assign_uniform_bins

    got = assign_uniform_bins(s, n_bins)
    check = np.flatnonzero(np.isin(s, special))
    check = np.concatenate([check, rng.choice(s.shape[0], size=3000)])
    np.testing.assert_array_equal(got[check], [exact_bin(s[i], n_bins) for i in check])
    # and everywhere the search of the rule
    np.testing.assert_array_equal(
        got, np.searchsorted(np.array([k / n_bins for k in range(1, n_bins)]), s)
    )


@pytest.mark.parametrize("n_bins", [2, 15, 300, 5000])
def test_quantile_assignment_of_many_scores_is_the_search(n_bins):
    # tied scores sitting on quantile edges, their neighbours, values off
    # [0, 1] and NaN: the table lookup must give np.searchsorted's bins
    from skcalib._backend.binning import assign_bins, quantile_edges

    rng = np.random.default_rng(n_bins)
    tied = rng.choice(TIES, size=40_000)
    smooth = rng.beta(0.3, 4.0, size=40_000)
    s = np.concatenate([tied, smooth])
    edges = quantile_edges(s, np.ones(s.shape[0]), n_bins)
    odd = np.concatenate(
        [edges, np.nextafter(edges, 2), np.nextafter(edges, -1), [-0.5, 1.5, np.nan]]
    )
    s = np.concatenate([s, np.repeat(odd, 3)])
    s = s[rng.permutation(s.shape[0])]
    inner = edges[1:-1]
    ref = np.array([int(np.sum(inner < v)) if v == v else inner.shape[0] for v in s])
    np.testing.assert_array_equal(assign_bins(s, edges), ref)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_large_unweighted_table_is_the_weighted_sums(strategy):
    # without weights the sums are taken without the products by ones; they
    # must be those of the weighted formula bit for bit
    rng = np.random.default_rng(3)
    n = 100_000
    s = np.concatenate([rng.beta(2, 5, size=n - 600), rng.choice(TIES, size=600)])
    y = (rng.uniform(size=n) < s).astype(float)
    bins = binned_calibration_error(
        y, s, n_bins=15, strategy=strategy, return_details=True
    )
    edges = bins.edges
    b = np.searchsorted(edges[1:-1], s)
    w = np.ones(n)
    sw = np.bincount(b, weights=w, minlength=15)
    keep = sw > 0
    np.testing.assert_array_equal(bins.weight, sw[keep])
    np.testing.assert_array_equal(
        bins.mean_label, (np.bincount(b, weights=w * y, minlength=15) / sw)[keep]
    )
    np.testing.assert_array_equal(
        bins.mean_score, (np.bincount(b, weights=w * s, minlength=15) / sw)[keep]
    )


# -- streaming and dask: the same bins and numbers --------------------------


@pytest.mark.parametrize("n_bins", [4, 8, 16])
def test_accumulator_bins_tied_scores_as_in_memory(n_bins):
    y, s = tied_sample(seed=1)
    acc = CalibrationAccumulator()
    for part in np.array_split(np.arange(len(y)), 3):
        acc.partial_fit(y[part], s[part])
    for norm in ("l1", "l2", "max"):
        ref = brute_force_binned(y, s, n_bins, norm)
        got = acc.binned_calibration_error(n_bins=n_bins, norm=norm, root=norm != "l2")
        assert got == pytest.approx(ref, abs=1e-12)
    got = acc.binned_calibration_error(
        n_bins=n_bins, norm="l2", debias=True, root=False
    )
    assert got == pytest.approx(
        brute_force_binned(y, s, n_bins, "l2", debias=True), abs=1e-12
    )


@pytest.mark.parametrize("scale", [1e-160, 1.0, 1e160])
@pytest.mark.parametrize("n_bins", [10, 15])
def test_dask_binned_equals_in_memory_at_any_weight_scale(scale, n_bins):
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(2)
    y, s = tied_sample(n=3000, seed=2)
    w = rng.integers(1, 5, size=3000) * scale
    yd, sd, wd = (da.from_array(a, chunks=700) for a in (y, s, w))
    for norm, debias in (("l1", False), ("l2", False), ("max", False), ("l2", True)):
        kw = dict(n_bins=n_bins, norm=norm, debias=debias, root=norm != "l2")
        mem = binned_calibration_error(y, s, sample_weight=w, **kw)
        streamed = binned_calibration_error(yd, sd, sample_weight=wd, **kw)
        ref = brute_force_binned(y, s, n_bins, norm, w=w, debias=debias)
        assert mem == pytest.approx(ref, rel=1e-12, abs=1e-15)
        assert streamed == pytest.approx(mem, rel=1e-12, abs=1e-15)


# -- debiased L2 (Kumar et al., 2019) ----------------------------------------


@pytest.mark.parametrize("n_bins", [5, 10, 15, 30])
@pytest.mark.parametrize("seed", range(4))
def test_debiased_l2_drops_single_sample_bins(n_bins, seed):
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=30)
    y = (rng.uniform(size=30) < s).astype(int)
    kw = dict(n_bins=n_bins, norm="l2", debias=True, root=False)
    ref = brute_force_binned(y, s, n_bins, "l2", debias=True)
    assert binned_calibration_error(y, s, **kw) == pytest.approx(ref, abs=1e-12)


def test_debiased_l2_is_unbiased_for_bins_of_several_samples():
    # Scores on 4 values, so every bin holds many samples; the label means
    # per score are known, hence the squared binned gap too.
    values = np.array([0.125, 0.375, 0.625, 0.875])
    eta = np.array([0.2, 0.35, 0.7, 0.8])
    truth = np.mean((eta - values) ** 2)
    rng = np.random.default_rng(5)
    est = []
    for _ in range(2000):
        idx = np.repeat(np.arange(4), 10)
        y = (rng.uniform(size=40) < eta[idx]).astype(int)
        est.append(
            binned_calibration_error(
                y, values[idx], n_bins=4, norm="l2", debias=True, root=False
            )
        )
    est = np.asarray(est)
    # the naive squared error is biased up by mean(eta (1 - eta)) / 10
    assert abs(est.mean() - truth) < 4 * est.std() / np.sqrt(len(est))


# -- integer weights are repeated rows ---------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        dict(norm="l1"),
        dict(norm="max"),
        dict(norm="l2", root=False),
        dict(norm="l2", debias=True, root=False),
        dict(norm="l2", debias=True),
    ],
)
def test_binned_integer_weights_equal_repeated_rows(kw):
    rng = np.random.default_rng(7)
    s = rng.uniform(size=50)
    y = (rng.uniform(size=50) < s**2).astype(int)
    w = rng.integers(0, 4, size=50)
    rep = binned_calibration_error(np.repeat(y, w), np.repeat(s, w), n_bins=5, **kw)
    got = binned_calibration_error(y, s, sample_weight=w, n_bins=5, **kw)
    assert got == pytest.approx(rep, rel=1e-12, abs=1e-15)


def test_smooth_ece_and_kde_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(8)
    s = rng.uniform(size=80)
    y = (rng.uniform(size=80) < s**2).astype(int)
    w = rng.integers(1, 4, size=80)
    ys, ss = np.repeat(y, w), np.repeat(s, w)
    assert smooth_ece(y, s, sample_weight=w) == pytest.approx(
        smooth_ece(ys, ss), abs=1e-9
    )
    for p in (1, 2):
        assert kde_calibration_error(
            y, s, p=p, bandwidth=0.1, sample_weight=w
        ) == pytest.approx(kde_calibration_error(ys, ss, p=p, bandwidth=0.1), rel=1e-9)


@pytest.mark.parametrize("debias", [False, True])
def test_root_is_the_square_root_of_the_l2_error(debias):
    # root=True (the default for norm="l2") is the square root of the mean
    # squared gap written out above, keeping the sign of a negative debiased
    # estimate; root=False is the mean squared gap itself.
    rng = np.random.default_rng(5)
    for n in (12, 40, 400):
        s = rng.uniform(size=n)
        y = (rng.uniform(size=n) < s).astype(float)
        ref = brute_force_binned(y, s, 6, "l2", debias=debias)
        kw = dict(n_bins=6, norm="l2", debias=debias)
        assert binned_calibration_error(y, s, root=False, **kw) == pytest.approx(
            ref, abs=1e-14
        )
        rooted = binned_calibration_error(y, s, **kw)
        assert rooted == pytest.approx(np.sign(ref) * np.sqrt(abs(ref)), abs=1e-14)
        assert binned_calibration_error(y, s, root=True, **kw) == rooted
        res = binned_calibration_error(y, s, return_details=True, root=False, **kw)
        assert res.root is False and res.value == pytest.approx(ref, abs=1e-14)


def test_root_has_no_meaning_for_l1_and_max():
    y, s = tied_sample()
    for norm in ("l1", "max"):
        ref = brute_force_binned(y, s, 10, norm)
        assert binned_calibration_error(
            y, s, n_bins=10, norm=norm, root=True
        ) == pytest.approx(ref, abs=1e-12)
        with pytest.raises(ValueError, match="root=False is only defined"):
            binned_calibration_error(y, s, n_bins=10, norm=norm, root=False)
