"""Warnings name the user's line and are said once per call."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression

from skcalib.metrics import kde_calibration_error
from skcalib.perturbation import select_perturbation_scale


def _caught(func):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        func()
    return caught


def test_feature_name_warning_said_once_at_the_callers_line():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(600, 3)), columns=["a", "b", "c"])
    y = (X["a"] + rng.normal(size=600) > 0).astype(int).to_numpy()
    model = FrozenEstimator(LogisticRegression().fit(X, y))
    # A model fitted on named columns, then given a bare array: scikit-learn
    # warns on every predict, i.e. once per split and scorer call.
    caught = _caught(
        lambda: select_perturbation_scale(
            model, X.to_numpy(), y, scales=[0.01, 0.1], random_state=0
        )
    )
    names = [w for w in caught if "feature names" in str(w.message)]
    assert len(names) == 1
    assert names[0].filename == __file__


def test_bandwidth_warning_points_at_the_callers_line():
    # Heavily duplicated scores: the likelihood grows as the bandwidth -> 0.
    rng = np.random.default_rng(19)
    rng.beta(2, 3, 800), rng.random(800)
    s = np.repeat(rng.random(20), 20)
    y = (rng.random(400) < s).astype(int)
    caught = _caught(lambda: kde_calibration_error(y, s))
    edge = [w for w in caught if "end of the grid" in str(w.message)]
    assert len(edge) == 1
    assert edge[0].filename == __file__


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_warning_records_survive_parallel_splits(n_jobs):
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.normal(size=(400, 2)), columns=["a", "b"])
    y = (X["a"] > 0).astype(int).to_numpy()
    model = FrozenEstimator(LogisticRegression().fit(X, y))
    caught = _caught(
        lambda: select_perturbation_scale(
            model,
            X.to_numpy(),
            y,
            scales=[0.05],
            cv=3,
            n_jobs=n_jobs,
            random_state=0,
        )
    )
    assert sum("feature names" in str(w.message) for w in caught) == 1
