"""Parameter rules, declared once, in scikit-learn's vocabulary.

Every public function and estimator of skcalib checks its scalar parameters
here: a parameter name has one rule (``RULES``) and one message, whichever
function takes it. A function may narrow a rule for itself (its own options of
``method``, say) by passing the rule to :func:`validate_params`. Input arrays
are checked in :mod:`skcalib._validation`.
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
    "Axes",
    "Boolean",
    "Dict",
    "Interval",
    "InvalidParameterError",
    "ListOf",
    "NoneOr",
    "Options",
    "RandomState",
    "StrOptions",
    "check_param",
    "check_params",
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


# Sizes that cannot be met on any machine are rejected by name rather than by
# a MemoryError deep inside numpy.
MAX_BINS = 10**6
MAX_BOOTSTRAP = 10**5
MAX_SPLITS = 1000
# Rows a generated dataset may have (16 bytes each, before any computing).
MAX_SAMPLES = 10**9
# Below this the perturbation is finer than 256 cells of its grid (2**-24),
# and the datasets' quadrature no longer resolves the kernel.
MIN_PERTURBATION_SCALE = 2.0**-16

RULES = {
    "delta": Interval(numbers.Real, 0, 1, closed="neither"),
    "perturbation_scale": NoneOr(Interval(numbers.Real, MIN_PERTURBATION_SCALE, 1)),
    "scale": Interval(numbers.Real, MIN_PERTURBATION_SCALE, 1),
    "n_splits": Interval(numbers.Integral, 2, MAX_SPLITS),
    "variation": Interval(numbers.Real, 0, None, closed="neither"),
    "lipschitz": NoneOr(Interval(numbers.Real, 0, None, closed="neither")),
    "assume": NoneOr(StrOptions("monotone")),
    "random_state": RandomState(),
    "n_jobs": _NJobs(),
    "n_bootstrap": NoneOr(Interval(numbers.Integral, 1, MAX_BOOTSTRAP)),
    "max_samples": NoneOr(Interval(numbers.Integral, 2, None)),
    "confidence_level": Interval(numbers.Real, 0, 1, closed="neither"),
    "tolerance": Interval(numbers.Real, 0, None),
    "verbose": Interval(numbers.Integral, 0, None),
    "n_samples": Interval(numbers.Integral, 1, MAX_SAMPLES),
    # The in-memory metrics also accept the string "cbrt" (check_n_bins).
    "n_bins": Interval(numbers.Integral, 1, MAX_BINS),
    "return_details": Boolean(),
    "root": Boolean(),
    # The displays.
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


def validate_params(**rules):
    """Decorator: check the arguments that have a rule before the call.

    Parameters named in ``rules`` use the given rule (``None`` skips the
    parameter); every other parameter that has an entry in ``RULES`` uses it.
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

        return wrapper

    return decorate
