"""The LOWESS smoother against its definition written directly (R's own
lowess is compared through calibration_summary in test_summary_r)."""

import numpy as np
import pytest
from _references import lowess_at_every_point

from skcalib._backend.loess import lowess


@pytest.mark.parametrize("seed", range(4))
def test_lowess_matches_its_definition(seed):
    # Integer weights against the rows they repeat, ties, tiny and large
    # neighbourhoods; delta = 0 fits at every point.
    rng = np.random.default_rng(seed)
    n = [7, 40, 150, 300][seed]
    x = np.round(rng.beta(0.5, 2, n), [3, 2, 1, 6][seed])
    y = (rng.uniform(size=n) < 0.4).astype(float)
    w = rng.integers(1, 4, n).astype(float)
    got = lowess(x, y, w, delta=0.0)
    ref = lowess_at_every_point(
        np.repeat(x, w.astype(int)), np.repeat(y, w.astype(int))
    )
    assert got == pytest.approx(ref[np.cumsum(w.astype(int)) - 1], abs=1e-12)


def test_lowess_interpolates_within_delta():
    # Points within delta of an evaluated point take the line between the
    # evaluated fits on either side.
    x = np.r_[0.0, 0.001, 0.002, 0.5, 1.0]
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0])
    w = np.ones(5)
    full = lowess(x, y, w, delta=0.0)
    got = lowess(x, y, w, delta=0.01)
    assert got[[0, 2, 3, 4]] == pytest.approx(full[[0, 2, 3, 4]], abs=1e-15)
    assert got[1] == pytest.approx((full[0] + full[2]) / 2, abs=1e-15)


def test_one_distinct_x_gives_the_mean():
    x = np.full(5, 0.3)
    y = np.array([1.0, 0.0, 0.0, 1.0, 0.0])
    w = np.array([1.0, 2.0, 1.0, 3.0, 1.0])
    assert lowess(x, y, w) == pytest.approx(np.full(5, 4 / 8))


def test_a_tie_holding_the_neighbourhood_averages_it():
    # 8 of 10 rows at 0.2: the neighbourhood of 0.2 (6 rows) has radius 0,
    # and the fit there is the mean label of all 8.
    x = np.r_[np.full(8, 0.2), 0.5, 0.9]
    y = np.r_[1, 0, 0, 0, 1, 0, 0, 0, 1, 1].astype(float)
    got = lowess(x, y, np.ones(10))
    assert got[:8] == pytest.approx(np.full(8, 2 / 8), abs=1e-15)
    assert got == pytest.approx(lowess_at_every_point(x, y), abs=1e-12)


def test_scaling_x_scales_nothing_but_x():
    rng = np.random.default_rng(4)
    x = rng.uniform(size=200)
    y = (rng.uniform(size=200) < x).astype(float)
    w = np.ones(200)
    assert lowess(1e-6 * x, y, w) == pytest.approx(lowess(x, y, w), abs=1e-9)
