"""Progress of long operations, reported on stderr when asked for.

A function that can run for more than a few seconds takes ``verbose`` (as
scikit-learn's estimators do) and reports through :class:`Progress`. By
default a report is a line on stderr: at the start, at the end and, between
them, at most every ``REPORT_EVERY[verbose]`` seconds. The command-line
program installs its own sink (a progress bar) with :func:`progress_sink`,
which also turns reporting on for every operation it runs.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["Progress", "note", "progress_sink"]

# Seconds between two reports of one operation, by verbosity (1: a few lines
# for a long operation; 2 or more: every second; a sink: fine enough for a
# progress bar to move smoothly).
REPORT_EVERY = {1: 10.0, 2: 1.0}
SINK_EVERY = 0.1

_SINK = ContextVar("skcalib_progress_sink", default=None)
# True inside an operation that reports: the operations it runs (the bounds of
# select_perturbation_scale, say) stay silent, so that one bar or one series
# of lines describes one operation.
_REPORTING = ContextVar("skcalib_progress_reporting", default=False)


def _stderr_lines(label, done, total, elapsed, finished):
    if finished:
        print(f"[skcalib] {label}: done in {elapsed:.1f} s", file=sys.stderr)
    elif done:
        print(f"[skcalib] {label}: {done}/{total} ({elapsed:.1f} s)", file=sys.stderr)
    else:
        print(f"[skcalib] {label}: 0/{total}", file=sys.stderr)


class Progress:
    """Report ``done / total`` steps of one operation named ``label``.

    Silent unless ``verbose > 0`` or a sink is installed. A sink is called as
    ``sink(label, done, total, elapsed, finished)``.
    """

    def __init__(self, label, total, verbose=0):
        sink = _SINK.get()
        self.enabled = (bool(verbose) or sink is not None) and not _REPORTING.get()
        self._token = None
        self.sink = sink or _stderr_lines
        if sink is not None:
            self.every = SINK_EVERY
        else:
            self.every = REPORT_EVERY[min(int(verbose), 2)] if verbose else 0.0
        self.label = label
        self.total = int(total)
        self.done = 0
        self._start = self._last = time.perf_counter()
        if self.enabled:
            self.sink(label, 0, self.total, 0.0, False)

    def advance(self, steps=1):
        self.done += steps
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last >= self.every and self.done < self.total:
            self._last = now
            self.sink(self.label, self.done, self.total, now - self._start, False)

    def close(self):
        if self.enabled:
            elapsed = time.perf_counter() - self._start
            self.sink(self.label, self.done, self.total, elapsed, True)
            self.enabled = False

    def __enter__(self):
        if self.enabled:
            self._token = _REPORTING.set(True)
        return self

    def __exit__(self, *exc):
        # An operation that failed reports no "done".
        if exc[0] is None:
            self.close()
        self.enabled = False
        if self._token is not None:
            _REPORTING.reset(self._token)
            self._token = None
        return False

    def track(self, results, steps=None):
        """Advance once per item of ``results`` (by ``steps[i]`` if given)."""
        for i, item in enumerate(results):
            yield item
            self.advance(1 if steps is None else steps[i])


@contextmanager
def progress_sink(sink):
    """Send the reports of every operation in the block to ``sink``."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def note(verbose, message, level=1):
    """A line about a long operation's choices (e.g. the map a fit chose) on
    stderr when ``verbose >= level``."""
    if verbose >= level:
        print(f"[skcalib] {message}", file=sys.stderr, flush=True)
