"""Tests of ECE-KDE (kde_calibration_error) and the Dirichlet smoother."""

import math
import warnings
from decimal import Decimal, getcontext

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

from skcalib._backend.bandwidth import (
    BANDWIDTH_GRID,
    select_dirichlet_bandwidth,
    select_kde_bandwidth,
)
from skcalib._backend.kernels import beta_log_kernel, dirichlet_log_kernel
from skcalib._backend.smoothing import dirichlet_nw
from skcalib.metrics import (
    KDECalibrationResult,
    get_scorer,
    get_scorer_names,
    kde_calibration_error,
)

# ---------------------------------------------------------------------------
# Independent references
# ---------------------------------------------------------------------------


def _log_kernel_bf(x, f, b):
    """log Dir(x; f / b + 1), written out term by term."""
    K = len(f)
    out = math.lgamma(1.0 / b + K)
    for fk, xk in zip(f, x, strict=True):
        out += (fk / b) * math.log(xk) - math.lgamma(fk / b + 1.0)
    return out


def brute_terms(y, F, b, p, debias):
    """O(n^2) double loop: canonical per-sample terms of the ECE-KDE definition."""
    n, K = F.shape
    terms = np.empty(n)
    for j in range(n):
        logk = [
            _log_kernel_bf(F[j], F[i], b) if i != j else -math.inf for i in range(n)
        ]
        top = max(logk)
        W = [math.exp(v - top) for v in logk]
        tot = sum(W)
        W = [v / tot for v in W]
        R = [0.0] * K
        for i in range(n):
            R[y[i]] += W[i]
        if debias:
            terms[j] = _pair_double_sum(np.asarray(W), np.eye(K)[y] - F[j])
        else:
            terms[j] = sum(abs(R[k] - F[j, k]) ** p for k in range(K))
    return terms


def _pair_double_sum(W, D):
    """sum_{i != i'} W_i W_i' <d_i, d_i'> / sum_{i != i'} W_i W_i' (explicit pairs).

    ``D`` holds ``d_i = e_{y_i} - f_j`` row by row; the diagonal pairs are
    masked out of the n x n table, not subtracted from a square.
    """
    pair_w = np.outer(W, W)
    np.fill_diagonal(pair_w, 0.0)
    return float((pair_w * (D @ D.T)).sum() / pair_w.sum())


def brute_value(y, F, b, p, debias, mode):
    """Reduce to the canonical brute force."""
    if mode == "canonical":
        return brute_terms(y, F, b, p, debias).mean()
    if mode == "binary":  # F is the 1-D positive-class score here
        F2 = np.column_stack([1 - F, F])
        return 0.5 * brute_terms(y, F2, b, p, debias).mean()
    if mode == "top-label":
        pred = F.argmax(axis=1)
        conf = F.max(axis=1)
        return brute_value((pred == y).astype(int), conf, b, p, debias, "binary")
    if mode == "classwise":
        return np.mean(
            [
                brute_value((y == k).astype(int), F[:, k], b, p, debias, "binary")
                for k in range(F.shape[1])
            ]
        )
    raise AssertionError(mode)


def ground_truth_sample(n, K, seed, temperature=0.6):
    """u ~ Dir(1), q = u, y ~ Cat(q), f = softmax(log q / T): E[e_y | f] = q."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(K), size=n)
    y = (rng.random(n)[:, None] > np.cumsum(q, axis=1)).sum(axis=1)
    y = np.minimum(y, K - 1)
    f = np.exp(np.log(q) / temperature)
    f /= f.sum(axis=1, keepdims=True)
    return y, f, q


def binned_canonical_l1(y, F, n_bins):
    """Canonical L1 ECE with n_bins equal-width bins per coordinate."""
    n, K = F.shape
    idx = np.minimum((F * n_bins).astype(int), n_bins - 1)
    _, cell = np.unique(idx, axis=0, return_inverse=True)
    E = np.eye(K)[y]
    total = 0.0
    for c in np.unique(cell):
        m = cell == c
        total += m.sum() * np.abs(E[m].mean(axis=0) - F[m].mean(axis=0)).sum()
    return total / n


def _loo_weights(F, b, j):
    """Leave-one-out kernel weights of row ``j``, kernel written out."""
    logk = np.array(
        [
            _log_kernel_bf(F[j], F[i], b) if i != j else -np.inf
            for i in range(F.shape[0])
        ]
    )
    w = np.exp(logk - logk.max())
    return w / w.sum()


def _data(n, K, seed, floor=0.1):
    """Probabilities bounded away from 0 (so clipping is a no-op) and labels."""
    rng = np.random.default_rng(seed)
    F = (1 - floor) * rng.dirichlet(np.full(K, 1.5), size=n) + floor / K
    y = np.array([rng.choice(K, p=f) for f in F])
    return y, F


# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------


def test_kernels_match_scipy_densities():
    rng = np.random.default_rng(0)
    X = rng.dirichlet(np.ones(4), size=5)
    F = rng.dirichlet(np.ones(4), size=6)
    b = 0.07
    L = dirichlet_log_kernel(X, F, b)
    ref = np.array([[stats.dirichlet.logpdf(x, f / b + 1) for f in F] for x in X])
    np.testing.assert_allclose(L, ref, rtol=1e-12, atol=1e-10)
    x, s = rng.random(5), rng.random(7)
    ref = stats.beta.logpdf(x[:, None], s / b + 1, (1 - s) / b + 1)
    np.testing.assert_allclose(beta_log_kernel(x, s, b), ref, rtol=1e-12, atol=1e-10)


# ---------------------------------------------------------------------------
# Brute force agreement
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "K, p, debias, mode, b",
    [
        (3, 1, False, "canonical", 0.1),
        (4, 2, True, "canonical", 0.05),
        (4, 2, False, "canonical", 0.3),
        (5, 1.5, False, "canonical", 0.02),
        (2, 1, False, "binary", 0.05),
        (2, 2, True, "binary", 0.1),
        (3, 1, False, "top-label", 0.05),
        (3, 2, True, "classwise", 0.1),
        (4, 1, False, "classwise", 0.2),
    ],
)
def test_matches_brute_force_double_loop(K, p, debias, mode, b):
    y, F = _data(150, K, seed=K + int(10 * p))
    if mode == "binary":
        s, yb = F[:, 1], (y == 1).astype(int)
        got = kde_calibration_error(yb, s, p=p, bandwidth=b, debias=debias)
        ref = brute_value(yb, s, b, p, debias, "binary")
    else:
        got = kde_calibration_error(
            y, F, p=p, bandwidth=b, debias=debias, multi_class=mode
        )
        ref = brute_value(y, F, b, p, debias, mode)
    assert abs(got - ref) < 1e-10


def test_binary_beta_path_equals_two_class_dirichlet():
    rng = np.random.default_rng(1)
    s = rng.uniform(0.02, 0.98, 300)
    y = (rng.random(300) < s**1.3).astype(int)
    b = 0.04
    for p, debias in [(1, False), (2, True), (3, False)]:
        one_d = kde_calibration_error(y, s, p=p, bandwidth=b, debias=debias)
        two_col = kde_calibration_error(
            y, np.column_stack([1 - s, s]), p=p, bandwidth=b, debias=debias
        )
        # Smoother on the 2-class simplex, error read on the positive class.
        F2 = np.column_stack([1 - s, s])
        res = dirichlet_nw(
            F2, y, np.ones(300), None, b, leave_one_out=True, squared_error=debias
        )
        if debias:
            ref = 0.5 * np.mean(
                [
                    _pair_double_sum(_loo_weights(F2, b, j), np.eye(2)[y] - F2[j])
                    for j in range(300)
                ]
            )
        else:
            ref = np.mean(np.abs(res.ratio[:, 1] - s) ** p)
        assert one_d == pytest.approx(two_col, abs=1e-14)
        assert one_d == pytest.approx(ref, abs=1e-12)
        # The reference code's binary value is the sum over both coordinates.
        if not debias:
            both = np.mean(np.sum(np.abs(res.ratio - F2) ** p, axis=1))
            assert both == pytest.approx(2 * one_d, rel=1e-12)


def test_smoother_at_new_points_matches_direct_sums():
    rng = np.random.default_rng(2)
    F = rng.dirichlet(np.ones(3), size=80)
    X = rng.dirichlet(np.ones(3), size=11)
    Y = rng.normal(size=(80, 2))  # any target matrix
    w = rng.uniform(0.2, 3.0, 80)
    b = 0.08
    res = dirichlet_nw(F, Y, w, X, b, chunk_size=4)
    ref = np.empty((11, 2))
    dens = np.empty(11)
    for j in range(11):
        k = np.array([math.exp(_log_kernel_bf(X[j], F[i], b)) for i in range(80)])
        ref[j] = (w * k) @ Y / (w * k).sum()
        dens[j] = (w * k).sum() / w.sum()
    np.testing.assert_allclose(res.ratio, ref, rtol=1e-11)
    np.testing.assert_allclose(res.log_density, np.log(dens), rtol=1e-11)
    with pytest.raises(ValueError, match="F_eval"):
        dirichlet_nw(F, Y, w, X, b, leave_one_out=True)


def test_chunking_and_threads_do_not_change_the_result():
    y, F = _data(257, 5, seed=3)
    kw = dict(bandwidth=0.05, p=2, return_details=True)
    a = kde_calibration_error(y, F, **kw)
    b = kde_calibration_error(y, F, chunk_size=7, n_jobs=2, **kw)
    assert a.value == pytest.approx(b.value, abs=1e-13)
    np.testing.assert_allclose(a.per_sample, b.per_sample, atol=1e-13)


def test_chunks_run_under_a_process_backend():
    # A process backend pickles the chunk function with its buffer pool;
    # the dask backend hung on a pool that could not be pickled.
    import joblib

    y, F = _data(257, 5, seed=3)
    kw = dict(bandwidth="risk", p=2, chunk_size=40)
    a = kde_calibration_error(y, F, **kw)
    with joblib.parallel_backend("loky", n_jobs=2):
        b = kde_calibration_error(y, F, n_jobs=2, **kw)
    assert a == pytest.approx(b, abs=1e-13)


def _awkward_problem(seed, n, K, n_tied, n_vertex, weights):
    """Centres with ``n_tied`` ties, then ``n_vertex`` rows at a vertex."""
    rng = np.random.default_rng(seed)
    F = rng.dirichlet(np.full(K, 0.5), size=n)
    F[:n_tied] = F[0]
    F[n_tied : n_tied + n_vertex] = np.eye(K)[rng.integers(0, K, n_vertex)]
    y = rng.integers(0, K, n)
    w = np.ones(n)
    if weights != "unit":
        w = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.3, 2.5, n))
    return rng, F, y, w


def _dense(F, y, w, X, b, leave_one_out):
    from _references import dirichlet_smoother_dense

    from skcalib._backend.smoothing import DirichletCentres

    # The smoother's centres: clipped into the open simplex, original order.
    centres = DirichletCentres(F, y, w)
    Fc = centres.F[centres.position]
    return dirichlet_smoother_dense(Fc, y, w, Fc if X is None else X, b, leave_one_out)


@pytest.mark.parametrize("single", [False, True])
def test_row_blocks_give_the_dense_statistics(single, monkeypatch):
    # The smoother finishes the row sums of all its blocks of rows in one
    # go; that gives the statistics of the full kernel table (ties, zero and
    # fractional weights, both exponential precisions).
    from skcalib._backend import smoothing

    if single:
        monkeypatch.setattr(smoothing, "SINGLE_EXP_COLUMNS", 0)
    rng = np.random.default_rng(5)
    n = 90
    F = rng.dirichlet(np.full(4, 0.5), size=n)
    F[:15] = F[0]
    y = rng.integers(0, 4, n)
    w = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.3, 2.5, n))
    b = 0.05
    res = dirichlet_nw(
        F,
        y,
        w,
        None,
        b,
        leave_one_out=True,
        pair_agreement=True,
        squared_error=True,
        chunk_size=7,
    )
    ref = _dense(F, y, w, None, b, True)
    rtol, atol = (1e-5, 1e-9) if single else (1e-12, 1e-15)
    for key, got in (
        ("ratio", res.ratio),
        ("ess", res.effective_sample_size),
        ("pairs", res.pair_agreement),
        ("squared_error", res.squared_error),
    ):
        np.testing.assert_allclose(got, ref[key], rtol=rtol, atol=atol, err_msg=key)


@pytest.mark.parametrize("single", [False, True])
@pytest.mark.parametrize("weights", ["unit", "fractional with zeros"])
@pytest.mark.parametrize("b", [1e-4, 0.05, 1.0])
def test_column_tiles_give_the_dense_statistics(single, weights, b, monkeypatch):
    # The smoother streams each row over tiles of columns, rescaling its sums
    # when a later tile holds a larger log-kernel and moving a row's leader
    # into the sums when another entry overtakes it. Tiles of 16 columns
    # (label segments cut across tiles, leaders in every tile) give the
    # statistics of the full kernel table: to rounding in float64, to the
    # float32 rounding of the weights otherwise.
    from skcalib._backend import smoothing

    monkeypatch.setattr(smoothing, "TILE_COLUMNS", 16)
    if single:
        monkeypatch.setattr(smoothing, "SINGLE_EXP_COLUMNS", 0)
    rng, F, y, w = _awkward_problem(11, 150, 3, 20, 10, weights)
    K = 3
    P = rng.dirichlet(np.ones(K), size=40)
    # Log-kernels reach |log eps| / b; their rounding moves weights by
    # about 1e-16 of that.
    rtol, atol = (1e-5, 1e-9) if single else (1e-13 / min(b, 0.1), 1e-15)
    for loo in (True, False):
        X_eval = None if loo else smoothing.clip_simplex(P, smoothing.SIMPLEX_EPS)
        ref = _dense(F, y, w, X_eval, b, loo)
        for pairs in (True, False):
            res = dirichlet_nw(
                F,
                y,
                w,
                None if loo else P,
                b,
                leave_one_out=loo,
                pair_agreement=pairs,
                squared_error=pairs,
                chunk_size=13,
            )
            got = {"ratio": res.ratio, "ess": res.effective_sample_size}
            if pairs:
                got.update(pairs=res.pair_agreement, squared_error=res.squared_error)
            for key, value in got.items():
                np.testing.assert_allclose(
                    value, ref[key], rtol=rtol, atol=atol, err_msg=key
                )


@pytest.mark.parametrize("whole_weight", [False, True])
def test_bandwidth_grid_gives_the_dense_statistics(whole_weight, monkeypatch):
    # The selectors' bandwidths share each block's bandwidth-free product
    # log(x_j) . f_i; scaled per bandwidth, it gives the leave-one-out
    # statistics of the full kernel table at every bandwidth (tiles of 16
    # columns, ties, rows at a vertex, zero and fractional weights).
    from _references import dirichlet_smoother_dense

    from skcalib._backend import smoothing
    from skcalib._backend.smoothing import DirichletCentres, loo_grid_statistics

    monkeypatch.setattr(smoothing, "TILE_COLUMNS", 16)
    _, F, y, w = _awkward_problem(2, 70, 3, 10, 5, "fractional with zeros")
    grid = np.array([1e-5, 1e-3, 0.05, 1.0])
    centres = DirichletCentres(F, y, w)
    Fc = centres.F[centres.position]
    stats = loo_grid_statistics(
        centres, grid, ratio=True, whole_weight=whole_weight, chunk_size=9
    )
    for b, st in zip(grid, stats, strict=True):
        ref = dirichlet_smoother_dense(Fc, y, w, Fc, b, True, whole_weight)
        for key in ("log_mass", "ratio"):
            np.testing.assert_allclose(
                st[key][centres.position],
                ref[key],
                rtol=1e-13 / min(b, 0.1),
                atol=1e-15,
                err_msg=f"{key} at {b}",
            )


@pytest.mark.parametrize("K", [2, 10, 100])
@pytest.mark.parametrize("weights", ["unit", "fractional with zeros"])
def test_unclamped_exponentials_give_the_clamped_statistics(K, weights, monkeypatch):
    # The row bounds let the tiles skip the clamp before exp() when nothing
    # falls below it; either way the statistics agree to rounding.
    from skcalib._backend import smoothing
    from skcalib._backend.smoothing import (
        DirichletCentres,
        kernel_statistics,
        row_lower_bounds,
    )

    rng = np.random.default_rng(K)
    n = 120
    F = rng.dirichlet(np.full(K, 0.5), size=n)
    y = rng.integers(0, K, n)
    w = np.ones(n)
    if weights != "unit":
        w = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.3, 2.5, n))
    centres = DirichletCentres(F, y, w)
    logX = np.log(centres.F)
    loo = centres.loo_columns(centres.order)
    for b in (1e-5, 1e-3, 0.05, 1.0):
        shift = centres.column_shift(b)
        L = logX @ (centres.F / b).T - shift
        lower = row_lower_bounds(logX, b, shift)
        finite = np.where(np.isfinite(L), L, np.inf).min(axis=1)
        assert np.all(lower <= finite + 1e-9 * np.abs(finite))
        got = kernel_statistics(centres, logX, b, loo, X=centres.F)
        with monkeypatch.context() as m:
            m.setattr(smoothing, "row_lower_bounds", lambda *args: None)
            ref = kernel_statistics(centres, logX, b, loo, X=centres.F)
        for key in ref:
            np.testing.assert_allclose(got[key], ref[key], rtol=1e-13, atol=1e-15)


def test_parallel_chunks_run_single_threaded_blas():
    # Chunk workers each run their own products; BLAS threads on top of them
    # oversubscribe the cores. Inside a worker BLAS has one thread; after the
    # call the caller's setting is back.
    from threadpoolctl import threadpool_info

    from skcalib._backend.smoothing import map_chunks

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    if not before or max(before) < 2:
        pytest.skip("BLAS runs one thread here: nothing to limit")
    seen = map_chunks(lambda sl: blas_threads(), 40, 10, 2)
    assert all(t == [1] * len(before) for t in seen), seen
    assert blas_threads() == before
    assert map_chunks(lambda sl: blas_threads(), 40, 10, None)[0] == before


# ---------------------------------------------------------------------------
# Ground truth and bias
# ---------------------------------------------------------------------------


def _truth_l1(K):
    _, f, q = ground_truth_sample(400_000, K, seed=123)
    return np.abs(q - f).sum(axis=1).mean()


def test_ground_truth_k4_beats_binning():
    truth = _truth_l1(4)
    assert truth == pytest.approx(0.247, abs=0.003)
    y, f, _ = ground_truth_sample(5000, 4, seed=0)
    est = kde_calibration_error(y, f, bandwidth=0.02)
    assert abs(est - truth) < 0.03
    binned_err = abs(binned_canonical_l1(y, f, 10) - truth)
    assert binned_err > 0.1
    assert binned_err > 5 * abs(est - truth)


@pytest.mark.slow
def test_ground_truth_k8_large_n():
    truth = _truth_l1(8)
    assert truth == pytest.approx(0.308, abs=0.003)
    y, f, _ = ground_truth_sample(20000, 8, seed=0)
    # More classes need a wider kernel (the effective sample size shrinks
    # with the dimension of the simplex). Every one of the 20000 points is a
    # kernel centre; the outer mean is taken over 4000 random rows (a quarter
    # of the cost), whose sampling error is small beside the tolerance.
    res = kde_calibration_error(
        y, f, bandwidth=0.1, max_samples=4000, random_state=0, return_details=True
    )
    assert res.standard_error < 0.1 * 0.02
    assert abs(res.value - truth) < 0.02


def test_null_debiased_l2_near_zero_and_l1_plugin_biased():
    # f = q: perfectly calibrated, so every calibration error is 0.
    y, _, q = ground_truth_sample(4000, 4, seed=5)
    l2 = kde_calibration_error(y, q, p=2, bandwidth=0.02)
    assert abs(l2) < 0.01
    # Documented: the plug-in L1 estimate is biased upward at the null.
    l1 = kde_calibration_error(y, q, p=1, bandwidth=0.02)
    assert l1 > 0.05
    l2_plugin = kde_calibration_error(y, q, p=2, bandwidth=0.02, debias=False)
    assert l2_plugin - l2 > 0.01


def _truth_l2(K, temperature):
    """Monte-Carlo canonical CE_2^2 = E||q - f||^2 (scalar error for K = 2)."""
    _, f, q = ground_truth_sample(400_000, K, seed=321, temperature=temperature)
    return (0.5 if K == 2 else 1.0) * ((q - f) ** 2).sum(axis=1).mean()


def _labels_and_scores(K, n, seed, temperature):
    y, f, _ = ground_truth_sample(n, K, seed=seed, temperature=temperature)
    return (y, f[:, 1]) if K == 2 else (y, f)


def test_debiased_l2_is_centred_on_calibrated_data():
    # f = q (temperature 1): CE = 0. The U-statistic drops the noise of the
    # diagonal pairs and is centred near 0; the identity-based estimate
    # (mean ||e_y - f||^2 - 1 + pair agreement) was -0.008 here on every seed.
    vals = [
        kde_calibration_error(
            *_labels_and_scores(3, 1500, seed, 1.0), p=2, bandwidth=0.05
        )
        for seed in range(3)
    ]
    assert abs(np.mean(vals)) < 0.002, vals
    assert min(vals) > -0.003, vals


@pytest.mark.parametrize(
    "K, temperature, b, rel",
    [
        (10, 0.6, 0.1, 0.2),  # over-confident, K = 10 (old estimate: -32 %)
        (2, 1.6, 0.01, 0.35),  # under-confident binary (old estimate: -75 %)
    ],
)
def test_debiased_l2_against_monte_carlo_truth(K, temperature, b, rel):
    truth = _truth_l2(K, temperature)
    vals = [
        kde_calibration_error(
            *_labels_and_scores(K, 1500 if K > 2 else 2000, seed, temperature),
            p=2,
            bandwidth=b,
            labels=np.arange(K),
        )
        for seed in range(3)
    ]
    assert abs(np.mean(vals) - truth) < rel * truth, (vals, truth)


def test_debiased_can_be_negative_and_root_is_signed():
    y, _, q = ground_truth_sample(400, 3, seed=11)
    vals = [kde_calibration_error(y, q, p=2, bandwidth=b) for b in (0.02, 0.05, 0.1)]
    v = min(vals)
    assert v < 0  # reported as is, not clipped
    b = (0.02, 0.05, 0.1)[int(np.argmin(vals))]
    r = kde_calibration_error(y, q, p=2, bandwidth=b, root=True)
    assert r == pytest.approx(-math.sqrt(-v), rel=1e-12)


# ---------------------------------------------------------------------------
# Hard numerical cases
# ---------------------------------------------------------------------------


def test_exact_zeros_are_finite_and_continuous():
    rng = np.random.default_rng(7)
    F = rng.dirichlet(np.full(4, 0.5), size=200)
    F[rng.random((200, 4)) < 0.3] = 0.0
    F[F.sum(axis=1) == 0, 0] = 1.0
    F /= F.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(4, p=f) for f in F])
    for p in (1, 2):
        for mode in ("canonical", "classwise", "top-label"):
            v0 = kde_calibration_error(y, F, p=p, bandwidth=0.05, multi_class=mode)
            assert np.isfinite(v0)
            # Zeros replaced by a tiny positive mass give (almost) the same value.
            Ft = np.where(F == 0, 1e-13, F)
            Ft /= Ft.sum(axis=1, keepdims=True)
            vt = kde_calibration_error(y, Ft, p=p, bandwidth=0.05, multi_class=mode)
            assert v0 == pytest.approx(vt, abs=1e-6)
    # Binary scores of exactly 0 and 1.
    s = np.r_[np.zeros(30), np.ones(30), rng.random(60)]
    yb = (rng.random(120) < s).astype(int)
    assert np.isfinite(kde_calibration_error(yb, s, p=2, bandwidth=0.05))


def _decimal_pair_reference(y, F, b, n_classes):
    """L1 and debiased p=2 values with kernel weights in Decimal (no underflow).

    The pair statistic is summed over explicit pairs ``i != i'`` (no
    subtraction of the diagonal), so it stays exact when one neighbour
    dominates: with ``d_a = e_{y_a} - f_j``,
    ``<d_a, d_c> = [y_a = y_c] - f_j[y_a] - f_j[y_c] + ||f_j||^2``.
    """
    getcontext().prec = 40
    n = len(y)
    l1, l2 = [], []
    for j in range(n):
        others = [i for i in range(n) if i != j]
        logk = [_log_kernel_bf(F[j], F[i], b) for i in others]
        top = max(logk)
        W = [(Decimal(v) - Decimal(top)).exp() for v in logk]
        lab = [y[i] for i in others]
        tot = sum(W)
        R = [Decimal(0)] * n_classes
        for wi, yi in zip(W, lab, strict=True):
            R[yi] += wi / tot
        same = Decimal(0)
        pairs = Decimal(0)
        cross = Decimal(0)
        fj = [Decimal(float(v)) for v in F[j]]
        for a in range(n - 1):
            rest = sum(W[c] for c in range(n - 1) if c != a)
            rest_same = sum(W[c] for c in range(n - 1) if c != a and lab[c] == lab[a])
            pairs += W[a] * rest
            same += W[a] * rest_same
            cross += W[a] * rest * fj[lab[a]]
        f_sq = sum(v * v for v in fj)
        l2.append(float((same - 2 * cross + f_sq * pairs) / pairs))
        l1.append(sum(abs(float(R[k]) - F[j, k]) for k in range(n_classes)))
    return np.mean(l1), np.mean(l2)


@pytest.mark.parametrize("b", [1e-3, 1e-5])
def test_many_classes_small_bandwidth(b):
    # K = 100 and a tiny bandwidth: all but the nearest neighbour underflow
    # in double precision; the reference keeps them in 40-digit decimals.
    rng = np.random.default_rng(8)
    n, K = 60, 100
    F = 0.5 * rng.dirichlet(np.full(K, 0.3), size=n) + 0.5 / K
    y = rng.integers(0, K, n)
    labels = np.arange(K)
    l1_ref, l2_ref = _decimal_pair_reference(y, F, b, K)
    res = kde_calibration_error(
        y, F, p=2, bandwidth=b, labels=labels, return_details=True
    )
    assert np.all(np.isfinite(res.per_sample))
    assert res.value == pytest.approx(l2_ref, abs=1e-9)
    l1 = kde_calibration_error(y, F, p=1, bandwidth=b, labels=labels)
    assert l1 == pytest.approx(l1_ref, abs=1e-9)
    if b == 1e-5:
        assert res.effective_sample_size_min == pytest.approx(1.0)


def test_class_occurring_once():
    y, F = _data(120, 4, seed=9)
    y[y == 3] = 2
    y[17] = 3  # class 3 occurs exactly once
    for mode in ("canonical", "classwise", "top-label"):
        for p, debias in ((1, False), (2, True)):
            got = kde_calibration_error(
                y, F, p=p, bandwidth=0.1, multi_class=mode, debias=debias
            )
            ref = brute_value(y, F, 0.1, p, debias, mode)
            assert np.isfinite(got)
            assert abs(got - ref) < 1e-10


def test_absent_class_with_labels():
    y, F = _data(100, 4, seed=12)
    y[y == 1] = 0  # class 1 never occurs; labels= keeps the 4 columns
    got = kde_calibration_error(y, F, bandwidth=0.1, labels=[0, 1, 2, 3])
    assert abs(got - brute_value(y, F, 0.1, 1, False, "canonical")) < 1e-10
    with pytest.raises(ValueError, match="labels"):
        kde_calibration_error(y, F, bandwidth=0.1)


# ---------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["canonical", "classwise", "top-label"])
@pytest.mark.parametrize("p", [1, 2])
def test_integer_weights_equal_row_repetition(mode, p):
    y, F = _data(90, 3, seed=13)
    rng = np.random.default_rng(14)
    w = rng.integers(0, 4, 90)
    w[:3] = [0, 1, 3]
    rep = np.repeat(np.arange(90), w)
    for bw in (0.07, "mle", "risk"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            a = kde_calibration_error(
                y,
                F,
                p=p,
                bandwidth=bw,
                multi_class=mode,
                sample_weight=w,
                return_details=True,
            )
            b = kde_calibration_error(
                y[rep],
                F[rep],
                p=p,
                bandwidth=bw,
                multi_class=mode,
                return_details=True,
            )
        assert a.value == pytest.approx(b.value, abs=1e-12)
        np.testing.assert_allclose(a.bandwidth, b.bandwidth)


def test_weights_at_most_one_are_relative():
    y, F = _data(80, 3, seed=15)
    w = np.random.default_rng(16).uniform(0.1, 1.0, 80)
    for p in (1, 2):
        a = kde_calibration_error(y, F, p=p, bandwidth=0.1, sample_weight=w)
        b = kde_calibration_error(y, F, p=p, bandwidth=0.1, sample_weight=w / 7)
        assert a == pytest.approx(b, abs=1e-13)
    # Unit weights and halved unit weights equal the unweighted estimate.
    c = kde_calibration_error(y, F, p=2, bandwidth=0.1)
    d = kde_calibration_error(y, F, p=2, bandwidth=0.1, sample_weight=np.full(80, 0.5))
    assert c == pytest.approx(d, abs=1e-13)


# ---------------------------------------------------------------------------
# Bandwidth selection
# ---------------------------------------------------------------------------


def test_mle_criterion_matches_direct_leave_one_out_likelihood():
    y, F = _data(60, 3, seed=17)
    grid = [0.02, 0.1, 0.5]
    b, info = select_dirichlet_bandwidth(F, y, np.ones(60), "mle", grid=grid)
    for g, score in zip(grid, info["scores"], strict=True):
        ref = 0.0
        for j in range(60):
            dens = [
                stats.dirichlet.pdf(F[j], F[i] / g + 1) for i in range(60) if i != j
            ]
            ref += math.log(np.mean(dens))
        assert score == pytest.approx(ref, rel=1e-10)
    assert b == grid[int(np.argmax(info["scores"]))]


def test_risk_criterion_matches_direct_formula():
    y, F = _data(60, 3, seed=18)
    grid = [0.05, 0.3]
    _, info = select_dirichlet_bandwidth(
        F, y, np.ones(60), "risk", grid=grid, warn=False
    )
    E = np.eye(3)[y]
    t = ((E - F) ** 2).sum(axis=1)
    for g, score in zip(grid, info["scores"], strict=True):
        R = dirichlet_nw(F, y, np.ones(60), None, g, leave_one_out=True).ratio
        v = 1 - 2 * (R * F).sum(axis=1) + (F * F).sum(axis=1)
        assert score == pytest.approx(-((v - t) ** 2).sum(), rel=1e-10)


def test_mle_does_not_collapse_on_binary_data_and_warns_at_grid_end():
    rng = np.random.default_rng(19)
    s = rng.beta(2, 3, 800)
    y = (rng.random(800) < s).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = kde_calibration_error(y, s, return_details=True)
    assert BANDWIDTH_GRID[0] < res.bandwidth < BANDWIDTH_GRID[-1]
    # Heavily duplicated scores: the likelihood grows as b -> 0.
    s_dup = np.repeat(rng.random(20), 20)
    y_dup = (rng.random(400) < s_dup).astype(int)
    with pytest.warns(UserWarning, match="end of the grid"):
        res = kde_calibration_error(y_dup, s_dup, return_details=True)
    assert res.bandwidth == BANDWIDTH_GRID[0]


def test_risk_grid_search_returns_the_best_grid_value():
    y, f, _ = ground_truth_sample(1500, 4, seed=20)
    b, info = select_dirichlet_bandwidth(f, y, np.ones(len(y)), "risk")
    assert b in BANDWIDTH_GRID
    # The chosen value maximises the risk criterion written out directly
    # (as in test_risk_criterion_matches_direct_formula) over the whole grid.
    E = np.eye(4)[y]
    t = ((E - f) ** 2).sum(axis=1)
    crit = []
    for g in BANDWIDTH_GRID:
        R = dirichlet_nw(f, y, np.ones(len(y)), None, g, leave_one_out=True).ratio
        v = 1 - 2 * (R * f).sum(axis=1) + (f * f).sum(axis=1)
        crit.append(-((v - t) ** 2).sum())
    assert b == BANDWIDTH_GRID[int(np.argmax(crit))]
    # The metric refines it continuously (tests/test_kde_bandwidth.py).
    res = kde_calibration_error(y, f, bandwidth="risk", return_details=True)
    assert isinstance(res, KDECalibrationResult)
    assert res.bandwidth == select_kde_bandwidth(f, y, np.ones(len(y)), "risk")[0]
    assert b / 2.5 < res.bandwidth < b * 2.5
    fixed = kde_calibration_error(y, f, bandwidth=res.bandwidth)
    assert res.value == pytest.approx(fixed, abs=1e-14)


# ---------------------------------------------------------------------------
# API
# ---------------------------------------------------------------------------


def test_details_object():
    y, F = _data(200, 4, seed=21)
    res = kde_calibration_error(y, F, bandwidth=0.05, p=2, return_details=True)
    assert res.debiased and res.p == 2 and res.multi_class == "canonical"
    assert res.per_sample.shape == (200,)
    assert res.value == pytest.approx(res.per_sample.mean(), abs=1e-14)
    assert 1.0 <= res.effective_sample_size_min <= res.effective_sample_size_median
    cw = kde_calibration_error(
        y, F, bandwidth=0.05, multi_class="classwise", return_details=True
    )
    assert cw.bandwidth.shape == (4,) and cw.effective_sample_size_min.shape == (4,)
    # Classwise averages the one-vs-rest errors.
    per_class = [
        kde_calibration_error((y == k).astype(int), F[:, k], bandwidth=0.05)
        for k in range(4)
    ]
    assert cw.value == pytest.approx(np.mean(per_class), abs=1e-13)
    binary = kde_calibration_error(
        (y == 0).astype(int), F[:, 0], bandwidth=0.05, return_details=True
    )
    assert binary.multi_class == "binary"


def test_string_labels_and_pos_label():
    rng = np.random.default_rng(22)
    s = rng.random(150)
    y = np.where(rng.random(150) < s, "spam", "ham")
    with pytest.raises(ValueError, match="pos_label"):
        kde_calibration_error(y, s, bandwidth=0.1)  # which class is s about?
    a = kde_calibration_error(y, s, bandwidth=0.1, pos_label="spam")
    b = kde_calibration_error((y == "spam").astype(int), s, bandwidth=0.1)
    assert a == pytest.approx(b, abs=1e-14)
    c = kde_calibration_error(y, 1 - s, bandwidth=0.1, pos_label="ham")
    assert a == pytest.approx(c, abs=1e-12)


def test_inputs_not_modified():
    y, F = _data(50, 3, seed=23)
    F[0] = [0.0, 0.5, 0.5]
    F_copy, y_copy = F.copy(), y.copy()
    kde_calibration_error(y, F, bandwidth=0.1)
    np.testing.assert_array_equal(F, F_copy)
    np.testing.assert_array_equal(y, y_copy)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(p=0.5), ValueError, "'p' parameter.* must be"),
        (dict(p="2"), TypeError, "'p' parameter.* must be"),
        (dict(bandwidth=-0.1), ValueError, "bandwidth"),
        (dict(bandwidth=0), ValueError, "bandwidth"),
        (dict(bandwidth="scott"), ValueError, "bandwidth"),
        (dict(bandwidth=[0.1]), TypeError, "bandwidth"),
        (dict(multi_class="ovr"), ValueError, "multi_class"),
        (dict(debias=True, p=1), ValueError, "debias"),
        (dict(debias="yes"), ValueError, "debias"),
        (dict(root=1), TypeError, "root"),
        (dict(chunk_size=0), ValueError, "chunk_size"),
        (dict(n_jobs=1.5), TypeError, "n_jobs"),
        (dict(sample_weight=-np.ones(30)), ValueError, "sample_weight"),
        (dict(sample_weight=np.ones(29)), ValueError, "sample_weight"),
    ],
)
def test_bad_options_name_the_argument(kwargs, exc, match):
    y, F = _data(30, 3, seed=24)
    with pytest.raises(exc, match=match):
        kde_calibration_error(y, F, **kwargs)


def test_bad_data_name_the_argument():
    y, F = _data(30, 3, seed=25)
    bad = F.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="y_proba"):
        kde_calibration_error(y, bad)
    with pytest.raises(ValueError, match="y_proba"):
        kde_calibration_error(y, F * 1.5)
    with pytest.raises(ValueError, match="samples"):
        kde_calibration_error(y[:-1], F)
    with pytest.raises(ValueError, match="sample_weight"):
        kde_calibration_error(y[:2], F[:2], bandwidth=0.1, p=2, labels=[0, 1, 2])
    w = np.zeros(30)
    w[:2] = 1.0
    with pytest.raises(ValueError, match="sample_weight"):
        kde_calibration_error(y, F, bandwidth=0.1, p=2, sample_weight=w)
    assert np.isfinite(kde_calibration_error(y, F, bandwidth=0.1, sample_weight=w))


def test_scorer_in_cross_val_score():
    assert "neg_kde_calibration_error" in get_scorer_names()
    X, y = make_classification(
        n_samples=450, n_classes=3, n_informative=4, random_state=0
    )
    scorer = get_scorer("neg_kde_calibration_error")
    scores = cross_val_score(LogisticRegression(), X, y, cv=3, scoring=scorer)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert np.all(scores <= 0)
    clf = LogisticRegression().fit(X[:300], y[:300])
    direct = kde_calibration_error(y[300:], clf.predict_proba(X[300:]))
    assert scorer(clf, X[300:], y[300:]) == pytest.approx(-direct, abs=1e-14)


def test_selector_subsamples_large_inputs_deterministically():
    y, F = _data(500, 3, seed=26)
    w = np.ones(500)
    b1, info1 = select_dirichlet_bandwidth(F, y, w, "mle", max_samples=200)
    b2, info2 = select_dirichlet_bandwidth(F, y, w, "mle", max_samples=200)
    assert info1["n_used"] == 200 and b1 == b2
    np.testing.assert_array_equal(info1["scores"], info2["scores"])
    # The criterion is that of the subsample itself.
    idx = np.sort(np.random.default_rng(0).choice(500, size=200, replace=False))
    _, info3 = select_dirichlet_bandwidth(F[idx], y[idx], w[idx], "mle")
    np.testing.assert_allclose(info1["scores"], info3["scores"], rtol=1e-12)


# ---------------------------------------------------------------------------
# Default bandwidth: one selector, chosen against Monte-Carlo ground truth
# (benchmarks/bench_kde_ece.py --accuracy)
# ---------------------------------------------------------------------------


def _truth_l1_at(K, temperature):
    _, f, q = ground_truth_sample(400_000, K, seed=321, temperature=temperature)
    return (0.5 if K == 2 else 1.0) * np.abs(q - f).sum(axis=1).mean()


def test_default_bandwidth_is_risk_in_the_api_the_scorer_and_the_cli():
    from skcalib.cli import compute_report

    y, f = _labels_and_scores(3, 400, 0, 0.6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        default = kde_calibration_error(y, f, return_details=True)
        risk = kde_calibration_error(y, f, bandwidth="risk", return_details=True)
        mle = kde_calibration_error(y, f, bandwidth="mle", return_details=True)
    assert default.bandwidth == risk.bandwidth != mle.bandwidth
    assert default.value == risk.value
    clf = LogisticRegression().fit(f, y)  # any classifier; scored on its output
    proba = clf.predict_proba(f)
    scorer = get_scorer("neg_kde_calibration_error")
    ref = kde_calibration_error(y, proba, bandwidth="risk", labels=clf.classes_)
    assert scorer(clf, f, y) == pytest.approx(-ref, abs=1e-14)
    report = compute_report(y, f, n_bootstrap=0)[0]["metrics"]["ece_kde"]
    assert report["value"] == pytest.approx(default.value, abs=1e-14)
    assert report["bandwidth"] == default.bandwidth


def test_default_bandwidth_near_truth_on_ten_classes():
    # Calibrated Dirichlet(1) data, K = 10: "mle" picks the end of the grid
    # (b = 1), where the kernel average is nearly the global mean and even
    # the U-statistic reads 0.067 for a truth of 0.
    y, f = _labels_and_scores(10, 2000, 0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        res = kde_calibration_error(y, f, p=2, return_details=True)
    assert abs(res.value) < 0.02, res.value
    assert res.bandwidth < 1.0


def test_default_bandwidth_l1_near_truth_binary_under_confident():
    # Binary, under-confident (temperature 1.6): the "mle" bandwidth
    # (0.052) over-smooths and the L1 estimate is 43 % low; "risk" is 7 % low.
    truth = _truth_l1_at(2, 1.6)
    vals = [
        kde_calibration_error(*_labels_and_scores(2, 2000, seed, 1.6))
        for seed in range(2)
    ]
    assert abs(np.mean(vals) - truth) < 0.2 * truth, (vals, truth)


# ---------------------------------------------------------------------------
# max_samples: a subsample of evaluation rows and its standard error
# ---------------------------------------------------------------------------


def _overconfident_problem(n, K, seed):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(K), size=n)
    y = (P.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return y, P**2 / (P**2).sum(axis=1, keepdims=True)


@pytest.mark.parametrize("multi_class", ["canonical", "classwise"])
@pytest.mark.parametrize("p", [1, 2])
def test_subsample_terms_are_the_full_terms_of_those_rows(multi_class, p):
    y, P = _overconfident_problem(600, 3, seed=1)
    kw = dict(p=p, bandwidth=0.1, multi_class=multi_class, return_details=True)
    full = kde_calibration_error(y, P, **kw)
    sub = kde_calibration_error(y, P, max_samples=50, random_state=0, **kw)
    rows = np.flatnonzero(~np.isnan(sub.per_sample))
    assert rows.shape[0] == 50
    np.testing.assert_allclose(sub.per_sample[rows], full.per_sample[rows], rtol=1e-10)
    assert sub.value == pytest.approx(full.per_sample[rows].mean(), rel=1e-10)
    assert sub.standard_error > 0 and full.standard_error == 0.0
    # as many rows as there are: the exact value
    same = kde_calibration_error(y, P, max_samples=600, random_state=0, **kw)
    assert same.value == full.value and same.standard_error == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("weighted", [False, True])
def test_subsample_standard_error_matches_the_spread(weighted):
    # seeded repetitions of the subsample on fixed data: the estimates centre
    # on the full-sample value, their spread is the reported standard error,
    # and +-1.96 SE covers the full value about 95 % of the time
    y, P = _overconfident_problem(1500, 4, seed=2)
    w = np.random.default_rng(3).exponential(size=1500) if weighted else None
    kw = dict(p=2, bandwidth=0.1, sample_weight=w)
    full = kde_calibration_error(y, P, **kw)
    est, se = [], []
    for seed in range(300):
        r = kde_calibration_error(
            y, P, max_samples=120, random_state=seed, return_details=True, **kw
        )
        est.append(r.value)
        se.append(r.standard_error)
    est, se = np.array(est), np.array(se)
    spread = est.std(ddof=1)
    assert 0.85 < np.mean(se) / spread < 1.18
    assert abs(est.mean() - full) < 3 * spread / np.sqrt(len(est)) + (
        0.02 * spread if weighted else 0.0
    )
    coverage = np.mean(np.abs(est - full) <= 1.96 * se)
    assert 0.9 <= coverage <= 0.985


def test_max_samples_is_checked():
    y, P = _overconfident_problem(50, 3, seed=0)
    for bad in (1, 0, 2.5, "10"):
        with pytest.raises((ValueError, TypeError), match="max_samples"):
            kde_calibration_error(y, P, max_samples=bad)


@pytest.mark.parametrize(
    "k, bandwidth", [(2, 0.05), (3, 0.3), (10, "risk"), (10, 1e-3)]
)
def test_single_precision_weights_move_the_estimate_by_rounding_only(
    k, bandwidth, monkeypatch
):
    # From SINGLE_EXP_COLUMNS training points the kernel weights are float32
    # exponentials: forced on a small sample, the estimates stay within 1e-6
    # relative of the float64 ones (ties and unequal weights included).
    from skcalib._backend import smoothing

    rng = np.random.default_rng(k)
    P = rng.dirichlet(np.full(k, 0.6), 1500)
    P[:200] = P[0]  # a block of tied rows
    y = (P.cumsum(axis=1) < rng.random(1500)[:, None]).sum(axis=1)
    w = rng.uniform(0.2, 3.0, 1500)
    out = {}
    for columns in (np.inf, 0):
        monkeypatch.setattr(smoothing, "SINGLE_EXP_COLUMNS", columns)
        out[columns] = [
            kde_calibration_error(
                y, P, p=p, bandwidth=bandwidth, sample_weight=w, return_details=True
            )
            for p in (1, 2)
        ]
    if isinstance(bandwidth, str):
        # The continuous refinement of the bandwidth follows the rounding of
        # its criterion; the estimates are compared at the same bandwidth.
        for exact, single in zip(out[np.inf], out[0], strict=True):
            np.testing.assert_allclose(single.bandwidth, exact.bandwidth, rtol=1e-2)
        out[0] = [
            kde_calibration_error(
                y,
                P,
                p=p,
                bandwidth=exact.bandwidth,
                sample_weight=w,
                return_details=True,
            )
            for p, exact in zip((1, 2), out[np.inf], strict=True)
        ]
    for exact, single in zip(out[np.inf], out[0], strict=True):
        np.testing.assert_array_equal(single.bandwidth, exact.bandwidth)
        assert single.value != exact.value  # the single-precision path ran
        np.testing.assert_allclose(single.value, exact.value, rtol=1e-6)
        scale = np.abs(exact.per_sample).max()
        np.testing.assert_allclose(
            single.per_sample, exact.per_sample, rtol=1e-4, atol=1e-7 * scale
        )


def test_weights_above_one_are_named_when_the_bandwidth_collapses():
    # Importance weights in (0.5, 2): a weight above 1 is that many copies,
    # which vote for their sample in the leave-one-out criterion, and the
    # bandwidth runs to the end of the grid (0.22 against the truth 0.10,
    # E|s - s^1.5| for uniform s). The same weights divided by their maximum
    # are relative, and the estimate is right.
    rng = np.random.default_rng(0)
    s = rng.uniform(size=400)
    y = (rng.uniform(size=400) < s**1.5).astype(int)
    w = rng.uniform(0.5, 2.0, 400)
    with pytest.warns(UserWarning, match="divide weights that are not counts"):
        collapsed = kde_calibration_error(y, s, sample_weight=w)
    assert collapsed > 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        relative = kde_calibration_error(y, s, sample_weight=w / w.max())
    assert relative == pytest.approx(0.1, abs=0.01)
