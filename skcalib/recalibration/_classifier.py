"""RecalibratedClassifier: a classifier recalibrated on held-out predictions."""

import numbers

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.utils import column_or_1d, get_tags, indexable
from sklearn.utils.metadata_routing import MethodMapping
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .._meta import (
    copy_fitted_attributes,
    default_estimator,
    estimator_router,
    route_fit_params,
)
from .._params import (
    RULES,
    AnyOf,
    Boolean,
    HasMethods,
    NoneOr,
    StrOptions,
    check_estimator_params,
)
from .._validation import check_cv_splits, check_known_labels, check_sample_weight
from ._calibrators import (
    _CalibratedPair,
    _cross_fitted_proba,
    _fit_calibrator,
    _fit_pair,
    _full_proba,
)
from ._kernel import KernelRecalibrator

__all__ = ["RecalibratedClassifier"]

_RULES = {
    "estimator": NoneOr(
        AnyOf(
            HasMethods("fit", "predict_proba"), HasMethods("fit", "decision_function")
        )
    ),
    "calibrator": NoneOr(HasMethods("fit", "transform")),
    "cv": RULES["cv"],
    "ensemble": AnyOf(Boolean(), StrOptions("auto")),
    "n_jobs": RULES["n_jobs"],
    "verbose": RULES["verbose"],
}


class RecalibratedClassifier(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Classifier whose probabilities are recalibrated on held-out predictions.

    The base classifier's ``predict_proba`` on data it was not fitted on is
    used to fit a calibrator (by default :class:`KernelRecalibrator`); the
    calibrated probabilities are the calibrator's transform of the base
    probabilities. The vocabulary is that of
    :class:`sklearn.calibration.CalibratedClassifierCV`, with any calibrator.

    Parameters
    ----------
    estimator : classifier, default=None
        A classifier with ``predict_proba`` or, failing that,
        ``decision_function`` (read as log-odds for a binary problem, logits
        otherwise: the probabilities ``expit(d)`` or ``softmax(d)`` are
        recalibrated, as :class:`~sklearn.svm.SVC` with ``probability=False``
        needs). ``None`` means
        :class:`~sklearn.linear_model.LogisticRegression`. Wrap an already
        fitted model in :class:`sklearn.frozen.FrozenEstimator`: it is not
        refitted, ``cv`` is ignored and the calibrator is fitted on all of the
        data given to :meth:`fit` (which should not be the model's training
        data).
    calibrator : estimator, default=None
        An estimator with ``fit(P, y)`` and ``transform(P)``; ``None`` means
        ``KernelRecalibrator()``. A calibrator whose sklearn tags say it takes
        a single column (``input_tags.two_d_array=False``, e.g.
        :class:`~sklearn.isotonic.IsotonicRegression`, which should then have
        ``out_of_bounds="clip"``) is cloned and fitted once per class on that
        class's probability column against the 0/1 indicator of the class (once,
        on the positive column, for a binary problem); its outputs are then
        clipped to [0, 1] and each row divided by its sum. Any other
        calibrator receives the whole ``(n, K)`` probability matrix and the
        label indices ``0 .. K - 1`` and must return an ``(n, K)`` matrix (or,
        for a binary problem, the positive-class column).
    cv : int, cross-validation generator or iterable, default=None
        How the held-out predictions are made (``None`` means 5-fold
        stratified), as in :func:`sklearn.model_selection.check_cv`.
    ensemble : bool or "auto", default="auto"
        ``True``: one (classifier, calibrator) pair per fold, each calibrator
        fitted on its fold's test part; predictions are their average.
        ``False``: the calibrator is fitted on the out-of-fold predictions
        (as :func:`~sklearn.model_selection.cross_val_predict` makes them;
        the test folds must partition the samples) and applied to one
        classifier refitted on all the data. ``"auto"`` is ``True`` unless the
        estimator is a ``FrozenEstimator``.
    n_jobs : int, default=None
        Folds fitted in parallel (joblib).
    verbose : int, default=0
        ``1`` or more: report each cross-validation fold (and the
        calibrator's fit, for a calibrator with a ``verbose`` parameter at
        ``2`` or more) to stderr.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels: those of ``y``, or for a ``FrozenEstimator`` those of
        the frozen model (``y`` may lack some of them, but a label the model
        was not fitted on raises a ``ValueError``).
    calibrated_classifiers_ : list
        Fitted (classifier, calibrators) pairs: one per fold with
        ``ensemble=True``, else one.
    n_features_in_ : int
        Number of features seen during fit (when the base estimator has it).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names seen during fit (when the base estimator has them).

    See Also
    --------
    KernelRecalibrator : The default calibrator.
    sklearn.calibration.CalibratedClassifierCV : Sigmoid, isotonic and
        temperature calibration.

    Notes
    -----
    ``sample_weight`` is used by the calibrator (when its ``fit`` accepts it)
    and passed to the base estimator's ``fit`` (when it accepts it; with
    metadata routing enabled, when the estimator requested it).

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.naive_bayes import GaussianNB
    >>> from skcalib import KernelRecalibrator, RecalibratedClassifier
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = RecalibratedClassifier(GaussianNB(), calibrator=KernelRecalibrator(),
    ...                              cv=3).fit(X, y)
    >>> clf.predict_proba(X[:2]).sum(axis=1)
    array([1., 1.])
    >>> len(clf.calibrated_classifiers_)
    3
    """

    _parameter_constraints = _RULES

    def __init__(
        self,
        estimator=None,
        *,
        calibrator=None,
        cv=None,
        ensemble="auto",
        n_jobs=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.calibrator = calibrator
        self.cv = cv
        self.ensemble = ensemble
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _get_estimator(self):
        return default_estimator(self.estimator)

    def _get_calibrator(self):
        calibrator = (
            KernelRecalibrator() if self.calibrator is None else self.calibrator
        )
        if self.verbose >= 2 and "verbose" in calibrator.get_params(deep=False):
            calibrator = clone(calibrator).set_params(verbose=self.verbose - 1)
        return calibrator

    def fit(self, X, y, sample_weight=None, **fit_params):
        """Fit the classifier(s) and the calibrator(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data, in any form the base estimator accepts.
        y : array-like of shape (n_samples,)
            Target labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Sample weights (see Notes).
        **fit_params : dict
            Parameters for the base estimator's ``fit`` (routed as requested
            when metadata routing is enabled).

        Returns
        -------
        RecalibratedClassifier
            The fitted estimator (``self``).
        """
        check_estimator_params(self)
        check_classification_targets(y)
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)
        estimator = self._get_estimator()
        calibrator = self._get_calibrator()
        frozen = isinstance(estimator, FrozenEstimator)
        present = np.unique(y)
        if present.shape[0] < 2:
            raise ValueError(
                "RecalibratedClassifier needs samples of at least 2 classes in y; "
                f"got 1 class: {present.tolist()}."
            )
        self.classes_ = (
            check_known_labels(present, getattr(estimator, "classes_", present))
            if frozen
            else present
        )
        y_idx = np.searchsorted(self.classes_, y)
        if sample_weight is not None:
            sample_weight = check_sample_weight(sample_weight, y_idx.shape[0])

        # Without routing, weights the estimator cannot take still serve the
        # calibrator.
        est_params, routed = route_fit_params(
            self, estimator, sample_weight, fit_params, strict=False
        )
        split_params = {} if routed is None else routed.splitter.split

        ensemble = self.ensemble
        if ensemble == "auto":
            ensemble = not frozen
        if frozen:
            P = _full_proba(estimator, X, self.classes_)
            self.calibrated_classifiers_ = [
                _CalibratedPair(
                    estimator,
                    _fit_calibrator(calibrator, P, y_idx, sample_weight),
                    self.classes_,
                )
            ]
        else:
            counts = np.bincount(y_idx)
            if self.cv is None or (
                isinstance(self.cv, numbers.Integral) and not isinstance(self.cv, bool)
            ):
                n_folds = 5 if self.cv is None else self.cv
                if counts.min() < n_folds:
                    raise ValueError(
                        f"cv={self.cv!r}: {n_folds}-fold cross-validation needs at "
                        f"least {n_folds} examples of every class; the rarest has "
                        f"{counts.min()}."
                    )
            splits = check_cv_splits(self.cv, X, y, **split_params)
            n_folds = len(splits)
            if ensemble:
                self.calibrated_classifiers_ = Parallel(n_jobs=self.n_jobs)(
                    delayed(_fit_pair)(
                        clone(estimator),
                        calibrator,
                        X,
                        y,
                        y_idx,
                        train,
                        test,
                        self.classes_,
                        sample_weight,
                        est_params,
                        self.verbose,
                        (i, n_folds),
                    )
                    for i, (train, test) in enumerate(splits)
                )
            else:
                # Fitted here rather than by cross_val_predict, which would
                # route the already routed parameters again and drop those
                # of the splitter (groups).
                P = _cross_fitted_proba(
                    estimator,
                    X,
                    y,
                    splits,
                    self.classes_,
                    est_params,
                    self.n_jobs,
                )
                est = clone(estimator).fit(X, y, **est_params)
                self.calibrated_classifiers_ = [
                    _CalibratedPair(
                        est,
                        _fit_calibrator(calibrator, P, y_idx, sample_weight),
                        self.classes_,
                    )
                ]

        copy_fitted_attributes(
            self,
            self.calibrated_classifiers_[0].estimator,
            ("predict_proba", "decision_function"),
        )
        return self

    def predict_proba(self, X):
        """Recalibrated class probabilities.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, in any form the base estimator accepts.

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            Recalibrated probabilities: rows sum to one; columns follow
            ``classes_``.
        """
        check_is_fitted(self)
        pairs = self.calibrated_classifiers_
        proba = pairs[0].predict_proba(X)
        for pair in pairs[1:]:
            proba += pair.predict_proba(X)
        return proba / len(pairs)

    def predict(self, X):
        """Class of largest recalibrated probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples, in any form the base estimator accepts.

        Returns
        -------
        ndarray of shape (n_samples,)
            The class of largest recalibrated probability for each sample.
        """
        check_is_fitted(self)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def get_metadata_routing(self):
        """Get the metadata routing of this estimator.

        ``sample_weight`` is consumed here (by the calibrator), fit parameters
        are routed to ``estimator`` and split parameters to ``cv``.

        Returns
        -------
        sklearn.utils.metadata_routing.MetadataRouter
            Routing of the fit and split parameters.
        """
        return (
            estimator_router(self, self._get_estimator())
            .add_self_request(self)
            .add(
                splitter=self.cv,
                method_mapping=MethodMapping().add(caller="fit", callee="split"),
            )
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        base_tags = get_tags(self._get_estimator())
        tags.input_tags.sparse = base_tags.input_tags.sparse
        tags.input_tags.allow_nan = base_tags.input_tags.allow_nan
        return tags
