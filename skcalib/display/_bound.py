"""Certified calibration-error bounds: terms per method, and bound vs sample size."""

from __future__ import annotations

import numpy as np

from .._docstrings import fill_doc, join_entries
from .._params import (
    AnyOf,
    ListOf,
    NoneOr,
    StrOptions,
    check_random_generator,
    validate_params,
)
from .._validation import check_calibration_inputs, check_estimator_proba
from ..metrics._binned import binned_calibration_error
from ..metrics._bounds import calibration_error_bound
from ._binned import N_BINS
from ._plotting import (
    axes_or_new,
    check_features,
    checks_style,
    hide_spines,
    level_text,
    merge_style,
    predict_proba_of,
    scores_of_a_model,
    to_table,
)

__all__ = ["CalibrationBoundDisplay"]

# How each additive term of a bound reads on the plot: the point estimate of
# CE, the price of estimating it from a finite validation sample, and the price
# of the surrogate calibration function.
_TERM_GROUPS = {
    "validation_error": "estimate",
    "validation_deviation": "concentration",
    "label_deviation": "concentration",
    "transfer": "concentration",
    "smoother_error": "approximation",
    "tv_estimation": "approximation",
    "tv_transfer": "approximation",
}
_GROUPS = ("estimate", "concentration", "approximation", "other")
_GROUP_COLORS = {
    "estimate": "C0",
    "concentration": "C1",
    "approximation": "C2",
    "other": "C7",
}
_METHOD_LABELS = {
    "tv": "TV",
    "nw": "Nadaraya-Watson",
    "lipschitz": "Lipschitz buckets",
}


_METHOD = StrOptions(*_METHOD_LABELS)
_METHODS = NoneOr(AnyOf(_METHOD, ListOf(_METHOD)))

# Entries shared by the ``from_*`` constructors and ``plot``.
_DOC = {
    "perturbation_scale": """\
perturbation_scale : float, default=None
    Scale of the sech perturbation that produced the scores; enables the
    Nadaraya-Watson bound (and the Lipschitz one with
    ``lipschitz = 1 / (2 perturbation_scale)``).""",
    "lipschitz": """\
lipschitz : float, default=None
    Lipschitz constant of the calibration function; enables the
    Lipschitz-bucketing bound.""",
    "methods": """\
methods : {"tv", "nw", "lipschitz"} or list of such str, default=None
    Bounds to draw; ``None`` means TV always, plus NW and Lipschitz when
    their constants are given.""",
    "delta": """\
delta : float, default=0.05
    Failure probability of each bound, in (0, 1).""",
    "n_bins": """\
n_bins : int, default=15
    Bins of the binned ECE drawn for comparison.""",
    "true_ce": """\
true_ce : float, default=None
    The true calibration error, when known; drawn as a reference line.""",
    "n_splits": """\
n_splits : int, default=5
    Number of cross-fitting folds of the bounds, >= 2.""",
    "name": """\
name : str, default=None
    Title of the plot; ``None`` shows none.""",
    "ax": """\
ax : matplotlib Axes, default=None
    Axes to draw on; ``None`` creates a figure and axes.""",
    "bar_kwargs": """\
bar_kwargs : dict, default=None
    Keywords for :meth:`matplotlib.axes.Axes.bar` of the stacked terms.""",
    "pos_label": """\
pos_label : int, float, bool or str, default=None
    Positive class; ``None`` means the greater label.""",
}
# Blocks of parameters that several signatures share in this order.
_DOC["bound_options"] = join_entries(
    "lipschitz", "methods", "delta", "n_bins", "true_ce", entries=_DOC
)
_DOC["fold_options"] = join_entries("n_splits", "random_state", "n_jobs", entries=_DOC)


def _grouped(terms):
    out = dict.fromkeys(_GROUPS, 0.0)
    for key, value in terms.items():
        out[_TERM_GROUPS.get(key, "other")] += value
    return out


def _default_methods(perturbation_scale, lipschitz):
    methods = ["tv"]
    if perturbation_scale is not None:
        methods.append("nw")
    if perturbation_scale is not None or lipschitz is not None:
        methods.append("lipschitz")
    return methods


class CalibrationBoundDisplay:
    """Certified upper bounds on the calibration error, term by term.

    For one binary dataset, each certified bound of
    :func:`skcalib.metrics.calibration_error_bound` is drawn as a stacked bar
    of its additive terms grouped as *estimate* (the surrogate's point
    estimate of CE), *concentration* (empirical Bernstein deviations) and
    *approximation* (the bound on the surrogate's error), next to the binned
    ECE and, when known, the true calibration error. :meth:`from_sample_sizes`
    shows instead how the bounds shrink with the sample size (log-log).
    :meth:`frame` returns the plotted numbers as a table.

    Use :meth:`from_predictions` or :meth:`from_sample_sizes` to create one.

    Parameters
    ----------
    methods : list of str
        Bound methods (``"tv"``, ``"nw"``, ``"lipschitz"``).
    upper : list of float or list of ndarray
        Upper bound of each method (per sample size for the size view).
    estimate : list of float or list of ndarray
        Point estimate of each method.
    terms : list of dict, default=None
        Additive terms of each bound (single-dataset view).
    sample_sizes : ndarray, default=None
        Sample sizes of the size view (``None`` for the single-dataset view).
    binned_ece : float or ndarray, default=None
        Binned ECE of the same data (per sample size for the size view).
    n_bins : int, default=None
        Bins of ``binned_ece``.
    true_ce : float, default=None
        True calibration error, when known (synthetic data).
    delta : float, default=None
        Failure probability of the bounds.
    name : str, default=None
        Title of the plot.

    Attributes
    ----------
    bars_ : dict of BarContainer or None
        Single-dataset view: the stacked segments, keyed by term group
        (``"estimate"``, ``"concentration"``, ``"approximation"``).
    line_ : list of Line2D or None
        Size view: the upper bound of each method.
    ece_line_ : Line2D or None
        The binned ECE.
    true_ce_line_ : Line2D or None
        The true calibration error.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    See Also
    --------
    skcalib.metrics.calibration_error_bound : The bounds.
    PerturbationDisplay : Choosing the perturbation scale of the NW bound.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import numpy as np
    >>> from skcalib.display import CalibrationBoundDisplay
    >>> rng = np.random.default_rng(0)
    >>> s = rng.uniform(size=20000)
    >>> y = rng.uniform(size=20000) < s ** 2        # true CE = 1/6
    >>> disp = CalibrationBoundDisplay.from_predictions(
    ...     y, s, lipschitz=2.0, true_ce=1 / 6, random_state=0)
    >>> disp.methods
    ['tv', 'lipschitz']
    >>> bool(all(u >= 1 / 6 for u in disp.upper))
    True
    >>> plt.close(disp.figure_)
    """

    def __init__(
        self,
        *,
        methods,
        upper,
        estimate,
        terms=None,
        sample_sizes=None,
        binned_ece=None,
        n_bins=None,
        true_ce=None,
        delta=None,
        name=None,
    ):
        self.methods = methods
        self.upper = upper
        self.estimate = estimate
        self.terms = terms
        self.sample_sizes = sample_sizes
        self.binned_ece = binned_ece
        self.n_bins = n_bins
        self.true_ce = true_ce
        self.delta = delta
        self.name = name

    @checks_style
    @validate_params()
    @fill_doc(**_DOC)
    def plot(self, ax=None, *, name=None, bar_kwargs=None, despine=False):
        """Plot the bounds.

        Parameters
        ----------
        ${ax}
        name : str, default=None
            Title; ``None`` uses :attr:`name`.
        bar_kwargs : dict, default=None
            Keywords for :meth:`matplotlib.axes.Axes.bar` (single-dataset
            view) or :meth:`matplotlib.axes.Axes.plot` (size view).
        ${despine}

        Returns
        -------
        CalibrationBoundDisplay
            This display, with ``ax_``, ``figure_`` and the drawn artists.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.display import CalibrationBoundDisplay
        >>> disp = CalibrationBoundDisplay(
        ...     methods=["tv"], upper=[0.2], estimate=[0.1],
        ...     terms=[{"validation_error": 0.1, "validation_deviation": 0.06,
        ...             "tv_estimation": 0.04}]).plot()
        >>> sorted(disp.bars_)
        ['approximation', 'concentration', 'estimate']
        >>> plt.close(disp.figure_)
        """
        return self._render(ax, name=name, bar_kwargs=bar_kwargs, despine=despine)

    def _render(self, ax=None, *, name=None, bar_kwargs=None, despine=False):
        """The body of ``plot`` (its arguments checked by the caller)."""
        if self.sample_sizes is None and self.terms is None:
            raise ValueError(
                "terms are needed to plot the bounds of one dataset (without "
                "sample_sizes); use from_predictions to compute them."
            )
        self._check_lengths()
        ax = axes_or_new(ax)
        self.ax_, self.figure_ = ax, ax.figure
        self.bars_ = self.line_ = None
        name = self.name if name is None else name
        if self.sample_sizes is None:
            self._plot_terms(ax, bar_kwargs)
        else:
            self._plot_sizes(ax, bar_kwargs)
        if name is not None:
            ax.set_title(name)
        if despine:
            hide_spines(ax)
        ax.legend(loc="best", fontsize="small")
        return self

    @validate_params()
    def frame(self, *, as_frame=True):
        """The plotted numbers as a table.

        Parameters
        ----------
        as_frame : bool, default=True
            Return a :class:`pandas.DataFrame` (pandas is then required);
            ``False`` returns a dict of numpy arrays.

        Returns
        -------
        DataFrame or dict of ndarray
            One row per method (single dataset) or per method and sample size
            (``n_samples`` column): ``method``, ``upper`` (the bound),
            ``estimate`` (its point estimate), for one dataset the stacked
            segments ``estimate_term``, ``concentration_term``,
            ``approximation_term`` and ``other_term``, then ``binned_ece`` and
            ``true_ce`` (NaN when not given).

        Examples
        --------
        >>> from skcalib.display import CalibrationBoundDisplay
        >>> disp = CalibrationBoundDisplay(
        ...     methods=["tv"], upper=[0.2], estimate=[0.1],
        ...     terms=[{"validation_error": 0.1, "validation_deviation": 0.06,
        ...             "tv_estimation": 0.04}])
        >>> disp.frame()[["method", "upper", "concentration_term"]]
          method  upper  concentration_term
        0     tv    0.2                0.06
        """
        self._check_lengths()
        methods = list(self.methods)
        true_ce = np.nan if self.true_ce is None else float(self.true_ce)
        if self.sample_sizes is None:
            if self.terms is None:
                raise ValueError(
                    "terms are needed for the table of one dataset (without "
                    "sample_sizes); use from_predictions to compute them."
                )
            grouped = [_grouped(t) for t in self.terms]
            k = len(methods)
            cols = {
                "method": np.array(methods, dtype=object),
                "upper": np.asarray(self.upper, dtype=float),
                "estimate": np.asarray(self.estimate, dtype=float),
            }
            for group in _GROUPS:
                cols[f"{group}_term"] = np.array([g[group] for g in grouped])
            ece = np.nan if self.binned_ece is None else float(self.binned_ece)
            cols["binned_ece"] = np.full(k, ece)
            cols["true_ce"] = np.full(k, true_ce)
            return to_table(cols, as_frame)
        sizes = np.asarray(self.sample_sizes)
        m = len(sizes)
        ece = (
            np.full(m, np.nan)
            if self.binned_ece is None
            else np.asarray(self.binned_ece, dtype=float)
        )
        cols = {
            "method": np.repeat(np.array(methods, dtype=object), m),
            "n_samples": np.tile(sizes, len(methods)),
            "upper": np.concatenate([np.asarray(u, dtype=float) for u in self.upper]),
            "estimate": np.concatenate(
                [np.asarray(e, dtype=float) for e in self.estimate]
            ),
            "binned_ece": np.tile(ece, len(methods)),
            "true_ce": np.full(m * len(methods), true_ce),
        }
        return to_table(cols, as_frame)

    def _check_lengths(self):
        """One entry per method in every per-method field (and per size)."""
        n = len(self.methods)
        fields = {"upper": self.upper, "estimate": self.estimate}
        if self.sample_sizes is None:
            fields["terms"] = self.terms
        for field, value in fields.items():
            if len(value) != n:
                raise ValueError(
                    f"{field} has {len(value)} entries but there are {n} methods."
                )
        if self.sample_sizes is not None:
            m = len(self.sample_sizes)
            for field, value in fields.items():
                if any(np.shape(v) != (m,) for v in value):
                    raise ValueError(
                        f"every entry of {field} must hold one value per sample "
                        f"size ({m})."
                    )

    def _reference_lines(self, ax, x, ece):
        kw = {"color": "0.35", "linestyle": "--", "linewidth": 1.2}
        self.ece_line_ = self.true_ce_line_ = None
        if ece is not None:
            label = "Binned ECE" + (
                "" if self.n_bins is None else f" ({self.n_bins} bins)"
            )
            (self.ece_line_,) = ax.plot(x, ece, label=label, **kw)
        if self.true_ce is not None:
            (self.true_ce_line_,) = ax.plot(
                x,
                np.full(len(x), self.true_ce),
                color="black",
                linewidth=1.5,
                label=f"True CE = {self.true_ce:.3f}",
            )

    def _plot_terms(self, ax, bar_kwargs):
        x = np.arange(len(self.methods))
        grouped = [_grouped(t) for t in self.terms]
        bottom = np.zeros(len(self.methods))
        self.bars_ = {}
        for group in _GROUPS:
            heights = np.array([g[group] for g in grouped])
            if group == "other" and not heights.any():
                continue
            kw = merge_style(
                {
                    "color": _GROUP_COLORS[group],
                    "width": 0.6,
                    "label": group.capitalize(),
                    "edgecolor": "white",
                    "linewidth": 0.5,
                },
                bar_kwargs,
            )
            self.bars_[group] = ax.bar(x, heights, bottom=bottom, **kw)
            bottom = bottom + heights
        for xi, top in zip(x, self.upper, strict=True):
            ax.annotate(
                f"{top:.3f}",
                (xi, top),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize="small",
            )
        span = np.array([-0.5, len(self.methods) - 0.5])
        ece = None if self.binned_ece is None else np.full(2, self.binned_ece)
        self._reference_lines(ax, span, ece)
        ax.set_xlim(*span)
        ax.set_xticks(x, [_METHOD_LABELS.get(m, m) for m in self.methods])
        ax.set_ylim(
            0, 1.15 * max(max(self.upper), self.true_ce or 0, self.binned_ece or 0)
        )
        level = "" if self.delta is None else f" ({level_text(1 - self.delta)})"
        ax.set_ylabel("Calibration error: certified upper bound" + level)

    def _plot_sizes(self, ax, line_kwargs):
        from matplotlib.ticker import FuncFormatter

        n = np.asarray(self.sample_sizes)
        self.line_ = []
        for k, method in enumerate(self.methods):
            kw = merge_style(
                {
                    "marker": "o",
                    "markersize": 4,
                    "color": f"C{k}",
                    "label": f"{_METHOD_LABELS.get(method, method)} bound",
                },
                line_kwargs,
            )
            (line,) = ax.plot(n, self.upper[k], **kw)
            ax.plot(
                n,
                self.estimate[k],
                color=line.get_color(),
                linestyle=":",
                linewidth=1,
                label="_nolegend_",
            )
            self.line_.append(line)
        # One legend entry stands for the dotted point estimates of all methods.
        ax.plot(
            [], [], color="0.4", linestyle=":", linewidth=1, label="Point estimates"
        )
        self._reference_lines(ax, n, self.binned_ece)
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="Number of samples",
            ylabel="Calibration error",
        )
        # Plain numbers: the log scale's default 'a x 10^b' minor labels crowd
        # the axis label out.
        plain = FuncFormatter(lambda v, _: f"{v:g}")
        ax.yaxis.set_major_formatter(plain)
        ax.yaxis.set_minor_formatter(plain)

    @classmethod
    @checks_style
    @validate_params(methods=_METHODS, n_bins=N_BINS)
    @fill_doc(**_DOC)
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        perturbation_scale=None,
        lipschitz=None,
        methods=None,
        delta=0.05,
        n_bins=15,
        true_ce=None,
        pos_label=None,
        n_splits=5,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        bar_kwargs=None,
        despine=False,
    ):
        """Plot the certified bounds of one binary dataset, term by term.

        Parameters
        ----------
        ${y_true}
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
            Predicted probability of the positive class (1-D) or of both
            classes.
        ${perturbation_scale}
        ${bound_options}
        ${pos_label}
        ${fold_options}
        ${name}
        ${ax}
        ${bar_kwargs}
        ${despine}

        Returns
        -------
        CalibrationBoundDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.display import CalibrationBoundDisplay
        >>> rng = np.random.default_rng(0)
        >>> s = rng.uniform(size=5000)
        >>> y = rng.uniform(size=5000) < s
        >>> disp = CalibrationBoundDisplay.from_predictions(y, s, random_state=0)
        >>> [t.get_text() for t in disp.ax_.get_xticklabels()]
        ['TV']
        >>> bool(disp.upper[0] > disp.estimate[0])
        True
        >>> plt.close(disp.figure_)
        """
        data = check_calibration_inputs(
            y_true, y_proba, pos_label=pos_label, require_binary=True
        )
        methods = _methods(methods, perturbation_scale, lipschitz)
        bounds, ece = _bounds_and_ece(
            data.y,
            data.proba,
            methods,
            n_bins,
            perturbation_scale=perturbation_scale,
            lipschitz=lipschitz,
            delta=delta,
            n_splits=n_splits,
            random_state=check_random_generator(random_state),
            n_jobs=n_jobs,
        )
        display = cls(
            upper=[b.upper for b in bounds],
            estimate=[b.estimate for b in bounds],
            terms=[dict(b.terms) for b in bounds],
            binned_ece=ece,
            methods=methods,
            n_bins=n_bins,
            true_ce=None if true_ce is None else float(true_ce),
            delta=delta,
            name=name,
        )
        return display._render(ax=ax, bar_kwargs=bar_kwargs, despine=despine)

    @classmethod
    @checks_style
    @scores_of_a_model
    @validate_params(methods=_METHODS, n_bins=N_BINS)
    @fill_doc(**_DOC)
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        perturbation_scale=None,
        lipschitz=None,
        methods=None,
        delta=0.05,
        n_bins=15,
        true_ce=None,
        n_splits=5,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        bar_kwargs=None,
        despine=False,
    ):
        """Plot the certified bounds of a fitted binary classifier on ``(X, y)``.

        A model that perturbs its scores (a fitted
        :class:`~skcalib.PerturbedClassifier`, recognised by its ``scale_``)
        also gets the Nadaraya-Watson and Lipschitz bounds at that scale.

        Parameters
        ----------
        estimator : fitted classifier
            Binary classifier (or pipeline) with ``predict_proba``.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Held-out input values.
        ${y}
        perturbation_scale : float, default=None
            Scale of the sech perturbation of the scores, enabling the
            Nadaraya-Watson and Lipschitz bounds; ``None`` uses the
            estimator's ``scale_`` when it has one.
        ${bound_options}
        ${fold_options}
        name : str, default=None
            Title of the plot; ``None`` uses the estimator's class name.
        ${ax}
        ${bar_kwargs}
        ${despine}

        Returns
        -------
        CalibrationBoundDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skcalib import PerturbedClassifier
        >>> from skcalib.display import CalibrationBoundDisplay
        >>> X, y = make_classification(n_samples=6000, random_state=0)
        >>> clf = PerturbedClassifier(LogisticRegression(), random_state=0)
        >>> clf = clf.fit(X[:3000], y[:3000])
        >>> disp = CalibrationBoundDisplay.from_estimator(
        ...     clf, X[3000:], y[3000:], random_state=0
        ... )
        >>> disp.methods
        ['tv', 'nw', 'lipschitz']
        >>> plt.close(disp.figure_)
        """
        y = check_features(X, y)
        proba, _, _, _ = predict_proba_of(estimator, X, None, name)
        proba = check_estimator_proba(proba, estimator, y.shape[0])
        if perturbation_scale is None:
            perturbation_scale = getattr(estimator, "scale_", None)
        if name is None:
            name = type(estimator).__name__
        return cls.from_predictions(
            y,
            proba,
            perturbation_scale=perturbation_scale,
            lipschitz=lipschitz,
            methods=methods,
            delta=delta,
            n_bins=n_bins,
            true_ce=true_ce,
            pos_label=None,
            n_splits=n_splits,
            random_state=random_state,
            n_jobs=n_jobs,
            name=name,
            ax=ax,
            bar_kwargs=bar_kwargs,
            despine=despine,
        )

    @classmethod
    @checks_style
    @validate_params(methods=_METHODS, n_bins=N_BINS)
    @fill_doc(**_DOC)
    def from_sample_sizes(
        cls,
        y_true,
        y_proba,
        *,
        sample_sizes=None,
        perturbation_scale=None,
        lipschitz=None,
        methods=None,
        delta=0.05,
        n_bins=15,
        true_ce=None,
        pos_label=None,
        n_splits=5,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        line_kwargs=None,
        despine=False,
    ):
        """Plot the certified bounds against the sample size (log-log).

        The bounds and the binned ECE are computed on nested random subsets
        of the data of the given sizes.

        Parameters
        ----------
        ${y_true}
        y_proba : array-like of shape (n_samples,) or (n_samples, 2)
            Predicted probability of the positive class (1-D) or of both
            classes.
        sample_sizes : array-like of int, default=None
            Subset sizes; ``None`` means 6 sizes from ``min(1000, n)`` to ``n``,
            evenly spaced on a log scale.
        ${perturbation_scale}
        ${bound_options}
        ${pos_label}
        ${fold_options}
        ${name}
        ${ax}
        line_kwargs : dict, default=None
            Keywords for :meth:`matplotlib.axes.Axes.plot` of the bound lines.
        ${despine}

        Returns
        -------
        CalibrationBoundDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> import numpy as np
        >>> from skcalib.display import CalibrationBoundDisplay
        >>> rng = np.random.default_rng(0)
        >>> s = rng.uniform(size=8000)
        >>> y = rng.uniform(size=8000) < s ** 2
        >>> disp = CalibrationBoundDisplay.from_sample_sizes(
        ...     y, s, sample_sizes=[1000, 8000], true_ce=1 / 6, random_state=0)
        >>> bool(disp.upper[0][1] < disp.upper[0][0])
        True
        >>> plt.close(disp.figure_)
        """
        data = check_calibration_inputs(
            y_true, y_proba, pos_label=pos_label, require_binary=True
        )
        methods = _methods(methods, perturbation_scale, lipschitz)
        rng = check_random_generator(random_state)
        n_total = data.n_samples
        if sample_sizes is None:
            sizes = np.geomspace(min(1000, n_total), n_total, 6)
        else:
            try:
                sizes = np.asarray(sample_sizes, dtype=float).reshape(-1)
            except (TypeError, ValueError):
                raise TypeError(
                    "sample_sizes must be None or an array-like of ints; got "
                    f"{sample_sizes!r}."
                ) from None
            if not np.all(np.isfinite(sizes)):
                raise ValueError(f"sample_sizes must be finite; got {sizes.tolist()}.")
        sizes = np.unique(np.round(sizes).astype(np.int64))
        if sizes.size == 0 or sizes[0] < 2 * n_splits or sizes[-1] > n_total:
            raise ValueError(
                f"sample_sizes must lie in [{2 * n_splits}, {n_total}] (the number "
                f"of samples); got {sizes.tolist()}."
            )
        order = rng.permutation(n_total)
        upper = np.empty((len(methods), sizes.size))
        estimate = np.empty_like(upper)
        ece = np.empty(sizes.size)
        for j, size in enumerate(sizes):
            bounds, ece[j] = _bounds_and_ece(
                data.y[order[:size]],
                data.proba[order[:size]],
                methods,
                n_bins,
                perturbation_scale=perturbation_scale,
                lipschitz=lipschitz,
                delta=delta,
                n_splits=n_splits,
                random_state=rng,
                n_jobs=n_jobs,
            )
            upper[:, j] = [b.upper for b in bounds]
            estimate[:, j] = [b.estimate for b in bounds]
        display = cls(
            upper=list(upper),
            estimate=list(estimate),
            sample_sizes=sizes,
            binned_ece=ece,
            methods=methods,
            n_bins=n_bins,
            true_ce=None if true_ce is None else float(true_ce),
            delta=delta,
            name=name,
        )
        return display._render(ax=ax, bar_kwargs=line_kwargs, despine=despine)


def _methods(methods, perturbation_scale, lipschitz):
    """The bounds to draw, as a list (see ``methods`` of ``from_predictions``)."""
    if methods is None:
        methods = _default_methods(perturbation_scale, lipschitz)
    return [methods] if isinstance(methods, str) else list(methods)


def _bounds_and_ece(
    y,
    s,
    methods,
    n_bins,
    *,
    perturbation_scale,
    lipschitz,
    delta,
    n_splits,
    random_state,
    n_jobs,
):
    """Certified bound of each method and the binned ECE of one sample."""
    bounds = [
        # Each method only receives the constants it uses.
        calibration_error_bound(
            y,
            s,
            method=method,
            delta=delta,
            perturbation_scale=(
                perturbation_scale if method in ("nw", "lipschitz") else None
            ),
            lipschitz=lipschitz if method == "lipschitz" else None,
            n_splits=n_splits,
            random_state=random_state,
            n_jobs=n_jobs,
            return_details=True,
        )
        for method in methods
    ]
    return bounds, binned_calibration_error(y, s, n_bins=n_bins)
