"""KernelRecalibrator: a transformer from predicted to recalibrated probabilities."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.base import (
    BaseEstimator,
    OneToOneFeatureMixin,
    TransformerMixin,
)
from sklearn.utils.validation import (
    check_is_fitted,
    validate_data,
)

from .._backend.bandwidth import BANDWIDTH_GRID, select_dirichlet_bandwidth
from .._backend.binning import positive_weight_rows
from .._backend.grid import calibration_statistics
from .._backend.progress import note
from .._backend.recalibration import dirichlet as _dm
from .._backend.recalibration import grid_map as _gm
from .._backend.recalibration import logit_map as _lm
from .._backend.recalibration import scores as _sc
from .._backend.recalibration.selection import uniform_mix
from .._backend.smece import GridGeometry, solve_sigma
from .._backend.smoothing import dirichlet_nw
from .._params import (
    RULES,
    AnyOf,
    Interval,
    Options,
    StrOptions,
    check_estimator_params,
    check_param,
    check_sigma,
)
from .._validation import (
    as_probability_columns,
    check_column_labels,
    check_probability_matrix,
    check_sample_weight,
)

__all__ = ["KernelRecalibrator"]

_METHODS = ("auto", "logit", "grid", "classwise", "canonical")
# Fitted attributes that only some methods set.
_METHOD_ATTRIBUTES = ("base_", "score_floor_", "maps_", "calibration_points_")
_BASES = ("auto", "temperature", "platt", "beta", "sigmoid", "vector", "matrix")
_GRID_BANDWIDTHS = ("auto", "smece")
_DIRICHLET_BANDWIDTHS = ("auto", "mle", "risk")
# Points used by the multiclass bandwidth selectors (O(m^2 K) per candidate).
_DIRICHLET_MAX_SAMPLES = 3000
_POSITIVE = Interval(numbers.Real, 0, None, closed="neither")
_PARAMETER_RULES = {
    "method": StrOptions(*_METHODS),
    "bandwidth": AnyOf(
        StrOptions(*sorted(set(_GRID_BANDWIDTHS + _DIRICHLET_BANDWIDTHS))),
        Interval(numbers.Real, 0, None),
        Options(numbers.Real, np.inf),
    ),
    "base": StrOptions(*_BASES),
    "pseudo_count": Interval(numbers.Real, 0, None),
    "shrinkage": AnyOf(StrOptions("auto"), Interval(numbers.Real, 0, 1)),
    "eps": Interval(numbers.Real, 0, 0.5, closed="neither"),
    "n_jobs": RULES["n_jobs"],
    "verbose": RULES["verbose"],
}


class KernelRecalibrator(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Recalibrate predicted probabilities with a kernel estimate of ``E[y | f]``.

    The recalibration map estimates the calibration function ``f -> E[y |
    f]`` on held-out probabilities ``f_i`` and labels ``y_i``. Three
    estimators are available:

    * ``method="logit"`` (the default): a parametric map in log-odds space
      (temperature, Platt, beta, sigmoid or vector scaling) followed by a kernel
      correction, ``q = expit(u + alpha(u))`` with ``u`` the parametric
      log-odds and ``alpha`` a local-likelihood offset smoothed over the
      quantiles of ``u``. The bandwidth runs from ``inf`` (no correction:
      the parametric map alone) down to a local fit, and the base and
      bandwidth are chosen by cross-validated log-loss. Multiclass problems
      correct each class's one-vs-rest log-odds and renormalise the rows.
      Fitting costs ``O(n)`` plus a fixed cost (at most 129 nodes per
      class), transforming ``O(n K)``.
    * ``method="grid"`` (binary) and ``"classwise"`` (one-vs-rest, rows
      renormalised): Nadaraya-Watson with the reflected Gaussian kernel on
      [0, 1] applied to the probability itself, computed on a uniform grid
      by FFT, ``mu_hat(f) = sum_i w_i K(f, f_i) y_i / sum_i w_i K(f, f_i)``.
      Fitting costs ``O(n + M log M)``, transforming ``O(m)``.
    * ``method="canonical"``: Nadaraya-Watson with the Dirichlet kernel on
      the simplex, ``k_b(x; f) = Dir(x; f / b + 1)``, applied to the whole
      probability vector; transforming costs ``O(m n K)`` (chunked), and the
      fitted transformer keeps the ``n`` calibration points.

    Parameters
    ----------
    method : {"auto", "logit", "grid", "classwise", "canonical"}, \
default="auto"
        ``"auto"`` is ``"logit"``. ``"grid"`` is for binary problems only.
        ``"classwise"`` on a binary problem is the grid map; ``"canonical"``
        with two classes uses the Beta kernel (the two-class Dirichlet).
    bandwidth : "auto", "smece", "mle", "risk" or float, default="auto"
        Logit maps: ``"auto"`` selects among ``inf``, ``2**-7, ...,
        2**-1`` and ``0`` by cross-validated log-loss (see the User Guide);
        a float > 0 (``np.inf`` allowed) is the standard deviation of the Gaussian
        correction kernel in units of the empirical distribution function of
        the scores (``0.1``: a window of about a tenth of the data on each
        side), and ``0`` the most local map, a monotone step function
        (isotonic regression of the labels on the base log-odds). With
        ``"auto"`` a binary map mixes the step map into the selected smooth
        one, by the weight of its evidence. Grid
        maps (binary, classwise): ``"auto"`` minimises the leave-one-out
        log-loss over the Gaussian scale ``sigma``,
        ``"smece"`` takes the SmoothECE scale ``sigma*`` of the calibration
        data, and a float in (0, 1] is ``sigma`` itself. Dirichlet
        (canonical): ``"auto"`` minimises the leave-one-out log-loss over the
        grid of candidate ``b``, ``"mle"`` maximises the leave-one-out kernel
        density likelihood, ``"risk"`` uses risk alignment, and a float > 0
        is ``b``.
    base : {"auto", "temperature", "platt", "beta", "sigmoid", "vector", \
"matrix"}, default="auto"
        Parametric part of the logit map (ignored by the other methods):
        ``"temperature"`` scales the log-odds (binary) or the logits
        (multiclass, one inverse temperature); ``"platt"`` fits a slope and
        an intercept on each class's log-odds; ``"beta"`` adds a term in
        ``log(p (1 - p))``, which gives beta calibration, ``(a + c) log p -
        (a - c) log(1 - p) + b`` with ``|c| <= 0.9 a`` (different slopes
        towards 0 and towards 1); ``"sigmoid"`` fits a slope and an
        intercept on each class's probability (a model that is
        over-confident near 0 and 1 at once, such as a random forest, is
        often better described in probability space); ``"vector"``
        (multiclass only) is vector scaling, ``softmax(a * log P + b)`` with
        one slope and one intercept per class fitted jointly (with two
        classes it would be beta calibration; ``"auto"`` does not consider
        it). ``"matrix"`` (multiclass only) is matrix scaling,
        ``softmax(A log P)`` with the prior shrinking ``A`` towards one
        inverse temperature times the identity (every class's logit may
        draw on every class's log-probability).
        ``"auto"`` selects by cross-validated log-loss: the first four
        for binary problems (``"beta"`` from 500 rows), ``"temperature"`` and
        ``"sigmoid"`` for multiclass ones, among near ties the simplest
        first, in that order; for multiclass problems ``"matrix"`` then
        replaces their choice if its cross-validated log-loss is lower.
    pseudo_count : float, default=1.0
        Weight (in the units of ``sample_weight``, which count as frequencies)
        of a pseudo-observation with an even label
        distribution (1/2 each for binary maps, ``1/K`` each for the Dirichlet
        kernel) added to the kernel sums at every point, as in the
        Krichevsky-Trofimov estimator: ``(sum_i w_i K(f, f_i) e_{y_i} + c u) /
        (sum_i w_i K(f, f_i) + c)`` with ``c`` the kernel's own peak mass for
        ``pseudo_count`` samples. Where calibration data are plentiful it has no
        visible effect; where they are few (tails, small calibration sets) it
        keeps the map away from 0 and 1 and from the noise of one or two
        labels, which is what the log-loss punishes most. ``0`` gives the plain
        Nadaraya-Watson estimator. In the logit map the pseudo-observation's
        label is the parametric prediction instead, so that the correction
        shrinks towards the parametric map where data are few.
    shrinkage : "auto" or float in [0, 1], default="auto"
        Weight of the uniform distribution mixed into the output,
        ``(1 - lambda) q + lambda / K``. ``"auto"`` is ``1 / (2 n + 1)``
        (half a pseudo-observation among ``n``) with ``n`` the total sample
        weight (weights count as observations, as for ``pseudo_count``): the
        map never gives a class less than ``lambda / K``, so that one
        confident mistake on new data cannot dominate the log-loss of a map
        fitted on few rows; the mixture vanishes as ``n`` grows. ``0``
        turns it off. The logit map compares its candidates under the
        ``"auto"`` mixture of its training folds whatever this value is, so
        that a given value changes the output, not the map chosen.
    eps : float, default=1e-7
        Output probabilities are clipped to ``[eps, 1 - eps]`` (and rows then
        renormalised), so that the log-loss of a recalibrated model is finite.
    n_jobs : int, default=None
        Threads for the chunked Dirichlet kernel sums (canonical method).
    verbose : int, default=0
        ``1`` or more: report the method, the data size and the choice made
        to stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels, in the order of the probability columns.
    method_ : {"logit", "grid", "classwise", "canonical"}
        The method used.
    base_ : {"temperature", "platt", "beta", "sigmoid", "vector", "matrix"}
        Parametric part of the logit map; logit method only. A map fitted
        with ``base="auto"`` mixes the bases (weights in
        ``maps_[0].base_weights``; a multiclass map only when it chose no
        correction); ``base_`` is then the one of largest weight.
    score_floor_ : ndarray of shape (n_classes,)
        Logit method only: for each column with an exact 0 among the
        calibration scores (the 0s of k-nearest neighbours or random
        forests, or in the other column their 1s), a quarter of its smallest
        positive score; 0 for the other columns. Scores below it are raised
        to it before the log-odds are taken, at fit and at transform time
        alike, so that a 0 sits one step beyond the other scores instead of
        at the log-odds ``log(1e-12)`` of the global floor.
    shrinkage_ : float
        Weight of the uniform distribution in the output.
    bandwidth_ : float or ndarray of shape (n_classes,)
        Bandwidth used: that of the logit map's correction (``inf`` when
        there is none; with the step map mixed in, that of the heavier of
        the two, the weights in ``maps_[0].correction.weights``), ``sigma``
        of the grid map, ``b`` of the Dirichlet
        kernel, or one ``sigma`` per class for ``"classwise"``.
    maps_ : list
        Fitted maps: the logit map, or the grid maps (one, or one per class
        for ``"classwise"``); not for the canonical method.
    calibration_points_ : tuple of ndarray
        ``(P, y_index, sample_weight)`` of the calibration rows of positive
        weight, which the Dirichlet smoother needs at transform time;
        canonical method only.
    bandwidth_scores_ : dict, ndarray, list of ndarray or None
        Criterion at each candidate when one was selected: for the logit
        map ``{(base, bandwidth): cross-validated log-loss}``; otherwise the
        leave-one-out log-loss or the ``"mle"``/``"risk"`` criteria at each
        candidate bandwidth.
    n_features_in_ : int
        Number of probability columns seen during fit (1 for a 1-D input).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names seen during fit, when ``X`` has string column names.

    See Also
    --------
    RecalibratedClassifier : Classifier recalibrated by cross-fitting.
    skcalib.metrics.smooth_ece : Calibration error on the same grid.

    Notes
    -----
    ``X`` holds predicted probabilities: an ``(n, K)`` matrix whose rows sum to
    one (columns in sorted label order), or a 1-D array / single column
    holding the probability of the positive class; the output has the shape
    of the input. ``fit_transform`` returns the in-sample recalibration of
    the calibration data (not leave-one-out); the labels are never read by
    :meth:`transform`. The logit map, its selection and the leave-one-out
    bandwidths are described in the :ref:`User Guide <recalibration-details>`.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib import KernelRecalibrator
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)                    # over-confident scores:
    >>> y = rng.uniform(size=2000) < 0.25 + 0.5 * p   # P(y=1 | p) = 0.25 + p / 2
    >>> cal = KernelRecalibrator().fit(p, y)
    >>> q = cal.transform([0.1, 0.5, 0.9])
    >>> q.shape
    (3, 1)
    >>> bool(np.all(np.abs(q[:, 0] - [0.3, 0.5, 0.7]) < 0.1))
    True
    >>> cal.base_, cal.bandwidth_    # a smooth monotone map: no correction
    ('sigmoid', inf)
    >>> P = np.column_stack([1 - p, p])               # or the full matrix
    >>> cal.fit(P, y).transform(P[:2]).sum(axis=1)
    array([1., 1.])
    >>> knn = np.repeat([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], 20)  # shares of 5 neighbours
    >>> y = rng.uniform(size=120) < (knn + 0.1) / 1.2
    >>> cal = KernelRecalibrator().fit(knn, y)
    >>> cal.score_floor_           # an exact 0, in either column, counts as 0.05
    array([0.05, 0.05])
    """

    _parameter_constraints = _PARAMETER_RULES

    def __init__(
        self,
        *,
        method="auto",
        bandwidth="auto",
        base="auto",
        pseudo_count=1.0,
        shrinkage="auto",
        eps=1e-7,
        n_jobs=None,
        verbose=0,
    ):
        self.method = method
        self.bandwidth = bandwidth
        self.base = base
        self.pseudo_count = pseudo_count
        self.shrinkage = shrinkage
        self.eps = eps
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- validation ---------------------------------------------------------

    def _check_X(self, X, *, reset):
        X = validate_data(
            self,
            as_probability_columns(X),
            reset=reset,
            dtype=np.float64,
            ensure_all_finite=True,
        )
        # Validated above (shape, finiteness, names); now as probabilities.
        return check_probability_matrix(X, name="X")

    def _resolve_method(self, n_classes):
        if self.method in ("auto", "logit"):
            return "logit"
        if self.method == "canonical":
            return "canonical"
        if n_classes == 2 or self.method == "grid":
            if n_classes > 2:
                raise ValueError(
                    "method='grid' needs a binary problem; use 'classwise' or "
                    f"'canonical' for {n_classes} classes."
                )
            return "grid"
        return "classwise"

    def _check_bandwidth(self, method):
        allowed = _DIRICHLET_BANDWIDTHS if method == "canonical" else _GRID_BANDWIDTHS
        if method == "logit":
            allowed = ("auto",)
        bw = self.bandwidth
        if isinstance(bw, str):
            if bw not in allowed:
                named = method if self.method == "auto" else self.method
                raise ValueError(
                    f"bandwidth={bw!r} is not available for the {named!r} method; "
                    f"use one of {', '.join(map(repr, allowed))} or a float."
                )
            return bw
        if method == "logit":
            # inf is the logit map without correction (the parametric map),
            # 0 its monotone step correction: the declared rule.
            return float(bw)
        if method == "canonical":
            return float(check_param("bandwidth", bw, _POSITIVE, type(self).__name__))
        return check_sigma(bw, "bandwidth")

    # -- fit / transform ----------------------------------------------------

    def fit(self, X, y, sample_weight=None):
        """Fit the recalibration map on held-out probabilities and labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Predicted probabilities (rows sum to one), or the probability of
            the positive class of a binary problem.
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative sample weights, multiplying each sample's kernel. At
            a fixed bandwidth, integer weights give the map of repeated rows;
            the leave-one-out criterion removes a sample's whole weight
            (importance weights), so a selected bandwidth can differ from
            that of repeated rows, whose copies remain each other's
            neighbours. Weights count as observations: ``pseudo_count`` and
            the priors of the parametric base weigh as much against them
            as against that many unit-weight samples, so weights rescaled
            to sum to 1 regularise far more strongly than unit weights (as
            the penalty ``C`` of scikit-learn's linear models does).

        Returns
        -------
        KernelRecalibrator
            The fitted recalibrator (``self``).
        """
        check_estimator_params(self)
        eps = float(self.eps)
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is "
                "None."
            )
        P = self._check_X(X, reset=True)
        n, K = P.shape
        classes, y_idx = check_column_labels(y, n, K)
        # Weights count as frequencies (integer weights = repeated rows), so
        # the pseudo-observation's share of the total weight is c / sum(w).
        w = check_sample_weight(sample_weight, n)
        pseudo_count = float(self.pseudo_count)
        self.shrinkage_ = (
            uniform_mix(w.sum()) if self.shrinkage == "auto" else float(self.shrinkage)
        )
        prior = pseudo_count / w.sum()
        for attr in _METHOD_ATTRIBUTES:  # left by a fit with another method
            self.__dict__.pop(attr, None)
        self.classes_ = classes
        method = self._resolve_method(K)
        bandwidth = self._check_bandwidth(method)
        note(
            self.verbose, f"{type(self).__name__}: {method} map, {n} rows, {K} classes"
        )
        if method == "logit":
            self._fit_logit(P, y_idx, w, bandwidth, self.base, eps, pseudo_count)
        elif method == "canonical":
            self._fit_canonical(P, y_idx, w, bandwidth, eps, prior)
        else:
            self._fit_classwise(
                P, y_idx, w, bandwidth, eps, prior, binary=method == "grid"
            )
        self.method_ = method
        chosen = ""
        if method == "logit":
            chosen = f"base={self.base_!r}, "
            mixture = getattr(self.maps_[0], "base_weights", None)
            if mixture:
                weights = ", ".join(f"{b} {v:.2f}" for b, v in mixture.items())
                chosen = f"base=mixture ({weights}), "
            correction = getattr(self.maps_[0], "correction", None)
            mixed = getattr(correction, "weights", None)
            if mixed is not None:
                chosen += f"step map weight {mixed[1]:.2f}, "
        note(
            self.verbose,
            f"{type(self).__name__}: chose {chosen}"
            + f"bandwidth={self.bandwidth_}, shrinkage={self.shrinkage_:.3g}",
        )
        return self

    def _fit_classwise(self, P, y_idx, w, bandwidth, eps, prior, binary=False):
        """One grid map per class (the positive one only if ``binary``)."""
        cols = [1] if binary else range(P.shape[1])
        fits = [
            self._fit_grid(
                (y_idx == k).astype(np.float64), P[:, k], w, bandwidth, eps, prior
            )
            for k in cols
        ]
        self.maps_ = [m for m, _, _ in fits]
        scores = [sc for _, sc, _ in fits]
        sig = np.array([m.sigma for m in self.maps_])
        self.bandwidth_ = float(sig[0]) if binary else sig
        if binary:
            self.bandwidth_scores_ = scores[0]
        else:  # None at a fixed bandwidth, as for the other methods
            self.bandwidth_scores_ = None if scores[0] is None else scores

    def _fit_logit(self, P, y_idx, w, bandwidth, base, eps, pseudo_count):
        if base == "vector" and P.shape[1] == 2:
            raise ValueError(
                "base='vector' needs three or more classes; vector scaling of "
                "two classes is beta calibration, base='beta'."
            )
        if base == "matrix" and P.shape[1] == 2:
            raise ValueError(
                "base='matrix' needs three or more classes; matrix scaling of "
                "two classes is beta calibration, base='beta'."
            )
        # The logit map's pseudo-observations are in the units of the weights.
        fit, scores = _lm.fit_logit_map(
            P, y_idx, w, prior=pseudo_count, eps=eps, bandwidth=bandwidth, base=base
        )
        self.base_ = fit.base
        self.score_floor_ = fit.score_floor
        self.maps_ = [fit]
        self.bandwidth_ = fit.bandwidth
        self.bandwidth_scores_ = scores

    @staticmethod
    def _fit_grid(y, s, w, bandwidth, eps, prior):
        stats = calibration_statistics(y, s, w)
        scores = None
        if bandwidth == "auto":
            sigma, info = _gm.select_sigma_loo(stats, y, s, w, eps, prior=prior)
            scores = info["scores"]
        elif bandwidth == "smece":
            # sigma* -> 0 on exactly calibrated data; the finest grid bounds it.
            sigma = max(solve_sigma(stats, GridGeometry("l1")), _gm.SIGMA_GRID[0])
        else:
            sigma = bandwidth
        return _gm.fit_grid_map(stats, sigma, prior), scores, stats

    def _fit_canonical(self, P, y_idx, w, bandwidth, eps, prior):
        w, P, y_idx = positive_weight_rows(w, P, y_idx)  # not neighbours
        self.bandwidth_scores_ = None
        self._prior = prior
        if bandwidth == "auto":
            # On a subsample of m points the same pseudo-observation is a
            # larger share of the (subsample's) total weight.
            m = min(P.shape[0], _DIRICHLET_MAX_SAMPLES)
            b, info = _dm.select_dirichlet_loo(
                P,
                y_idx,
                w,
                eps,
                grid=BANDWIDTH_GRID,
                max_samples=_DIRICHLET_MAX_SAMPLES,
                prior=prior * P.shape[0] / m,
            )
            self.bandwidth_scores_ = info["scores"]
        elif bandwidth in ("mle", "risk"):
            with warnings.catch_warnings():
                # An end of the grid is a legitimate choice for a recalibration
                # map (e.g. b = 1 on a nearly calibrated model).
                warnings.simplefilter("ignore", UserWarning)
                b, info = select_dirichlet_bandwidth(
                    P,
                    y_idx,
                    w,
                    bandwidth,
                    max_samples=_DIRICHLET_MAX_SAMPLES,
                    n_jobs=self.n_jobs,
                )
            self.bandwidth_scores_ = info["scores"]
        else:
            b = bandwidth
        self.bandwidth_ = float(b)
        self.calibration_points_ = (P, y_idx, w)

    def transform(self, X):
        """Recalibrated probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Predicted probabilities, in the layout seen by :meth:`fit`.

        Returns
        -------
        ndarray of shape (n_samples, n_features_in_)
            Recalibrated probabilities, clipped to ``[eps, 1 - eps]`` (with
            more than two classes the rows are renormalised after clipping,
            so an entry can end slightly below ``eps``); with ``K >= 2``
            columns the rows sum to one, with one column it is the positive
            class.
        """
        check_is_fitted(self)
        P = self._check_X(X, reset=False)
        K = self.classes_.shape[0]
        if P.shape[1] != K:
            raise ValueError(f"X has {P.shape[1]} classes; {K} were seen in fit.")
        eps = float(self.eps)
        lam = self.shrinkage_
        if self.method_ == "grid":
            q = (1.0 - lam) * self.maps_[0](P[:, 1]) + 0.5 * lam
            q = np.clip(q, eps, 1.0 - eps)
            out = (
                q[:, None]
                if self.n_features_in_ == 1
                else np.column_stack([1.0 - q, q])
            )
            return out
        if self.method_ == "logit":
            Q = _lm.logit_map_proba(self.maps_[0], P)
        elif self.method_ == "classwise":
            Q = np.column_stack([m(P[:, k]) for k, m in enumerate(self.maps_)])
        else:
            F, y_idx, w = self.calibration_points_
            res = dirichlet_nw(F, y_idx, w, P, self.bandwidth_, n_jobs=self.n_jobs)
            Q = _dm.dirichlet_prior_mix(
                res.ratio, res.log_density, P, self.bandwidth_, self._prior
            )
        Q = _sc.finalize_proba((1.0 - lam) * Q + lam / K, eps)
        return Q[:, 1:] if self.n_features_in_ == 1 else Q

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
