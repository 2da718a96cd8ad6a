"""Certificates under adversarial designs: discrete base models, tied scores,
one narrow cluster of scores, tiny samples.

Each design has an exactly known calibration error (by quadrature or in closed
form); a bound is checked by its violation count over seeded repetitions, at
a delta loose enough for failures to show.
"""

import functools

import numpy as np
import pytest
from scipy.stats import binom
from sklearn.base import BaseEstimator, ClassifierMixin

from skcalib import PerturbedClassifier
from skcalib._backend.certificate import average_over_ties
from skcalib._backend.distributed import cell_window_influence, stream_folds
from skcalib._backend.kernels import sech_pdf
from skcalib._backend.window import window_influence
from skcalib.metrics import StreamingCalibrationBound, calibration_error_bound


def allowed_violations(reps, delta, level=0.005):
    """Most violations a certificate at exactly ``delta`` shows in ``reps``
    runs, except with probability ``level``."""
    return int(binom.ppf(1 - level, reps, delta))


# ---------------------------------------------------------------------------
# Discrete base model, perturbed by PerturbedClassifier (NW, Lipschitz)
# ---------------------------------------------------------------------------


class LeafModel(ClassifierMixin, BaseEstimator):
    """A tree-like model: feature 0 is a leaf index, each leaf one score."""

    def __init__(self, leaf_scores=None):
        self.leaf_scores = leaf_scores

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        p = np.asarray(self.leaf_scores)[np.asarray(X)[:, 0].astype(int)]
        return np.column_stack([1 - p, p])


def leaf_design(n_leaves, seed=0):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(0.3, 0.7, n_leaves), 3)
    eta = np.clip(scores + rng.choice([-0.25, 0.25], n_leaves), 0.0, 1.0)
    return scores, eta


@functools.lru_cache(maxsize=1)
def leaf_truths(n_leaves, h):
    """The two CEs of the perturbed :func:`leaf_design` model, by a midpoint
    rule on 2**17 nodes (the kernel spans thousands of them), from one
    evaluation of each leaf's kernel (cached: both certificates read them):

    * the draws around different leaves share one support:
      ∫ |Σ_l π_l (s - η_l) k(s | f_l)| ds;
    * each perturbed score reveals its leaf, so that η(s) is the leaf's
      own: Σ_l π_l ∫ |s - η_l| k(s | f_l) ds.
    """
    scores, eta = leaf_design(n_leaves)
    s = (np.arange(2**17) + 0.5) / 2**17
    residual = np.zeros_like(s)
    revealing = 0.0
    for f, e in zip(scores, eta, strict=True):
        k = sech_pdf(s, f, h)
        residual += (s - e) * k / scores.size
        revealing += np.mean(np.abs(s - e) * k) / scores.size
    return float(np.abs(residual).mean()), float(revealing)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["nw", "lipschitz"])
def test_discrete_base_model_perturbed_is_certified(method):
    h, n, reps, delta = 2.0**-6, 100_000, 20, 0.2
    scores, eta = leaf_design(200)
    # On the grid, draws around different leaves coincide and the truth is
    # that of the smoothed model (the grid moves it by at most
    # 2**-25 + 2**-24 / (2h)); draws off it identify their leaf, and the
    # truth is then the unsmoothed one.
    ce_shared, ce_revealing = leaf_truths(200, h)
    ce_shared -= 2.0**-25 + 2.0**-24 / (2 * h)
    model = PerturbedClassifier(LeafModel(scores), scale=h)
    violations = 0
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        leaf = rng.integers(0, scores.size, n)
        y = (rng.random(n) < eta[leaf]).astype(int)
        X = leaf[:, None].astype(float)
        model.set_params(random_state=seed).fit(X, y)
        p = model.predict_proba(X)[:, 1]
        shared = np.all(p * 2**24 == np.rint(p * 2**24))
        b = calibration_error_bound(
            y,
            p,
            method=method,
            perturbation_scale=h,
            delta=delta,
            random_state=seed,
            return_details=True,
        )
        violations += b.upper < (ce_shared if shared else ce_revealing)
    assert violations <= allowed_violations(reps, delta), violations


# ---------------------------------------------------------------------------
# Tied scores (TV and the monotone bound)
# ---------------------------------------------------------------------------


def atom_design(n, rng):
    """70 % of the mass on one score 0.6 with η = 0.1; elsewhere uniform with
    η(s) = s / 6 below 0.6 and η(s) = s above (η non-decreasing)."""
    atom = rng.random(n) < 0.7
    s = np.where(atom, 0.6, rng.random(n))
    eta = np.where(atom, 0.1, np.where(s < 0.6, s / 6, s))
    y = (rng.random(n) < eta).astype(int)
    return y, s


ATOM_CE = 0.7 * 0.5 + 0.3 * (5 / 6) * 0.6**2 / 2


@pytest.mark.slow
@pytest.mark.parametrize("assume", [None, "monotone"])
def test_tied_scores_are_certified(assume):
    n, reps, delta = 300_000, 30, 0.05
    violations = 0
    for seed in range(reps):
        y, s = atom_design(n, np.random.default_rng(seed))
        b = calibration_error_bound(
            y,
            s,
            method="tv",
            assume=assume,
            delta=delta,
            random_state=seed,
            return_details=True,
        )
        violations += b.upper < ATOM_CE
    assert violations <= allowed_violations(reps, delta), violations


def test_average_over_ties_against_loop():
    rng = np.random.default_rng(0)
    s = np.sort(rng.integers(0, 6, 40) / 5)
    v = rng.random(40)
    got = average_over_ties(s, v)
    for value in np.unique(s):
        block = s == value
        np.testing.assert_allclose(got[block], v[block].mean(), rtol=1e-15)
    assert average_over_ties(s[:1], v[:1])[0] == v[0]


# ---------------------------------------------------------------------------
# One narrow cluster of scores, constant η = 1/2: the realised fit matters
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_streaming_nw_bounds_the_realised_fit():
    # η = 1/2 everywhere (every smoothness assumption holds) and every score in
    # one grid cell: each validation window is the whole training part, so
    # the surrogate's error is the realised |mean(y_T) - 1/2| for every score.
    # It exceeds its expected size (what the smoother term bounds) a third of
    # the time; the certificate must bound the realised value.
    n, reps, delta, h = 200_000, 20, 0.05, 2.0**-6
    a = 0.02 - 0.02 % 2.0**-24  # a grid point
    violations = 0
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        s = 0.5 + a + rng.integers(0, 16, n) * 2.0**-24
        y = rng.integers(0, 2, n)
        sb = StreamingCalibrationBound(
            perturbation_scale=h, delta=delta, random_state=seed
        )
        b = sb.partial_fit(y, s).partial_validate(s).result(return_details=True)
        fold = stream_folds(0, n, sb.seed_, 5)
        for k, info in enumerate(b.per_fold):
            realised = abs(y[fold != k].mean() - 0.5)
            t = info["terms"]
            # What the fold bound adds to E|η̂ - s| for E|η̂ - η|.
            term_ii = info["upper"] - t["validation_error"] - t["validation_deviation"]
            violations += realised > term_ii
    # Each fold's term holds with probability 1 - 2 delta / 15; by Markov's
    # inequality more than 10 failures among the 100 folds has probability
    # below 100 * (2 delta / 15) / 11 < 0.07 for a valid certificate.
    assert violations <= 10, violations


# ---------------------------------------------------------------------------
# Influence constants against brute force
# ---------------------------------------------------------------------------


def test_window_influence_against_brute_force():
    rng = np.random.default_rng(1)
    s_sorted = np.sort(rng.random(300))
    keep = rng.random(300) < 0.7
    sv = rng.random(50)
    hw = 0.05
    train = s_sorted[keep]
    lo = np.searchsorted(s_sorted, sv - hw, side="left")
    hi = np.searchsorted(s_sorted, sv + hw, side="right")
    count = np.array([np.sum(keep[a:b]) for a, b in zip(lo, hi, strict=True)])
    c = np.zeros(train.size)
    for t in sv:
        inside = np.abs(train - t) <= hw
        if inside.any():
            c[inside] += 1.0 / (inside.sum() * sv.size)
    got = window_influence(lo, hi, count, s_sorted.size, excluded=np.flatnonzero(~keep))
    assert got == pytest.approx(np.sum(c**2), rel=1e-12)


def test_cell_window_influence_against_brute_force():
    rng = np.random.default_rng(2)
    M, r = 64, 3
    cell_t = rng.integers(10, 40, 500)
    cell_v = rng.integers(0, 64, 80)
    train_counts = np.bincount(cell_t, minlength=M).astype(float)
    valid_counts = np.bincount(cell_v, minlength=M).astype(float)
    window = np.array([train_counts[max(0, c - r) : c + r + 1].sum() for c in range(M)])
    c = np.zeros(cell_t.size)
    for cv in cell_v:
        inside = np.abs(cell_t - cv) <= r
        if inside.any():
            c[inside] += 1.0 / (inside.sum() * cell_v.size)
    got = cell_window_influence(train_counts, valid_counts, window, r)
    assert got == pytest.approx(np.sum(c**2), rel=1e-12)


# ---------------------------------------------------------------------------
# Small samples, the grid and the result
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [30, 1000])
def test_bound_never_above_one_and_flags_vacuous(n):
    rng = np.random.default_rng(0)
    s = rng.random(n)
    y = (rng.random(n) < s).astype(int)
    b = calibration_error_bound(y, s, method="tv", random_state=0, return_details=True)
    assert 0.0 <= b.upper <= 1.0
    assert all(f["upper"] <= 1.0 for f in b.per_fold)
    assert b.vacuous == (b.upper == 1.0)
    if n == 30:
        assert b.vacuous and "vacuous" in repr(b)


def test_upper_is_smallest_fold_bound():
    rng = np.random.default_rng(5)
    s = rng.random(20_000)
    y = (rng.random(20_000) < s**1.5).astype(int)
    b = calibration_error_bound(y, s, method="tv", random_state=0, return_details=True)
    uppers = [f["upper"] for f in b.per_fold]
    assert b.upper == min(uppers) < np.mean(uppers)
    assert b.lower == max(0.0, max(f["lower"] for f in b.per_fold))
    assert b.upper == pytest.approx(sum(b.terms.values()), rel=1e-12)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(method="nw", perturbation_scale=2.0**-6),
        dict(method="lipschitz", perturbation_scale=2.0**-6),
    ],
)
def test_scores_off_the_perturbation_grid_are_refused(kwargs):
    rng = np.random.default_rng(0)
    s = rng.random(2000)
    y = (rng.random(2000) < s).astype(int)
    with pytest.raises(ValueError, match=r"y_proba.*not perturbed.*perturb_proba"):
        calibration_error_bound(y, s, **kwargs, return_details=True)
    # A Lipschitz constant given by the user is an assumption on the scores
    # as they are: no grid needed.
    calibration_error_bound(
        y, s, method="lipschitz", lipschitz=4.0, return_details=True
    )


def test_streaming_nw_refuses_scores_off_the_grid():
    s = np.linspace(0.1, 0.9, 100) + 1e-9
    sb = StreamingCalibrationBound(perturbation_scale=2.0**-6)
    with pytest.raises(ValueError, match="y_proba.*not perturbed"):
        sb.partial_fit(np.arange(100) % 2, s)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("with_positions", [False, True])
def test_window_prefix_sums_are_sequential_sums(monkeypatch, full, with_positions):
    # Prefix sums kept at every point (small samples) or carried on from every
    # 16th (large ones) must both be the sequential sums of np.cumsum, bit for
    # bit: the certificate reads differences of them deep inside long sums.
    from skcalib._backend import window as wd

    if not full:
        monkeypatch.setattr(wd, "_FULL_PREFIX", 0)
    rng = np.random.default_rng(8)
    n = 1000
    s = np.sort(np.round(rng.beta(0.3, 0.3, n), 3))  # ties, 0 and 1
    y = (rng.uniform(size=n) < s) * 1.0
    positions = np.flatnonzero(rng.uniform(size=n) < 0.4) if with_positions else None
    sums = wd.WindowSums(s, y, positions)
    assert sums.stride == (1 if full else 16)
    idx = np.arange(n + 1) if positions is None else np.arange(positions.size + 1)
    got = sums.at(idx)
    pos = np.arange(n) if positions is None else positions
    for key, v in wd._window_values(s[pos], y[pos]).items():
        want = np.concatenate([[0.0], np.cumsum(v)])
        np.testing.assert_array_equal(got[key], want, err_msg=key)
