"""Every parameter of every public callable has a declared rule, enforced.

The public callables are read from the packages' ``__all__``: functions,
classes' constructors and their public methods (``plot``,
``from_predictions``, ``partial_fit``, ...). A parameter's rule is declared
by ``validate_params`` (the function's ``_parameter_constraints``) or, for an
estimator, in its class's ``_parameter_constraints``, checked in ``fit``.
"""

import dataclasses
import importlib
import inspect

import numpy as np
import pytest
from _helpers import PUBLIC_PACKAGES

from skcalib._params import RULES, InvalidParameterError

PACKAGES = PUBLIC_PACKAGES

# Methods of scikit-learn's estimator API: X and y are validated by
# ``validate_data`` or by the wrapped estimator (which may accept text or
# mixed frames no generic rule knows), sample_weight by ``check_sample_weight``
# and metadata routing, as in scikit-learn's own estimators.
ESTIMATOR_API = {"fit", "predict", "predict_proba", "transform"}

# (callable, parameter) -> why it has no declared rule.
EXEMPT = {
    ("CalibrationAccumulator.merge", "other"): "an accumulator of the class of "
    "self, checked by merge (a rule by name cannot know that class)",
    ("StreamingCalibrationBound.merge", "other"): "as for the accumulator",
    ("BinnedCalibrationResult.from_tables", "*"): "builds the result record "
    "from the metric's own bin tables",
}


def _record(cls):
    # Results are frozen records the library fills with numbers it computed.
    return dataclasses.is_dataclass(cls)


def _display(cls):
    # A display's constructor takes the data of its curves, as scikit-learn's
    # displays do (RocCurveDisplay(fpr=..., tpr=...)); from_* and plot check
    # what a user chooses.
    return cls.__module__.startswith("skcalib.display")


def _estimator(cls):
    from sklearn.base import BaseEstimator

    return issubclass(cls, BaseEstimator)


def _parameters(func, *, bound):
    """Named parameters of ``func`` (without self/cls when ``bound``)."""
    params = list(inspect.signature(func).parameters.values())
    if bound:
        params = params[1:]
    return [
        p.name
        for p in params
        # **kwargs are forwarded to a callable that checks them (fit
        # parameters to the base estimator, scorer keywords to the metric).
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def public_callables():
    """``(name, function, parameters, rules, how to call)`` of every public
    function, constructor and public method."""
    seen = set()
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen or not callable(obj):
                continue
            seen.add(id(obj))
            if not inspect.isclass(obj):
                yield name, obj, _parameters(obj, bound=False), "function"
                continue
            if not (_record(obj) or _display(obj)):
                yield (
                    f"{name}.__init__",
                    obj,
                    _parameters(obj.__init__, bound=True),
                    "class",
                )
            for attr in dir(obj):
                if attr.startswith("_") or (_estimator(obj) and attr in ESTIMATOR_API):
                    continue
                raw = inspect.getattr_static(obj, attr)
                kind = type(raw).__name__  # classmethod, staticmethod, function
                func = raw.__func__ if kind in ("classmethod", "staticmethod") else raw
                kind = "method" if kind == "function" else kind
                if not inspect.isfunction(func) or not func.__module__.startswith(
                    "skcalib"
                ):
                    continue  # properties, fields, scikit-learn's own methods
                yield (
                    f"{name}.{attr}",
                    func,
                    _parameters(func, bound=kind != "staticmethod"),
                    kind,
                )


def declared_rules(name, obj, kind):
    if kind == "class":
        rules = getattr(obj, "_parameter_constraints", None)
        if rules is None:
            rules = getattr(obj.__init__, "_parameter_constraints", {})
        return rules
    return getattr(obj, "_parameter_constraints", {})


def undeclared(callables):
    """``name: [parameters without a rule]`` over ``callables``."""
    missing = {}
    for name, obj, params, kind in callables:
        if (name, "*") in EXEMPT:
            continue
        rules = declared_rules(name, obj, kind)
        lacking = [p for p in params if p not in rules and (name, p) not in EXEMPT]
        if lacking:
            missing[name] = lacking
    return missing


CALLABLES = list(public_callables())


def test_the_public_callables_are_all_found():
    names = {c[0] for c in CALLABLES}
    # One of each kind, so that the enumeration cannot silently miss a kind.
    for expected in (
        "smooth_ece",
        "perturb_proba",
        "make_calibration_problem",
        "PerturbedClassifier.__init__",
        "CalibrationScorer.__init__",
        "StreamingCalibrationBound.partial_fit",
        "CalibrationAccumulator.smooth_ece",
        "SmoothReliabilityDisplay.plot",
        "SmoothReliabilityDisplay.from_predictions",
        "CalibrationBoundDisplay.from_sample_sizes",
        "GroupedCalibrationResult.frame",
    ):
        assert expected in names, expected
    assert len(CALLABLES) > 50


def test_every_public_parameter_has_a_declared_rule():
    assert undeclared(CALLABLES) == {}


def test_the_check_sees_a_missing_rule(monkeypatch):
    from skcalib import PerturbedClassifier
    from skcalib.metrics import smooth_ece

    rules = dict(smooth_ece._parameter_constraints)
    del rules["sigma"]
    monkeypatch.setattr(smooth_ece, "_parameter_constraints", rules)
    constraints = dict(PerturbedClassifier._parameter_constraints)
    del constraints["scale"]
    monkeypatch.setattr(PerturbedClassifier, "_parameter_constraints", constraints)
    assert undeclared(public_callables()) == {
        "smooth_ece": ["sigma"],
        "PerturbedClassifier.__init__": ["scale"],
    }


# -- the declared rules are enforced --------------------------------------------
# A value no rule accepts: every call given it must fail on that parameter,
# before doing any work.
BAD = object()


def test_no_rule_accepts_anything():
    for name, rule in RULES.items():
        assert not rule.accepts(BAD), name


def _valid(rule):
    """A value ``rule`` accepts (a placeholder for a required argument: the
    call fails on the bad argument before it reads the others)."""
    for candidate in (
        None,
        np.array([0, 1]),
        0.5,
        1,
        3,
        True,
        "x",
        b"",
        {},
        [{}],
        lambda *a: None,
    ):
        if rule.accepts(candidate):
            return candidate
    if hasattr(rule, "options"):
        return rule.options[0]
    if hasattr(rule, "rules"):
        return _valid(rule.rules[0])
    if hasattr(rule, "methods"):
        return type("Duck", (), dict.fromkeys(rule.methods, lambda self: None))()
    if hasattr(rule, "class_name"):
        return type(rule.class_name, (), {})()
    raise AssertionError(f"no placeholder for the rule {rule}")


def _call_cases():
    for name, obj, params, kind in CALLABLES:
        if kind == "class":
            continue
        rules = declared_rules(name, obj, kind)
        for param in params:
            if param in rules:
                yield pytest.param(name, obj, kind, rules, param, id=f"{name}-{param}")


@pytest.mark.parametrize("name, func, kind, rules, param", list(_call_cases()))
def test_a_broken_rule_is_refused_by_name(name, func, kind, rules, param):
    signature = inspect.signature(func)
    kwargs = {
        p.name: _valid(rules[p.name])
        for p in signature.parameters.values()
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name in rules
    }
    kwargs[param] = BAD
    # An instance method is called unbound (self=None): the rules are checked
    # before the body would read self.
    first = (None,) if kind in ("method", "classmethod") else ()
    with pytest.raises(InvalidParameterError, match=f"'{param}' parameter"):
        func(*first, **kwargs)


def _binary():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=40)
    return (rng.uniform(size=40) < p).astype(int), p


def _fit(obj):
    y, p = _binary()
    if hasattr(obj, "partial_fit"):
        return obj.partial_fit(y, p)
    X = np.column_stack([p, p**2])
    return obj.fit(np.column_stack([1 - p, p]) if hasattr(obj, "transform") else X, y)


def _constructor_cases():
    for name, obj, params, kind in CALLABLES:
        if kind != "class":
            continue
        if getattr(obj, "_parameter_constraints", None) is None:
            continue  # checked at construction: a decorated __init__
        for param in params:
            yield pytest.param(obj, param, id=f"{name}-{param}")


@pytest.mark.parametrize("cls, param", list(_constructor_cases()))
def test_an_estimator_checks_its_rules_when_fitted(cls, param):
    est = cls(**{param: BAD})
    with pytest.raises(InvalidParameterError, match=f"'{param}' parameter"):
        _fit(est)


@pytest.mark.parametrize(
    "name",
    [
        c[0]
        for c in CALLABLES
        if c[3] == "class" and c[2] and not hasattr(c[1], "_parameter_constraints")
    ],
)
def test_a_constructor_without_fit_checks_its_rules(name):
    cls = next(c[1] for c in CALLABLES if c[0] == name)
    rules = cls.__init__._parameter_constraints
    for param in rules:
        with pytest.raises(InvalidParameterError, match=f"'{param}' parameter"):
            cls(
                **{p: _valid(r) for p, r in rules.items() if p != param}, **{param: BAD}
            )


def test_ci_methods_rule_in_step_with_the_backend():
    from skcalib._backend.resampling import CI_METHODS

    assert RULES["ci_method"].options == tuple(CI_METHODS)


# -- one rule for the perturbation scale ----------------------------------------
def _scale_calls():
    from sklearn.linear_model import LogisticRegression

    from skcalib import PerturbedClassifier, perturb_proba, select_perturbation_scale
    from skcalib.datasets import make_calibration_problem, true_calibration_error
    from skcalib.display import CalibrationBoundDisplay
    from skcalib.metrics import StreamingCalibrationBound, calibration_error_bound

    y, p = _binary()
    X = np.column_stack([p, p**2])
    return {
        "PerturbedClassifier": lambda h: PerturbedClassifier(
            LogisticRegression(), scale=h
        ).fit(X, y),
        "perturb_proba": lambda h: perturb_proba(p, scale=h),
        "select_perturbation_scale": lambda h: select_perturbation_scale(
            LogisticRegression(), X, y, scales=[h], cv=2, bound_method=None
        ),
        "calibration_error_bound": lambda h: calibration_error_bound(
            y, perturb_proba(p, random_state=0), method="nw", perturbation_scale=h
        ),
        "StreamingCalibrationBound": lambda h: StreamingCalibrationBound(
            perturbation_scale=h
        ).partial_fit(y, p),
        "CalibrationBoundDisplay": lambda h: CalibrationBoundDisplay.from_predictions(
            y, p, perturbation_scale=h, methods="nw"
        ),
        "make_calibration_problem": lambda h: make_calibration_problem(
            10, perturbation_scale=h
        ),
        "true_calibration_error": lambda h: true_calibration_error(
            perturbation_scale=h
        ),
    }


@pytest.mark.parametrize("name", list(_scale_calls()))
@pytest.mark.parametrize("scale", [2.0**-17, 1e-300, 0.0, 1.5])
def test_one_scale_rule_one_message(name, scale):
    # The estimator, perturb_proba, the bounds, the display and the datasets
    # refuse the same scales with the same words (the estimator accepted
    # 1e-300 that the bound then refused).
    with pytest.raises(InvalidParameterError) as info:
        _scale_calls()[name](scale)
    assert str(RULES["scale"]) in str(info.value)
    assert "scale" in str(info.value)


def test_grid_search_over_scale_fails_at_once_out_of_range():
    import re
    import warnings

    from sklearn.exceptions import FitFailedWarning
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GridSearchCV

    from skcalib import PerturbedClassifier
    from skcalib.metrics import get_scorer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (rng.uniform(size=600) < 1 / (1 + np.exp(-2 * X[:, 0]))).astype(int)
    grid = {"scale": [2.0**-17, 2.0**-16, 2.0**-6]}
    kw = dict(scoring=get_scorer("neg_calibration_error_bound"), cv=3)
    search = GridSearchCV(
        PerturbedClassifier(LogisticRegression(), random_state=0), grid, **kw
    )
    with pytest.raises(InvalidParameterError, match=re.escape(str(RULES["scale"]))):
        search.set_params(error_score="raise").fit(X, y)
    # With the default error score, the candidate's fits fail (with the rule's
    # message) instead of being fitted and scored NaN; every candidate in the
    # range scores a finite (if vacuous) certified bound.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.set_params(error_score=np.nan).fit(X, y)
    fit_failures = [w for w in caught if issubclass(w.category, FitFailedWarning)]
    assert fit_failures and str(RULES["scale"]) in str(fit_failures[0].message)
    scores = search.cv_results_["mean_test_score"]
    assert np.isnan(scores[0]) and np.all(np.isfinite(scores[1:]))
    assert not [w for w in caught if "Scoring failed" in str(w.message)]
