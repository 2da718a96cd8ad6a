"""Warnings that point at the user's line, each said once per call.

A warning raised deep inside the library would otherwise name a line of the
library (a fixed ``stacklevel`` is right for one call path only), and a
warning that scikit-learn raises once per fold of a cross-validation would be
repeated for every fold.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["record_warnings", "warn_once_each", "warn_user"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stacklevel():
    """The ``stacklevel`` of the first caller outside this package."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        if not os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
            return level
        frame = frame.f_back
        level += 1
    return level


def warn_user(message, category=UserWarning):
    """Warn at the first line outside the package (the user's call)."""
    # warnings.warn counts its own caller as level 1, this function as 2.
    warnings.warn(message, category, stacklevel=_user_stacklevel())


def record_warnings(func, *args, **kwargs):
    """``func(*args, **kwargs)`` and the ``(category, message)`` it warned.

    Usable inside joblib workers: the records travel back with the result and
    the caller re-raises them once with :func:`warn_once_each`.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args, **kwargs)
    return result, [(w.category, str(w.message)) for w in caught]


def warn_once_each(records):
    """Warn each distinct ``(category, message)`` of ``records`` once."""
    seen = set()
    for category, message in records:
        if (category, message) not in seen:
            seen.add((category, message))
            warnings.warn(message, category, stacklevel=_user_stacklevel())
