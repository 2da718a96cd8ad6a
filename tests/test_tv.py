"""Exact 1-D total-variation denoising against an independent reference."""

import numpy as np
import pytest
from scipy.optimize import lsq_linear

from skcalib._backend import tv
from skcalib._backend.tv import total_variation, tv_denoise


def reference_tv(y, lam):
    """Solve the dual box-constrained least squares to machine precision.

    min_v 1/2 ||y - v||² + lam ||D v||₁ has the dual
    min_z ||y - Dᵀ z||² subject to |z| <= lam, with v = y - Dᵀ z; BVLS is an
    exact active-set solver for it.
    """
    n = y.shape[0]
    if n == 1:
        return y.copy()
    D = np.diff(np.eye(n), axis=0)  # (n - 1, n), (D v)_i = v_{i+1} - v_i
    res = lsq_linear(D.T, y, bounds=(-lam, lam), method="bvls", tol=1e-15)
    return y - D.T @ res.x


def objective(y, v, lam):
    return 0.5 * np.sum((y - v) ** 2) + lam * np.abs(np.diff(v)).sum()


def check_kkt(y, v, lam, tol):
    # Optimality: z = -cumsum(y - v) ends at 0, |z| <= lam, and
    # z_i = lam sign(v_{i+1} - v_i) where v jumps.
    z = -np.cumsum(y - v)
    assert abs(z[-1]) < tol
    assert np.all(np.abs(z[:-1]) <= lam + tol)
    d = np.diff(v)
    jump = np.abs(d) > 1e-9
    np.testing.assert_allclose(z[:-1][jump], lam * np.sign(d[jump]), atol=tol)


def random_cases(seed, count):
    rng = np.random.default_rng(seed)
    for i in range(count):
        n = int(rng.integers(1, 40))
        kind = i % 4
        if kind == 0:
            y = rng.normal(size=n)
        elif kind == 1:  # binary labels: many ties
            y = (rng.random(n) < 0.5).astype(float)
        elif kind == 2:  # a few repeated levels
            y = rng.integers(0, 3, n).astype(float)
        else:  # piecewise constant plus noise
            y = np.repeat(rng.normal(size=4), -(-n // 4))[:n] + 0.1 * rng.normal(size=n)
        lam = float(rng.choice([0.01, 0.3, 1.0, 5.0, 50.0]))
        yield y, lam


@pytest.mark.parametrize(
    "use_numba", [None, False, pytest.param(True, id="numba")], ids=str
)
def test_matches_dual_reference(use_numba):
    if use_numba and not tv.HAVE_NUMBA:
        pytest.skip("numba not installed")
    for y, lam in random_cases(0, 300):
        v = tv_denoise(y, lam, use_numba=use_numba)
        ref = reference_tv(y, lam)
        np.testing.assert_allclose(v, ref, atol=1e-8)
        assert objective(y, v, lam) <= objective(y, ref, lam) + 1e-12
        check_kkt(y, v, lam, 1e-9)


def test_python_and_numba_agree_on_long_signals():
    if not tv.HAVE_NUMBA:
        pytest.skip("numba not installed")
    rng = np.random.default_rng(3)
    s = np.sort(rng.random(20000))
    y = (rng.random(20000) < s).astype(float)
    for lam in [0.5, 20.0, 300.0]:
        a = tv_denoise(y, lam, use_numba=False)
        b = tv_denoise(y, lam, use_numba=True)
        np.testing.assert_allclose(a, b, atol=1e-10)
        check_kkt(y, a, lam, 1e-6)


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64, 4096])
def test_taut_string_blocks_match_condat_and_kkt(block):
    # Long label sequences with the penalties of the certificate: the string
    # crosses many whole blocks between contacts, which the hulls summarise.
    rng = np.random.default_rng(block)
    for n, shape in [(3000, "linear"), (5000, "wiggle"), (4000, "step"), (257, "flat")]:
        s = np.sort(rng.random(n))
        eta = {
            "linear": s,
            "wiggle": 0.5 + 0.4 * np.sin(12 * s),
            "step": (s > 0.5) * 0.8 + 0.1,
            "flat": np.full(n, 0.3),
        }[shape]
        y = (rng.random(n) < eta).astype(float)
        for lam in [0.7, 5.0, np.sqrt(n * np.log(4 * n / 1e-3) / 8), 10.0 * n]:
            v = tv._dense(*tv._taut_string(y, lam, block=block), n)
            ref = tv_denoise(y, lam, use_numba=False)
            np.testing.assert_allclose(v, ref, atol=1e-9)
            check_kkt(y, v, lam, 1e-7)


def test_small_cases_closed_form():
    np.testing.assert_allclose(tv_denoise(np.array([0.7]), 3.0), [0.7], atol=1e-15)
    # n = 2: the two values move towards each other by lam, or merge.
    np.testing.assert_allclose(tv_denoise(np.array([0.0, 1.0]), 0.2), [0.2, 0.8])
    np.testing.assert_allclose(tv_denoise(np.array([1.0, 0.0]), 0.2), [0.8, 0.2])
    np.testing.assert_allclose(tv_denoise(np.array([0.0, 1.0]), 0.5), [0.5, 0.5])
    np.testing.assert_allclose(tv_denoise(np.array([0.0, 1.0]), 7.0), [0.5, 0.5])
    # Constant input, zero penalty, huge penalty.
    np.testing.assert_allclose(tv_denoise(np.full(5, 0.3), 1.0), np.full(5, 0.3))
    y = np.array([0.0, 1.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(tv_denoise(y, 0.0), y)
    np.testing.assert_allclose(tv_denoise(y, 1e6), np.full(5, y.mean()))
    assert tv_denoise(np.array([]), 1.0).shape == (0,)


def test_input_not_modified_and_total_variation():
    y = np.array([0.0, 1.0, 0.0, 1.0])
    y0 = y.copy()
    v = tv_denoise(y, 0.1)
    np.testing.assert_array_equal(y, y0)
    assert total_variation(v) == pytest.approx(np.abs(np.diff(v)).sum())
    assert total_variation([1.0]) == 0.0


@pytest.mark.parametrize("block", [3, 64, 4096])
def test_isotonic_steps_of_counts_match_pava(block):
    # The convex-minorant solver of integer labels against scikit-learn's
    # pool-adjacent-violators, across many blocks and slices of the hull.
    from sklearn.isotonic import isotonic_regression

    rng = np.random.default_rng(block)
    cases = [
        (np.uint8, lambda n: rng.random(n) < np.linspace(0.05, 0.95, n)),
        (bool, lambda n: rng.random(n) < 0.5 + 0.4 * np.sin(np.linspace(0, 9, n))),
        (np.uint8, lambda n: rng.random(n) < 0.01),  # rare positives
        (np.int64, lambda n: np.sort(rng.random(n) < 0.5)[::-1]),  # one pool
        (np.int64, lambda n: rng.integers(0, 3, n)),  # clipped to [0, 1]
    ]
    for n in [1, 2, 5, 300, 3000]:
        for dtype, draw in cases:
            y = draw(n).astype(dtype)
            starts, values = tv._isotonic_steps(y, block=block)
            ref = isotonic_regression(y.astype(float), y_min=0.0, y_max=1.0)
            dense = np.repeat(values, np.diff(np.append(starts, n)))
            np.testing.assert_allclose(dense, ref, rtol=0, atol=1e-13)
            # Maximal pieces: the values rise strictly from one to the next.
            assert starts[0] == 0 and np.all(np.diff(values) > 0)


@pytest.mark.parametrize("labels", [float, np.uint8])
@pytest.mark.parametrize("monotone", [False, True])
def test_fitted_steps_match_dense_fit_averaged_over_ties(monotone, labels):
    # Steps of the fit (the in-memory bound's form) against the dense
    # reference: Condat's sweep, then the mean over each block of tied scores.
    from sklearn.isotonic import isotonic_regression

    from skcalib._backend.certificate import average_over_ties
    from skcalib._backend.concentration import tv_constants

    rng = np.random.default_rng(11)
    for n, levels in [(2, 2), (50, 3), (3000, 40), (5000, 5000), (4000, 7)]:
        s = np.sort(np.round(rng.random(n) * levels) / levels)
        y = (rng.random(n) < 0.2 + 0.6 * s).astype(labels)
        starts, values, tv_fit, _ = tv.fit_tv_steps(s, y, 0.01, monotone=monotone)
        y = y.astype(float)
        if monotone:
            raw = isotonic_regression(y, y_min=0.0, y_max=1.0)
        else:
            raw = tv_denoise(y, tv_constants(n, 0.01)[1], use_numba=False)
        ref = average_over_ties(s, raw)
        dense = np.repeat(values, np.diff(np.append(starts, n)))
        np.testing.assert_allclose(dense, ref, atol=1e-10)
        assert tv_fit == pytest.approx(np.abs(np.diff(ref)).sum(), abs=1e-9)
        q = np.concatenate([s[:: max(1, n // 50)], [-0.1, 1.1, 0.5]])
        np.testing.assert_allclose(
            tv.steps_extension(s, starts, values, q),
            tv.step_extension(s, ref, q),
            atol=1e-10,
        )
