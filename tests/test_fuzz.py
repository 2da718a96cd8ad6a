"""Every public entry point, every parameter, a set of hostile values.

Each call is classified:

- ``named``: a ``ValueError`` or ``TypeError`` whose message names the
  parameter (what every rejected value should get);
- ``unnamed``: a ``ValueError`` or ``TypeError`` that does not name it;
- ``crash``: any other exception (``IndexError``, ``MemoryError``, ...);
- ``accepted``: the call returned. That is a failure only for a value that no
  parameter of that kind may take (``INVALID`` below), e.g. ``"no"`` for a
  boolean flag or ``1.5`` for a count.

The test requires no ``unnamed``, ``crash`` or wrongly ``accepted`` call,
except for the ones listed in ``KNOWN`` (errors raised by a wrapped
scikit-learn estimator itself). Run this file as a script to print the counts.
"""

from __future__ import annotations

import inspect
import re
import sys
import warnings
from collections import Counter

import joblib
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import skcalib
from skcalib import datasets, display, metrics, perturbation, recalibration

pytestmark = pytest.mark.slow


class _Opaque:
    """An object no parameter accepts."""

    def __repr__(self):
        return "<opaque>"


# Values that no parameter of the kind given by its default may take.
INVALID = {
    bool: ["no", 2, None, np.array([True, False]), _Opaque()],
    int: [1.5, "3", 10**15, np.nan, [3], {}, _Opaque()],
    float: ["x", np.nan, [0.1], {}, _Opaque()],
    str: ["bogus-option", ["x"], 3, {}, _Opaque()],
}
# Values tried on parameters whose default is None (what they accept varies,
# so an accepted value is not counted; an error must still name them).
PROBES = [_Opaque(), {}, [], -1, "bogus-option", np.nan]
# Positional data arguments.
DATA_PROBES = [None, "x", 5, _Opaque(), [], np.zeros((3, 3, 3))]

# Parameters that take arbitrary Python objects by design, or that are
# forwarded untouched to matplotlib or scikit-learn.
# (Keyword dicts such as ``curve_kwargs`` are forwarded to matplotlib, but
# their container is checked: they are fuzzed.)
OPEN = {
    "name",
    "fit_params",
    "groups",
    "params",
}


# Integers without an upper limit (a huge value costs nothing).
UNBOUNDED = {"verbose"}


# Parameters whose default does not tell their kind: ``p`` is a real >= 1
# with the integer default 1; ``bandwidth`` is a string option or a number.
KIND = {
    "p": float,
    "bandwidth": None,
    # The displays: a real with an integer default, and string-or-number options.
    "fade_below": float,
    "n_bootstrap": None,
    "density_bandwidth": None,
}


def _kind(name, default):
    if name in KIND:
        return KIND[name]
    for kind in (bool, int, float, str):
        if type(default) is kind:
            return kind
    return None


def _binary(n=120, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < p).astype(int)
    return y, p


def _features(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    return X, y


# Options that keep a display's statistics small. Every parameter is checked
# before any computation, so an accepted value (a scalar ``key``,
# ``n_jobs=-1``) only costs the work these options size; the bootstrap and the
# draws still run, so a crash on them is still caught.
FAST = {
    "SmoothReliabilityDisplay": {"n_bootstrap": 5},
    "CalibrationOverTimeDisplay": {"n_bootstrap": 5, "n_resamples": 19},
}
FAST_ESTIMATOR = {
    "SmoothReliabilityDisplay": {"n_bootstrap": 0},
    "PerturbationDisplay": {"cv": 2, "scales": [0.05], "bound_method": None},
    "CalibrationOverTimeDisplay": {"n_bootstrap": 0, "n_resamples": 19},
}


def _entries():
    """(label, callable(**kwargs), function whose signature is fuzzed, data)."""
    y, p = _binary()
    X, yx = _features()
    out = []
    for name in (
        "smooth_ece",
        "smooth_calibration_curve",
        "binned_calibration_error",
        "kde_calibration_error",
        "calibration_error_bound",
    ):
        func = getattr(metrics, name)
        out.append(
            (
                name,
                lambda f=func, **kw: f(y, p, **kw),
                func,
                {"y_true": y, "y_proba": p},
            )
        )
    for name in ("calibration_test", "score_decomposition", "calibration_summary"):
        if hasattr(metrics, name):
            func = getattr(metrics, name)
            out.append(
                (
                    name,
                    lambda f=func, **kw: f(y, p, **kw),
                    func,
                    {"y_true": y, "y_proba": p},
                )
            )
    acc_cls = metrics.CalibrationAccumulator
    out.append(
        (
            "CalibrationAccumulator",
            lambda **kw: acc_cls(**kw).partial_fit(y, p),
            acc_cls,
            {},
        )
    )
    acc = acc_cls().partial_fit(y, p)
    for meth in ("smooth_ece", "calibration_curve", "binned_calibration_error"):
        out.append(
            (
                f"CalibrationAccumulator.{meth}",
                lambda m=meth, **kw: getattr(acc, m)(**kw),
                getattr(acc_cls, meth),
                {},
            )
        )
    out.append(
        (
            "CalibrationAccumulator.partial_fit",
            lambda **kw: acc_cls().partial_fit(**{"y_true": y, "y_proba": p, **kw}),
            acc_cls.partial_fit,
            {"y_true": y, "y_proba": p},
        )
    )
    for name in display.__all__:
        cls = getattr(display, name)
        if hasattr(cls, "from_predictions"):
            data = (
                {"y_true": y, "y_proba": p}
                if "y_proba" in inspect.signature(cls.from_predictions).parameters
                else {"y_true": y, "y_score": p}
            )
            opts = FAST.get(name, {})
            out.append(
                (
                    f"{name}.from_predictions",
                    lambda c=cls, d=data, o=opts, **kw: c.from_predictions(
                        **{**d, **o, **kw}
                    ),
                    cls.from_predictions,
                    data,
                )
            )
    out.extend(_display_entries(y, p, X, yx))
    out.append(
        (
            "perturb_proba",
            lambda **kw: perturbation.perturb_proba(**{"y_proba": p, **kw}),
            perturbation.perturb_proba,
            {},
        )
    )
    out.append(
        (
            "PerturbedClassifier",
            lambda **kw: (
                perturbation.PerturbedClassifier(LogisticRegression(), **kw)
                .fit(X, yx)
                .predict_proba(X)
            ),
            perturbation.PerturbedClassifier,
            {},
        )
    )
    out.append(
        (
            "select_perturbation_scale",
            lambda **kw: perturbation.select_perturbation_scale(
                LogisticRegression(),
                X,
                yx,
                **{"cv": 2, "scales": [0.05], "bound_method": None, **kw},
            ),
            perturbation.select_perturbation_scale,
            {},
        )
    )
    out.append(
        (
            "KernelRecalibrator",
            lambda **kw: recalibration.KernelRecalibrator(**kw).fit(p, y).transform(p),
            recalibration.KernelRecalibrator,
            {},
        )
    )
    out.append(
        (
            "RecalibratedClassifier",
            lambda **kw: (
                recalibration.RecalibratedClassifier(LogisticRegression(), **kw)
                .fit(X, yx)
                .predict_proba(X)
            ),
            recalibration.RecalibratedClassifier,
            {},
        )
    )
    for name in ("make_calibration_problem",):
        func = getattr(datasets, name)
        out.append((name, lambda f=func, **kw: f(**{"n_samples": 50, **kw}), func, {}))
    return out


def _display_entries(y, p, X, yx):
    """The displays' ``from_estimator``, ``from_cv_results``, ``from_result``,
    ``from_sample_sizes`` and ``plot``."""
    from sklearn.model_selection import cross_validate

    clf = LogisticRegression().fit(X, yx)
    cv = cross_validate(
        LogisticRegression(), X, yx, cv=2, return_estimator=True, return_indices=True
    )
    out = []
    for name in display.__all__:
        cls = getattr(display, name)
        opts = FAST_ESTIMATOR.get(name, FAST.get(name, {}))
        data = {"estimator": clf, "X": X, "y": yx}
        if name == "PerturbationDisplay":
            data = {"estimator": LogisticRegression(), "X": X, "y": yx}
        out.append(
            (
                f"{name}.from_estimator",
                lambda c=cls, d=data, o=opts, **kw: c.from_estimator(
                    **{**d, **o, **kw}
                ),
                cls.from_estimator,
                data,
            )
        )
        if hasattr(cls, "from_cv_results"):
            cv_data = {"cv_results": cv, "X": X, "y": yx}
            out.append(
                (
                    f"{name}.from_cv_results",
                    lambda c=cls, d=cv_data, o=opts, **kw: c.from_cv_results(
                        **{**d, **o, **kw}
                    ),
                    cls.from_cv_results,
                    cv_data,
                )
            )
        if name == "CalibrationBoundDisplay":
            size_data = {"y_true": y, "y_proba": p, "sample_sizes": [60, 120]}
            out.append(
                (
                    f"{name}.from_sample_sizes",
                    lambda c=cls, d=size_data, **kw: c.from_sample_sizes(**{**d, **kw}),
                    cls.from_sample_sizes,
                    {"y_true": y, "y_proba": p},
                )
            )
            disp = cls.from_predictions(y, p, random_state=0)
        elif name == "PerturbationDisplay":
            result = perturbation.select_perturbation_scale(
                LogisticRegression(), X, yx, cv=2, scales=[0.05, 0.1], random_state=0
            )
            out.append(
                (
                    f"{name}.from_result",
                    lambda c=cls, r=result, **kw: c.from_result(**{"result": r, **kw}),
                    cls.from_result,
                    {"result": result},
                )
            )
            disp = cls.from_result(result)
        else:
            disp = cls.from_predictions(y, p, **opts)
        out.append((f"{name}.plot", lambda d=disp, **kw: d.plot(**kw), cls.plot, {}))
        if hasattr(cls, "from_accumulator"):
            acc = metrics.CalibrationAccumulator().partial_fit(y, p)
            out.append(
                (
                    f"{name}.from_accumulator",
                    lambda c=cls, a=acc, **kw: c.from_accumulator(
                        **{"accumulator": a, **kw}
                    ),
                    cls.from_accumulator,
                    {"accumulator": acc},
                )
            )
    return out


def _parameters(func):
    target = func.__init__ if inspect.isclass(func) else func
    for param in inspect.signature(target).parameters.values():
        if param.name in ("self", "cls") or param.kind in (
            param.VAR_POSITIONAL,
            param.VAR_KEYWORD,
        ):
            continue
        yield param


def _classify(call, name, value, must_reject):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(**{name: value})
    except (ValueError, TypeError) as exc:
        if re.search(rf"\b{re.escape(name)}\b", str(exc)):
            return "named"
        return "unnamed"
    except Exception:  # noqa: BLE001 - every other exception is the finding
        return "crash"
    finally:
        import matplotlib.pyplot as plt

        plt.close("all")
    return "wrongly accepted" if must_reject else "accepted"


def run():
    """Every (entry, parameter, value) and its outcome."""
    import matplotlib

    matplotlib.use("Agg")
    # ``n_jobs=-1`` is a valid value: threads run the same library code as
    # processes without starting a pool of interpreters for each such call.
    with joblib.parallel_config(backend="threading"):
        return _run()


def _run():
    rows = []
    for label, call, func, data in _entries():
        for param in _parameters(func):
            if param.name in OPEN:
                continue
            if param.name in data or param.default is inspect.Parameter.empty:
                if param.name not in data:
                    continue
                values, must_reject = DATA_PROBES, True
            else:
                kind = _kind(param.name, param.default)
                if kind is None:
                    values, must_reject = PROBES, False
                else:
                    values, must_reject = INVALID[kind], True
                    if param.name in UNBOUNDED:
                        values = [v for v in values if v != 10**15]
            for value in values:
                outcome = _classify(call, param.name, value, must_reject)
                rows.append((label, param.name, repr(value)[:30], outcome))
    return rows


# (entry, parameter, value) whose outcome comes from a wrapped scikit-learn
# estimator, not from this library.
KNOWN: set = set()


def _failures(rows):
    return [
        r
        for r in rows
        if r[3] in ("unnamed", "crash", "wrongly accepted") and r[:3] not in KNOWN
    ]


def _is_display(label):
    return label.split(".")[0] in display.__all__


@pytest.fixture(scope="module")
def rows():
    return run()


def test_every_bad_value_of_a_display_is_rejected_by_name(rows):
    shown = [r for r in rows if _is_display(r[0])]
    assert len(shown) > 500
    failures = _failures(shown)
    assert not failures, "\n".join(map(str, failures[:40]))


def test_every_bad_value_is_rejected_by_name(rows):
    assert len(rows) > 500
    failures = _failures(rows)
    assert not failures, "\n".join(map(str, failures[:40]))


if __name__ == "__main__":
    rows = run()
    counts = Counter(r[3] for r in rows)
    print(f"skcalib {skcalib.__version__}: {len(rows)} calls")
    for outcome, count in sorted(counts.items()):
        print(f"  {outcome:17s} {count}")
    for row in _failures(rows):
        print("  ", *row, sep=" | ")
    sys.exit(0)
