"""Whether the optional compiled loops can run.

numba (the ``fast`` extra) compiles the sequential and per-row loops of the
backend. It is optional and heavy (~200 MB installed with llvmlite, about a
second to import and a second more to load a process's first compiled
function from the disk cache), so it is only looked for here, without being
imported; each module imports it when its compiled loop first runs, for
inputs large enough to repay that cost. Every compiled loop has a numpy or
pure-Python counterpart that gives the same results.
"""

from __future__ import annotations

import importlib.util

__all__ = ["HAVE_NUMBA"]

HAVE_NUMBA = importlib.util.find_spec("numba") is not None
