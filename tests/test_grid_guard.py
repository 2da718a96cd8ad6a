"""The NW / Lipschitz bounds' guard against unperturbed scores on the grid.

Perturbed scores lie on ``G = {k / 2**24}``; grid membership is necessary,
not sufficient. The count check refuses samples with fewer distinct grid
values than perturbed scores take except with probability 1e-9.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_less

from skcalib import perturb_proba
from skcalib._backend.score_grid import (
    GRID_STEP,
    max_cell_mass,
    min_distinct_perturbed,
    off_grid,
)
from skcalib._validation import check_perturbed_spread
from skcalib.metrics import calibration_error_bound


def _gd(x):
    return 2.0 * np.arctan(np.tanh(x / 2.0))


def _sech_cdf(s, s0, h, low, high):
    """CDF of sech((. - s0) / h) truncated to [low, high] (gd is its
    antiderivative), written independently of the library."""
    lo = _gd((low - s0) / h)
    return (_gd((np.clip(s, low, high) - s0) / h) - lo) / (_gd((high - s0) / h) - lo)


def _two_atoms(n, seed=0):
    """Unperturbed scores on the grid: two atoms 2**-20 apart with very
    different calibration (true CE 0.40)."""
    rng = np.random.default_rng(seed)
    a = 0.5
    s = np.where(rng.random(n) < 0.5, a, a + 2.0**-20)
    eta = np.where(s == a, 0.1, 0.9)
    y = (rng.random(n) < eta).astype(int)
    return y, s, float(np.mean(np.abs(eta - s)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "nw", "perturbation_scale": 2**-6},
        {"method": "lipschitz", "perturbation_scale": 2**-6},
    ],
)
def test_two_grid_atoms_are_refused(kwargs):
    # Before the count check this was certified at 0.035 (true CE 0.40).
    y, s, true_ce = _two_atoms(20000)
    assert true_ce > 0.39
    with pytest.raises(ValueError, match=r"y_proba has only 2 distinct values"):
        calibration_error_bound(y, s, random_state=0, **kwargs)
    with pytest.raises(ValueError, match="necessary, not sufficient"):
        calibration_error_bound(y, s, random_state=0, **kwargs)


def test_method_tv_still_takes_the_atoms():
    # The check belongs to the perturbation-based methods only.
    y, s, true_ce = _two_atoms(2000)
    assert calibration_error_bound(y, s, method="tv", random_state=0) >= true_ce


def test_off_grid_message_says_necessary_not_sufficient():
    with pytest.raises(ValueError, match="necessary, not sufficient"):
        calibration_error_bound(
            [0, 1] * 50,
            np.linspace(0.1, 0.9, 100),
            method="nw",
            perturbation_scale=2**-6,
        )


@pytest.mark.parametrize("h", [1.0, 2**-2, 2**-6, 2**-12, 2**-20])
@pytest.mark.parametrize("s0", [0.0, 0.3, 0.5, 1.0])
def test_cell_mass_bound_holds_for_the_sech_law(h, s0):
    # Exact cell masses of the truncated sech law on [0, 1] around s0, at
    # the cells near the mode, from the closed-form CDF.
    k = np.round(s0 / GRID_STEP) + np.arange(-3, 4)
    k = k[(k >= 0) & (k <= 1 / GRID_STEP)]
    upper = np.minimum((k + 0.5) * GRID_STEP, 1.0)
    lower = np.maximum((k - 0.5) * GRID_STEP, 0.0)
    mass = _sech_cdf(upper, s0, h, 0, 1) - _sech_cdf(lower, s0, h, 0, 1)
    assert mass.max() <= max_cell_mass(h)
    # and the bound is not loose by more than the factors of its derivation
    if h >= 2**-12 and s0 in (0.0, 1.0):
        assert mass.max() >= max_cell_mass(h) / 3.5


@pytest.mark.parametrize("n_classes", [3, 10])
@pytest.mark.parametrize("h", [2**-6, 2**-16])
def test_cell_mass_bound_holds_at_the_lowest_confidence(n_classes, h):
    # A top-label confidence is drawn on [1/K, 1] and anything at or below
    # the lowest grid point above 1/K goes to that point.
    lowest = (2**24 // n_classes + 1) * GRID_STEP
    c0 = 1.0 / n_classes
    mass = _sech_cdf(lowest + GRID_STEP / 2, c0, h, c0, 1.0)
    assert mass <= max_cell_mass(h)


def test_distinct_count_tail_on_the_extremal_law():
    # The threshold's derivation, checked where it is tightest: the law
    # uniform on 1/q cells minimises E[D]; at a false-alarm level one can
    # measure (5 %), the count falls below the threshold at most that often.
    h = 2**-16
    q = max_cell_mass(h)
    m = int(round(1 / q))
    rng = np.random.default_rng(0)
    for n in (30, 200, 1000):
        threshold = min_distinct_perturbed(n, h, false_alarm=0.05)
        draws = rng.integers(0, m, size=(4000, n))
        draws.sort(axis=1)
        distinct = 1 + np.count_nonzero(np.diff(draws, axis=1), axis=1)
        rate = np.mean(distinct < threshold)
        assert rate <= 0.05
        # Exact E[D] of that law is the mu of the derivation.
        mu = m * (1 - (1 - 1 / m) ** n)
        assert abs(distinct.mean() - mu) < 4 * distinct.std() / np.sqrt(4000)


def _perturbed_sorted(base, h, seed):
    out = perturb_proba(base, scale=h, random_state=seed)
    if out.ndim == 2:
        out = out.max(axis=1)
    return np.sort(out)


@pytest.mark.parametrize("h", [2**-2, 2**-6, 2**-10, 2**-16])
def test_perturbed_scores_are_never_refused(h):
    # Adversarial base models: constant scores (also at 0 and 1, where the
    # kernel is cut in half), two atoms, ten levels, uniform; and top-label
    # confidences of an even split, which sit on the lowest grid point.
    rng = np.random.default_rng(1)
    margins = []
    for n in (50, 1000, 20000):
        bases = {
            "constant 0.5": np.full(n, 0.5),
            "constant 0": np.zeros(n),
            "constant 1": np.ones(n),
            "two atoms": np.where(rng.random(n) < 0.5, 0.3, 0.3 + 2.0**-20),
            "ten levels": rng.integers(0, 10, n) / 9,
            "uniform": rng.random(n),
            "K=3 even split": np.full((n, 3), 1 / 3),
            "K=10 even split": np.full((n, 10), 0.1),
        }
        for base in bases.values():
            for seed in range(3):
                s = _perturbed_sorted(base, h, seed)
                assert off_grid(s) == -1
                check_perturbed_spread(s, h, "nw")  # must not raise
                distinct = 1 + np.count_nonzero(np.diff(s))
                need = min_distinct_perturbed(n, h)
                margins.append((distinct - need) / np.sqrt(max(need, 1.0)))
    # Slack: the threshold is 6.4 sqrt(mu) below mu (1e-9), and the counts
    # stay above it by more than 5 sqrt(threshold) (7.2 at the tightest).
    assert_array_less(5.0, np.array(margins))


def test_perturbed_scores_pass_the_bound():
    rng = np.random.default_rng(2)
    y = rng.integers(0, 2, 5000)
    s = perturb_proba(np.full(5000, 0.5), scale=2**-6, random_state=0)
    upper = calibration_error_bound(
        y, s, method="nw", perturbation_scale=2**-6, random_state=0
    )
    assert 0 < upper <= 1
