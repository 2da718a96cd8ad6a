"""skcalib.losses: values against the metrics and a brute force, in every
namespace; bad input; bandwidth selection; imports.

Gradients are in ``test_losses_grad.py``, the PyTorch modules and skorch in
``test_losses_torch.py``, the metrics on array-API input in
``test_losses_metrics.py``.
"""

import inspect
import subprocess
import sys

import numpy as np
import pytest
from _array_namespaces import NAMESPACES, array, device, module, to_numpy
from _references import dirichlet_smoother_dense
from scipy import stats

from skcalib.losses import kde_calibration_loss, select_kde_bandwidth, smooth_ece_loss
from skcalib.metrics import kde_calibration_error, smooth_ece


def _problem(n, K, seed, *, sharpen=2.0):
    """Dirichlet scores and labels drawn from a sharpened version of them
    (miscalibrated), every class present."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.full(K, 1.5), size=n)
    Q = P**sharpen / (P**sharpen).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(K, p=q) for q in Q])
    y[:K] = np.arange(K)
    return y, P


def _weights(kind, n, seed):
    rng = np.random.default_rng(seed + 100)
    if kind is None:
        return None
    if kind == "frequency":
        return rng.integers(1, 4, size=n).astype(float)
    w = rng.uniform(0.05, 2.5, size=n)  # importance: above and below 1, zeros
    w[::7] = 0.0
    return w


def _brute_plugin(y, F, w, b, p):
    """Leave-one-out plug-in terms from scipy's Dirichlet density, with one
    copy of each row's own centre left out (frequency weights)."""
    n, K = F.shape
    w = np.ones(n) if w is None else w
    E = np.eye(K)[y]
    logk = np.array([[stats.dirichlet.logpdf(F[j], F[i] / b + 1) for i in range(n)]
                     for j in range(n)])  # fmt: skip
    terms = np.empty(n)
    for j in range(n):
        v = w.copy()
        v[j] = max(w[j] - 1.0, 0.0)
        with np.errstate(divide="ignore"):
            lw = np.log(v) + logk[j]
        W = np.exp(lw - lw.max())
        R = W @ E / W.sum()
        terms[j] = np.sum(np.abs(R - F[j]) ** p)
    return terms


def _weighted_mean(terms, w):
    w = np.ones(terms.shape[0]) if w is None else w
    return float(np.dot(w, np.where(w > 0, terms, 0.0)) / w.sum())


# ---------------------------------------------------------------------------
# Values: the metric, a brute force, every namespace
# ---------------------------------------------------------------------------

CASES = [
    # (K, one_d, p, debias, multi_class)
    (2, True, 1, "auto", "canonical"),
    (2, False, 2, "auto", "canonical"),
    (3, False, 1, "auto", "canonical"),
    (3, False, 2, "auto", "canonical"),
    (3, False, 2, False, "classwise"),
    (3, False, 1.5, "auto", "top-label"),
    (10, False, 1, "auto", "canonical"),
    (10, False, 2, "auto", "classwise"),
]


@pytest.mark.parametrize("K, one_d, p, debias, multi_class", CASES)
@pytest.mark.parametrize("weights", [None, "frequency", "importance"])
def test_numpy_loss_equals_the_metric(K, one_d, p, debias, multi_class, weights):
    y, P = _problem(80, K, seed=K + int(10 * p))
    w = _weights(weights, 80, K)
    proba = P[:, 1] if one_d else P
    for b in (0.02, 0.3):
        kw = dict(p=p, debias=debias, multi_class=multi_class, sample_weight=w)
        loss = kde_calibration_loss(y, proba, bandwidth=b, **kw)
        assert isinstance(loss, np.ndarray) and loss.shape == ()
        ref = kde_calibration_error(y, proba, bandwidth=b, **kw)
        assert abs(float(loss) - ref) <= 1e-12


@pytest.mark.parametrize("weights", [None, "frequency", "importance"])
@pytest.mark.parametrize("K, p", [(2, 1), (3, 1), (4, 1.5)])
def test_plugin_matches_scipy_brute_force(K, p, weights):
    y, P = _problem(40, K, seed=3 * K)
    w = _weights(weights, 40, K)
    b = 0.08
    ref = _weighted_mean(_brute_plugin(y, P, w, b, p), w)
    got = kde_calibration_loss(y, P, bandwidth=b, p=p, sample_weight=w)
    if K == 2:
        ref /= 2.0  # a binary problem reports the error of the positive class
    assert abs(float(got) - ref) < 1e-10


@pytest.mark.parametrize("weights", [None, "frequency", "importance"])
def test_debiased_matches_pair_enumeration(weights):
    y, P = _problem(40, 4, seed=11)
    w = _weights(weights, 40, 4)
    b = 0.1
    ref = dirichlet_smoother_dense(
        P, y, np.ones(40) if w is None else w, P, b, leave_one_out=True
    )["squared_error"]
    got = kde_calibration_loss(y, P, bandwidth=b, p=2, sample_weight=w)
    assert abs(float(got) - _weighted_mean(ref, w)) < 1e-10


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("K, one_d, p, debias, multi_class", CASES[::2] + CASES[3:4])
def test_every_namespace_equals_the_metric(name, K, one_d, p, debias, multi_class):
    y, P = _problem(60, K, seed=K)
    w = _weights("importance", 60, K)
    proba = P[:, 1] if one_d else P
    kw = dict(p=p, debias=debias, multi_class=multi_class)
    ref = kde_calibration_error(y, proba, bandwidth=0.05, sample_weight=w, **kw)
    x = array(name, proba)
    loss = kde_calibration_loss(
        array(name, y), x, bandwidth=0.05, sample_weight=array(name, w), **kw
    )
    assert type(loss) is type(x)
    assert tuple(loss.shape) == ()
    assert device(loss) == device(x)
    assert abs(float(to_numpy(loss)) - ref) <= (1e-12 if name != "torch" else 1e-10)


@pytest.mark.parametrize("name", NAMESPACES)
def test_single_precision_stays_single(name):
    y, P = _problem(50, 3, seed=5)
    x = array(name, P.astype(np.float32))
    loss = kde_calibration_loss(array(name, y), x, bandwidth=0.1)
    assert str(loss.dtype).endswith("float32")
    ref = kde_calibration_error(y, P, bandwidth=0.1)
    assert abs(float(to_numpy(loss)) - ref) < 1e-4


@pytest.mark.parametrize("name", NAMESPACES)
def test_batch_of_two(name):
    y, P = np.array([0, 1]), np.array([[0.7, 0.2, 0.1], [0.3, 0.6, 0.1]])
    loss = kde_calibration_loss(array(name, y), array(name, P), bandwidth=0.1)
    # each row's only neighbour is the other: R_j = e_{y_other}
    ref = np.mean(
        [np.abs(np.eye(3)[1] - P[0]).sum(), np.abs(np.eye(3)[0] - P[1]).sum()]
    )
    assert abs(float(to_numpy(loss)) - ref) < 1e-12
    ref_metric = kde_calibration_error(y, P, bandwidth=0.1, labels=[0, 1, 2])
    assert abs(float(to_numpy(loss)) - ref_metric) < 1e-12
    with pytest.raises(ValueError, match="at least 3 samples"):
        kde_calibration_loss(array(name, y), array(name, P), bandwidth=0.1, p=2)


@pytest.mark.parametrize("name", NAMESPACES)
def test_batch_missing_classes(name):
    y, P = _problem(40, 5, seed=2)
    y = np.minimum(y, 2)  # classes 3 and 4 absent from the batch
    for kw in (dict(p=1), dict(p=2), dict(multi_class="classwise")):
        loss = kde_calibration_loss(array(name, y), array(name, P), bandwidth=0.1, **kw)
        ref = kde_calibration_error(y, P, bandwidth=0.1, labels=range(5), **kw)
        assert abs(float(to_numpy(loss)) - ref) < 1e-10


@pytest.mark.parametrize("name", NAMESPACES)
def test_exact_zeros_and_ones_are_finite(name):
    y, P = _problem(30, 4, seed=9)
    P[:10] = np.eye(4)[y[:10]]  # one-hot rows: exact 0 and 1
    P[10:15, 0] = 0.0
    P[10:15] /= P[10:15].sum(axis=1, keepdims=True)
    for p in (1, 2):
        loss = kde_calibration_loss(array(name, y), array(name, P), bandwidth=0.05, p=p)
        ref = kde_calibration_error(y, P, bandwidth=0.05, p=p)
        assert np.isfinite(float(to_numpy(loss)))
        assert abs(float(to_numpy(loss)) - ref) < 1e-10


# ---------------------------------------------------------------------------
# SmoothECE at a fixed sigma
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("sigma", [2**-8, 0.01, 0.1, 1.0])
@pytest.mark.parametrize("multi_class", ["top-label", "classwise", "binary"])
def test_smooth_ece_loss_equals_the_metric(name, sigma, multi_class):
    K = 2 if multi_class == "binary" else 4
    y, P = _problem(300, K, seed=int(1 / sigma) % 97)
    proba = P[:, 1] if K == 2 else P
    proba[:3] = 1.0 if K == 2 else np.eye(K)[:3]  # scores exactly 1 (last cell)
    if K == 2:
        proba[3:6] = 0.0
    w = _weights("importance", 300, K)
    mc = "top-label" if K == 2 else multi_class
    for weight in (None, w):
        ref = smooth_ece(y, proba, sigma=sigma, multi_class=mc, sample_weight=weight)
        loss = smooth_ece_loss(
            array(name, y),
            array(name, proba),
            sigma=sigma,
            multi_class=mc,
            sample_weight=None if weight is None else array(name, weight),
        )
        assert tuple(loss.shape) == () and device(loss) == device(array(name, proba))
        assert abs(float(to_numpy(loss)) - ref) <= 1e-6


def test_smooth_ece_loss_checks_sigma():
    y, P = _problem(20, 3, seed=0)
    with pytest.raises(ValueError, match="sigma"):
        smooth_ece_loss(y, P, sigma=2**-17)
    with pytest.raises((ValueError, TypeError), match="sigma"):
        smooth_ece_loss(y, P, sigma=0.0)
    with pytest.raises(ValueError, match="multi_class"):
        smooth_ece_loss(y, P, sigma=0.1, multi_class="canonical")


# ---------------------------------------------------------------------------
# Bad input: the metric's errors, in every namespace
# ---------------------------------------------------------------------------


def _bad_inputs():
    y, P = _problem(12, 3, seed=1)
    w = np.ones(12)
    far = P.copy()
    far[2, 0] = 1.5
    nan = P.copy()
    nan[4, 1] = np.nan
    rows = P.copy()
    rows[5] *= 1.1
    neg_w = w.copy()
    neg_w[3] = -1.0
    return {
        "3-D y_proba": (y, P[:, :, None], None),
        "length": (y[:-1], P, None),
        "range": (y, far, None),
        "NaN": (y, nan, None),
        "row sums": (y, rows, None),
        "negative weight": (y, P, neg_w),
        "weight length": (y, P, w[:-2]),
        "2-D y_true": (np.column_stack([y, y]), P, None),
        "empty": (y[:0], P[:0], None),
    }


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("case", list(_bad_inputs()))
def test_bad_input_gets_the_metrics_error(name, case):
    y, P, w = _bad_inputs()[case]
    with pytest.raises((ValueError, TypeError)) as expected:
        kde_calibration_error(y, P, bandwidth=0.1, sample_weight=w)
    args = (array(name, y), array(name, P))
    weight = None if w is None else array(name, w)
    for loss in (kde_calibration_loss, smooth_ece_loss):
        kw = {"bandwidth": 0.1} if loss is kde_calibration_loss else {"sigma": 0.1}
        with pytest.raises(expected.type) as got:
            loss(*args, sample_weight=weight, **kw)
        assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("name", NAMESPACES)
def test_labels_must_be_class_indices(name):
    y, P = _problem(12, 3, seed=1)
    bad = y.copy()
    bad[0] = 3
    with pytest.raises(ValueError, match=r"class indices in \[0, 3\).*from 0 to 3"):
        kde_calibration_loss(array(name, bad), array(name, P), bandwidth=0.1)
    signed = np.minimum(y, 1)
    signed[0] = -1
    with pytest.raises(ValueError, match=r"0/1 labels.*from -1 to 1"):
        smooth_ece_loss(array(name, signed), array(name, P[:, 1]), sigma=0.1)
    with pytest.raises(ValueError, match="integer class indices"):
        kde_calibration_loss(array(name, y + 0.5), array(name, P), bandwidth=0.1)
    # integral floats and booleans are class indices
    ref = float(kde_calibration_loss(y, P, bandwidth=0.1))
    got = kde_calibration_loss(
        array(name, y.astype(float)), array(name, P), bandwidth=0.1
    )
    assert float(to_numpy(got)) == pytest.approx(ref, abs=1e-12)
    s, yb = P[:, 1], y == 1
    ref = kde_calibration_error(yb, s, bandwidth=0.1)
    got = kde_calibration_loss(array(name, yb), array(name, s), bandwidth=0.1)
    assert float(to_numpy(got)) == pytest.approx(ref, abs=1e-12)


def test_bad_options_name_the_argument():
    y, P = _problem(12, 3, seed=1)
    for kw, match in [
        (dict(bandwidth=-1.0), "bandwidth"),
        (dict(bandwidth="silverman"), "bandwidth"),
        (dict(bandwidth=0.1, p=0.5), "p"),
        (dict(bandwidth=0.1, multi_class="macro"), "multi_class"),
        (dict(bandwidth=0.1, p=1, debias=True), "debias"),
    ]:
        with pytest.raises((ValueError, TypeError), match=match):
            kde_calibration_loss(y, P, **kw)


def test_unsupported_namespace_fails_clearly():
    da = pytest.importorskip("dask.array")
    y, P = _problem(12, 3, seed=1)
    with pytest.raises(TypeError, match="namespace 'dask.array'"):
        kde_calibration_loss(y, da.from_array(P), bandwidth=0.1)


def test_inputs_are_not_modified():
    y, P = _problem(30, 3, seed=4)
    P[0] = [1.0 + 1e-9, 0.0, -1e-9]  # clipped inside, within the tolerance
    w = _weights("importance", 30, 3)
    copies = (y.copy(), P.copy(), w.copy())
    kde_calibration_loss(y, P, bandwidth=0.1, sample_weight=w)
    smooth_ece_loss(y, P, sigma=0.1, sample_weight=w)
    for a, b in zip((y, P, w), copies, strict=True):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------
# Bandwidth selection per batch
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", NAMESPACES)
@pytest.mark.parametrize("method", ["mle", "risk"])
@pytest.mark.parametrize("multi_class", ["canonical", "classwise"])
def test_selected_bandwidth_is_the_metrics(name, method, multi_class):
    y, P = _problem(120, 3, seed=6)
    w = _weights("importance", 120, 3) / 2.5  # relative weights: see the metric
    res = kde_calibration_error(
        y, P, bandwidth=method, multi_class=multi_class, sample_weight=w,
        return_details=True,
    )  # fmt: skip
    chosen = select_kde_bandwidth(
        array(name, y),
        array(name, P, requires_grad=True),
        method=method,
        multi_class=multi_class,
        sample_weight=array(name, w),
    )
    np.testing.assert_array_equal(chosen, res.bandwidth)
    loss = kde_calibration_loss(
        array(name, y),
        array(name, P, requires_grad=True),
        bandwidth=method,
        multi_class=multi_class,
        sample_weight=array(name, w),
    )
    assert abs(float(to_numpy(loss)) - res.value) < 1e-10


def test_selector_default_is_the_metrics_default():
    default = inspect.signature(kde_calibration_error).parameters["bandwidth"].default
    ours = inspect.signature(select_kde_bandwidth).parameters["method"].default
    assert ours == default
    # the same rule, not only the same name: the grid search refined on the
    # whole batch, whose value lies between grid points
    y, P = _problem(300, 3, seed=4)
    for method in ("risk", "mle"):
        chosen = select_kde_bandwidth(y, P, method=method)
        metric = kde_calibration_error(y, P, bandwidth=method, return_details=True)
        assert chosen == metric.bandwidth


@pytest.mark.slow
def test_string_bandwidth_inside_jit_fails_clearly():
    module("jax")
    import jax

    y, P = _problem(20, 3, seed=1)
    jy = array("jax", y)

    def loss(p):
        return kde_calibration_loss(jy, p, bandwidth="mle")

    with pytest.raises(ValueError, match="jax.jit"):
        jax.jit(loss)(array("jax", P))


@pytest.mark.slow
def test_jax_equals_the_metric():
    module("jax")
    y, P = _problem(40, 3, seed=8)
    w = _weights("importance", 40, 3)
    got = kde_calibration_loss(
        array("jax", y), array("jax", P), bandwidth=0.05, sample_weight=array("jax", w)
    )
    ref = kde_calibration_error(y, P, bandwidth=0.05, sample_weight=w)
    assert abs(float(got) - ref) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("case", ["range", "row sums", "length", "negative weight"])
def test_jax_bad_input_gets_the_metrics_error(case):
    module("jax")
    y, P, w = _bad_inputs()[case]
    with pytest.raises(ValueError) as expected:
        kde_calibration_error(y, P, bandwidth=0.1, sample_weight=w)
    weight = None if w is None else array("jax", w)
    with pytest.raises(ValueError) as got:
        kde_calibration_loss(
            array("jax", y), array("jax", P), bandwidth=0.1, sample_weight=weight
        )
    assert str(got.value) == str(expected.value)


@pytest.mark.slow
def test_jit_with_static_options_equals_the_metric():
    module("jax")
    import jax

    y, P = _problem(50, 3, seed=8)
    jitted = jax.jit(
        kde_calibration_loss,
        static_argnames=("bandwidth", "p", "multi_class", "debias"),
    )
    for kw in (dict(p=1), dict(p=2), dict(multi_class="classwise")):
        got = jitted(array("jax", y), array("jax", P), bandwidth=0.05, **kw)
        ref = kde_calibration_error(y, P, bandwidth=0.05, **kw)
        assert abs(float(got) - ref) < 1e-12
    smooth = jax.jit(smooth_ece_loss, static_argnames=("sigma", "multi_class"))
    got = smooth(array("jax", y), array("jax", P), sigma=0.05)
    assert abs(float(got) - smooth_ece(y, P, sigma=0.05)) < 1e-12


# ---------------------------------------------------------------------------
# Imports
# ---------------------------------------------------------------------------


def _run(code):
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_numpy_use_imports_no_framework():
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import skcalib, skcalib.losses, skcalib.metrics\n"
        "from skcalib.losses import kde_calibration_loss, smooth_ece_loss\n"
        "from skcalib.metrics import kde_calibration_error, binned_calibration_error\n"
        "p = np.array([[0.7, 0.3], [0.2, 0.8], [0.5, 0.5]]); y = np.array([0, 1, 1])\n"
        "kde_calibration_loss(y, p, bandwidth=0.1); smooth_ece_loss(y, p, sigma=0.1)\n"
        "kde_calibration_error(y, p, bandwidth=0.1); binned_calibration_error(y, p)\n"
        "print(sorted(m for m in ('torch', 'jax', 'array_api_strict') "
        "if m in sys.modules))\n"
    )
    assert _run(code) == "[]"


def test_public_names_resolve():
    import skcalib.losses

    for name in skcalib.losses.__all__:
        assert getattr(skcalib.losses, name) is not None
        assert name in dir(skcalib.losses)
    with pytest.raises(AttributeError, match="no_such_name"):
        skcalib.losses.no_such_name  # noqa: B018
