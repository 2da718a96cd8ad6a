"""The batched SmoothECE solver against the scalar one and a brute force."""

import numpy as np
import pytest
from _references import reflected_kernel

from skcalib._backend import smece as _sm
from skcalib._backend.grid import FINE_M, bin_positions
from skcalib._backend.smece_batch import ResidualColumns, bin_residual_columns


def _samples(kind, n, n_cols, seed):
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        s = rng.random(n)
    elif kind == "rare":
        s = rng.beta(0.5, 20, n)
    else:
        s = rng.integers(0, 10, n) / 9
    ys = [
        (rng.random(n) < np.clip(s + 0.05 * (b % 3) * np.sin(6 * s), 0, 1)).astype(
            float
        )
        for b in range(n_cols)
    ]
    return s, ys


@pytest.mark.parametrize("metric", ["l1", "logit"])
@pytest.mark.parametrize("kind", ["uniform", "rare", "ten levels"])
@pytest.mark.parametrize("n, weighted", [(60, False), (800, True), (5000, False)])
def test_fixed_points_match_the_scalar_solver(metric, kind, n, weighted):
    geometry = _sm.GridGeometry(metric)
    s, ys = _samples(kind, n, 6, seed=n)
    w = np.random.default_rng(1).integers(1, 4, n).astype(float) if weighted else None
    ref = np.array([_sm.fit_value(y, s, w, geometry)[0] for y in ys])
    M = min(FINE_M, 2 * geometry.grid_size(0.8 * ref.min(), FINE_M))
    resid = np.column_stack(
        [_sm.residual_statistics_of(y, s, w, geometry, M)[0] for y in ys]
    )
    total = np.full(len(ys), n if w is None else w.sum())
    got = ResidualColumns(resid, total, geometry.length).solve_sigma(np.median(ref))
    # both are within 1e-6 of their roots; their grids differ (the scalar
    # solver's is coarser), which moves the roots by a few 1e-6
    np.testing.assert_allclose(got, ref, atol=1e-5)


def test_smece_at_matches_a_brute_force_kernel_sum():
    # Direct reflected-kernel sums at the exact scores on a 20000-point grid.
    rng = np.random.default_rng(3)
    n = 400
    s = rng.random(n)
    y = (rng.random(n) < s**1.5).astype(float)
    t = np.linspace(0, 1, 20001)
    M = 4096
    resid, total = _sm.residual_statistics_of(y, s, None, _sm.GridGeometry("l1"), M)
    cols = ResidualColumns(resid[:, None].repeat(3, axis=1), np.full(3, total))
    sigmas = np.array([0.02, 0.05, 0.2])
    got = cols.smece_at(sigmas)
    for sig, value in zip(sigmas, got, strict=True):
        r = reflected_kernel(t, s, sig) @ (y - s) / n
        assert value == pytest.approx(np.trapezoid(np.abs(r), t), abs=1e-5)


def test_binning_of_columns_equals_the_grid_binning():
    rng = np.random.default_rng(4)
    n, M = 300, 512
    s = rng.random((3, n))
    r = rng.normal(size=(3, n))
    cell, theta = bin_positions(s, M)
    got = bin_residual_columns(cell, theta, r, M)
    for j in range(3):
        ref = np.zeros(M + 1)
        np.add.at(ref, cell[j], r[j] * (1 - theta[j]))
        np.add.at(ref, cell[j] + 1, r[j] * theta[j])
        np.testing.assert_allclose(got[:, j], ref, atol=1e-12)


def test_a_calibrated_column_and_a_wild_guess_still_converge():
    # y == s gives a zero residual (smECE 0 at every sigma): the column goes
    # to the bottom of the range; a guess far from the root is widened.
    rng = np.random.default_rng(5)
    s = rng.random(1000)
    y = (rng.random(1000) < s).astype(float)
    M = 4096
    geometry = _sm.GridGeometry("l1")
    resid = np.column_stack(
        [
            _sm.residual_statistics_of(y, s, None, geometry, M)[0],
            np.zeros(M + 1),
        ]
    )
    cols = ResidualColumns(resid, np.full(2, 1000.0))
    ref = _sm.fit_value(y, s, None, geometry)[0]
    for guess in (1e-4, 0.5):
        got = cols.solve_sigma(guess)
        assert got[0] == pytest.approx(ref, abs=4e-6)
        assert got[1] <= 2 * geometry.finest_sigma
