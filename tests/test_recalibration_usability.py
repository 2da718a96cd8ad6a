"""RecalibratedClassifier and KernelRecalibrator as scikit-learn users expect."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from skcalib import KernelRecalibrator, RecalibratedClassifier


def _data(n=120, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % n_classes
    X = rng.normal(size=(n, 3)) + y[:, None]
    return X, y


def test_grid_search_tunes_the_default_calibrator():
    X, y = _data()
    search = GridSearchCV(
        RecalibratedClassifier(LogisticRegression(), cv=2),
        {"calibrator__method": ["grid", "logit"]},
        cv=2,
    ).fit(X, y)
    assert search.best_params_["calibrator__method"] in ("grid", "logit")
    chosen = search.best_estimator_.calibrated_classifiers_[0].calibrators[0]
    assert chosen.method_ == search.best_params_["calibrator__method"]


def test_set_params_of_the_default_calibrator_leaves_the_original_alone():
    clf = RecalibratedClassifier()
    tuned = clone(clf).set_params(calibrator__method="grid")
    assert clf.calibrator is None
    assert isinstance(tuned.calibrator, KernelRecalibrator)
    assert tuned.calibrator.get_params() == {
        **KernelRecalibrator().get_params(),
        "method": "grid",
    }
    # Setting calibrator=None and a nested parameter together still works.
    other = RecalibratedClassifier(calibrator=KernelRecalibrator(method="grid"))
    other.set_params(calibrator=None, calibrator__shrinkage=0.0)
    assert other.calibrator.get_params()["shrinkage"] == 0.0
    assert other.calibrator.get_params()["method"] == "auto"


@pytest.mark.parametrize("method", ["auto", "grid"])
def test_one_dimensional_scores_give_one_dimensional_output(method):
    rng = np.random.default_rng(0)
    p = rng.uniform(size=150)
    y = rng.uniform(size=150) < p
    cal = KernelRecalibrator(method=method).fit(p, y)
    q = cal.transform(p)
    assert q.shape == (150,)
    assert cal.transform(p[:, None]).shape == (150, 1)
    np.testing.assert_array_equal(q, cal.transform(p[:, None])[:, 0])
    np.testing.assert_array_equal(
        KernelRecalibrator(method=method).fit_transform(p, y), q
    )
    wrapped = clone(cal).set_output(transform="pandas").fit(p, y).transform(p)
    np.testing.assert_array_equal(np.asarray(wrapped).reshape(-1), q)


def test_a_feature_name_warning_is_said_once_per_call():
    X, y = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    clf = RecalibratedClassifier(LogisticRegression(), cv=5).fit(frame, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.predict_proba(X)
    names = [w for w in caught if "feature names" in str(w.message)]
    assert len(names) == 1
    assert names[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.predict_proba(frame)


def test_a_calibration_set_missing_a_class_is_warned_about():
    X, y = _data(n=300, n_classes=4)
    base = LogisticRegression().fit(X, y)
    keep = y != 3
    with pytest.warns(UserWarning, match=r"no sample of class\(es\) \[3\]"):
        clf = RecalibratedClassifier(FrozenEstimator(base)).fit(X[keep], y[keep])
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2, 3])
    assert clf.predict_proba(X).shape == (300, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RecalibratedClassifier(FrozenEstimator(base)).fit(X, y)


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_fitted_shrinkage_is_sized_on_the_whole_set(weighted):
    X, y = _data(n=100)
    w = np.linspace(0.5, 1.5, 100) if weighted else None
    clf = RecalibratedClassifier(LogisticRegression(), cv=5)
    clf.fit(X, y, sample_weight=w)
    total = 100.0 if w is None else w.sum()
    fitted_alone = KernelRecalibrator().fit(np.full(100, 0.5), y, sample_weight=w)
    # "auto" on all the rows at once, independently of the folds' sizes.
    assert fitted_alone.shrinkage_ == pytest.approx(1 / (2 * total + 1))
    for pair in clf.calibrated_classifiers_:
        assert pair.calibrators[0].shrinkage_ == pytest.approx(fitted_alone.shrinkage_)
    # A shrinkage given by the user is kept as it is.
    clf = RecalibratedClassifier(LogisticRegression(), cv=5)
    clf.set_params(calibrator__shrinkage=0.25).fit(X, y)
    assert all(p.calibrators[0].shrinkage_ == 0.25 for p in clf.calibrated_classifiers_)
