"""Certified calibration-error bounds: formulas, coverage and input checks."""

import numpy as np
import pytest
from joblib import parallel_config
from scipy.optimize import lsq_linear

from skcalib.datasets import PROBLEMS, make_calibration_problem
from skcalib.metrics import CalibrationBound, calibration_error_bound

H = 2.0**-4


# ---------------------------------------------------------------------------
# Independent re-implementation of the certificate (brute force, small n)
# ---------------------------------------------------------------------------


def bernstein(values, delta):
    n = values.size
    return np.sqrt(2 * values.var() * np.log(3 / delta) / n) + 3 * np.log(3 / delta) / n


def realised_error(mean_g, sum_c2, m, d):
    # McDiarmid over the training labels, then Bernstein with Var <= mean.
    L = np.log(1 / d)
    h_bound = mean_g + np.sqrt(L * sum_c2 / 2)
    return (np.sqrt(L / (2 * m)) + np.sqrt(h_bound + 7 * L / (6 * m))) ** 2


def folds_like_the_library(n, n_splits, seed):
    # The documented recipe: a permutation from the seeded Generator assigns
    # fold k to positions k, k + K, ...; small samples use whole folds as V.
    rng = np.random.default_rng(seed)
    fold = np.empty(n, dtype=int)
    fold[rng.permutation(n)] = np.arange(n) % n_splits
    return fold


def brute_nw_fold(sT, yT, sV, hw, h, delta_f):
    L1, L2 = 1 / (2 * h), 3 / (2 * h * h)
    d = delta_f / 3
    err, g = [], []
    influence = np.zeros(sT.size)
    for t in sV:
        inside = np.abs(sT - t) <= hw
        c = inside.sum()
        if c == 0:
            err.append(0.0)
            g.append(1.0)
            continue
        w = np.full(c, 1.0 / c)
        dist = sT[inside] - t
        err.append(abs(np.dot(w, yT[inside]) - t))
        m1, m2, nu = np.dot(w, dist), np.dot(w, dist * dist), np.sqrt(np.sum(w * w))
        grid_term = 2 * L1 * 2.0**-24
        g.append(min(1.0, L1 * abs(m1) + L2 / 2 * m2 + nu / 2 + grid_term))
        influence[inside] += 1.0 / (c * sV.size)
    err, g = np.array(err), np.array(g)
    slack = bernstein(err, d) + realised_error(
        g.mean(), np.sum(influence**2), sV.size, d
    )
    return err.mean() + slack, err.mean() - slack  # upper, lower


def tie_average(s_sorted, v):
    out = v.copy()
    for value in np.unique(s_sorted):
        block = s_sorted == value
        out[block] = v[block].mean()
    return out


def brute_tv_fold(sT, yT, sV, delta_f, V):
    n = sT.size
    d = delta_f / 3
    t1 = np.sqrt(np.log(4 / d) / 2)
    t2 = np.sqrt(n * np.log(4 * (n - 1) / d) / 8)
    lam = t2 / n
    # (1 / 2n)||y - v||² + lam ||Dv||₁ through its box-constrained dual.
    D = np.diff(np.eye(n), axis=0)
    z = lsq_linear(D.T, yT, bounds=(-n * lam, n * lam), method="bvls", tol=1e-15).x
    v = tie_average(sT, yT - D.T @ z)
    v_hat = np.abs(np.diff(v)).sum()
    eta = np.array([v[max(np.searchsorted(sT, t, side="right") - 1, 0)] for t in sV])
    err = np.abs(sV - eta)
    # From the optimality condition e² <= t1 e + 2 t2 V.
    e = (t1 + np.sqrt(t1**2 + 8 * t2 * V)) / 2
    tvb = e / np.sqrt(n)
    ptb = (V + v_hat) * np.sqrt(np.log(2 / d) / (2 * n))
    slack = bernstein(err, d) + tvb + ptb
    return err.mean() + slack, err.mean() - slack  # upper, lower


def combined(uppers, lowers):
    # Every fold bound holds on one event: the smallest upper (clipped at 1)
    # and the largest lower (clipped at 0) are certified.
    return min(1.0, min(uppers)), max(0.0, max(lowers))


def split(d, fold, k):
    order = np.argsort(d.y_proba, kind="stable")
    train = order[fold[order] != k]
    return d.y_proba[train], d.y_true[train].astype(float), d.y_proba[fold == k]


@pytest.mark.parametrize("n, n_splits", [(240, 3), (60, 2)])
def test_nw_matches_brute_force(n, n_splits):
    d = make_calibration_problem(n, problem="u2", perturbation_scale=H, random_state=4)
    b = calibration_error_bound(
        d.y_true,
        d.y_proba,
        method="nw",
        perturbation_scale=H,
        n_splits=n_splits,
        delta=0.1,
        random_state=11,
        return_details=True,
    )
    fold = folds_like_the_library(n, n_splits, 11)
    uppers, lowers = [], []
    for k, info in enumerate(b.per_fold):
        sT, yT, sV = split(d, fold, k)
        up, lo = brute_nw_fold(sT, yT, sV, info["bandwidth"], H, 0.1 / n_splits)
        uppers.append(up)
        lowers.append(lo)
        assert info["upper"] == pytest.approx(min(1.0, up), rel=1e-10)
        assert info["lower"] == pytest.approx(lo, rel=1e-10, abs=1e-12)
    upper, lower = combined(uppers, lowers)
    assert b.upper == pytest.approx(upper, rel=1e-10)
    # The lower bound flips the signs of the slack terms.
    assert b.lower == pytest.approx(lower, rel=1e-10, abs=1e-12)
    assert b.upper == pytest.approx(min(1.0, sum(b.terms.values())), rel=1e-12)


@pytest.mark.parametrize("variation", [1.0, 2.5])
def test_tv_matches_brute_force(variation):
    n, n_splits = 150, 3
    d = make_calibration_problem(n, problem="overconfident", random_state=2)
    b = calibration_error_bound(
        d.y_true,
        d.y_proba,
        method="tv",
        variation=variation,
        n_splits=n_splits,
        random_state=5,
        return_details=True,
    )
    fold = folds_like_the_library(n, n_splits, 5)
    uppers, lowers = zip(
        *[
            brute_tv_fold(*split(d, fold, k), 0.05 / n_splits, variation)
            for k in range(n_splits)
        ],
        strict=True,
    )
    np.testing.assert_allclose(
        [f["upper"] for f in b.per_fold], np.minimum(1.0, uppers), rtol=1e-8
    )
    np.testing.assert_allclose(
        [f["lower"] for f in b.per_fold], lowers, rtol=1e-8, atol=1e-10
    )
    upper, lower = combined(uppers, lowers)
    assert b.upper == pytest.approx(upper, rel=1e-8)
    assert b.lower == pytest.approx(lower, rel=1e-8, abs=1e-10)


def brute_isotonic(y):
    # Least squares over non-decreasing vectors v = cumsum(z), z[1:] >= 0.
    n = y.size
    lower = np.r_[-np.inf, np.zeros(n - 1)]
    z = lsq_linear(np.tril(np.ones((n, n))), y, bounds=(lower, np.inf), tol=1e-15).x
    return np.cumsum(z)


@pytest.mark.parametrize("assume", [None, "monotone"])
def test_tied_scores_match_brute_force(assume):
    # Scores on eleven values: every fitted value is averaged over its block
    # of tied scores before the step extension and the fitted variation.
    n, n_splits = 120, 3
    rng = np.random.default_rng(7)
    s = np.round(rng.random(n), 1)
    y = (rng.random(n) < s**2).astype(int)
    b = calibration_error_bound(
        y,
        s,
        method="tv",
        assume=assume,
        n_splits=n_splits,
        random_state=2,
        return_details=True,
    )
    fold = folds_like_the_library(n, n_splits, 2)
    order = np.argsort(s, kind="stable")
    for k, info in enumerate(b.per_fold):
        train = order[fold[order] != k]
        sT, yT, sV = s[train], y[train].astype(float), s[fold == k]
        if assume == "monotone":
            v = tie_average(sT, brute_isotonic(yT))
            v_hat = v[-1] - v[0]
        else:
            upper, _ = brute_tv_fold(sT, yT, sV, 0.05 / n_splits, 1.0)
            assert info["upper"] == pytest.approx(min(1.0, upper), rel=1e-8)
            continue
        eta = np.array(
            [v[max(np.searchsorted(sT, t, side="right") - 1, 0)] for t in sV]
        )
        assert info["estimate"] == pytest.approx(np.mean(np.abs(sV - eta)), abs=1e-7)
        assert info["fitted_variation"] == pytest.approx(v_hat, abs=1e-7)


def test_lipschitz_bucket_candidate_matches_brute_force():
    n, n_splits, L = 200, 2, 3.0
    d = make_calibration_problem(n, problem="u2", random_state=8)
    b = calibration_error_bound(
        d.y_true,
        d.y_proba,
        method="lipschitz",
        lipschitz=L,
        n_splits=n_splits,
        random_state=1,
        return_details=True,
    )
    fold = folds_like_the_library(n, n_splits, 1)
    for k, info in enumerate(b.per_fold):
        sT, yT, sV = split(d, fold, k)
        B, shift = info["n_bins"], info["shift"]
        edges = np.unique(np.clip((np.arange(-1, B + 2) + shift) / B, 0, 1))
        bT = np.minimum(np.searchsorted(edges, sT, side="right") - 1, edges.size - 2)
        bV = np.minimum(np.searchsorted(edges, sV, side="right") - 1, edges.size - 2)
        err, g = [], []
        influence = np.zeros(sT.size)
        for t, j in zip(sV, bV, strict=True):
            c = np.sum(bT == j)
            width = edges[j + 1] - edges[j]
            err.append(abs(yT[bT == j].mean() - t) if c else 0.0)
            g.append(min(1.0, L * width + 0.5 / np.sqrt(c)) if c else 1.0)
            if c:
                influence[bT == j] += 1.0 / (c * sV.size)
        err, g = np.array(err), np.array(g)
        dc = 0.05 / n_splits / (B * 4) / 3
        ref = (
            err.mean()
            + bernstein(err, dc)
            + realised_error(g.mean(), np.sum(influence**2), sV.size, dc)
        )
        assert info["upper"] == pytest.approx(min(1.0, ref), rel=1e-10)


# ---------------------------------------------------------------------------
# Coverage on problems with exact ground truth
# ---------------------------------------------------------------------------

METHODS = {
    "nw": dict(method="nw", perturbation_scale=H),
    "tv": dict(method="tv"),
    "tv-monotone": dict(method="tv", assume="monotone"),
    "lipschitz": dict(method="lipschitz", perturbation_scale=H),
}


def method_kwargs(name, data):
    kw = dict(METHODS[name])
    if name == "tv":
        kw["variation"] = max(1.0, data.total_variation)
    return kw


def coverage(problem, name, n, reps, seed0=0):
    if name == "tv-monotone" and problem == "wiggle":
        pytest.skip("wiggle is not monotone")
    hits, gaps = 0, []
    for r in range(reps):
        d = make_calibration_problem(
            n, problem=problem, perturbation_scale=H, random_state=seed0 + r
        )
        b = calibration_error_bound(
            d.y_true,
            d.y_proba,
            random_state=r,
            **method_kwargs(name, d),
            return_details=True,
        )
        hits += b.lower <= d.calibration_error <= b.upper
        gaps.append(b.upper - d.calibration_error)
    return hits / reps, float(np.mean(gaps))


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("problem", PROBLEMS)
def test_coverage_fast(problem, name, record_property):
    rate, gap = coverage(problem, name, n=1500, reps=8)
    record_property("coverage", rate)
    assert rate == 1.0, f"coverage {rate:.2f} (mean gap {gap:.4f})"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("problem", PROBLEMS)
def test_coverage_slow(problem, name, record_property):
    rate, gap = coverage(problem, name, n=20000, reps=20, seed0=1000)
    record_property("coverage", rate)
    print(f"{problem:14s} {name:12s} coverage {rate:.2f}  mean gap {gap:.4f}")
    # The guarantee is >= 1 - delta = 0.95 for each of upper and lower.
    assert rate >= 0.9


@pytest.mark.parametrize("name", list(METHODS))
def test_tiny_samples_stay_above_truth(name):
    # A dozen samples: the guarantee holds for any n, so the bound must stay
    # above the truth (and the lower bound below it) even here. Each single
    # term is then so large that coverage alone cannot reveal a dropped term;
    # the brute-force tests above check every term against its formula.
    for r in range(20):
        d = make_calibration_problem(
            12, problem="u2", perturbation_scale=H, random_state=100 + r
        )
        b = calibration_error_bound(
            d.y_true,
            d.y_proba,
            n_splits=2,
            random_state=r,
            **method_kwargs(name, d),
            return_details=True,
        )
        assert b.upper >= d.calibration_error
        assert b.lower <= d.calibration_error


def test_nw_tightens_with_n():
    gaps = []
    for n in (2000, 50000):
        d = make_calibration_problem(
            n, problem="u2", perturbation_scale=H, random_state=0
        )
        b = calibration_error_bound(
            d.y_true,
            d.y_proba,
            method="nw",
            perturbation_scale=H,
            random_state=0,
            return_details=True,
        )
        gaps.append(b.upper - d.calibration_error)
        assert 0 <= b.lower <= b.estimate <= b.upper
    assert 0 < gaps[1] < 0.6 * gaps[0]


# ---------------------------------------------------------------------------
# API behaviour
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data():
    return make_calibration_problem(
        3000, problem="u2", perturbation_scale=H, random_state=0
    )


def test_result_object(data):
    b = calibration_error_bound(
        data.y_true,
        data.y_proba,
        method="nw",
        perturbation_scale=H,
        random_state=0,
        return_details=True,
    )
    assert isinstance(b, CalibrationBound)
    assert b.method == "nw" and b.delta == 0.05 and b.n_samples == 3000
    assert b.n_splits == 5 and len(b.per_fold) == 5 and b.bandwidth.shape == (5,)
    assert b.n_bins is None
    assert all(f["delta"] == pytest.approx(0.01) for f in b.per_fold)
    assert all(f["n_valid"] == 600 and f["n_train"] == 2400 for f in b.per_fold)
    text = repr(b)
    # One line of scalars; the terms, folds and per-fold arrays stay out.
    assert text.startswith("CalibrationBound(upper=") and "\n" not in text
    assert f"upper={b.upper:.4g}," in text and "method='nw'" in text
    assert "smoother_error" not in text and "bandwidth" not in text
    assert b.upper == pytest.approx(min(f["upper"] for f in b.per_fold))
    assert b.upper == min(1.0, sum(b.terms.values())) and not b.vacuous


def test_reproducible_and_parallel(data):
    kw = dict(method="tv", random_state=3)
    a = calibration_error_bound(data.y_true, data.y_proba, **kw, return_details=True)
    # Threads keep the test fast; the fold jobs are the same under any backend.
    with parallel_config(backend="threading"):
        b = calibration_error_bound(
            data.y_true, data.y_proba, n_jobs=2, **kw, return_details=True
        )
    assert a.upper == b.upper and a.lower == b.lower
    c = calibration_error_bound(
        data.y_true, data.y_proba, method="tv", random_state=4, return_details=True
    )
    assert c.upper != a.upper


def test_validation_subsample_size():
    d = make_calibration_problem(200_000, problem="u2", random_state=0)
    b = calibration_error_bound(
        d.y_true,
        d.y_proba,
        method="tv",
        assume="monotone",
        random_state=0,
        return_details=True,
    )
    assert all(f["n_valid"] == 10000 for f in b.per_fold)  # 0.05 n
    assert b.per_fold[0]["fitted_variation"] <= 1.0


def test_string_labels_and_pos_label(data):
    labels = np.where(data.y_true == 1, "yes", "no")
    with pytest.raises(ValueError, match="pos_label"):
        calibration_error_bound(
            labels, data.y_proba, method="tv", random_state=0, return_details=True
        )
    a = calibration_error_bound(
        labels,
        data.y_proba,
        method="tv",
        pos_label="yes",
        random_state=0,
        return_details=True,
    )
    b = calibration_error_bound(
        data.y_true, data.y_proba, method="tv", random_state=0, return_details=True
    )
    assert a.upper == b.upper
    flipped = calibration_error_bound(
        labels,
        1 - data.y_proba,
        method="tv",
        pos_label="no",
        random_state=0,
        return_details=True,
    )
    assert flipped.estimate == pytest.approx(b.estimate, abs=0.02)


def test_inputs_not_modified(data):
    y, s = data.y_true.copy(), data.y_proba.copy()
    calibration_error_bound(
        y, s, method="lipschitz", lipschitz=8.0, random_state=0, return_details=True
    )
    np.testing.assert_array_equal(y, data.y_true)
    np.testing.assert_array_equal(s, data.y_proba)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(delta=0.0), ValueError, "delta"),
        (dict(delta=1.0), ValueError, "delta"),
        (dict(delta=-0.1), ValueError, "delta"),
        (dict(delta="x"), TypeError, "delta"),
        (dict(method="bogus"), ValueError, "method"),
        (dict(method="nw"), ValueError, "perturbation_scale"),
        (dict(method="nw", perturbation_scale=0.0), ValueError, "perturbation_scale"),
        (
            dict(method="nw", perturbation_scale=1e-300),
            ValueError,
            r"perturbation_scale.*\[2\*\*-16, 1\]",
        ),
        (
            dict(method="nw", perturbation_scale=H, lipschitz=2.0),
            ValueError,
            "lipschitz",
        ),
        (dict(method="lipschitz"), ValueError, "lipschitz"),
        (dict(method="lipschitz", lipschitz=-1.0), ValueError, "lipschitz"),
        (dict(method="tv", variation=0.0), ValueError, "variation"),
        (dict(method="tv", assume="convex"), ValueError, "assume"),
        (
            dict(method="nw", perturbation_scale=H, assume="monotone"),
            ValueError,
            "assume",
        ),
        (dict(method="tv", assume="monotone", variation=2.0), ValueError, "variation"),
        # Parameters of another method are mistakes, not silently ignored.
        (dict(method="tv", lipschitz=5.0), ValueError, "lipschitz is not used"),
        (
            dict(method="tv", perturbation_scale=H),
            ValueError,
            "perturbation_scale is not used",
        ),
        (
            dict(method="lipschitz", lipschitz=2.0, variation=0.5),
            ValueError,
            "variation is not used",
        ),
        (
            dict(method="nw", perturbation_scale=H, variation=0.5),
            ValueError,
            "variation is not used",
        ),
        (dict(n_splits=1), ValueError, "n_splits"),
        (dict(n_splits=2.5), TypeError, "n_splits"),
        (dict(random_state="seed"), TypeError, "random_state"),
    ],
)
def test_bad_parameters(data, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        calibration_error_bound(
            data.y_true, data.y_proba, **kwargs, return_details=True
        )


def test_bad_data():
    y = np.array([0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 0])
    s = np.linspace(0.05, 0.95, 12)
    with pytest.raises(ValueError, match="classes"):
        calibration_error_bound(np.arange(12) % 3, s, return_details=True)
    with pytest.raises(ValueError, match=r"y_proba.*\[0, 1\]"):
        calibration_error_bound(y, s + 0.5, return_details=True)
    s_nan = s.copy()
    s_nan[3] = np.nan
    with pytest.raises(ValueError, match="y_proba"):
        calibration_error_bound(y, s_nan, return_details=True)
    with pytest.raises(ValueError, match="inconsistent"):
        calibration_error_bound(y[:-1], s, return_details=True)
    with pytest.raises(ValueError, match="n_splits"):
        calibration_error_bound(y[:9], s[:9], n_splits=5, return_details=True)
    with pytest.raises(ValueError, match="multi_class"):
        calibration_error_bound(
            np.arange(12) % 3,
            np.full((12, 3), 1 / 3),
            multi_class="classwise",
            return_details=True,
        )


def test_multiclass_is_the_top_label_problem():
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], 3000)
    y = np.array([rng.choice(3, p=row) for row in P])
    labels = np.array(["a", "b", "c"])
    b = calibration_error_bound(
        labels[y], P, labels=labels, random_state=0, return_details=True
    )
    correct = (P.argmax(axis=1) == y).astype(int)
    ref = calibration_error_bound(
        correct, P.max(axis=1), random_state=0, return_details=True
    )
    assert b.upper == ref.upper and b.estimate == ref.estimate
    # labels= gives the column order even when a class is missing.
    keep = y != 2
    c = calibration_error_bound(
        labels[y][keep], P[keep], labels=labels, random_state=0, return_details=True
    )
    ref = calibration_error_bound(
        correct[keep], P[keep].max(axis=1), random_state=0, return_details=True
    )
    assert c.upper == ref.upper
