"""Doctests whose examples import PyTorch or JAX (the losses' modules) are
skipped when that framework is not installed; CI installs both."""

import importlib.util

import pytest

_OPTIONAL = ("torch", "jax")


def pytest_collection_modifyitems(config, items):
    missing = [m for m in _OPTIONAL if importlib.util.find_spec(m) is None]
    if not missing:
        return
    for item in items:
        test = getattr(item, "dtest", None)
        if test is None:
            continue
        needs = [
            m
            for m in missing
            if any(f"import {m}" in ex.source for ex in test.examples)
        ]
        if needs:
            item.add_marker(pytest.mark.skip(reason=f"needs {', '.join(needs)}"))
