"""``skcalib report`` on real and hostile files, run as a subprocess.

Reading (gzip'd CSV, pandas index column, column detection, line numbers,
both CSV readers), bounded memory on a large file, safe and atomic writing,
and hostile input: one line on stderr and exit code 2, never a traceback.
"""

import gzip
import json
import os
import resource
import signal
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _helpers import REPO, run_cli, run_main

FAST = ["--bootstrap", "20", "--kde-max-samples", "400", "--quiet", "--no-plot"]
# Address space for hostile-input runs: the imports need about 0.6 GB.
LIMIT_AS = 1000 << 20


def no_pyarrow(tmp_path):
    """Environment in which ``import pyarrow`` fails: the csv-module reader."""
    stub = tmp_path / "stub-none" / "pyarrow"
    stub.mkdir(parents=True, exist_ok=True)
    (stub / "__init__.py").write_text("raise ImportError('no pyarrow')\n")
    return {"PYTHONPATH": str(stub.parent)}


READERS = ["pyarrow", "csv"]


def reader_env(reader, tmp_path):
    return {} if reader == "pyarrow" else no_pyarrow(tmp_path)


def run_report_with(reader, tmp_path, *args):
    """A successful report with ``reader``: in this process with pyarrow,
    in a subprocess whose ``import pyarrow`` fails otherwise."""
    if reader == "pyarrow":
        return run_main(*args)
    return run_cli(*args, env=no_pyarrow(tmp_path))


def one_line_error(result, *fragments):
    err = result.stderr.strip()
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr
    assert len(err.splitlines()) == 1, err[-2000:]
    assert len(err) < 1000, err[:300]
    assert err.startswith("skcalib report: error:"), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


def load_report(out):
    with open(Path(out) / "report.json") as fh:
        return json.load(fh)


def binary_sample(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    y = (rng.uniform(size=n) < p**2).astype(int)
    return y, p


def csv_text(y, p, header="y,p"):
    return (
        header
        + "\n"
        + "".join(f"{a},{float(b)!r}\n" for a, b in zip(y, p, strict=True))
    )


def brier(y, p):
    return float(np.mean((p - y) ** 2))


# --- reading ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["preds.csv.gz", "preds.csv"])
def test_gzipped_csv_by_suffix_and_by_magic_bytes(tmp_path, name):
    y, p = binary_sample(n=800)
    f = tmp_path / name
    f.write_bytes(gzip.compress(csv_text(y, p).encode()))
    out = tmp_path / "o"
    result = run_main("report", f, "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["input"]["gzip"] is True
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        brier(y, p), abs=1e-12
    )


@pytest.mark.parametrize("reader", READERS)
def test_pandas_index_column_is_ignored(tmp_path, reader):
    pd = pytest.importorskip("pandas")
    y, p = binary_sample(n=600, seed=2)
    f = tmp_path / "frame.csv"
    pd.DataFrame({"y": y, "p": p}).to_csv(f)  # header ",y,p", rows "0,1,0.3"
    out = tmp_path / "o"
    result = run_report_with(reader, tmp_path, "report", f, "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["input"]["index_column_ignored"] is True
    assert report["input"]["y_proba_columns"] == ["p"]
    assert report["n_samples"] == 600
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        brier(y, p), abs=1e-12
    )


@pytest.mark.parametrize("reader", READERS)
def test_unnamed_first_column_that_is_not_an_index(tmp_path, reader):
    f = tmp_path / "x.csv"
    f.write_text(",y,p\n0,1,0.3\n1,0,0.2\n7,1,0.9\n")
    one_line_error(
        run_cli("report", f, *FAST, env=reader_env(reader, tmp_path)),
        "line 4",
        "no name",
        "'7'",
    )


def test_weight_column_is_never_a_probability(tmp_path):
    y, p = binary_sample(n=500, seed=4)
    w = np.random.default_rng(1).uniform(0.5, 1.0, size=500)
    f = tmp_path / "w.csv"
    f.write_text(
        "y,p,weight\n"
        + "".join(
            f"{a},{float(b)!r},{float(c)!r}\n" for a, b, c in zip(y, p, w, strict=True)
        )
    )
    out = tmp_path / "o"
    result = run_main("report", f, "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["input"]["y_proba_columns"] == ["p"]
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        brier(y, p), abs=1e-12
    )


def test_ambiguous_probability_columns_are_an_error(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("y,score,proba\n1,0.3,0.4\n0,0.2,0.1\n")
    one_line_error(run_cli("report", f, *FAST), "'score', 'proba'", "--y-proba", "'y'")
    f.write_text("y,a,b,c\n1,0.3,0.4,0.1\n0,0.2,0.1,0.5\n")
    one_line_error(run_cli("report", f, *FAST), "'a', 'b', 'c'", "--y-proba")


def test_ambiguous_label_columns_are_an_error(tmp_path):
    f = tmp_path / "a.csv"
    f.write_text("y,label,p\n1,1,0.3\n0,0,0.2\n")
    one_line_error(run_cli("report", f, *FAST), "y, label", "--y-true")


@pytest.mark.parametrize("reader", READERS)
def test_missing_value_reported_by_line_number(tmp_path, reader):
    env = reader_env(reader, tmp_path)
    f = tmp_path / "m.csv"
    f.write_text("y,p\n1,0.2\n\n0,0.4\n1,\n")
    one_line_error(
        run_cli("report", f, *FAST, env=env), "line 5", "'p'", "missing value"
    )
    f.write_text("y,p\n1,0.2\n,0.4\n")
    one_line_error(run_cli("report", f, *FAST, env=env), "line 3", "'y'", "empty")


def test_messages_name_the_columns_in_use(tmp_path):
    f = tmp_path / "o.csv"
    f.write_text("truth,prob\n1,0.3\n0,1.7\n")
    err = one_line_error(
        run_cli("report", f, "--y-true", "truth", "--y-proba", "prob", *FAST),
        "[0, 1]",
    )
    assert "'truth'" in err and "'prob'" in err


def test_y_proba_followed_by_the_file(tmp_path):
    y, p = binary_sample(n=400)
    f = tmp_path / "preds.csv"
    f.write_text(csv_text(y, p, header="truth,p"))
    out = tmp_path / "o"
    result = run_main(
        "report", "--y-true", "truth", "--y-proba", "p", f, "--out", out, *FAST
    )
    assert result.returncode == 0, result.stderr
    assert load_report(out)["input"]["y_proba_columns"] == ["p"]


def test_bins_multiclass_reduction_and_figure_format(tmp_path):
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(3), size=900)
    y = np.array([rng.choice(3, p=row) for row in P])
    np.savez(tmp_path / "m.npz", y_true=y, y_proba=P)
    out = tmp_path / "o"
    result = run_main(
        "report",
        tmp_path / "m.npz",
        "--n-bins",
        "10",
        "--multi-class",
        "classwise",
        "--format",
        "svg",
        "--out",
        out,
        "--bootstrap",
        "0",
        "--kde-max-samples",
        "300",
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["multi_class"] == "classwise"
    m = report["metrics"]
    assert m["binned_ece_uniform"]["n_bins"] == 10
    from skcalib.metrics import binned_calibration_error, smooth_ece

    ref = binned_calibration_error(y, P, n_bins=10, multi_class="classwise")
    assert m["binned_ece_uniform"]["value"] == pytest.approx(ref, abs=1e-12)
    ref = smooth_ece(y, P, multi_class="classwise")
    assert m["smooth_ece"]["value"] == pytest.approx(ref, abs=1e-12)
    svg = (out / "reliability.svg").read_text()
    assert "<svg" in svg
    assert not (out / "reliability.png").exists()


@pytest.mark.parametrize("reader", READERS)
def test_csv_dialects_with_either_reader(tmp_path, reader):
    # BOM, semicolons, quoting, a quoted newline, blank lines, padding, gzip.
    y, p = binary_sample(n=300, seed=8)
    words = np.where(y == 1, "spam", "ham")
    rows = [f'"{w}"; {float(q)!r} ;x' for w, q in zip(words, p, strict=True)]
    rows[5] = f'"{words[5]}";{float(p[5])!r};"two\nlines; quoted"'
    text = "\ufeff" + 'label;"p";note\n' + "\n".join(rows[:100]) + "\n\n"
    text += "\n".join(rows[100:]) + "\n"
    f = tmp_path / "r.csv.gz"
    f.write_bytes(gzip.compress(text.encode()))
    out = tmp_path / "o"
    result = run_report_with(
        reader,
        tmp_path,
        "report",
        f,
        "--out",
        out,
        "--y-proba",
        "p",
        "--pos-label",
        "spam",
        *FAST,
    )
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["input"]["reader"] == ("pyarrow" if reader == "pyarrow" else "python")
    assert report["pos_label"] == "spam" and report["n_samples"] == 300
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        brier(y, p), abs=1e-12
    )


def test_both_csv_readers_agree_on_numbers_and_messages(tmp_path):
    y, p = binary_sample(n=500, seed=9)
    f = tmp_path / "p.csv"
    f.write_text(csv_text(y, p))
    bad = tmp_path / "bad.csv"
    bad.write_text("y,p\n1,0.2\n0,0.3,4\n")
    missing = tmp_path / "missing.csv"
    missing.write_text("y,p\n1,0.2\n0,0.3\n1, \n")
    results = {}
    for reader in READERS:
        env = reader_env(reader, tmp_path)
        out = tmp_path / reader
        ok = run_cli("report", f, "--out", out, *FAST, env=env)
        assert ok.returncode == 0, ok.stderr
        report = load_report(out)
        errors = [run_cli("report", g, *FAST, env=env).stderr for g in (bad, missing)]
        results[reader] = (report["metrics"], errors, report["input"]["reader"])
    assert results["pyarrow"][2] == "pyarrow" and results["csv"][2] == "python"
    assert results["pyarrow"][0] == results["csv"][0]
    assert results["pyarrow"][1] == results["csv"][1]
    assert "line 3" in results["csv"][1][0] and "line 4" in results["csv"][1][1]


@pytest.mark.parametrize("labels", [["no", "yes"], ["0", "1"], ["a", "b", "c"]])
def test_both_csv_readers_parse_cells_alike(tmp_path, monkeypatch, labels):
    """The pyarrow reader parses numbers and maps labels without float() or a
    dict lookup per cell; it must give the csv module's arrays bit for bit,
    including on cells only float() accepts (their column takes float())."""
    from skcalib.cli import _read, read_predictions

    rng = np.random.default_rng(len(labels))
    n, k = 4000, len(labels)
    P = rng.dirichlet(np.ones(k), size=n)
    y = np.array(labels)[rng.integers(0, k, size=n)]
    cells = np.array([[repr(float(v)) for v in row] for row in P], dtype=object)
    # Spellings both parsers accept; then, in the last column, ones only
    # float() accepts.
    cells[:6, 0] = ["5.E-1", "+.25", "1e-3", "0", "1", "0.1250"]
    cells[6:9, -1] = ["0.2_5", "\u0660.5", "1_0e-1"]
    lines = ["y," + ",".join(f"p_{c}" for c in labels)]
    lines += [f"{a}," + ",".join(row) for a, row in zip(y, cells, strict=True)]
    f = tmp_path / "p.csv"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed = []
    arrow_floats = _read._arrow_floats
    monkeypatch.setattr(
        _read, "_arrow_floats", lambda v: parsed.append(arrow_floats(v)) or parsed[-1]
    )
    got = {}
    for reader in READERS:
        if reader == "csv":
            monkeypatch.setattr(_read, "_pyarrow", lambda *a, **kw: None)
        yy, proba, _, info = read_predictions(f, y_true="y")
        assert info["reader"] == ("pyarrow" if reader == "pyarrow" else "python")
        got[reader] = (yy, proba)
    # pyarrow parsed the first columns and refused the last.
    assert [v is None for v in parsed] == [False] * (k - 1) + [True]
    np.testing.assert_array_equal(got["pyarrow"][0], got["csv"][0])
    np.testing.assert_array_equal(got["pyarrow"][1], got["csv"][1])
    expected = np.array([[float(c) for c in row] for row in cells])
    np.testing.assert_array_equal(got["pyarrow"][1], expected)
    assert got["pyarrow"][0].astype(str).tolist() == y.tolist()


@pytest.mark.skipif(
    not any(os.path.isdir(d) for d in ("/proc/self/fd", "/dev/fd")),
    reason="no descriptor folder to reopen the file through",
)
@pytest.mark.parametrize("gz", [False, True])
def test_pyarrow_reads_the_file_without_calling_python(tmp_path, monkeypatch, gz):
    """pyarrow reads ahead on its own thread; a read through a Python file
    object could still be waiting for the interpreter when the command exits
    on an error, and the process then aborted after its message."""
    pa = pytest.importorskip("pyarrow")
    from skcalib.cli import read_predictions

    y, p = binary_sample(n=300, seed=3)
    f = tmp_path / ("p.csv.gz" if gz else "p.csv")
    data = csv_text(y, p).encode()
    f.write_bytes(gzip.compress(data) if gz else data)

    def refuse(*args, **kwargs):
        raise AssertionError("pyarrow was given a Python file object")

    monkeypatch.setattr(pa, "PythonFile", refuse)
    yy, proba, _, info = read_predictions(f, y_true="y")
    assert info["reader"] == "pyarrow"
    np.testing.assert_array_equal(yy.astype(float), y)
    np.testing.assert_array_equal(proba, p)


def test_parquet_refuses_old_pyarrow(tmp_path):
    stub = tmp_path / "stub-old" / "pyarrow"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(
        "__version__ = '14.0.0'\n"
        "class Table: pass\n"
        "class RecordBatch: pass\n"
        "class Array: pass\n"
        "class ChunkedArray: pass\n"
    )
    (stub / "parquet.py").write_text("raise RuntimeError('must not be imported')\n")
    f = tmp_path / "p.parquet"
    f.write_bytes(b"PAR1" + b"\0" * 16 + b"PAR1")
    env = {"PYTHONPATH": str(stub.parent)}
    one_line_error(run_cli("report", f, *FAST, env=env), "14.0.0", ">= 14.0.1")
    # A CSV is then read with the csv module.
    y, p = binary_sample(n=200)
    c = tmp_path / "c.csv"
    c.write_text(csv_text(y, p))
    out = tmp_path / "o"
    result = run_cli("report", c, "--out", out, *FAST, env=env)
    assert result.returncode == 0, result.stderr
    assert load_report(out)["input"]["reader"] == "python"


def test_pyproject_requires_a_safe_pyarrow():
    text = (REPO / "pyproject.toml").read_text()
    specs = [line for line in text.splitlines() if '"pyarrow' in line]
    assert specs
    for line in specs:
        assert "pyarrow>=14.0.1" in line.replace(" ", ""), line


# --- hostile input -----------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
def test_field_over_131072_characters(tmp_path, reader):
    f = tmp_path / "f.csv"
    f.write_text("y,p\n1,0.5\n0," + "7" * 200_000 + "\n")
    one_line_error(
        run_cli("report", f, *FAST, env=reader_env(reader, tmp_path)),
        "line 3",
        "131072",
    )


@pytest.mark.parametrize("reader", READERS)
def test_line_longer_than_the_cap(tmp_path, reader):
    # A 3 MB one-line file stands for a 2 GB one: lines are capped at 1 MiB.
    f = tmp_path / "l.csv"
    f.write_bytes(b"y,p" + b",1" * 1_500_000)
    one_line_error(
        run_cli(
            "report", f, *FAST, env=reader_env(reader, tmp_path), limit_as=LIMIT_AS
        ),
        "line 1",
        "longer than 1048576 characters",
    )
    f.write_bytes(b"y,p\n1,0.5\n" + b"0,0.5," * 500_000 + b"\n")
    one_line_error(
        run_cli("report", f, *FAST, env=reader_env(reader, tmp_path)),
        "line 3",
        "longer than",
    )


def _npy_bytes(header_shape, dtype="<f8", data=b""):
    header = {"descr": dtype, "fortran_order": False, "shape": header_shape}
    text = repr(header).encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data


def test_npz_member_declaring_a_huge_shape(tmp_path):
    # 400 million float64 (3.2 GB) declared, 16 bytes present.
    f = tmp_path / "bomb.npz"
    with zipfile.ZipFile(f, "w") as zf:
        zf.writestr("y_true.npy", _npy_bytes((2,), "<i8", struct.pack("<2q", 0, 1)))
        zf.writestr("y_proba.npy", _npy_bytes((400_000_000,), data=b"\0" * 16))
    one_line_error(
        run_cli("report", f, *FAST, limit_as=LIMIT_AS), "'y_proba.npy'", "declares"
    )


def test_npz_member_declaring_a_huge_uncompressed_size(tmp_path):
    f = tmp_path / "bomb.npz"
    np.savez(f, y_true=np.array([0, 1]), y_proba=np.array([0.2, 0.7]))
    # Patch the central directory: y_proba.npy "expands" to 3 GB.
    raw = bytearray(f.read_bytes())
    name = b"y_proba.npy"
    at = raw.rfind(name) - 46
    assert raw[at : at + 4] == b"PK\x01\x02"
    raw[at + 24 : at + 28] = struct.pack("<I", 3_000_000_000)
    f.write_bytes(bytes(raw))
    with zipfile.ZipFile(f) as zf:
        assert zf.getinfo("y_proba.npy").file_size == 3_000_000_000
    one_line_error(
        run_cli("report", f, *FAST, limit_as=LIMIT_AS),
        "'y_proba.npy'",
        "3,000,000,000 bytes",
    )


def test_npz_member_that_is_not_an_array(tmp_path):
    f = tmp_path / "odd.npz"
    with zipfile.ZipFile(f, "w") as zf:
        zf.writestr("y_true.npy", _npy_bytes((2,), "<i8", struct.pack("<2q", 0, 1)))
        zf.writestr("y_proba.npy", _npy_bytes((2,), data=struct.pack("<2d", 0.2, 0.7)))
        zf.writestr("notes.txt", "hello")
    one_line_error(run_cli("report", f, *FAST), "'notes.txt'", "not a NumPy array")
    with zipfile.ZipFile(f, "w") as zf:
        zf.writestr("y_true.npy", _npy_bytes((2,), "<i8", struct.pack("<2q", 0, 1)))
        zf.writestr("y_proba.npy", b"garbage, not an array")
    one_line_error(run_cli("report", f, *FAST), "'y_proba.npy'", "not a NumPy array")


class _Marker:
    """Unpickling this object creates a file: proof that nothing is unpickled."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickled_object_arrays_are_never_loaded(tmp_path):
    marker = tmp_path / "unpickled"
    f = tmp_path / "obj.npz"
    objects = np.empty(2, dtype=object)
    objects[:] = [_Marker(str(marker)), 0.5]
    np.savez(f, y_true=np.array([0, 1]), y_proba=objects)
    one_line_error(run_cli("report", f, *FAST), "'y_proba.npy'", "pickled")
    assert not marker.exists()
    g = tmp_path / "obj.npy"
    np.save(g, np.stack([objects, objects], axis=1), allow_pickle=True)
    one_line_error(run_cli("report", g, *FAST), "obj.npy", "pickled")
    assert not marker.exists()


def test_fifo_is_refused(tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    try:
        result = run_cli("report", fifo, *FAST, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("skcalib report blocked on a FIFO")
    one_line_error(result, "pipe.csv", "FIFO")


def test_device_is_refused(tmp_path):
    link = tmp_path / "zero.csv"
    link.symlink_to("/dev/zero")
    try:
        result = run_cli("report", link, *FAST, timeout=60, limit_as=LIMIT_AS)
    except subprocess.TimeoutExpired:
        pytest.fail("skcalib report kept reading a device")
    one_line_error(result, "zero.csv", "character device")


def test_program_bug_is_not_reported_as_bad_input(tmp_path):
    y, p = binary_sample(n=300)
    f = tmp_path / "p.csv"
    f.write_text(csv_text(y, p))
    code = (
        "import sys, skcalib.metrics as m\n"
        "def bug(*a, **k):\n"
        "    raise TypeError('a bug inside the library')\n"
        "m.smooth_calibration_curve = bug\n"
        "from skcalib.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "report",
            str(f),
            "--out",
            str(tmp_path / "o"),
            *FAST,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert "TypeError: a bug inside the library" in result.stderr


# --- writing -----------------------------------------------------------------------


def test_symlinks_in_out_are_replaced_not_followed(tmp_path):
    y, p = binary_sample(n=300)
    f = tmp_path / "p.csv"
    f.write_text(csv_text(y, p))
    out = tmp_path / "out"
    out.mkdir()
    victims = {}
    for name in ("report.json", "reliability.png"):
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious\n")
        (out / name).symlink_to(victim)
        victims[name] = victim
    plot = ["--bootstrap", "0", "--kde-max-samples", "300", "--quiet"]
    result = run_cli("report", f, "--out", out, *plot)
    assert result.returncode == 0, result.stderr
    for name, victim in victims.items():
        assert victim.read_text() == "precious\n"
        assert not (out / name).is_symlink()
    assert load_report(out)["n_samples"] == 300
    assert (out / "reliability.png").read_bytes()[:4] == b"\x89PNG"
    names = sorted(p.name for p in out.iterdir())
    assert names == ["reliability.png", "report.html", "report.json"]


def _file_size_limit(limit):
    def pre():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return pre


def test_failed_write_leaves_the_previous_report(tmp_path):
    y, p = binary_sample(n=300)
    f = tmp_path / "p.csv"
    f.write_text(csv_text(y, p))
    out = tmp_path / "out"
    assert run_cli("report", f, "--out", out, *FAST).returncode == 0
    before = (out / "report.json").read_bytes()
    assert len(before) > 1100
    # A full disk: no file may grow past 1000 bytes.
    result = run_cli(
        "report",
        f,
        "--out",
        out,
        *FAST,
        "--seed",
        "5",
        preexec=_file_size_limit(1000),
    )
    assert (out / "report.json").read_bytes() == before
    json.loads(before)
    one_line_error(result, "report.json")
    assert sorted(p.name for p in out.iterdir()) == ["report.html", "report.json"]


def test_empty_out_is_an_error(tmp_path):
    y, p = binary_sample(n=100)
    f = tmp_path / "p.csv"
    f.write_text(csv_text(y, p))
    one_line_error(run_cli("report", f, "--out", "", *FAST, cwd=tmp_path), "--out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]


# --- bounded memory ------------------------------------------------------------------


def big_sample(n, seed=0):
    """Labels and scores ``q / 1e6`` (``q`` integer: 6 exact decimals)."""
    rng = np.random.default_rng(seed)
    ys, qs = [], []
    for start in range(0, n, 1_000_000):
        m = min(1_000_000, n - start)
        q = rng.integers(1, 1_000_000, size=m)
        ys.append(rng.uniform(size=m) < (q / 1e6) ** 2)
        qs.append(q)
    return np.concatenate(ys), np.concatenate(qs)


def write_big_csv(path, y, q, compress=True):
    """``y,p`` rows (``p = q / 1e6`` with 6 decimals), written in blocks."""
    opener = gzip.open if compress else open
    kw = {"compresslevel": 1} if compress else {}
    with opener(path, "wb", **kw) as fh:
        fh.write(b"y,p\n")
        for start in range(0, y.shape[0], 1_000_000):
            yb, qb = y[start : start + 1_000_000], q[start : start + 1_000_000]
            buf = np.empty((yb.shape[0], 11), dtype=np.uint8)
            buf[:, 0] = np.where(yb, ord("1"), ord("0"))
            buf[:, 1], buf[:, 2], buf[:, 3] = ord(","), ord("0"), ord(".")
            for j in range(6):
                buf[:, 9 - j] = ord("0") + (qb // 10**j) % 10
            buf[:, 10] = ord("\n")
            fh.write(buf.tobytes())


@pytest.fixture(scope="module")
def ten_million_rows():
    """One sample of ten million rows and its numbers, computed here
    independently of the command; both file formats are written from it."""
    from skcalib.metrics import smooth_ece

    n = 10_000_000
    yb, q = big_sample(n)
    y, p = yb.astype(float), q / 1e6
    edges = np.minimum((p * 15).astype(int), 14)
    w = np.bincount(edges, minlength=15)
    gap = np.abs(np.bincount(edges, y - p, minlength=15))
    assert w.sum() == n
    expected = {
        "brier_score": brier(y, p),
        "log_loss": -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)),
        "binned_ece_uniform": gap.sum() / n,
        "smooth_ece": smooth_ece(y, p),
    }
    return yb, q, expected


@pytest.mark.slow
@pytest.mark.parametrize("name", ["big.csv.gz", "big.csv"])
def test_ten_million_rows_in_bounded_memory(tmp_path, name, ten_million_rows):
    yb, q, expected = ten_million_rows
    n = yb.shape[0]
    f = tmp_path / name
    write_big_csv(f, yb, q, compress=name.endswith(".gz"))
    out = tmp_path / "o"
    # 1000 MB of address space: the imports take about 600 MB; reading the
    # whole file (110 MB of text) took 1.5 GB.
    result = run_cli("report", f, "--out", out, *FAST, limit_as=LIMIT_AS, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    report = load_report(out)
    assert report["n_samples"] == n
    assert report["subsample"]["n_samples"] < n
    assert "subsample" in result.stdout
    m = report["metrics"]
    # Exact over every row.
    assert m["brier_score"]["value"] == pytest.approx(expected["brier_score"], rel=1e-9)
    assert m["log_loss"]["value"] == pytest.approx(expected["log_loss"], rel=1e-9)
    assert m["binned_ece_uniform"]["value"] == pytest.approx(
        expected["binned_ece_uniform"], abs=1e-9
    )
    assert m["binned_ece_uniform"]["n_samples_used"] == n
    assert m["smooth_ece"]["value"] == pytest.approx(expected["smooth_ece"], abs=1e-9)


# --- streaming equals the whole sample ---------------------------------------


@pytest.mark.parametrize("kind", ["binary", "multiclass", "weighted"])
def test_streamed_numbers_equal_the_whole_sample(kind):
    from skcalib.cli import compute_report
    from skcalib.cli._report import ReportBuilder

    rng = np.random.default_rng(11)
    n = 6000
    w = None
    if kind == "multiclass":
        P = rng.dirichlet(np.ones(3), size=n)
        y = np.array([rng.choice(3, p=row) for row in P])
    else:
        y, P = binary_sample(n=n, seed=12)
        if kind == "weighted":
            w = rng.uniform(0.1, 3.0, size=n)
    kw = dict(n_bootstrap=0, kde_max_samples=300, n_bins=10)
    whole = compute_report(y, P, sample_weight=w, **kw)[0]
    classes, codes = np.unique(y, return_inverse=True)
    builder = ReportBuilder(
        classes,
        1 if P.ndim == 1 else 3,
        weighted=w is not None,
        reservoir_rows=500,
        **kw,
    )
    for chunk in np.array_split(np.arange(n), 7):
        builder.add(codes[chunk], P[chunk], None if w is None else w[chunk])
    streamed = builder.finish()[0]
    assert whole["subsample"] is None
    assert streamed["subsample"]["n_samples"] == 500
    for name in ("smooth_ece", "binned_ece_uniform", "brier_score", "log_loss"):
        assert streamed["metrics"][name]["value"] == pytest.approx(
            whole["metrics"][name]["value"], rel=1e-9, abs=1e-12
        ), name
    assert streamed["metrics"]["binned_ece_uniform"]["n_samples_used"] == n
    assert streamed["metrics"]["ece_kde"]["n_samples_used"] == 300


def test_reservoir_is_a_uniform_subsample():
    from skcalib.cli._report import ReportBuilder

    n, m = 20_000, 1000
    y, p = binary_sample(n=n, seed=1)
    builder = ReportBuilder(np.array([0, 1]), 1, reservoir_rows=m, n_bootstrap=0)
    for chunk in np.array_split(np.arange(n), 13):
        builder.add(y[chunk], p[chunk])
    rows, ys, ps, _ = builder._sample()
    assert rows.shape == (m,) and np.unique(rows).shape == (m,)
    np.testing.assert_array_equal(ps, p[rows])
    # Row positions spread over the file: each tenth holds about a tenth.
    counts = np.bincount(rows * 10 // n, minlength=10)
    assert counts.min() > 60 and counts.max() < 140


@pytest.mark.parametrize("score", [0.0, 0.3])
def test_one_score_for_every_row_writes_strict_json(tmp_path, score):
    # A model that predicts one probability leaves the calibration slope
    # undefined (NaN), and a score of exactly 0 for a positive makes the
    # log-loss and the tests' statistics infinite: JSON has neither, and
    # writing the report failed with a traceback.
    y = np.r_[np.ones(60), np.zeros(140)].astype(int)
    f = tmp_path / "one_score.csv"
    f.write_text(csv_text(y, np.full(200, score)))
    out = tmp_path / "o"
    result = run_main("report", f, "--out", out, *FAST)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr

    def no_constant(name):
        raise AssertionError(f"report.json holds {name}")

    report = json.loads((out / "report.json").read_text(), parse_constant=no_constant)
    summary = report["calibration_summary"]
    assert summary["slope"] is None and summary["slope_se"] is None
    if score == 0:
        # Every logit is infinite: no row is left for the logistic fits.
        assert summary["intercept"] is None
    else:
        assert summary["intercept"] == pytest.approx(
            np.log(60 / 140) - np.log(score / (1 - score)), rel=1e-8
        )
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        brier(y, np.full(200, score)), abs=1e-12
    )
