"""Smooth reliability diagram (SmoothECE curve with density and bootstrap band)."""

from __future__ import annotations

import numpy as np

from .._validation import check_random_generator, check_real
from ..metrics import smooth_calibration_curve
from ._plotting import ReliabilityDisplayBase, level_text, merge_style

__all__ = ["SmoothReliabilityDisplay"]


class SmoothReliabilityDisplay(ReliabilityDisplayBase):
    """Smooth reliability diagram: the SmoothECE calibration curve.

    The curve is the kernel estimate of ``E[y | s]`` at the SmoothECE bandwidth
    computed by :func:`skcalib.metrics.smooth_calibration_curve`. Its width
    encodes the density of the predictions (one filled ribbon, widest where
    most predictions lie), the shaded band is the pointwise bootstrap interval
    and the legend gives the SmoothECE with its bootstrap interval. An optional
    panel under the diagram shows the density itself.

    Use :meth:`from_estimator`, :meth:`from_predictions` or
    :meth:`from_cv_results` to create one. Every data parameter holds one
    value per curve (a list when there are several curves).

    Parameters
    ----------
    scores : ndarray or list of ndarray
        Predicted probabilities where each curve is evaluated.
    y_smooth : ndarray or list of ndarray
        Smoothed observed frequency at ``scores`` (NaN where there is no data).
    density : ndarray or list of ndarray
        Density of the predictions at ``scores``.
    smece : float or list of float, default=None
        SmoothECE, shown in the legend.
    smece_ci : tuple or list of tuple, default=None
        Bootstrap interval of ``smece``.
    y_smooth_low, y_smooth_high : ndarray or list of ndarray, default=None
        Pointwise bootstrap band of ``y_smooth``.
    sigma : float or list of float, default=None
        Kernel bandwidth of each curve.
    confidence_level : float or list of float, default=None
        Level of the bootstrap intervals.
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

    Attributes
    ----------
    line_ : matplotlib Line2D or list of Line2D
        The curves.
    ribbon_ : matplotlib PolyCollection or list
        The density-width ribbons (``None`` with ``density_width=0``).
    band_ : matplotlib PolyCollection or list
        The bootstrap bands (``None`` without bootstrap).
    ref_line_ : matplotlib Line2D or None
        The diagonal (``None`` if not drawn, e.g. already on the axes).
    ax_ : matplotlib Axes or ndarray of Axes
        The diagram (one axes per class for a classwise diagram).
    density_ax_ : matplotlib Axes, ndarray of Axes or None
        The density panel(s).
    figure_ : matplotlib Figure

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
    )
    _value_field = "smece"
    _metric_name = "smECE"
    _opt_keys = (
        "sigma",
        "metric",
        "n_bootstrap",
        "confidence_level",
        "ci_method",
        "random_state",
        "n_jobs",
    )
    _init_keys = ("metric",)
    _plot_keys = (
        "ax",
        "curve_kwargs",
        "ref_line",
        "ref_line_kw",
        "density_width",
        "density_panel",
        "despine",
    )

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
        class_label=None,
        multi_class=None,
        metric="l1",
        name=None,
        pos_label=None,
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
        self.class_label = class_label
        self.multi_class = multi_class
        self.name = name
        self.pos_label = pos_label

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
        despine=False,
    ):
        """Plot the diagram.

        Parameters
        ----------
        ax : matplotlib Axes or array of Axes, default=None
            Axes to draw on (one per class for a classwise diagram). ``None``
            creates a figure.
        name : str or list of str, default=None
            Legend name(s); ``None`` uses :attr:`name`. A list needs a list of
            ``curve_kwargs``.
        curve_kwargs : dict or list of dict, default=None
            Keywords for :meth:`matplotlib.axes.Axes.plot` of each curve. A
            single dict for several curves gives them one style and one legend
            entry with the mean and standard deviation of the SmoothECE; a
            list gives each curve its own entry.
        ref_line : bool, default=True
            Draw the diagonal of perfect calibration (once per axes).
        ref_line_kw : dict, default=None
            Keywords for the diagonal.
        density_width : float, default=0.05
            Width (in probability units) of the ribbon where the density of the
            predictions is largest; elsewhere the width is proportional to the
            density. ``0`` draws the bare curve.
        density_panel : bool or matplotlib Axes, default=False
            ``True`` adds a density panel below the diagram; an Axes (e.g.
            ``density_ax_`` of an earlier display) draws the density there.
        despine : bool, default=False
            Remove the top and right spines.

        Returns
        -------
        display : SmoothReliabilityDisplay

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
        density_width = check_real(density_width, "density_width", low=0.0, high=1.0)
        return self._plot(
            ax,
            name=name,
            curve_kwargs=curve_kwargs,
            ref_line=ref_line,
            ref_line_kw=ref_line_kw,
            density_panel=density_panel,
            despine=despine,
            draw_kwargs={"density_width": density_width},
        )

    @property
    def _density_label(self):
        return "Density (logit)" if self.metric == "logit" else "Density"

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

    def _draw(self, ax, r, style, dax, *, density_width):
        x = np.asarray(r["scores"], dtype=float)
        y = np.asarray(r["y_smooth"], dtype=float)
        dens = np.asarray(r["density"], dtype=float)
        (line,) = ax.plot(x, y, **merge_style({"linewidth": 1.3}, style))
        color = line.get_color()
        fade = 1.0 if line.get_alpha() is None else line.get_alpha()
        z = line.get_zorder()
        band = None
        if r["y_smooth_low"] is not None:
            band = ax.fill_between(
                x,
                r["y_smooth_low"],
                r["y_smooth_high"],
                color=color,
                alpha=0.18 * fade,
                linewidth=0,
                zorder=z - 1,
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
            )
        if dax is not None:
            dax.fill_between(x, 0, dens, color=color, alpha=0.25 * fade, linewidth=0)
            dax.plot(x, dens, color=color, linewidth=1, alpha=fade)
        return line, (ribbon, band)

    def _set_extras(self, extras):
        if isinstance(extras, list):
            self.ribbon_ = [e[0] for e in extras]
            self.band_ = [e[1] for e in extras]
        else:
            self.ribbon_, self.band_ = extras

    @staticmethod
    def _compute(
        y_true,
        y_proba,
        *,
        sample_weight,
        pos_label,
        labels,
        multi_class,
        data,
        **opts,
    ):
        curves = smooth_calibration_curve(
            y_true,
            y_proba,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
            multi_class=multi_class,
            **opts,
        )
        curves = curves if isinstance(curves, list) else [curves]
        return [
            {
                "scores": c.scores,
                "y_smooth": c.y_smooth,
                "density": c.density,
                "smece": c.smece,
                "smece_ci": c.smece_ci,
                "y_smooth_low": c.y_smooth_low,
                "y_smooth_high": c.y_smooth_high,
                "sigma": c.sigma,
                "confidence_level": c.confidence_level,
                "class_label": c.label,
            }
            for c in curves
        ]

    @classmethod
    def from_predictions(
        cls,
        y_true,
        y_proba,
        *,
        sigma=None,
        metric="l1",
        multi_class="top-label",
        n_bootstrap=0,
        confidence_level=0.95,
        ci_method="basic",
        sample_weight=None,
        pos_label=None,
        labels=None,
        random_state=None,
        n_jobs=None,
        name="Classifier",
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_width=0.05,
        density_panel=False,
        despine=False,
    ):
        """Plot the smooth reliability diagram of predicted probabilities.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,)
            True labels.
        y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
            Probability of the positive class, or of every class (columns in
            the order of the sorted labels, or of ``labels`` when given).
        sigma, metric, multi_class, n_bootstrap, confidence_level, \
ci_method, sample_weight, pos_label, labels, random_state, n_jobs
            As in :func:`skcalib.metrics.smooth_calibration_curve`.
            ``multi_class="classwise"`` draws one panel per class.
        name : str, default="Classifier"
            Legend name.
        ax, curve_kwargs, ref_line, ref_line_kw, density_width, \
density_panel, despine
            As in :meth:`plot`. Pass the ``ax_`` (and ``density_ax_``) of an
            earlier display to compare several models on one diagram.

        Returns
        -------
        display : SmoothReliabilityDisplay

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
        ['calibrated', 'Perfectly calibrated', 'squashed']
        >>> plt.close(disp.figure_)
        """
        return cls._from_predictions(
            y_true, y_proba, labels=labels, **cls._route(locals())
        )

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        y,
        *,
        sigma=None,
        metric="l1",
        multi_class="top-label",
        n_bootstrap=0,
        confidence_level=0.95,
        ci_method="basic",
        sample_weight=None,
        pos_label=None,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_width=0.05,
        density_panel=False,
        despine=False,
    ):
        """Plot the smooth reliability diagram of a fitted classifier.

        Parameters
        ----------
        estimator : fitted classifier
            Classifier (or pipeline) with ``predict_proba``.
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sigma, metric, multi_class, n_bootstrap, confidence_level, ci_method, \
sample_weight
            As in :meth:`from_predictions`.
        pos_label : int, float, bool or str, default=None
            Positive class of a binary problem; ``None`` is
            ``estimator.classes_[1]``.
        random_state, n_jobs
            As in :meth:`from_predictions`.
        name : str, default=None
            Legend name; ``None`` uses the estimator's class name.
        ax, curve_kwargs, ref_line, ref_line_kw, density_width, density_panel, \
despine
            As in :meth:`from_predictions`.

        Returns
        -------
        display : SmoothReliabilityDisplay

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
        return cls._from_estimator(estimator, X, y, **cls._route(locals()))

    @classmethod
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
        ci_method="basic",
        sample_weight=None,
        pos_label=None,
        random_state=None,
        n_jobs=None,
        name=None,
        ax=None,
        curve_kwargs=None,
        ref_line=True,
        ref_line_kw=None,
        density_width=0.05,
        density_panel=False,
        despine=False,
    ):
        """Plot one smooth reliability curve per cross-validation split.

        Parameters
        ----------
        cv_results : dict
            Output of :func:`sklearn.model_selection.cross_validate` with
            ``return_estimator=True`` and ``return_indices=True``; each fitted
            estimator is evaluated on its test indices.
        X : array-like of shape (n_samples, n_features)
            The data given to ``cross_validate``.
        y : array-like of shape (n_samples,)
        sigma, metric, multi_class, n_bootstrap, confidence_level, \
ci_method, sample_weight, pos_label, random_state, n_jobs
            As in :meth:`from_estimator`.
        name : str or list of str, default=None
            Legend name(s), with the conventions of :meth:`plot`.
        ax, curve_kwargs, ref_line, ref_line_kw, density_width, density_panel, \
despine
            As in :meth:`from_estimator`. A single ``curve_kwargs`` dict gives
            the folds one legend entry with the mean and standard deviation
            of the SmoothECE.

        Returns
        -------
        display : SmoothReliabilityDisplay

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
        return cls._from_cv_results(cv_results, X, y, **cls._route(locals()))
