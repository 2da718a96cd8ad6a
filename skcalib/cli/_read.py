"""Reading predictions files for ``skcalib report``.

Files are read chunk by chunk so that memory stays bounded whatever the
file's size: a CSV (plain or gzip'd) streams through pyarrow's CSV reader
when pyarrow >= 14.0.1 is installed and through the :mod:`csv` module
otherwise (both give the same chunks; the fast reader has no line numbers, so
on a problem the file is read again with the csv module to report the line);
Parquet streams by record batches; ``.npy`` and ``.npz`` arrays are loaded
after their headers show they are numeric and of a bounded size (they are
never unpickled).

Every problem with the input raises :class:`InputError` with a one-line
message.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import stat
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

__all__ = ["InputError", "read_predictions", "open_predictions"]

# Names tried, in order, when --y-true / --y-proba are not given.
LABEL_CANDIDATES = ("y_true", "y", "label", "labels", "target", "class")
PROBA_CANDIDATES = ("y_proba", "y_prob", "y_score", "proba", "probability", "score")
# A column with one of these names is never taken for a probability.
WEIGHT_NAMES = ("weight", "weights", "sample_weight", "sample_weights", "w")

# Limits on hostile input (module constants, so that tests can lower them).
MAX_LINE_CHARS = 1 << 20  # one CSV line (record)
MAX_FIELD_CHARS = 131_072  # one CSV field (the csv module's default limit)
MAX_ARRAY_BYTES = 1 << 30  # all arrays loaded from one .npy / .npz file
MAX_NPZ_MEMBERS = 256
MAX_CLASSES = 1000  # distinct labels
MAX_LABEL_CHARS = 1000
# Defaults of --max-rows and --max-bytes: a file past them is refused unless
# the user raises them (0: no limit). Reading runs at a few microseconds per
# row; without a cap an 8.5 MB .csv.gz of 4.4 GB of valid rows ran for more
# than 9 minutes.
MAX_ROWS = 50_000_000
MAX_TEXT_BYTES = 4 << 30  # decompressed text of a CSV file
CHUNK_ROWS = 100_000
MIN_PYARROW = (14, 0, 1)  # 14.0.0 runs code from crafted Parquet files

_SUFFIXES = {
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".npy": "npy",
    ".npz": "npz",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_GZIP_MAGIC = b"\x1f\x8b"


class InputError(ValueError):
    """A problem with the user's input, reported as a one-line message."""


class _Relocate(Exception):
    """The fast CSV reader met a problem; read again to find its line."""


# ---------------------------------------------------------------------------
# Opening files
# ---------------------------------------------------------------------------

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _not_regular(path, mode):
    if stat.S_ISDIR(mode):
        return InputError(f"{path}: is a directory, expected a file.")
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return InputError(f"{path}: is {kind}; only regular files are read.")


def open_regular(path):
    """Open ``path`` for binary reading, refusing anything but a regular file.

    The file is checked with ``stat`` before it is opened (opening a FIFO
    would block, a device could be endless) and again on the open descriptor.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file.") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}.") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}.") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # replaced between stat and open
        os.close(fd)
        raise _not_regular(path, st.st_mode)
    return os.fdopen(fd, "rb")


def _pyarrow(path=None, *, required=False):
    """``(pyarrow, version_ok)``; ``None`` when pyarrow is not installed."""
    try:
        import pyarrow
    except ImportError:
        if required:
            raise InputError(
                f"{path}: reading Parquet files needs pyarrow >= 14.0.1 "
                "(pip install 'pyarrow>=14.0.1')."
            ) from None
        return None
    version = _version_tuple(pyarrow.__version__)
    if version < MIN_PYARROW:
        if required:
            raise InputError(
                f"{path}: pyarrow {pyarrow.__version__} is installed; reading "
                "Parquet needs pyarrow >= 14.0.1 (older versions can run code "
                "from a crafted file, CVE-2023-47248): pip install -U pyarrow."
            )
        return None
    return pyarrow


def _version_tuple(text):
    parts = []
    for piece in str(text).split(".")[:3]:
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        parts.append(int(digits or 0))
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts)


def _file_type(path, head, file_type):
    """``(type, gzipped)`` from the suffix, the magic bytes or ``file_type``."""
    gz = head[:2] == _GZIP_MAGIC
    if file_type is not None:
        kind = _SUFFIXES.get("." + file_type.lower().lstrip("."))
        if kind is None:
            raise InputError(f"{path}: unknown file type {file_type!r}.")
    else:
        name = path.name.lower()
        if name.endswith(".gz"):
            name = name[:-3]
        kind = _SUFFIXES.get(Path(name).suffix) if Path(name).suffix else None
        if kind is None and (gz or path.name.lower().endswith(".gz")):
            kind = "csv"
        if kind is None:
            raise InputError(
                f"{path}: unknown file type {path.suffix.lower() or path.name!r}; "
                f"expected one of {', '.join(sorted(_SUFFIXES))} (CSV files may "
                "be gzip'd: .csv.gz)."
            )
    if gz and kind != "csv":
        raise InputError(f"{path}: a gzip'd {kind} file is not supported.")
    return kind, gz


# ---------------------------------------------------------------------------
# Tables: named columns read chunk by chunk
# ---------------------------------------------------------------------------


class _Table:
    """Columns by name, read in chunks of rows.

    ``chunks(names)`` yields ``(start, lines, columns)``: the index of the
    chunk's first data row, the line number of each row (CSV read by the csv
    module) or ``None``, and ``{name: array}`` (stripped strings for CSV:
    object arrays, or pyarrow string arrays from the pyarrow reader, which
    :func:`_floats` and :func:`_label_keys` convert without a Python object
    per cell).
    """

    kind = None
    index_column = None
    text = False  # cells are strings

    def where(self, lines, start, i):
        """Where row ``i`` of a chunk is, for messages."""
        return f"row {start + i + 1}"


class _CsvTable(_Table):
    kind = "csv"
    text = True

    def __init__(self, path, gz, max_bytes=None):
        self.path, self.gz = path, gz
        self.max_bytes = MAX_TEXT_BYTES if max_bytes is None else int(max_bytes)
        with self._text() as fh:
            try:
                head = fh.read(65536)
            except (UnicodeDecodeError, EOFError, OSError, zlib.error) as exc:
                raise self._decode_error(exc) from None
        if not head.strip():
            raise InputError(f"{path}: the file is empty.")
        try:
            dialect = csv.Sniffer().sniff(head, delimiters=",;\t|")
            self.delimiter, self.quotechar = dialect.delimiter, dialect.quotechar
        except csv.Error:
            self.delimiter, self.quotechar = ",", '"'
        self.quotechar = self.quotechar or '"'
        header = None
        for _, _, row in self._rows():
            header = row
            break
        if header is None:
            raise InputError(f"{path}: the file is empty.")
        self.raw_names = header
        names = [h.strip() for h in header]
        if len(names) > 1 and names[0] == "" and all(names[1:]):
            # pandas' to_csv() writes its index as an unnamed first column.
            self.index_column = ""
        body = names[1:] if self.index_column is not None else names
        if len(set(names)) != len(names) or any(h == "" for h in body):
            raise InputError(
                f"{path}: the first line must be a header with distinct, non-empty "
                f"column names; got {names}."
            )
        self.names = names
        pa = _pyarrow()
        self.engine = "pyarrow" if pa is not None else "python"

    # -- the csv module -----------------------------------------------------
    def _text(self):
        raw = open_regular(self.path)
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if self.gz else raw
        return io.TextIOWrapper(stream, encoding="utf-8-sig", newline="")

    def _decode_error(self, exc, line=None):
        at = f"{self.path}" + ("" if line is None else f", line {line}")
        if isinstance(exc, UnicodeDecodeError):
            return InputError(f"{at}: not a UTF-8 text file.")
        return InputError(f"{at}: cannot read the compressed file: {exc}")

    def _too_many_bytes(self):
        return InputError(
            f"{self.path}: more than {self.max_bytes:,} bytes of text"
            + (" once decompressed" if self.gz else "")
            + "; pass --max-bytes N to read more (0: no limit)."
        )

    def _lines(self, fh, counter):
        cap = MAX_LINE_CHARS
        budget = self.max_bytes or np.inf
        read = 0
        while True:
            line = fh.readline(cap + 1)
            if not line:
                return
            counter[0] += 1
            read += len(line)
            if read > budget:
                raise self._too_many_bytes()
            if len(line) > cap and not (len(line) == cap + 1 and line[-1] == "\n"):
                raise InputError(
                    f"{self.path}, line {counter[0]}: the line is longer than "
                    f"{cap} characters."
                )
            yield line

    def _rows(self):
        """``(line, n_fields, row)`` of each record, blank lines skipped."""
        counter = [0]
        with self._text() as fh:
            reader = csv.reader(
                self._lines(fh, counter),
                delimiter=self.delimiter,
                quotechar=self.quotechar,
                doublequote=True,
                strict=False,
            )
            csv.field_size_limit(MAX_FIELD_CHARS)
            last = 0
            while True:
                try:
                    row = next(reader)
                except StopIteration:
                    return
                except csv.Error as exc:
                    line = counter[0]
                    if "field larger than field limit" in str(exc):
                        raise InputError(
                            f"{self.path}, line {line}: a field is longer than "
                            f"{MAX_FIELD_CHARS} characters."
                        ) from None
                    raise InputError(f"{self.path}, line {line}: {exc}.") from None
                except (UnicodeDecodeError, EOFError, zlib.error) as exc:
                    raise self._decode_error(exc, counter[0] + 1) from None
                except gzip.BadGzipFile as exc:
                    raise self._decode_error(exc) from None
                start, last = last + 1, reader.line_num
                if row:
                    yield start, len(row), row

    def _python_chunks(self, names):
        width = len(self.names)
        wanted = [self.names.index(n) for n in names]
        rows = self._rows()
        next(rows)  # the header
        start = 0
        while True:
            lines, cols = [], [[] for _ in wanted]
            for line, n_fields, row in rows:
                if n_fields != width:
                    if all(not c.strip() for c in row):
                        continue
                    raise InputError(
                        f"{self.path}, line {line}: expected {width} fields, got "
                        f"{n_fields}."
                    )
                row = [c.strip() for c in row]
                if not any(row):
                    continue
                lines.append(line)
                for col, j in zip(cols, wanted, strict=True):
                    col.append(row[j])
                if len(lines) >= CHUNK_ROWS:
                    break
            if not lines:
                return
            yield (
                start,
                np.asarray(lines),
                {n: _object_array(c) for n, c in zip(names, cols, strict=True)},
            )
            start += len(lines)

    # -- pyarrow ------------------------------------------------------------
    def _arrow_chunks(self, names):
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.csv as pacsv

        # The system allocator: pyarrow's default (mimalloc) reserves a
        # gigabyte of address space up front, which breaks a limit on it.
        pool = pa.system_memory_pool()
        raw = open_regular(self.path)
        reader = None
        try:
            source = _native_file(pa, raw)
            if self.gz:
                source = pa.CompressedInputStream(source, "gzip")
            try:
                reader = pacsv.open_csv(
                    source,
                    read_options=pacsv.ReadOptions(
                        block_size=MAX_LINE_CHARS, use_threads=False
                    ),
                    parse_options=pacsv.ParseOptions(
                        delimiter=self.delimiter,
                        quote_char=self.quotechar,
                        double_quote=True,
                        newlines_in_values=True,
                    ),
                    convert_options=pacsv.ConvertOptions(
                        column_types={n: pa.string() for n in self.raw_names},
                        strings_can_be_null=False,
                        quoted_strings_can_be_null=False,
                    ),
                    memory_pool=pool,
                )
                if reader.schema.names != self.raw_names:
                    raise _Relocate("the header could not be read")
                start, pending, n_pending = 0, [], 0
                budget, read = self.max_bytes or np.inf, 0
                for batch in _arrow_batches(reader, pa):
                    # The fields' bytes and a separator or newline after each:
                    # the decompressed text, less any quotes.
                    read += batch.num_rows * batch.num_columns + sum(
                        pc.sum(pc.binary_length(c, memory_pool=pool)).as_py() or 0
                        for c in batch.columns
                    )
                    if read > budget:
                        raise self._too_many_bytes()
                    cols = [
                        pc.utf8_trim_whitespace(c, memory_pool=pool)
                        for c in batch.columns
                    ]
                    for c in cols:
                        longest = pc.max(pc.binary_length(c, memory_pool=pool))
                        if len(c) and longest.as_py() > (MAX_FIELD_CHARS):
                            raise _Relocate(
                                f"a field is longer than {MAX_FIELD_CHARS} characters"
                            )
                    blank = None
                    for c in cols:
                        empty = pc.equal(c, "", memory_pool=pool)
                        blank = (
                            empty
                            if blank is None
                            else pc.and_(blank, empty, memory_pool=pool)
                        )
                    if blank is not None and pc.any(blank).as_py():
                        keep = pc.invert(blank, memory_pool=pool)
                        cols = [pc.filter(c, keep, memory_pool=pool) for c in cols]
                    table = dict(zip(self.names, cols, strict=True))
                    pending.append([table[n] for n in names])
                    n_pending += len(cols[0]) if cols else 0
                    if n_pending >= CHUNK_ROWS:
                        yield start, None, _arrow_columns(names, pending, pa, pool)
                        start, pending, n_pending = start + n_pending, [], 0
                if n_pending:
                    yield start, None, _arrow_columns(names, pending, pa, pool)
            except (pa.ArrowException, OSError, ValueError, EOFError) as exc:
                if isinstance(exc, InputError):
                    raise
                raise _Relocate(" ".join(str(exc).split())) from None
        finally:
            # The streaming reader reads ahead on a thread of pyarrow's: stop
            # it before the file goes (and before an error ends the process).
            if reader is not None:
                reader.close()
            raw.close()

    def chunks(self, names):
        if self.engine == "python":
            yield from self._python_chunks(names)
        else:
            yield from self._arrow_chunks(names)

    def where(self, lines, start, i):
        if lines is None:
            raise _Relocate(f"data row {start + i + 1}")
        return f"line {lines[i]}"


def _native_file(pa, raw):
    """A pyarrow file reading ``raw``'s descriptor without calling Python.

    The CSV reader reads ahead on a pyarrow thread; a read that calls back
    into Python (``pa.PythonFile``) can still be waiting for the interpreter
    when the process exits, which then aborts after the right message. The
    descriptor is reopened through its ``/proc`` or ``/dev/fd`` entry (the
    same file, already checked to be regular); ``pa.PythonFile`` is the
    fallback where neither exists.
    """
    fd = raw.fileno()
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            native = pa.OSFile(f"{folder}/{fd}", mode="r")
        except (OSError, pa.ArrowException):
            continue
        if os.path.samestat(os.fstat(native.fileno()), os.fstat(fd)):
            return native
        native.close()
    return pa.PythonFile(raw, mode="r")


def _arrow_batches(reader, pa):
    while True:
        try:
            yield reader.read_next_batch()
        except StopIteration:
            return


def _arrow_columns(names, pending, pa, pool):
    out = {}
    for j, name in enumerate(names):
        parts = [p[j] for p in pending]
        out[name] = (
            pa.concat_arrays(parts, memory_pool=pool) if len(parts) > 1 else parts[0]
        )
    return out


def _is_arrow(values):
    """Whether ``values`` is a pyarrow array (pyarrow is never imported here:
    an array of it exists only if the reader imported it)."""
    pa = sys.modules.get("pyarrow")
    return pa is not None and isinstance(values, pa.Array)


def _as_objects(values):
    """A pyarrow string array as an object array of ``str``; others as is."""
    if _is_arrow(values):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
    return values


def _arrow_floats(values):
    """Parse a pyarrow string array as float64, or ``None`` if any cell is
    not a number to pyarrow. Where pyarrow parses a cell, it gives the
    correctly rounded double, as ``float()`` does; cells it refuses
    (``float()`` accepts a few more spellings, such as ``"1_0"``) go
    through ``float()`` with the line of a bad one."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        parsed = pc.cast(values, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    return parsed.to_numpy(zero_copy_only=False)


def _object_array(values):
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


class _ArrayTable(_Table):
    """Arrays already in memory (``.npy`` / ``.npz``), served in chunks."""

    def __init__(self, path, kind, arrays, extra=None):
        self.path, self.kind = path, kind
        self.arrays = arrays
        self.extra = extra or {}  # arrays that are not columns (``classes``)
        self.names = list(arrays)

    def n_rows(self, names):
        lengths = {n: self.arrays[n].shape[0] for n in names}
        if len(set(lengths.values())) > 1:
            desc = ", ".join(f"{n!r}: {k}" for n, k in lengths.items())
            raise InputError(
                f"{self.path}: the arrays have different lengths ({desc})."
            )
        return next(iter(lengths.values()))

    def chunks(self, names):
        n = self.n_rows(names)
        for start in range(0, n, CHUNK_ROWS):
            stop = min(n, start + CHUNK_ROWS)
            yield start, None, {k: self.arrays[k][start:stop] for k in names}


class _ParquetTable(_Table):
    kind = "parquet"

    def __init__(self, path):
        self.path = path
        self.pa = _pyarrow(path, required=True)
        import pyarrow.parquet as pq

        self._pq = pq
        with self._file() as pf:
            self.names = list(pf.schema_arrow.names)
        if len(set(self.names)) != len(self.names):
            raise InputError(f"{path}: the column names are not distinct.")

    def _file(self):
        raw = open_regular(self.path)
        try:
            return _ClosingParquet(self._pq.ParquetFile(raw), raw)
        except Exception as exc:  # pyarrow raises its own exception types
            raw.close()
            raise InputError(
                f"{self.path}: cannot read Parquet file: {' '.join(str(exc).split())}"
            ) from None

    def chunks(self, names):
        with self._file() as pf:
            start = 0
            try:
                batches = pf.iter_batches(batch_size=CHUNK_ROWS, columns=names)
                for batch in batches:
                    cols = {}
                    for name in names:
                        col = batch.column(name)
                        if col.null_count:
                            i = int(np.flatnonzero(col.is_null().to_numpy(False))[0])
                            raise InputError(
                                f"{self.path}, row {start + i + 1}: column "
                                f"{name!r} has a missing value."
                            )
                        arr = col.to_numpy(zero_copy_only=False)
                        if (
                            arr.dtype == object
                            and arr.size
                            and (isinstance(arr[0], (list, np.ndarray)))
                        ):
                            arr = np.stack(arr)  # a list column: one row per sample
                        cols[name] = arr
                    yield start, None, cols
                    start += batch.num_rows
            except InputError:
                raise
            except self.pa.ArrowException as exc:
                raise InputError(
                    f"{self.path}: cannot read Parquet file: "
                    f"{' '.join(str(exc).split())}"
                ) from None


class _ClosingParquet:
    def __init__(self, pf, raw):
        self.file, self.raw = pf, raw

    def __enter__(self):
        return self.file

    def __exit__(self, *exc):
        self.raw.close()

    @property
    def schema_arrow(self):
        return self.file.schema_arrow


# -- .npy / .npz: headers checked before any data is read ---------------------


def _read_npy_stream(fh, what, size, budget):
    """One array from a ``.npy`` stream of ``size`` bytes, never unpickled."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = fmt.read_array_header_1_0(fh)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = fmt.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except (ValueError, EOFError, OSError, SyntaxError) as exc:
        raise InputError(f"{what} is not a NumPy array ({exc}).") from None
    if dtype.hasobject:
        raise InputError(
            f"{what} holds Python objects (pickled data), which are never loaded; "
            "save numbers or strings."
        )
    if dtype.kind not in "biufUS" or dtype.names is not None:
        raise InputError(f"{what} has dtype {dtype}; expected numbers or strings.")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if nbytes > budget[0]:
        raise InputError(
            f"{what} declares shape {shape} ({nbytes:,} bytes), over the limit of "
            f"{MAX_ARRAY_BYTES:,} bytes for one file."
        )
    if nbytes > size:
        raise InputError(
            f"{what} declares shape {shape} ({nbytes:,} bytes) but holds only "
            f"{size:,} bytes."
        )
    budget[0] -= nbytes
    try:
        data = fh.read(nbytes)
    except (EOFError, OSError, zlib.error, zipfile.BadZipFile) as exc:
        raise InputError(f"{what}: cannot read: {exc}") from None
    if len(data) != nbytes:
        raise InputError(f"{what} is truncated.")
    arr = np.frombuffer(data, dtype=dtype)
    order = "F" if fortran else "C"
    return arr.reshape(shape, order=order).copy()


def _load_npy(path):
    with open_regular(path) as fh:
        size = os.fstat(fh.fileno()).st_size
        return _read_npy_stream(fh, f"{path}", size, [MAX_ARRAY_BYTES])


def _load_npz(path):
    arrays = {}
    budget = [MAX_ARRAY_BYTES]
    with open_regular(path) as fh:
        try:
            zf = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise InputError(f"{path}: not a .npz (zip) file ({exc}).") from None
        with zf:
            members = zf.infolist()
            if len(members) > MAX_NPZ_MEMBERS:
                raise InputError(f"{path}: more than {MAX_NPZ_MEMBERS} arrays.")
            for info in members:
                what = f"{path}: member {info.filename!r}"
                if info.is_dir():
                    continue
                if not info.filename.endswith(".npy"):
                    raise InputError(f"{what} is not a NumPy array (.npy).")
                if info.file_size > budget[0]:
                    raise InputError(
                        f"{what} expands to {info.file_size:,} bytes, over the "
                        f"limit of {MAX_ARRAY_BYTES:,} bytes for one file."
                    )
                try:
                    with zf.open(info) as member:
                        arr = _read_npy_stream(member, what, info.file_size, budget)
                except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as exc:
                    raise InputError(f"{what}: cannot read: {exc}") from None
                except NotImplementedError as exc:
                    raise InputError(f"{what}: {exc}") from None
                arrays[info.filename[:-4]] = arr
    return arrays


def open_table(path, file_type=None, *, max_bytes=None):
    """A :class:`_Table` over the file at ``path``."""
    path = Path(path)
    with open_regular(path) as fh:
        head = fh.read(8)
    kind, gz = _file_type(path, head, file_type)
    if kind == "csv":
        return _CsvTable(path, gz, max_bytes)
    if kind == "parquet":
        return _ParquetTable(path)
    if kind == "npy":
        arr = _load_npy(path)
        if arr.ndim != 2 or arr.shape[1] < 2:
            raise InputError(
                f"{path}: a .npy file must hold a 2-D array whose first column is "
                "the label and the other columns probabilities; got shape "
                f"{arr.shape}."
            )
        return _ArrayTable(
            path, "npy", {str(j): arr[:, j] for j in range(arr.shape[1])}
        )
    arrays = _load_npz(path)
    extra = {}
    if "classes" in arrays:
        extra["classes"] = arrays["classes"]
    for key, arr in arrays.items():
        if key != "classes" and arr.ndim not in (1, 2):
            raise InputError(
                f"{path}: array {key!r} has shape {arr.shape}; expected 1-D "
                "labels or probabilities, or a 2-D probability matrix."
            )
    return _ArrayTable(path, "npz", arrays, extra)


# ---------------------------------------------------------------------------
# Columns
# ---------------------------------------------------------------------------


def _pick(names, wanted, option):
    if wanted not in names:
        raise InputError(
            f"no column {wanted!r} for {option}; available columns: {', '.join(names)}."
        )
    return wanted


def _auto_label(table, names):
    lowered = {}
    for n in names:
        lowered.setdefault(n.lower(), n)
    found = [lowered[c] for c in LABEL_CANDIDATES if c in lowered]
    if len(found) > 1:
        raise InputError(
            f"several columns could hold the labels ({', '.join(found)}); pass "
            "--y-true COL."
        )
    if not found:
        raise InputError(
            "cannot tell which column holds the labels; pass --y-true "
            f"(available columns: {', '.join(names)})."
        )
    return found[0]


def _parse_labels(values):
    """Strings -> int, float or str labels (the first type that fits them all)."""
    arr = np.asarray(values, dtype=str)
    for dtype in (np.int64, np.float64):
        try:
            return arr.astype(dtype)
        except (ValueError, OverflowError):
            continue
    return arr


def _convert_like(values, reference):
    """Convert strings (column names, --pos-label) to the dtype of the labels."""
    reference = np.asarray(reference)
    kind = reference.dtype.kind
    out = []
    for v in values:
        if kind in "iu":
            try:
                out.append(int(v))
                continue
            except ValueError:
                pass
            try:
                f = float(v)
                if f.is_integer():
                    out.append(int(f))
                    continue
            except ValueError:
                pass
            return None
        elif kind == "f":
            try:
                out.append(float(v))
            except ValueError:
                return None
        elif kind == "b":
            low = str(v).lower()
            if low in ("true", "1"):
                out.append(True)
            elif low in ("false", "0"):
                out.append(False)
            else:
                return None
        else:
            out.append(str(v))
    return np.asarray(out, dtype=reference.dtype if kind in "iufb" else object)


_NAME_SEPARATORS = "_-.: "


def _whole_token_prefix(names):
    """The longest common prefix of ``names`` that ends with a separator."""
    prefix = os.path.commonprefix(list(names))
    cut = max(prefix.rfind(c) for c in _NAME_SEPARATORS)
    return prefix[: cut + 1]


def _common_affix_stripped(names):
    """Column names without a shared prefix or suffix such as ``p_`` or ``_proba``.

    Only whole tokens (up to a separator ``_ - . :`` or space) are removed:
    ``p_cat, p_car`` give ``cat, car``, not ``t, r``.
    """
    names = list(names)
    if len(names) < 2:
        return names
    prefix = _whole_token_prefix(names)
    suffix = _whole_token_prefix([n[len(prefix) :][::-1] for n in names])[::-1]
    stripped = [n[len(prefix) : len(n) - len(suffix)] for n in names]
    return stripped if all(stripped) else names


def _labels_from_columns(proba_names, label_strings):
    """Class labels in column order when column names spell the labels.

    Returns ``None`` when the names are not about the labels; the columns are
    then taken to follow the sorted labels, as ``estimator.classes_`` does.
    Names that spell some labels but not all of them are an error: guessing
    the order would silently swap columns.
    """
    present = set(label_strings)
    candidates = (list(proba_names), _common_affix_stripped(proba_names))
    for names in candidates:
        if len(set(names)) == len(names) and present <= set(names):
            return names
    for names in candidates:
        named = present & set(names)
        if named:
            raise InputError(
                f"the probability columns {list(proba_names)} name the classes "
                f"{sorted(named)} but not {sorted(present - set(names))}; name "
                "each column after its class, or pass --y-proba with the "
                "columns in sorted-label order."
            )
    return None


# ---------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------


def _first_bad_number(values):
    for i, v in enumerate(values):
        try:
            float(v)
        except (TypeError, ValueError):
            return i
    return None


def _floats(table, values, name, lines, start):
    """A chunk of a numeric column as float64, with the line of a bad cell."""
    out = _arrow_floats(values) if _is_arrow(values) else None
    values = np.asarray(_as_objects(values)) if out is None else out
    if values.dtype.kind in "biuf":
        out = values.astype(np.float64)
    else:
        if values.dtype.kind in "US":
            values = values.astype(object)
        try:
            out = values.astype(np.float64)
        except (TypeError, ValueError):
            i = _first_bad_number(values.ravel())
            if i is None:  # pragma: no cover - numpy and float() disagree
                raise InputError(f"column {name!r} must hold numbers.") from None
            row, v = np.unravel_index(i, values.shape)[0], values.ravel()[i]
            at = table.where(lines, start, row)
            if not str(v).strip():
                raise InputError(
                    f"{table.path}, {at}: column {name!r} has a missing value."
                ) from None
            raise InputError(
                f"{table.path}, {at}: column {name!r} holds {str(v)!r}, not a number."
            ) from None
    bad = ~np.isfinite(out)
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        row = np.unravel_index(i, out.shape)[0]
        at = table.where(lines, start, row)
        what = "NaN" if np.isnan(out.ravel()[i]) else "an infinite value"
        raise InputError(f"{table.path}, {at}: column {name!r} holds {what}.")
    return out


def _label_keys(table, values, name, lines, start):
    """A chunk of labels as hashable keys (stripped strings or numbers); a
    pyarrow string array stays one (see :func:`_distinct_keys`)."""
    if _is_arrow(values):
        import pyarrow.compute as pc

        if len(values) and pc.any(pc.equal(values, "")).as_py():
            i = int(np.flatnonzero(pc.equal(values, "").to_numpy(False))[0])
            at = table.where(lines, start, i)
            raise InputError(
                f"{table.path}, {at}: the label column {name!r} has an empty cell."
            )
        return values, True
    values = np.asarray(values)
    if values.ndim != 1:
        raise InputError(f"the label column {name!r} must be 1-D.")
    if values.dtype.kind in "USO":
        keys = values.astype(object) if values.dtype.kind != "O" else values
        if values.dtype.kind != "O" or not table.text:
            keys = _object_array([str(v).strip() for v in keys.tolist()])
        empty = keys == ""
        if empty.any():
            i = int(np.flatnonzero(empty)[0])
            at = table.where(lines, start, i)
            raise InputError(
                f"{table.path}, {at}: the label column {name!r} has an empty cell."
            )
        return keys, True
    if values.dtype.kind == "f" and np.isnan(values).any():
        i = int(np.flatnonzero(np.isnan(values))[0])
        at = table.where(lines, start, i)
        raise InputError(f"{table.path}, {at}: the label column {name!r} is NaN.")
    if values.dtype.kind not in "biuf":
        raise InputError(f"the label column {name!r} has dtype {values.dtype}.")
    return values, False


def _distinct_keys(keys):
    """The set of the keys of a chunk of labels."""
    if _is_arrow(keys):
        import pyarrow.compute as pc

        return set(pc.unique(keys).to_pylist())
    return set(keys.tolist())


def _check_index(table, values, lines, start):
    values = _as_objects(values)
    expected = np.arange(start, start + len(values)).astype(str).astype(object)
    bad = values != expected
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        at = table.where(lines, start, i)
        raise InputError(
            f"{table.path}, {at}: the first column has no name and holds "
            f"{values[i]!r}, not the row number {start + i} of a pandas index; "
            "name it in the header (or write the file with index=False)."
        )


# ---------------------------------------------------------------------------
# Predictions
# ---------------------------------------------------------------------------


class Model:
    """The probability columns of one model: ``cols`` in the file, ``order``
    (a permutation into sorted-label order, or None), ``labels`` (the class
    of each column once ordered, or None) and ``n_columns``."""

    def __init__(self, name, cols, n_columns):
        self.name, self.cols, self.n_columns = name, list(cols), n_columns
        self.order = None
        self.labels = None


class Predictions:
    """An opened predictions file: columns chosen, labels known (pass 1).

    :meth:`chunks` reads the file again (pass 2) and yields
    ``(codes, proba, weight)``: ``codes`` index :attr:`classes`, ``proba``
    has the probability columns in the order of :attr:`labels` (sorted when
    the columns are named after the classes). With several models
    (:attr:`models`), :meth:`model_chunks` yields one ``proba`` per model.
    """

    def __init__(self, table, label_col, weight_col, keys, text_labels, n_rows):
        self.table = table
        self.path = table.path
        self.label_col, self.weight_col = label_col, weight_col
        self.n_rows = n_rows
        self.text_labels = text_labels
        keys = sorted(keys, key=lambda k: (str(type(k)), k))
        if text_labels:
            parsed = _parse_labels(keys)
        else:
            parsed = np.asarray(keys)
        self.classes, inverse = np.unique(parsed, return_inverse=True)
        self._code = {k: int(c) for k, c in zip(keys, inverse.ravel(), strict=True)}
        self.label_strings = (
            keys if text_labels else [str(v) for v in self.classes.tolist()]
        )
        self.models = []

    # The columns of the first (usually only) model.
    @property
    def proba_cols(self):
        return self.models[0].cols if self.models else None

    @property
    def order(self):
        return self.models[0].order

    @property
    def labels(self):
        return self.models[0].labels

    @property
    def n_columns(self):
        return self.models[0].n_columns

    def describe(self, model=None):
        """The columns in use (of ``model``, or of every model), for messages."""
        parts = [f"labels from column {self.label_col!r}"]
        cols = [c for m in self.models for c in m.cols] if model is None else None
        cols = model.cols if model is not None else cols
        if cols:
            parts.append(f"probabilities from {', '.join(repr(c) for c in cols)}")
        if self.weight_col is not None:
            parts.append(f"weights from {self.weight_col!r}")
        return "; ".join(parts)

    def info(self):
        out = {
            "file": str(self.path),
            "y_true_column": self.label_col,
            "y_proba_columns": [c for m in self.models for c in m.cols],
            "sample_weight_column": self.weight_col,
            "labels": None if self.labels is None else self.labels.tolist(),
            "n_rows": int(self.n_rows),
            "index_column_ignored": self.table.index_column is not None,
            "reader": getattr(self.table, "engine", self.table.kind),
            "gzip": bool(getattr(self.table, "gz", False)),
        }
        if len(self.models) > 1:
            out["models"] = [
                {
                    "name": m.name,
                    "y_proba_columns": list(m.cols),
                    "labels": None if m.labels is None else m.labels.tolist(),
                }
                for m in self.models
            ]
        return out

    def _codes(self, keys, text):
        if _is_arrow(keys):
            import pyarrow as pa
            import pyarrow.compute as pc

            known = list(self._code)
            at = pc.index_in(keys, value_set=pa.array(known, type=keys.type))
            if at.null_count:  # pragma: no cover - the file changed
                keys = _as_objects(keys)
            else:
                table = np.array([self._code[k] for k in known], dtype=np.int64)
                return table[at.to_numpy(zero_copy_only=False)]
        if text:
            code = self._code
            try:
                return np.fromiter((code[k] for k in keys), np.int64, len(keys))
            except KeyError as exc:  # pragma: no cover - the file changed
                raise InputError(
                    f"{self.path}: label {exc.args[0]!r} appeared on the second "
                    "reading; was the file modified?"
                ) from None
        idx = np.searchsorted(self.classes, keys)
        idx = np.minimum(idx, len(self.classes) - 1)
        if not np.array_equal(self.classes[idx], keys):  # pragma: no cover
            raise InputError(f"{self.path}: the file changed while being read.")
        return idx.astype(np.int64)

    def _chunks(self):
        table = self.table
        names = [self.label_col, *(c for m in self.models for c in m.cols)]
        if self.weight_col is not None:
            names.append(self.weight_col)
        for start, lines, cols in table.chunks(list(dict.fromkeys(names))):
            keys, text = _label_keys(
                table, cols[self.label_col], self.label_col, lines, start
            )
            codes = self._codes(keys, text)
            values = {}
            probas = []
            for model in self.models:
                blocks = []
                for col in model.cols:
                    if col not in values:
                        values[col] = _floats(table, cols[col], col, lines, start)
                    v = values[col]
                    blocks.append(v if v.ndim == 2 else v[:, None])
                proba = np.hstack(blocks) if len(blocks) > 1 else blocks[0]
                if model.order is not None:
                    proba = proba[:, model.order]
                if proba.shape[1] == 1:
                    proba = proba[:, 0]
                probas.append(proba)
            w = None
            if self.weight_col is not None:
                w = _floats(table, cols[self.weight_col], self.weight_col, lines, start)
                if w.ndim != 1:
                    raise InputError(
                        f"the weight column {self.weight_col!r} must be 1-D."
                    )
            yield codes, probas, w

    def model_chunks(self):
        """Pass 2: ``(codes, [proba of each model], weight)`` chunk by chunk."""
        yield from _relocating(self.table, self._chunks)

    def chunks(self):
        """Pass 2: ``(codes, proba, weight)`` chunk by chunk (one model)."""
        if len(self.models) != 1:
            raise InputError(
                f"{self.path}: {len(self.models)} models; this needs exactly one."
            )
        for codes, probas, w in self.model_chunks():
            yield codes, probas[0], w


def _relocating(table, make, *, restart_ok=False):
    """Run ``make()``; if the fast CSV reader cannot say where a problem is,
    read again with the csv module, which reports the line.

    With ``restart_ok`` a second reading that finds nothing wrong (the csv
    module accepts what pyarrow refused) stands, and the csv module reads the
    file from then on; otherwise pyarrow's message is reported.
    """
    try:
        yield from make()
    except _Relocate as exc:
        table.engine = "python"
        for _ in make():
            pass
        if not restart_ok:
            raise InputError(f"{table.path}: {exc}") from None


def _scan_labels(table, label_col, weight_col, max_rows=None):
    """Pass 1: the distinct labels and the number of rows (at most
    ``max_rows``: more is an error, which saves reading the rest)."""
    max_rows = MAX_ROWS if max_rows is None else int(max_rows)
    names = [label_col]
    if table.index_column is not None:
        names.append(table.index_column)
    state = {"keys": set(), "n": 0, "text": False}

    def scan():
        state.update(keys=set(), n=0)
        for start, lines, cols in table.chunks(names):
            keys, text = _label_keys(table, cols[label_col], label_col, lines, start)
            state["text"] = text
            new = _distinct_keys(keys) - state["keys"]
            long = [k for k in new if isinstance(k, str) and len(k) > MAX_LABEL_CHARS]
            if long:
                i = _as_objects(keys).tolist().index(long[0])
                at = table.where(lines, start, i)
                raise InputError(
                    f"{table.path}, {at}: a label in column {label_col!r} is longer "
                    f"than {MAX_LABEL_CHARS} characters."
                )
            state["keys"].update(new)
            if len(state["keys"]) > MAX_CLASSES:
                raise InputError(
                    f"{table.path}: the label column {label_col!r} holds more than "
                    f"{MAX_CLASSES} distinct values; is it the label column? "
                    "(pass --y-true COL)"
                )
            if table.index_column is not None:
                _check_index(table, cols[table.index_column], lines, start)
            state["n"] = start + len(keys)
            if max_rows and state["n"] > max_rows:
                raise InputError(
                    f"{table.path}: more than {max_rows:,} rows; pass --max-rows N "
                    "to read more (0: no limit)."
                )
            yield

    for _ in _relocating(table, scan, restart_ok=True):
        pass
    if state["n"] == 0:
        raise InputError(f"{table.path}: no data rows after the header.")
    return state["keys"], state["text"], state["n"]


def _proba_columns(table, label_col, weight_col, n_classes, label_strings):
    names = table.names
    excluded = {label_col, weight_col, table.index_column}
    if table.kind == "npz":
        excluded.add("classes")
    rest = [n for n in names if n not in excluded]
    if table.kind == "npy":
        return rest
    rest = [n for n in rest if n.lower() not in WEIGHT_NAMES]
    named = [n for n in rest if n.lower() in PROBA_CANDIDATES]
    if len(named) == 1:
        return named
    if len(named) > 1:
        rest = named
    elif not rest:
        raise InputError(
            f"no probability column besides the label column {label_col!r}; "
            "pass --y-proba."
        )
    elif len(rest) == 1:
        return rest
    else:
        # Several columns are one per class when they are named after the
        # classes or are as many as the classes.
        if (
            _labels_from_columns(rest, label_strings) is not None
            or len(rest) == n_classes
        ):
            return rest
    raise InputError(
        f"cannot tell which columns hold the probabilities (labels from column "
        f"{label_col!r}): {', '.join(repr(n) for n in rest)} could all be; pass "
        "--y-proba COL [COL ...] (and --y-true COL)."
    )


def open_predictions(
    path,
    *,
    y_true=None,
    y_proba=None,
    sample_weight=None,
    file_type=None,
    models=None,
    compare=False,
    max_rows=None,
    max_bytes=None,
):
    """Open a predictions file, choose its columns and read its labels (pass 1).

    ``models`` (a list of column lists, one per model) or ``compare`` (every
    numeric column besides the labels and weights is one model) give several
    models; ``y_proba`` the columns of one. ``max_rows`` and ``max_bytes``
    (``None``: :data:`MAX_ROWS`, :data:`MAX_TEXT_BYTES`; 0: no limit) cap
    the rows and the decompressed text read.

    Returns
    -------
    Predictions
    """
    table = open_table(path, file_type, max_bytes=max_bytes)
    names = [n for n in table.names if n != table.index_column]
    if y_true is not None:
        label_col = _pick(names, y_true, "--y-true")
    elif table.kind == "npy":
        label_col = "0"  # a .npy file holds the labels in its first column
    else:
        label_col = _auto_label(table, names)
    weight_col = None
    if sample_weight is not None:
        weight_col = _pick(names, sample_weight, "--sample-weight")
        if weight_col == label_col:
            # Weights of 0 and 1 would silently drop every negative row.
            raise InputError(
                f"--sample-weight {weight_col!r} is the label column; the "
                "weights need a column of their own."
            )
    groups = None
    if models is not None:
        groups = [[_pick(names, c, "--y-proba") for c in cols] for cols in models]
    elif y_proba:
        groups = [[_pick(names, c, "--y-proba") for c in y_proba]]
    for cols in groups or []:
        for col, role in ((label_col, "the label"), (weight_col, "the weight")):
            if col in cols:
                raise InputError(f"column {col!r} is both {role} and a probability.")
    keys, text, n_rows = _scan_labels(table, label_col, weight_col, max_rows)
    pred = Predictions(table, label_col, weight_col, keys, text, n_rows)
    if compare and groups is None:
        groups = [[c] for c in _numeric_columns(table, label_col, weight_col)]
        if len(pred.classes) > 2:
            raise InputError(
                f"--compare takes one probability column per model, for two "
                f"classes; the labels have {len(pred.classes)}: list each model's "
                "columns with --y-proba a1,b1 a2,b2 ... (one value per class, "
                "one comma-separated name per model)."
            )
    if groups is None:
        groups = [
            _proba_columns(
                table, label_col, weight_col, len(pred.classes), pred.label_strings
            )
        ]
    pred.models = [
        Model(name, cols, _n_columns(table, cols))
        for name, cols in zip(_model_names(groups), groups, strict=True)
    ]
    for model in pred.models:
        _column_classes(pred, model)
    return pred


def _numeric_columns(table, label_col, weight_col):
    """The columns besides the labels and weights whose first chunk holds
    numbers (an id or a date column is not a model)."""
    excluded = {label_col, weight_col, table.index_column, "classes"}
    rest = [n for n in table.names if n not in excluded]
    rest = [n for n in rest if n.lower() not in WEIGHT_NAMES]
    first = None
    if rest:
        chunks = table.chunks(rest)
        first = next(chunks, None)
        chunks.close()
    found = []
    for name in rest:
        try:
            _floats(table, first[2][name], name, first[1], 0)
        except (InputError, _Relocate):
            continue
        found.append(name)
    if not found:
        raise InputError(
            f"--compare: no numeric column besides the label column {label_col!r}."
        )
    return found


def _model_names(groups):
    """A name per model: its column, or what its columns share (``lr`` for
    ``lr_cat, lr_dog``), made distinct."""
    names = []
    for cols in groups:
        if len(cols) == 1:
            name = cols[0]
        else:
            name = _whole_token_prefix(cols).rstrip(_NAME_SEPARATORS)
            if not name:
                reversed_cols = [c[::-1] for c in cols]
                name = _whole_token_prefix(reversed_cols)[::-1].strip(_NAME_SEPARATORS)
            name = name or "+".join(cols)
        names.append(name)
    if len(groups) > 1:
        for i, name in enumerate(names):
            if names.count(name) > 1:
                names[i] = f"{name} ({i + 1})"
    return names


def _n_columns(table, cols):
    if isinstance(table, _ArrayTable):
        return sum(
            table.arrays[c].shape[1] if table.arrays[c].ndim == 2 else 1 for c in cols
        )
    return len(cols)


def _column_classes(pred, model):
    """Order the probability columns of ``model`` after the classes they are
    named for."""
    table, cols = pred.table, model.cols
    width = model.n_columns
    if width < 2:
        return
    class_names = None
    if width == len(cols):
        names = _labels_from_columns(cols, pred.label_strings)
        if names is not None:
            class_names = _convert_like(names, pred.classes)
    classes_array = getattr(table, "extra", {}).get("classes")
    if (
        classes_array is not None
        and table.kind == "npz"
        and "classes" not in (pred.label_col, *cols)
    ):
        # An .npz may store ``estimator.classes_``: the label of each column.
        class_names = np.asarray(classes_array).reshape(-1)
        if class_names.shape[0] != width:
            raise InputError(
                f"'classes' has {class_names.shape[0]} labels but there are "
                f"{width} probability columns."
            )
        if class_names.dtype.kind in "US" and pred.text_labels:
            # Text labels were parsed (e.g. "1" -> 1); parse the names alike.
            converted = _convert_like(class_names.tolist(), pred.classes)
            if converted is not None:
                class_names = converted
    if class_names is not None:
        # Columns in sorted-label order, as ``predict_proba`` returns them, so
        # that the default positive class is the greater label.
        order = np.argsort(class_names, kind="stable")
        model.order, model.labels = order, class_names[order]


def read_predictions(
    path, *, y_true=None, y_proba=None, sample_weight=None, file_type=None
):
    """Read labels, probabilities and optional weights from a file into memory.

    ``skcalib report`` streams the file instead (see :func:`open_predictions`);
    this function returns whole arrays.

    Parameters
    ----------
    path : str or path-like
        A CSV (header line required; ``,``, ``;``, tab or ``|`` separated;
        plain or gzip'd; an unnamed first column holding 0, 1, ... -- a pandas
        index -- is ignored), ``.npy`` (2-D array: column 0 the labels, the
        rest probabilities; columns are named ``"0"``, ``"1"``, ...), ``.npz``
        (arrays by name, a 2-D array counts as one column per class; an
        optional ``classes`` array gives the label of each probability column)
        or Parquet file.
    y_true : str, default=None
        Label column. ``None`` tries ``y_true``, ``y``, ``label``, ``target``
        and ``class`` (exactly one must be present).
    y_proba : list of str, default=None
        Probability columns: one column (probability of the positive class) or
        one per class. ``None`` tries ``y_proba``, ``proba``, ``score``, ...;
        else the one remaining column, or the remaining columns when they are
        named after the classes or are as many as the classes. A column named
        ``weight``, ``sample_weight`` or ``w`` is never a probability.
    sample_weight : str, default=None
        Optional weight column.
    file_type : str, default=None
        Override the type given by the file's suffix (``"csv"``, ``"npy"``,
        ``"npz"``, ``"parquet"``).

    Returns
    -------
    y_true : ndarray of shape (n_samples,)
    y_proba : ndarray of shape (n_samples,) or (n_samples, n_columns)
        When the probability columns are named after the classes (``cat``,
        ``dog``, or ``p_cat``, ``p_dog``), they are reordered to follow the
        sorted labels, as ``predict_proba`` does.
    sample_weight : ndarray of shape (n_samples,) or None
    info : dict
        Column names used, and ``"labels"``: the sorted class labels when the
        probability columns are named after the classes (else ``None``).

    Raises
    ------
    InputError
        A subclass of ``ValueError`` with a one-line message.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from skcalib.cli import read_predictions
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "preds.csv"
    >>> lines = ["label,p_a,p_b", "b,0.2,0.8", "a,0.6,0.4"]
    >>> _ = path.write_text(chr(10).join(lines))
    >>> y, proba, weight, info = read_predictions(path, y_true="label")
    >>> y.tolist(), proba.shape, info["labels"]
    (['b', 'a'], (2, 2), ['a', 'b'])
    """
    pred = open_predictions(
        path,
        y_true=y_true,
        y_proba=y_proba,
        sample_weight=sample_weight,
        file_type=file_type,
    )
    codes, probas, weights = [], [], []
    for c, p, w in pred.chunks():
        codes.append(c)
        probas.append(p)
        weights.append(w)
    y = pred.classes[np.concatenate(codes)]
    proba = np.concatenate(probas)
    weight = None if pred.weight_col is None else np.concatenate(weights)
    return y, proba, weight, pred.info()
