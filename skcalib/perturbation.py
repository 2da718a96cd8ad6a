"""Perturbed classifiers: smooth the calibration function so it can be certified.

Replacing each score ``s0`` by a draw from the truncated hyperbolic-secant kernel
``k(s | s0) ∝ sech((s - s0) / h)`` on [0, 1] makes the calibration function of the
perturbed scores smooth, ``|η'| <= 1 / (2h)`` and ``|η''| <= 3 / (2h²)``, whatever
the base model (Ciosek et al., arXiv 2512.13872). Smoothness is what the
Nadaraya-Watson certificate of :func:`skcalib.metrics.calibration_error_bound`
needs, and a small ``h`` costs little discrimination (AUROC).

The noise is drawn in double precision from 64 random bits, and every perturbed
score is then rounded to the fixed grid ``G = {k / 2**24}``: draws around all
base scores share that one support, so a perturbed score does not reveal the
base score it came from (which would leave nothing smoothed for a discrete
base model such as a tree). :func:`perturb_proba` perturbs probabilities
computed elsewhere; :class:`PerturbedClassifier` wraps a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.utils import _safe_indexing, get_tags, indexable
from sklearn.utils.validation import _num_samples, check_is_fitted

from ._backend.progress import Progress
from ._backend.sech import perturbation as _backend
from ._backend.user_warning import record_warnings, warn_once_each
from ._docstrings import fill_doc
from ._meta import (
    align_proba_columns,
    copy_fitted_attributes,
    default_estimator,
    estimator_router,
    route_fit_params,
)
from ._params import (
    RULES,
    InvalidParameterError,
    check_estimator_params,
    check_param,
    check_random_generator,
    validate_params,
)
from ._validation import (
    check_cv_splits,
    check_estimator_proba,
    check_probability_array,
    proba_tolerances,
    row_sum_error,
)

__all__ = [
    "PerturbedClassifier",
    "PerturbationScaleResult",
    "perturb_proba",
    "select_perturbation_scale",
]

DEFAULT_SCALE = 2.0**-6


# The sampler's threads, shared by the function and the estimator.
_SAMPLER_N_JOBS = """\
n_jobs : int, default=None
    Threads that draw the noise and add it, the calling one included
    (``-1``: all usable CPUs). ``None`` takes the ``n_jobs`` of an
    active ``joblib.parallel_config`` (or ``parallel_backend``) if it
    sets one, else up to four threads, no more than the usable CPUs and
    than any native thread pool is allowed
    (``threadpoolctl.threadpool_limits``, ``OMP_NUM_THREADS``). With one
    thread everything is drawn in the calling thread. The output does not
    depend on it."""


@validate_params()
@fill_doc(n_jobs=_SAMPLER_N_JOBS)
def perturb_proba(y_proba, *, scale=DEFAULT_SCALE, random_state=None, n_jobs=None):
    """Perturb predicted probabilities with the truncated sech kernel.

    The perturbation of :class:`PerturbedClassifier`, for probabilities that
    come from elsewhere (a model outside scikit-learn, an LLM judge, a stored
    table of predictions). Each score ``s0`` is replaced by an independent draw
    from the truncated hyperbolic-secant kernel ``k(s | s0) ∝ sech((s - s0) /
    h)`` on [0, 1], ``h = scale``, rounded to the grid ``G = {k / 2**24}``. The
    calibration function of the perturbed scores is then smooth, ``|η'| <=
    1/(2h)`` and ``|η''| <= 3/(2h²)``, whatever produced the base scores, and
    ``calibration_error_bound(y_true, perturbed, method="nw",
    perturbation_scale=h)`` certifies their calibration error.

    Read more in the :ref:`User Guide <certified>`.

    Parameters
    ----------
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Base probabilities in [0, 1]. A 1-D array (or a single column) is the
        probability of the positive class; rows of a matrix sum to one. Not
        modified.
    scale : float, default=2**-6
        Kernel scale ``h`` in [2**-16, 1]; see :func:`select_perturbation_scale`.
    random_state : int, numpy Generator, RandomState or None, default=None
        Source of the noise. An int gives the same draws at every call, and
        the draws :class:`PerturbedClassifier` with the same ``random_state``
        makes for the same probabilities; ``None`` gives fresh noise; a
        Generator is advanced.
    ${n_jobs}

    Returns
    -------
    ndarray of the shape of ``y_proba``
        A new float64 array. Binary (1-D or two columns): the positive-class
        probability is perturbed and lies on ``G``, and the complement ``1 -
        s`` (exact on ``G`` too) is the first column. Three or more columns:
        the top-label confidence (the row maximum) is perturbed on ``[1/K,
        1]`` and lies on ``G`` above ``1/K``; the other classes share the rest
        in proportion to their base probabilities, moved towards an even split
        only as far as needed to keep the predicted class the unique maximum.

    See Also
    --------
    PerturbedClassifier : The same perturbation around a fitted classifier.
    skcalib.metrics.calibration_error_bound : Certified bound on the
        calibration error of the perturbed scores.

    Notes
    -----
    The noise is drawn in double precision from 64 random bits per proposal
    (exact rejection sampling, the closed-form inverse distribution function
    for small inputs and large scales), and the draw is then rounded to ``G``:
    draws around different base scores share that support, so a perturbed
    score does not reveal the base score it came from. The 64-bit proposals
    cut the kernel's tails beyond ``44.4 h``, an event of probability at most
    ``2**-62`` per draw: a certificate at level ``delta`` on ``n`` perturbed
    scores holds at level ``delta + n 2**-62``.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.perturbation import perturb_proba
    >>> p = np.array([0.1, 0.5, 0.5, 0.9])
    >>> s = perturb_proba(p, scale=2**-6, random_state=0)
    >>> s
    array([0.10696143, 0.48756194, 0.45715839, 0.84293795])
    >>> bool(np.all(s * 2**24 == np.round(s * 2**24)))  # on the grid k / 2**24
    True
    >>> perturb_proba([[0.7, 0.2, 0.1]], scale=2**-4, random_state=0)
    array([[0.72718436, 0.1818771 , 0.09093855]])
    """
    y = check_probability_array(y_proba, name="y_proba")
    rng = check_random_generator(random_state)
    out = _backend.perturb_proba(y, scale, rng, n_jobs=n_jobs)
    # A single column was read as the positive-class probability.
    return out.reshape(np.shape(y_proba)) if out.ndim != np.ndim(y_proba) else out


@fill_doc(n_jobs=_SAMPLER_N_JOBS)
class PerturbedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Classifier whose probabilities are randomly perturbed by a sech kernel.

    The base estimator is fitted as usual; at prediction time each predicted
    probability is replaced by an independent draw from the truncated
    hyperbolic-secant kernel ``k(s | s0) = sech((s - s0) / h) / Z(s0, h)`` on
    [0, 1] centred at the base probability ``s0``, with ``h = scale``. The noise
    depends on neither the features nor the labels, so the calibration function
    of the perturbed scores is smooth (``|η'| <= 1/(2h)``, ``|η''| <= 3/(2h²)``)
    and its calibration error can be certified with
    ``calibration_error_bound(..., method="nw", perturbation_scale=h)`` or the
    ``"neg_calibration_error_bound"`` scorer.

    Read more in the :ref:`User Guide <certified>`.

    Parameters
    ----------
    estimator : classifier, default=None
        A classifier with ``predict_proba``. It is cloned and fitted in
        :meth:`fit`, unless it is a :class:`sklearn.frozen.FrozenEstimator`,
        which is used as is (the way to wrap an already fitted model).
        ``None`` means :class:`~sklearn.linear_model.LogisticRegression`.
    scale : float, default=2**-6
        Kernel scale ``h`` in [2**-16, 1]. Larger scales give tighter certificates
        and lower AUROC; :func:`select_perturbation_scale` picks the largest
        scale whose cross-validated AUROC loss stays within a tolerance.
    random_state : int, numpy Generator, RandomState or None, default=None
        Source of the noise. An int gives the same perturbed probabilities each
        time the same ``X`` is passed (the draw for a row depends on its position
        in ``X``); ``None`` gives fresh noise at every call; a Generator is
        advanced by each call.
    ${n_jobs}

    Attributes
    ----------
    estimator_ : classifier
        The fitted base estimator (the ``FrozenEstimator`` itself if one was
        given).
    classes_ : ndarray of shape (n_classes,)
        Class labels, those of ``estimator_``.
    scale_ : float
        The perturbation scale at fit time (what the certified-bound scorer
        reads).
    n_features_in_ : int
        Number of features seen during fit (from ``estimator_``, when it has it).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names seen during fit (from ``estimator_``, when it has them).

    See Also
    --------
    perturb_proba : The same perturbation of probabilities computed elsewhere.
    select_perturbation_scale : Choose ``scale`` by cross-validation.
    skcalib.metrics.calibration_error_bound : Certified bound on the calibration
        error.

    Notes
    -----
    Binary problems perturb the positive-class probability; this is the setting
    of the certificate. With three or more classes the **top-label confidence**
    is perturbed instead (an skcalib extension): confidence calibration, ``P(y =
    predicted class | confidence)``, is itself a binary problem, and perturbing the
    confidence with the sech kernel truncated to ``[1/K, 1]`` (its possible range)
    keeps the same smoothness bounds. The remaining mass is shared by the other
    classes in proportion to their base probabilities, moved towards an even
    split only when needed to keep the predicted class on top, so that the
    predicted class and its confidence are those of the certificate.

    :meth:`predict` returns the class of largest perturbed probability, so it
    agrees with :meth:`predict_proba` (in the binary case it may differ from the
    base prediction for scores near one half).

    The estimator is tagged ``non_deterministic``: even with a fixed seed the
    noise added to a row depends on its position in ``X``, so predictions are
    not invariant to reordering or sub-setting the rows.

    The noise does not depend on ``X``: on large inputs it is drawn in a
    background thread while the base estimator predicts, by fixed blocks of
    rows each reading its own fixed part of the random stream, and then added
    by up to ``n_jobs`` threads. The output depends neither on the number of
    threads nor on whether numba (the ``fast`` extra, which compiles the inner
    loops) is installed. The output is always a new array (column-major in the
    binary case, allocated in the background thread too); the base estimator's
    output is never written to.

    The noise is drawn in double precision (64 random bits per proposal) and
    each perturbed score (the positive-class probability, or the top-label
    confidence) is rounded to the grid ``G = {k / 2**24}``, so that scores
    drawn around different base scores share one support and a perturbed
    score does not reveal its base score; the certified bounds account for the
    grid with a discretisation term of ``2 L1 2**-24``, ``L1 = 1 / (2h)``.
    :func:`perturb_proba` applies the same perturbation (the same draws for the
    same seed) to probabilities computed elsewhere.

    References
    ----------
    K. Ciosek et al., "Measuring Uncertainty Calibration", ICLR 2026,
    arXiv:2512.13872.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skcalib import PerturbedClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> base = make_pipeline(StandardScaler(), LogisticRegression())
    >>> clf = PerturbedClassifier(base, scale=2**-6, random_state=0).fit(X, y)
    >>> proba = clf.predict_proba(X[:3])
    >>> proba.shape
    (3, 2)
    >>> bool((proba == clf.predict_proba(X[:3])).all())  # same seed, same output
    True
    >>> bool((clf.predict(X[:3]) == clf.classes_[proba.argmax(axis=1)]).all())
    True
    """

    _parameter_constraints = {
        "estimator": RULES["estimator"],
        "scale": RULES["scale"],
        "random_state": RULES["random_state"],
        "n_jobs": RULES["n_jobs"],
    }

    def __init__(
        self, estimator=None, *, scale=DEFAULT_SCALE, random_state=None, n_jobs=None
    ):
        self.estimator = estimator
        self.scale = scale
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _get_estimator(self):
        return default_estimator(self.estimator)

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the base estimator.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, in any form the base estimator accepts.
        y : array-like of shape (n_samples,)
            Target labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights, passed to the base estimator's ``fit`` (through
            metadata routing when it is enabled).
        **fit_params : dict
            Other parameters for the base estimator's ``fit``; with metadata
            routing enabled they are routed as the base estimator requests.

        Returns
        -------
        PerturbedClassifier
            The fitted estimator (``self``).
        """
        check_estimator_params(self)
        estimator = self._get_estimator()
        frozen = isinstance(estimator, FrozenEstimator)
        # A frozen model is not fitted again, so its weights have no use.
        base_params, _ = route_fit_params(
            self, estimator, sample_weight, fit_params, strict=not frozen
        )

        if frozen:
            check_is_fitted(estimator)
            self.estimator_ = estimator
        else:
            X, y = indexable(X, y)
            self.estimator_ = clone(estimator).fit(X, y, **base_params)

        copy_fitted_attributes(self, self.estimator_)
        self.classes_ = self.estimator_.classes_
        # The scale the scores are perturbed at: how scorers and displays
        # recognise perturbed scores (and certify them with the NW bound).
        self.scale_ = float(self.scale)
        return self

    def predict_proba(self, X):
        """Perturbed class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, in any form the base estimator accepts.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Perturbed probabilities: rows sum to one; columns follow
            ``classes_``.

        Raises
        ------
        ValueError
            If the base estimator's ``predict_proba`` returns an array whose
            shape is not ``(n_samples, n_classes)``, values outside [0, 1]
            (beyond a tolerance of 1e-8, within which they are clipped), NaN,
            or rows that do not sum to one (within 1e-5); the tolerances
            widen to the precision of a float16 or float32 output.
        """
        if not hasattr(self, "estimator_"):
            # Only then: check_is_fitted reads the wrapped model's tags, which
            # costs more than the rest of the set-up.
            check_is_fitted(self)
        # The fitted scale: the one scale_ tells the bound scorer.
        scale = self.scale_
        rng = check_random_generator(self.random_state)
        n_jobs = self.n_jobs
        # The noise does not depend on X: it is drawn while the base estimator
        # predicts (the draws are the same as after it).
        n_samples, n_classes = _num_samples(X), len(self.classes_)
        noise = _backend.perturbation_noise_async(
            n_samples, n_classes, scale, rng, n_jobs=n_jobs
        )
        raw = self.estimator_.predict_proba(X)
        noise = noise.result()
        # Shape and range here, naming the base estimator; the row sums in
        # the pass that perturbs (values within the tolerance are clipped).
        proba = check_estimator_proba(raw, self.estimator_, n_samples, row_sums=False)
        sum_tol = proba_tolerances(raw, n_classes)[1]
        # Written into a buffer of our own (the noise's), never into the base
        # estimator's output, which it may still hold.
        try:
            return _backend.perturb_proba(
                proba,
                scale,
                rng,
                noise=noise,
                row_sum_tol=sum_tol,
                n_jobs=n_jobs,
            )
        except _backend.RowSumError:
            raise row_sum_error(proba, self.estimator_, sum_tol) from None

    def predict(self, X):
        """Class of largest perturbed probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, in any form the base estimator accepts.

        Returns
        -------
        ndarray of shape (n_samples,)
            The class of largest perturbed probability for each sample.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def get_metadata_routing(self):
        """Metadata routing of this estimator: fit parameters go to ``estimator``.

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRouter
            Routing of the fit parameters to ``estimator``.
        """
        return estimator_router(self, self._get_estimator())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base_tags = get_tags(self._get_estimator())
        tags.input_tags = base_tags.input_tags
        tags.non_deterministic = True
        return tags


# ---------------------------------------------------------------------------
# Choosing the scale
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PerturbationScaleResult:
    """Cross-validated score and certified bound over a grid of perturbation scales.

    Returned by :func:`select_perturbation_scale`; every field is a plain
    number or numpy array, so it can be plotted or tabulated directly.

    Parameters
    ----------
    scales : ndarray of shape (n_scales,)
        Perturbation scales, increasing.
    scores : ndarray of shape (n_scales, n_folds)
        Score (greater is better) of the perturbed model on each test fold.
    base_scores : ndarray of shape (n_folds,)
        Score of the unperturbed base model on each test fold.
    scoring : str
        Name (or repr) of the scorer; ``"score"`` for the estimator's
        ``score`` method.
    tolerance : float
        Largest accepted loss ``base_score_mean - score_mean``.
    recommended_scale : float
        Largest scale whose mean loss is within ``tolerance`` (the smallest
        scale, with ``within_tolerance`` all False, if none is).
    bound_method : str or None, default=None
        Method of the certified bounds (``None`` if they were not computed).
    delta : float, default=0.05
        Failure probability of each certified bound.
    bound_upper : ndarray of shape (n_scales,) or None, default=None
        Certified upper bound on the calibration error of the pooled
        out-of-fold perturbed scores, for each scale.
    bound_estimate : ndarray of shape (n_scales,) or None, default=None
        Point estimate of the same calibration error, for each scale.
    base_bound_upper : float or None, default=None
        Certified upper bound for the unperturbed out-of-fold scores, by the
        total-variation bound under the monotone assumption
        (``method="tv"``), which needs no perturbation; for comparison.
    base_bound_estimate : float or None, default=None
        Point estimate of the same for the unperturbed scores.
    n_samples : int, default=0
        Number of samples the bounds use.
    bounds : tuple of CalibrationBound, default=()
        The full certified bound of each scale (empty if not computed).

    Attributes
    ----------
    score_mean : ndarray of shape (n_scales,)
        Mean over folds of the perturbed score, per scale.
    score_std : ndarray of shape (n_scales,)
        Standard deviation over folds of the perturbed score, per scale.
    base_score_mean : float
        Mean over folds of the unperturbed score.
    base_score_std : float
        Standard deviation over folds of the unperturbed score.
    score_loss : ndarray of shape (n_scales,)
        ``base_score_mean - score_mean`` per scale (positive = worse).
    within_tolerance : ndarray of shape (n_scales,)
        Whether each scale's mean loss is at most ``tolerance``.
    recommended_index : int
        Index of ``recommended_scale`` in ``scales``.
    """

    scales: np.ndarray
    scores: np.ndarray
    base_scores: np.ndarray
    scoring: str
    tolerance: float
    recommended_scale: float
    bound_method: str | None = None
    delta: float = 0.05
    bound_upper: np.ndarray | None = None
    bound_estimate: np.ndarray | None = None
    base_bound_upper: float | None = None
    base_bound_estimate: float | None = None
    n_samples: int = 0
    bounds: tuple = field(default=(), repr=False)

    @property
    def score_mean(self):
        """Mean over folds of the perturbed score, per scale."""
        return self.scores.mean(axis=1)

    @property
    def score_std(self):
        """Standard deviation over folds of the perturbed score, per scale."""
        return self.scores.std(axis=1)

    @property
    def base_score_mean(self):
        """Mean over folds of the unperturbed score."""
        return float(self.base_scores.mean())

    @property
    def base_score_std(self):
        """Standard deviation over folds of the unperturbed score."""
        return float(self.base_scores.std())

    @property
    def score_loss(self):
        """``base_score_mean - score_mean`` per scale (positive = worse)."""
        return self.base_score_mean - self.score_mean

    @property
    def within_tolerance(self):
        """Whether each scale's mean loss is at most ``tolerance``."""
        return self.score_loss <= self.tolerance

    @property
    def recommended_index(self):
        """Index of ``recommended_scale`` in ``scales``."""
        return int(np.flatnonzero(self.scales == self.recommended_scale)[0])


def _base_of(estimator):
    """The model to perturb (a PerturbedClassifier is unwrapped)."""
    if isinstance(estimator, PerturbedClassifier):
        estimator = estimator._get_estimator()
    return LogisticRegression() if estimator is None else estimator


def _check_scales(scales):
    """The candidate scales, each checked against the rule of ``scale``."""
    owner = "select_perturbation_scale() (each of its entries)"
    values = np.ravel(np.asarray(scales, dtype=object))
    if values.size == 0:
        raise InvalidParameterError(
            "The 'scales' parameter of select_perturbation_scale() must hold at "
            "least one scale."
        )
    for value in values:
        check_param("scales", value, RULES["scale"], owner)
    return np.unique(values.astype(np.float64))


def _passthrough_scorer(estimator):
    from sklearn.metrics import check_scoring

    return check_scoring(estimator, scoring=None)


def _scoring_name(scoring, scorer):
    if scoring is None:
        return "score"
    return scoring if isinstance(scoring, str) else repr(scorer)


class _KnownProba(FrozenEstimator):
    """A frozen classifier whose ``predict_proba`` of one ``X`` is already known.

    Every scale perturbs the same held-out base probabilities: the base model
    predicts them once instead of once per scale and per scorer call.
    """

    def __init__(self, estimator, X=None, proba=None):
        super().__init__(estimator)
        self.X = X
        self.proba = proba

    def predict_proba(self, X):
        if X is self.X:
            return self.proba.copy()
        return self.estimator.predict_proba(X)


def _fold_scores(base, X, y, train, test, scales, scorer, seed):
    X_train, y_train = _safe_indexing(X, train), _safe_indexing(y, train)
    X_test, y_test = _safe_indexing(X, test), _safe_indexing(y, test)
    frozen = FrozenEstimator(clone(base).fit(X_train, y_train))
    base_proba = frozen.predict_proba(X_test)
    known = _KnownProba(frozen, X_test, base_proba)
    base_score = scorer(known, X_test, y_test)
    scores, probas = [], []
    for scale in scales:
        # One seed for every scale: the draws are coupled through the same
        # uniforms, so differences between scales are not blurred by noise.
        clf = PerturbedClassifier(known, scale=scale, random_state=seed)
        clf.fit(X_train, y_train)
        scores.append(scorer(clf, X_test, y_test))
        probas.append(clf.predict_proba(X_test))
    return base_score, base_proba, scores, probas, frozen.classes_


@validate_params()
def select_perturbation_scale(
    estimator,
    X,
    y,
    *,
    scales=None,
    scoring="roc_auc",
    tolerance=0.01,
    cv=5,
    groups=None,
    bound_method="nw",
    delta=0.05,
    random_state=None,
    n_jobs=None,
    verbose=0,
):
    """Choose the perturbation scale: the largest one that costs little score.

    For each cross-validation split the base model is fitted once; its
    held-out probabilities are perturbed at every scale (with the same
    underlying uniforms, so the scales are compared on coupled draws) and
    scored. The recommended scale is the largest whose mean score loss against
    the unperturbed model is at most ``tolerance`` (Ciosek et al.: a larger
    scale gives a tighter certificate). The certified bound of the pooled
    out-of-fold perturbed scores is reported for each scale, to show what the
    loss buys.

    Parameters
    ----------
    estimator : classifier or PerturbedClassifier
        The base model (cloned and fitted per split). A
        :class:`PerturbedClassifier` is unwrapped to its base estimator;
        ``None`` means :class:`~sklearn.linear_model.LogisticRegression`.
    X : array-like of shape (n_samples, n_features)
        Data, in any form the estimator accepts.
    y : array-like of shape (n_samples,)
        Labels.
    scales : array-like of float in [2**-16, 1], default=None
        Candidate scales; ``None`` means ``2.0 ** -np.arange(3, 10)``
        (1/8 down to 1/512). Sorted increasingly in the result.
    scoring : str, callable or None, default="roc_auc"
        Score to preserve (greater is better), any name accepted by
        :func:`skcalib.metrics.get_scorer` or a scorer callable; ``None`` is
        the estimator's ``score`` method (accuracy for a classifier), as in
        :func:`sklearn.model_selection.cross_validate`.
        ``"roc_auc"`` with more than two classes in ``y`` is the one-vs-rest
        AUROC, ``"roc_auc_ovr"``.
    tolerance : float, default=0.01
        Largest accepted mean loss of score, in the scorer's units.
    cv : int, cross-validation generator or iterable, default=5
        As in :func:`sklearn.model_selection.cross_validate` (stratified
        K-fold for an int).
    groups : array-like of shape (n_samples,), default=None
        Group labels for a group-aware ``cv`` splitter.
    bound_method : {"nw", "lipschitz", "tv"} or None, default="nw"
        Certified bound reported for each scale
        (see :func:`skcalib.metrics.calibration_error_bound`); ``None`` skips
        the bounds.
    delta : float, default=0.05
        Failure probability of each bound.
    random_state : int, numpy Generator, RandomState or None, default=None
        Seeds the perturbation noise and the bounds' randomness.
    n_jobs : int, default=None
        Splits evaluated in parallel with :class:`joblib.Parallel`.
    verbose : int, default=0
        Report progress (splits, then bounds) on stderr when positive.

    Returns
    -------
    PerturbationScaleResult
        Cross-validated scores and certified bounds of every scale, and the
        recommended scale.

    Notes
    -----
    The bounds use the out-of-fold predictions of all splits together, so
    they certify the cross-fitted predictor and are only a guide to the
    bound a model fitted on all the data will get on fresh data.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skcalib import select_perturbation_scale
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = make_pipeline(StandardScaler(), LogisticRegression())
    >>> result = select_perturbation_scale(model, X, y, scales=[2**-8, 2**-6, 2**-3],
    ...                                    bound_method=None, random_state=0)
    >>> result.scales
    array([0.00390625, 0.015625  , 0.125     ])
    >>> bool(result.within_tolerance[0])
    True
    >>> result.recommended_scale in result.scales
    True
    """
    from .metrics import calibration_error_bound, get_scorer

    scales = _check_scales(2.0 ** -np.arange(3, 10) if scales is None else scales)
    rng = check_random_generator(random_state)
    base = _base_of(estimator)
    X, y = indexable(X, y)
    y = np.asarray(y)
    if isinstance(scoring, str) and scoring == "roc_auc" and np.unique(y).size > 2:
        scoring = "roc_auc_ovr"
    # None is the estimator's own score method (accuracy for a classifier),
    # as in scikit-learn's model selection.
    scorer = get_scorer(scoring) if scoring is not None else _passthrough_scorer(base)
    splits = check_cv_splits(cv, X, y, groups)
    seeds = rng.integers(0, 2**32 - 1, size=len(splits))

    # The base model's own warnings (e.g. scikit-learn's feature-name one)
    # would otherwise repeat once per split.
    with Progress("cross-validation splits", len(splits), verbose) as progress:
        recorded = list(
            progress.track(
                Parallel(n_jobs=n_jobs, return_as="generator")(
                    delayed(record_warnings)(
                        _fold_scores, base, X, y, train, test, scales, scorer, seed
                    )
                    for (train, test), seed in zip(splits, seeds, strict=True)
                )
            )
        )
    warn_once_each([w for _, records in recorded for w in records])
    folds = [result for result, _ in recorded]
    base_scores = np.array([f[0] for f in folds], dtype=np.float64)
    scores = np.array([f[2] for f in folds], dtype=np.float64).T
    if not (np.isfinite(base_scores).all() and np.isfinite(scores).all()):
        # Otherwise every scale would fail the tolerance and the smallest
        # would be recommended, for no reason the result would show.
        raise ValueError(
            f"scoring={scoring!r} gave a non-finite score on some fold (e.g. "
            "AUROC on a test fold holding one class); use folds that hold "
            "every class, or another scoring."
        )
    loss = base_scores.mean() - scores.mean(axis=1)
    ok = np.flatnonzero(loss <= tolerance)
    recommended = float(scales[ok[-1]] if ok.size else scales[0])
    result = dict(
        scales=scales,
        scores=scores,
        base_scores=base_scores,
        scoring=_scoring_name(scoring, scorer),
        tolerance=tolerance,
        recommended_scale=recommended,
        bound_method=bound_method,
        delta=delta,
        n_samples=int(sum(test.size for _, test in splits)),
    )
    if bound_method is None:
        return PerturbationScaleResult(**result)

    classes = np.unique(y)
    test_idx = np.concatenate([test for _, test in splits])
    y_oof = y[test_idx]

    def pooled(k):
        # Columns of each split's model follow its own classes_; align them.
        return np.concatenate(
            [
                align_proba_columns(f[1] if k is None else f[3][k], f[4], classes)
                for f in folds
            ]
        )

    bound_seed = int(rng.integers(0, 2**32 - 1))
    with Progress("bounds", len(scales) + 1, verbose) as progress:
        bounds = list(
            progress.track(
                Parallel(n_jobs=n_jobs, return_as="generator")(
                    delayed(calibration_error_bound)(
                        y_oof,
                        pooled(k),
                        labels=classes,
                        method=bound_method,
                        perturbation_scale=scale if bound_method != "tv" else None,
                        delta=delta,
                        random_state=bound_seed,
                        return_details=True,
                    )
                    for k, scale in enumerate(scales)
                )
            )
        )
        base_bound = calibration_error_bound(
            y_oof,
            pooled(None),
            labels=classes,
            method="tv",
            delta=delta,
            random_state=bound_seed,
            return_details=True,
        )
        progress.advance()
    result.update(
        bound_upper=np.array([b.upper for b in bounds]),
        bound_estimate=np.array([b.estimate for b in bounds]),
        base_bound_upper=float(base_bound.upper),
        base_bound_estimate=float(base_bound.estimate),
        bounds=tuple(bounds),
    )
    return PerturbationScaleResult(**result)
