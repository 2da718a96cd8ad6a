"""``skcalib report``: input caps, stale outputs and bad arguments (#43 §5).

Run in-process through :func:`skcalib.cli.main` to stay fast.
"""

import gzip

import numpy as np
import pytest
import scipy.sparse as sp

from skcalib.cli import compute_report, main
from skcalib.cli._read import InputError, open_predictions

FAST = ["--bootstrap", "0", "--kde-max-samples", "200", "--quiet"]


def _rows(n, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.05, 0.95, size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    return y, p


def write_csv(path, n, seed=0, gz=False):
    y, p = _rows(n, seed)
    body = "".join(f"{a},{b:.6f}\n" for a, b in zip(y, p, strict=True))
    text = "label,score\n" + body
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("gz", [False, True])
def test_max_rows_refuses_a_longer_file_and_names_the_flag(tmp_path, capsys, gz):
    path = write_csv(tmp_path / ("p.csv.gz" if gz else "p.csv"), 300, gz=gz)
    out = str(tmp_path / "out")
    code, _, err = run(
        ["report", str(path), "--max-rows", "200", "--out", out, *FAST], capsys
    )
    assert code == 2
    assert "more than 200 rows" in err and "--max-rows" in err
    code, _, _ = run(
        ["report", str(path), "--max-rows", "300", "--out", out, *FAST, "--no-plot"],
        capsys,
    )
    assert code == 0
    code, _, _ = run(
        ["report", str(path), "--max-rows", "0", "--out", out, *FAST, "--no-plot"],
        capsys,
    )
    assert code == 0


@pytest.mark.parametrize("engine", ["python", "arrow"])
def test_max_bytes_caps_the_decompressed_text(tmp_path, capsys, monkeypatch, engine):
    import skcalib.cli._read as read

    if engine == "python":
        monkeypatch.setattr(read, "_pyarrow", lambda *a, **k: None)
    # 2000 rows of ~11 bytes compress to a few kB: the cap is on the text.
    path = write_csv(tmp_path / "p.csv.gz", 2000, gz=True)
    size = len(gzip.decompress(path.read_bytes()))
    assert path.stat().st_size < size // 2
    out = str(tmp_path / "out")
    argv = ["report", str(path), "--out", out, *FAST, "--no-plot"]
    code, _, err = run([*argv, "--max-bytes", str(size // 2)], capsys)
    assert code == 2
    assert "--max-bytes" in err and "decompressed" in err
    code, _, err = run([*argv, "--max-bytes", str(size + 10)], capsys)
    assert code == 0, err


def test_default_caps_apply(tmp_path, monkeypatch):
    import skcalib.cli._read as read

    path = write_csv(tmp_path / "p.csv", 50)
    monkeypatch.setattr(read, "MAX_ROWS", 20)
    with pytest.raises(InputError, match="more than 20 rows"):
        open_predictions(path, y_true="label")
    monkeypatch.setattr(read, "MAX_ROWS", 50)
    monkeypatch.setattr(read, "MAX_TEXT_BYTES", 100)
    with pytest.raises(InputError, match="more than 100 bytes"):
        open_predictions(path, y_true="label")


def test_second_run_removes_the_first_runs_stale_outputs(tmp_path, capsys):
    path = write_csv(tmp_path / "p.csv", 200)
    out = tmp_path / "out"
    unrelated = out / "notes.txt"
    code, _, _ = run(["report", str(path), "--out", str(out), *FAST], capsys)
    assert code == 0 and (out / "reliability.png").is_file()
    unrelated.write_text("mine")
    code, _, _ = run(
        ["report", str(path), "--out", str(out), *FAST, "--no-plot"], capsys
    )
    assert code == 0
    assert not (out / "reliability.png").exists()
    assert (out / "report.json").is_file()
    assert unrelated.read_text() == "mine"
    code, _, _ = run(
        ["report", str(path), "--out", str(out), *FAST, "--format", "svg"], capsys
    )
    assert code == 0 and (out / "reliability.svg").is_file()
    assert not (out / "reliability.png").exists()


def test_failed_run_keeps_the_previous_outputs(tmp_path, capsys):
    path = write_csv(tmp_path / "p.csv", 200)
    out = tmp_path / "out"
    assert run(["report", str(path), "--out", str(out), *FAST], capsys)[0] == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("label,score\n1,2.0\n0,0.5\n")
    assert run(["report", str(bad), "--out", str(out), *FAST], capsys)[0] == 2
    assert (out / "reliability.png").is_file() and (out / "report.json").is_file()


@pytest.mark.parametrize(
    "y_proba, error",
    [
        (0.5, ValueError),
        (None, ValueError),
        ("abc", ValueError),
        (np.empty((40, 0)), ValueError),
        (sp.csr_matrix(np.full((40, 2), 0.5)), TypeError),
    ],
    ids=["scalar", "none", "text", "no-columns", "sparse"],
)
def test_compute_report_bad_y_proba_names_the_argument(y_proba, error):
    y = np.tile([0, 1], 20)
    with pytest.raises(error, match="y_proba"):
        compute_report(y, y_proba, n_bootstrap=0, kde_max_samples=0)


def test_label_column_as_sample_weight_is_an_error(tmp_path, capsys):
    path = write_csv(tmp_path / "p.csv", 50)
    argv = ["report", str(path), "--sample-weight", "label", "--out", str(tmp_path)]
    code, _, err = run([*argv, *FAST], capsys)
    assert code == 2
    assert "--sample-weight 'label' is the label column" in err
