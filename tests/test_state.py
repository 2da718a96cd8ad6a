"""The portable state of the streaming objects: exact round trips, merges of
loaded states, stored fixtures that must keep loading, hostile bytes."""

import functools
import json
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skcalib.datasets import make_calibration_problem
from skcalib.metrics import CalibrationAccumulator, StreamingCalibrationBound

DATA = Path(__file__).parent / "data"
sys.path.insert(0, str(DATA))
from make_state_fixtures import fixture_data  # noqa: E402


# An independent reader/writer of the container (format version 1), so that
# hostile states can be written with a valid checksum.
def _unpack(data):
    magic, version, size = struct.unpack_from("<8sHI", data, 0)
    header = json.loads(data[14 : 14 + size])
    pos, arrays = 14 + size, {}
    for spec in header["arrays"]:
        raw = zlib.decompress(data[pos : pos + spec["size"]])
        dt = np.dtype(spec["dtype"])
        b = np.frombuffer(raw, np.uint8).reshape(dt.itemsize, -1).T
        arrays[spec["name"]] = np.ascontiguousarray(b).view(dt).reshape(spec["shape"])
        pos += spec["size"]
    return version, header, arrays


def _pack(header, arrays, version=1):
    blobs, specs = [], []
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        raw = arr.view(np.uint8).reshape(-1, arr.dtype.itemsize).T.tobytes()
        blobs.append(zlib.compress(raw))
        specs.append(
            {
                "name": name,
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
                "size": len(blobs[-1]),
            }
        )
    text = json.dumps(dict(header, arrays=specs)).encode()
    body = struct.pack("<8sHI", b"SKCALIB\x1a", version, len(text)) + text
    body += b"".join(blobs)
    return body + struct.pack("<I", zlib.crc32(body))


def _problem(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 5.0, size=n)
    return rng.uniform(size=n) < p**1.3, p


def _same_accumulator(a, b):
    assert type(a) is type(b)
    assert a.n_samples_ == b.n_samples_
    assert np.array_equal(a.classes_, b.classes_)
    for x, y in zip(getattr(a, "tasks_", [a]), getattr(b, "tasks_", [b]), strict=True):
        assert np.array_equal(x.moments_, y.moments_)
        assert x._total_weight == y._total_weight
        assert x._one_column == y._one_column
    assert a.smooth_ece() == b.smooth_ece()
    assert a.binned_calibration_error(n_bins=16) == b.binned_calibration_error(
        n_bins=16
    )


def _accumulators():
    y, p = _problem(6000)
    w = np.random.default_rng(1).exponential(size=6000)
    labels = np.where(y, "yes", "no")
    P = np.random.default_rng(2).dirichlet(np.ones(4), size=3000)
    y4 = np.array(list("abcd"))[
        (np.random.default_rng(3).uniform(size=(3000, 1)) > P.cumsum(axis=1)).sum(
            axis=1
        )
    ]
    out = {
        "unit": CalibrationAccumulator().partial_fit(y, p),
        "weighted": CalibrationAccumulator().partial_fit(y, p, sample_weight=w),
        "text": CalibrationAccumulator(pos_label="yes").partial_fit(labels, p),
        "two_columns": CalibrationAccumulator(
            labels=["yes", "no"], pos_label="yes"
        ).partial_fit(labels, np.column_stack([p, 1 - p])),
        "one_class": CalibrationAccumulator().partial_fit(np.ones(50), p[:50]),
        "zero_weight": CalibrationAccumulator().partial_fit(
            y, p, sample_weight=np.where(p > 0.3, w, 0.0)
        ),
        "ends": CalibrationAccumulator().partial_fit(
            [0, 1, 1, 0], [0.0, 1.0, 0.5, 2**-16]
        ),
    }
    for mc in ("top-label", "classwise"):
        out[mc] = CalibrationAccumulator(labels=list("abcd"), multi_class=mc)
        out[mc].partial_fit(y4, P)
    return out


@pytest.mark.parametrize("name", list(_accumulators()))
def test_accumulator_round_trip_is_bit_identical(name):
    acc = _accumulators()[name]
    data = acc.to_bytes()
    copy = CalibrationAccumulator.from_bytes(data)
    _same_accumulator(acc, copy)
    assert copy.to_bytes() == data
    assert copy.get_params() == acc.get_params() if hasattr(acc, "get_params") else True
    assert (copy.pos_label, copy.multi_class) == (acc.pos_label, acc.multi_class)


def test_unfitted_accumulator_round_trip():
    acc = CalibrationAccumulator(labels=[3, 7], pos_label=3)
    copy = CalibrationAccumulator.from_bytes(acc.to_bytes())
    assert copy.pos_label == 3 and list(copy.labels) == [3, 7]
    assert not hasattr(copy, "moments_")
    y, p = _problem(500)
    a = acc.partial_fit(np.where(y, 3, 7), p)
    b = copy.partial_fit(np.where(y, 3, 7), p)
    _same_accumulator(a, b)


@pytest.mark.parametrize("weighted", [False, True])
def test_merge_of_loaded_states_equals_merge_of_originals(weighted):
    y, p = _problem(40_000, seed=4)
    w = np.random.default_rng(5).exponential(size=y.shape[0]) if weighted else None
    parts = []
    for i, c in enumerate(np.array_split(np.arange(y.shape[0]), 8)):
        # partitions of one class and of both, in both orders of first class
        yc = y[c] if i != 3 else np.zeros(c.shape[0], bool)
        parts.append(
            CalibrationAccumulator().partial_fit(
                yc, p[c], sample_weight=None if w is None else w[c]
            )
        )
    loaded = [CalibrationAccumulator.from_bytes(a.to_bytes()) for a in parts]
    direct, merged = CalibrationAccumulator(), CalibrationAccumulator()
    for a, b in zip(parts, loaded, strict=True):
        direct.merge(a)
        merged.merge(b)
    _same_accumulator(direct, merged)
    # a merged state saved and loaded again, then continued
    again = CalibrationAccumulator.from_bytes(merged.to_bytes())
    again.partial_fit(y[:100], p[:100])
    direct.partial_fit(y[:100], p[:100])
    _same_accumulator(direct, again)


def test_state_size_grows_with_occupied_cells_not_samples():
    rng = np.random.default_rng(6)
    values = rng.uniform(size=200)  # a model with 200 distinct scores
    sizes = []
    for n in (10_000, 1_000_000):
        p = values[rng.integers(0, 200, size=n)]
        acc = CalibrationAccumulator().partial_fit(rng.uniform(size=n) < p, p)
        sizes.append(len(acc.to_bytes()))
    assert sizes[1] < 1.5 * sizes[0] < 30_000
    # versus every cell occupied
    p = rng.uniform(size=1_000_000)
    full = len(CalibrationAccumulator().partial_fit(p < 0.5, p).to_bytes())
    assert full > 20 * sizes[1]
    # the pickle it replaces keeps the whole grid
    import pickle

    assert len(pickle.dumps(acc)) > 100 * sizes[1]


# -- StreamingCalibrationBound ---------------------------------------------------
def _stream_problem():
    d = make_calibration_problem(
        30_000, problem="u2", perturbation_scale=2**-4, random_state=1
    )
    return d.y_true, d.y_proba


@pytest.mark.parametrize("method", ["nw", "tv"])
def test_bound_round_trip_in_each_pass_and_merge(method):
    y, p = _stream_problem()
    kw = {"perturbation_scale": 2**-4} if method == "nw" else {"max_train": 4000}

    def part(lo, hi):
        sb = StreamingCalibrationBound(method=method, random_state=9, **kw)
        return sb.partial_fit(y[lo:hi], p[lo:hi], start=lo)

    a, b = part(0, 12_000), part(12_000, 30_000)
    a2, b2 = (StreamingCalibrationBound.from_bytes(x.to_bytes()) for x in (a, b))
    direct, loaded = a.merge(b), a2.merge(b2)
    for x in (direct, loaded):
        x.partial_validate(p[:15_000])
    loaded = StreamingCalibrationBound.from_bytes(loaded.to_bytes())
    for x in (direct, loaded):
        x.partial_validate(p[15_000:], start=15_000)
    assert loaded.result() == direct.result()
    assert (
        StreamingCalibrationBound.from_bytes(direct.to_bytes())
        .result(return_details=True)
        .terms
        == direct.result(return_details=True).terms
    )


def test_unfitted_bound_round_trip_keeps_parameters():
    sb = StreamingCalibrationBound(
        method="tv", variation=2.0, delta=0.01, n_splits=3, random_state=5
    )
    copy = StreamingCalibrationBound.from_bytes(sb.to_bytes())
    for name in ("method", "variation", "delta", "n_splits", "random_state"):
        assert getattr(copy, name) == getattr(sb, name)


# -- fixtures written by an earlier version ----------------------------------------
def test_stored_fixtures_keep_loading():
    p, y, w, P, y3 = fixture_data()
    from skcalib.metrics import binned_calibration_error, smooth_ece

    binary = CalibrationAccumulator.from_bytes(
        (DATA / "accumulator_binary_v1.bin").read_bytes()
    )
    assert binary.n_samples_ == 3000 and binary.pos_label == "spam"
    assert list(binary.classes_) == ["ham", "spam"]
    ref = smooth_ece(y, p, sample_weight=w, pos_label="spam")
    assert abs(binary.smooth_ece() - ref) < 1e-9
    ref_bins = binned_calibration_error(
        y, p, sample_weight=w, pos_label="spam", n_bins=16
    )
    assert abs(binary.binned_calibration_error(n_bins=16) - ref_bins) < 1e-12

    classwise = CalibrationAccumulator.from_bytes(
        (DATA / "accumulator_classwise_v1.bin").read_bytes()
    )
    ref = smooth_ece(y3, P, labels=[0, 1, 2], multi_class="classwise")
    assert classwise.multi_class == "classwise"
    assert abs(classwise.smooth_ece() - ref) < 1e-9

    d = make_calibration_problem(
        4000, problem="u2", perturbation_scale=2**-4, random_state=7
    )
    nw = StreamingCalibrationBound.from_bytes(
        (DATA / "bound_nw_pass2_v1.bin").read_bytes()
    )
    fresh = StreamingCalibrationBound(perturbation_scale=2**-4, random_state=3)
    fresh.partial_fit(d.y_true, d.y_proba).partial_validate(d.y_proba)
    assert abs(nw.result() - fresh.result()) < 1e-12
    tv = StreamingCalibrationBound.from_bytes(
        (DATA / "bound_tv_pass1_v1.bin").read_bytes()
    )
    fresh = StreamingCalibrationBound(method="tv", max_train=1000, random_state=4)
    fresh.partial_fit(d.y_true, d.y_proba)
    assert (
        abs(
            tv.partial_validate(d.y_proba).result()
            - fresh.partial_validate(d.y_proba).result()
        )
        < 1e-12
    )


# -- hostile bytes -------------------------------------------------------------------
@functools.cache
def _small_state():
    # bytes: immutable, so every test and hypothesis example can share them
    y, p = _problem(3000, seed=8)
    return CalibrationAccumulator().partial_fit(y, p).to_bytes()


def test_truncated_or_flipped_bytes_are_refused():
    data = _small_state()
    for cut in list(range(0, 64)) + list(range(64, len(data), 97)):
        with pytest.raises(ValueError):
            CalibrationAccumulator.from_bytes(data[:cut])
    rng = np.random.default_rng(0)
    for i in rng.integers(0, len(data), size=50):
        bad = bytearray(data)
        bad[i] ^= 1 << int(rng.integers(0, 8))
        with pytest.raises(ValueError):
            CalibrationAccumulator.from_bytes(bytes(bad))


def _rewrite(edit, data=None):
    version, header, arrays = _unpack(data or _small_state())
    result = edit(header, arrays)
    if isinstance(result, tuple) and result[0] == "version":
        version = result[1]
    return _pack(header, arrays, version=version)


def _set(key, value):
    def edit(header, arrays):
        header["binary"][key] = value

    return edit


def _scale_first(name, factor, row=0):
    def edit(header, arrays):
        arrays[name] = arrays[name].copy()
        arrays[name].reshape(-1)[row] *= factor

    return edit


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda h, a: ("version", 2), "format version 2"),
        (lambda h, a: h.update(kind="StreamingCalibrationBound"), "not a"),
        (lambda h, a: h.update(grid=2**20), "grid"),
        (lambda h, a: h.update(n_samples=10**12), "samples"),
        (lambda h, a: h.pop("n_samples"), "lacks 'n_samples'"),
        (lambda h, a: h.update(n_samples="3000"), "must be int"),
        (_set("total_weight", 1e300), "total weight"),
        (_set("count_is_weight", False), "shape"),
        (_scale_first("counts", -1), "non-negative"),
        (_scale_first("counts", 2**40), "samples|non-negative"),
        (_scale_first("sums", float("nan")), "finite"),
        (_scale_first("sums", -1.0), "non-negative"),
        (_scale_first("sums", 1e6), "exceed"),
        (_scale_first("cells", 0, row=1), "increasing"),
        (_scale_first("cells", 2**16), "increasing"),
        (
            lambda h, a: h["binary"].update(classes={"dtype": "<U3", "values": ["a"]}),
            "class",
        ),
        (lambda h, a: h["params"].update(multi_class="canonical"), "multi_class"),
        (
            lambda h, a: h["params"].update(labels={"dtype": "|O", "values": [1]}),
            "dtype",
        ),
        (lambda h, a: a.pop("sums"), "lacks the array"),
    ],
)
def test_hostile_states_with_valid_checksum_are_refused(edit, match):
    with pytest.raises(ValueError, match=match):
        CalibrationAccumulator.from_bytes(_rewrite(edit))


def test_declared_sizes_are_checked_before_allocating():
    data = _small_state()
    version, header, arrays = _unpack(data)
    # an array declaring 2**39 elements, stored in a few bytes (a zip bomb)
    header["arrays"] = [dict(s) for s in header["arrays"]]
    body = _pack(header, arrays)
    text = json.loads(body[14 : 14 + struct.unpack_from("<I", body, 10)[0]])
    text["arrays"][2]["shape"] = [2, 2, 2**37]
    raw = json.dumps(text).encode()
    rest = body[14 + struct.unpack_from("<I", body, 10)[0] : -4]
    bomb = struct.pack("<8sHI", b"SKCALIB\x1a", 1, len(raw)) + raw + rest
    bomb += struct.pack("<I", zlib.crc32(bomb))
    with pytest.raises(ValueError, match="more than a state may hold"):
        CalibrationAccumulator.from_bytes(bomb)
    # a header declaring more bytes than the data holds
    bad = bytearray(data)
    bad[10:14] = struct.pack("<I", 2**31)
    bad[-4:] = struct.pack("<I", zlib.crc32(bytes(bad[:-4])))
    with pytest.raises(ValueError, match="header of"):
        CalibrationAccumulator.from_bytes(bytes(bad))


def test_hostile_bound_states_are_refused():
    y, p = _stream_problem()
    sb = StreamingCalibrationBound(perturbation_scale=2**-4, random_state=0)
    data = sb.partial_fit(y, p).to_bytes()

    def negative(header, arrays):
        arrays["sums"] = arrays["sums"].copy()
        arrays["sums"][0, 0, 0] = -1.0

    def many_splits(header, arrays):
        header["params"]["n_splits"] = 1000

    def pickle_in_params(header, arrays):
        header["params"]["random_state"] = "__import__('os')"

    for edit, match in [
        (negative, "non-negative"),
        (many_splits, "memory|shape"),
        (pickle_in_params, "random_state"),
    ]:
        with pytest.raises(ValueError, match=match):
            StreamingCalibrationBound.from_bytes(_rewrite(edit, data))
    with pytest.raises(TypeError, match="bytes"):
        StreamingCalibrationBound.from_bytes("a string")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_give_value_errors(blob):
    for cls in (CalibrationAccumulator, StreamingCalibrationBound):
        with pytest.raises(ValueError):
            cls.from_bytes(blob)
        with pytest.raises(ValueError):
            cls.from_bytes(b"SKCALIB\x1a" + blob)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_header_edits_give_value_errors_or_valid_objects(data):
    """Any JSON value in any header field: a ValueError, or an object that
    computes (never another exception)."""
    version, header, arrays = _unpack(_small_state())
    path = data.draw(
        st.sampled_from(
            [
                ("n_samples",),
                ("grid",),
                ("binary", "n_samples"),
                ("binary", "one_column"),
                ("binary", "total_weight"),
                ("params", "pos_label"),
                ("params", "labels"),
                ("binary", "classes"),
                ("kind",),
                ("binary",),
            ]
        )
    )
    value = data.draw(
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers()
            | st.floats(allow_nan=False)
            | st.text(max_size=5),
            lambda c: (
                st.lists(c, max_size=3)
                | st.dictionaries(st.text(max_size=6), c, max_size=3)
            ),
            max_leaves=6,
        )
    )
    target = header
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        acc = CalibrationAccumulator.from_bytes(_pack(header, arrays))
    except ValueError:
        return
    acc.smooth_ece()
