"""Scorers in sklearn's model-selection tools."""

import numpy as np
import pytest
import sklearn
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
)

from skcalib.metrics import (
    binned_calibration_error,
    get_scorer,
    get_scorer_names,
    smooth_ece,
)

SCORERS = {
    "neg_smooth_ece": smooth_ece,
    "neg_expected_calibration_error": lambda y, p, **kw: binned_calibration_error(
        y, p, n_bins=15, **kw
    ),
    "neg_l2_calibration_error": lambda y, p, **kw: binned_calibration_error(
        y, p, n_bins="cbrt", strategy="quantile", norm="l2", **kw
    ),
}


@pytest.fixture(scope="module")
def binary_data():
    X, y = make_classification(n_samples=600, n_features=6, random_state=0)
    return X, y


def test_names_registered_and_sklearn_fallback():
    names = get_scorer_names()
    for name in SCORERS:
        assert name in names
    assert "roc_auc" in names
    assert callable(get_scorer("neg_log_loss"))
    with pytest.raises(ValueError):
        get_scorer("no_such_scorer")


@pytest.mark.parametrize("name", list(SCORERS))
def test_scorer_equals_metric_on_held_out_fold(binary_data, name):
    X, y = binary_data
    yy = np.where(y == 1, "spam", "ham")  # string labels, positive = greater label
    clf = LogisticRegression().fit(X[:400], yy[:400])
    score = get_scorer(name)(clf, X[400:], yy[400:])
    # the scorer passes pos_label=classes_[-1]; 1-D text-label scores need it
    expected = -SCORERS[name](
        yy[400:], clf.predict_proba(X[400:])[:, 1], pos_label="spam"
    )
    assert score == pytest.approx(expected)
    assert score <= 0


def test_cross_val_score_and_cross_validate(binary_data):
    X, y = binary_data
    scores = cross_val_score(
        LogisticRegression(), X, y, cv=3, scoring=get_scorer("neg_smooth_ece")
    )
    assert scores.shape == (3,) and np.all(scores <= 0)
    res = cross_validate(
        LogisticRegression(),
        X,
        y,
        cv=3,
        scoring={n: get_scorer(n) for n in SCORERS} | {"auc": "roc_auc"},
    )
    for n in SCORERS:
        assert np.all(res[f"test_{n}"] <= 0)
    # Each fold's score is minus the metric of a model refit on that fold's
    # training part (cv=3 on a classifier is an unshuffled StratifiedKFold).
    for k, (train, test) in enumerate(StratifiedKFold(3).split(X, y)):
        proba = LogisticRegression().fit(X[train], y[train]).predict_proba(X[test])
        ref = -smooth_ece(y[test], proba[:, 1])
        assert scores[k] == pytest.approx(ref)
        for n, metric in SCORERS.items():
            expected = -metric(y[test], proba[:, 1])
            assert res[f"test_{n}"][k] == pytest.approx(expected)


def test_grid_search_refit(binary_data):
    X, y = binary_data
    search = GridSearchCV(
        LogisticRegression(),
        {"C": [1e-3, 1.0]},
        scoring={"ece": get_scorer("neg_smooth_ece"), "acc": "accuracy"},
        refit="ece",
        cv=3,
    ).fit(X, y)
    means = search.cv_results_["mean_test_ece"]
    assert search.best_index_ == int(np.argmax(means))


def test_multiclass_fold_missing_a_class():
    X, y = make_classification(
        n_samples=300, n_classes=3, n_informative=4, random_state=0
    )
    clf = LogisticRegression().fit(X, y)
    mask = y != 2  # evaluation set without class 2
    score = get_scorer("neg_smooth_ece")(clf, X[mask], y[mask])
    expected = -smooth_ece(y[mask], clf.predict_proba(X[mask]), labels=[0, 1, 2])
    assert score == pytest.approx(expected)


def test_sample_weight_with_metadata_routing(binary_data):
    X, y = binary_data
    w = np.random.default_rng(0).uniform(0.1, 3, size=len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = get_scorer("neg_smooth_ece").set_score_request(sample_weight=True)
        est = LogisticRegression().set_fit_request(sample_weight=False)
        cv = KFold(3)
        res = cross_validate(
            est,
            X,
            y,
            cv=cv,
            scoring=scorer,
            params={"sample_weight": w},
            return_estimator=True,
        )
        # a fresh registry copy is unaffected by set_score_request on the first
        assert get_scorer("neg_smooth_ece").get_metadata_routing() is not None
    for k, (_, test) in enumerate(cv.split(X, y)):
        expected = -smooth_ece(
            y[test],
            res["estimator"][k].predict_proba(X[test])[:, 1],
            sample_weight=w[test],
        )
        assert res["test_score"][k] == pytest.approx(expected)
        unweighted = -smooth_ece(
            y[test], res["estimator"][k].predict_proba(X[test])[:, 1]
        )
        assert res["test_score"][k] != pytest.approx(unweighted)


@pytest.mark.parametrize(
    "name",
    ["neg_smooth_ece", "neg_calibration_error_bound", "neg_expected_calibration_error"],
)
def test_weights_without_a_score_request_are_an_error(binary_data, name):
    # As for sklearn's own scorers: weights routed to the fit but not
    # requested by the scorer must not be dropped silently.
    from sklearn.exceptions import UnsetMetadataPassedError

    X, y = binary_data
    w = np.ones(len(y))
    with sklearn.config_context(enable_metadata_routing=True):
        est = LogisticRegression().set_fit_request(sample_weight=True)
        with pytest.raises(UnsetMetadataPassedError, match="sample_weight"):
            cross_validate(
                est,
                X,
                y,
                cv=3,
                scoring={"a": get_scorer(name)},
                params={"sample_weight": w},
            )


def test_the_scorer_table_is_seen_by_the_import_graph():
    # The table imports each metric module by name (deferred), so the
    # import-graph test sees the edges; the metric modules know no scorer.
    from test_layering import graph

    edges = graph()
    metrics = {
        f"skcalib.metrics.{m}"
        for m in ("_binned", "_bounds", "_decomposition", "_kde", "_smooth", "_summary")
    }
    assert metrics <= edges["skcalib.metrics._scorer"]
    for module in metrics:
        assert "skcalib.metrics._scorer" not in edges[module], module
    names = [n for n in get_scorer_names() if n.startswith("neg_") and "calib" in n]
    assert set(names) >= {"neg_calibration_error_bound", "neg_l2_calibration_error"}
