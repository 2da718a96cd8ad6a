"""The declared parameter rules: one rule and one message per parameter."""

import numbers

import numpy as np
import pytest

from skcalib._params import (
    RULES,
    Boolean,
    Interval,
    InvalidParameterError,
    NoneOr,
    Options,
    RandomState,
    StrOptions,
    check_param,
    validate_params,
)


@pytest.mark.parametrize(
    "rule, good, bad",
    [
        (
            Interval(numbers.Real, 0, 1, closed="neither"),
            [1e-9, 0.5, np.float32(0.2)],
            [0, 1, -1, np.nan, np.inf, True, "0.5", None, [0.5]],
        ),
        (
            Interval(numbers.Integral, 2, 10),
            [2, 10, np.int64(5)],
            [1, 11, 2.0, True, "3", None],
        ),
        (Interval(numbers.Real, 0, None), [0, 1e300], [-1e-300, np.inf]),
        (StrOptions("a", "b"), ["a", "b"], ["c", None, ["a"], 1]),
        (Options(numbers.Integral, 1, 2), [1, 2], [3, True, 1.0]),
        (Boolean(), [True, False, np.True_], [0, 1, "no", None]),
        (
            RandomState(),
            [None, 0, 2**40, np.random.default_rng(0), np.random.RandomState(0)],
            [-1, 1.5, "seed", True],
        ),
        (NoneOr(StrOptions("x")), [None, "x"], ["y"]),
        (RULES["n_jobs"], [None, 1, -1, 4], [0, 2**63, 1.0, True]),
    ],
)
def test_rules_accept_and_reject(rule, good, bad):
    for value in good:
        assert rule.accepts(value), value
    for value in bad:
        assert not rule.accepts(value), value


def test_message_names_the_parameter_and_the_rule():
    with pytest.raises(InvalidParameterError) as info:
        check_param("delta", 1.0, owner="f()")
    message = str(info.value)
    assert message == (
        "The 'delta' parameter of f() must be a finite real number in (0, 1); got 1.0."
    )
    # Both kinds, as scikit-learn's error: callers may catch either.
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)


def test_powers_of_two_read_as_such():
    assert "[2**-16, 1]" in str(RULES["scale"])


def test_validate_params_checks_given_values_only():
    calls = []

    @validate_params(method=StrOptions("a", "b"), delta=None)
    def f(x, *, method="a", delta=0.1, n_splits=5):
        calls.append((x, method, delta, n_splits))
        return x

    assert f(1, method="b", delta=7, n_splits=3) == 1  # delta rule skipped
    with pytest.raises(InvalidParameterError, match="'method' parameter of"):
        f(1, method="c")
    # n_splits takes its rule from RULES.
    with pytest.raises(InvalidParameterError, match=r"'n_splits'.*>= 2|'n_splits'"):
        f(1, n_splits=1)
    assert calls == [(1, "b", 7, 3)]


def test_size_limits_are_declared():
    # Sizes no machine can hold are refused by name, not by a MemoryError.
    with pytest.raises(InvalidParameterError, match="n_bootstrap"):
        check_param("n_bootstrap", 10**7)
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        check_param("n_jobs", 2**63)
