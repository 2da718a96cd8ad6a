"""Progress of ``skcalib`` on stderr: a line per step, a bar for long work.

Each step of the command is one line (``skcalib: binned ECE ... done
(0.3 s)``). On a terminal, a library operation that reports progress (the
bootstrap, the bounds' folds, reading a large file) and runs for more than
``BAR_AFTER`` seconds turns the open line into a progress bar; in a log file
the lines stay as they are.
"""

from __future__ import annotations

import sys
import time

from .._backend.progress import progress_sink

__all__ = ["StepProgress"]

# A bar for work longer than this many seconds only.
BAR_AFTER = 2.0
BAR_WIDTH = 24


class StepProgress:
    """Steps of the command on ``stream`` (default stderr), and their bars."""

    def __init__(self, enabled, stream=None):
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        isatty = getattr(self.stream, "isatty", None)
        self.bars = enabled and isatty is not None and isatty()
        self._start = None
        self._message = None
        self._open = False
        self._drawn = False

    def _write(self, text):
        print(text, file=self.stream, end="", flush=True)

    def start(self, message):
        self._start = time.perf_counter()
        self._message = message
        if self.enabled:
            self._write(f"skcalib: {message} ...")
            self._open = True

    def _line(self, tail):
        # Back to the start of the line and clear it, then redraw.
        self._write(f"\r\x1b[Kskcalib: {self._message} ... {tail}")

    def done(self):
        if self.enabled:
            elapsed = time.perf_counter() - self._start
            if self._drawn:
                self._line(f"done ({elapsed:.1f} s)\n")
            else:
                self._write(f" done ({elapsed:.1f} s)\n")
            self._open = self._drawn = False

    def abort(self):
        """End an unfinished step line so that an error message starts a line."""
        if self._open:
            self._write(" failed\n")
            self._open = self._drawn = False

    def note(self, message):
        if self.enabled:
            self._write(f"skcalib: {message}\n")

    def bar(self, label, done, total, elapsed, finished):
        """Sink for the library's progress reports (see ``progress_sink``)."""
        if not (self.bars and self._open) or finished or elapsed < BAR_AFTER:
            return
        fraction = min(1.0, done / total) if total else 0.0
        filled = int(round(fraction * BAR_WIDTH))
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        self._line(f"{label} [{bar}] {100 * fraction:3.0f}% ({elapsed:.0f} s)")
        self._drawn = True

    def reporting(self):
        """Context in which the library's operations report to :meth:`bar`."""
        return progress_sink(self.bar)
