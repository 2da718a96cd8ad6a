"""CalibrationMonitor: windows, merged periods, per-window report, the exact
test of calibration on the grid state and the change test of two periods."""

import datetime
import sys

import numpy as np
import pytest
from scipy import stats

from skcalib._backend import monitoring as backend
from skcalib.metrics import (
    CalibrationAccumulator,
    CalibrationMonitor,
    binned_calibration_error,
    smooth_ece,
)


def _stream(n=30_000, days=10, seed=0):
    rng = np.random.default_rng(seed)
    start = np.datetime64("2026-01-27T00:00:00")
    t = start + rng.integers(0, days * 86400, size=n).astype("timedelta64[s]")
    p = rng.beta(2.0, 5.0, size=n)
    y = rng.uniform(size=n) < p**1.2
    return t, p, y


def test_time_windows_hold_the_samples_of_their_day():
    t, p, y = _stream()
    mon = CalibrationMonitor(window="1D").partial_fit(y, p, key=t)
    days = sorted(mon.accumulators_)
    # the days, found with Python's datetime
    want = sorted(
        {
            datetime.datetime(*ts.astype(datetime.datetime).timetuple()[:3])
            for ts in t.astype("datetime64[s]")
        }
    )
    assert [d.astype("datetime64[s]").astype(datetime.datetime) for d in days] == want
    report = mon.report(n_bootstrap=0, n_resamples=0)
    for i, day in enumerate(days):
        mine = (t >= day) & (t < day + np.timedelta64(1, "D"))
        assert report.n_samples[i] == mine.sum()
        assert abs(report.smece[i] - smooth_ece(y[mine], p[mine])) < 1e-6
        ref = binned_calibration_error(y[mine], p[mine], n_bins=16)
        assert (
            abs(mon.accumulators_[day].binned_calibration_error(n_bins=16) - ref)
            < 1e-12
        )
        assert abs(report.observed_rate[i] - y[mine].mean()) < 1e-12
        assert abs(report.expected_rate[i] - p[mine].mean()) < 1e-12
    assert np.isnan(report.p_value).all() and np.isnan(report.smece_low).all()


def test_windows_of_hours_and_timedelta_agree():
    t, p, y = _stream(n=5000, days=1)
    a = CalibrationMonitor(window="6h").partial_fit(y, p, key=t)
    b = CalibrationMonitor(window=datetime.timedelta(hours=6)).partial_fit(y, p, key=t)
    assert sorted(a.accumulators_) == sorted(b.accumulators_)
    assert len(a.accumulators_) == 4


def test_rolling_and_month_to_date_equal_the_periods_in_memory():
    t, p, y = _stream(days=10)
    mon = CalibrationMonitor(window="1D")
    for c in np.array_split(np.arange(t.size), 5):  # chunks across days
        mon.partial_fit(y[c], p[c], key=t[c])
    days = sorted(mon.accumulators_)
    week = mon.rolling(7)
    for day in days:
        lo = day - np.timedelta64(6, "D")
        mine = (t >= lo) & (t < day + np.timedelta64(1, "D"))
        assert week.accumulators_[day].n_samples_ == mine.sum()
        assert (
            abs(week.accumulators_[day].smooth_ece() - smooth_ece(y[mine], p[mine]))
            < 1e-6
        )
    mtd = mon.to_date("month")  # the stream starts on 27 January
    for day in days:
        month = day.astype("datetime64[M]")
        mine = (t.astype("datetime64[M]") == month) & (t < day + np.timedelta64(1, "D"))
        assert mtd.accumulators_[day].n_samples_ == mine.sum()
    # the monitor itself is unchanged
    assert sum(a.n_samples_ for a in mon.accumulators_.values()) == t.size


def test_keys_and_added_accumulators():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=3000)
    y = rng.uniform(size=3000) < p
    seg = np.array(["eu", "us", "asia"])[rng.integers(0, 3, size=3000)]
    mon = CalibrationMonitor().partial_fit(y, p, key=seg)
    assert sorted(mon.accumulators_) == ["asia", "eu", "us"]
    extra = CalibrationAccumulator().partial_fit(y[:10], p[:10])
    mon.add("eu", CalibrationAccumulator.from_bytes(extra.to_bytes()))
    assert mon.accumulators_["eu"].n_samples_ == (seg == "eu").sum() + 10
    frame = mon.report(n_bootstrap=0, n_resamples=19, random_state=0).frame()
    assert list(frame["window"]) == ["asia", "eu", "us"]
    assert mon.merged().n_samples_ == 3010


def test_frame_without_pandas(monkeypatch):
    mon = CalibrationMonitor().partial_fit([0, 1, 1, 0], [0.2, 0.7, 0.9, 0.4], key=0)
    report = mon.report(n_bootstrap=0, n_resamples=0)
    monkeypatch.setitem(sys.modules, "pandas", None)
    table = report.frame()
    assert isinstance(table, dict) and table["n_samples"].tolist() == [4]


def test_report_is_reproducible_and_interval_brackets_the_estimate():
    t, p, y = _stream(n=8000, days=2)
    mon = CalibrationMonitor(window="1D").partial_fit(y, p, key=t)
    a = mon.report(n_bootstrap=30, n_resamples=99, random_state=3)
    b = mon.report(n_bootstrap=30, n_resamples=99, random_state=3)
    np.testing.assert_array_equal(a.smece_high, b.smece_high)
    np.testing.assert_array_equal(a.p_value, b.p_value)
    assert np.all(a.smece_low <= a.smece) and np.all(a.smece <= a.smece_high)


def _brute_cumulative_max(y, s, M=2**16):
    """max over cell ends of |sum (y - s)| over scores up to that end."""
    order = np.argsort(s, kind="stable")
    cell = np.maximum(np.ceil(s[order] * M) - 1, 0)
    csum = np.cumsum(y[order] - s[order])
    ends = np.r_[np.flatnonzero(np.diff(cell)), cell.size - 1]
    return np.abs(csum[ends]).max()


def test_statistic_matches_a_brute_force_cumulative_sum():
    rng = np.random.default_rng(4)
    s = np.r_[rng.uniform(size=700), [0.0, 1.0, 0.5, 0.5]]
    y = (rng.uniform(size=s.size) < s**2).astype(float)
    acc = CalibrationAccumulator().partial_fit(y, s)
    pos, neg = acc._slots()
    stat, _ = backend.cumulative_residual_test(
        *backend.cell_summary(acc.moments_, pos, neg), 9, rng
    )
    assert abs(stat * s.size - _brute_cumulative_max(y, s)) < 1e-9


def test_change_test_conditional_law_matches_a_brute_force_permutation():
    """One stratum: the null law of the events of window 1 is the
    hypergeometric law of a random split of the samples."""
    rng = np.random.default_rng(5)
    n1, n2, o1, o2 = 7, 5, 6, 0
    stat, p = backend.change_test(
        np.array([n1]), np.array([o1]), np.array([n2]), np.array([o2]), 20_000, rng
    )
    mean = n1 * (o1 + o2) / (n1 + n2)
    law = stats.hypergeom(n1 + n2, o1 + o2, n1)
    support = np.arange(0, 7)
    exact = law.pmf(support)[np.abs(support - mean) >= abs(o1 - mean) - 1e-12].sum()
    assert 0.01 < exact < 0.5
    assert abs(p - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000)
    assert abs(stat - abs(o1 - mean) / n1) < 1e-12


def test_change_test_detects_a_shift_and_refuses_fractional_weights():
    rng = np.random.default_rng(6)
    p = rng.beta(2.0, 5.0, size=20_000)
    y = rng.uniform(size=20_000) < np.where(np.arange(20_000) < 10_000, p, p**0.6)
    key = np.arange(20_000) // 10_000
    mon = CalibrationMonitor().partial_fit(y, p, key=key)
    assert mon.change_test(0, 1, n_resamples=199, random_state=0).p_value < 0.01
    weighted = CalibrationMonitor().partial_fit(
        y, p, key=key, sample_weight=rng.uniform(0.5, 1.5, size=20_000)
    )
    with pytest.raises(ValueError, match="whole numbers"):
        weighted.change_test(0, 1)
    freq = CalibrationMonitor().partial_fit(
        y, p, key=key, sample_weight=rng.integers(1, 3, size=20_000)
    )
    assert 0 < freq.change_test([0], [1], n_resamples=99, random_state=0).p_value


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda m: CalibrationMonitor(window="1 fortnight").partial_fit(
                [0], [0.5], key=0
            ),
            "window",
        ),
        (
            lambda m: CalibrationMonitor(window="1D").partial_fit([0], [0.5], key="x"),
            "timestamps",
        ),
        (
            lambda m: m.partial_fit([0, 1], [0.5, 0.5], key=[1, 2, 3]),
            "one entry per sample",
        ),
        (lambda m: m.merged(["nope"]), "not seen"),
        (lambda m: m.change_test(0, 1, n_strata=1000), "n_strata"),
        (lambda m: m.rolling(0), "n_windows"),
        (lambda m: m.report(n_resamples=-1), "n_resamples"),
        (lambda m: m.to_date(), "time windows"),
    ],
)
def test_errors_name_the_argument(call, match):
    mon = CalibrationMonitor().partial_fit(
        [0, 1, 1, 0], [0.2, 0.7, 0.6, 0.1], key=[0, 0, 1, 1]
    )
    with pytest.raises((ValueError, TypeError), match=match):
        call(mon)


def _laws(rng):
    return {
        "continuous": lambda n: rng.beta(2.0, 5.0, size=n),
        "discrete": lambda n: rng.choice([0.1, 0.25, 0.5, 0.7, 0.9], size=n),
        "near_0_1": lambda n: np.where(
            rng.uniform(size=n) < 0.5,
            rng.uniform(0, 1e-3, size=n),
            1 - rng.uniform(0, 1e-3, size=n),
        ),
        "rare": lambda n: rng.beta(0.3, 30.0, size=n),
    }


def _weights(kind, n, rng):
    if kind == "none":
        return None
    if kind == "frequency":
        return rng.integers(1, 4, size=n).astype(float)
    return rng.exponential(size=n)


def _within(k, reps, alpha):
    """k rejections in reps draws are compatible with a level-alpha test
    (two-sided 99.9 % Clopper-Pearson interval holding alpha, or below)."""
    lo = stats.beta.ppf(0.0005, k, reps - k + 1) if k else 0.0
    return lo <= alpha


_SIZE_CASES = [
    (n, weights, law)
    for weights in ("none", "frequency", "importance")
    for law in ("continuous", "discrete", "near_0_1", "rare")
    for n in (150, 1000)
    # At the larger n only the laws whose cells hold few events.
    if n == 150 or law in ("near_0_1", "rare")
]


@pytest.mark.slow
@pytest.mark.parametrize("n, weights, law", _SIZE_CASES)
def test_calibration_test_size_under_the_exact_null(law, weights, n):
    seed = ["continuous", "discrete", "near_0_1", "rare"].index(law) * 7 + n
    rng = np.random.default_rng(seed + len(weights))
    draw = _laws(rng)[law]
    reps, p_values = 100, []
    for _ in range(reps):
        s = draw(n)
        y = rng.uniform(size=n) < s
        acc = CalibrationAccumulator().partial_fit(y, s, _weights(weights, n, rng))
        pos, neg = acc._slots()
        cells = backend.cell_summary(acc.moments_, pos, neg)
        p_values.append(backend.cumulative_residual_test(*cells, 99, rng)[1])
    p_values = np.array(p_values)
    for alpha in (0.05, 0.01):
        assert _within(int(np.sum(p_values <= alpha)), reps, alpha), (alpha, p_values)


@pytest.mark.slow
def test_calibration_test_power_on_a_miscalibrated_window():
    rng = np.random.default_rng(8)
    s = rng.beta(2.0, 5.0, size=4000)
    y = rng.uniform(size=4000) < np.clip(s * 1.25, 0, 1)
    mon = CalibrationMonitor().partial_fit(y, s, key=0)
    assert mon.report(n_bootstrap=0, n_resamples=199, random_state=0).p_value[0] < 0.01


@pytest.mark.slow
@pytest.mark.parametrize(
    "shapes, n",
    [
        (((2, 5), (2, 5)), 300),
        (((2, 5), (5, 2)), 300),
        (((0.3, 30), (1, 10)), 300),
        # Rare positives at the larger n: the strata that hold few events.
        (((0.3, 30), (1, 10)), 4000),
    ],
)
def test_change_test_size_with_equal_calibration_and_shifted_scores(shapes, n):
    """Both windows miscalibrated the same way, scores drawn from different
    laws: the change test keeps its level."""
    rng = np.random.default_rng(n + int(10 * shapes[1][0]))

    def eta(s):
        return np.clip(s**1.3 + 0.05 * np.sin(6 * s), 0, 1)

    reps, p_values = 100, []
    for _ in range(reps):
        s1, s2 = rng.beta(*shapes[0], size=n), rng.beta(*shapes[1], size=n)
        y = rng.uniform(size=2 * n) < eta(np.r_[s1, s2])
        mon = CalibrationMonitor().partial_fit(
            y, np.r_[s1, s2], key=np.repeat([0, 1], n)
        )
        p_values.append(mon.change_test(0, 1, n_resamples=99, random_state=rng).p_value)
    p_values = np.array(p_values)
    for alpha in (0.05, 0.01):
        assert _within(int(np.sum(p_values <= alpha)), reps, alpha)
