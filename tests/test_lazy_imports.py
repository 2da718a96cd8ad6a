"""Lazy public namespaces; streaming metrics run without importing scikit-learn."""

import subprocess
import sys

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils import check_array, column_or_1d

import skcalib
import skcalib.metrics
from skcalib._validation.arrays import _column_or_1d, _float_array


def _run(code):
    """Output of ``code`` run in a fresh interpreter (nothing imported yet)."""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


_SKLEARN_LOADED = (
    "import sys; "
    "print(any(m == 'sklearn' or m.startswith('sklearn.') for m in sys.modules))"
)


_MATPLOTLIB_LOADED = "import sys; print('matplotlib' in sys.modules)"


@pytest.fixture(scope="module")
def lazy_loads():
    """What one fresh interpreter has loaded after each step: streaming
    metrics, then a display class, then an estimator (each step only adds
    modules, so a module loaded too early shows at its step)."""
    code = (
        "import numpy as np\n"
        "import skcalib.metrics\n"
        "from skcalib.metrics import CalibrationAccumulator\n"
        "rng = np.random.default_rng(0)\n"
        "p = rng.uniform(size=5000).astype(np.float32)\n"
        "y = (rng.uniform(size=5000) < p).astype(np.int8)\n"
        "acc = CalibrationAccumulator()\n"
        "acc.partial_fit(y[:2000], p[:2000])\n"
        "acc.partial_fit(y[2000:], p[2000:], sample_weight=np.ones(3000))\n"
        "acc.merge(CalibrationAccumulator().partial_fit(y[:10] == 1, p[:10]))\n"
        "acc.smooth_ece()\n"
        "acc.calibration_curve()\n"
        "acc.binned_calibration_error(n_bins=16)\n"
        "import skcalib\n"
        "dir(skcalib), dir(skcalib.metrics)\n" + _SKLEARN_LOADED + "\n"
        "import skcalib\n" + _MATPLOTLIB_LOADED + "\n"
        "skcalib.display.SmoothReliabilityDisplay\n" + _MATPLOTLIB_LOADED + "\n"
        "skcalib.PerturbedClassifier\n" + _SKLEARN_LOADED
    )
    steps = ["streaming", "import", "display", "estimator"]
    return dict(zip(steps, _run(code).split(), strict=True))


def test_streaming_does_not_import_sklearn(lazy_loads):
    assert lazy_loads["streaming"] == "False"


def test_import_skcalib_does_not_import_matplotlib(lazy_loads):
    assert lazy_loads["import"] == "False"
    assert lazy_loads["display"] == "False"


def test_estimators_load_on_access(lazy_loads):
    assert lazy_loads["estimator"] == "True"


@pytest.mark.parametrize("module", [skcalib, skcalib.metrics])
def test_all_names_resolve_and_are_listed(module):
    listing = dir(module)
    for name in module.__all__:
        assert getattr(module, name) is not None
        assert name in listing
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018


def test_star_import_and_identity():
    namespace = {}
    exec("from skcalib.metrics import *", namespace)
    exec("from skcalib import *", namespace)
    assert set(skcalib.metrics.__all__) <= set(namespace)
    assert set(skcalib.__all__) <= set(namespace)
    from skcalib.metrics._smooth import smooth_ece
    from skcalib.perturbation import PerturbedClassifier

    assert namespace["smooth_ece"] is smooth_ece is skcalib.metrics.smooth_ece
    assert namespace["PerturbedClassifier"] is PerturbedClassifier
    assert skcalib.display.__name__ == "skcalib.display"


def test_scorers_registered_without_importing_metric_modules():
    code = (
        "from skcalib.metrics import get_scorer, get_scorer_names\n"
        "names = get_scorer_names()\n"
        "print(sorted(n for n in names if n.startswith('neg_') and "
        "('ece' in n or 'calibration' in n)))\n"
    )
    names = eval(_run(code))  # noqa: S307 - our own printed list
    for name in (
        "neg_smooth_ece",
        "neg_kde_calibration_error",
        "neg_calibration_error_bound",
    ):
        assert name in names
    fresh = (
        "from skcalib.metrics import get_scorer\nprint(get_scorer('neg_smooth_ece'))"
    )
    assert _run(fresh).startswith("CalibrationScorer(smooth_ece")


def test_not_fitted_is_sklearn_class():
    with pytest.raises(NotFittedError, match="partial_fit"):
        skcalib.metrics.CalibrationAccumulator().smooth_ece()


# -- numpy-only validation path: same result and errors as scikit-learn's ---------
_rng = np.random.default_rng(0)
_ARRAYS = [
    _rng.uniform(size=7),
    _rng.uniform(size=7).astype(np.float32),
    _rng.uniform(size=(5, 3)),
    np.asfortranarray(_rng.uniform(size=(4, 2))),
    _rng.uniform(size=12)[::3],
    np.arange(6, dtype=np.int8),
    np.array([True, False, True]),
    np.zeros(0),
    np.zeros((0, 2)),
    np.array([1e308, 1e308]),  # the sum overflows, the values are finite
]


@pytest.mark.parametrize("x", _ARRAYS, ids=range(len(_ARRAYS)))
@pytest.mark.parametrize("copy", [False, True])
def test_float_array_matches_check_array(x, copy):
    kw = {"ensure_2d": False, "dtype": np.float64, "ensure_min_samples": 0}
    ref = check_array(x, input_name="y_proba", copy=copy, **kw)
    got = _float_array(x, "y_proba", copy=copy)
    assert type(got) is np.ndarray and got.dtype == np.float64
    np.testing.assert_array_equal(got, ref)
    assert np.shares_memory(got, x) == np.shares_memory(ref, x)


@pytest.mark.parametrize(
    "bad",
    [
        np.array([0.1, np.nan, np.inf]),
        np.array([0.1, np.inf]),
        np.array([[0.1, -np.inf]], dtype=np.float32),
    ],
)
def test_float_array_errors_match_check_array(bad):
    kw = {"ensure_2d": False, "dtype": np.float64, "ensure_min_samples": 0}
    with pytest.raises(ValueError) as ref:
        check_array(bad, input_name="sample_weight", **kw)
    with pytest.raises(ValueError) as got:
        _float_array(bad, "sample_weight")
    assert str(got.value) == str(ref.value)


@pytest.mark.parametrize(
    "y",
    [
        np.array([0, 1, 1]),
        np.array([0.0, 1.0]),
        np.array([True, False]),
        np.array(["a", "b"]),
        np.arange(10)[::2],
    ],
)
def test_column_or_1d_matches_sklearn(y):
    ref = column_or_1d(y)
    got = _column_or_1d(y)
    np.testing.assert_array_equal(got, ref)
    assert got.dtype == ref.dtype and got.flags.c_contiguous


def test_first_calls_import_neither_joblib_nor_numba():
    # smooth_ece needs no joblib (a tenth of a second and hundreds of modules
    # on its first call). And with numba installed, the first call of each
    # compiled path on an input of ordinary size runs the numpy passes:
    # loading numba (over a second) would cost more than it saves.
    code = (
        "import sys\n"
        "import numpy as np\n"
        "from skcalib.metrics import smooth_ece\n"
        "rng = np.random.default_rng(0)\n"
        "p = rng.uniform(size=2**20)\n"
        "y = (rng.uniform(size=p.size) < p).astype(float)\n"
        "P = rng.dirichlet(np.ones(10), size=2**17)\n"
        "k = rng.integers(0, 10, size=2**17)\n"
        "smooth_ece(y, p)\n"
        "smooth_ece(y, p, metric='logit')\n"
        "smooth_ece(k, P)\n"
        "smooth_ece(k, P, metric='logit')\n"
        "print('joblib' in sys.modules)\n"
        "from skcalib import perturb_proba\n"
        "perturb_proba(P[:, :2] / P[:, :2].sum(axis=1, keepdims=True))\n"
        "perturb_proba(P)\n"
        "print('numba' in sys.modules)\n"
    )
    assert _run(code).split() == ["False", "False"]
