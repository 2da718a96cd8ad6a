"""Smooth reliability diagram (SmoothECE curve with density and bootstrap band)."""

from __future__ import annotations

import numbers

import numpy as np

from .._backend.consistency import SmoothCurveBatch
from .._backend.density import grid_samples, local_sample_size, score_density
from .._backend.smece import LOGIT_EPS, GridGeometry
from .._docstrings import fill_doc, join_entries
from .._params import (
    MAX_BOOTSTRAP,
    AnyOf,
    Interval,
    StrOptions,
    check_random_generator,
    validate_params,
)
from .._validation import binary_tasks
from ..metrics._smooth import smooth_calibration_curve
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
    level_text,
    merge_style,
    plain_labels,
    predict_proba_of,
    score_range_of,
    scores_of_a_model,
    stack_curves,
    to_table,
)

__all__ = ["SmoothReliabilityDisplay"]

# Entries shared by ``plot`` and the ``from_*`` constructors.
_DOC = {
    "sigma": """\
sigma : float in (0, 1], default=None
    Fixed kernel bandwidth; ``None`` uses the self-consistent ``sigma*``
    of :func:`skcalib.metrics.smooth_ece`.""",
    "metric": """\
metric : {"l1", "logit"}, default="l1"
    Smoothing on [0, 1] or on ``logit(s)``.""",
    "n_bootstrap": """\
n_bootstrap : int or "auto", default="auto"
    Bootstrap resamples of the band and of the smECE interval.
    ``"auto"`` is 100 resamples up to 200,000 samples (about 0.6 s
    up to 10,000 samples, 1.5 s at 200,000 with
    ``ci_method="basic"``; the default inversion interval of smECE
    takes 3.3-4 times as long, measured side by side; 0.05-0.2 s
    without a band) and none above: each resample costs about 30 ms
    per million rows, and the band is then narrower than the line.
    ``0`` draws no band.""",
    "confidence_level": """\
confidence_level : float in (0, 1), default=0.95
    Level of the interval of smECE, of the pointwise bootstrap band and
    of the consistency band.""",
    "ci_method": """\
ci_method : {"inversion", "basic", "percentile"}, default="inversion"
    How the interval of smECE is formed; see
    :func:`skcalib.metrics.smooth_calibration_curve`.""",
    "random_state": """\
random_state : int, Generator, RandomState or None, default=None
    Seeds the bootstrap resamples and the label draws of the consistency
    band; the result does not depend on ``n_jobs``.""",
    "n_jobs": """\
n_jobs : int, default=None
    Parallel workers (``joblib``) for the bootstrap and the consistency
    band; ``None`` means 1, ``-1`` all cores.""",
    "density_bandwidth": """\
density_bandwidth : {"silverman", "scott"} or float, default="silverman"
    Bandwidth of the score density (the panel and the ribbon's
    width): a rule of thumb on the scores (Silverman's
    ``0.9 min(sd, IQR / 1.349) n^(-1/5)`` or Scott's
    ``1.06 sd n^(-1/5)``) or a float, in the units of ``metric``. The
    kernel is the Gaussian reflected at both ends of the scores'
    range, so that the density integrates to one on it.""",
    "consistency_band": """\
consistency_band : bool, default=False
    Draw the consistency band: where the curve of a *calibrated*
    model with these scores would fall. Labels are drawn from the
    predictions (``y* ~ Bernoulli(s_i)``; top-label: a class drawn
    from each probability row, so that the top class is right with
    probability the confidence), the curve is recomputed at the same
    bandwidth, and the band holds the pointwise
    ``(1 -/+ confidence_level) / 2`` quantiles. It lies around the
    diagonal; where the curve leaves it, the miscalibration there is
    larger than noise explains. Grey and hatched, unlike the
    bootstrap band (the curve's own uncertainty).""",
    "n_consistency": """\
n_consistency : int, default=200
    Label draws of the consistency band; seeded by ``random_state``
    apart from the bootstrap's resamples.""",
    "ax": """\
ax : matplotlib Axes or array of Axes, default=None
    Axes to draw on (one per class for a classwise diagram); ``None``
    creates a figure. Pass the ``ax_`` (and ``density_ax_``) of an
    earlier display to compare several models on one diagram.""",
    "curve_kwargs": """\
curve_kwargs : dict or list of dict, default=None
    Keywords for :meth:`matplotlib.axes.Axes.plot` of each curve. A
    single dict for several curves gives them one style and one legend
    entry with the mean and standard deviation of the SmoothECE; a
    list gives each curve its own entry.""",
    "density_width": """\
density_width : float, default=0.05
    Width (in probability units) of the ribbon where the density of the
    predictions is largest; elsewhere the width is proportional to the
    density. ``0`` draws the bare curve.""",
    "density_panel": """\
density_panel : bool or matplotlib Axes, default=False
    ``True`` adds a density panel below the diagram; an Axes (e.g.
    ``density_ax_`` of an earlier display) draws the density there.""",
    "fade_below": """\
fade_below : float or None, default=30
    The curve fades (down to 20 % opacity) where fewer than this many
    effective samples ``(sum K)^2 / sum K^2`` lie under its kernel, so
    that a stretch resting on a handful of predictions does not look
    as certain as the rest. ``None`` draws it uniformly.""",
}
# Blocks of parameters that several signatures share in this order.
_DOC["smoothing"] = join_entries("sigma", "metric", "display_multi_class", entries=_DOC)
_DOC["intervals"] = join_entries(
    "confidence_level", "ci_method", "sample_weight", entries=_DOC
)
_DOC["bands"] = join_entries(
    "random_state",
    "n_jobs",
    "density_bandwidth",
    "consistency_band",
    "n_consistency",
    entries=_DOC,
)
_DOC["drawing"] = join_entries(
    "ax",
    "curve_kwargs",
    "ref_line",
    "ref_line_kw",
    "density_width",
    "density_panel",
    "fade_below",
    "despine",
    entries=_DOC,
)


def accumulator_samples(accumulator):
    """The grid nodes and masses of each curve of an accumulator, as the
    ``(y, s, w)`` of its reduced problems (``y`` unused)."""
    stats = accumulator.grid_statistics()
    masses = stats.reshape(-1, *stats.shape[-2:])[..., 0]
    return [(None, *grid_samples(mass)) for mass in masses]


# ``n_bootstrap="auto"``: this many resamples up to AUTO_MAX_SAMPLES rows
# (0.6 s at n <= 1e4, 1.5 s at 2e5 on one core; bench_display_default.py),
# none above, where a resample costs ~30 ms per million rows and the band is
# narrower than the line.
AUTO_BOOTSTRAP = 100
AUTO_MAX_SAMPLES = 200_000
BAND_LABEL = "bootstrap band"
RIBBON_LABEL = "Width ∝ score density"
FADE_LABEL = "Faint: < {:g} samples nearby"
# Lowest opacity of a faded stretch of the curve.
FADE_FLOOR = 0.2


def _logit(p):
    c = np.clip(p, LOGIT_EPS, 1 - LOGIT_EPS)
    return np.log(c) - np.log1p(-c)


# The display's own n_bootstrap: 0 (no band) and "auto" too.
_N_BOOTSTRAP = AnyOf(StrOptions("auto"), Interval(numbers.Integral, 0, MAX_BOOTSTRAP))


def _resolve_bootstrap(n_bootstrap, n_samples):
    if isinstance(n_bootstrap, str) and n_bootstrap == "auto":
        return AUTO_BOOTSTRAP if n_samples <= AUTO_MAX_SAMPLES else 0
    return n_bootstrap


def _fade_alpha(ess, fade_below):
    return FADE_FLOOR + (1 - FADE_FLOOR) * np.clip(ess / fade_below, 0.0, 1.0)


def _records(curves, tasks, *, metric, score_range, density_bandwidth):
    """Per-curve data of the display: each curve with the density and the
    effective sample size of its ``(y, s, w)`` task."""
    geometry = GridGeometry(metric)
    lo, hi = score_range
    records = []
    for c, (_, s, w) in zip(curves, tasks, strict=True):
        if geometry.metric == "l1":
            dens, h = score_density(
                s, w, c.scores, lo=lo, hi=hi, bandwidth=density_bandwidth
            )
        else:
            dens, h = score_density(
                _logit(s),
                w,
                _logit(c.scores),
                lo=float(_logit(lo)),
                hi=float(_logit(hi)),
                bandwidth=density_bandwidth,
            )
        ess = local_sample_size(s, w, c.sigma, geometry, len(c.scores) - 1)
        records.append(
            {
                "y_consistency_low": None,
                "y_consistency_high": None,
                "scores": c.scores,
                "y_smooth": c.y_smooth,
                "density": dens,
                "smece": c.smece,
                "smece_ci": c.smece_ci,
                "y_smooth_low": c.y_smooth_low,
                "y_smooth_high": c.y_smooth_high,
                "sigma": c.sigma,
                "confidence_level": c.confidence_level,
                "effective_size": ess,
                "density_bandwidth": h,
                "class_label": getattr(c, "label", None),
            }
        )
    return records


def _smooth_records(
    y_true,
    y_proba,
    sample_weight,
    pos_label,
    labels,
    *,
    multi_class,
    sigma,
    metric,
    n_bootstrap,
    confidence_level,
    ci_method,
    random_state,
    n_jobs,
    density_bandwidth,
    consistency_band,
    n_consistency,
):
    """The curves of one sample: ``(records, shown, pos_label, score_range)``.

    The reduction ``shown`` is None for a binary problem; a record holds one
    curve's data (see :func:`_records`).
    """
    data, shown, score_range = checked_problem(
        y_true,
        y_proba,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        multi_class=multi_class,
    )
    curves = smooth_calibration_curve(
        y_true,
        y_proba,
        sigma=sigma,
        metric=metric,
        multi_class=multi_class,
        n_bootstrap=_resolve_bootstrap(n_bootstrap, data.n_samples),
        confidence_level=confidence_level,
        ci_method=ci_method,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        random_state=random_state,
        n_jobs=n_jobs,
    )
    curves = curves if isinstance(curves, list) else [curves]
    tasks = binary_tasks(data, multi_class)
    records = _records(
        curves,
        tasks,
        metric=metric,
        score_range=score_range,
        density_bandwidth=density_bandwidth,
    )
    if consistency_band:
        geometry = GridGeometry(metric)
        batches = [
            SmoothCurveBatch(s, w, geometry, c.sigma, len(c.scores) - 1)
            for c, (_, s, w) in zip(curves, tasks, strict=True)
        ]
        bands = consistency_bands(
            batches, n_consistency, confidence_level, random_state, n_jobs
        )
        for r, (lo, hi) in zip(records, bands, strict=True):
            r["y_consistency_low"], r["y_consistency_high"] = lo, hi
            r["confidence_level"] = confidence_level
    return plain_labels(records), shown, data.pos_label, score_range


class SmoothReliabilityDisplay(ReliabilityDisplayBase):
    """Smooth reliability diagram: the SmoothECE calibration curve.

    The curve is the kernel estimate of ``E[y | s]`` at the SmoothECE bandwidth
    computed by :func:`skcalib.metrics.smooth_calibration_curve`. The dark
    ribbon around it is as wide as the density of the predictions (widest
    where most predictions lie), the light band is the pointwise bootstrap
    interval, and the curve fades where fewer than ``fade_below`` effective
    samples lie under its kernel; the legend says so and gives the SmoothECE
    with its bootstrap interval. An optional panel under the diagram shows the
    density itself, a kernel density estimate with its own bandwidth (a
    rule of thumb, not the calibration smoother's). Top-label curves of ``K``
    classes are drawn on ``[1/K, 1]``, where confidences can lie.
    :meth:`frame` returns the plotted data as a table.

    Use :meth:`from_estimator`, :meth:`from_predictions`,
    :meth:`from_cv_results` or, for streamed data, :meth:`from_accumulator`
    to create one. Every data parameter holds one value per curve (a list
    when there are several curves).

    Parameters
    ----------
    scores : ndarray or list of ndarray
        Predicted probabilities where each curve is evaluated.
    y_smooth : ndarray or list of ndarray
        Smoothed observed frequency at ``scores`` (NaN where there is no data).
    density : ndarray or list of ndarray
        Density of the predictions at ``scores`` (the ribbon's width and the
        density panel).
    smece : float or list of float, default=None
        SmoothECE, shown in the legend.
    smece_ci : tuple or list of tuple, default=None
        Bootstrap interval of ``smece``.
    y_smooth_low : ndarray or list of ndarray, default=None
        Lower end of the pointwise bootstrap band of ``y_smooth``.
    y_smooth_high : ndarray or list of ndarray, default=None
        Upper end of the pointwise bootstrap band of ``y_smooth``.
    sigma : float or list of float, default=None
        Kernel bandwidth of each curve.
    confidence_level : float or list of float, default=None
        Level of the bootstrap intervals.
    effective_size : ndarray or list of ndarray, default=None
        Effective number of samples under the curve's kernel at ``scores``
        (where it is below ``fade_below`` the curve fades); ``None`` draws
        the curve uniformly.
    density_bandwidth : float or list of float, default=None
        Bandwidth of ``density`` (in the units of ``metric``), for the record.
    y_consistency_low : ndarray or list of ndarray, default=None
        Lower end of the pointwise consistency band: where the curve of a
        calibrated model with these scores would fall (see
        ``consistency_band`` in :meth:`from_predictions`).
    y_consistency_high : ndarray or list of ndarray, default=None
        Upper end of the pointwise consistency band.
    class_label : object or list, default=None
        Class of each one-vs-rest curve (``multi_class="classwise"``): curves
        of different classes go to different panels.
    multi_class : {None, "top-label", "classwise"}, default=None
        Reduction the curves show (``None`` for a binary problem); sets the
        axis labels.
    metric : {"l1", "logit"}, default="l1"
        Scale of the smoothing; with ``"logit"`` the density is per unit of
        ``logit(s)``, and the density panel says so.
    name : str or list of str, default=None
        Legend name(s).
    pos_label : int, float, bool or str, default=None
        Positive class, shown in the axis labels of a binary diagram.
    score_range : tuple of float, default=None
        ``(low, high)``: where the scores can lie, ``(1/K, 1)`` for top-label
        confidences of ``K`` classes. The curve, the diagonal, the density and
        the x-axis are drawn on it; ``None`` means ``(0, 1)``.

    Attributes
    ----------
    line_ : matplotlib Line2D or list of Line2D
        The curves (opaque where they rest on at least ``fade_below``
        effective samples).
    fade_ : matplotlib LineCollection or list
        The faded stretches of the curves (``None`` where there are none).
    ribbon_ : matplotlib PolyCollection or list
        The density-width ribbons (``None`` with ``density_width=0``).
    band_ : matplotlib PolyCollection or list
        The bootstrap bands (``None`` without bootstrap).
    consistency_band_ : matplotlib PolyCollection or list
        The consistency bands (``None`` without one).
    ref_line_ : matplotlib Line2D or None
        The diagonal (``None`` if not drawn, e.g. already on the axes).
    ax_ : matplotlib Axes or ndarray of Axes
        The diagram (one axes per class for a classwise diagram).
    density_ax_ : matplotlib Axes, ndarray of Axes or None
        The density panel(s).
    figure_ : matplotlib Figure
    group : object, list or None
        The group of each curve when drawn with ``groups=`` (the ``group``
        column of :meth:`frame`), else ``None``.

    See Also
    --------
    skcalib.metrics.smooth_calibration_curve : The data of the diagram.
    BinnedReliabilityDisplay : The classic binned diagram.

    References
    ----------
    J. Blasiok and P. Nakkiran, "Smooth ECE: Principled Reliability Diagrams
    via Kernel Smoothing", arXiv:2309.12236, 2023.

    Examples
    --------
    >>> import matplotlib
    >>> import numpy as np
    >>> from skcalib.display import SmoothReliabilityDisplay
    >>> from skcalib.metrics import smooth_calibration_curve
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=1000)
    >>> y = rng.uniform(size=1000) < p ** 2
    >>> c = smooth_calibration_curve(y, p)
    >>> disp = SmoothReliabilityDisplay(scores=c.scores, y_smooth=c.y_smooth,
    ...                                 density=c.density, smece=c.smece).plot()
    >>> disp.line_.get_label()
    'smECE = 0.1...'
    >>> matplotlib.pyplot.close(disp.figure_)
    """

    _fields = (
        "scores",
        "y_smooth",
        "density",
        "smece",
        "smece_ci",
        "y_smooth_low",
        "y_smooth_high",
        "sigma",
        "confidence_level",
        "effective_size",
        "density_bandwidth",
        "y_consistency_low",
        "y_consistency_high",
    )
    _value_field = "smece"
    _metric_name = "smECE"

    def __init__(
        self,
        *,
        scores,
        y_smooth,
        density,
        smece=None,
        smece_ci=None,
        y_smooth_low=None,
        y_smooth_high=None,
        sigma=None,
        confidence_level=None,
        effective_size=None,
        density_bandwidth=None,
        y_consistency_low=None,
        y_consistency_high=None,
        class_label=None,
        multi_class=None,
        metric="l1",
        name=None,
        pos_label=None,
        score_range=None,
    ):
        self.metric = metric
        self.scores = scores
        self.y_smooth = y_smooth
        self.density = density
        self.smece = smece
        self.smece_ci = smece_ci
        self.y_smooth_low = y_smooth_low
        self.y_smooth_high = y_smooth_high
        self.sigma = sigma
        self.confidence_level = confidence_level
        self.effective_size = effective_size
        self.density_bandwidth = density_bandwidth
        self.y_consistency_low = y_consistency_low
        self.y_consistency_high = y_consistency_high
        self.class_label = class_label
        self.multi_class = multi_class
        self.name = name
        self.pos_label = pos_label
        self.score_range = score_range

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
        density_width=0.05,
        density_panel=False,
        fade_below=30,
        despine=False,
    ):
        """Plot the diagram.

        Parameters
        ----------
        ${ax}
        name : str or list of str, default=None
            Legend name(s); ``None`` uses :attr:`name`. A list needs a list of
            ``curve_kwargs``.
        ${curve_kwargs}
        ${ref_line}
        ${ref_line_kw}
        ${density_width}
        ${density_panel}
        ${fade_below}
        ${despine}

        Returns
        -------
        SmoothReliabilityDisplay
            This display, with ``ax_``, ``figure_`` and the drawn artists.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.display import SmoothReliabilityDisplay
        >>> from skcalib.metrics import smooth_calibration_curve
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=1000)
        >>> y = rng.uniform(size=1000) < p
        >>> c = smooth_calibration_curve(y, p)
        >>> disp = SmoothReliabilityDisplay(
        ...     scores=c.scores, y_smooth=c.y_smooth, density=c.density, smece=c.smece
        ... ).plot(name="model", density_width=0, despine=True)
        >>> disp.line_.get_label(), disp.ribbon_
        ('model (smECE = 0.0...)', None)
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
            density_width=density_width,
            fade_below=fade_below,
        )

    def _drawn(self, r):
        """The part of a curve's data inside :attr:`score_range`, as drawn."""
        x = np.asarray(r["scores"], dtype=float)
        lo, hi = self._x_range
        keep = (x >= lo - 1e-12) & (x <= hi + 1e-12)
        out = {
            "score": x[keep],
            "y_smooth": np.asarray(r["y_smooth"], dtype=float)[keep],
        }
        for key in (
            "y_smooth_low",
            "y_smooth_high",
            "y_consistency_low",
            "y_consistency_high",
        ):
            value = r[key]
            out[key] = (
                np.full(out["score"].shape, np.nan)
                if value is None
                else np.asarray(value, dtype=float)[keep]
            )
        out["density"] = np.asarray(r["density"], dtype=float)[keep]
        ess = r["effective_size"]
        out["effective_size"] = (
            np.full(out["score"].shape, np.nan)
            if ess is None
            else np.asarray(ess, dtype=float)[keep]
        )
        return out

    @validate_params()
    def frame(self, *, as_frame=True):
        """The plotted data as a table, one row per point of each curve.

        Parameters
        ----------
        as_frame : bool, default=True
            Return a :class:`pandas.DataFrame` (pandas is then required);
            ``False`` returns a dict of numpy arrays.

        Returns
        -------
        DataFrame or dict of ndarray
            Columns ``score`` (x), ``y_smooth`` (the curve),
            ``y_smooth_low`` and ``y_smooth_high`` (the bootstrap band, NaN
            without one), ``y_consistency_low`` and ``y_consistency_high``
            (the consistency band, NaN without one), ``density`` (the
            density panel and the ribbon's width) and ``effective_size``
            (samples under the kernel, which sets the fade); with several
            curves, ``curve`` (their index) in front, and ``label`` for the
            classes of a classwise diagram. Only points inside
            :attr:`score_range` are listed.

        Examples
        --------
        >>> import numpy as np
        >>> from skcalib.display import SmoothReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=500)
        >>> y = rng.uniform(size=500) < p
        >>> disp = SmoothReliabilityDisplay.from_predictions(y, p, random_state=0)
        >>> table = disp.frame()
        >>> list(table.columns)
        ['score', 'y_smooth', 'y_smooth_low', 'y_smooth_high', \
'y_consistency_low', 'y_consistency_high', 'density', 'effective_size']
        >>> bool((table.y_smooth_low <= table.y_smooth_high).all())
        True
        >>> import matplotlib.pyplot as plt
        >>> plt.close("all")
        """
        records = self._records()
        tables = [self._drawn(r) for r in records]
        return to_table(stack_curves(tables, self._curve_keys()), as_frame)

    @property
    def _density_label(self):
        return "Density (logit)" if self.metric == "logit" else "Density"

    def _is_note(self, label):
        return (
            label.endswith(BAND_LABEL)
            or label.endswith(CONSISTENCY_LABEL)
            or label == RIBBON_LABEL
            or label.startswith(FADE_LABEL.split("{")[0])
        )

    def _legend_details(self, records):
        out = []
        for r in records:
            ci = r["smece_ci"]
            if ci is None:
                out.append(None)
            else:
                lvl = f"{level_text(r['confidence_level'])} ".lstrip()
                # A second line keeps the legend narrower than the axes.
                out.append(f"\n{lvl}CI [{ci[0]:.3f}, {ci[1]:.3f}]")
        return out

    def _draw(self, ax, r, style, dax, *, density_width, fade_below):
        from matplotlib.collections import LineCollection
        from matplotlib.colors import to_rgba
        from matplotlib.path import Path

        d = self._drawn(r)
        x, y, dens = d["score"], d["y_smooth"], d["density"]
        (line,) = ax.plot(x, y, **merge_style({"linewidth": 1.3}, style))
        color = line.get_color()
        fade = 1.0 if line.get_alpha() is None else line.get_alpha()
        z = line.get_zorder()
        labels = set(ax.get_legend_handles_labels()[1])
        band = None
        if r["y_smooth_low"] is not None:
            lvl = level_text(r["confidence_level"])
            label = f"{lvl} {BAND_LABEL}".strip()
            band = ax.fill_between(
                x,
                d["y_smooth_low"],
                d["y_smooth_high"],
                color=color,
                alpha=0.18 * fade,
                linewidth=0,
                zorder=z - 1,
                label=label if label not in labels else "_nolegend_",
            )
        consistency = None
        if r["y_consistency_low"] is not None:
            consistency = ax.fill_between(
                x,
                d["y_consistency_low"],
                d["y_consistency_high"],
                zorder=z - 1.5,
                label=consistency_label(ax, r["confidence_level"]),
                **CONSISTENCY_STYLE,
            )
        faded = None
        ess = d["effective_size"]
        sparse = (
            fade_below is not None
            and r["effective_size"] is not None
            and np.any(ess[np.isfinite(y)] < fade_below)
        )
        ribbon = None
        peak = np.nanmax(dens) if dens.size else 0.0
        if density_width > 0 and peak > 0:
            half = 0.5 * density_width * dens / peak
            ribbon = ax.fill_between(
                x,
                y - half,
                y + half,
                color=color,
                alpha=0.55 * fade,
                linewidth=0,
                zorder=z - 0.5,
                label=RIBBON_LABEL if RIBBON_LABEL not in labels else "_nolegend_",
            )
        if sparse:
            # The line stays whole (its data are the curve's) but is clipped to
            # the well-supported stretches; the others are redrawn fainter.
            alpha = _fade_alpha(ess, fade_below)
            strong = alpha >= 1.0
            seg_alpha = np.minimum(alpha[:-1], alpha[1:])
            weak = seg_alpha < 1.0
            pts = np.column_stack([x, y])
            # Faintest first: the legend shows the first segment.
            order = np.argsort(seg_alpha[weak], kind="stable")
            segments = np.stack([pts[:-1], pts[1:]], axis=1)[weak][order]
            rgb = to_rgba(color)[:3]
            faded = LineCollection(
                segments,
                colors=[(*rgb, a * fade) for a in seg_alpha[weak][order]],
                linewidths=line.get_linewidth(),
                zorder=z,
                label=(
                    FADE_LABEL.format(fade_below)
                    if FADE_LABEL.format(fade_below) not in labels
                    else "_nolegend_"
                ),
            )
            ax.add_collection(faded, autolim=False)
            verts, codes = [], []
            edges = np.flatnonzero(np.diff(np.r_[0, strong.astype(int), 0]))
            for start, stop in zip(edges[::2], edges[1::2], strict=True):
                x0, x1 = x[start], x[stop - 1]
                verts += [(x0, -1), (x1, -1), (x1, 2), (x0, 2), (x0, -1)]
                codes += [Path.MOVETO] + [Path.LINETO] * 3 + [Path.CLOSEPOLY]
            if not verts:  # nowhere well supported: a clip of zero area
                verts = [(x[0], -1), (x[0], 2), (x[0], 2), (x[0], -1), (x[0], -1)]
                codes = [Path.MOVETO] + [Path.LINETO] * 3 + [Path.CLOSEPOLY]
            line.set_clip_path(Path(verts, codes), ax.transData)
        if dax is not None:
            dax.fill_between(x, 0, dens, color=color, alpha=0.25 * fade, linewidth=0)
            dax.plot(x, dens, color=color, linewidth=1, alpha=fade)
        return line, (ribbon, band, faded, consistency)

    def _set_extras(self, extras):
        if isinstance(extras, list):
            self.ribbon_ = [e[0] for e in extras]
            self.band_ = [e[1] for e in extras]
            self.fade_ = [e[2] for e in extras]
            self.consistency_band_ = [e[3] for e in extras]
        else:
            self.ribbon_, self.band_, self.fade_, self.consistency_band_ = extras

    @classmethod
    def _from_curves(
        cls,
        curves,
        tasks,
        *,
        multi_class,
        pos_label,
        score_range,
        density_bandwidth="silverman",
        name=None,
    ):
        """An unplotted display of computed curves and the ``(y, s, w)`` of
        each one (its scores and weights, or a grid's nodes and masses)."""
        records = _records(
            curves,
            tasks,
            metric="l1",
            score_range=score_range,
            density_bandwidth=density_bandwidth,
        )
        return cls._assemble(
            records, multi_class, pos_label, name, score_range, metric="l1"
        )

    @classmethod
    @checks_style
    @validate_params()
    @fill_doc(**_DOC)
    def from_accumulator(
        cls,
        accumulator,
        *,
        density_bandwidth="silverman",
        name="Classifier",
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_width=0.05,
        density_panel=False,
        fade_below=30,
        despine=False,
    ):
        """Plot the smooth reliability diagram of streamed predictions.

        The curve is :meth:`~skcalib.metrics.CalibrationAccumulator.calibration_curve`;
        the density and the fade come from the accumulator's grid of
        ``2**16`` cells, so the diagram is the one :meth:`from_predictions`
        draws on the same data (without a bootstrap band) up to the grid's
        resolution, without the predictions.

        Parameters
        ----------
        accumulator : CalibrationAccumulator
            A fitted accumulator; one curve per class for a classwise
            multiclass one.
        ${density_bandwidth}
        name : str, default="Classifier"
            Legend name.
        ${drawing}

        Returns
        -------
        SmoothReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.display import SmoothReliabilityDisplay
        >>> from skcalib.metrics import CalibrationAccumulator
        >>> rng = np.random.default_rng(0)
        >>> acc = CalibrationAccumulator()
        >>> for _ in range(5):
        ...     p = rng.uniform(size=2000)
        ...     acc = acc.partial_fit(rng.uniform(size=2000) < p, p)
        >>> disp = SmoothReliabilityDisplay.from_accumulator(acc, density_panel=True)
        >>> disp.line_.get_label()
        'Classifier (smECE = 0.0...)'
        >>> plt.close(disp.figure_)
        """
        curves = accumulator.calibration_curve()
        n_classes = len(accumulator.classes_)
        multi_class = accumulator.multi_class if n_classes > 2 else None
        disp = cls._from_curves(
            curves if isinstance(curves, list) else [curves],
            accumulator_samples(accumulator),
            multi_class=multi_class,
            pos_label=accumulator.pos_label,
            score_range=score_range_of(n_classes, multi_class),
            density_bandwidth=density_bandwidth,
            name=name,
        )
        return disp._plot(
            ax,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            density_width=density_width,
            density_panel=density_panel,
            fade_below=fade_below,
            despine=despine,
        )

    @classmethod
    @checks_style
    @validate_params(n_bootstrap=_N_BOOTSTRAP)
    @fill_doc(**_DOC)
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        sigma=None,
        metric="l1",
        multi_class="top-label",
        n_bootstrap="auto",
        confidence_level=0.95,
        ci_method="inversion",
        sample_weight=None,
        pos_label=None,
        labels=None,
        random_state=None,
        n_jobs=None,
        density_bandwidth="silverman",
        consistency_band=False,
        n_consistency=200,
        name="Classifier",
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_width=0.05,
        density_panel=False,
        fade_below=30,
        despine=False,
        groups=None,
    ):
        """Plot the smooth reliability diagram of predicted probabilities.

        Parameters
        ----------
        ${y_true}
        ${y_proba}
        ${smoothing}
        ${n_bootstrap}
        ${intervals}
        ${pos_label}
        ${labels}
        ${bands}
        name : str, default="Classifier"
            Legend name.
        ${drawing}
        ${display_groups}

        Returns
        -------
        SmoothReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.display import SmoothReliabilityDisplay
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(size=2000)
        >>> y = rng.uniform(size=2000) < p
        >>> disp = SmoothReliabilityDisplay.from_predictions(
        ...     y, p, n_bootstrap=50, random_state=0, name="calibrated")
        >>> other = SmoothReliabilityDisplay.from_predictions(
        ...     y, p ** 2, ax=disp.ax_, name="squashed")
        >>> [t.get_text().split(" (")[0] for t in disp.ax_.get_legend().get_texts()]
        ['calibrated', 'Perfectly calibrated', 'squashed', '95% bootstrap band', \
'Width ∝ score density']
        >>> plt.close(disp.figure_)
        """

        def curves(y_true, y_proba, sample_weight, pos_label, labels):
            return _smooth_records(
                y_true,
                y_proba,
                sample_weight,
                pos_label,
                labels,
                multi_class=multi_class,
                sigma=sigma,
                metric=metric,
                n_bootstrap=n_bootstrap,
                confidence_level=confidence_level,
                ci_method=ci_method,
                random_state=random_state,
                n_jobs=n_jobs,
                density_bandwidth=density_bandwidth,
                consistency_band=consistency_band,
                n_consistency=n_consistency,
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
            metric=metric,
        )
        return display.plot(
            ax,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            density_width=density_width,
            density_panel=density_panel,
            fade_below=fade_below,
            despine=despine,
        )

    @classmethod
    @checks_style
    @scores_of_a_model
    @validate_params(n_bootstrap=_N_BOOTSTRAP)
    @fill_doc(**_DOC)
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        sigma=None,
        metric="l1",
        multi_class="top-label",
        n_bootstrap="auto",
        confidence_level=0.95,
        ci_method="inversion",
        sample_weight=None,
        pos_label=None,
        random_state=None,
        n_jobs=None,
        density_bandwidth="silverman",
        consistency_band=False,
        n_consistency=200,
        name=None,
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_width=0.05,
        density_panel=False,
        fade_below=30,
        despine=False,
        groups=None,
    ):
        """Plot the smooth reliability diagram of a fitted classifier.

        Parameters
        ----------
        ${estimator}
        ${X}
        ${y}
        ${smoothing}
        ${n_bootstrap}
        ${intervals}
        ${estimator_pos_label}
        ${bands}
        name : str, default=None
            Legend name; ``None`` uses the estimator's class name.
        ${drawing}
        ${display_groups}

        Returns
        -------
        SmoothReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skcalib.display import SmoothReliabilityDisplay
        >>> X, y = make_classification(n_samples=1000, random_state=0)
        >>> clf = LogisticRegression().fit(X[:500], y[:500])
        >>> disp = SmoothReliabilityDisplay.from_estimator(
        ...     clf, X[500:], y[500:], n_bootstrap=50, random_state=0,
        ...     density_panel=True)
        >>> disp.line_.get_label()
        'LogisticRegression (smECE = 0.0...)\\n95% CI [0.0..., 0.0...]'
        >>> plt.close(disp.figure_)
        """
        y = check_features(X, y)
        proba, classes, pos_label, name = predict_proba_of(
            estimator, X, pos_label, name
        )
        return cls.from_predictions(
            y,
            proba,
            sigma=sigma,
            metric=metric,
            multi_class=multi_class,
            n_bootstrap=n_bootstrap,
            confidence_level=confidence_level,
            ci_method=ci_method,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=classes,
            random_state=random_state,
            n_jobs=n_jobs,
            density_bandwidth=density_bandwidth,
            consistency_band=consistency_band,
            n_consistency=n_consistency,
            name=name,
            ax=ax,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            density_width=density_width,
            density_panel=density_panel,
            fade_below=fade_below,
            despine=despine,
            groups=groups,
        )

    @classmethod
    @checks_style
    @scores_of_a_model
    @validate_params(n_bootstrap=_N_BOOTSTRAP)
    @fill_doc(**_DOC)
    def from_cv_results(
        cls,
        cv_results,
        X,
        y,
        *,
        sigma=None,
        metric="l1",
        multi_class="top-label",
        n_bootstrap=0,
        confidence_level=0.95,
        ci_method="inversion",
        sample_weight=None,
        pos_label=None,
        random_state=None,
        n_jobs=None,
        density_bandwidth="silverman",
        consistency_band=False,
        n_consistency=200,
        name=None,
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_width=0.05,
        density_panel=False,
        fade_below=30,
        despine=False,
    ):
        """Plot one smooth reliability curve per cross-validation split.

        Parameters
        ----------
        ${cv_results}
        ${X}
        ${y}
        ${smoothing}
        n_bootstrap : int, default=0
            Bootstrap resamples of each split's band; by default none, as the
            spread of the splits' curves shows the variability.
        ${intervals}
        ${estimator_pos_label}
        ${bands}
        name : str or list of str, default=None
            Legend name(s), with the conventions of :meth:`plot`.
        ${drawing}

        Returns
        -------
        SmoothReliabilityDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from sklearn.model_selection import cross_validate
        >>> from skcalib.display import SmoothReliabilityDisplay
        >>> X, y = make_classification(n_samples=900, random_state=0)
        >>> cv = cross_validate(LogisticRegression(), X, y, cv=3,
        ...                     return_estimator=True, return_indices=True)
        >>> disp = SmoothReliabilityDisplay.from_cv_results(cv, X, y)
        >>> len(disp.line_)
        3
        >>> disp.line_[0].get_label()
        'smECE = 0.0... ± 0.0...'
        >>> plt.close(disp.figure_)
        """
        # One generator for all splits: each split gets its own resamples.
        random_state = check_random_generator(random_state)

        def curves(y_true, y_proba, sample_weight, pos_label, labels):
            return _smooth_records(
                y_true,
                y_proba,
                sample_weight,
                pos_label,
                labels,
                multi_class=multi_class,
                sigma=sigma,
                metric=metric,
                n_bootstrap=n_bootstrap,
                confidence_level=confidence_level,
                ci_method=ci_method,
                random_state=random_state,
                n_jobs=n_jobs,
                density_bandwidth=density_bandwidth,
                consistency_band=consistency_band,
                n_consistency=n_consistency,
            )

        records, shown, pos_label, score_range = fold_curves(
            cv_results,
            X,
            y,
            sample_weight=sample_weight,
            pos_label=pos_label,
            curves=curves,
        )
        display = cls._assemble(
            records, shown, pos_label, name, score_range, metric=metric
        )
        return display.plot(
            ax,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            density_width=density_width,
            density_panel=density_panel,
            fade_below=fade_below,
            despine=despine,
        )
