"""CalibrationOverTimeDisplay draws what the monitor reports."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from skcalib.display import CalibrationOverTimeDisplay  # noqa: E402
from skcalib.metrics import CalibrationMonitor  # noqa: E402


def _monitor(window="1D", days=6):
    rng = np.random.default_rng(0)
    n = days * 1500
    t = np.datetime64("2026-05-01") + rng.integers(0, days * 86400, size=n).astype(
        "timedelta64[s]"
    )
    p = rng.beta(2.0, 5.0, size=n)
    late = t >= np.datetime64("2026-05-04")
    y = rng.uniform(size=n) < np.where(late, np.clip(1.4 * p, 0, 1), p)
    if window is None:
        return CalibrationMonitor().partial_fit(
            y, p, key=np.where(late, "after", "before")
        )
    return CalibrationMonitor(window=window).partial_fit(y, p, key=t)


def test_draws_estimate_band_counts_and_alerts():
    mon = _monitor()
    report = mon.report(n_bootstrap=20, n_resamples=199, random_state=0)
    disp = CalibrationOverTimeDisplay.from_report(
        report, name="model", alert_level=0.01
    )
    x, y = disp.line_.get_data()
    np.testing.assert_array_equal(y, report.smece)
    assert len(x) == 6 and disp.band_ is not None and disp.bound_line_ is None
    heights = [b.get_height() for b in disp.bars_]
    assert heights == report.n_samples.tolist()
    assert len(disp.alerts_.get_offsets()) == int(np.sum(report.p_value <= 0.01)) >= 2
    assert "model SmoothECE" in [t.get_text() for t in disp.ax_.get_legend().texts]
    assert disp.figure_ is disp.ax_.figure
    plt.close("all")


def test_bounds_keys_and_options():
    mon = _monitor(window=None)
    bounds = {"before": 0.05, "after": 0.2}
    fig, ax = plt.subplots()
    disp = CalibrationOverTimeDisplay.from_monitor(
        mon, n_bootstrap=0, n_resamples=0, bounds=bounds, ax=ax, count_panel=False
    )
    assert disp.ax_ is ax and disp.bars_ is None and disp.band_ is None
    assert disp.bound_line_.get_data()[1].tolist() == [0.2, 0.05]  # sorted keys
    assert [t.get_text() for t in ax.get_xticklabels()] == ["after", "before"]
    assert list(disp.frame()["bound_upper"]) == [0.2, 0.05]
    plt.close("all")


def test_bad_arguments():
    mon = _monitor(days=2)
    with pytest.raises(TypeError, match="MonitoringReport"):
        CalibrationOverTimeDisplay.from_report(mon)
    with pytest.raises(TypeError, match="CalibrationMonitor"):
        CalibrationOverTimeDisplay.from_monitor("x")
    report = mon.report(n_bootstrap=0, n_resamples=0)
    with pytest.raises(ValueError, match="alert_level"):
        CalibrationOverTimeDisplay(report).plot(alert_level=2.0)
    plt.close("all")


def test_from_predictions_and_from_estimator():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 2))
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    clf = LogisticRegression().fit(X, y)
    day = np.repeat([0, 1, 2], 1000)
    a = CalibrationOverTimeDisplay.from_estimator(
        clf, X, y, key=day, n_bootstrap=0, n_resamples=19, random_state=0
    )
    b = CalibrationOverTimeDisplay.from_predictions(
        y,
        clf.predict_proba(X)[:, 1],
        key=day,
        n_bootstrap=0,
        n_resamples=19,
        random_state=0,
    )
    np.testing.assert_array_equal(a.report.smece, b.report.smece)
    assert a.line_.get_label() == "LogisticRegression SmoothECE"
    one = CalibrationOverTimeDisplay.from_predictions(
        y, clf.predict_proba(X)[:, 1], n_bootstrap=0, n_resamples=0
    )
    assert one.report.n_samples.tolist() == [3000]
    plt.close("all")
