"""The default ECE-KDE bandwidth: the risk grid search refined on the whole
sample, so that it keeps shrinking with n (and the estimate keeps moving
toward the truth) beyond the grid search's 3000-point subsample."""

import warnings

import numpy as np
import pytest

from skcalib._backend.bandwidth import (
    BANDWIDTH_GRID,
    select_kde_bandwidth,
)
from skcalib._backend.smoothing import dirichlet_nw
from skcalib.metrics import kde_calibration_error


def _sample(n, K, temperature, seed):
    """q ~ Dir(1), y ~ Cat(q), f = softmax(log q / T): E[e_y | f] = q."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet(np.ones(K), size=n)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(q, axis=1)).sum(axis=1), K - 1)
    f = np.exp(np.log(q) / temperature)
    f /= f.sum(axis=1, keepdims=True)
    return y, f, q


def _risk(F, y, b):
    """Leave-one-out risk-alignment criterion, written out (greater is
    better): -sum_j (1 - 2 <R_j, f_j> + ||f_j||^2 - ||e_yj - f_j||^2)^2."""
    R = dirichlet_nw(F, y, np.ones(len(y)), None, b, leave_one_out=True).ratio
    E = np.eye(F.shape[1])[y]
    v = 1 - 2 * (R * F).sum(axis=1) + (F * F).sum(axis=1)
    t = ((E - F) ** 2).sum(axis=1)
    return -((v - t) ** 2).sum()


@pytest.mark.parametrize("K", [2, 3, 10])
def test_refined_bandwidth_is_a_local_optimum_of_the_full_criterion(K):
    # n below REFINE_ROWS: the refinement reads every row against every
    # centre, i.e. the full-sample criterion itself.
    y, F, _ = _sample(600, K, 0.6, seed=K)
    b, info = select_kde_bandwidth(F, y, np.ones(600), "risk")
    assert info["refined"] and info["refine_rows"] == 600
    assert b not in BANDWIDTH_GRID
    here = _risk(F, y, b)
    for factor in (1.15, 1 / 1.15):
        assert here >= _risk(F, y, b * factor) - 1e-9 * abs(here)
    # the grid search's value is no better than the refined one
    assert here >= _risk(F, y, info["grid_bandwidth"]) - 1e-9 * abs(here)
    # every evaluation is recorded, and the answer is the best of them
    evaluated = dict(info["evaluations"])
    assert evaluated[b] == max(evaluated.values())


def test_an_end_of_the_grid_is_kept_and_warned_about():
    rng = np.random.default_rng(5)
    s = np.repeat(rng.random(20), 20)  # heavy duplicates: b -> 0 wins
    y = (rng.random(400) < s).astype(int)
    F = np.column_stack([1 - s, s])
    with pytest.warns(UserWarning, match="end of the grid"):
        b, info = select_kde_bandwidth(F, y, np.ones(400), "mle")
    assert b == BANDWIDTH_GRID[0] and not info["refined"]


def test_rows_are_a_fixed_subsample_beyond_refine_rows():
    y, F, _ = _sample(1500, 3, 0.6, seed=7)
    kw = dict(refine_rows=300, max_samples=500)
    a = select_kde_bandwidth(F, y, np.ones(1500), "risk", **kw)
    b = select_kde_bandwidth(F, y, np.ones(1500), "risk", **kw)
    assert a[0] == b[0] and a[1]["refine_rows"] == 300
    # the search starts where the grid's choice on 500 points moves to at
    # 1500 (the rate of a smoother in K - 1 = 2 dimensions)
    assert a[1]["n_used"] == 500


def test_beyond_refine_centres_the_rate_carries_the_bandwidth_to_n():
    # The refinement runs on a subsample of centres; its best bandwidth is
    # moved from 800 to 2400 points by b ~ n^(-2 / (K + 3)) (K = 3).
    y, F, _ = _sample(2400, 3, 0.6, seed=8)
    b, info = select_kde_bandwidth(
        F,
        y,
        np.ones(2400),
        "risk",
        max_samples=400,
        refine_rows=200,
        refine_centres=800,
    )
    assert info["refine_centres"] == 800 and info["refine_rows"] == 200
    evaluated = dict(info["evaluations"])
    best = max(evaluated, key=evaluated.get)
    assert b == pytest.approx(best * (800 / 2400) ** (2 / 6), rel=1e-12)


@pytest.mark.slow
def test_ten_classes_bandwidth_shrinks_and_estimate_moves_toward_truth():
    # Over-confident K = 10 (T = 0.6), truth CE_1 = 0.3216 (Monte Carlo).
    # The L1 plug-in is biased up by its noise (+88 % at n = 500 with the
    # full-sample criterion); the bandwidth must keep shrinking past the
    # grid search's 3000-point subsample, where the grid search alone stops
    # (it gives the same grid value at n = 2000 and 6000).
    _, f_mc, q_mc = _sample(400_000, 10, 0.6, seed=321)
    truth = np.abs(q_mc - f_mc).sum(axis=1).mean()
    assert truth == pytest.approx(0.3216, abs=2e-3)
    bands, errors = [], []
    for n in (500, 2000, 6000):
        y, f, _ = _sample(n, 10, 0.6, seed=n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            res = kde_calibration_error(y, f, return_details=True)
        bands.append(res.bandwidth)
        errors.append(res.value / truth - 1)
    assert bands[0] > bands[1] > bands[2], bands
    assert errors[0] > errors[1] > errors[2] > 0, errors
    assert errors[2] < 0.8 * errors[1], errors
