"""Calibration of a stream of predictions by time window or any key:
:class:`CalibrationMonitor`, its per-window :class:`MonitoringReport` and the
:class:`ChangeTestResult` of two windows."""

from __future__ import annotations

import copy
import datetime
import numbers
import re
from dataclasses import dataclass

import numpy as np

from .._backend import monitoring as _mon
from .._backend import smece as _sm
from .._backend.distributed import node_statistics
from .._backend.grid import FINE_M
from .._params import (
    MONITOR_RULES,
    Interval,
    check_random_generator,
    validate_params,
)
from .._validation import check_sample_weight
from ._accumulator import CalibrationAccumulator

__all__ = ["CalibrationMonitor", "ChangeTestResult", "MonitoringReport"]

_L1 = _sm.GridGeometry("l1")


_UNITS = {"W": "W", "D": "D", "h": "h", "min": "m", "s": "s", "ms": "ms"}


def _window_length(window):
    """``window`` as a ``numpy.timedelta64`` in nanoseconds, or None."""
    if window is None:
        return None
    if isinstance(window, str):
        m = re.fullmatch(r"\s*(\d+)\s*(W|D|h|min|s|ms)\s*", window)
        if not m:
            raise ValueError(
                "window must be None, a timedelta or a string such as '1D', '7D', "
                f"'1h', '15min', '30s'; got {window!r}."
            )
        window = np.timedelta64(int(m.group(1)), _UNITS[m.group(2)])
    if isinstance(window, datetime.timedelta):
        window = np.timedelta64(window)
    if not isinstance(window, np.timedelta64):
        raise TypeError(
            "window must be None, a timedelta or a string; got "
            f"{type(window).__name__}."
        )
    length = window.astype("timedelta64[ns]")
    if length <= np.timedelta64(0, "ns"):
        raise ValueError(f"window must be a positive duration; got {window!r}.")
    return length


@dataclass(frozen=True)
class ChangeTestResult:
    """Result of :meth:`CalibrationMonitor.change_test`.

    Parameters
    ----------
    statistic : float
        Largest absolute cumulative difference between the events of the
        first window and their expectation under equal calibration, over
        strata of increasing score, divided by the samples of the first
        window.
    p_value : float
        Monte Carlo p-value ``(1 + #{T* >= T}) / (n_resamples + 1)``.
    n_resamples : int
        Number of null draws.
    n_strata : int
        Number of score strata.

    Examples
    --------
    >>> from skcalib.metrics import ChangeTestResult
    >>> ChangeTestResult(statistic=0.01, p_value=0.2, n_resamples=999, n_strata=1024)
    ChangeTestResult(statistic=0.01, p_value=0.2, n_resamples=999, n_strata=1024)
    """

    statistic: float
    p_value: float
    n_resamples: int
    n_strata: int


@dataclass(frozen=True)
class MonitoringReport:
    """Per-window calibration of a :class:`CalibrationMonitor`.

    Every field but ``confidence_level`` is an array with one entry per
    window, in window order; a value that was not computed is NaN.

    Parameters
    ----------
    window : ndarray of shape (n_windows,)
        The window keys (the start of each time window).
    n_samples : ndarray of shape (n_windows,)
        Number of predictions.
    weight : ndarray of shape (n_windows,)
        Total sample weight.
    smece : ndarray of shape (n_windows,)
        SmoothECE.
    smece_low : ndarray of shape (n_windows,)
        Lower end of its bootstrap interval.
    smece_high : ndarray of shape (n_windows,)
        Upper end of its bootstrap interval.
    ece : ndarray of shape (n_windows,)
        Binned ECE (uniform bins on the grid).
    observed_rate : ndarray of shape (n_windows,)
        Weighted rate of positives.
    expected_rate : ndarray of shape (n_windows,)
        Weighted mean score; ``observed_rate - expected_rate`` is the
        calibration-in-the-large as a difference of rates.
    p_value : ndarray of shape (n_windows,)
        The p-value of the test of calibration.
    bound_upper : ndarray of shape (n_windows,)
        Certified upper bound on the calibration error, where given.
    bound_lower : ndarray of shape (n_windows,)
        Certified lower bound, where given.
    confidence_level : float
        Level of the SmoothECE intervals.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import CalibrationMonitor
    >>> rng = np.random.default_rng(0)
    >>> mon = CalibrationMonitor()
    >>> for day in range(3):
    ...     p = rng.beta(2, 5, size=4000)
    ...     mon = mon.partial_fit(rng.uniform(size=4000) < p, p, key=day)
    >>> report = mon.report(n_bootstrap=0, n_resamples=99, random_state=0)
    >>> report.window.tolist(), report.n_samples.tolist()
    ([0, 1, 2], [4000, 4000, 4000])
    """

    window: np.ndarray
    n_samples: np.ndarray
    weight: np.ndarray
    smece: np.ndarray
    smece_low: np.ndarray
    smece_high: np.ndarray
    ece: np.ndarray
    observed_rate: np.ndarray
    expected_rate: np.ndarray
    p_value: np.ndarray
    bound_upper: np.ndarray
    bound_lower: np.ndarray
    confidence_level: float

    _COLUMNS = (
        "window",
        "n_samples",
        "weight",
        "smece",
        "smece_low",
        "smece_high",
        "ece",
        "observed_rate",
        "expected_rate",
        "p_value",
        "bound_upper",
        "bound_lower",
    )

    def frame(self):
        """The report as a table, one row per window.

        Returns
        -------
        pandas.DataFrame or dict of ndarray
            A DataFrame indexed by nothing (``window`` is a column) when
            pandas is installed, else a dict of the columns.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.metrics import CalibrationMonitor
        >>> rng = np.random.default_rng(0)
        >>> p = rng.beta(2, 5, size=6000)
        >>> y = rng.uniform(size=6000) < p
        >>> mon = CalibrationMonitor().partial_fit(y, p, key=np.arange(6000) // 2000)
        >>> table = mon.report(n_bootstrap=0, n_resamples=99, random_state=0).frame()
        >>> list(table["n_samples"])
        [2000, 2000, 2000]
        """
        columns = {name: getattr(self, name) for name in self._COLUMNS}
        try:
            import pandas as pd
        except ImportError:
            return columns
        return pd.DataFrame(columns)


class CalibrationMonitor:
    """Calibration of a stream of predictions, window by window.

    Keeps one :class:`CalibrationAccumulator` per window: a time window
    (``window="1D"``: each prediction goes to the window of its timestamp)
    or any key (``window=None``: a day number, a model version, a segment).
    Windows merge into longer periods (:meth:`rolling`, :meth:`to_date`),
    report their calibration (:meth:`report`: SmoothECE with a bootstrap
    interval, binned ECE, calibration-in-the-large, an exact test of
    calibration and, where given, a certified bound), and two windows or
    periods are compared by a test of change (:meth:`change_test`).
    Accumulators built elsewhere (another process, Spark, a stored state)
    join with :meth:`add`. Binary problems only. Read more in the
    :ref:`User Guide <monitoring>`.

    Parameters
    ----------
    window : str, timedelta or None, default=None
        Length of the time windows (``"1D"``, ``"7D"``, ``"1h"``,
        ``"15min"``, a ``datetime.timedelta`` or ``numpy.timedelta64``);
        keys are then timestamps, floored to the start of their window
        (windows start at the Unix epoch). ``None`` uses the keys as given.
    pos_label : int, float, bool or str, default=None
        Positive class, as in :class:`CalibrationAccumulator`.
    labels : array-like of shape (2,), default=None
        Both class labels, as in :class:`CalibrationAccumulator`.

    Attributes
    ----------
    accumulators_ : dict
        The accumulator of each window, by key.

    See Also
    --------
    CalibrationAccumulator : The statistics of one window.
    skcalib.display.CalibrationOverTimeDisplay : The report as a figure.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.metrics import CalibrationMonitor
    >>> rng = np.random.default_rng(0)
    >>> start = np.datetime64("2026-03-01")
    >>> t = start + rng.integers(0, 14 * 86400, size=50_000).astype("timedelta64[s]")
    >>> p = rng.beta(2, 5, size=50_000)
    >>> late = t >= np.datetime64("2026-03-10")
    >>> y = rng.uniform(size=50_000) < np.where(late, p**0.7, p)
    >>> mon = CalibrationMonitor(window="1D").partial_fit(y, p, key=t)
    >>> len(mon.accumulators_)
    14
    >>> days = sorted(mon.accumulators_)
    >>> mon.change_test(days[:7], days[-3:], random_state=0).p_value < 0.01
    True
    """

    @validate_params()
    def __init__(self, *, window=None, pos_label=None, labels=None):
        self.window = window
        self.pos_label = pos_label
        self.labels = labels

    def _new_accumulator(self):
        return CalibrationAccumulator(pos_label=self.pos_label, labels=self.labels)

    def _keys(self, key, n):
        length = _window_length(self.window)
        keys = np.asarray(key)
        if keys.ndim == 0:
            keys = np.full(n, keys)
        if keys.ndim != 1 or keys.shape[0] != n:
            raise ValueError(
                f"key must be a scalar or have one entry per sample ({n}); got "
                f"shape {keys.shape}."
            )
        if length is None:
            return keys
        try:
            stamps = keys.astype("datetime64[ns]")
        except (TypeError, ValueError):
            raise TypeError(
                f"With window={self.window!r}, key must hold timestamps; got "
                f"dtype {keys.dtype}."
            ) from None
        if np.isnat(stamps).any():
            raise ValueError("key holds a missing timestamp (NaT).")
        ticks = stamps.view(np.int64)
        step = length.astype(np.int64)
        return (ticks - ticks % step).view("datetime64[ns]")

    @validate_params()
    def partial_fit(self, y_true, y_proba, *, key, sample_weight=None):
        """Add predictions to the windows of their keys.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            Labels.
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
            Predicted probabilities.
        key : scalar or array-like of shape (n_samples,)
            The window key (``window=None``) or timestamp of every sample, or
            one for all.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.

        Returns
        -------
        CalibrationMonitor
            The monitor itself.
        """
        y_proba = np.asarray(y_proba)
        y = np.asarray(y_true)
        n = y_proba.shape[0] if y_proba.ndim else 0
        if not n or y.ndim != 1 or y.shape[0] != n:
            raise ValueError(
                "y_true and y_proba must hold the same positive number of samples; "
                f"got shapes {y.shape} and {y_proba.shape}."
            )
        # The windows' accumulators check the values; the split needs the shape.
        w = check_sample_weight(sample_weight, n, allow_zero_sum=True)
        # Unweighted windows stay unweighted (their counts are their weights).
        weighted = sample_weight is not None
        keys = self._keys(key, n)
        if not hasattr(self, "accumulators_"):
            self.accumulators_ = {}
        try:
            values, inverse = np.unique(keys, return_inverse=True)
        except TypeError as exc:
            raise TypeError(f"key values cannot be sorted: {exc}") from None
        for i, value in enumerate(values):
            rows = slice(None) if values.shape[0] == 1 else inverse == i
            k = (
                value.item()
                if hasattr(value, "item") and self.window is None
                else value
            )
            acc = self.accumulators_.get(k)
            fresh = acc is None
            acc = self._new_accumulator() if fresh else acc
            acc.partial_fit(y[rows], y_proba[rows], w[rows] if weighted else None)
            if fresh:
                self.accumulators_[k] = acc
        return self

    @validate_params()
    def add(self, key, accumulator):
        """Merge an accumulator built elsewhere into the window ``key``.

        Parameters
        ----------
        key : object
            The window key (for time windows, the start of the window).
        accumulator : CalibrationAccumulator
            Built with the monitor's ``pos_label`` and ``labels``; left
            unchanged.

        Returns
        -------
        CalibrationMonitor
            The monitor itself.
        """
        if not isinstance(accumulator, CalibrationAccumulator):
            raise TypeError(
                "accumulator must be a CalibrationAccumulator, got "
                f"{type(accumulator).__name__}."
            )
        if not hasattr(self, "accumulators_"):
            self.accumulators_ = {}
        if key not in self.accumulators_:
            self.accumulators_[key] = self._new_accumulator()
        self.accumulators_[key].merge(accumulator)
        return self

    def _windows(self):
        if not getattr(self, "accumulators_", None):
            from ._accumulator import _not_fitted

            raise _not_fitted("This CalibrationMonitor has no window yet.")
        return sorted(self.accumulators_)

    @validate_params()
    def merged(self, keys=None):
        """One accumulator for several windows.

        Parameters
        ----------
        keys : list, default=None
            The windows to merge; all by default.

        Returns
        -------
        CalibrationAccumulator
            A new accumulator; the monitor's are left unchanged.
        """
        windows = self._windows() if keys is None else list(keys)
        missing = [k for k in windows if k not in self.accumulators_]
        if missing:
            raise ValueError(f"keys holds windows the monitor has not seen: {missing}.")
        out = self._new_accumulator()
        for k in windows:
            out.merge(self.accumulators_[k])
        return out

    def _derived(self, groups):
        out = copy.copy(self)
        out.accumulators_ = {k: self.merged(ks) for k, ks in groups}
        return out

    @validate_params()
    def rolling(self, n_windows):
        """A monitor whose window ``k`` merges ``k`` and the windows before it.

        Window ``k`` of the result holds window ``k`` and the
        ``n_windows - 1`` windows before it.

        For time windows, "before" is in time (a rolling 7 days of daily
        windows holds the days of the last week that have data); for keys,
        in key order.

        Parameters
        ----------
        n_windows : int
            Number of windows merged, >= 1.

        Returns
        -------
        CalibrationMonitor
            A new monitor with the same keys.
        """
        windows = self._windows()
        length = _window_length(self.window)
        groups = []
        for i, k in enumerate(windows):
            if length is None:
                members = windows[max(0, i - n_windows + 1) : i + 1]
            else:
                low = k - (n_windows - 1) * length
                members = [j for j in windows[: i + 1] if j >= low]
            groups.append((k, members))
        return self._derived(groups)

    @validate_params()
    def to_date(self, period="month"):
        """A monitor whose window ``k`` merges its period up to ``k``.

        Month to date or year to date: window ``k`` of the result holds the
        windows of ``k``'s calendar period up to ``k``.

        Parameters
        ----------
        period : {"month", "year"}, default="month"
            The calendar period; needs time windows.

        Returns
        -------
        CalibrationMonitor
            A new monitor with the same keys.
        """
        unit = {"month": "M", "year": "Y"}[period]
        if _window_length(self.window) is None:
            raise ValueError("to_date needs time windows (window='1D', ...).")
        windows = self._windows()
        groups = []
        for i, k in enumerate(windows):
            start = k.astype(f"datetime64[{unit}]")
            members = [
                j for j in windows[: i + 1] if j.astype(f"datetime64[{unit}]") == start
            ]
            groups.append((k, members))
        return self._derived(groups)

    @validate_params(**MONITOR_RULES)
    def report(
        self,
        *,
        n_bins=15,
        n_bootstrap=100,
        confidence_level=0.95,
        n_resamples=999,
        bounds=None,
        random_state=None,
    ):
        """Calibration of every window.

        Per window: SmoothECE with a basic bootstrap interval (a Poisson
        bootstrap of the grid cells: each cell's samples are drawn again
        with a Poisson count), the binned ECE, the observed and expected
        rates (their difference is the calibration-in-the-large), the
        p-value of the test of calibration (labels drawn from the null
        ``y ~ Bernoulli(s)`` cell by cell, statistic the largest absolute
        cumulative residual over increasing scores: exact for unit weights
        and for weights equal within each grid cell, otherwise with the
        weighted events of a cell drawn from a normal law of their null mean
        and variance), and the certified bounds given in ``bounds``.

        Parameters
        ----------
        n_bins : int, default=15
            Bins of the binned ECE.
        n_bootstrap : int, default=100
            Bootstrap resamples of the SmoothECE interval; 0 skips it.
        confidence_level : float, default=0.95
            Level of the interval.
        n_resamples : int, default=999
            Null draws of the test of calibration; 0 skips it.
        bounds : dict, default=None
            Certified bounds by window key: a :class:`CalibrationBound` (e.g.
            from :class:`StreamingCalibrationBound` on the window's perturbed
            scores) or a float upper bound.
        random_state : int, Generator, RandomState or None, default=None
            Seeds the bootstrap and the null draws.

        Returns
        -------
        MonitoringReport
            One entry per window.
        """
        rng = check_random_generator(random_state)
        windows = self._windows()
        bounds = {} if bounds is None else dict(bounds)
        rows = []
        for k in windows:
            rows.append(
                self._window_row(
                    self.accumulators_[k],
                    n_bins,
                    n_bootstrap,
                    confidence_level,
                    n_resamples,
                    bounds.get(k),
                    rng,
                )
            )
        cols = list(zip(*rows, strict=True))
        keys = np.empty(len(windows), dtype=object)
        keys[:] = windows
        if self.window is not None:
            keys = np.array(windows, dtype="datetime64[ns]")
        elif all(isinstance(k, (int, float, np.number)) for k in windows):
            keys = np.array(windows)
        return MonitoringReport(
            window=keys,
            n_samples=np.array(cols[0], dtype=np.int64),
            **{
                name: np.array(col, dtype=np.float64)
                for name, col in zip(
                    MonitoringReport._COLUMNS[2:], cols[1:], strict=True
                )
            },
            confidence_level=float(confidence_level),
        )

    @staticmethod
    def _window_row(acc, n_bins, n_bootstrap, level, n_resamples, bound, rng):
        pos, neg = acc._slots()
        smece = acc.smooth_ece()
        low = high = np.nan
        if n_bootstrap:
            reps = np.array(
                [
                    _replicate_smece(_mon.poisson_resample(acc.moments_, rng), pos, neg)
                    for _ in range(n_bootstrap)
                ]
            )
            reps = reps[np.isfinite(reps)]
            if reps.size:
                a = (1.0 - level) / 2.0
                q_lo, q_hi = np.quantile(reps, [a, 1.0 - a])
                low, high = max(0.0, 2 * smece - q_hi), max(0.0, 2 * smece - q_lo)
        cells = _mon.cell_summary(acc.moments_, pos, neg)
        weight, positive, expected = cells[1:4]
        total = weight.sum()
        p_value = np.nan
        if n_resamples:
            _, p_value = _mon.cumulative_residual_test(*cells, n_resamples, rng)
        upper = lower = np.nan
        if bound is not None:
            upper = float(getattr(bound, "upper", bound))
            lower = float(getattr(bound, "lower", np.nan))
        return (
            int(acc.n_samples_),
            float(total),
            smece,
            low,
            high,
            acc.binned_calibration_error(n_bins=n_bins),
            float(positive.sum() / total),
            float(expected.sum() / total),
            p_value,
            upper,
            lower,
        )

    @validate_params(n_resamples=Interval(numbers.Integral, 1, 10**6))
    def change_test(
        self, before, after, *, n_strata=1024, n_resamples=999, random_state=None
    ):
        """Test whether the calibration function changed between two periods.

        The null hypothesis is that the probability of a positive given the
        score is the same function in both periods; it may differ from the
        score (a model miscalibrated the same way) and the scores may be
        distributed differently. The scores are cut into ``n_strata`` strata
        of equal width; conditional on the events of each stratum, they are
        spread over the two periods as a random subset (hypergeometric
        draws), which is exact when the function is constant within a
        stratum (width ``1 / n_strata``). The statistic is the largest
        absolute cumulative difference, over strata of increasing score,
        between the events of ``before`` and their null expectation. Weights
        are read as frequencies and must be whole numbers.

        Parameters
        ----------
        before : key or list of keys
            The windows of the first period.
        after : key or list of keys
            The windows of the second period.
        n_strata : int, default=1024
            Number of score strata, a power of two up to ``2**16``.
        n_resamples : int, default=999
            Null draws.
        random_state : int, Generator, RandomState or None, default=None
            Seeds the null draws.

        Returns
        -------
        ChangeTestResult
            The statistic and its p-value.
        """
        if not (
            isinstance(n_strata, (int, np.integer))
            and 1 <= n_strata <= FINE_M
            and FINE_M % n_strata == 0
        ):
            raise ValueError(
                f"n_strata must be a power of two from 1 to {FINE_M}; got {n_strata!r}."
            )
        rng = check_random_generator(random_state)
        tables = []
        for name, keys in (("before", before), ("after", after)):
            keys = keys if isinstance(keys, (list, tuple)) else [keys]
            # one window needs no merged copy (4 grids of 2**17 doubles)
            one = len(keys) == 1 and keys[0] in getattr(self, "accumulators_", {})
            acc = self.accumulators_[keys[0]] if one else self.merged(keys)
            pos, neg = acc._slots()
            total = acc.moments_[0].sum(axis=0)
            events = acc.moments_[0, pos] if pos is not None else np.zeros(FINE_M)
            if not (
                np.array_equal(total, np.rint(total))
                and np.array_equal(events, np.rint(events))
            ):
                raise ValueError(
                    f"The change test reads weights as frequencies; the windows of "
                    f"{name} have sample_weight that are not whole numbers."
                )
            tables.append(_mon.stratum_sums([total, events], int(n_strata)))
        (n1, o1), (n2, o2) = tables
        stat, p = _mon.change_test(n1, o1, n2, o2, n_resamples, rng)
        return ChangeTestResult(
            statistic=stat,
            p_value=p,
            n_resamples=int(n_resamples),
            n_strata=int(n_strata),
        )


def _replicate_smece(moments, pos, neg):
    stats = node_statistics(moments, pos, neg)
    if not stats[:, 0].sum() > 0:
        return np.nan
    sigma = _sm.solve_sigma(stats, _L1)
    return _sm.self_consistent_value(stats, sigma)
