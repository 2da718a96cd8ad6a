"""Writing the outputs of ``skcalib report`` safely.

Each output is written to a new temporary file in the output directory
(created with ``O_CREAT | O_EXCL``, which never follows a symlink) and moved
over its final name with :func:`os.replace` once complete. ``os.replace``
renames: when the final name is a symlink, the link itself is replaced and
its target is left alone. A run that fails leaves the previous outputs as
they were.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ._read import InputError

__all__ = ["OutputDir"]


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


class OutputDir:
    """The ``--out`` directory: outputs are staged, then committed together."""

    def __init__(self, out):
        if out is None or str(out) == "":
            raise InputError("--out must name a directory, not ''.")
        self.path = Path(out)
        self._staged = []  # (temporary path, final path)

    def create(self):
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise InputError(
                f"--out {self.path}: exists and is not a directory."
            ) from None
        except OSError as exc:
            raise InputError(
                f"--out {self.path}: cannot create the directory: {exc.strerror}."
            ) from None
        if not self.path.is_dir():
            raise InputError(f"--out {self.path}: exists and is not a directory.")
        return self

    def stage(self, name, write):
        """Write ``name`` through ``write(binary_file)`` to a temporary file."""
        final = self.path / name
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=self.path)
        except OSError as exc:
            raise InputError(f"cannot write {final}: {exc.strerror}.") from None
        try:
            os.fchmod(fd, 0o666 & ~_umask())
            with os.fdopen(fd, "wb") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            _remove(tmp)
            raise InputError(f"cannot write {final}: {exc.strerror or exc}.") from None
        except BaseException:
            _remove(tmp)
            raise
        self._staged.append((tmp, final))
        return final

    def commit(self, own_names=()):
        """Move every staged file over its final name, then remove the files
        of ``own_names`` (outputs an earlier run may have written) that this
        run did not write: a report beside a figure of other data misleads."""
        written = {final.name for _, final in self._staged}
        try:
            while self._staged:
                tmp, final = self._staged[0]
                try:
                    os.replace(tmp, final)
                except OSError as exc:
                    raise InputError(
                        f"cannot write {final}: {exc.strerror or exc}."
                    ) from None
                self._staged.pop(0)
        finally:
            self.discard()
        for name in own_names:
            stale = self.path / name
            if name not in written and (stale.is_symlink() or stale.is_file()):
                _remove(stale)

    def discard(self):
        """Remove the staged files that were not committed."""
        for tmp, _ in self._staged:
            _remove(tmp)
        self._staged = []


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
