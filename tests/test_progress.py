"""Progress of long operations (``verbose``) and the sink the CLI installs."""

import io
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skcalib._backend import progress as progress_module
from skcalib._backend.progress import Progress, progress_sink
from skcalib.cli import _progress as cli_progress
from skcalib.cli._progress import StepProgress
from skcalib.metrics import kde_calibration_error, smooth_calibration_curve
from skcalib.perturbation import select_perturbation_scale


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    return (rng.uniform(size=n) < p).astype(int), p


def test_silent_by_default(capsys):
    y, p = _data()
    smooth_calibration_curve(y, p, n_bootstrap=5, random_state=0)
    assert capsys.readouterr().err == ""


def test_verbose_reports_start_and_end(capsys, monkeypatch):
    monkeypatch.setitem(progress_module.REPORT_EVERY, 1, 0.0)
    y, p = _data()
    smooth_calibration_curve(y, p, n_bootstrap=40, random_state=0, verbose=1)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[skcalib] bootstrap: 0/40"
    assert err[-1].startswith("[skcalib] bootstrap: done in ")
    # Intermediate reports count resamples, in increasing order, below 40.
    done = [int(line.split(": ")[1].split("/")[0]) for line in err[1:-1]]
    assert done and done == sorted(done) and max(done) < 40


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_verbose_does_not_change_the_bootstrap(n_jobs):
    y, p = _data(3000, seed=1)
    quiet = smooth_calibration_curve(y, p, n_bootstrap=30, random_state=3)
    loud = smooth_calibration_curve(
        y, p, n_bootstrap=30, random_state=3, verbose=2, n_jobs=n_jobs
    )
    np.testing.assert_array_equal(quiet.y_smooth_low, loud.y_smooth_low)
    np.testing.assert_array_equal(quiet.smece_bootstrap, loud.smece_bootstrap)


def test_sink_receives_every_operation_and_counts_to_total():
    calls = []
    y, p = _data()
    X = np.column_stack([p, np.random.default_rng(2).normal(size=p.size)])
    with progress_sink(lambda *args: calls.append(args)):
        select_perturbation_scale(
            LogisticRegression(), X, y, scales=[0.01, 0.1], cv=3, random_state=0
        )
    finished = [c for c in calls if c[4]]
    assert [c[0] for c in finished] == [
        "cross-validation splits",
        "bounds",
    ]
    assert [(c[1], c[2]) for c in finished] == [(3, 3), (3, 3)]


def test_failed_operation_reports_no_end():
    calls = []
    with progress_sink(lambda *args: calls.append(args)):
        with pytest.raises(RuntimeError):
            with Progress("work", 3) as progress:
                progress.advance()
                raise RuntimeError
    assert not any(c[4] for c in calls)


@pytest.mark.parametrize("bad", [-1, 1.5, "yes"])
def test_bad_verbose_is_named(bad):
    y, p = _data(200)
    with pytest.raises((TypeError, ValueError), match="verbose"):
        smooth_calibration_curve(y, p, verbose=bad)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("terminal", [True, False])
def test_cli_draws_a_bar_on_a_terminal_only(monkeypatch, terminal):
    monkeypatch.setattr(cli_progress, "BAR_AFTER", 0.0)
    monkeypatch.setattr(progress_module, "SINK_EVERY", 0.0)
    stream = _Terminal() if terminal else io.StringIO()
    steps = StepProgress(True, stream=stream)
    y, p = _data()
    with steps.reporting():
        steps.start("smooth curve")
        smooth_calibration_curve(y, p, n_bootstrap=40, random_state=0)
        steps.done()
    text = stream.getvalue()
    assert text.startswith("skcalib: smooth curve ...")
    assert text.endswith("s)\n") and "done (" in text
    assert ("bootstrap [" in text) is terminal
    assert ("\r" in text) is terminal


def test_cli_quiet_prints_nothing():
    stream = _Terminal()
    steps = StepProgress(False, stream=stream)
    y, p = _data()
    with steps.reporting():
        steps.start("smooth curve")
        smooth_calibration_curve(y, p, n_bootstrap=10, random_state=0)
        steps.done()
    assert stream.getvalue() == ""


def test_kde_reports_its_steps():
    calls = []
    rng = np.random.default_rng(0)
    P = rng.dirichlet([1, 1, 1], 300)
    y = np.array([rng.choice(3, p=row) for row in P])
    with progress_sink(lambda *args: calls.append(args)):
        kde_calibration_error(y, P, multi_class="classwise")
    end = [c for c in calls if c[4]]
    # Bandwidth selection and estimate for each of the three classes.
    assert [(c[0], c[1], c[2]) for c in end] == [("ECE-KDE", 6, 6)]


def test_kde_warns_about_quadratic_cost_and_names_the_remedy(monkeypatch):
    from skcalib.metrics import _kde

    monkeypatch.setattr(_kde, "LARGE_PAIRS", 1e4)
    y, p = _data(200)
    with pytest.warns(UserWarning, match="max_samples=") as record:
        kde_calibration_error(y, p, bandwidth=0.1)
    assert record[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kde_calibration_error(y, p, bandwidth=0.1, max_samples=50, random_state=0)


def test_bound_reports_one_step_per_fold_and_keeps_its_value():
    from skcalib.metrics import calibration_error_bound

    calls = []
    y, p = _data(3000, seed=4)
    quiet = calibration_error_bound(y, p, random_state=0, return_details=True)
    with progress_sink(lambda *args: calls.append(args)):
        loud = calibration_error_bound(
            y, p, random_state=0, n_jobs=2, return_details=True
        )
    assert [(c[0], c[1], c[2]) for c in calls if c[4]] == [("tv bound, folds", 5, 5)]
    assert loud.upper == quiet.upper and loud.per_fold == quiet.per_fold
