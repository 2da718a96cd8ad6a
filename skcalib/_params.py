"""Parameter rules, declared once, in scikit-learn's vocabulary.

Every public function, method and estimator of skcalib declares the rule of
each of its parameters here: a parameter name has one rule (``RULES``) and one
message, whichever function takes it, and a broken rule raises
:class:`InvalidParameterError` (a ``ValueError`` and a ``TypeError``, as
scikit-learn's). A function may narrow a rule for itself (its own options of
``method``, say) by passing the rule to :func:`validate_params`; an estimator
lists its rules in ``_parameter_constraints`` and checks them in ``fit`` with
:func:`check_estimator_params`. Array arguments (``y_true``, ``y_proba``, ...) are only
declared array-like here; :mod:`skcalib._validation` turns them into
canonical arrays.

The helpers at the end turn a checked parameter into what the numerics use
(a ``random_state`` into a Generator, ``n_bins="cbrt"`` into a count).
"""

from __future__ import annotations

import functools
import inspect
import numbers
from collections.abc import Mapping

import numpy as np

__all__ = [
    "RULES",
    "AnyOf",
    "ArrayLike",
    "Axes",
    "Boolean",
    "Dict",
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "IsCallable",
    "Label",
    "ListOf",
    "NoneOr",
    "Options",
    "RandomState",
    "StrOptions",
    "String",
    "check_binned_options",
    "check_estimator_params",
    "check_kde_debias",
    "check_n_bins",
    "check_param",
    "check_params",
    "check_random_generator",
    "check_seed_sequence",
    "check_sigma",
    "validate_params",
]


class InvalidParameterError(ValueError, TypeError):
    """A parameter breaks its rule (both a ``ValueError`` and a ``TypeError``,
    as scikit-learn's error of the same name)."""


def _fmt(x):
    # Powers of two (the library's scales) read better as such.
    if x > 0:
        e = np.log2(x)
        if e == int(e) and abs(e) >= 4:
            return f"2**{int(e)}"
    return f"{x:g}"


class Interval:
    """A real or integer number in an interval.

    Parameters
    ----------
    kind : {numbers.Integral, numbers.Real}
    low, high : float or None
        Ends (``None``: unbounded).
    closed : {"both", "left", "right", "neither"}, default="both"
    """

    def __init__(self, kind, low, high, *, closed="both"):
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def accepts(self, value):
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        if self.kind is numbers.Real and not np.isfinite(value):
            return False
        low_ok = self.low is None or (
            value >= self.low if self.closed in ("both", "left") else value > self.low
        )
        high_ok = self.high is None or (
            value <= self.high
            if self.closed in ("both", "right")
            else value < self.high
        )
        return low_ok and high_ok

    def __str__(self):
        what = "an int" if self.kind is numbers.Integral else "a finite real number"
        if self.low is None and self.high is None:
            return what
        if self.high is None:
            op = ">=" if self.closed in ("both", "left") else ">"
            return f"{what} {op} {_fmt(self.low)}"
        if self.low is None:
            op = "<=" if self.closed in ("both", "right") else "<"
            return f"{what} {op} {_fmt(self.high)}"
        left = "[" if self.closed in ("both", "left") else "("
        right = "]" if self.closed in ("both", "right") else ")"
        return f"{what} in {left}{_fmt(self.low)}, {_fmt(self.high)}{right}"


class StrOptions:
    """One of a set of strings."""

    def __init__(self, *options):
        self.options = options

    def accepts(self, value):
        return isinstance(value, str) and value in self.options

    def __str__(self):
        return "one of " + ", ".join(repr(o) for o in self.options)


class Options:
    """One of a set of values of a given type (e.g. ``{1, 2}`` for ``p``)."""

    def __init__(self, kind, *options):
        self.kind, self.options = kind, options

    def accepts(self, value):
        return (
            not isinstance(value, bool)
            and isinstance(value, self.kind)
            and value in self.options
        )

    def __str__(self):
        return "one of " + ", ".join(repr(o) for o in self.options)


class Boolean:
    """``True`` or ``False`` (numpy booleans included), nothing else."""

    def accepts(self, value):
        return isinstance(value, (bool, np.bool_))

    def __str__(self):
        return "a bool (True or False)"


class RandomState:
    """``None``, a non-negative int, a Generator or a RandomState."""

    def accepts(self, value):
        if value is None or isinstance(
            value, (np.random.Generator, np.random.RandomState)
        ):
            return True
        return (
            isinstance(value, numbers.Integral)
            and not isinstance(value, bool)
            and value >= 0
        )

    def __str__(self):
        return "None, an int >= 0, a numpy Generator or a numpy RandomState"


class NoneOr:
    """``None`` or a value accepted by ``rule``."""

    def __init__(self, rule):
        self.rule = rule

    def accepts(self, value):
        return value is None or self.rule.accepts(value)

    def __str__(self):
        return f"None or {self.rule}"


class AnyOf:
    """A value accepted by one of ``rules`` (scikit-learn's list of constraints)."""

    def __init__(self, *rules):
        self.rules = rules

    def accepts(self, value):
        return any(rule.accepts(value) for rule in self.rules)

    def __str__(self):
        return " or ".join(str(rule) for rule in self.rules)


class Dict:
    """A dict (any mapping), e.g. keywords forwarded to matplotlib."""

    def accepts(self, value):
        return isinstance(value, Mapping)

    def __str__(self):
        return "a dict"


class ListOf:
    """A non-empty list or tuple whose every item ``rule`` accepts."""

    def __init__(self, rule):
        self.rule = rule

    def accepts(self, value):
        return (
            isinstance(value, (list, tuple))
            and len(value) > 0
            and all(self.rule.accepts(v) for v in value)
        )

    def __str__(self):
        return f"a non-empty list, each item {self.rule}"


class Axes:
    """A matplotlib Axes, or an array or list of them (checked by duck typing,
    so that this module does not import matplotlib)."""

    def accepts(self, value):
        if hasattr(value, "plot") and hasattr(value, "figure"):
            return True
        if isinstance(value, (list, tuple, np.ndarray)):
            items = list(np.ravel(np.asarray(value, dtype=object)))
            return len(items) > 0 and all(
                hasattr(a, "plot") and hasattr(a, "figure") for a in items
            )
        return False

    def __str__(self):
        return "a matplotlib Axes or an array of Axes"


class ArrayLike:
    """An array-like: a list, tuple, array, series, frame or tensor (anything
    with a length, a shape or ``__array__``), not a scalar nor a string.

    Only the kind of object is declared here; its values are checked where
    the array is parsed (:mod:`skcalib._validation`), as scikit-learn's
    ``"array-like"`` constraint leaves them to ``check_array``.
    """

    def accepts(self, value):
        if isinstance(value, (str, bytes)) or np.isscalar(value):
            return False
        return (
            hasattr(value, "__len__")
            or hasattr(value, "shape")
            or hasattr(value, "__array__")
        )

    def __str__(self):
        return "an array-like"


class String:
    """Any string."""

    def accepts(self, value):
        return isinstance(value, str)

    def __str__(self):
        return "a str"


class IsCallable:
    """A callable (a function, or an object with ``__call__``)."""

    def accepts(self, value):
        return callable(value)

    def __str__(self):
        return "a callable"


class HasMethods:
    """An object with every one of ``methods`` (an estimator, by duck typing)."""

    def __init__(self, *methods):
        self.methods = methods

    def accepts(self, value):
        return all(callable(getattr(value, m, None)) for m in self.methods)

    def __str__(self):
        return "an object with methods " + " and ".join(self.methods)


class Label:
    """One class label: a number, a bool or a string."""

    def accepts(self, value):
        return isinstance(value, (numbers.Number, str, bytes, np.generic))

    def __str__(self):
        return "a single label (a number, a bool or a str)"


class _InstanceOf:
    """An instance of the skcalib class named ``class_name`` (or of a subclass).

    The class is named rather than imported: this module sits below the
    modules that define the library's classes.
    """

    def __init__(self, class_name):
        self.class_name = class_name

    def accepts(self, value):
        return any(c.__name__ == self.class_name for c in type(value).__mro__)

    def __str__(self):
        return f"a {self.class_name}"


class _CV:
    """scikit-learn's ``cv``: an int >= 2 (folds), a splitter or an iterable
    of ``(train, test)`` index pairs."""

    def accepts(self, value):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return value >= 2
        if HasMethods("split", "get_n_splits").accepts(value):
            return True
        return hasattr(value, "__iter__") and not isinstance(value, (str, Mapping))

    def __str__(self):
        return "an int >= 2, a cross-validation splitter or an iterable of splits"


class _NJobs:
    def accepts(self, value):
        return value is None or (
            isinstance(value, numbers.Integral)
            and not isinstance(value, bool)
            and value != 0
            and abs(value) < 2**31
        )

    def __str__(self):
        return "None or a nonzero int with |n_jobs| < 2**31"


class _Window:
    """The length of a monitor's time windows: None, a ``timedelta``, a
    ``numpy.timedelta64`` or a string such as ``"1D"`` (its format and sign
    are checked where it is parsed)."""

    def accepts(self, value):
        import datetime

        return value is None or isinstance(
            value, (str, datetime.timedelta, np.timedelta64)
        )

    def __str__(self):
        return "None, a timedelta or a string such as '1D', '7D', '1h', '15min'"


class _Key:
    """A window key: one scalar (number, string, date, timestamp) or an
    array-like of one per sample."""

    def accepts(self, value):
        import datetime

        return isinstance(
            value, (numbers.Number, str, bytes, np.generic, datetime.date)
        ) or ArrayLike().accepts(value)

    def __str__(self):
        return "a scalar key (number, str, date, timestamp) or an array-like of keys"


class _Bytes:
    """Serialized state: ``bytes``, ``bytearray`` or ``memoryview``."""

    def accepts(self, value):
        return isinstance(value, (bytes, bytearray, memoryview))

    def __str__(self):
        return "a bytes-like object (bytes, bytearray or memoryview)"


class _ArrowData:
    """Arrow data: a record batch, a table, a reader or an iterable of them."""

    def accepts(self, value):
        return not isinstance(value, (str, bytes)) and any(
            hasattr(value, m) for m in ("__iter__", "to_batches", "num_rows")
        )

    def __str__(self):
        return "an Arrow RecordBatch, Table, RecordBatchReader or iterable of them"


class _PerturbationScale(Interval):
    """The scale ``h`` of the sech perturbation: one rule for the estimator,
    :func:`perturb_proba`, the bounds, their scorer and the datasets."""

    def __init__(self):
        super().__init__(numbers.Real, MIN_PERTURBATION_SCALE, 1)

    def __str__(self):
        return (
            f"{super().__str__()} (below 2**-16 the noise spans fewer than 256 "
            "cells of the perturbation grid k / 2**24, and no bound certifies it)"
        )


# Sizes that cannot be met on any machine are rejected by name rather than by
# a MemoryError deep inside numpy.
MAX_BINS = 10**6
MAX_BOOTSTRAP = 10**5
MAX_SPLITS = 1000
# Rows a generated dataset may have (16 bytes each, before any computing).
MAX_SAMPLES = 10**9
# Largest stream position (positions are hashed as 64-bit integers).
MAX_STREAM_POSITION = 2**62
# The smallest perturbation scale h, for sampling and certifying alike. The
# noise is rounded to the grid k / 2**24: at 2**-16 one scale spans 256 of its
# cells, and the discretisation term of the bounds (2**-24 / h) is 2**-8. The
# Nadaraya-Watson certificate is vacuous (its curvature term alone exceeds 1
# with windows of half-width >= 1e-4) from about 2**-15 down, whatever the
# sample size, and the datasets' quadrature needs memory growing as 1 / h.
MIN_PERTURBATION_SCALE = 2.0**-16
# One cell of the finest grid the Gaussian smoothers use (1 / grid.FINE_M,
# kept in step by a test): a narrower kernel is not resolved by it.
MIN_SIGMA = 2.0**-16

_ARRAY = ArrayLike()
_POSITIVE = Interval(numbers.Real, 0, None, closed="neither")
_SCALE = _PerturbationScale()

RULES = {
    # Arrays: declared here, parsed by skcalib._validation.
    "y_true": _ARRAY,
    "y_proba": _ARRAY,
    "X": _ARRAY,
    "y": _ARRAY,
    # A scalar weight is the weight of every sample.
    "sample_weight": NoneOr(AnyOf(_ARRAY, Interval(numbers.Real, 0, None))),
    "groups": NoneOr(_ARRAY),
    "labels": NoneOr(_ARRAY),
    "pos_label": NoneOr(Label()),
    # Models and model selection.
    "estimator": NoneOr(HasMethods("fit", "predict_proba")),
    "cv": NoneOr(_CV()),
    "scoring": NoneOr(AnyOf(String(), IsCallable())),
    # Certified bounds and the perturbation.
    "delta": Interval(numbers.Real, 0, 1, closed="neither"),
    "scale": _SCALE,
    "perturbation_scale": NoneOr(_SCALE),
    # Candidate scales: each entry obeys the rule of "scale".
    "scales": NoneOr(_ARRAY),
    "bound_method": NoneOr(StrOptions("nw", "lipschitz", "tv")),
    "n_splits": Interval(numbers.Integral, 2, MAX_SPLITS),
    "variation": _POSITIVE,
    "lipschitz": NoneOr(_POSITIVE),
    "assume": NoneOr(StrOptions("monotone")),
    # Measures.
    "sigma": NoneOr(Interval(numbers.Real, MIN_SIGMA, 1)),
    "metric": StrOptions("l1", "logit"),
    "multi_class": StrOptions("top-label", "classwise"),
    "strategy": StrOptions("uniform", "quantile"),
    "norm": StrOptions("l1", "l2", "max"),
    "debias": Boolean(),
    # "cbrt": ceil(n ** (1/3)) bins, n the rows of positive weight.
    "n_bins": AnyOf(Interval(numbers.Integral, 1, MAX_BINS), StrOptions("cbrt")),
    # Those of skcalib._backend.resampling.CI_METHODS (kept in step by a test).
    "ci_method": StrOptions("inversion", "basic", "percentile"),
    "random_state": RandomState(),
    "n_jobs": _NJobs(),
    "n_bootstrap": NoneOr(Interval(numbers.Integral, 1, MAX_BOOTSTRAP)),
    "max_samples": NoneOr(Interval(numbers.Integral, 2, None)),
    "chunk_size": NoneOr(Interval(numbers.Integral, 1, None)),
    "confidence_level": Interval(numbers.Real, 0, 1, closed="neither"),
    "tolerance": Interval(numbers.Real, 0, None),
    "verbose": Interval(numbers.Integral, 0, None),
    "n_samples": Interval(numbers.Integral, 1, MAX_SAMPLES),
    "return_details": Boolean(),
    "root": Boolean(),
    # The displays.
    "ax": NoneOr(Axes()),
    "cv_results": Dict(),
    "accumulator": _InstanceOf("CalibrationAccumulator"),
    "result": _InstanceOf("PerturbationScaleResult"),
    "sample_sizes": NoneOr(_ARRAY),
    "name": NoneOr(AnyOf(String(), ListOf(String()))),
    "as_frame": Boolean(),
    "ref_line": Boolean(),
    "despine": Boolean(),
    "ref_line_kw": NoneOr(Dict()),
    "bar_kwargs": NoneOr(Dict()),
    "line_kwargs": NoneOr(Dict()),
    "bound_kwargs": NoneOr(Dict()),
    # A list gives each curve its own style (its length is checked on drawing).
    "curve_kwargs": NoneOr(AnyOf(Dict(), ListOf(Dict()))),
    "density_panel": AnyOf(Boolean(), Axes()),
    "density_width": Interval(numbers.Real, 0, 1),
    "density_bandwidth": AnyOf(
        StrOptions("silverman", "scott"),
        Interval(numbers.Real, 0, None, closed="neither"),
    ),
    "fade_below": NoneOr(Interval(numbers.Real, 0, None, closed="neither")),
    "true_ce": NoneOr(Interval(numbers.Real, 0, 1)),
    "consistency_band": Boolean(),
    "n_consistency": Interval(numbers.Integral, 1, MAX_BOOTSTRAP),
    # Monitoring and serialized state.
    "window": _Window(),
    "key": _Key(),
    "keys": NoneOr(_ARRAY),
    "before": _Key(),
    "after": _Key(),
    "n_windows": Interval(numbers.Integral, 1, None),
    "period": StrOptions("month", "year"),
    "n_strata": Interval(numbers.Integral, 1, 2**16),
    "bounds": NoneOr(Dict()),
    "monitor": _InstanceOf("CalibrationMonitor"),
    "report": _InstanceOf("MonitoringReport"),
    "data": _Bytes(),
    # Training losses (PyTorch criteria).
    "input": _ARRAY,
    "target": _ARRAY,
    "lam": Interval(numbers.Real, 0, None),
    "weight": NoneOr(_ARRAY),
    "ignore_index": Interval(numbers.Integral, None, None),
    "label_smoothing": Interval(numbers.Real, 0, 1),
    # Distributed accumulation: columns are named.
    "df": HasMethods("mapInArrow"),
    "batches": _ArrowData(),
    "by": NoneOr(String()),
    "depth": Interval(numbers.Integral, 1, None),
}

# The columns of a table given by name (Spark, Arrow).
COLUMN_RULES = {
    "y_true": String(),
    "y_proba": AnyOf(String(), ListOf(String())),
    "sample_weight": NoneOr(String()),
}


# A monitor's report and its display may skip the bootstrap interval and the
# test of calibration (0 resamples).
MONITOR_RULES = {
    "n_bootstrap": Interval(numbers.Integral, 0, MAX_BOOTSTRAP),
    "n_resamples": Interval(numbers.Integral, 0, 10**6),
}


# The options of the ECE-KDE estimate, shared by the metric and the loss.
KDE_RULES = {
    "p": Interval(numbers.Real, 1, None),
    "bandwidth": AnyOf(
        StrOptions("mle", "risk"), Interval(numbers.Real, 0, None, closed="neither")
    ),
    "multi_class": StrOptions("canonical", "classwise", "top-label"),
    "debias": AnyOf(StrOptions("auto"), Boolean()),
}


def _describe(owner):
    return f" of {owner}" if owner else ""


def check_param(name, value, rule=None, owner=None):
    """Check one parameter against ``rule`` (default: its rule in ``RULES``).

    Returns ``value`` unchanged; raises :class:`InvalidParameterError` with a
    message that names the parameter.
    """
    rule = RULES[name] if rule is None else rule
    if not rule.accepts(value):
        raise InvalidParameterError(
            f"The {name!r} parameter{_describe(owner)} must be {rule}; got {value!r}."
        )
    return value


def check_params(owner, values, rules):
    """Check ``values`` (a dict of parameters) against ``rules``; for
    estimators, whose parameters are checked at fit time."""
    for name, rule in rules.items():
        check_param(name, values[name], rule, owner)


def check_estimator_params(estimator):
    """Check the parameters of ``estimator`` against its class's
    ``_parameter_constraints`` (in ``fit``, as scikit-learn does)."""
    rules = estimator._parameter_constraints
    values = {name: getattr(estimator, name) for name in rules}
    check_params(type(estimator).__name__, values, rules)


def validate_params(**rules):
    """Decorator: check the arguments that have a rule before the call.

    Parameters named in ``rules`` use the given rule (``None`` skips the
    parameter); every other parameter that has an entry in ``RULES`` uses it.
    The rules in force are the decorated function's
    ``_parameter_constraints``.
    """

    def decorate(func):
        signature = inspect.signature(func)
        checked = {
            name: rules.get(name, RULES.get(name))
            for name in signature.parameters
            if rules.get(name, RULES.get(name)) is not None
        }
        owner = f"{func.__qualname__}()"

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for name, rule in checked.items():
                # Defaults are the function's own: only given values are checked.
                if name in bound.arguments:
                    check_param(name, bound.arguments[name], rule, owner)
            return func(*args, **kwargs)

        wrapper._parameter_constraints = checked
        return wrapper

    return decorate


# -- rules between parameters ----------------------------------------------


def check_binned_options(norm, debias, root):
    """The L2-only flags of the binned calibration error: ``debias=True`` and
    ``root=False`` mean something for ``norm="l2"`` only."""
    for flag, value, meaningful in (("debias", debias, True), ("root", root, False)):
        if bool(value) == meaningful and norm != "l2":
            raise InvalidParameterError(
                f"{flag}={meaningful} is only defined for norm='l2'; got norm={norm!r}."
            )


def check_sigma(sigma, name="sigma", *, minimum=MIN_SIGMA, context=""):
    """A Gaussian kernel bandwidth in ``[minimum, 1]`` as a float.

    ``minimum`` is one step of the finest smoothing grid in the units of
    ``sigma`` (``MIN_SIGMA`` on [0, 1], more on the logit scale, said by
    ``context``); a narrower kernel is not resolved by the grid.
    """
    rule = Interval(numbers.Real, minimum, 1)
    if not rule.accepts(sigma):
        raise InvalidParameterError(
            f"The {name!r} parameter must be {rule}{context} (a narrower kernel is "
            f"not resolved by the finest smoothing grid); got {sigma!r}."
        )
    return float(sigma)


def check_kde_debias(debias, p):
    """``debias`` of the ECE-KDE estimate as a bool: ``"auto"`` means
    ``p == 2``, and ``True`` needs ``p == 2`` (the U-statistic exists for the
    squared error only)."""
    if isinstance(debias, str):
        return p == 2
    if debias and p != 2:
        raise InvalidParameterError(
            f"debias=True needs p=2 (the U-statistic exists for the squared error "
            f"only); got p={p:g}."
        )
    return bool(debias)


# -- from a checked parameter to what the numerics use ----------------------


def check_n_bins(n_bins, n_samples):
    """``n_bins`` as a count: a positive int (at most ``MAX_BINS``), or
    ``"cbrt"`` for ``ceil(n_samples ** (1/3))`` (``n_samples`` counting rows
    of positive weight)."""
    check_param("n_bins", n_bins)
    if isinstance(n_bins, str):
        return max(1, int(np.ceil(n_samples ** (1 / 3))))
    return int(n_bins)


def check_random_generator(random_state):
    """A ``numpy.random.Generator`` from ``None``, an int, a Generator or a
    RandomState (the rule :class:`RandomState`).

    Never touches the global numpy RNG.
    """
    check_param("random_state", random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(
            random_state.randint(0, 2**32 - 1, dtype=np.uint64)
        )
    return np.random.default_rng(int(random_state))


def check_seed_sequence(random_state):
    """A ``numpy.random.SeedSequence`` drawn from a user ``random_state``.

    Parallel work spawns one child per task from it, so results do not depend
    on ``n_jobs``. The global numpy RNG is never touched.
    """
    rng = check_random_generator(random_state)
    return np.random.SeedSequence([int(x) for x in rng.integers(0, 2**32, size=4)])
