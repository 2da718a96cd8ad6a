"""Gradients of the losses: autograd (PyTorch, JAX) against central finite
differences of the NumPy losses, ``torch.autograd.gradcheck``, and no NaN
at scores of exactly 0 or 1."""

import numpy as np
import pytest
from _array_namespaces import array, module
from scipy.special import expit, softmax

from skcalib.losses import kde_calibration_loss, smooth_ece_loss

torch = pytest.importorskip("torch")


def _logits(n, K, seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(scale=1.5, size=(n, K) if K > 2 else n)
    y = rng.integers(0, K, size=n)
    y[:K] = np.arange(K)
    return Z, y


def _proba_np(Z):
    return expit(Z) if Z.ndim == 1 else softmax(Z, axis=1)


def _proba_torch(Z):
    return torch.sigmoid(Z) if Z.ndim == 1 else torch.softmax(Z, dim=1)


def _central_differences(f, Z, h=1e-6):
    """``df/dZ`` by central differences of ``f`` (a NumPy function)."""
    g = np.zeros_like(Z)
    for idx in np.ndindex(Z.shape):
        up, down = Z.copy(), Z.copy()
        up[idx] += h
        down[idx] -= h
        g[idx] = (f(up) - f(down)) / (2 * h)
    return g


def _autograd(loss, Z, y, w, **kw):
    Zt = torch.tensor(Z, requires_grad=True)
    weight = None if w is None else torch.tensor(w)
    value = loss(torch.tensor(y), _proba_torch(Zt), sample_weight=weight, **kw)
    value.backward()
    return Zt.grad.numpy()


@pytest.mark.parametrize("n, K", [(12, 2), (15, 3), (10, 10)])
@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_kde_gradient_matches_finite_differences(n, K, p, weighted):
    Z, y = _logits(n, K, seed=n + K + p)
    w = np.random.default_rng(K).uniform(0.2, 2.5, size=n) if weighted else None
    kw = dict(bandwidth=0.08, p=p)

    def numpy_loss(Zv):
        return float(kde_calibration_loss(y, _proba_np(Zv), sample_weight=w, **kw))

    fd = _central_differences(numpy_loss, Z)
    ad = _autograd(kde_calibration_loss, Z, y, w, **kw)
    np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-8)
    assert np.abs(ad).max() > 1e-3  # a gradient that says something


@pytest.mark.parametrize("multi_class", ["classwise", "top-label"])
def test_reduced_kde_gradient_matches_finite_differences(multi_class):
    Z, y = _logits(14, 4, seed=3)
    kw = dict(bandwidth=0.1, multi_class=multi_class)

    def numpy_loss(Zv):
        return float(kde_calibration_loss(y, _proba_np(Zv), **kw))

    fd = _central_differences(numpy_loss, Z)
    np.testing.assert_allclose(
        _autograd(kde_calibration_loss, Z, y, None, **kw), fd, rtol=1e-5, atol=1e-8
    )


@pytest.mark.parametrize(
    "K, multi_class", [(2, "top-label"), (4, "top-label"), (4, "classwise")]
)
@pytest.mark.parametrize("weighted", [False, True])
def test_smooth_gradient_matches_finite_differences(K, multi_class, weighted):
    # sigma = 0.3: a 256-cell grid, which no score crosses within +-1e-6 here
    Z, y = _logits(20, K, seed=K)
    w = np.random.default_rng(1).uniform(0.2, 2.5, size=20) if weighted else None
    kw = dict(sigma=0.3, multi_class=multi_class)

    def numpy_loss(Zv):
        return float(smooth_ece_loss(y, _proba_np(Zv), sample_weight=w, **kw))

    fd = _central_differences(numpy_loss, Z)
    ad = _autograd(smooth_ece_loss, Z, y, w, **kw)
    np.testing.assert_allclose(ad, fd, rtol=1e-5, atol=1e-8)
    assert np.abs(ad).max() > 1e-3


@pytest.mark.parametrize(
    "kw",
    [
        dict(bandwidth=0.1, p=1),
        dict(bandwidth=0.05, p=2),
        dict(bandwidth=0.1, p=1.5, multi_class="classwise"),
    ],
)
def test_kde_gradcheck(kw):
    Z, y = _logits(8, 3, seed=1)
    w = torch.tensor(np.random.default_rng(0).uniform(0.5, 3.0, size=8))
    yt = torch.tensor(y)

    def f(Zt):
        return kde_calibration_loss(yt, torch.softmax(Zt, dim=1), sample_weight=w, **kw)

    assert torch.autograd.gradcheck(f, (torch.tensor(Z, requires_grad=True),))


def test_smooth_gradcheck():
    Z, y = _logits(8, 3, seed=2)
    yt = torch.tensor(y)

    def f(Zt):
        return smooth_ece_loss(yt, torch.softmax(Zt, dim=1), sigma=0.3)

    assert torch.autograd.gradcheck(f, (torch.tensor(Z, requires_grad=True),))


@pytest.mark.parametrize(
    "loss, kw",
    [
        (kde_calibration_loss, dict(bandwidth=0.05, p=1)),
        (kde_calibration_loss, dict(bandwidth=0.05, p=2)),
        (kde_calibration_loss, dict(bandwidth=1e-4, p=2)),
        (kde_calibration_loss, dict(bandwidth=0.05, multi_class="top-label")),
        (smooth_ece_loss, dict(sigma=0.05)),
        (smooth_ece_loss, dict(sigma=0.05, multi_class="classwise")),
    ],
)
def test_no_nan_gradient_at_exact_zeros_and_ones(loss, kw):
    rng = np.random.default_rng(0)
    y = np.arange(12) % 4
    onehot = np.eye(4)[y]
    mixed = rng.dirichlet(np.ones(4), size=12)
    mixed[:, 0] = 0.0
    mixed /= mixed.sum(axis=1, keepdims=True)
    mixed[:3] = np.eye(4)[[1, 2, 3]]
    for P in (onehot, mixed, np.eye(4)[(y + 1) % 4]):
        Pt = torch.tensor(P, requires_grad=True)
        value = loss(torch.tensor(y), Pt, **kw)
        value.backward()
        assert torch.isfinite(value) and torch.isfinite(Pt.grad).all()
    s = np.array([0.0, 1.0, 0.0, 1.0, 0.5, 0.3])
    st = torch.tensor(s, requires_grad=True)
    value = loss(torch.tensor([0, 1, 1, 0, 1, 0]), st, **kw)
    value.backward()
    assert torch.isfinite(st.grad).all()


@pytest.mark.slow
def test_jax_gradient_equals_torch():
    module("jax")
    import jax

    Z, y = _logits(12, 3, seed=4)
    jy = array("jax", y)

    def jax_loss(Zj):
        P = jax.nn.softmax(Zj, axis=1)
        return kde_calibration_loss(jy, P, bandwidth=0.08, p=2) + smooth_ece_loss(
            jy, P, sigma=0.3
        )

    # one compilation of the whole gradient (eager JAX compiles every step)
    got = np.asarray(jax.jit(jax.grad(jax_loss))(array("jax", Z)))
    Zt = torch.tensor(Z, requires_grad=True)
    P = torch.softmax(Zt, dim=1)
    yt = torch.tensor(y)
    value = kde_calibration_loss(yt, P, bandwidth=0.08, p=2) + smooth_ece_loss(
        yt, P, sigma=0.3
    )
    value.backward()
    np.testing.assert_allclose(got, Zt.grad.numpy(), rtol=1e-10, atol=1e-13)
