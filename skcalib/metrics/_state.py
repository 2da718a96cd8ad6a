"""The portable state format of the streaming objects.

A state is bytes that a later version of skcalib can read, on any machine,
without pickle (which runs code when it loads and breaks across versions).
Layout, all integers little-endian::

    magic        8 bytes   b"SKCALIB\\x1a"
    version      uint16    FORMAT_VERSION
    header size  uint32    h
    header       h bytes   UTF-8 JSON object: the kind of object, the skcalib
                           version that wrote it, its parameters and scalar
                           state, and the list of arrays that follow
    arrays                 each as declared in the header ("arrays": name,
                           dtype, shape, stored size); stored byte-shuffled
                           (the i-th byte of every value together) and
                           zlib-compressed
    checksum     uint32    CRC-32 of everything before it

Reading checks every declared size against the bytes actually present before
allocating anything, decompresses no more than the declared size, and leaves
the checks of the values to the object being loaded (:class:`StateReader`
gives it the helpers). Any failure is a ``ValueError`` that says what is
wrong. Nothing read from the bytes is ever evaluated.
"""

from __future__ import annotations

import json
import math
import numbers
import struct
import zlib

import numpy as np

MAGIC = b"SKCALIB\x1a"
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sHI")
_CRC = struct.Struct("<I")
# A header is a few kilobytes (labels included); anything far larger is not a
# state this version wrote.
MAX_HEADER_BYTES = 1 << 24
# The arrays a loaded object keeps in memory (dense grids) may not exceed this.
MAX_DENSE_BYTES = 1 << 30
_DTYPES = {"<f8": np.float64, "<u4": np.uint32, "<i8": np.int64, "|u1": np.uint8}
_LABEL_KINDS = "biufU"


def _version():
    from .. import __version__

    return __version__


def _shuffle(arr):
    raw = np.ascontiguousarray(arr).view(np.uint8)
    size = arr.dtype.itemsize
    return raw.reshape(-1, size).T.tobytes() if size > 1 else raw.tobytes()


def _unshuffle(raw, dtype, shape):
    size = np.dtype(dtype).itemsize
    buf = np.frombuffer(raw, dtype=np.uint8)
    if size > 1:
        buf = buf.reshape(size, -1).T
    return np.ascontiguousarray(buf).view(dtype).reshape(shape).copy()


class StateWriter:
    """Collects a header and arrays, then writes the bytes (:meth:`tobytes`)."""

    def __init__(self, kind):
        self.header = {"kind": kind, "skcalib_version": _version()}
        self._blobs = []
        self._specs = []

    def add_array(self, name, arr):
        arr = np.asarray(arr)
        dtype = arr.dtype.newbyteorder("<").str if arr.dtype.itemsize > 1 else "|u1"
        if dtype not in _DTYPES:
            raise TypeError(f"cannot store an array of dtype {arr.dtype}")
        arr = arr.astype(_DTYPES[dtype], copy=False)
        blob = zlib.compress(_shuffle(arr), 6)
        self._specs.append(
            {"name": name, "dtype": dtype, "shape": list(arr.shape), "size": len(blob)}
        )
        self._blobs.append(blob)

    def tobytes(self):
        header = dict(self.header, arrays=self._specs)
        text = json.dumps(header, allow_nan=False, separators=(",", ":")).encode()
        body = b"".join(
            [_PREFIX.pack(MAGIC, FORMAT_VERSION, len(text)), text, *self._blobs]
        )
        return body + _CRC.pack(zlib.crc32(body))


class StateReader:
    """The parsed bytes of a state: ``header`` (a dict) and ``arrays``.

    Parameters
    ----------
    data : bytes-like
    kind : str
        The kind of object expected.
    """

    def __init__(self, data, kind):
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(
                "data must be bytes, bytearray or memoryview, got "
                f"{type(data).__name__}."
            )
        data = memoryview(data).cast("B")
        n = data.nbytes
        if n < _PREFIX.size + _CRC.size or bytes(data[:8]) != MAGIC:
            raise ValueError(
                "data is not a skcalib state: it does not start with the skcalib "
                "magic bytes (is it truncated, or another file?)."
            )
        _, version, header_size = _PREFIX.unpack_from(data, 0)
        if version != FORMAT_VERSION:
            raise ValueError(
                f"The state has format version {version}; this version of skcalib "
                f"({_version()}) reads version {FORMAT_VERSION}. Read it with the "
                "version of skcalib that wrote it, or a later one."
            )
        (crc,) = _CRC.unpack_from(data, n - _CRC.size)
        if zlib.crc32(data[: n - _CRC.size]) != crc:
            raise ValueError(
                "The state is corrupt or truncated: its checksum does not match "
                f"its {n} bytes."
            )
        start = _PREFIX.size
        if header_size > min(MAX_HEADER_BYTES, n - start - _CRC.size):
            raise ValueError(
                f"The state declares a header of {header_size} bytes, more than "
                "the data holds."
            )
        try:
            header = json.loads(bytes(data[start : start + header_size]))
        except (ValueError, RecursionError) as exc:  # JSON, UTF-8, huge ints
            raise ValueError(f"The state header is not valid JSON: {exc}") from None
        if not isinstance(header, dict):
            raise ValueError("The state header must be a JSON object.")
        self.header = header
        got = self.get("kind", str)
        if got != kind:
            raise ValueError(f"The state holds a {got}, not a {kind}.")
        self.version = self.get("skcalib_version", str)
        self.arrays = self._read_arrays(data, start + header_size, n - _CRC.size)

    def _read_arrays(self, data, pos, end):
        specs = self.get("arrays", list)
        arrays = {}
        for spec in specs:
            if not isinstance(spec, dict):
                raise ValueError(
                    "Each entry of the state's 'arrays' must be an object."
                )
            name = _typed(spec, "name", str, "arrays")
            dtype = _typed(spec, "dtype", str, name)
            shape = _typed(spec, "shape", list, name)
            size = _typed(spec, "size", int, name)
            if dtype not in _DTYPES:
                raise ValueError(f"Array {name!r} has an unknown dtype {dtype!r}.")
            if len(shape) > 3 or not all(
                isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**40
                for d in shape
            ):
                raise ValueError(f"Array {name!r} has an invalid shape {shape!r}.")
            if name in arrays:
                raise ValueError(f"Array {name!r} appears twice in the state.")
            expected = math.prod(shape) * np.dtype(_DTYPES[dtype]).itemsize
            if not 0 <= size <= end - pos:
                raise ValueError(
                    f"Array {name!r} declares {size} stored bytes but only "
                    f"{end - pos} remain: the state is truncated or corrupt."
                )
            if expected > MAX_DENSE_BYTES:
                raise ValueError(
                    f"Array {name!r} declares {expected} bytes, more than a state "
                    "may hold."
                )
            inflate = zlib.decompressobj()
            try:
                raw = inflate.decompress(data[pos : pos + size], expected)
            except zlib.error as exc:
                raise ValueError(
                    f"Array {name!r} cannot be decompressed: {exc}"
                ) from None
            if len(raw) != expected or inflate.unconsumed_tail or not inflate.eof:
                raise ValueError(
                    f"Array {name!r} does not hold the {expected} bytes its shape "
                    f"{shape} declares."
                )
            arrays[name] = _unshuffle(raw, _DTYPES[dtype], tuple(shape))
            pos += size
        if pos != end:
            raise ValueError(
                f"The state has {end - pos} bytes that no declared array accounts for."
            )
        return arrays

    # -- typed access to the header -----------------------------------------
    def get(self, key, types, where=None):
        """``header[key]`` (or ``where[key]``), checked to be of ``types``."""
        return _typed(self.header if where is None else where, key, types, "header")

    def check_grid(self, M):
        """The state's grid must have ``M`` cells."""
        if self.get("grid", int) != M:
            raise ValueError(
                f"The state has a grid of {self.header['grid']} cells; this "
                f"version reads grids of {M}."
            )

    def array(self, name, shape=None):
        """The array ``name``, of the given shape if given."""
        if name not in self.arrays:
            raise ValueError(f"The state lacks the array {name!r}.")
        arr = self.arrays[name]
        if shape is not None and arr.shape != tuple(shape):
            raise ValueError(
                f"Array {name!r} has shape {arr.shape}; expected {tuple(shape)}."
            )
        return arr


def _typed(obj, key, types, where):
    if key not in obj:
        raise ValueError(f"The state lacks {key!r} in its {where}.")
    value = obj[key]
    types = types if isinstance(types, tuple) else (types,)
    ok = isinstance(value, types) and not (
        isinstance(value, bool) and bool not in types
    )
    if not ok:
        names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
        raise ValueError(
            f"The state's {key!r} must be {names}, got {type(value).__name__}."
        )
    return value


# -- labels and scalars --------------------------------------------------------
def encode_labels(labels):
    """A JSON form of a 1-D array of class labels (or None)."""
    if labels is None:
        return None
    arr = np.asarray(labels)
    if arr.dtype.kind == "O" and all(isinstance(v, str) for v in arr.ravel()):
        arr = arr.astype(str)
    if arr.ndim != 1 or arr.dtype.kind not in _LABEL_KINDS:
        raise TypeError(
            "Only labels that are booleans, numbers or strings can be stored; got "
            f"an array of dtype {arr.dtype}."
        )
    return {"dtype": arr.dtype.str, "values": arr.tolist()}


def decode_labels(obj, name):
    """The array of :func:`encode_labels`, checked."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ValueError(f"The state's {name!r} must be an object or null.")
    dtype = _typed(obj, "dtype", str, name)
    values = _typed(obj, "values", list, name)
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ValueError(
            f"The state's {name!r} has an unknown dtype {dtype!r}."
        ) from None
    if dt.kind not in _LABEL_KINDS or dt.itemsize > 4096:
        raise ValueError(f"The state's {name!r} has an unsupported dtype {dtype!r}.")
    scalar = {
        "b": (bool,),
        "i": (int,),
        "u": (int,),
        "f": (int, float),
        "U": (str,),
    }[dt.kind]
    if not all(
        isinstance(v, scalar) and (dt.kind == "b" or not isinstance(v, bool))
        for v in values
    ):
        raise ValueError(f"The state's {name!r} holds values that are not {dt}.")
    try:
        arr = np.array(values, dtype=dt)
    except (OverflowError, ValueError):
        raise ValueError(f"The state's {name!r} holds values out of {dt}.") from None
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"The state's {name!r} holds a non-finite label.")
    return arr


def encode_scalar(value):
    """A JSON form of a label or ``None`` (``pos_label``)."""
    if value is None:
        return None
    arr = encode_labels(np.asarray([value]))
    return {"dtype": arr["dtype"], "value": arr["values"][0]}


def decode_scalar(obj, name):
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise ValueError(f"The state's {name!r} must be an object or null.")
    arr = decode_labels(
        {"dtype": _typed(obj, "dtype", str, name), "values": [obj.get("value")]}, name
    )
    return arr[0].item() if arr.dtype.kind != "U" else str(arr[0])


# -- checks of the values ------------------------------------------------------
def check_counts(arr, name):
    """Counts: finite, non-negative whole numbers."""
    if not (
        np.all(np.isfinite(arr)) and np.all(arr >= 0) and np.all(arr == np.rint(arr))
    ):
        raise ValueError(f"The state's {name} must be non-negative whole numbers.")


def check_nonnegative(arr, name):
    if not (np.all(np.isfinite(arr)) and np.all(arr >= 0)):
        raise ValueError(f"The state's {name} must be finite and non-negative.")


def check_not_above(small, large, name, what):
    """``small <= large`` elementwise, with a relative rounding allowance."""
    if np.any(small > large * (1.0 + 1e-12) + 1e-300):
        raise ValueError(f"The state's {name} exceed their {what}.")


def check_int(value, name, low, high):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"The state's {name!r} must be an integer.")
    if not low <= value <= high:
        raise ValueError(f"The state's {name!r} = {value} is outside [{low}, {high}].")
    return int(value)


def decode_cells(deltas, M, name):
    """Strictly increasing cell indices below ``M`` from their first
    differences (the first entry is the first index)."""
    if deltas.ndim != 1:
        raise ValueError(f"The state's {name} must be 1-D.")
    cells = np.cumsum(deltas, dtype=np.int64)
    if deltas.shape[0] and (np.any(deltas[1:] == 0) or cells[-1] >= M):
        raise ValueError(
            f"The state's {name} must be strictly increasing cell indices below {M}."
        )
    return cells


def encode_cells(cells):
    """First differences of increasing cell indices (as :func:`decode_cells` reads)."""
    return np.diff(cells, prepend=0).astype(np.uint32)
