"""Input that used to crash, pass silently or print a whole array.

Each test here failed before the fix it guards (issue 43, section 5).
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold

from skcalib import KernelRecalibrator, PerturbedClassifier, select_perturbation_scale
from skcalib.metrics import binned_calibration_error, get_scorer, smooth_ece


class BrokenOutput(ClassifierMixin, BaseEstimator):
    """A classifier whose ``predict_proba`` returns ``kind`` of bad output."""

    def __init__(self, kind="good", n_classes=2):
        self.kind = kind
        self.n_classes = n_classes

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        X = np.asarray(X, dtype=np.float64)
        k = self.n_classes
        e = np.exp(X[:, :k] if X.shape[1] >= k else np.tile(X[:, :1], (1, k)))
        P = e / e.sum(axis=1, keepdims=True)
        if self.kind == "one column":
            return P[:, 1:2]
        if self.kind == "1-D":
            return P[:, 1]
        if self.kind == "n - 1 rows":
            return P[:-1]
        if self.kind == "out of range":
            # sums to one, and clipping would make it look valid
            P[3, :2] = [1.5, -0.5]
            P[3, 2:] = 0.0
        return P


def _data(n_classes=2, n=200):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4))
    y = np.arange(n) % n_classes
    return X, y


BAD_KINDS = [
    ("one column", "BrokenOutput.predict_proba returned an array of shape"),
    ("1-D", "BrokenOutput.predict_proba returned an array of shape"),
    ("n - 1 rows", "BrokenOutput.predict_proba returned an array of shape"),
    ("out of range", r"output of BrokenOutput.predict_proba must contain .*\[0, 1\]"),
]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("kind, match", BAD_KINDS)
def test_perturbed_classifier_checks_its_base_output(kind, match, n_classes):
    X, y = _data(n_classes)
    good = PerturbedClassifier(BrokenOutput("good", n_classes), random_state=0)
    assert good.fit(X, y).predict_proba(X).shape == (len(X), n_classes)
    clf = PerturbedClassifier(BrokenOutput(kind, n_classes), random_state=0)
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y).predict_proba(X)


@pytest.mark.parametrize("name", ["neg_smooth_ece", "neg_calibration_error_bound"])
@pytest.mark.parametrize("kind, match", BAD_KINDS)
def test_scorers_check_the_model_output(name, kind, match):
    X, y = _data(3 if name == "neg_smooth_ece" else 2)
    k = len(np.unique(y))
    scorer = get_scorer(name)
    assert np.isfinite(scorer(BrokenOutput("good", k).fit(X, y), X, y))
    with pytest.raises(ValueError, match=match):
        scorer(BrokenOutput(kind, k).fit(X, y), X, y)


@pytest.mark.parametrize("metric", [smooth_ece, binned_calibration_error])
def test_scalar_weight_with_groups(metric):
    # A scalar weight is every row's weight: the same result as that many
    # equal weights, group by group.
    rng = np.random.default_rng(1)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    g = np.arange(300) % 3
    scalar = metric(y, p, sample_weight=2.0, groups=g)
    full = metric(y, p, sample_weight=np.full(300, 2.0), groups=g)
    np.testing.assert_array_equal(scalar.values, full.values)
    np.testing.assert_array_equal(scalar.weights, [200.0, 200.0, 200.0])


def test_select_perturbation_scale_with_the_estimators_own_score():
    # scoring=None is the estimator's score method (accuracy), as in
    # cross_validate; the base scores are the folds' accuracies by hand.
    X, y = _data(2, n=300)
    X[:, 0] += y  # learnable
    cv = StratifiedKFold(3)
    res = select_perturbation_scale(
        LogisticRegression(),
        X,
        y,
        scoring=None,
        cv=cv,
        scales=[2**-6],
        bound_method=None,
        random_state=0,
    )
    by_hand = [
        LogisticRegression().fit(X[tr], y[tr]).score(X[te], y[te])
        for tr, te in cv.split(X, y)
    ]
    np.testing.assert_allclose(res.base_scores, by_hand)
    assert res.scoring == "score"
    assert res.scores.shape == (1, 3) and np.all((res.scores >= 0) & (res.scores <= 1))


@pytest.mark.parametrize("where", ["y_true", "y_proba", "sample_weight"])
def test_complex_input_is_refused_without_the_array(where):
    n = 5000
    y, p, w = np.arange(n) % 2, np.full(n, 0.5), np.ones(n)
    args = {"y_true": y, "y_proba": p, "sample_weight": w}
    args[where] = args[where] + 0.5j
    with pytest.raises(ValueError) as info:
        smooth_ece(**args)
    message = str(info.value)
    assert where in message and "complex" in message
    assert len(message) < 150  # not the whole array


def _float16_softmax(n=400, k=10, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)).astype(np.float16)
    e = np.exp(z)
    P = (e / e.sum(axis=1, keepdims=True)).astype(np.float16)
    y = np.array([rng.choice(k, p=r / r.sum()) for r in P.astype(np.float64)])
    return y, P


def test_float16_softmax_rows_pass_the_tolerance_of_their_precision():
    y, P = _float16_softmax()
    off = np.abs(P.astype(np.float64).sum(axis=1) - 1.0).max()
    assert 1e-5 < off <= 10 * np.finfo(np.float16).eps  # beyond the float64 rule
    value = smooth_ece(y, P)
    # The same rows renormalised in float64 give the same measure, up to the
    # float16 rounding of the probabilities.
    Q = P.astype(np.float64)
    assert value == pytest.approx(
        smooth_ece(y, Q / Q.sum(axis=1, keepdims=True)), abs=2e-3
    )
    # A float16 matrix whose rows are really off is still refused...
    bad = P.copy()
    bad[0] = bad[0] * np.float16(1.05)
    with pytest.raises(
        ValueError, match=r"Rows of y_proba must sum to 1 \(tolerance 0.0097656"
    ):
        smooth_ece(y, bad)
    # ... and float64 rows keep the float64 tolerance.
    with pytest.raises(ValueError, match=r"tolerance 1e-05"):
        smooth_ece(y, P.astype(np.float64))


def test_perturbed_classifier_accepts_a_float16_model():
    y, P = _float16_softmax(k=3)

    class Half(BrokenOutput):
        def predict_proba(self, X):
            return P

    clf = PerturbedClassifier(FrozenEstimator(Half().fit(P, y)), random_state=0)
    out = clf.fit(P, y).predict_proba(P)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


def test_recalibrator_takes_integer_labels_held_as_objects():
    # Labels 0 and 1 of a 3-column matrix are column indices, whether their
    # dtype is int or object (a pandas object column).
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), size=300)
    y = rng.integers(0, 2, size=300)
    a = KernelRecalibrator(base="temperature", bandwidth=0.1).fit(P, y)
    b = KernelRecalibrator(base="temperature", bandwidth=0.1).fit(P, y.astype(object))
    np.testing.assert_array_equal(b.classes_, [0, 1, 2])
    np.testing.assert_allclose(b.transform(P), a.transform(P))


def test_bound_scorer_names_the_perturbed_model():
    # Through a PerturbedClassifier the bound scorer reads its base model's
    # output checked by name, too.
    X, y = _data(2)
    clf = PerturbedClassifier(BrokenOutput("out of range"), random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="BrokenOutput.predict_proba"):
        get_scorer("neg_calibration_error_bound")(clf, X, y)
