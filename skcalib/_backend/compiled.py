"""When the optional compiled loops run: only where they repay their loading.

numba (the ``fast`` extra) compiles the sequential and per-row loops of the
backend: the smECE binning (:mod:`.grid`), the top-label scan
(:mod:`.top_label`) and the sech sampler (:mod:`.sech`). Every compiled loop
has a numpy or pure-Python twin that gives the same results, so whether a
loop is compiled changes the time of a call, never its numbers.

A compiled loop is not free to start. Measured in fresh processes on two
shared cores: importing numba takes 0.6 to 0.9 s (and +100 MB of memory);
the first compiled function of a process then takes 0.45 to 0.8 s more to
load from numba's disk cache (LLVM's start-up; an install's very first run
compiles it, a second or more); each further function loads in 10 to 80
ms. Once loaded, the loops save 20 to 150 ms per million rows. So a loop
that is not loaded yet is loaded only by a call large enough that the time
it saves exceeds that cost (:func:`load_cost`): a one-shot script, the CLI
or a notebook's first cell run the numpy passes, unless their input is tens
of millions of rows; once loaded (by such a call, or by an opt-in), a loop
runs from its own, much smaller, size on.

``SKCALIB_NUMBA`` chooses otherwise: ``"1"`` loads the loops at their
first use from that smaller size on (a long-running process, a benchmark's
steady state), ``"0"`` never uses them; unset (or ``"auto"``), the rule
above. It is read at every call.
"""

from __future__ import annotations

import importlib.util
import os
import sys

__all__ = ["HAVE_NUMBA", "load_cost", "use_compiled"]

HAVE_NUMBA = importlib.util.find_spec("numba") is not None

# Seconds (see the module's docstring; the middle of the measured ranges).
IMPORT_COST = 0.7
FIRST_LOAD_COST = 0.6
LOAD_COST = 0.05

_MODES = {"": "auto", "auto": "auto", "1": "always", "0": "never"}

# The loaders whose loops this process has loaded.
_LOADED = set()


def _mode():
    value = os.environ.get("SKCALIB_NUMBA", "").strip().lower()
    if value not in _MODES:
        raise ValueError(
            f"SKCALIB_NUMBA must be '0', '1' or 'auto' (or unset), got {value!r}."
        )
    return _MODES[value]


def load_cost():
    """Seconds that loading one more path's compiled loops costs now."""
    if _LOADED:
        return LOAD_COST
    cost = FIRST_LOAD_COST
    if sys.modules.get("numba") is None:
        cost += IMPORT_COST
    return cost


def use_compiled(load, size, *, min_size, saved_per_unit):
    """``load()`` if its compiled loops should run for an input of ``size``,
    else None (the numpy passes).

    Parameters
    ----------
    load : callable
        Returns the loops (importing numba); cached by the caller, so that a
        second call costs nothing.
    size : int
        The input's size, in the units of ``saved_per_unit``.
    min_size : int
        Smallest size at which the loaded loops beat the numpy passes.
    saved_per_unit : float
        Seconds the loaded loops save per unit of size.

    Returns
    -------
    object or None
    """
    if not HAVE_NUMBA or size < min_size:
        return None
    mode = _mode()
    if mode == "never":
        return None
    if load not in _LOADED:
        if mode == "auto" and size * saved_per_unit < load_cost():
            return None
        loops = load()
        _LOADED.add(load)
        return loops
    return load()
