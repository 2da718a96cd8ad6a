"""Machinery shared by the displays: axes, styles, legend labels, estimator input.

matplotlib is imported inside the functions only, so that ``import skcalib``
never loads it. Nothing here touches matplotlib's global state (rcParams,
styles): a figure is created with ``plt.subplots`` only when no axes is given.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np
from sklearn.utils import _safe_indexing
from sklearn.utils.validation import _num_samples, check_is_fitted

from .._backend import consistency as _cs
from .._meta import align_proba_columns
from .._params import check_seed_sequence
from .._validation import (
    check_calibration_inputs,
    check_groups,
    check_sample_weight,
    check_target,
    from_predict_proba,
)

# matplotlib rejects a property given under two aliases; the user's spelling wins.
_ALIASES = {
    "c": "color",
    "ls": "linestyle",
    "lw": "linewidth",
    "ec": "edgecolor",
    "fc": "facecolor",
    "ms": "markersize",
    "mec": "markeredgecolor",
    "mfc": "markerfacecolor",
    "mew": "markeredgewidth",
    "aa": "antialiased",
}


def pyplot():
    """``matplotlib.pyplot``, imported on first use."""
    import matplotlib.pyplot as plt

    return plt


def merge_style(defaults, user):
    """``defaults`` updated by ``user`` with matplotlib aliases resolved."""
    user = {} if user is None else dict(user)
    for short, long in _ALIASES.items():
        if short in user and long in user:
            raise TypeError(f"Got both {short!r} and {long!r}, which are aliases.")
    out = {_ALIASES.get(k, k): v for k, v in defaults.items()}
    for key, value in user.items():
        out[_ALIASES.get(key, key)] = value
    return out


def hide_spines(ax, sides=("top", "right")):
    """Hide the given spines of ``ax``."""
    for side in sides:
        ax.spines[side].set_visible(False)


def despine(ax, x_range=(0.0, 1.0)):
    """Hide the top and right spines; keep the others on the data's range."""
    hide_spines(ax)
    ax.spines["bottom"].set_bounds(*x_range)
    ax.spines["left"].set_bounds(0, 1)


def level_text(confidence_level):
    """``"95%"`` for a confidence level of 0.95 (``""`` for ``None``)."""
    return "" if confidence_level is None else f"{100 * confidence_level:g}%"


def as_list(value, n=None):
    """``value`` as a list (``None`` stays ``None`` unless ``n`` is given)."""
    if value is None:
        return None if n is None else [None] * n
    return value if isinstance(value, list) else [value]


def axes_or_new(ax):
    """``ax`` if it is a matplotlib Axes, a new figure's axes for ``None``."""
    if ax is None:
        _, ax = pyplot().subplots()
    elif not hasattr(ax, "plot"):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}.")
    return ax


def layout_panels(ax, keys):
    """Axes for curves grouped into panels by ``keys`` (one panel per distinct key).

    All keys ``None`` means one panel (``ax`` or a new axes). Otherwise one
    panel per distinct key (a class of a classwise diagram): ``ax`` must then
    hold that many axes, or be ``None`` for a new grid.

    Returns
    -------
    ax_out : Axes or ndarray of Axes
    per_curve : list of Axes
    figure : Figure
    """
    distinct = list(dict.fromkeys(keys))
    if distinct == [None]:
        ax = axes_or_new(ax)
        return ax, [ax] * len(keys), ax.figure
    k = len(distinct)
    if ax is None:
        ncols = min(k, 3)
        nrows = math.ceil(k / ncols)
        fig, grid = pyplot().subplots(
            nrows, ncols, figsize=(4.2 * ncols, 4.4 * nrows), squeeze=False
        )
        grid = grid.ravel()
        for spare in grid[k:]:
            spare.set_visible(False)
        axes = list(grid[:k])
    else:
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != k:
            raise ValueError(
                f"ax must hold {k} axes (one per class) for a classwise diagram; "
                f"got {len(axes)}."
            )
    panel = dict(zip(distinct, axes, strict=True))
    out = np.empty(k, dtype=object)
    out[:] = axes
    return out, [panel[key] for key in keys], axes[0].figure


def _aggregate_label(name, metric_name, values):
    if values[0] is None:
        return name
    text = f"{metric_name} = {np.mean(values):.3f} ± {np.std(values):.3f}"
    return text if name is None else f"{name} ({text})"


def _single_label(name, metric_text):
    if metric_text is None:
        return name
    return metric_text if name is None else f"{name} ({metric_text})"


def curve_styles(
    *, groups, names, metric_name, values, details, curve_kwargs, multi_defaults
):
    """Matplotlib keywords (with legend ``label``) for each curve.

    Follows scikit-learn's multi-curve convention: a list of ``curve_kwargs``
    gives one legend entry per curve; a single dict (or ``None``) used for
    several curves of a panel gives them one style and one legend entry
    labelled with the mean and standard deviation of the metric.

    Parameters
    ----------
    groups : list of list of int
        Indices of the curves drawn on each panel.
    names : None, str or list of str
    metric_name : str
    values : list of float or None
        Metric of each curve (for the legend).
    details : list of str or None
        Extra text after each curve's metric value (e.g. its interval).
    curve_kwargs : None, dict or list of dict
    multi_defaults : dict
        Style of curves sharing one legend entry.
    """
    n = len(values)
    if isinstance(curve_kwargs, list) and len(curve_kwargs) != n:
        raise ValueError(
            f"curve_kwargs must be None, a dict or a list of {n} dicts; got a list "
            f"of {len(curve_kwargs)}."
        )
    if curve_kwargs is not None and not isinstance(curve_kwargs, (list, Mapping)):
        raise TypeError(
            f"curve_kwargs must be None, a dict or a list of dicts; got "
            f"{type(curve_kwargs).__name__}."
        )
    if isinstance(names, list) and len(names) == 1:
        names = names[0]
    if isinstance(names, list):
        if len(names) != n:
            raise ValueError(f"name must be a string or a list of {n} names.")
        if not isinstance(curve_kwargs, list):
            raise ValueError(
                "To avoid labelling curves that look the same, pass curve_kwargs "
                f"as a list of {n} dicts with a list of names, or give one name."
            )
    per_name = names if isinstance(names, list) else [names] * n
    per_kw = curve_kwargs if isinstance(curve_kwargs, list) else [curve_kwargs] * n
    styles = [None] * n
    for group in groups:
        shared = not isinstance(curve_kwargs, list) and len(group) > 1
        for rank, i in enumerate(group):
            if shared:
                label = (
                    _aggregate_label(
                        per_name[i], metric_name, [values[j] for j in group]
                    )
                    if rank == 0
                    else None
                )
                defaults = dict(multi_defaults)
            else:
                text = None
                if values[i] is not None:
                    text = f"{metric_name} = {values[i]:.3f}"
                label = _single_label(per_name[i], text)
                if label is not None and details is not None and details[i]:
                    label += details[i]
                defaults = {}
            styles[i] = merge_style({"label": label, **defaults}, per_kw[i])
    return styles


def panel_groups(axes_per_curve):
    """Indices of the curves on each distinct axes, in drawing order."""
    groups = {}
    for i, ax in enumerate(axes_per_curve):
        groups.setdefault(id(ax), []).append(i)
    return list(groups.values())


def check_features(X, y):
    """``y`` checked as the labels of the rows of ``X``, before any model sees
    them (so that an error names the argument, not a step of the model)."""
    try:
        n = _num_samples(X)
    except TypeError as exc:
        raise TypeError(
            f"X must be an array-like of shape (n_samples, n_features); {exc}"
        ) from None
    return check_target(y, n)


def scores_of_a_model(method):
    """Decorate a ``from_estimator`` / ``from_cv_results`` method: the
    probabilities it computes with are ``predict_proba``'s, never hard
    labels passed by mistake (see :func:`warn_hard_labels`)."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with from_predict_proba():
            return method(*args, **kwargs)

    return wrapper


@functools.cache
def _style_properties():
    """Keywords matplotlib's lines, bars and bands accept (aliases included)."""
    from matplotlib.artist import ArtistInspector
    from matplotlib.collections import PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    names = set(_ALIASES)
    for artist in (Line2D, Rectangle, PolyCollection):
        inspector = ArtistInspector(artist)
        names.update(inspector.get_setters())
        for aliases in inspector.aliasd.values():
            names.update(aliases)
    return frozenset(names)


def _style_arguments(signature):
    return [p for p in signature.parameters if p.endswith(("_kwargs", "_kw"))]


def checks_style(method):
    """Decorate a display's ``plot`` / ``from_*`` method: a matplotlib
    keyword passed directly (``color=``) is refused with a pointer to the
    ``*_kwargs`` arguments, and an unknown key of those is refused by name,
    both before anything is computed."""
    import inspect

    signature = inspect.signature(method)
    style_args = _style_arguments(signature)
    owner = method.__qualname__

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        known = _style_properties()
        for key in kwargs:
            if key not in signature.parameters and key in known:
                where = " or ".join(style_args) or "the display's style arguments"
                raise TypeError(
                    f"{owner}() got an unexpected keyword argument {key!r}: "
                    f"matplotlib styles go in {where}, e.g. "
                    f"{style_args[0] if style_args else 'curve_kwargs'}="
                    f"{{{key!r}: ...}}."
                )
        for arg in style_args:
            value = kwargs.get(arg)
            dicts = value if isinstance(value, list) else [value]
            for style in dicts:
                if not isinstance(style, Mapping):
                    continue
                for key in style:
                    if key != "label" and key not in known:
                        raise ValueError(
                            f"{arg} has the key {key!r}, which is not a matplotlib "
                            f"property of {owner.split('.')[0]}'s artists."
                        )
        return method(*args, **kwargs)

    return wrapper


def predict_proba_of(estimator, X, pos_label, name, classes=None):
    """``predict_proba`` of a fitted classifier, its classes, pos_label and name.

    With ``classes`` (sorted), the columns are those classes: a model fitted
    on a split that lacked some of them gives them probability 0.
    """
    if not hasattr(estimator, "predict_proba"):
        raise TypeError(
            f"estimator must be a fitted classifier with predict_proba; "
            f"{type(estimator).__name__} has none."
        )
    check_is_fitted(estimator)
    proba = estimator.predict_proba(X)
    est_classes = np.asarray(estimator.classes_)
    if classes is None:
        classes = est_classes
    else:
        proba = align_proba_columns(proba, est_classes, classes)
    if proba.shape[1] == 2 and pos_label is None:
        pos_label = classes[-1]
    name = type(estimator).__name__ if name is None else name
    return proba, classes, pos_label, name


def cv_folds(cv_results, X, y, sample_weight):
    """``(y, X, sample_weight)`` test parts and fitted estimator of each CV split."""
    if not isinstance(cv_results, Mapping) or not {"estimator", "indices"} <= set(
        cv_results
    ):
        raise ValueError(
            "cv_results must be the dict returned by sklearn's cross_validate with "
            "return_estimator=True and return_indices=True (keys 'estimator' and "
            "'indices')."
        )
    y = check_features(X, y)
    n = y.shape[0]
    if sample_weight is not None:
        sample_weight = check_sample_weight(sample_weight, n)
    indices = cv_results["indices"]
    first = len(indices["train"][0]) + len(indices["test"][0])
    if first != n:
        raise ValueError(
            f"X and y do not match cv_results: the splits cover {first} samples, "
            f"y has {n}."
        )
    for estimator, test in zip(cv_results["estimator"], indices["test"], strict=True):
        sw = None if sample_weight is None else _safe_indexing(sample_weight, test)
        yield estimator, _safe_indexing(X, test), _safe_indexing(y, test), sw


def data_fields(records, fields):
    """Per-field values from per-curve dicts: the value for one curve, else a list."""
    if len(records) == 1:
        return {f: records[0][f] for f in fields}
    return {f: [r[f] for r in records] for f in fields}


REF_LINE_LABEL = "Perfectly calibrated"
CONSISTENCY_LABEL = "consistency band (calibrated model)"
# Grey and hatched, so that it is not read as the bootstrap band of a curve.
CONSISTENCY_STYLE = {
    "facecolor": (0.5, 0.5, 0.5, 0.12),
    "edgecolor": (0.35, 0.35, 0.35, 0.45),
    "hatch": "////",
    "linewidth": 0,
}


def consistency_bands(batches, n_consistency, confidence_level, random_state, n_jobs):
    """Pointwise consistency band of each task: ``[(low, high), ...]``.

    ``batches`` give, for a list of generators, the curves of labels drawn
    from the scores (``SmoothCurveBatch``, ``BinnedMeanBatch``). Task ``k``
    uses child ``n_tasks + k`` of ``random_state``'s seed sequence: the first
    ``n_tasks`` children seed the bootstrap of the same ``random_state``.
    """
    n = len(batches)
    seeds = check_seed_sequence(random_state).spawn(2 * n)[n:]
    return [
        _cs.pointwise_band(
            _cs.run_batches(b, n_consistency, seed, n_jobs), confidence_level
        )
        for b, seed in zip(batches, seeds, strict=True)
    ]


def consistency_label(ax, confidence_level):
    """Legend label of a consistency band (once per axes)."""
    label = f"{level_text(confidence_level)} {CONSISTENCY_LABEL}".strip()
    return label if label not in ax.get_legend_handles_labels()[1] else "_nolegend_"


def to_table(columns, as_frame):
    """``columns`` (a dict of equal-length arrays) as a DataFrame or a dict.

    ``as_frame=True`` needs pandas; ``False`` returns the dict of numpy arrays.
    """
    columns = {k: np.asarray(v) for k, v in columns.items()}
    if not as_frame:
        return columns
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            "frame() returns a pandas DataFrame and needs pandas (pip install "
            "pandas); frame(as_frame=False) returns a dict of numpy arrays instead."
        ) from exc
    return pd.DataFrame(columns)


def stack_curves(tables, keys):
    """One long table from per-curve tables, with ``keys`` columns in front.

    ``keys`` maps a column name to one value per curve (e.g. the class of each
    curve); a column is added only when it varies or names a class.
    """
    lengths = [len(next(iter(tab.values()))) if tab else 0 for tab in tables]
    out = {}
    for name, values in keys.items():
        out[name] = (
            np.concatenate(
                [
                    np.full(m, v, dtype=object)
                    for m, v in zip(lengths, values, strict=True)
                ]
            )
            if lengths
            else np.array([], dtype=object)
        )
        if all(isinstance(v, (int, np.integer)) for v in values):
            out[name] = out[name].astype(np.int64)
    for col in tables[0]:
        out[col] = np.concatenate([np.asarray(tab[col]) for tab in tables])
    return out


def score_range_of(n_classes, multi_class):
    """Where the scores of a problem of ``n_classes`` classes can lie:
    ``[1/K, 1]`` for top-label confidences."""
    if n_classes > 2 and multi_class == "top-label":
        return (1.0 / n_classes, 1.0)
    return (0.0, 1.0)


def _density_axes(density_panel, panels):
    """Density axes under each panel: new ones (``True``), given ones, or ``None``."""
    if density_panel is False or density_panel is np.False_:
        return None
    if density_panel is True or density_panel is np.True_:
        from mpl_toolkits.axes_grid1 import make_axes_locatable

        return [
            make_axes_locatable(p).append_axes("bottom", size="24%", pad=0.12, sharex=p)
            for p in panels
        ]
    daxes = list(np.ravel(np.asarray(density_panel, dtype=object)))
    if len(daxes) != len(panels):
        raise ValueError(
            f"density_panel must be a bool or {len(panels)} matplotlib Axes (one per "
            f"panel); got {len(daxes)} Axes."
        )
    return daxes


class ReliabilityDisplayBase:
    """Reliability-diagram plotting shared by the smooth and binned displays.

    Subclasses define ``_fields`` (per-curve data attributes, the first being
    an array), ``_value_field`` (the metric shown in the legend),
    ``_metric_name`` and ``_draw`` (artists of one curve).
    """

    _fields = ()
    _value_field = None
    _metric_name = ""
    _multi_defaults = {"alpha": 0.6, "color": "C0"}
    # The group of each curve (``groups=`` of ``from_predictions``), or None.
    group = None

    def _records(self):
        n = len(as_list(getattr(self, self._fields[0])))
        columns = {f: as_list(getattr(self, f), n) for f in self._fields}
        for f, col in columns.items():
            if len(col) != n:
                raise ValueError(
                    f"{type(self).__name__}.{f} must have one entry per curve "
                    f"({n}); got {len(col)}."
                )
        return [{f: columns[f][i] for f in self._fields} for i in range(n)]

    def _axis_labels(self):
        if self.multi_class == "top-label":
            return "Confidence (top-label)", "Accuracy"
        if self.multi_class == "classwise":
            return "Predicted probability of the class", "Observed frequency"
        info = "" if self.pos_label is None else f" (positive class: {self.pos_label})"
        return "Predicted probability" + info, "Observed frequency" + info

    def _plot(
        self,
        ax=None,
        *,
        name=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_panel=False,
        despine=False,
        **draw_kwargs,
    ):
        """The body of ``plot``, whose arguments were checked by its caller
        (``plot`` itself or a ``from_*`` method)."""
        records = self._records()
        n = len(records)
        keys = as_list(self.class_label, n)
        self.ax_, axes, self.figure_ = layout_panels(ax, keys)
        groups = panel_groups(axes)
        panels = [axes[g[0]] for g in groups]
        daxes = _density_axes(density_panel, panels)
        styles = curve_styles(
            groups=groups,
            names=self.name if name is None else name,
            metric_name=self._metric_name,
            values=[r[self._value_field] for r in records],
            details=self._legend_details(records),
            curve_kwargs=curve_kwargs,
            multi_defaults=self._multi_defaults,
        )
        lines = [None] * n
        extras = [None] * n
        for p, group in enumerate(groups):
            dax = None if daxes is None else daxes[p]
            for i in group:
                lines[i], extras[i] = self._draw(
                    axes[i], records[i], styles[i], dax, **draw_kwargs
                )
        ref_lines = [
            self._finish_panel(
                panels[p],
                None if daxes is None else daxes[p],
                keys[groups[p][0]],
                ref_line,
                ref_line_kw,
                despine,
            )
            for p in range(len(groups))
        ]
        one = n == 1
        self.line_ = lines[0] if one else lines
        self._set_extras(extras if not one else extras[0])
        self.ref_line_ = ref_lines[0] if len(ref_lines) == 1 else ref_lines
        if daxes is None:
            self.density_ax_ = None
        else:
            self.density_ax_ = (
                daxes[0] if len(daxes) == 1 else np.array(daxes, dtype=object)
            )
        return self

    def _legend_details(self, records):
        return None

    def _curve_keys(self):
        """Columns that tell the curves of a table apart (see ``stack_curves``)."""
        n = len(as_list(getattr(self, self._fields[0])))
        keys = {}
        if n > 1:
            keys["curve"] = list(range(n))
        if self.group is not None:
            keys["group"] = as_list(self.group, n)
        labels = as_list(self.class_label, n)
        if labels[0] is not None:
            keys["label"] = labels
        return keys

    def _is_note(self, label):
        """Whether a legend entry explains the drawing rather than a curve."""
        return False

    def _set_extras(self, extras):
        pass

    @property
    def _x_range(self):
        rng = getattr(self, "score_range", None)
        return (0.0, 1.0) if rng is None else (float(rng[0]), float(rng[1]))

    def _finish_panel(self, ax, dax, key, ref_line, ref_line_kw, despine_):
        ref = None
        lo, hi = self._x_range
        if ref_line and REF_LINE_LABEL not in ax.get_legend_handles_labels()[1]:
            kw = merge_style(
                {
                    "color": "black",
                    "linestyle": ":",
                    "linewidth": 1,
                    "label": REF_LINE_LABEL,
                },
                ref_line_kw,
            )
            (ref,) = ax.plot([lo, hi], [lo, hi], **kw)
        xlabel, ylabel = self._axis_labels()
        pad = 0.01 * (hi - lo)
        ax.set(
            xlim=(lo - pad, hi + pad), ylim=(-0.01, 1.01), aspect="equal", ylabel=ylabel
        )
        if dax is None:
            # Axes whose tick labels a density panel took over keep none.
            if ax.xaxis.get_tick_params(which="major").get("labelbottom", True):
                ax.set_xlabel(xlabel)
        else:
            ax.set_xlabel("")
            ax.tick_params(labelbottom=False)
            dax.set_xlabel(xlabel)
            dax.set_ylabel(self._density_label)
            dax.set_xlim(lo - pad, hi + pad)
            dax.set_ylim(bottom=0)
        if key is not None:
            ax.set_title(f"Class {key}")
        handles, labels = ax.get_legend_handles_labels()
        if labels:
            # What the curves are first, then how to read them; placed where
            # it covers the fewest curve points (a fixed corner hid the curve
            # of classes whose probabilities run along the diagonal's end).
            order = sorted(range(len(labels)), key=lambda i: self._is_note(labels[i]))
            ax.legend(
                [handles[i] for i in order],
                [labels[i] for i in order],
                loc="best",
                fontsize="small",
            )
        if despine_:
            despine(ax, (lo, hi))
            if dax is not None:
                hide_spines(dax)
        return ref

    _density_label = "Density"

    @classmethod
    def _assemble(cls, records, multi_class, pos_label, name, score_range, **init):
        """An unplotted display of per-curve ``records``; ``init`` holds the
        constructor's own options (the smoothing ``metric``, the ``norm``)."""
        fields = data_fields(records, cls._fields + ("class_label",))
        return cls(
            **fields,
            **init,
            multi_class=multi_class,
            name=name,
            pos_label=pos_label,
            score_range=score_range,
        )

    @classmethod
    def _from_records(
        cls,
        curves,
        y_true,
        y_proba,
        groups,
        *,
        sample_weight,
        pos_label,
        labels,
        name,
        curve_kwargs,
        **init,
    ):
        """The unplotted display of ``from_predictions`` and its curves'
        styles: the curves of all rows, or of each group's rows."""
        if groups is None:
            records, shown, pos_label, score_range = curves(
                y_true, y_proba, sample_weight, pos_label, labels
            )
            display = cls._assemble(
                records, shown, pos_label, name, score_range, **init
            )
            return display, curve_kwargs
        return cls._from_groups(
            y_true,
            y_proba,
            groups,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
            curves=curves,
            curve_kwargs=curve_kwargs,
            **init,
        )

    @classmethod
    def _from_groups(
        cls,
        y_true,
        y_proba,
        groups,
        *,
        sample_weight,
        pos_label,
        labels,
        curves,
        curve_kwargs,
        **init,
    ):
        """One curve (one per class for a classwise diagram) per group, drawn
        as the curves of ``from_cv_results`` are, each with its own legend
        entry ``group=<g> (n=<rows>)``.

        ``curves(y_true, y_proba, sample_weight, pos_label, labels)`` computes
        the curves of one group's rows, as a display's records function returns
        them. Returns the unplotted display and the curves' styles.
        """
        data = check_calibration_inputs(
            y_true,
            y_proba,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
        )
        _, names, index = check_groups(groups, data.n_samples)
        y_true, y_proba = _as_rows(y_true), _as_rows(y_proba)
        weight = _as_rows(sample_weight)
        # The classes and positive class of the whole sample keep the groups'
        # columns (and panels) aligned when a group lacks some class.
        pos = data.pos_label if data.kind == "binary" else None
        records, group_of, names_of, color_of = [], [], [], []
        for g, label in enumerate(names):
            rows = np.flatnonzero(index == g)
            label = label.item() if isinstance(label, np.generic) else label
            try:
                part, shown, pos_label, score_range = curves(
                    y_true[rows],
                    y_proba[rows],
                    None if weight is None else weight[rows],
                    pos,
                    data.classes,
                )
            except ValueError as exc:
                raise ValueError(
                    f"the curve of group {label!r} ({rows.shape[0]} samples) cannot "
                    f"be drawn: {exc}"
                ) from exc
            records.extend(part)
            group_of += [label] * len(part)
            names_of += [f"group={label} (n={rows.shape[0]})"] * len(part)
            color_of += [f"C{g % 10}"] * len(part)
        if curve_kwargs is None or isinstance(curve_kwargs, Mapping):
            # One style per group (the same in every panel), unless given.
            curve_kwargs = [merge_style({"color": c}, curve_kwargs) for c in color_of]
        display = cls._assemble(
            records, shown, pos_label, names_of, score_range, **init
        )
        display.group = group_of if len(group_of) > 1 else group_of[0]
        return display, curve_kwargs


def checked_problem(y_true, y_proba, *, sample_weight, pos_label, labels, multi_class):
    """The checked problem of a diagram, the reduction it shows (None for a
    binary problem) and the range of its scores."""
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    n_classes = 2 if data.kind == "binary" else data.proba.shape[1]
    shown = None if data.kind == "binary" else multi_class
    return data, shown, score_range_of(n_classes, multi_class)


def plain_labels(records):
    """``records`` with numpy scalar class labels as Python ones."""
    for r in records:
        if isinstance(r["class_label"], np.generic):
            r["class_label"] = r["class_label"].item()
    return records


def fold_curves(cv_results, X, y, *, sample_weight, pos_label, curves):
    """The curves of every cross-validation split, each fold's model on its
    test rows: ``curves(y_true, y_proba, sample_weight, pos_label, labels)``
    as for groups; returns ``(records, shown, pos_label, score_range)``."""
    records, shown, pos, score_range = [], None, None, None
    folds = cv_folds(cv_results, X, y, sample_weight)
    all_classes = np.unique(np.asarray(y))
    for estimator, X_test, y_test, sw in folds:
        proba, classes, fold_pos, _ = predict_proba_of(
            estimator, X_test, pos_label, None, classes=all_classes
        )
        fold, shown, pos, score_range = curves(y_test, proba, sw, fold_pos, classes)
        records.extend(fold)
    return records, shown, pos, score_range


def _as_rows(x):
    """``x`` as a numpy array indexable by rows (or None)."""
    if x is None:
        return None
    if hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):
        return x.to_numpy()
    return np.asarray(x)
