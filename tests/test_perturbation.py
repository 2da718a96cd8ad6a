"""Tests for PerturbedClassifier, select_perturbation_scale and the bound scorer."""

import pickle
import weakref

import numpy as np
import pytest
from _references import sech_noise_of_words
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from skcalib import PerturbedClassifier, perturb_proba, select_perturbation_scale
from skcalib._backend.kernels import sech_ppf
from skcalib._backend.score_grid import off_grid
from skcalib._backend.sech import perturbation as backend
from skcalib._backend.sech.compiled import HAVE_NUMBA
from skcalib.metrics import get_scorer, get_scorer_names

# ---------------------------------------------------------------------------
# Independent reference for the truncated sech kernel: the antiderivative of
# sech is the Gudermannian gd(x) = 2 arctan(tanh(x / 2)).
# ---------------------------------------------------------------------------


def _gd(x):
    return 2.0 * np.arctan(np.tanh(x / 2.0))


def ref_sech_cdf(s, s0, h, low=0.0, high=1.0):
    """CDF at s of sech((. - s0) / h) truncated to [low, high]."""
    lo = _gd((low - s0) / h)
    return (_gd((s - s0) / h) - lo) / (_gd((high - s0) / h) - lo)


def test_reference_cdf_matches_quadrature():
    # Guards the reference itself against a slip in the closed form.
    from scipy.integrate import quad

    def sech(t, s0, h):
        return 1 / np.cosh((t - s0) / h)

    for s0, h, s in [(0.3, 0.1, 0.45), (0.0, 2**-6, 0.01), (0.9, 0.5, 0.2)]:
        num = quad(sech, 0, s, args=(s0, h), points=[s0])[0]
        den = quad(sech, 0, 1, args=(s0, h), points=[s0])[0]
        assert_allclose(ref_sech_cdf(s, s0, h), num / den, rtol=1e-8)


class ScoreColumn(ClassifierMixin, BaseEstimator):
    """A 'model' whose positive-class probability is the first feature."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        s = np.asarray(X, dtype=np.float64)[:, 0]
        return np.column_stack([1.0 - s, s])


class ProbaColumns(ClassifierMixin, BaseEstimator):
    """A 'model' whose probability matrix is X itself."""

    def fit(self, X, y):
        self.classes_ = np.arange(np.asarray(X).shape[1])
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=np.float64)


def _frozen(model, X):
    return FrozenEstimator(model.fit(X, np.arange(len(X)) % 2))


@pytest.fixture(scope="module")
def binary_data():
    return make_classification(n_samples=600, n_features=6, random_state=0)


@pytest.fixture(scope="module")
def cancer():
    return load_breast_cancer(return_X_y=True)


# ---------------------------------------------------------------------------
# Distribution of the perturbed scores
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("h", [2**-9, 2**-6, 2**-3, 0.5, 1.0])
def test_binary_draws_follow_sech_kernel(h):
    # Probability integral transform: F(s' | s0) must be Uniform(0, 1) when
    # s' is drawn from the kernel around s0. Centres include both edges.
    rng = np.random.default_rng(1)
    s0 = np.concatenate([rng.uniform(size=3000), np.zeros(500), np.ones(500)])
    X = s0[:, None]
    clf = PerturbedClassifier(_frozen(ScoreColumn(), X), scale=h, random_state=3)
    proba = clf.fit(X, np.arange(len(X)) % 2).predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0)
    s = proba[:, 1]
    assert s.min() >= 0.0 and s.max() <= 1.0
    pit = ref_sech_cdf(s, s0, h)
    assert stats.kstest(pit, "uniform").pvalue > 1e-3
    # Same thing at a single centre, against the distribution function itself.
    # (a model of both classes: its predict_proba has their two columns)
    one = PerturbedClassifier(_frozen(ScoreColumn(), X[:2]), scale=h, random_state=4)
    draws = one.fit(X[:2], [0, 1]).predict_proba(np.full((4000, 1), 0.3))[:, 1]
    cdf = lambda t: ref_sech_cdf(np.clip(t, 0, 1), 0.3, h)  # noqa: E731
    assert stats.kstest(draws, cdf).pvalue > 1e-3


def test_binary_draws_detect_wrong_scale():
    # The KS test above has power: draws at scale h are rejected against 2h.
    s0 = np.full(4000, 0.4)
    X = s0[:, None]
    clf = PerturbedClassifier(_frozen(ScoreColumn(), X), scale=2**-5, random_state=0)
    s = clf.fit(X, np.arange(len(X)) % 2).predict_proba(X)[:, 1]
    assert stats.kstest(ref_sech_cdf(s, s0, 2**-4), "uniform").pvalue < 1e-6


def test_binary_large_input_small_scale_follows_kernel():
    # Enough rows for the blocked, multi-threaded sampler; h = 2**-12 with
    # centres on both edges, where the truncation matters most.
    rng = np.random.default_rng(7)
    h = 2**-12
    s0 = np.concatenate([rng.uniform(size=500_000), np.zeros(50_000), np.ones(50_000)])
    X = s0[:, None]
    clf = PerturbedClassifier(_frozen(ScoreColumn(), X[:10]), scale=h, random_state=5)
    proba = clf.fit(X[:10], np.arange(10) % 2).predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0, atol=1e-15)
    s = proba[:, 1]
    assert s.min() >= 0.0 and s.max() <= 1.0
    assert stats.kstest(ref_sech_cdf(s, s0, h), "uniform").pvalue > 1e-3
    # Tails: beyond 6h from an interior centre, 2 P(X > 6) for the law of
    # density sech(x) / pi (cdf 2 arctan(e^x) / pi).
    inner = (s0 > 0.01) & (s0 < 0.99)
    p_tail = 4 / np.pi * np.arctan(np.exp(-6.0))
    tail = np.mean(np.abs(s - s0)[inner] > 6 * h)
    assert abs(tail - p_tail) < 5 * np.sqrt(p_tail / inner.sum())
    assert_array_equal(clf.predict_proba(X), proba)


def test_base_probabilities_just_outside_unit_interval_are_clipped():
    # A base model returning scores outside [0, 1] by rounding (within 1e-8)
    # is perturbed around the clipped score; further out it is refused, by
    # the base model's name (a broken model, not a rounding).
    h = 2**-6
    s0 = np.concatenate([np.full(3000, 1.0 + 5e-9), np.full(3000, -5e-9)])
    X = s0[:, None]
    clf = PerturbedClassifier(_frozen(ScoreColumn(), X), scale=h, random_state=2)
    s = clf.fit(X, np.arange(len(X)) % 2).predict_proba(X)[:, 1]
    assert s.min() >= 0.0 and s.max() <= 1.0
    assert stats.kstest(s[:3000], lambda t: ref_sech_cdf(t, 1.0, h)).pvalue > 1e-3
    assert stats.kstest(s[3000:], lambda t: ref_sech_cdf(t, 0.0, h)).pvalue > 1e-3
    for bad in (1.0 + 1e-3, -0.5):
        X[5] = bad
        with pytest.raises(
            ValueError, match=r"ScoreColumn.predict_proba must .*\[0, 1\]"
        ):
            clf.predict_proba(X)


@pytest.mark.parametrize("n_classes", [3, 5])
def test_multiclass_perturbs_top_label_confidence(n_classes):
    rng = np.random.default_rng(n_classes)
    P = rng.dirichlet(np.full(n_classes, 0.7), size=4000)
    h = 2**-4
    clf = PerturbedClassifier(_frozen(ProbaColumns(), P), scale=h, random_state=0)
    Q = clf.fit(P, np.arange(len(P)) % n_classes).predict_proba(P)
    rows = np.arange(len(P))
    top = P.argmax(axis=1)
    assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    assert (Q >= 0).all()
    # The predicted class is kept, and predict agrees with predict_proba.
    assert_array_equal(Q.argmax(axis=1), top)
    assert_array_equal(clf.predict(P), clf.classes_[top])
    # The confidence follows the sech kernel of scale h truncated to [1/K, 1].
    conf0, conf = P[rows, top], Q[rows, top]
    pit = ref_sech_cdf(conf, conf0, h, low=1.0 / n_classes)
    assert stats.kstest(pit, "uniform").pvalue > 1e-3
    # Other classes keep their proportions whenever no runner-up had to be
    # pulled down below the new confidence.
    rest0 = np.where(np.eye(n_classes, dtype=bool)[top], 0.0, P)
    rest = np.where(np.eye(n_classes, dtype=bool)[top], 0.0, Q)
    kept = rest0.max(axis=1) * (1 - conf) / (1 - conf0) < conf
    assert kept.mean() > 0.5
    expected = rest0[kept] * ((1 - conf[kept]) / (1 - conf0[kept]))[:, None]
    assert_allclose(rest[kept], expected, rtol=1e-9, atol=1e-15)


def test_multiclass_rows_with_subnormal_runner_up_mass_stay_finite():
    # The other classes hold 1e-320 in all: their proportions are lost to
    # rounding, so they share the remaining mass evenly (as a one-hot row),
    # instead of overflowing to inf and NaN.
    P = np.tile([1.0, 1e-320, 0.0], (50, 1))
    clf = PerturbedClassifier(_frozen(ProbaColumns(), P), scale=2**-4, random_state=0)
    Q = clf.fit(P, np.arange(50) % 3).predict_proba(P)
    assert np.isfinite(Q).all()
    assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    assert_array_equal(Q.argmax(axis=1), 0)
    assert_allclose(Q[:, 1], Q[:, 2])


def _share_out_the_rest(P, conf):
    """The other classes' share of ``1 - conf`` (top class of ``P`` set to
    ``conf``), as the mixing rule of ``perturb_proba`` words it, row by row."""
    n, k = P.shape
    out = np.empty_like(P)
    for i in range(n):
        top = int(np.argmax(P[i]))
        rest = P[i].copy()
        rest[top] = 0.0
        mass, left = rest.sum(), 1.0 - conf[i]
        even = left / (k - 1)
        if mass < np.finfo(np.float64).tiny:
            row = np.full(k, even)
        else:
            row = rest / mass * left
        row[top] = 0.0
        cap = conf[i] * (1.0 - 1e-12)
        if row.max() > cap:
            with np.errstate(divide="ignore"):
                lam = min((row.max() - cap) / (row.max() - even), 1.0)
            row = (1.0 - lam) * row + lam * even
            row[top] = 0.0
        row[top] = conf[i]
        out[i] = row
    return out


@pytest.mark.parametrize("n_classes", [3, 8, 9])
def test_multiclass_rows_are_those_of_the_rule(n_classes):
    # Against the rule written out row by row: one-hot rows, even rows, ties
    # for the top, subnormal runner-up mass, runner-ups pulled down, and
    # rows stored in either order.
    rng = np.random.default_rng(n_classes)
    n = 3000
    P = rng.dirichlet(np.full(n_classes, 0.3), size=n)
    P[:300] = np.eye(n_classes)[rng.integers(0, n_classes, 300)]
    P[300:400] = 1.0 / n_classes
    P[400:450] = 0.0
    P[400:450, :2] = 0.5
    P[450:500] = [1.0, 1e-320] + [0.0] * (n_classes - 2)
    P[500:600] = rng.dirichlet(np.full(n_classes, 50.0), size=100)  # near even
    for Q in (P, np.asfortranarray(P)):
        out = backend.perturb_proba(Q, 2**-3, np.random.default_rng(1))
        conf = out[np.arange(n), P.argmax(axis=1)]
        assert_array_equal(out, _share_out_the_rest(P, conf))


def test_noise_independent_of_labels_and_features():
    # Two rows with the same base score get independent draws; the draw only
    # depends on the base score (and the seed), never on other features.
    X = np.column_stack([np.full(2000, 0.5), np.arange(2000.0)])
    clf = PerturbedClassifier(_frozen(ScoreColumn(), X), scale=0.1, random_state=0)
    s = clf.fit(X, np.arange(2000) % 2).predict_proba(X)[:, 1]
    X2 = X.copy()
    X2[:, 1] = -X2[:, 1]
    assert_array_equal(clf.predict_proba(X2)[:, 1], s)
    assert abs(stats.spearmanr(s, X[:, 1]).statistic) < 0.1
    # Independent draws: on the grid two may coincide, but rarely.
    assert np.unique(s).size > 0.99 * s.size


# ---------------------------------------------------------------------------
# Estimator behaviour
# ---------------------------------------------------------------------------


def test_random_state_reproducible(binary_data):
    X, y = binary_data
    a = PerturbedClassifier(random_state=0).fit(X, y)
    assert_array_equal(a.predict_proba(X), a.predict_proba(X))
    b = clone(a).fit(X, y)
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = PerturbedClassifier(random_state=1).fit(X, y)
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))
    fresh = PerturbedClassifier(random_state=None).fit(X, y)
    assert not np.array_equal(fresh.predict_proba(X), fresh.predict_proba(X))
    gen = PerturbedClassifier(random_state=np.random.default_rng(0)).fit(X, y)
    assert not np.array_equal(gen.predict_proba(X), gen.predict_proba(X))


def test_global_rng_untouched(binary_data):
    X, y = binary_data
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    PerturbedClassifier(random_state=None).fit(X, y).predict_proba(X)
    assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002


def test_close_to_base_and_predict_consistent(binary_data):
    X, y = binary_data
    clf = PerturbedClassifier(scale=2**-6, random_state=0).fit(X, y)
    base = clf.estimator_.predict_proba(X)
    proba = clf.predict_proba(X)
    # The sech kernel has standard deviation pi h / 2 before truncation.
    assert np.abs(proba - base).mean() < 2**-6 * 2
    assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    assert (clf.predict(X) == y).mean() > 0.8


def test_default_estimator_and_clone(binary_data):
    X, y = binary_data
    base = LogisticRegression(C=0.5)
    clf = PerturbedClassifier(base).fit(X, y)
    assert isinstance(clf.estimator_, LogisticRegression)
    assert clf.estimator_ is not base
    assert not hasattr(base, "coef_")
    assert isinstance(PerturbedClassifier().fit(X, y).estimator_, LogisticRegression)


def test_frozen_estimator_not_refitted(binary_data):
    X, y = binary_data
    fitted = LogisticRegression().fit(X[:100], y[:100])
    coef = fitted.coef_.copy()
    clf = PerturbedClassifier(FrozenEstimator(fitted)).fit(X, y)
    assert_array_equal(fitted.coef_, coef)
    assert clf.estimator_.estimator is fitted
    assert clf.n_features_in_ == X.shape[1]
    assert_array_equal(clf.classes_, fitted.classes_)


def test_string_labels_and_feature_names(binary_data):
    pd = pytest.importorskip("pandas")
    X, y = binary_data
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(X.shape[1])])
    labels = np.where(y == 1, "yes", "no")
    clf = PerturbedClassifier(random_state=0).fit(frame, labels)
    assert_array_equal(clf.classes_, ["no", "yes"])
    assert_array_equal(clf.feature_names_in_, frame.columns)
    assert clf.n_features_in_ == X.shape[1]
    assert set(clf.predict(frame)) <= {"no", "yes"}
    with pytest.raises(ValueError, match="feature names"):
        clf.predict_proba(frame.rename(columns={"f0": "other"}))
    with pytest.raises(ValueError, match="3 features"), pytest.warns(UserWarning):
        clf.predict_proba(X[:, :3])


@pytest.mark.parametrize("scale", [0, -0.1, 1.5, np.nan, np.inf, 5e-324])
def test_bad_scale_value(binary_data, scale):
    X, y = binary_data
    with pytest.raises(ValueError, match="scale"):
        PerturbedClassifier(scale=scale).fit(X, y)


@pytest.mark.parametrize("scale", ["0.1", None, True])
def test_bad_scale_type(binary_data, scale):
    X, y = binary_data
    with pytest.raises(TypeError, match="scale"):
        PerturbedClassifier(scale=scale).fit(X, y)


def test_bad_estimator_and_random_state(binary_data):
    X, y = binary_data
    with pytest.raises(TypeError, match="predict_proba"):
        PerturbedClassifier(DecisionTreeClassifier().fit(X, y).tree_).fit(X, y)
    from sklearn.svm import LinearSVC

    clf = PerturbedClassifier(LinearSVC())
    with pytest.raises(TypeError, match="predict_proba"):
        clf.fit(X, y)
    assert not hasattr(clf, "estimator_")  # rejected before anything is fitted
    with pytest.raises(TypeError, match="random_state"):
        PerturbedClassifier(random_state="seed").fit(X, y)
    with pytest.raises(ValueError, match="'random_state' parameter.* int >= 0"):
        PerturbedClassifier(random_state=-1).fit(X, y)


def test_frozen_estimator_ignores_sample_weight(binary_data):
    # Nothing is fitted, so weights change nothing (as FrozenEstimator.fit).
    X, y = binary_data
    lr = LogisticRegression().fit(X, y)
    a = PerturbedClassifier(FrozenEstimator(lr), random_state=0).fit(X, y)
    b = PerturbedClassifier(FrozenEstimator(lr), random_state=0)
    b.fit(X, y, sample_weight=np.arange(len(y)) % 3)
    assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_inputs_not_modified(binary_data):
    X, y = binary_data
    X0, y0 = X.copy(), y.copy()
    clf = PerturbedClassifier(random_state=0).fit(X, y)
    clf.predict_proba(X)
    assert_array_equal(X, X0)
    assert_array_equal(y, y0)


class CachingScoreColumn(ScoreColumn):
    """Keeps (and returns) its last output, as a model with a cache might."""

    def predict_proba(self, X):
        self.last_ = super().predict_proba(X)
        return self.last_


class WeakCachingScoreColumn(ScoreColumn):
    """Caches its last output through a weak reference (no reference count):
    called again on the same ``X``, it returns that array while it lives."""

    def predict_proba(self, X):
        cached = getattr(self, "cache_", None)
        if cached is not None and cached[0] is X and cached[1]() is not None:
            return cached[1]()
        proba = super().predict_proba(X)
        self.cache_ = (X, weakref.ref(proba))
        return proba


@pytest.mark.parametrize("n", [500, 3 * 2**16 + 5])
@pytest.mark.parametrize("model", [CachingScoreColumn, WeakCachingScoreColumn])
def test_base_output_never_written(n, model):
    # The perturbed probabilities go into an array of the library's own, never
    # into the base estimator's output, whoever else holds that.
    s0 = np.random.default_rng(0).uniform(size=n)
    X = s0[:, None]
    base = _frozen(model(), X)
    clf = PerturbedClassifier(base, random_state=0).fit(X, np.arange(n) % 2)
    proba = clf.predict_proba(X)
    held = [base.estimator.last_] if hasattr(base.estimator, "last_") else []
    # The weakly cached array comes back if it is still alive.
    held.append(base.predict_proba(X))
    for kept in held:
        assert not np.shares_memory(proba, kept)
        assert_array_equal(kept[:, 1], s0)
        assert_array_equal(kept[:, 0], 1.0 - s0)
    # Same draws as perturbing the probabilities with the public function.
    expected = perturb_proba(np.column_stack([1.0 - s0, s0]), random_state=0)
    assert_array_equal(proba, expected)
    assert_array_equal(proba[:, 0], 1.0 - proba[:, 1])


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("n", [500, 3 * 2**16 + 7])
@pytest.mark.parametrize(
    "bad_row, match",
    [
        ([np.nan, 0.5], "row 7 is"),  # NaN in the column that is not perturbed
        ([0.5, np.nan], "row 7 is"),
        ([0.5, np.inf], "row 7 is"),
        ([0.3, 0.6], "row 7 is"),  # sums to 0.9
        ([0.5, 0.5 + 2e-5], "row 7 is"),  # just beyond the tolerance
    ],
)
def test_base_output_rows_checked(monkeypatch, compiled, n, bad_row, match):
    # The base model's output is checked (NaN, rows summing to one) in the
    # pass that perturbs it (its range before), on every path: small and
    # large inputs, with and without the compiled loops, binary and
    # multiclass.
    if compiled and not HAVE_NUMBA:
        pytest.skip("needs numba")
    monkeypatch.setenv("SKCALIB_NUMBA", "1" if compiled else "0")
    s0 = np.random.default_rng(0).uniform(size=n)
    P = np.column_stack([1.0 - s0, s0])
    clf = PerturbedClassifier(_frozen(ProbaColumns(), P), random_state=0)
    clf.fit(P, np.arange(n) % 2)
    # A row summing to one within the tolerance passes; a row far outside
    # [0, 1] is refused even if it sums to one.
    P[3] = [0.5, 0.5 + 5e-6]
    assert _on_grid(clf.predict_proba(P)[:, 1])
    P[4] = [1.5, -0.5]
    with pytest.raises(ValueError, match="ProbaColumns.predict_proba must contain"):
        clf.predict_proba(P)
    P[4] = [0.5, 0.5]
    P[7] = bad_row
    with pytest.raises(ValueError, match=f"ProbaColumns.predict_proba.*{match}"):
        clf.predict_proba(P)
    P3 = np.column_stack([P, np.zeros(n)])
    P3[7] = [*bad_row, 0.0]
    clf3 = PerturbedClassifier(_frozen(ProbaColumns(), P3), random_state=0)
    with pytest.raises(ValueError, match=f"ProbaColumns.predict_proba.*{match}"):
        clf3.fit(P3, np.arange(n) % 3).predict_proba(P3)


@pytest.mark.parametrize("n_classes", [2, 4])
def test_noise_drawn_during_prediction_gives_sequential_draws(n_classes):
    # Large inputs: the noise is drawn in a background thread while the base
    # estimator predicts; the result is that of drawing it afterwards, from
    # the same generator, whose state also ends up the same. A third of the
    # rows on the edges: more rows to redraw than proposals computed ahead.
    n = 3 * 2**16 + 7
    rng = np.random.default_rng(5)
    P = rng.dirichlet(np.full(n_classes, 0.7), size=n)
    P[: n // 3] = np.eye(n_classes)[rng.integers(0, n_classes, n // 3)]
    P0 = P.copy()
    clf = PerturbedClassifier(_frozen(ProbaColumns(), P), scale=2**-5)
    gen = np.random.default_rng(11)
    proba = clf.set_params(random_state=gen).fit(P, np.arange(n) % 2).predict_proba(P)
    ref = np.random.default_rng(11)
    expected = backend.perturb_proba(P, 2**-5, ref)
    assert_array_equal(proba, expected)
    assert gen.random() == ref.random()
    assert_array_equal(P, P0)  # held by the caller: not overwritten


# ---------------------------------------------------------------------------
# The output is that of the sampler written out plainly
# ---------------------------------------------------------------------------


def _plain_draws(s0, h, rng):
    """Unrounded draws around ``s0``, one step at a time: one word of ``rng``
    per row for the first proposals; the rows outside [0, 1] take, in row
    order, the words that follow, for four rounds; the rest the inverse cdf
    (the documented closed form ``sech_ppf``, one ``random()`` per row)."""
    cc = np.clip(s0, 0.0, 1.0)
    draws = cc + sech_noise_of_words(rng.bit_generator.random_raw(s0.size), h)
    todo = np.flatnonzero(~((draws >= 0.0) & (draws <= 1.0)))
    for _ in range(4):
        y = cc[todo] + sech_noise_of_words(rng.bit_generator.random_raw(todo.size), h)
        ok = (y >= 0.0) & (y <= 1.0)
        draws[todo[ok]] = y[ok]
        todo = todo[~ok]
    draws[todo] = sech_ppf(rng.random(size=todo.size), cc[todo], h)
    return draws


def _plain_grid(x):
    return np.rint(x * 2.0**24) / 2.0**24


def _plain_perturbation(P, h, rng):
    """The perturbed probabilities of ``P`` (n, K), written out plainly."""
    n, k = P.shape
    if k == 2:
        s = _plain_grid(_plain_draws(P[:, 1], h, rng))
        return np.column_stack([1.0 - s, s])
    # The top-label confidence, mapped from [1/K, 1] onto [0, 1], with the
    # scale stretched alike; the confidence is rounded, then kept above 1/K.
    low = 1.0 / k
    conf = P[np.arange(n), P.argmax(axis=1)]
    t0 = np.clip((conf - low) / (1.0 - low), 0.0, 1.0)
    t = _plain_draws(t0, h / (1.0 - low), rng)
    new_conf = np.maximum(_plain_grid(low + (1.0 - low) * t), (2**24 // k + 1) / 2**24)
    return _share_out_the_rest(P, new_conf)


def _perturbation_inputs(kind, n, seed):
    rng = np.random.default_rng(100 + seed)
    if kind in ("binary", "confident", "binary, columns apart"):
        spread = 1.0 if kind == "binary" else 3.0
        s = 1.0 / (1.0 + np.exp(-spread * rng.standard_normal(n)))
        s[rng.uniform(size=n) < 0.02] = 1.0
        s[rng.uniform(size=n) < 0.02] = 0.0
        s[rng.uniform(size=n) < 0.01] = 2.0**-25  # between grid point and edge
        P = np.column_stack([1.0 - s, s])
        # A base model's output stored column by column.
        return np.asfortranarray(P) if kind == "binary, columns apart" else P
    k = int(kind.split()[0])
    P = rng.dirichlet(np.full(k, 0.2), size=n)  # confident
    P[: n // 10] = np.eye(k)[rng.integers(0, k, n // 10)]
    P[n // 10 : n // 10 + 50] = 1.0 / k
    return P


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize(
    "kind", ["binary", "confident", "binary, columns apart", "3 classes", "5 classes"]
)
def test_predict_proba_is_the_plain_sampler(monkeypatch, compiled, kind):
    # Bit for bit the sampler written out plainly above, on several seeds and
    # sizes (small inputs drawn at once, large ones in the background with
    # the proposals of the redraw computed ahead), with the compiled loops or
    # numpy passes; the generator is left where the plain sampler leaves it.
    if compiled and not HAVE_NUMBA:
        pytest.skip("needs numba")
    monkeypatch.setenv("SKCALIB_NUMBA", "1" if compiled else "0")
    cases = [(0, 3 * 2**16 + 7, 2.0**-6), (1, 2**17, 2.0**-4), (7, 999, 2.0**-6)]
    if "classes" in kind:
        # The rule of the other classes is written out row by row: slow.
        cases = [(0, 2**16 + 7, 2.0**-6), (7, 999, 2.0**-4)]
    for seed, n, h in cases:
        P = _perturbation_inputs(kind, n, seed)
        P0 = P.copy()
        expected_rng = np.random.default_rng(seed)
        expected = _plain_perturbation(P, h, expected_rng)
        gen = np.random.default_rng(seed)
        clf = PerturbedClassifier(_frozen(ProbaColumns(), P), scale=h, random_state=gen)
        proba = clf.fit(P, np.arange(n) % 2).predict_proba(P)
        assert_array_equal(proba, expected)
        assert gen.bit_generator.state == expected_rng.bit_generator.state
        assert_array_equal(P, P0)
        # An int seed and the public function give the same draws.
        clf.set_params(random_state=seed)
        assert_array_equal(clf.predict_proba(P), expected)
        assert_array_equal(perturb_proba(P, scale=h, random_state=seed), expected)


# ---------------------------------------------------------------------------
# The grid G = {k / 2**24} and the public perturb_proba
# ---------------------------------------------------------------------------


def _on_grid(x):
    # Independent of skcalib's helper: k / 2**24 exactly, 0 <= k <= 2**24.
    k = np.asarray(x, dtype=np.float64) * 2.0**24
    return bool(np.all((k == np.floor(k)) & (k >= 0) & (k <= 2.0**24)))


@pytest.mark.parametrize("n", [50, 5000, 3 * 2**16 + 7])
def test_binary_scores_and_complements_on_the_grid(n):
    rng = np.random.default_rng(n)
    s0 = rng.uniform(size=n)
    s0[: n // 4] = 0.0
    s0[n // 4 : n // 2] = 1.0
    P = np.column_stack([1.0 - s0, s0])
    for h in (2**-12, 2**-6, 0.5):
        clf = PerturbedClassifier(_frozen(ProbaColumns(), P), scale=h, random_state=1)
        Q = clf.fit(P, np.arange(n) % 2).predict_proba(P)
        one_d = perturb_proba(s0, scale=h, random_state=1)
        for scores in (Q[:, 1], Q[:, 0], one_d):
            assert _on_grid(scores) and off_grid(scores) == -1
        assert_array_equal(Q.sum(axis=1), 1.0)
        assert_array_equal(one_d, Q[:, 1])


@pytest.mark.parametrize("n_classes", [3, 4, 5, 8])
@pytest.mark.parametrize("n", [60, 5000, 3 * 2**16 + 7])
def test_multiclass_confidence_on_the_grid(n_classes, n):
    # The confidence itself is on G, above 1/K (an even base row puts it on
    # the lower edge, which is a grid point when K is a power of two).
    rng = np.random.default_rng(n_classes)
    P = rng.dirichlet(np.full(n_classes, 0.7), size=n)
    P[: n // 4] = 1.0 / n_classes
    P[n // 4 : n // 3] = np.eye(n_classes)[rng.integers(0, n_classes, n // 3 - n // 4)]
    for h in (2**-12, 2**-4):
        Q = perturb_proba(P, scale=h, random_state=2)
        conf = Q.max(axis=1)
        assert _on_grid(conf) and off_grid(conf) == -1
        assert (conf > 1.0 / n_classes).all()
        # Unique maximum: the perturbed class is the base one.
        assert ((Q == conf[:, None]).sum(axis=1) == 1).all()
        assert_array_equal(Q.argmax(axis=1)[n // 3 :], P.argmax(axis=1)[n // 3 :])
        assert_allclose(Q.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert (Q >= 0).all()


def test_multiclass_confidence_follows_the_discretised_kernel():
    # The confidence c = 1/K + (1 - 1/K) t, t from the kernel of scale
    # h / (1 - 1/K) on [0, 1], then rounded to G: P(C <= g) is the exact
    # continuous cdf at the upper edge of the cell of g (a KS test at the
    # grid resolution; draws off G would have no mass at all).
    from skcalib._backend.kernels import sech_cdf

    K, h, c0 = 3, 2**-9, 0.6
    low = 1.0 / K
    P = np.tile([c0, 0.25, 0.15], (4000, 1))
    c = np.sort(perturb_proba(P, scale=h, random_state=7).max(axis=1))
    assert _on_grid(c)
    g, first = np.unique(c, return_index=True)
    last = np.append(first[1:], c.size)
    t0, hk = (c0 - low) / (1 - low), h / (1 - low)

    def cdf(x):
        return sech_cdf(np.clip((x - low) / (1 - low), 0.0, 1.0), t0, hk)

    half = 2.0**-25
    stat = max(
        np.abs(last / c.size - cdf(g + half)).max(),
        np.abs(first / c.size - cdf(g - half)).max(),
    )
    assert stats.kstwo.sf(stat, c.size) > 1e-3


def test_nearby_base_scores_share_perturbed_values():
    # Base scores 0.3 and 0.3 + 1e-7 pi (not a dyadic distance): their
    # perturbed scores land on the same points of G, so a perturbed score does
    # not identify its base score. Noise added to each centre in finite
    # precision would put them on two disjoint shifted lattices.
    n, h = 3 * 2**16, 2**-12
    a = perturb_proba(np.full(n, 0.3), scale=h, random_state=0)
    b = perturb_proba(np.full(n, 0.3 + 1e-7 * np.pi), scale=h, random_state=1)
    assert np.isin(a, b).mean() > 0.8
    assert np.intersect1d(a, b).size > 0.5 * np.unique(a).size
    # The same through PerturbedClassifier, two leaves of a discrete model.
    X = np.repeat([0.3, 0.3 + 1e-7 * np.pi], n)[:, None]
    clf = PerturbedClassifier(_frozen(ScoreColumn(), X), scale=h, random_state=3)
    s = clf.fit(X, np.arange(2 * n) % 2).predict_proba(X)[:, 1]
    assert np.isin(s[:n], s[n:]).mean() > 0.8


def test_perturb_proba_shapes_and_inputs_untouched():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    P2 = np.column_stack([1.0 - p, p])
    P4 = rng.dirichlet(np.ones(4), size=300)
    col = p[:, None].copy()
    for y in (p, P2, P4, col):
        y0 = y.copy()
        out = perturb_proba(y, random_state=0)
        assert out.shape == y.shape and out.dtype == np.float64
        assert not np.shares_memory(out, y)
        assert_array_equal(y, y0)
    frozen = p.copy()
    frozen.flags.writeable = False
    ref = perturb_proba(p, random_state=0)
    assert_array_equal(perturb_proba(frozen, random_state=0), ref)
    # A list, and a single column, read as the positive-class probability;
    # the binary matrix gives the same draws in its second column.
    assert_array_equal(perturb_proba(list(p), random_state=0), ref)
    assert_array_equal(perturb_proba(col, random_state=0)[:, 0], ref)
    assert_array_equal(perturb_proba(P2, random_state=0)[:, 1], ref)


def test_perturb_proba_random_state():
    p = np.random.default_rng(0).uniform(size=1000)
    a = perturb_proba(p, random_state=0)
    assert_array_equal(a, perturb_proba(p, random_state=0))
    assert_array_equal(a, perturb_proba(p, random_state=np.random.default_rng(0)))
    assert not np.array_equal(a, perturb_proba(p, random_state=1))
    assert not np.array_equal(perturb_proba(p), perturb_proba(p))
    gen = np.random.default_rng(0)
    assert not np.array_equal(
        perturb_proba(p, random_state=gen), perturb_proba(p, random_state=gen)
    )
    state = np.random.get_state()[1].copy()  # noqa: NPY002
    perturb_proba(p, random_state=np.random.RandomState(0))  # noqa: NPY002
    perturb_proba(p)
    assert_array_equal(np.random.get_state()[1], state)  # noqa: NPY002


@pytest.mark.parametrize(
    "y_proba, kwargs, exc, match",
    [
        ([0.2, np.nan], {}, ValueError, "y_proba.*NaN"),
        ([0.2, np.inf], {}, ValueError, "y_proba"),
        ([0.2, 1.5], {}, ValueError, "y_proba must contain probabilities in"),
        ([-0.2, 0.5], {}, ValueError, "y_proba must contain probabilities in"),
        ([[0.2, 0.3]], {}, ValueError, "Rows of y_proba must sum to 1"),
        (np.full((2, 2, 2), 0.5), {}, ValueError, "y_proba.*dim"),
        (0.5, {}, ValueError, "y_proba"),
        ([], {}, ValueError, "y_proba is empty"),
        (["a", "b"], {}, ValueError, "y_proba"),
        (None, {}, ValueError, "y_proba"),
        ([0.5], {"scale": 0.0}, ValueError, "scale"),
        ([0.5], {"scale": 1.5}, ValueError, "scale"),
        ([0.5], {"scale": np.nan}, ValueError, "scale"),
        ([0.5], {"scale": 5e-324}, ValueError, "scale"),
        ([0.5], {"scale": "0.1"}, TypeError, "scale"),
        ([0.5], {"scale": None}, TypeError, "scale"),
        ([0.5], {"random_state": "seed"}, TypeError, "random_state"),
        ([0.5], {"random_state": 1.5}, TypeError, "random_state"),
        ([0.5], {"random_state": -1}, ValueError, "random_state"),
    ],
)
def test_perturb_proba_bad_input(y_proba, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        perturb_proba(y_proba, **kwargs)


@pytest.mark.skipif(not HAVE_NUMBA, reason="needs numba")
@pytest.mark.parametrize("n_classes", [2, 3])
def test_perturbation_same_with_and_without_numba(monkeypatch, n_classes):
    # Large enough for the compiled loops, the threads and the background
    # noise; edges and even rows included.
    n = 3 * 2**16 + 7
    rng = np.random.default_rng(n_classes)
    P = rng.dirichlet(np.full(n_classes, 0.7), size=n)
    P[:50] = np.eye(n_classes)[rng.integers(0, n_classes, 50)]
    P[50:100] = 1.0 / n_classes
    clf = PerturbedClassifier(_frozen(ProbaColumns(), P), scale=2**-7, random_state=4)
    clf.fit(P, np.arange(n) % 2)
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    compiled = clf.predict_proba(P), perturb_proba(P, scale=2**-7, random_state=4)
    monkeypatch.setenv("SKCALIB_NUMBA", "0")
    passes = clf.predict_proba(P), perturb_proba(P, scale=2**-7, random_state=4)
    for a, b in zip(compiled, passes, strict=True):
        assert_array_equal(a, b)
    assert_array_equal(compiled[0], compiled[1])


# ---------------------------------------------------------------------------
# sample_weight and metadata routing
# ---------------------------------------------------------------------------


def test_sample_weight_passed_without_routing(binary_data):
    X, y = binary_data
    w = np.random.default_rng(0).uniform(0.1, 3, size=len(y))
    clf = PerturbedClassifier(LogisticRegression()).fit(X, y, sample_weight=w)
    ref = LogisticRegression().fit(X, y, sample_weight=w)
    assert_allclose(clf.estimator_.coef_, ref.coef_)
    with pytest.raises(TypeError, match="sample_weight"):
        PerturbedClassifier(KNeighborsClassifier()).fit(X, y, sample_weight=w)


def test_metadata_routing(binary_data):
    from sklearn.exceptions import UnsetMetadataPassedError

    X, y = binary_data
    w = np.random.default_rng(0).uniform(0.1, 3, size=len(y))
    ref = LogisticRegression().fit(X, y, sample_weight=w)
    with config_context(enable_metadata_routing=True):
        base = LogisticRegression().set_fit_request(sample_weight=True)
        clf = PerturbedClassifier(base).fit(X, y, sample_weight=w)
        assert_allclose(clf.estimator_.coef_, ref.coef_)
        # The default estimator requests sample_weight.
        clf = PerturbedClassifier().fit(X, y, sample_weight=w)
        assert_allclose(clf.estimator_.coef_, ref.coef_)
        # Routed through a meta-estimator that splits the weights.
        search = GridSearchCV(
            PerturbedClassifier(base, random_state=0), {"scale": [2**-6]}, cv=2
        )
        search.fit(X, y, sample_weight=w)
        with pytest.raises(UnsetMetadataPassedError):
            PerturbedClassifier(LogisticRegression()).fit(X, y, sample_weight=w)
        routing = PerturbedClassifier(base).get_metadata_routing()
        assert "sample_weight" in str(routing)


# ---------------------------------------------------------------------------
# scikit-learn API compliance
# ---------------------------------------------------------------------------


# GaussianNB itself warns (log of a zero prior) in the one-label check.
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@parametrize_with_checks(
    [
        PerturbedClassifier(),
        PerturbedClassifier(GaussianNB(), scale=2**-3),
    ]
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_tags_follow_base():
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.utils import get_tags

    assert get_tags(PerturbedClassifier()).non_deterministic
    hgb = PerturbedClassifier(HistGradientBoostingClassifier())
    assert get_tags(hgb).input_tags.allow_nan
    assert not get_tags(PerturbedClassifier()).input_tags.allow_nan


def test_pickle_pipeline_round_trip(binary_data):
    X, y = binary_data
    clf = PerturbedClassifier(random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(clf))
    assert_array_equal(again.predict_proba(X), clf.predict_proba(X))

    pipe = make_pipeline(StandardScaler(), PerturbedClassifier(random_state=0))
    pipe.fit(X, y)
    scaled = StandardScaler().fit_transform(X)
    direct = PerturbedClassifier(random_state=0).fit(scaled, y)
    assert_allclose(pipe.predict_proba(X), direct.predict_proba(scaled))
    pipe2 = pickle.loads(pickle.dumps(pipe))
    assert_array_equal(pipe2.predict(X), pipe.predict(X))

    params = clone(clf).get_params()
    assert params["scale"] == 2**-6 and params["random_state"] == 0


def test_grid_search_over_scale(binary_data):
    X, y = binary_data
    search = GridSearchCV(
        PerturbedClassifier(LogisticRegression(), random_state=0),
        {"scale": [2**-6, 0.9]},
        scoring="roc_auc",
        cv=3,
    ).fit(X, y)
    # A nearly uniform perturbation destroys ranking; the small one does not.
    assert search.best_params_ == {"scale": 2**-6}
    assert search.cv_results_["mean_test_score"][1] < 0.8


# ---------------------------------------------------------------------------
# AUROC cost (paper's observation)
# ---------------------------------------------------------------------------


def test_breast_cancer_auroc_loss_small(cancer):
    X, y = cancer
    base = make_pipeline(StandardScaler(), LogisticRegression())
    losses = []
    for fold, (train, test) in enumerate(StratifiedKFold(5).split(X, y)):
        fitted = clone(base).fit(X[train], y[train])
        auc0 = roc_auc_score(y[test], fitted.predict_proba(X[test])[:, 1])
        for seed in range(5):
            clf = PerturbedClassifier(
                FrozenEstimator(fitted), scale=2**-6, random_state=10 * fold + seed
            ).fit(X[train], y[train])
            auc = roc_auc_score(y[test], clf.predict_proba(X[test])[:, 1])
            losses.append(auc0 - auc)
    assert np.mean(losses) < 0.01
    assert np.max(losses) < 0.02


# ---------------------------------------------------------------------------
# Choosing the scale
# ---------------------------------------------------------------------------


def test_select_scale_scores_match_manual_cv(cancer):
    X, y = cancer
    model = make_pipeline(StandardScaler(), LogisticRegression())
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    res = select_perturbation_scale(
        model,
        X,
        y,
        scales=[1.0, 2**-6, 2**-9],
        cv=cv,
        bound_method=None,
        random_state=0,
    )
    assert_array_equal(res.scales, [2**-9, 2**-6, 1.0])
    manual = cross_val_score(model, X, y, cv=cv, scoring="roc_auc")
    assert_allclose(res.base_scores, manual)
    assert res.scores.shape == (3, 4)
    # The loss is the mean unperturbed score minus the mean perturbed one.
    assert_allclose(res.score_loss, manual.mean() - res.scores.mean(axis=1))
    # Scale 1 is close to uniform noise; 2**-9 costs next to nothing.
    assert res.score_loss[0] < 0.005
    assert res.score_loss[2] > 0.05
    assert res.recommended_scale == 2**-6
    assert_array_equal(res.within_tolerance, [True, True, False])
    assert res.recommended_index == 1
    # Wrapping the model in a PerturbedClassifier changes nothing.
    again = select_perturbation_scale(
        PerturbedClassifier(model, scale=0.5),
        X,
        y,
        scales=[1.0, 2**-6, 2**-9],
        cv=cv,
        bound_method=None,
        random_state=0,
    )
    assert_array_equal(again.scores, res.scores)


def test_select_scale_default_scoring_is_one_vs_rest_auroc_for_multiclass():
    X, y = make_classification(
        n_samples=600, n_classes=3, n_informative=4, random_state=0
    )
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    res = select_perturbation_scale(
        LogisticRegression(), X, y, scales=[2**-6], cv=cv, random_state=0
    )
    assert res.scoring == "roc_auc_ovr"
    manual = cross_val_score(LogisticRegression(), X, y, cv=cv, scoring="roc_auc_ovr")
    assert_allclose(res.base_scores, manual)


def test_select_scale_rule_and_tolerance(cancer):
    X, y = cancer
    model = make_pipeline(StandardScaler(), LogisticRegression())
    kw = dict(cv=3, bound_method=None, random_state=0)
    loose = select_perturbation_scale(
        model, X, y, scales=[2**-6, 2**-3, 1.0], tolerance=1.0, **kw
    )
    assert loose.recommended_scale == 1.0
    tight = select_perturbation_scale(
        model,
        X,
        y,
        scales=[0.5, 1.0],
        tolerance=0.0,
        **kw,
    )
    # No scale qualifies: the smallest one is returned and flagged.
    assert tight.recommended_scale == 0.5
    assert not tight.within_tolerance.any()


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"scales": []}, ValueError, "scales"),
        ({"scales": [0.1, 0.0]}, ValueError, "scales"),
        ({"scales": [2.0]}, ValueError, "scales"),
        ({"scales": ["a"]}, TypeError, "scales"),
        ({"tolerance": -0.1}, ValueError, "tolerance"),
        ({"delta": 0.0}, ValueError, "delta"),
        ({"bound_method": "bogus"}, ValueError, "bound_method"),
        ({"scoring": "no_such_score"}, ValueError, "no_such_score"),
    ],
)
def test_select_scale_bad_input(binary_data, kwargs, exc, match):
    X, y = binary_data
    with pytest.raises(exc, match=match):
        select_perturbation_scale(LogisticRegression(), X, y, **kwargs)


def test_scorer_registered():
    assert "neg_calibration_error_bound" in get_scorer_names()
    scorer = get_scorer("neg_calibration_error_bound")
    assert "CalibrationBoundScorer" in repr(scorer)


# ---------------------------------------------------------------------------
# Certified bound on perturbed scores, and the bound scorer
# ---------------------------------------------------------------------------


def _exact_perturbed_ce(eta0, h, n_grid=2001):
    """Exact CE of sech-perturbed scores when s0 ~ U(0, 1) and P(y=1|s0) = eta0.

    The perturbed score has density q(s) = ∫ k(s|s0) ds0 and calibration
    function eta(s) = ∫ eta0(s0) k(s|s0) ds0 / q(s), so that
    CE = ∫ |s q(s) - ∫ eta0(s0) k(s|s0) ds0| ds (trapezoid rule on a grid).
    """
    grid = np.linspace(0.0, 1.0, n_grid)
    s0, s = grid[:, None], grid[None, :]
    norm = h * (_gd((1.0 - s0) / h) + _gd(s0 / h))
    k = 1.0 / np.cosh((s - s0) / h) / norm
    q = np.trapezoid(k, grid, axis=0)
    m = np.trapezoid(eta0(grid)[:, None] * k, grid, axis=0)
    return np.trapezoid(np.abs(grid * q - m), grid)


def _eta0(s):
    # Overconfident model: true probability pulled towards 1/2.
    return 0.5 + 0.6 * (s - 0.5)


def test_exact_ce_reference_against_simulation():
    # Checks the quadrature with a large simulation binned finely.
    h = 2**-3
    rng = np.random.default_rng(0)
    s0 = rng.uniform(size=1_000_000)
    u = rng.uniform(size=s0.size)
    # Inverse CDF by root finding on a table (independent of the library).
    grid = np.linspace(0, 1, 2001)
    table = ref_sech_cdf(grid[None, :], np.linspace(0, 1, 201)[:, None], h)
    idx = np.rint(s0 * 200).astype(int)
    s = np.empty_like(s0)
    for i in range(201):
        rows = idx == i
        s[rows] = np.interp(u[rows], table[i], grid)
    s0 = idx / 200.0
    y = rng.uniform(size=s0.size) < _eta0(s0)
    bins = np.minimum((s * 400).astype(int), 399)
    count = np.bincount(bins, minlength=400)
    ybar = np.bincount(bins, weights=y, minlength=400) / count
    sbar = np.bincount(bins, weights=s, minlength=400) / count
    ce_sim = np.sum(count * np.abs(ybar - sbar)) / s.size
    assert abs(ce_sim - _exact_perturbed_ce(_eta0, h)) < 3e-3


@pytest.mark.parametrize("h", [2**-4, 2**-3])
def test_bound_covers_exact_ce_of_perturbed_model(h):
    from skcalib.metrics import calibration_error_bound

    ce = _exact_perturbed_ce(_eta0, h)
    rng = np.random.default_rng(int(1 / h))
    n, reps = 6000, 10
    uppers, estimates = [], []
    for rep in range(reps):
        s0 = rng.uniform(size=n)
        y = (rng.uniform(size=n) < _eta0(s0)).astype(int)
        clf = PerturbedClassifier(_frozen(ScoreColumn(), s0[:, None]), scale=h)
        clf.set_params(random_state=rep).fit(s0[:, None], y)
        s = clf.predict_proba(s0[:, None])[:, 1]
        bound = calibration_error_bound(
            y,
            s,
            method="nw",
            perturbation_scale=h,
            random_state=rep,
            return_details=True,
        )
        uppers.append(bound.upper)
        estimates.append(bound.estimate)
    uppers = np.array(uppers)
    assert (uppers >= ce).mean() >= 0.9
    # Not vacuous: well below the trivial bound of 1.
    assert np.median(uppers) < 0.5
    assert abs(np.mean(estimates) - ce) < 0.05


def _manual_bound(y, proba, **kwargs):
    from skcalib.metrics import calibration_error_bound

    return calibration_error_bound(
        y, proba, delta=0.05, n_splits=5, random_state=0, **kwargs, return_details=True
    ).upper


def test_bound_scorer_dispatch(binary_data):
    X, y = binary_data
    scorer = get_scorer("neg_calibration_error_bound")
    clf = PerturbedClassifier(scale=2**-3, random_state=0).fit(X, y)
    s = clf.predict_proba(X)[:, 1]
    expected = _manual_bound(y, s, method="nw", perturbation_scale=2**-3)
    assert scorer(clf, X, y) == pytest.approx(-expected)

    pipe = make_pipeline(StandardScaler(), PerturbedClassifier(random_state=0))
    pipe.fit(X, y)
    s = pipe.predict_proba(X)[:, 1]
    expected = _manual_bound(y, s, method="nw", perturbation_scale=2**-6)
    assert scorer(pipe, X, y) == pytest.approx(-expected)

    plain = LogisticRegression().fit(X, y)
    s = plain.predict_proba(X)[:, 1]
    expected = _manual_bound(y, s, method="tv", assume="monotone")
    assert scorer(plain, X, y) == pytest.approx(-expected)

    # The bound is for unweighted i.i.d. samples: weights are refused.
    with pytest.raises(ValueError, match="sample_weight"):
        scorer(clf, X, y, sample_weight=np.ones(len(y)))


def test_bound_scorer_multiclass_top_label():
    X, y = make_classification(
        n_samples=900, n_classes=3, n_informative=4, random_state=0
    )
    labels = np.array(["a", "b", "c"])[y]
    clf = PerturbedClassifier(scale=2**-3, random_state=0).fit(X, labels)
    P = clf.predict_proba(X)
    pred = P.argmax(axis=1)
    correct = (clf.classes_[pred] == labels).astype(int)
    expected = _manual_bound(
        correct, P.max(axis=1), method="nw", perturbation_scale=2**-3
    )
    scorer = get_scorer("neg_calibration_error_bound")
    assert scorer(clf, X, labels) == pytest.approx(-expected)


def test_grid_search_with_bound_scoring():
    X, y = make_classification(n_samples=6000, n_features=8, random_state=1)
    scales = 2.0 ** -np.arange(3, 10)
    search = GridSearchCV(
        PerturbedClassifier(LogisticRegression(), random_state=0),
        {"scale": scales},
        scoring={
            "auc": "roc_auc",
            "ce_bound": get_scorer("neg_calibration_error_bound"),
        },
        refit="auc",
        cv=3,
    ).fit(X, y)
    res = search.cv_results_
    bound = -res["mean_test_ce_bound"]
    assert np.isfinite(bound).all() and (bound > 0).all() and (bound <= 1).all()
    # The certificate tightens as the scale grows (1/8 against 1/512).
    assert bound[0] < bound[-1]
    best = np.argmax(res["mean_test_auc"])
    assert search.best_params_["scale"] == scales[best]
    assert isinstance(search.best_estimator_, PerturbedClassifier)


def test_select_scale_bounds():
    X, y = make_classification(n_samples=4000, n_features=8, random_state=2)
    res = select_perturbation_scale(
        LogisticRegression(),
        X,
        y,
        scales=[2**-8, 2**-5, 2**-2],
        cv=3,
        random_state=0,
    )
    assert res.bound_method == "nw" and res.n_samples == 4000
    assert res.bound_upper.shape == (3,) and len(res.bounds) == 3
    assert (res.bound_upper >= res.bound_estimate).all()
    assert res.bound_upper[2] < res.bound_upper[0]
    assert res.base_bound_upper >= res.base_bound_estimate
    # Reproducible with a seed.
    again = select_perturbation_scale(
        LogisticRegression(),
        X,
        y,
        scales=[2**-8, 2**-5, 2**-2],
        cv=3,
        random_state=0,
    )
    assert_array_equal(again.bound_upper, res.bound_upper)
    assert_array_equal(again.scores, res.scores)


def test_select_scale_groups():
    from sklearn.model_selection import GroupKFold

    X, y = make_classification(n_samples=300, random_state=0)
    groups = np.arange(300) // 10
    res = select_perturbation_scale(
        LogisticRegression(),
        X,
        y,
        scales=[2**-6],
        cv=GroupKFold(3),
        groups=groups,
        bound_method=None,
        random_state=0,
    )
    manual = cross_val_score(
        LogisticRegression(),
        X,
        y,
        cv=GroupKFold(3),
        groups=groups,
        scoring="roc_auc",
    )
    assert_allclose(res.base_scores, manual)


def test_exact_ce_reference_agrees_with_datasets():
    from skcalib.datasets import true_calibration_error

    for h in (2**-6, 2**-3):
        ours = _exact_perturbed_ce(np.square, h)
        theirs = true_calibration_error("u2", perturbation_scale=h)
        assert abs(ours - theirs) < 1e-5


@pytest.mark.parametrize("problem", ["u2", "overconfident", "wiggle"])
def test_perturbed_datasets_problem_kernel_and_coverage(problem):
    # Base model = the problem's original scores f (known calibration function);
    # PerturbedClassifier perturbs them, and the NW bound at the same scale must
    # cover the problem's exact CE after perturbation.
    from skcalib.datasets import make_calibration_problem, true_calibration_error
    from skcalib.metrics import calibration_error_bound

    h = 2**-4
    ce = true_calibration_error(problem, perturbation_scale=h)
    covered, uppers = [], []
    for rep in range(5):
        data = make_calibration_problem(8000, problem=problem, random_state=rep)
        X = data.scores_orig[:, None]
        # the noise seed must differ from the data seed: the same stream would
        # make the uniforms behind the noise equal to those behind the scores
        clf = PerturbedClassifier(
            _frozen(ScoreColumn(), X), scale=h, random_state=1000 + rep
        )
        s = clf.fit(X, data.y_true).predict_proba(X)[:, 1]
        pit = ref_sech_cdf(s, data.scores_orig, h)
        assert stats.kstest(pit, "uniform").pvalue > 1e-4
        bound = calibration_error_bound(
            data.y_true,
            s,
            method="nw",
            perturbation_scale=h,
            random_state=rep,
            return_details=True,
        )
        covered.append(bound.lower <= ce <= bound.upper)
        uppers.append(bound.upper)
    assert np.mean(covered) >= 0.8
    assert np.median(uppers) < ce + 0.2


def test_unfitted_frozen_estimator_raises_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        PerturbedClassifier(FrozenEstimator(GaussianNB())).fit(
            np.zeros((4, 1)), [0, 1, 0, 1]
        )


def test_select_scale_rejects_non_finite_fold_scores():
    from sklearn.model_selection import KFold

    X, y = make_classification(n_samples=300, random_state=0)
    order = np.argsort(y, kind="stable")  # unshuffled folds of one class
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="non-finite"):
        select_perturbation_scale(
            LogisticRegression(), X[order], y[order], cv=KFold(3), random_state=0
        )


@pytest.mark.parametrize("cv", [10**15, [3], {}, "x", 1])
def test_select_perturbation_scale_names_a_bad_cv(cv):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="cv=|'cv' parameter"):
        select_perturbation_scale(
            LogisticRegression(), X, y, cv=cv, scales=[0.1], bound_method=None
        )
