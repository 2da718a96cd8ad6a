"""Score and certified bound as functions of the perturbation scale."""

from __future__ import annotations

import numpy as np

from .._docstrings import fill_doc
from .._params import Dict, HasMethods, NoneOr, validate_params
from ..perturbation import select_perturbation_scale
from ._plotting import (
    check_features,
    checks_style,
    hide_spines,
    level_text,
    merge_style,
    pyplot,
    to_table,
)

__all__ = ["PerturbationDisplay"]

_LEGEND_OUTSIDE = {
    "loc": "upper left",
    "bbox_to_anchor": (1.02, 1.0),
    "borderaxespad": 0.0,
    "fontsize": "small",
}


def _scale_text(h):
    """``2^-k`` for powers of two, else a short decimal."""
    k = np.log2(h)
    return f"$2^{{{int(k)}}}$" if float(k).is_integer() else f"{h:.3g}"


# One style for the one score curve (no list of them).
_STYLE = NoneOr(Dict())

# Entries shared by ``plot`` and the ``from_*`` constructors.
_DOC = {
    "ax": """\
ax : matplotlib Axes or pair of Axes, default=None
    ``None`` creates a figure with the score above the bound (sharing the
    scale axis); a pair of Axes is used as (score, bound); a single Axes
    shows the bound on a twin y-axis.""",
    "curve_kwargs": """\
curve_kwargs : dict, default=None
    Keywords for :meth:`matplotlib.axes.Axes.plot` of the score.""",
    "bound_kwargs": """\
bound_kwargs : dict, default=None
    Keywords for :meth:`matplotlib.axes.Axes.plot` of the bound.""",
    "despine": """\
despine : bool, default=False
    Remove the top spine (the right one carries the bound's axis).""",
    "name": """\
name : str, default=None
    Title of the plot; ``None`` shows none.""",
}


class PerturbationDisplay:
    """What perturbing a classifier costs (score) and buys (certified bound).

    Draws the cross-validated score (AUROC by default) of a
    :class:`skcalib.PerturbedClassifier` against the perturbation scale ``h``
    with a band of one standard deviation over folds, the unperturbed score
    and the tolerated loss, and on a second y-axis the certified upper bound
    on the calibration error for each scale. The recommended scale of
    :func:`skcalib.select_perturbation_scale` (the largest within tolerance)
    is marked. :meth:`frame` returns the plotted numbers as a table.

    Use :meth:`from_estimator` or :meth:`from_result` to create one.

    Parameters
    ----------
    scales : ndarray of shape (n_scales,)
        Perturbation scales, increasing.
    score_mean : ndarray of shape (n_scales,)
        Mean over folds of the perturbed score.
    score_std : ndarray of shape (n_scales,)
        Standard deviation over folds of the perturbed score.
    base_score : float
        Mean score of the unperturbed model.
    tolerance : float
        Accepted loss of score.
    recommended_scale : float
        Scale marked as recommended (the largest within ``tolerance``).
    scoring : str, default="roc_auc"
        Name of the score (axis label).
    bound_upper : ndarray of shape (n_scales,), default=None
        Certified upper bound on the calibration error at each scale.
    bound_estimate : ndarray of shape (n_scales,), default=None
        Point estimate of the calibration error at each scale.
    base_bound_upper : float, default=None
        Bound of the unperturbed scores (total-variation, monotone), for
        comparison.
    bound_method : str, default=None
        Method of the certified bounds, shown in the legend.
    delta : float, default=None
        Failure probability of each bound, shown as the level in the axis
        label.
    name : str, default=None
        Title.

    Attributes
    ----------
    line_ : matplotlib Line2D
        The mean score.
    bound_line_ : matplotlib Line2D or None
        The certified bound.
    recommended_line_ : matplotlib Line2D
        Vertical line at the recommended scale.
    ax_ : matplotlib Axes
        Axes of the score.
    bound_ax_ : matplotlib Axes or None
        Axes of the bound (the lower panel, or the twin y-axis).
    figure_ : matplotlib Figure

    See Also
    --------
    skcalib.select_perturbation_scale : The data of the display.
    CalibrationBoundDisplay : The terms of one bound.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalib.display import PerturbationDisplay
    >>> X, y = make_classification(n_samples=3000, random_state=0)
    >>> disp = PerturbationDisplay.from_estimator(
    ...     LogisticRegression(), X, y, scales=[2**-7, 2**-5, 2**-3], cv=3,
    ...     random_state=0)
    >>> disp.line_.get_xdata()
    array([0.0078125, 0.03125  , 0.125    ])
    >>> disp.recommended_scale in disp.scales
    True
    >>> plt.close(disp.figure_)
    """

    def __init__(
        self,
        *,
        scales,
        score_mean,
        score_std,
        base_score,
        tolerance,
        recommended_scale,
        scoring="roc_auc",
        bound_upper=None,
        bound_estimate=None,
        base_bound_upper=None,
        bound_method=None,
        delta=None,
        name=None,
    ):
        self.scales = scales
        self.score_mean = score_mean
        self.score_std = score_std
        self.base_score = base_score
        self.tolerance = tolerance
        self.recommended_scale = recommended_scale
        self.scoring = scoring
        self.bound_upper = bound_upper
        self.bound_estimate = bound_estimate
        self.base_bound_upper = base_bound_upper
        self.bound_method = bound_method
        self.delta = delta
        self.name = name

    @checks_style
    @validate_params(curve_kwargs=_STYLE)
    @fill_doc(**_DOC)
    def plot(
        self, ax=None, *, name=None, curve_kwargs=None, bound_kwargs=None, despine=False
    ):
        """Plot score and bound against the perturbation scale.

        Parameters
        ----------
        ${ax}
        name : str, default=None
            Title; ``None`` uses :attr:`name`.
        ${curve_kwargs}
        ${bound_kwargs}
        ${despine}

        Returns
        -------
        PerturbationDisplay
            This display, with ``ax_``, ``figure_`` and the drawn artists.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from skcalib.display import PerturbationDisplay
        >>> disp = PerturbationDisplay(
        ...     scales=[0.01, 0.1], score_mean=[0.9, 0.88], score_std=[0.01, 0.01],
        ...     base_score=0.9, tolerance=0.01, recommended_scale=0.01,
        ...     bound_upper=[0.2, 0.1])
        >>> fig, ax = plt.subplots()
        >>> disp = disp.plot(ax=ax)
        >>> disp.bound_ax_ is not ax
        True
        >>> plt.close(fig)
        """
        return self._render(
            ax,
            name=name,
            curve_kwargs=curve_kwargs,
            bound_kwargs=bound_kwargs,
            despine=despine,
        )

    def _render(
        self, ax=None, *, name=None, curve_kwargs=None, bound_kwargs=None, despine=False
    ):
        """The body of ``plot`` (its arguments checked by the caller)."""
        ax, bax = self._axes(ax)
        self.ax_, self.figure_ = ax, ax.figure
        h = np.asarray(self.scales, dtype=float)
        mean = np.asarray(self.score_mean, dtype=float)
        std = np.asarray(self.score_std, dtype=float)
        score_name = {"roc_auc": "AUROC", "roc_auc_ovr": "AUROC (one-vs-rest)"}.get(
            self.scoring, self.scoring
        )
        kw = merge_style(
            {
                "color": "C0",
                "marker": "o",
                "markersize": 4,
                "label": f"{score_name}, perturbed (mean ± std over folds)",
            },
            curve_kwargs,
        )
        (self.line_,) = ax.plot(h, mean, **kw)
        color = self.line_.get_color()
        ax.fill_between(h, mean - std, mean + std, color=color, alpha=0.2, linewidth=0)
        ax.axhline(
            self.base_score,
            color="0.3",
            linestyle="--",
            linewidth=1,
            label=f"{score_name}, unperturbed ({self.base_score:.3f})",
        )
        ax.axhline(
            self.base_score - self.tolerance,
            color="0.5",
            linestyle=":",
            linewidth=1,
            label=f"Tolerated loss ({self.tolerance:g})",
        )
        ax.set_xscale("log", base=2)
        ax.set_ylabel(score_name)
        self.recommended_line_ = ax.axvline(
            self.recommended_scale,
            color="black",
            linestyle="-.",
            linewidth=1,
            label=f"Recommended h = {_scale_text(self.recommended_scale)}",
        )
        self.bound_ax_ = self.bound_line_ = None
        handles, labels = ax.get_legend_handles_labels()
        if self.bound_upper is not None:
            if bax is None:
                bax = ax.twinx()
            self.bound_ax_ = bax
            method = "" if self.bound_method is None else f" ({self.bound_method})"
            bkw = merge_style(
                {
                    "color": "C3",
                    "marker": "s",
                    "markersize": 4,
                    "label": f"Certified bound{method}",
                },
                bound_kwargs,
            )
            (self.bound_line_,) = bax.plot(h, self.bound_upper, **bkw)
            bcolor = self.bound_line_.get_color()
            if self.bound_estimate is not None:
                bax.plot(
                    h,
                    self.bound_estimate,
                    color=bcolor,
                    linestyle=":",
                    linewidth=1,
                    label="Point estimate",
                )
            if self.base_bound_upper is not None:
                bax.axhline(
                    self.base_bound_upper,
                    color="0.3",
                    linestyle="--",
                    linewidth=1,
                    label="Unperturbed, TV bound (monotone)",
                )
            if bax is not None and self._twin:
                more = bax.get_legend_handles_labels()
                handles, labels = handles + more[0], labels + more[1]
            else:
                bax.axvline(
                    self.recommended_scale, color="black", linestyle="-.", linewidth=1
                )
                bax.legend(**_LEGEND_OUTSIDE)
            level = "" if self.delta is None else f" ({level_text(1 - self.delta)})"
            bax.set_ylabel("Calibration error" + level)
            upper = np.asarray(self.bound_upper, dtype=float)
            finite = upper[np.isfinite(upper)]
            top = max(finite.max(initial=0.0), self.base_bound_upper or 0.0)
            # Head room for the legend above the highest line.
            bax.set_ylim(0, 1.3 * top if top > 0 else 1.0)
            bax.set_xscale("log", base=2)
        # The legend goes on the top-most axes so that no curve hides it, and
        # beside the data (beyond the twin axis's labels) rather than on it:
        # with four or more entries no corner of the panel is free.
        top = self.bound_ax_ if self._twin else ax
        outside = _LEGEND_OUTSIDE
        if self._twin and self.bound_ax_ is not None:
            outside = {**outside, "bbox_to_anchor": (1.16, 1.0)}
        top.legend(handles, labels, **outside)
        (
            self.bound_ax_ if self.bound_ax_ is not None and not self._twin else ax
        ).set_xlabel("Perturbation scale h")
        name = self.name if name is None else name
        if name is not None:
            ax.set_title(name)
        if despine:
            for a in (ax, self.bound_ax_):
                if a is not None:
                    hide_spines(a, ("top",) if self._twin else ("top", "right"))
        return self

    @validate_params()
    def frame(self, *, as_frame=True):
        """The plotted numbers as a table, one row per perturbation scale.

        Parameters
        ----------
        as_frame : bool, default=True
            Return a :class:`pandas.DataFrame` (pandas is then required);
            ``False`` returns a dict of numpy arrays.

        Returns
        -------
        DataFrame or dict of ndarray
            Columns ``scale``, ``score_mean`` and ``score_std`` (the score
            curve and its band), ``bound_upper`` and ``bound_estimate`` (NaN
            without bounds) and ``recommended`` (True at the recommended
            scale).

        Examples
        --------
        >>> from skcalib.display import PerturbationDisplay
        >>> disp = PerturbationDisplay(
        ...     scales=[0.01, 0.1], score_mean=[0.9, 0.88], score_std=[0.01, 0.01],
        ...     base_score=0.9, tolerance=0.01, recommended_scale=0.01,
        ...     bound_upper=[0.2, 0.1])
        >>> disp.frame()[["scale", "score_mean", "bound_upper", "recommended"]]
           scale  score_mean  bound_upper  recommended
        0   0.01        0.90          0.2         True
        1   0.10        0.88          0.1        False
        """
        h = np.asarray(self.scales, dtype=float)
        missing = np.full(h.shape, np.nan)
        cols = {
            "scale": h,
            "score_mean": np.asarray(self.score_mean, dtype=float),
            "score_std": np.asarray(self.score_std, dtype=float),
            "bound_upper": missing
            if self.bound_upper is None
            else np.asarray(self.bound_upper, dtype=float),
            "bound_estimate": missing
            if self.bound_estimate is None
            else np.asarray(self.bound_estimate, dtype=float),
            "recommended": h == float(self.recommended_scale),
        }
        return to_table(cols, as_frame)

    def _axes(self, ax):
        """Score and bound axes: two stacked panels, a given pair, or a twin."""
        self._twin = False
        if ax is None:
            if self.bound_upper is None:
                _, ax = pyplot().subplots()
                return ax, None
            _, (ax, bax) = pyplot().subplots(
                2, 1, sharex=True, figsize=(6.4, 6.4), layout="constrained"
            )
            return ax, bax
        if hasattr(ax, "plot"):
            self._twin = self.bound_upper is not None
            return ax, None
        pair = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(pair) != 2 or not all(hasattr(a, "plot") for a in pair):
            raise TypeError(
                "ax must be a matplotlib Axes (the bound then goes on a twin "
                "y-axis) or a pair of Axes (score, bound)."
            )
        return pair[0], pair[1]

    @classmethod
    @checks_style
    @validate_params(curve_kwargs=_STYLE)
    @fill_doc(**_DOC)
    def from_result(
        cls,
        result,
        *,
        name=None,
        ax=None,
        curve_kwargs=None,
        bound_kwargs=None,
        despine=False,
    ):
        """Plot a :class:`~skcalib.perturbation.PerturbationScaleResult`.

        Parameters
        ----------
        result : PerturbationScaleResult
            Output of :func:`skcalib.select_perturbation_scale`.
        ${name}
        ${ax}
        ${curve_kwargs}
        ${bound_kwargs}
        ${despine}

        Returns
        -------
        PerturbationDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.linear_model import LogisticRegression
        >>> from skcalib import select_perturbation_scale
        >>> from skcalib.display import PerturbationDisplay
        >>> X, y = make_classification(n_samples=2000, random_state=0)
        >>> result = select_perturbation_scale(
        ...     LogisticRegression(), X, y, scales=[2**-6, 2**-3], cv=3, random_state=0)
        >>> disp = PerturbationDisplay.from_result(result, name="LogisticRegression")
        >>> disp.ax_.get_title()
        'LogisticRegression'
        >>> plt.close(disp.figure_)
        """
        return cls._from_result(
            result,
            name=name,
            ax=ax,
            curve_kwargs=curve_kwargs,
            bound_kwargs=bound_kwargs,
            despine=despine,
        )

    @classmethod
    def _from_result(cls, result, *, name, ax, curve_kwargs, bound_kwargs, despine):
        """``from_result`` on checked arguments."""
        disp = cls(
            scales=result.scales,
            score_mean=result.score_mean,
            score_std=result.score_std,
            base_score=result.base_score_mean,
            tolerance=result.tolerance,
            recommended_scale=result.recommended_scale,
            scoring=result.scoring,
            bound_upper=result.bound_upper,
            bound_estimate=result.bound_estimate,
            base_bound_upper=result.base_bound_upper,
            bound_method=result.bound_method,
            delta=result.delta,
            name=name,
        )
        return disp._render(
            ax=ax, curve_kwargs=curve_kwargs, bound_kwargs=bound_kwargs, despine=despine
        )

    @classmethod
    @checks_style
    @validate_params(estimator=HasMethods("fit", "predict_proba"), curve_kwargs=_STYLE)
    @fill_doc(**_DOC)
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        scales=None,
        scoring="roc_auc",
        tolerance=0.01,
        cv=5,
        bound_method="nw",
        delta=0.05,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        curve_kwargs=None,
        bound_kwargs=None,
        despine=False,
    ):
        """Cross-validate a perturbed classifier over scales and plot the trade-off.

        Parameters
        ----------
        estimator : classifier or PerturbedClassifier
            Unfitted base model (a :class:`skcalib.PerturbedClassifier` is
            unwrapped); it is fitted on each training split.
        X : array-like of shape (n_samples, n_features)
            Data, in any form the estimator accepts.
        ${y}
        scales : array-like of float in [2**-16, 1], default=None
            Candidate scales; ``None`` means ``2.0 ** -np.arange(3, 10)``
            (1/8 down to 1/512).
        scoring : str, callable or None, default="roc_auc"
            Score to preserve (greater is better): a name accepted by
            :func:`skcalib.metrics.get_scorer`, a scorer callable, or ``None``
            for the estimator's ``score`` method.
        tolerance : float, default=0.01
            Largest accepted mean loss of score, in the scorer's units.
        cv : int, cross-validation generator or iterable, default=5
            Splitting strategy, as in
            :func:`sklearn.model_selection.cross_validate` (stratified K-fold
            for an int).
        bound_method : {"nw", "lipschitz", "tv"} or None, default="nw"
            Certified bound drawn for each scale; ``None`` draws none.
        delta : float, default=0.05
            Failure probability of each bound.
        ${random_state}
        ${n_jobs}
        ${name}
        ${ax}
        ${curve_kwargs}
        ${bound_kwargs}
        ${despine}

        Returns
        -------
        PerturbationDisplay
            The display, drawn.

        Examples
        --------
        >>> import matplotlib.pyplot as plt
        >>> from sklearn.datasets import make_classification
        >>> from sklearn.naive_bayes import GaussianNB
        >>> from skcalib.display import PerturbationDisplay
        >>> X, y = make_classification(n_samples=2000, random_state=0)
        >>> disp = PerturbationDisplay.from_estimator(
        ...     GaussianNB(), X, y, scales=[2**-6, 2**-3], cv=3, random_state=0,
        ...     curve_kwargs={"color": "C2"})
        >>> disp.bound_line_.get_label()
        'Certified bound (nw)'
        >>> disp.line_.get_color()
        'C2'
        >>> plt.close(disp.figure_)
        """
        check_features(X, y)
        result = select_perturbation_scale(
            estimator,
            X,
            y,
            scales=scales,
            scoring=scoring,
            tolerance=tolerance,
            cv=cv,
            bound_method=bound_method,
            delta=delta,
            random_state=random_state,
            n_jobs=n_jobs,
        )
        return cls._from_result(
            result,
            name=name,
            ax=ax,
            curve_kwargs=curve_kwargs,
            bound_kwargs=bound_kwargs,
            despine=despine,
        )
