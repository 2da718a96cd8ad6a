"""Binned reliability diagram with weights, multiclass reductions and bin mass."""

from __future__ import annotations

import numbers

import numpy as np

from .._backend.consistency import BinnedMeanBatch
from .._docstrings import fill_doc, join_entries
from .._params import (
    MAX_BINS,
    AnyOf,
    Interval,
    StrOptions,
    validate_params,
)
from .._validation import binary_tasks
from ..metrics._binned import binned_calibration_error
from ._plotting import (
    CONSISTENCY_LABEL,
    CONSISTENCY_STYLE,
    ReliabilityDisplayBase,
    check_features,
    checked_problem,
    checks_style,
    consistency_bands,
    consistency_label,
    fold_curves,
    merge_style,
    plain_labels,
    predict_proba_of,
    scores_of_a_model,
    stack_curves,
    to_table,
)

__all__ = ["BinnedReliabilityDisplay"]

# Entries shared by ``plot`` and the ``from_*`` constructors.
_DOC = {
    "n_bins": """\
n_bins : int or "cbrt", default=15
    Number of bins; ``"cbrt"`` uses ``ceil(n ** (1/3))`` with ``n`` the
    number of samples of positive weight.""",
    "strategy": """\
strategy : {"uniform", "quantile"}, default="uniform"
    Equal-width bins on [0, 1], or bins holding equal (weighted) mass; see
    :func:`skcalib.metrics.binned_calibration_error`.""",
    "norm": """\
norm : {"l1", "l2", "max"}, default="l1"
    Norm of the error in the legend: ECE, RMSCE or MCE.""",
    "consistency_band": """\
consistency_band : bool, default=False
    Draw the consistency band: where the bin means of a *calibrated*
    model with these scores would fall. Labels are drawn from the
    predictions (``y* ~ Bernoulli(s_i)``; top-label: a class drawn
    from each probability row), the fraction of positives of every
    bin is recomputed in the same bins, and the band holds its
    ``(1 -/+ confidence_level) / 2`` quantiles (a grey hatched box per
    bin, around the diagonal). A bar ending outside its box is
    miscalibrated by more than noise explains at that level.""",
    "n_consistency": """\
n_consistency : int, default=200
    Label draws of the consistency band.""",
    "confidence_level": """\
confidence_level : float in (0, 1), default=0.95
    Pointwise level of the consistency band.""",
    "random_state": """\
random_state : int, Generator, RandomState or None, default=None
    Seeds the label draws of the consistency band; the result does not
    depend on ``n_jobs``.""",
    "n_jobs": """\
n_jobs : int, default=None
    Parallel workers (``joblib``) for the draws of the consistency band;
    ``None`` means 1.""",
    "ax": """\
ax : matplotlib Axes or array of Axes, default=None
    Axes to draw on (one per class for a classwise diagram); ``None``
    creates a figure.""",
    "curve_kwargs": """\
curve_kwargs : dict or list of dict, default=None
    Keywords for :meth:`matplotlib.axes.Axes.plot` of the markers, with
    the multi-curve conventions of :meth:`SmoothReliabilityDisplay.plot`.""",
    "bar_kwargs": """\
bar_kwargs : dict, default=None
    Keywords for :meth:`matplotlib.axes.Axes.bar`. By default the bars
    take the markers' colour, with an opacity proportional to the
    bin's share of the predictions.""",
    "density_panel": """\
density_panel : bool or matplotlib Axes, default=False
    ``True`` adds a panel below with the histogram of the predictions
    as a density (share of the weight per unit of score); an Axes
    draws that histogram there.""",
}
# Blocks of parameters that several signatures share in this order.
_DOC["binning"] = join_entries(
    "n_bins", "strategy", "norm", "display_multi_class", "sample_weight", entries=_DOC
)
_DOC["consistency"] = join_entries(
    "consistency_band",
    "n_consistency",
    "confidence_level",
    "random_state",
    "n_jobs",
    entries=_DOC,
)
_DOC["drawing"] = join_entries(
    "ax",
    "curve_kwargs",
    "ref_line",
    "ref_line_kw",
    "bar_kwargs",
    "density_panel",
    "despine",
    entries=_DOC,
)

# The bars drawn on an axes so far, kept on the axes itself.
_BARS_OF_AXES = "_skcalib_binned_bars"

# Narrowest bar drawn, in score units.
MIN_BAR_WIDTH = 0.01

# The metrics' n_bins, "cbrt" included.
N_BINS = AnyOf(Interval(numbers.Integral, 1, MAX_BINS), StrOptions("cbrt"))

_NORM_NAMES = {"l1": "ECE", "l2": "RMSCE", "max": "MCE"}


def _binned_records(
    y_true,
    y_proba,
    sample_weight,
    pos_label,
    labels,
    *,
    multi_class,
    n_bins,
    strategy,
    norm,
    consistency_band,
    n_consistency,
    confidence_level,
    random_state,
    n_jobs,
):
    """The curves of one sample: ``(records, shown, pos_label, score_range)``.

    The reduction ``shown`` is None for a binary problem; a record holds one
    curve's bins (one per class for a classwise diagram).
    """
    data, shown, score_range = checked_problem(
        y_true,
        y_proba,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        multi_class=multi_class,
    )
    res = binned_calibration_error(
        y_true,
        y_proba,
        n_bins=n_bins,
        strategy=strategy,
        norm=norm,
        multi_class=multi_class,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        return_details=True,
    )
    if res.class_values is not None:
        # One panel per class, each with its own one-vs-rest error (the
        # metric itself reports their mean).
        panels = [
            (
                res.mean_score[k],
                res.mean_label[k],
                res.weight[k],
                res.edges[k],
                res.bin[k],
                res.class_values[k],
                res.classes[k],
            )
            for k in range(len(res.classes))
        ]
    else:
        panels = [
            (
                res.mean_score,
                res.mean_label,
                res.weight,
                res.edges,
                res.bin,
                res.value,
                None,
            )
        ]
    keys = (
        "mean_score",
        "mean_label",
        "bin_weight",
        "bin_edges",
        "bin_index",
        "error",
        "class_label",
    )
    records = [dict(zip(keys, panel, strict=True)) for panel in panels]
    for r in records:
        r["consistency_low"] = r["consistency_high"] = None
        r["confidence_level"] = None
    if consistency_band:
        tasks = binary_tasks(data, multi_class)
        batches = [
            BinnedMeanBatch(s, w, np.asarray(r["bin_edges"]), r["bin_index"])
            for r, (_, s, w) in zip(records, tasks, strict=True)
        ]
        bands = consistency_bands(
            batches, n_consistency, confidence_level, random_state, n_jobs
        )
        for r, (lo, hi) in zip(records, bands, strict=True):
            r["consistency_low"], r["consistency_high"] = lo, hi
            r["confidence_level"] = confidence_level
    return plain_labels(records), shown, data.pos_label, score_range


class BinnedReliabilityDisplay(ReliabilityDisplayBase):
    """Binned reliability diagram: observed frequency per bin of predictions.

    Each non-empty bin is a bar as wide as the bin, as high as the weighted
    fraction of positives in it and as opaque as its share of the (weighted)
    predictions; the markers sit at the bins' mean prediction. The legend
    gives the binned calibration error computed by
    :func:`skcalib.metrics.binned_calibration_error`. Unlike
    :class:`sklearn.calibration.CalibrationDisplay`, it takes sample weights,
    multiclass probabilities (top-label or one panel per class) and several
    curves. Top-label diagrams of ``K`` classes are drawn on ``[1/K, 1]``,
    where confidences can lie. The optional panel below is the histogram of
    the predictions as a density (each bin's share of the weight divided by
    its width, so it integrates to one whatever the binning);
    :meth:`frame` returns the plotted data as a table.

    Use :meth:`from_estimator`, :meth:`from_predictions` or
    :meth:`from_cv_results` to create one. Every data parameter holds one
    value per curve (a list when there are several curves).

    Parameters
    ----------
    mean_score : ndarray or list of ndarray
        Weighted mean prediction of each non-empty bin.
    mean_label : ndarray or list of ndarray
        Weighted fraction of positives of each non-empty bin.
    bin_weight : ndarray or list of ndarray
        Total weight of each non-empty bin.
    bin_edges : ndarray or list of ndarray
        Edges of all bins.
    bin_index : ndarray or list of ndarray
        Position of each non-empty bin among the bins.
    error : float or list of float, default=None
        Binned calibration error, shown in the legend.
    consistency_low : ndarray or list of ndarray, default=None
        Lower end of the consistency band of ``mean_label`` per bin: where
        the fraction of positives of a calibrated model with these scores
        would fall (see ``consistency_band`` in :meth:`from_predictions`).
    consistency_high : ndarray or list of ndarray, default=None
        Upper end of the consistency band of ``mean_label`` per bin.
    confidence_level : float or list of float, default=None
        Level of the consistency band.
    norm : {"l1", "l2", "max"}, default="l1"
        Norm of ``error``: ECE, RMSCE or MCE in the legend.
    class_label : object or list, default=None
        Class of each one-vs-rest curve; curves of different classes go to
        different panels.
    multi_class : {None, "top-label", "classwise"}, default=None
        Reduction the curves show (``None`` for a binary problem).
    name : str or list of str, default=None
        Legend name of each curve.
    pos_label : int, float, bool or str, default=None
        Positive class of a binary diagram, shown in the axis label.
    score_range : tuple of float, default=None
        ``(low, high)``: where the scores can lie, ``(1/K, 1)`` for top-label
        confidences of ``K`` classes; bars, diagonal and x-axis are drawn on
        it. ``None`` means ``(0, 1)``.

    Attributes
    ----------
    line_ : matplotlib Line2D or list of Line2D
        Markers at (mean prediction, fraction of positives).
    bars_ : matplotlib BarContainer or list of BarContainer
        The bins.
    consistency_band_ : matplotlib BarContainer or list
        The consistency bands (``None`` without one).
    ref_line_ : matplotlib Line2D or None
    ax_ : matplotlib Axes or ndarray of Axes
    density_ax_ : matplotlib Axes, ndarray of Axes or None
        Histogram panel(s) of the density of the predictions per bin.
    figure_ : matplotlib Figure
    group : object, list or None
        The group of each curve when drawn with ``groups=`` (the ``group``
        column of :meth:`frame`), else ``None``.

    See Also
    --------
    SmoothReliabilityDisplay : The binning-free diagram.
    skcalib.metrics.binned_calibration_error : The data of the diagram.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from skcalib.display import BinnedReliabilityDisplay
    >>> disp = BinnedReliabilityDisplay.from_predictions(
    ...     [0, 0, 1, 1], [0.1, 0.4, 0.6, 1.0], n_bins=2)
    >>> disp.line_.get_label()
    'Classifier (ECE = 0.225)'
    >>> disp.mean_label
    array([0., 1.])
    >>> plt.close(disp.figure_)
    """

    _fields = (
        "mean_score",
        "mean_label",
        "bin_weight",
        "bin_edges",
        "bin_index",
        "error",
        "consistency_low",
        "consistency_high",
        "confidence_level",
    )
    _value_field = "error"
    _density_label = "Density"

    def __init__(
        self,
        *,
        mean_score,
        mean_label,
        bin_weight,
        bin_edges,
        bin_index,
        error=None,
        consistency_low=None,
        consistency_high=None,
        confidence_level=None,
        norm="l1",
        class_label=None,
        multi_class=None,
        name=None,
        pos_label=None,
        score_range=None,
    ):
        self.mean_score = mean_score
        self.mean_label = mean_label
        self.bin_weight = bin_weight
        self.bin_edges = bin_edges
        self.bin_index = bin_index
        self.error = error
        self.consistency_low = consistency_low
        self.consistency_high = consistency_high
        self.confidence_level = confidence_level
        self.norm = norm
        self.class_label = class_label
        self.multi_class = multi_class
        self.name = name
        self.pos_label = pos_label
        self.score_range = score_range

    @property
    def _metric_name(self):
        return _NORM_NAMES.get(self.norm, "Error")

    @checks_style
    @validate_params()
    @fill_doc(**_DOC)
    def plot(
        self,
        ax=None,
        *,
        name=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        bar_kwargs=None,
        density_panel=False,
        despine=False,
    ):
        """Plot the diagram.

        Parameters
        ----------
        ${ax}
        name : str or list of str, default=None
            Legend name(s); ``None`` uses :attr:`name`.
        ${curve_kwargs}
        ${ref_line}
        ${ref_line_kw}
        ${bar_kwargs}
        ${density_panel}
        ${despine}

        Returns
        -------
        BinnedReliabilityDisplay
            This display, with ``ax_``, ``figure_`` and the drawn artists.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.display import BinnedReliabilityDisplay
        >>> disp = BinnedReliabilityDisplay(
        ...     mean_score=np.array([0.25, 0.8]), mean_label=np.array([0.0, 1.0]),
        ...     bin_weight=np.array([2.0, 2.0]), bin_edges=np.array([0.0, 0.5, 1.0]),
        ...     bin_index=np.array([0, 1]), error=0.225, name="model")
        >>> disp = disp.plot(density_panel=True)
        >>> disp.line_.get_label(), len(disp.bars_)
        ('model (ECE = 0.225)', 2)
        >>> plt.close(disp.figure_)
        """
        return self._plot(
            ax,
            name=name,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            density_panel=density_panel,
            despine=despine,
            bar_kwargs=bar_kwargs,
        )

    def _bars(self, r):
        """Each non-empty bin as drawn: left edge, width, share and density."""
        edges = np.asarray(r["bin_edges"], dtype=float)
        idx = np.asarray(r["bin_index"], dtype=int)
        weight = np.asarray(r["bin_weight"], dtype=float)
        lo, hi = self._x_range
        left = np.maximum(edges[idx], lo)
        right = np.minimum(edges[idx + 1], hi)
        width = right - left
        # Quantile bins of tied scores have (nearly) no width: such a bar is
        # drawn at least MIN_BAR_WIDTH wide, centred on the bin's mean score,
        # so that a heavy bin (say every score exactly 1) stays visible.
        narrow = width < MIN_BAR_WIDTH
        if np.any(narrow):
            centre = np.asarray(r["mean_score"], dtype=float)[narrow]
            left = left.copy()
            left[narrow] = np.clip(centre - MIN_BAR_WIDTH / 2, lo, hi - MIN_BAR_WIDTH)
            width = np.where(narrow, MIN_BAR_WIDTH, width)
        share = weight / weight.sum() if weight.size else weight
        band = {}
        for key in ("consistency_low", "consistency_high"):
            value = r[key]
            band[key] = (
                np.full(idx.shape, np.nan)
                if value is None
                else np.asarray(value, dtype=float)
            )
        return {
            "bin": idx,
            "bin_left": left,
            "bin_right": left + width,
            "mean_score": np.asarray(r["mean_score"], dtype=float),
            "mean_label": np.asarray(r["mean_label"], dtype=float),
            "weight": weight,
            "share": share,
            "density": share / width,
            **band,
        }

    @validate_params()
    def frame(self, *, as_frame=True):
        """The plotted data as a table, one row per non-empty bin of each curve.

        Parameters
        ----------
        as_frame : bool, default=True
            Return a :class:`pandas.DataFrame` (pandas is then required);
            ``False`` returns a dict of numpy arrays.

        Returns
        -------
        DataFrame or dict of ndarray
            Columns ``bin`` (position among the bins), ``bin_left`` and
            ``bin_right`` (the bar as drawn), ``mean_score`` and ``mean_label``
            (the marker: mean prediction and fraction of positives, the bar's
            height), ``weight`` (of the bin), ``share`` (of the total weight:
            the bar's opacity), ``density`` (the density panel) and
            ``consistency_low`` and ``consistency_high`` (the consistency
            band, NaN without one); with several curves, ``curve`` (their
            index) in front, ``group`` for the curves of ``groups=`` and
            ``label`` for the classes of a classwise diagram.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.display import BinnedReliabilityDisplay
        >>> disp = BinnedReliabilityDisplay.from_predictions(
        ...     [0, 0, 1, 1], [0.1, 0.4, 0.6, 1.0], n_bins=2)
        >>> disp.frame()[["bin", "mean_score", "mean_label", "density"]]
           bin  mean_score  mean_label  density
        0    0        0.25         0.0      1.0
        1    1        0.80         1.0      1.0
        >>> plt.close(disp.figure_)
        """
        records = self._records()
        tables = [self._bars(r) for r in records]
        return to_table(stack_curves(tables, self._curve_keys()), as_frame)

    def _draw(self, ax, r, style, dax, *, bar_kwargs):
        from matplotlib.colors import to_rgba

        b = self._bars(r)
        left, width, share = b["bin_left"], b["bin_right"] - b["bin_left"], b["share"]
        (line,) = ax.plot(
            r["mean_score"],
            r["mean_label"],
            **merge_style(
                {"marker": "o", "markersize": 4, "linestyle": "-", "linewidth": 1.2},
                style,
            ),
        )
        fade = 1.0 if line.get_alpha() is None else line.get_alpha()
        rgb = to_rgba(line.get_color())[:3]
        peak = share.max() if share.size else 1.0
        # Opacity is the bin's share relative to the fullest bin, floored so
        # that sparse bins stay visible.
        alphas = fade * (0.06 + 0.34 * share / peak)
        defaults = {
            "color": [(*rgb, a) for a in alphas],
            "edgecolor": (*rgb, 0.35 * fade),
            "linewidth": 0.5,
            "align": "edge",
            "zorder": line.get_zorder() - 1,
        }
        # Translucent fills of several models on one axes blend into one
        # muddy colour: with more than one curve, every curve's bars become
        # outlines in the curve's colour.
        earlier = getattr(ax, _BARS_OF_AXES, [])
        if earlier:
            defaults.update(color="none", edgecolor=(*rgb, 0.7 * fade), linewidth=0.9)
            for previous in earlier:
                for patch in previous:
                    patch.set_facecolor("none")
                    patch.set_edgecolor((*patch.get_edgecolor()[:3], 0.7 * fade))
                    patch.set_linewidth(0.9)
        bars = ax.bar(left, r["mean_label"], width, **merge_style(defaults, bar_kwargs))
        setattr(ax, _BARS_OF_AXES, [*earlier, bars])
        consistency = None
        if r["consistency_low"] is not None:
            lo, hi = b["consistency_low"], b["consistency_high"]
            consistency = ax.bar(
                left,
                hi - lo,
                width,
                bottom=lo,
                align="edge",
                zorder=line.get_zorder() - 0.5,
                label=consistency_label(ax, r["confidence_level"]),
                **CONSISTENCY_STYLE,
            )
        if dax is not None:
            dax.bar(
                left,
                b["density"],
                width,
                align="edge",
                color=(*rgb, 0.45 * fade),
                edgecolor=(*rgb, 0.8 * fade),
                linewidth=0.6,
            )
        return line, (bars, consistency)

    def _set_extras(self, extras):
        if isinstance(extras, list):
            self.bars_ = [e[0] for e in extras]
            self.consistency_band_ = [e[1] for e in extras]
        else:
            self.bars_, self.consistency_band_ = extras

    def _is_note(self, label):
        return label.endswith(CONSISTENCY_LABEL)

    @classmethod
    @checks_style
    @validate_params(n_bins=N_BINS)
    @fill_doc(**_DOC)
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        n_bins=15,
        strategy="uniform",
        norm="l1",
        multi_class="top-label",
        sample_weight=None,
        pos_label=None,
        labels=None,
        consistency_band=False,
        n_consistency=200,
        confidence_level=0.95,
        random_state=None,
        n_jobs=None,
        name="Classifier",
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        bar_kwargs=None,
        density_panel=False,
        despine=False,
        groups=None,
    ):
        """Plot the binned reliability diagram of predicted probabilities.

        Parameters
        ----------
        ${y_true}
        ${y_proba}
        ${binning}
        ${pos_label}
        ${labels}
        ${consistency}
        name : str, default="Classifier"
            Legend name of the curve.
        ${drawing}
        ${display_groups}

        Returns
        -------
        BinnedReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.display import BinnedReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> P = rng.dirichlet([1, 1, 1], size=3000)
        >>> y = np.array([rng.choice(3, p=row) for row in P])
        >>> disp = BinnedReliabilityDisplay.from_predictions(
        ...     y, P, multi_class="classwise", n_bins=10, strategy="quantile")
        >>> disp.ax_.shape, disp.class_label
        ((3,), [0, 1, 2])
        >>> plt.close(disp.figure_)
        """

        def curves(y_true, y_proba, sample_weight, pos_label, labels):
            return _binned_records(
                y_true,
                y_proba,
                sample_weight,
                pos_label,
                labels,
                multi_class=multi_class,
                n_bins=n_bins,
                strategy=strategy,
                norm=norm,
                consistency_band=consistency_band,
                n_consistency=n_consistency,
                confidence_level=confidence_level,
                random_state=random_state,
                n_jobs=n_jobs,
            )

        display, curve_kwargs = cls._from_records(
            curves,
            y_true,
            y_proba,
            groups,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
            name=name,
            curve_kwargs=curve_kwargs,
            norm=norm,
        )
        return display.plot(
            ax,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            bar_kwargs=bar_kwargs,
            density_panel=density_panel,
            despine=despine,
        )

    @classmethod
    @checks_style
    @scores_of_a_model
    @validate_params(n_bins=N_BINS)
    @fill_doc(**_DOC)
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        n_bins=15,
        strategy="uniform",
        norm="l1",
        multi_class="top-label",
        sample_weight=None,
        pos_label=None,
        consistency_band=False,
        n_consistency=200,
        confidence_level=0.95,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        bar_kwargs=None,
        density_panel=False,
        despine=False,
        groups=None,
    ):
        """Plot the binned reliability diagram of a fitted classifier.

        Parameters
        ----------
        ${estimator}
        ${X}
        ${y}
        ${binning}
        ${estimator_pos_label}
        ${consistency}
        name : str, default=None
            Legend name; ``None`` uses the estimator's class name.
        ${drawing}
        ${display_groups}

        Returns
        -------
        BinnedReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.naive_bayes import GaussianNB
        >>> from skcalib.display import BinnedReliabilityDisplay
        >>> X, y = make_classification(n_samples=2000, random_state=0)
        >>> clf = GaussianNB().fit(X[:1000], y[:1000])
        >>> disp = BinnedReliabilityDisplay.from_estimator(
        ...     clf, X[1000:], y[1000:], n_bins=10, density_panel=True)
        >>> disp.line_.get_label()
        'GaussianNB (ECE = 0.0...)'
        >>> plt.close(disp.figure_)
        """
        y = check_features(X, y)
        proba, classes, pos_label, name = predict_proba_of(
            estimator, X, pos_label, name
        )
        return cls.from_predictions(
            y,
            proba,
            n_bins=n_bins,
            strategy=strategy,
            norm=norm,
            multi_class=multi_class,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=classes,
            consistency_band=consistency_band,
            n_consistency=n_consistency,
            confidence_level=confidence_level,
            random_state=random_state,
            n_jobs=n_jobs,
            name=name,
            ax=ax,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            bar_kwargs=bar_kwargs,
            density_panel=density_panel,
            despine=despine,
            groups=groups,
        )

    @classmethod
    @checks_style
    @scores_of_a_model
    @validate_params(n_bins=N_BINS)
    @fill_doc(**_DOC)
    def from_cv_results(
        cls,
        cv_results,
        X,
        y,
        *,
        n_bins=15,
        strategy="uniform",
        norm="l1",
        multi_class="top-label",
        sample_weight=None,
        pos_label=None,
        consistency_band=False,
        n_consistency=200,
        confidence_level=0.95,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        bar_kwargs=None,
        density_panel=False,
        despine=False,
    ):
        """Plot one binned reliability curve per cross-validation split.

        Parameters
        ----------
        ${cv_results}
        ${X}
        ${y}
        ${binning}
        ${estimator_pos_label}
        ${consistency}
        name : str or list of str, default=None
            Legend name of the split curves (one legend entry with the mean
            and standard deviation of the error over splits); a list names
            each split's curve, with ``curve_kwargs`` a list too.
        ${drawing}

        Returns
        -------
        BinnedReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from sklearn.model_selection import cross_validate
        >>> from skcalib.display import BinnedReliabilityDisplay
        >>> X, y = make_classification(n_samples=900, random_state=0)
        >>> cv = cross_validate(LogisticRegression(), X, y, cv=3,
        ...                     return_estimator=True, return_indices=True)
        >>> disp = BinnedReliabilityDisplay.from_cv_results(
        ...     cv, X, y, n_bins=5, name=["a", "b", "c"],
        ...     curve_kwargs=[{"color": c} for c in ("C0", "C1", "C2")])
        >>> [line.get_label()[:1] for line in disp.line_]
        ['a', 'b', 'c']
        >>> plt.close(disp.figure_)
        """

        def curves(y_true, y_proba, sample_weight, pos_label, labels):
            return _binned_records(
                y_true,
                y_proba,
                sample_weight,
                pos_label,
                labels,
                multi_class=multi_class,
                n_bins=n_bins,
                strategy=strategy,
                norm=norm,
                consistency_band=consistency_band,
                n_consistency=n_consistency,
                confidence_level=confidence_level,
                random_state=random_state,
                n_jobs=n_jobs,
            )

        records, shown, pos_label, score_range = fold_curves(
            cv_results,
            X,
            y,
            sample_weight=sample_weight,
            pos_label=pos_label,
            curves=curves,
        )
        display = cls._assemble(records, shown, pos_label, name, score_range, norm=norm)
        return display.plot(
            ax,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            bar_kwargs=bar_kwargs,
            density_panel=density_panel,
            despine=despine,
        )
