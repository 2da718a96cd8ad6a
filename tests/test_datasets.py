"""Synthetic problems: exact calibration error and calibration function."""

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit, logit

from skcalib.datasets import (
    PROBLEMS,
    calibration_function,
    make_calibration_problem,
    score_density,
    true_calibration_error,
)

# Calibration functions written out independently of the library.
ETA = {
    "calibrated": lambda f: f,
    "overconfident": lambda f: expit(0.5 * logit(f)),
    "u2": lambda f: f * f,
    "step": lambda f: 0.2 if f < 0.5 else 0.8,
    "wiggle": lambda f: min(1.0, max(0.0, f + 0.15 * np.sin(30 * np.pi * f))),
}


def sech(x):
    return 2.0 * np.exp(-abs(x)) / (1.0 + np.exp(-2.0 * abs(x)))


def kernel(s, f, h):
    # Normaliser in closed form: h (gd((1 - f)/h) + gd(f/h)), gd = 2 atan(tanh(x/2)).
    gd = lambda x: 2 * np.arctan(np.tanh(x / 2))  # noqa: E731
    return sech((s - f) / h) / (h * (gd((1 - f) / h) + gd(f / h)))


@pytest.mark.parametrize(
    "problem, expected",
    [("calibrated", 0.0), ("u2", 1.0 / 6.0), ("step", 0.13)],
)
def test_unperturbed_closed_forms(problem, expected):
    assert true_calibration_error(problem) == pytest.approx(expected, abs=1e-8)


@pytest.mark.parametrize("problem", ["overconfident", "wiggle"])
def test_unperturbed_against_quad(problem):
    eta = ETA[problem]
    ref, _ = integrate.quad(lambda f: abs(f - eta(f)), 0, 1, limit=2000)
    assert true_calibration_error(problem) == pytest.approx(ref, abs=1e-7)


def perturbed_eta_quad(s, problem, h):
    pts = [p for p in (s, 0.5) if 0 < p < 1]
    lo, hi = max(0.0, s - 40 * h), min(1.0, s + 40 * h)
    pts = [p for p in pts if lo < p < hi] or None
    den, _ = integrate.quad(lambda f: kernel(s, f, h), lo, hi, points=pts, limit=2000)
    num, _ = integrate.quad(
        lambda f: kernel(s, f, h) * ETA[problem](f), lo, hi, points=pts, limit=2000
    )
    return num / den, den


# quad reports round-off on the kinks of "wiggle"; the tolerance below is far
# above that level.
@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("problem", ["u2", "step", "wiggle"])
def test_perturbed_function_and_density_against_quad(problem):
    h = 2.0**-4
    for s in [0.0, 0.01, 0.5, 0.77, 1.0]:
        eta_ref, q_ref = perturbed_eta_quad(s, problem, h)
        eta = calibration_function([s], problem=problem, perturbation_scale=h)[0]
        q = score_density([s], problem=problem, perturbation_scale=h)[0]
        assert eta == pytest.approx(eta_ref, abs=2e-5)
        assert q == pytest.approx(q_ref, abs=2e-5)


def test_perturbed_error_against_nested_quad():
    h, problem = 2.0**-4, "u2"

    def integrand(s):
        eta, q = perturbed_eta_quad(s, problem, h)
        return q * abs(s - eta)

    ref, _ = integrate.quad(integrand, 0, 1, limit=200, epsabs=1e-10)
    got = true_calibration_error(problem, perturbation_scale=h)
    assert got == pytest.approx(ref, abs=1e-7)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_samples_follow_the_calibration_function(problem):
    # Residuals y - η(s) have mean zero and are uncorrelated with any function
    # of s; 5-sigma tolerance on two test functions.
    h = 2.0**-4
    d = make_calibration_problem(
        50_000, problem=problem, perturbation_scale=h, random_state=1
    )
    eta = calibration_function(d.y_proba, problem=problem, perturbation_scale=h)
    r = d.y_true - eta
    for t in (np.ones_like(eta), np.sin(7 * d.y_proba)):
        assert abs(np.mean(r * t)) < 5 * np.std(r * t) / np.sqrt(r.size)
    # CE by Monte Carlo with the exact η.
    mc = np.abs(d.y_proba - eta)
    assert abs(mc.mean() - d.calibration_error) < 5 * mc.std() / np.sqrt(mc.size)


def test_bunch_contents_and_reproducibility():
    a = make_calibration_problem(500, problem="step", random_state=3)
    b = make_calibration_problem(500, problem="step", random_state=3)
    np.testing.assert_array_equal(a.y_proba, b.y_proba)
    np.testing.assert_array_equal(a.y_true, b.y_true)
    np.testing.assert_array_equal(a.y_proba, a.scores_orig)
    assert set(np.unique(a.y_true)) <= {0, 1}
    assert a.total_variation == pytest.approx(0.6)
    assert a.perturbation_scale is None and a.problem == "step"
    c = make_calibration_problem(
        500, problem="step", perturbation_scale=0.1, random_state=3
    )
    assert np.all((c.y_proba >= 0) & (c.y_proba <= 1))
    assert not np.array_equal(c.y_proba, c.scores_orig)


def test_wiggle_variation():
    f = np.linspace(0, 1, 200001)
    ref = np.abs(np.diff(np.clip(f + 0.15 * np.sin(30 * np.pi * f), 0, 1))).sum()
    d = make_calibration_problem(10, problem="wiggle", random_state=0)
    assert d.total_variation == pytest.approx(ref, rel=1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="problem"):
        make_calibration_problem(10, problem="nope")
    with pytest.raises(ValueError, match="perturbation_scale"):
        make_calibration_problem(10, perturbation_scale=-1.0)
    with pytest.raises(TypeError, match="n_samples"):
        make_calibration_problem(10.5)
    with pytest.raises(ValueError, match="n_samples"):
        make_calibration_problem(0)
    with pytest.raises(ValueError, match="problem"):
        true_calibration_error("x")
    # Below 2**-16 the quadrature would need millions of panels (8 GiB at
    # 1e-8); the error gives the range.
    with pytest.raises(ValueError, match=r"perturbation_scale.*\[2\*\*-16, 1\]"):
        make_calibration_problem(10, perturbation_scale=1e-8)
    # More rows than memory can hold, refused before allocating.
    with pytest.raises(ValueError, match="n_samples"):
        make_calibration_problem(10**12)
    for bad in (["u2"], {}):
        with pytest.raises((ValueError, TypeError), match="problem"):
            make_calibration_problem(10, problem=bad)
    # Scores outside [0, 1] or NaN have no calibration function value.
    for bad in ([1.5], [np.nan]):
        for h in (None, 0.1):
            with pytest.raises(ValueError, match="s must hold scores"):
                calibration_function(bad, perturbation_scale=h)
    with pytest.raises(ValueError, match="NaN"):
        score_density([np.nan])


@pytest.mark.parametrize("h", [2.0**-16, 2.0**-6, 0.5])
def test_perturbed_scores_on_the_grid(h):
    # Reported perturbed scores are on G = {k / 2**24} like every perturbed
    # score (the original scores f are not perturbed and stay as drawn).
    d = make_calibration_problem(3000, perturbation_scale=h, random_state=0)
    k = d.y_proba * 2.0**24
    assert np.all(k == np.floor(k)) and np.all((k >= 0) & (k <= 2**24))
    assert not np.all(d.scores_orig * 2.0**24 == np.floor(d.scores_orig * 2.0**24))
    # Within the reach of the kernel of its original score.
    assert np.abs(d.y_proba - d.scores_orig).max() < 45 * h + 2.0**-25
