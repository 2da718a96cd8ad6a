"""kde_calibration_error and binned_calibration_error on array-API input under
scikit-learn's ``array_api_dispatch``: the NumPy numbers and errors, computed
in the input's namespace, returned as Python floats."""

import warnings

import numpy as np
import pytest
import sklearn
from _array_namespaces import FRAMEWORKS, array

from skcalib.metrics import binned_calibration_error, kde_calibration_error


@pytest.fixture
def dispatch(monkeypatch):
    # scikit-learn refuses to dispatch unless SciPy's own switch is set; the
    # metrics call no SciPy function on the arrays.
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    with sklearn.config_context(array_api_dispatch=True):
        yield


def _problem(n=150, K=4, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(K, 1.2), size=n)
    Q = P**2 / (P**2).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(K, p=q) for q in Q])
    y[:K] = np.arange(K)
    w = rng.uniform(0.05, 1.0, size=n)
    w[::9] = 0.0
    return np.array([3, 7, 8, 11, 20][:K])[y], P, w


def _same(got, ref, tol):
    if hasattr(ref, "value"):
        assert abs(got.value - ref.value) <= tol
        for field in ("bandwidth", "per_sample", "edges", "weight", "mean_label"):
            if hasattr(ref, field):
                np.testing.assert_allclose(
                    getattr(got, field), getattr(ref, field), rtol=0, atol=tol
                )
        return
    assert type(got) is float
    assert abs(got - ref) <= tol


def _compare(metric, name, y, proba, w, kw, tol):
    """``metric`` on the namespace ``name`` against NumPy (weights ``w`` when
    ``kw`` asks for them)."""
    weighted = kw.pop("weights", False)
    ref = metric(y, proba, sample_weight=w if weighted else None, **kw)
    weight = array(name, w) if weighted else None
    got = metric(array(name, y), array(name, proba), sample_weight=weight, **kw)
    _same(got, ref, tol)


KDE_CASES = [
    dict(bandwidth=0.1),
    dict(bandwidth=0.05, p=2),
    dict(bandwidth="risk", multi_class="classwise", weights=True),
    dict(bandwidth="mle", multi_class="top-label", root=True),
    dict(bandwidth=0.05, max_samples=60, random_state=0, return_details=True),
    dict(bandwidth=0.1, binary=True, weights=True),
    dict(bandwidth=0.1, binary=True, pos_label=7, return_details=True),
]


@pytest.mark.parametrize("name", FRAMEWORKS)
@pytest.mark.parametrize("case", range(len(KDE_CASES)))
def test_kde_on_device_equals_numpy(dispatch, name, case):
    kw = dict(KDE_CASES[case])
    binary = kw.pop("binary", False)
    y, P, w = _problem(K=2 if binary else 4)
    proba = P
    if binary and "pos_label" not in kw:
        y, proba = (y == 7).astype(int), P[:, 1]  # 0/1 labels, a 1-D y_proba
    _compare(kde_calibration_error, name, y, proba, w, kw, 1e-12)


BINNED_CASES = [
    dict(),
    dict(norm="l2", debias=True, weights=True),
    dict(strategy="quantile", n_bins="cbrt", norm="l2"),
    dict(strategy="quantile", weights=True, multi_class="classwise"),
    dict(norm="max", n_bins=7, return_details=True),
    dict(strategy="quantile", binary=True, weights=True, return_details=True),
]


@pytest.mark.parametrize("name", FRAMEWORKS)
@pytest.mark.parametrize("case", range(len(BINNED_CASES)))
def test_binned_on_device_equals_numpy(dispatch, name, case):
    kw = dict(BINNED_CASES[case])
    y, P, w = _problem(n=400, K=2 if kw.pop("binary", False) else 4, seed=case)
    _compare(binned_calibration_error, name, y, P, w, kw, 1e-13)


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_label_errors_are_the_numpy_ones(dispatch, name):
    y, P, _ = _problem(n=40)
    cases = [
        (y, P[:, :3], {}),  # more labels than columns
        (y, P, {"labels": [3, 7, 8]}),
        (y, P, {"pos_label": 3}),
        (y[y < 8], P[y < 8, :2] / P[y < 8, :2].sum(1, keepdims=True), {"pos_label": 5}),
        (y, P[:, 1], {}),
    ]
    for labels, proba, kw in cases:
        for metric in (kde_calibration_error, binned_calibration_error):
            with pytest.raises((ValueError, TypeError)) as expected:
                metric(labels, proba, **kw)
            with pytest.raises(expected.type) as got:
                metric(array(name, labels), array(name, proba), **kw)
            assert str(got.value) == str(expected.value)


def test_tensors_that_require_grad_are_read_without_warnings(dispatch):
    torch = pytest.importorskip("torch")
    y, P, w = _problem(n=60)
    Pt = torch.tensor(P, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = kde_calibration_error(torch.tensor(y), Pt, bandwidth=0.1)
        binned = binned_calibration_error(torch.tensor(y), Pt, sample_weight=w)
    assert abs(got - kde_calibration_error(y, P, bandwidth=0.1)) < 1e-12
    assert abs(binned - binned_calibration_error(y, P, sample_weight=w)) < 1e-13


def test_without_dispatch_tensors_are_converted():
    torch = pytest.importorskip("torch")
    y, P, _ = _problem(n=60)
    got = kde_calibration_error(torch.tensor(y), torch.tensor(P), bandwidth=0.1)
    assert got == kde_calibration_error(y, P, bandwidth=0.1)
