"""Calibration over time: a window-by-window plot of a :class:`MonitoringReport`."""

from __future__ import annotations

import numpy as np

from .._params import MONITOR_RULES, RULES, Boolean, Interval, NoneOr, validate_params
from ._plotting import axes_or_new, hide_spines, level_text, merge_style

__all__ = ["CalibrationOverTimeDisplay"]

_ALERT_LEVEL = NoneOr(Interval(float, 0, 1, closed="neither"))


class CalibrationOverTimeDisplay:
    """Calibration of a monitored stream, window by window.

    The SmoothECE of every window with its bootstrap interval as a band, the
    certified upper bound where the report has one, the number of samples of
    each window as bars on a second axis, and the windows whose test of
    calibration rejects at ``alert_level`` marked. Build it with
    :meth:`from_monitor`, :meth:`from_report`, :meth:`from_predictions` or
    :meth:`from_estimator`; :meth:`frame` gives the same
    numbers as a table for dashboards. Read more in the
    :ref:`User Guide <monitoring>`.

    Parameters
    ----------
    report : MonitoringReport
        The per-window calibration (:meth:`CalibrationMonitor.report`).
    name : str, default=None
        Name of the stream, for the legend.

    Attributes
    ----------
    line_ : matplotlib Line2D
        The SmoothECE line.
    band_ : matplotlib PolyCollection or None
        The band of the SmoothECE intervals.
    bound_line_ : matplotlib Line2D or None
        The certified upper bounds.
    alerts_ : matplotlib PathCollection or None
        The windows marked by the alert rule.
    bars_ : matplotlib BarContainer or None
        The sample counts.
    count_ax_ : matplotlib Axes or None
        The axis of the counts.
    ax_ : matplotlib Axes
        The axes drawn on.
    figure_ : matplotlib Figure
        The figure of ``ax_``.

    See Also
    --------
    skcalib.metrics.CalibrationMonitor : The windows and their report.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skcalib.display import CalibrationOverTimeDisplay
    >>> from skcalib.metrics import CalibrationMonitor
    >>> rng = np.random.default_rng(0)
    >>> mon = CalibrationMonitor()
    >>> for day in range(10):
    ...     p = rng.beta(2, 5, size=3000)
    ...     y = rng.uniform(size=3000) < p ** (1 + day / 20)
    ...     mon = mon.partial_fit(y, p, key=day)
    >>> disp = CalibrationOverTimeDisplay.from_monitor(
    ...     mon, n_bootstrap=20, n_resamples=199, random_state=0, alert_level=0.01
    ... )
    >>> disp.frame()["n_samples"].sum()
    np.int64(30000)
    >>> plt.close(disp.figure_)
    """

    def __init__(self, report, *, name=None):
        self.report = report
        self.name = name

    def frame(self):
        """The numbers drawn, one row per window (see :meth:`MonitoringReport.frame`).

        Returns
        -------
        pandas.DataFrame or dict of ndarray
            A DataFrame when pandas is installed, else a dict of the columns.
        """
        return self.report.frame()

    @validate_params(count_panel=Boolean(), despine=Boolean(), alert_level=_ALERT_LEVEL)
    def plot(
        self,
        ax=None,
        *,
        name=None,
        line_kwargs=None,
        bound_kwargs=None,
        count_panel=True,
        alert_level=None,
        despine=False,
    ):
        """Draw the report.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure's by default.
        name : str, default=None
            Name for the legend; overrides the display's ``name``.
        line_kwargs : dict, default=None
            Style of the SmoothECE line.
        bound_kwargs : dict, default=None
            Style of the certified-bound line.
        count_panel : bool, default=True
            Draw the sample counts as bars on a second y-axis.
        alert_level : float in (0, 1), default=None
            Mark the windows whose test of calibration has a p-value at most
            this level.
        despine : bool, default=False
            Hide the top spine (and the right one without ``count_panel``).

        Returns
        -------
        CalibrationOverTimeDisplay
            The display, with ``line_``, ``ax_`` and ``figure_`` set.
        """
        rep = self.report
        ax = axes_or_new(ax)
        self.ax_, self.figure_ = ax, ax.figure
        x = rep.window
        if x.dtype == object:
            x = np.arange(x.shape[0])
            ax.set_xticks(x, [str(k) for k in rep.window])
        name = self.name if name is None else name
        self.bars_ = self.count_ax_ = None
        if count_panel:
            cax = ax.twinx()
            widths = _bar_widths(x)
            self.bars_ = cax.bar(
                x, rep.n_samples, width=widths, color="0.85", label="samples", zorder=0
            )
            cax.set_ylabel("samples per window")
            cax.set_ylim(0, 4 * max(rep.n_samples.max(), 1))
            ax.set_zorder(cax.get_zorder() + 1)
            ax.patch.set_visible(False)
            self.count_ax_ = cax
        label = "SmoothECE" if name is None else f"{name} SmoothECE"
        style = merge_style(
            {"marker": "o", "markersize": 3, "label": label}, line_kwargs
        )
        (self.line_,) = ax.plot(x, rep.smece, **style)
        color = self.line_.get_color()
        self.band_ = None
        if np.isfinite(rep.smece_low).any():
            self.band_ = ax.fill_between(
                x,
                rep.smece_low,
                rep.smece_high,
                color=color,
                alpha=0.2,
                linewidth=0,
                label=f"{level_text(rep.confidence_level)} interval",
            )
        self.bound_line_ = None
        if np.isfinite(rep.bound_upper).any():
            style = merge_style(
                {"color": "C3", "linestyle": "--", "label": "certified upper bound"},
                bound_kwargs,
            )
            (self.bound_line_,) = ax.plot(x, rep.bound_upper, **style)
        self.alerts_ = None
        if alert_level is not None:
            hit = rep.p_value <= alert_level
            self.alerts_ = ax.scatter(
                np.asarray(x)[hit],
                rep.smece[hit],
                marker="v",
                s=60,
                color="C3",
                zorder=5,
                label=f"test rejects at {alert_level:g}",
            )
        ax.set_ylim(bottom=0)
        ax.set_ylabel("calibration error")
        ax.set_xlabel("window")
        if despine:
            hide_spines(ax, ("top",) if count_panel else ("top", "right"))
        ax.legend(loc="upper left", fontsize="small")
        if np.issubdtype(np.asarray(x).dtype, np.datetime64):
            self.figure_.autofmt_xdate()
        return self

    @classmethod
    @validate_params()
    def from_report(cls, report, *, name=None, ax=None, **plot_kwargs):
        """Plot a :class:`MonitoringReport`.

        Parameters
        ----------
        report : MonitoringReport
            From :meth:`CalibrationMonitor.report`.
        name : str, default=None
            Name of the stream, for the legend.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        **plot_kwargs : dict
            Passed to :meth:`plot`.

        Returns
        -------
        CalibrationOverTimeDisplay
            The display, drawn.
        """
        return cls(report, name=name).plot(ax, **plot_kwargs)

    @classmethod
    @validate_params(**MONITOR_RULES)
    def from_monitor(
        cls,
        monitor,
        *,
        n_bootstrap=100,
        n_resamples=999,
        bounds=None,
        random_state=None,
        name=None,
        ax=None,
        **plot_kwargs,
    ):
        """Report a :class:`CalibrationMonitor` and plot it.

        Parameters
        ----------
        monitor : CalibrationMonitor
            A monitor with at least one window.
        n_bootstrap : int, default=100
            Bootstrap resamples of the SmoothECE intervals (0: no band).
        n_resamples : int, default=999
            Null draws of the tests of calibration.
        bounds : dict, default=None
            Certified bounds by window key.
        random_state : int, Generator, RandomState or None, default=None
            Seeds the resamples.
        name : str, default=None
            Name of the stream, for the legend.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        **plot_kwargs : dict
            Passed to :meth:`plot`.

        Returns
        -------
        CalibrationOverTimeDisplay
            The display, drawn.
        """
        report = monitor.report(
            n_bootstrap=n_bootstrap,
            n_resamples=n_resamples,
            bounds=bounds,
            random_state=random_state,
        )
        return cls.from_report(report, name=name, ax=ax, **plot_kwargs)

    @classmethod
    @validate_params(key=NoneOr(RULES["key"]), **MONITOR_RULES)
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        key=None,
        window=None,
        sample_weight=None,
        pos_label=None,
        labels=None,
        n_bootstrap=100,
        n_resamples=999,
        random_state=None,
        name=None,
        ax=None,
        **plot_kwargs,
    ):
        """Monitor predictions by window and plot the report.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            Labels.
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
            Predicted probabilities.
        key : scalar or array-like of shape (n_samples,), default=None
            The window key or timestamp of every sample (see
            :class:`~skcalib.metrics.CalibrationMonitor`); ``None`` puts all
            samples in one window.
        window : str, timedelta or None, default=None
            Length of the time windows, as in
            :class:`~skcalib.metrics.CalibrationMonitor`.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        pos_label : int, float, bool or str, default=None
            Positive class.
        labels : array-like of shape (2,), default=None
            Both class labels.
        n_bootstrap : int, default=100
            Bootstrap resamples of the SmoothECE intervals (0: no band).
        n_resamples : int, default=999
            Null draws of the tests of calibration (0: none).
        random_state : int, Generator, RandomState or None, default=None
            Seeds the resamples.
        name : str, default=None
            Name of the stream, for the legend.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        **plot_kwargs : dict
            Passed to :meth:`plot`.

        Returns
        -------
        CalibrationOverTimeDisplay
            The display, drawn.
        """
        from ..metrics import CalibrationMonitor

        monitor = CalibrationMonitor(window=window, pos_label=pos_label, labels=labels)
        monitor.partial_fit(
            y_true, y_proba, key=0 if key is None else key, sample_weight=sample_weight
        )
        return cls.from_monitor(
            monitor,
            n_bootstrap=n_bootstrap,
            n_resamples=n_resamples,
            random_state=random_state,
            name=name,
            ax=ax,
            **plot_kwargs,
        )

    @classmethod
    @validate_params(key=NoneOr(RULES["key"]), **MONITOR_RULES)
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        key=None,
        window=None,
        sample_weight=None,
        pos_label=None,
        n_bootstrap=100,
        n_resamples=999,
        random_state=None,
        name=None,
        ax=None,
        **plot_kwargs,
    ):
        """Monitor a fitted classifier's predictions by window and plot them.

        Parameters
        ----------
        estimator : fitted classifier
            A binary classifier with ``predict_proba``.
        X : array-like of shape (n_samples, n_features)
            Input values.
        y : array-like of shape (n_samples,)
            Labels.
        key : scalar or array-like of shape (n_samples,), default=None
            The window key or timestamp of every sample; ``None`` puts all
            samples in one window.
        window : str, timedelta or None, default=None
            Length of the time windows.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights.
        pos_label : int, float, bool or str, default=None
            Positive class; by default the estimator's last class.
        n_bootstrap : int, default=100
            Bootstrap resamples of the SmoothECE intervals (0: no band).
        n_resamples : int, default=999
            Null draws of the tests of calibration (0: none).
        random_state : int, Generator, RandomState or None, default=None
            Seeds the resamples.
        name : str, default=None
            Name for the legend; the estimator's class name by default.
        ax : matplotlib Axes, default=None
            Axes to draw on.
        **plot_kwargs : dict
            Passed to :meth:`plot`.

        Returns
        -------
        CalibrationOverTimeDisplay
            The display, drawn.
        """
        from ._plotting import check_features, predict_proba_of

        y = check_features(X, y)
        proba, classes, pos_label, name = predict_proba_of(
            estimator, X, pos_label, name
        )
        return cls.from_predictions(
            y,
            proba,
            key=key,
            window=window,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=classes,
            n_bootstrap=n_bootstrap,
            n_resamples=n_resamples,
            random_state=random_state,
            name=name,
            ax=ax,
            **plot_kwargs,
        )


def _bar_widths(x):
    x = np.asarray(x)
    if x.shape[0] < 2:
        return (
            0.8
            if not np.issubdtype(x.dtype, np.datetime64)
            else np.timedelta64(12, "h")
        )
    return 0.8 * np.min(np.diff(x))
