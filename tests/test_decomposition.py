"""score_decomposition against a brute force written here and model-diagnostics."""

import numpy as np
import pytest
from scipy.optimize import isotonic_regression
from sklearn.exceptions import UndefinedMetricWarning

from skcalib.metrics import score_decomposition


def _problem(n, seed, ties=False):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    if ties:
        p = np.round(p, 1)
    y = (rng.uniform(size=n) < 0.5 + 0.7 * (p - 0.5) ** 1).astype(float)
    return y, p


def _corp_reference(y, p, w, score):
    """CORP with scipy's isotonic regression on the scores' distinct values."""
    u, inv = np.unique(p, return_inverse=True)
    sw = np.bincount(inv, weights=w)
    swy = np.bincount(inv, weights=w * y)
    fit = isotonic_regression(swy / sw, weights=sw).x[inv]

    def s(y, q):
        if score == "brier":
            return (q - y) ** 2
        with np.errstate(divide="ignore", invalid="ignore"):
            v = -(y * np.log(q) + (1 - y) * np.log(1 - q))
        return np.where((q == y), 0.0, v)

    def mean(v):
        return np.sum(w * v) / np.sum(w)

    base = np.full_like(p, mean(y))
    S, R, C = mean(s(y, p)), mean(s(y, fit)), mean(s(y, base))
    return S, S - R, C - R, C


@pytest.mark.parametrize("score", ["brier", "log_loss"])
@pytest.mark.parametrize("ties", [False, True])
def test_against_isotonic_reference(score, ties):
    y, p = _problem(3000, 0, ties)
    w = np.random.default_rng(1).uniform(0.1, 3.0, y.size)
    d = score_decomposition(y, p, score=score, sample_weight=w)
    ref = _corp_reference(y, p, w, score)
    got = (d.score, d.miscalibration, d.discrimination, d.uncertainty)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-13)
    assert d.score == pytest.approx(
        d.miscalibration - d.discrimination + d.uncertainty, abs=1e-14
    )
    assert d.miscalibration >= 0 and d.discrimination >= 0


@pytest.mark.parametrize("scale", [1e-300, 1e-200, 1e200, 1e300])
def test_only_the_ratios_of_the_weights_count(scale):
    # The pooling compares products of two sums of weights: at 1e+-300 they
    # overflowed or underflowed, the pooling stopped and the miscalibration
    # of the log-loss came out 0.16 or 0.07 where it is 0.02.
    y, p = _problem(400, 2)
    w = np.random.default_rng(3).uniform(0.5, 2.0, y.size)
    for score in ("brier", "log_loss"):
        ref = _corp_reference(y, p, w, score)
        d = score_decomposition(y, p, score=score, sample_weight=w * scale)
        got = (d.score, d.miscalibration, d.discrimination, d.uncertainty)
        np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("score", ["brier", "log_loss"])
def test_against_model_diagnostics(score):
    md = pytest.importorskip("model_diagnostics.scoring")
    y, p = _problem(5000, 2, ties=True)
    w = np.random.default_rng(3).uniform(0.1, 3.0, y.size)
    fn = md.SquaredError() if score == "brier" else md.LogLoss()
    df = md.decompose(y, p, weights=w, scoring_function=fn)
    d = score_decomposition(y, p, score=score, sample_weight=w)
    ref = [
        df[c][0] for c in ("score", "miscalibration", "discrimination", "uncertainty")
    ]
    got = [d.score, d.miscalibration, d.discrimination, d.uncertainty]
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)


def test_multiclass_brier_is_the_sum_of_one_vs_rest():
    rng = np.random.default_rng(4)
    P = rng.dirichlet([2, 2, 2], 900)
    Y = (rng.uniform(size=900)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    d = score_decomposition(Y, P)
    parts = [score_decomposition((Y == k).astype(int), P[:, k]) for k in range(3)]
    assert d.miscalibration == pytest.approx(sum(q.miscalibration for q in parts))
    onehot = np.eye(3)[Y]
    assert d.score == pytest.approx(np.mean(np.sum((P - onehot) ** 2, axis=1)))
    with pytest.raises(ValueError, match="log_loss"):
        score_decomposition(Y, P, score="log_loss")


def test_log_loss_of_contradicted_certain_scores_is_infinite():
    y = np.array([0, 1, 1, 0, 1.0])
    p = np.array([0.0, 0.0, 0.7, 0.2, 1.0])
    with pytest.warns(UndefinedMetricWarning, match="infinite: 1 rows") as caught:
        d = score_decomposition(y, p, score="log_loss")
    assert [w.filename for w in caught] == [__file__]
    assert np.isinf(d.score) and np.isinf(d.miscalibration)
    assert np.isfinite(d.discrimination) and np.isfinite(d.uncertainty)
    d = score_decomposition(y, p)  # finite for the Brier score
    assert np.isfinite(d.miscalibration)


def test_calibrated_isotonic_predictions_have_no_miscalibration():
    # Predictions that equal their own isotonic fit: MCB is 0 exactly.
    p = np.array([0.0, 0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 1.0])
    y = np.array([0, 0, 0, 0, 1, 0, 1, 1.0])
    d = score_decomposition(y, p)
    assert d.miscalibration == pytest.approx(0.0, abs=1e-15)
