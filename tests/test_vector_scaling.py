"""Vector scaling, the multiclass base with one slope and one intercept per
class: its fit against a generic optimiser of the same objective, and its
gain where the truth has class-specific biases."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from skcalib import KernelRecalibrator
from skcalib._backend.recalibration import scaling as logit_scaling


def _problem(n, rng, a, b):
    """Log-probabilities of a model and labels drawn from softmax(a L + b)."""
    K = a.shape[0]
    L = log_softmax(2.0 * rng.standard_normal((n, K)), axis=1)
    truth = softmax(a * L + b, axis=1)
    u = rng.uniform(size=(n, 1))
    y = (u > np.cumsum(truth, axis=1)).sum(axis=1)
    return L, y, truth


def test_fit_matches_a_generic_optimiser_of_the_same_objective():
    rng = np.random.default_rng(0)
    a, b = np.array([0.6, 1.3, 0.9, 0.7]), np.array([0.5, -0.3, 0.1, -0.3])
    L, y, _ = _problem(1500, rng, a, b)
    w = rng.uniform(0.5, 2.0, size=y.shape[0])
    K = a.shape[0]
    rows = np.arange(y.shape[0])

    def objective(t):
        M = np.exp(t[:K]) * L + t[K:]
        nll = w @ (np.logaddexp.reduce(M, axis=1) - M[rows, y])
        penalty = (
            np.sum(np.maximum(t[:K], 0.0) ** 2) / logit_scaling.LOG_SCALE_PRIOR_SD**2
        )
        return nll + 0.5 * (
            penalty + np.sum(t[K:] ** 2) / logit_scaling.INTERCEPT_PRIOR_SD**2
        )

    ref = minimize(objective, np.zeros(2 * K), method="BFGS", options={"gtol": 1e-8})
    coef = logit_scaling.fit_vector_scaling(L, y, w)
    theta = np.r_[np.log(coef[:, 0]), coef[:, 1]]
    assert objective(theta) <= ref.fun + 1e-9
    np.testing.assert_allclose(coef[:, 0], np.exp(ref.x[:K]), rtol=1e-4)
    # The softmax does not see a common shift of the intercepts: the prior
    # alone sets it, to intercepts that sum to zero.
    assert abs(coef[:, 1].sum()) < 1e-8
    b_ref = ref.x[K:] - ref.x[K:].mean()
    np.testing.assert_allclose(coef[:, 1], b_ref, atol=1e-4)
    # And it recovers the truth it was drawn from.
    np.testing.assert_allclose(coef[:, 0], a, rtol=0.15)


def _excess_log_loss(model, L_test, truth):
    """Exact excess log-loss E KL(truth || q) over the test rows."""
    Q = np.clip(model.transform(np.exp(L_test)), 1e-300, None)
    return float(np.mean(np.sum(truth * (np.log(truth) - np.log(Q)), axis=1)))


def test_vector_scaling_fits_class_biases_the_other_bases_miss():
    # Class-specific biases are what one temperature cannot represent; the
    # one-vs-rest bases can, but with the renormalisation in between. Exact
    # excess log-loss against the known truth, over seeds.
    a, b = np.array([1.0, 1.0, 1.0, 1.0]), np.array([1.0, -0.8, 0.4, -0.6])
    gains = []
    for seed in range(2):
        rng = np.random.default_rng(seed)
        L, y, _ = _problem(1000, rng, a, b)
        L_test, _, truth = _problem(20000, rng, a, b)
        P = np.exp(L)
        vector = KernelRecalibrator(base="vector").fit(P, y)
        temp = KernelRecalibrator(base="temperature").fit(P, y)
        sigm = KernelRecalibrator(base="sigmoid").fit(P, y)
        best_other = min(_excess_log_loss(m, L_test, truth) for m in (temp, sigm))
        gains.append(best_other / _excess_log_loss(vector, L_test, truth))
        assert vector.base_ == "vector"
    assert min(gains) > 2.0, gains


def test_vector_base_needs_more_than_two_classes():
    P = np.column_stack([np.linspace(0.1, 0.9, 20), np.linspace(0.9, 0.1, 20)])
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match="base='vector'.*beta"):
        KernelRecalibrator(base="vector").fit(P, y)
