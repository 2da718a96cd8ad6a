"""The sech sampler's threads follow n_jobs, joblib's configuration and
threadpoolctl's limits, and the draws do not depend on them."""

import joblib
import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from threadpoolctl import threadpool_limits

from skcalib import PerturbedClassifier, perturb_proba
from skcalib._backend import threads
from skcalib._backend.sech import sampler

BLOCK = sampler._SECH_BLOCK
# Eight blocks and a part: room for four groups of two blocks.
N = 8 * BLOCK + 4321


@pytest.fixture
def eight_cpus(monkeypatch):
    # The machine's CPU count decides the default: pretend to have eight, so
    # that the limits, not the machine, decide.
    monkeypatch.setattr(threads, "usable_cpus", lambda: 8)


def test_explicit_n_jobs_wins(eight_cpus):
    for n_jobs, expected in [(1, 1), (3, 3), (6, 6), (-1, 8), (-2, 7), (-9, 1)]:
        assert threads.worker_threads(n_jobs, 4) == expected
    with threadpool_limits(limits=1), joblib.parallel_config(n_jobs=2):
        assert threads.worker_threads(3, 4) == 3


def test_default_is_capped_by_native_limits(eight_cpus):
    base = threads.native_thread_limit()
    assert threads.worker_threads(None, 4) == min(4, base)
    assert threads.worker_threads(None, None) == min(8, base)
    for k in (1, 2, 3):
        with threadpool_limits(limits=k):
            assert threads.native_thread_limit() == k
            assert threads.worker_threads(None, 4) == k
    # An OpenMP limit alone caps it too.
    with threadpool_limits(limits=1, user_api="openmp"):
        if any(
            lib.user_api == "openmp" for lib in threads._controller().lib_controllers
        ):
            assert threads.worker_threads(None, 4) == 1


def test_default_follows_joblib_configuration(eight_cpus):
    with joblib.parallel_config(n_jobs=3):
        assert threads.worker_threads(None, 4) == 3
    with joblib.parallel_backend("threading", n_jobs=2):
        assert threads.worker_threads(None, 4) == 2
    with joblib.parallel_config(n_jobs=-1):
        assert threads.worker_threads(None, 4) == 8
    # A backend without n_jobs leaves the default.
    with threadpool_limits(limits=2), joblib.parallel_config(backend="threading"):
        assert threads.worker_threads(None, 4) == 2


@pytest.fixture
def groups(monkeypatch):
    """Number of thread groups of each sampler pass, recorded."""
    seen = []
    split = sampler._block_groups

    def recording(n, n_threads):
        out = split(n, n_threads)
        seen.append(len(out))
        return out

    monkeypatch.setattr(sampler, "_block_groups", recording)
    return seen


def test_sampler_runs_the_threads_it_is_given(eight_cpus, groups):
    s0 = np.random.default_rng(0).uniform(size=N)
    for n_jobs in (1, 2, 3, 4):
        groups.clear()
        sampler.sech_sample(s0, 2.0**-6, np.random.default_rng(1), n_jobs=n_jobs)
        # The noise's pass and the pass that adds it.
        assert groups == [n_jobs, n_jobs]
    for k in (1, 3):
        groups.clear()
        with threadpool_limits(limits=k):
            sampler.sech_sample(s0, 2.0**-6, np.random.default_rng(1))
        assert groups == [k, k]
    groups.clear()
    with joblib.parallel_config(n_jobs=2):
        sampler.sech_sample(s0, 2.0**-6, np.random.default_rng(1))
    assert groups == [2, 2]


def test_one_thread_draws_in_the_calling_thread(monkeypatch):
    def no_pool(*args):
        raise AssertionError("a thread pool was used")

    monkeypatch.setattr(sampler, "_pool", no_pool)
    P = np.random.default_rng(0).dirichlet([1.0, 1.0], size=N)
    perturb_proba(P, random_state=0, n_jobs=1)
    with threadpool_limits(limits=1):
        perturb_proba(P, random_state=0)
        future = sampler.sech_noise_async(N, 2.0**-6, np.random.default_rng(0))
    assert isinstance(future, sampler._DoneFuture)


class _Fixed(ClassifierMixin, BaseEstimator):
    """A fitted classifier whose probabilities are the rows of X."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.asarray(X, dtype=np.float64)


@pytest.mark.parametrize("n_classes", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_same_seed_same_output_whatever_the_threads(eight_cpus, n_classes):
    rng = np.random.default_rng(n_classes)
    # Confident rows: many rejections, redrawn after the threaded passes.
    P = rng.dirichlet(np.full(n_classes, 0.3), size=N)
    expected = perturb_proba(P, random_state=7, n_jobs=1)
    for n_jobs in (3, -1, None):
        got = perturb_proba(P, random_state=7, n_jobs=n_jobs)
        np.testing.assert_array_equal(got, expected)
    with threadpool_limits(limits=3):
        np.testing.assert_array_equal(perturb_proba(P, random_state=7), expected)
    with joblib.parallel_config(n_jobs=2):
        np.testing.assert_array_equal(perturb_proba(P, random_state=7), expected)
    y = np.arange(n_classes)
    for n_jobs in (2, None):
        clf = PerturbedClassifier(_Fixed(), random_state=7, n_jobs=n_jobs)
        clf.fit(P[:n_classes], y)
        np.testing.assert_array_equal(clf.predict_proba(P), expected)


def test_n_jobs_is_checked():
    P = np.full((4, 2), 0.5)
    with pytest.raises(ValueError, match="n_jobs"):
        perturb_proba(P, n_jobs=0)
    with pytest.raises(ValueError, match="n_jobs"):
        PerturbedClassifier(_Fixed(), n_jobs=1.5).fit(P, [0, 1, 0, 1])
    assert PerturbedClassifier(n_jobs=2).get_params()["n_jobs"] == 2
