"""skcalib report --save-state, skcalib merge, and skcalib report DIR."""

import json

import numpy as np
import pytest

from skcalib.cli import main
from skcalib.metrics import CalibrationAccumulator, smooth_ece


def _daily(folder, days=4, n=2000, shift_from=2):
    rng = np.random.default_rng(1)
    folder.mkdir()
    data = {}
    for d in range(days):
        p = rng.beta(2.0, 5.0, size=n)
        eta = p if d < shift_from else np.clip(1.5 * p, 0, 1)
        y = (rng.uniform(size=n) < eta).astype(int)
        name = f"2026-04-0{d + 1}"
        np.savetxt(
            folder / f"{name}.csv",
            np.c_[y, p],
            delimiter=",",
            header="label,score",
            comments="",
            fmt=["%d", "%.17g"],
        )
        data[name] = (y, p)
    return data


def test_save_state_then_merge_equals_the_concatenated_data(tmp_path, capsys):
    data = _daily(tmp_path / "daily")
    states = []
    for name in data:
        state = tmp_path / f"{name}.state"
        code = main(
            [
                "report",
                str(tmp_path / "daily" / f"{name}.csv"),
                "--y-true",
                "label",
                "--y-proba",
                "score",
                "--out",
                str(tmp_path / name),
                "--save-state",
                str(state),
                "--bootstrap",
                "0",
                # the merge draws the figure checked below; these are not read
                "--no-plot",
                "--quiet",
            ]
        )
        assert code == 0
        acc = CalibrationAccumulator.from_bytes(state.read_bytes())
        assert abs(acc.smooth_ece() - smooth_ece(*data[name])) < 1e-6
        states.append(str(state))
    capsys.readouterr()
    out = tmp_path / "merged"
    code = main(
        [
            "merge",
            *states,
            "--out",
            str(out),
            "--bootstrap",
            "0",
            "--resamples",
            "199",
            "--alert-level",
            "0.01",
            "--quiet",
        ]
    )
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    y = np.concatenate([v[0] for v in data.values()])
    p = np.concatenate([v[1] for v in data.values()])
    assert report["merged"]["n_samples"] == y.size
    assert abs(report["merged"]["smece"] - smooth_ece(y, p)) < 1e-6
    assert [w["window"] for w in report["windows"]] == list(data)
    # the shifted days alert, the calibrated ones do not
    assert [w["alert"] for w in report["windows"]] == [False, False, True, True]
    merged = CalibrationAccumulator.from_bytes((out / "merged.state").read_bytes())
    assert merged.n_samples_ == y.size
    assert (out / "over_time.png").stat().st_size > 1000
    assert "ALERT" in capsys.readouterr().out


def test_report_on_a_directory_gives_the_per_day_table(tmp_path, capsys):
    data = _daily(tmp_path / "daily", days=3, shift_from=9)
    (tmp_path / "daily" / "README.md").write_text("not predictions")
    out = tmp_path / "rep"
    code = main(
        [
            "report",
            str(tmp_path / "daily"),
            "--y-true",
            "label",
            "--y-proba",
            "score",
            "--out",
            str(out),
            "--bootstrap",
            "10",
            "--quiet",
        ]
    )
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    for row, (name, (y, p)) in zip(report["windows"], data.items(), strict=True):
        assert row["window"] == name and row["n_samples"] == y.size
        assert abs(row["smece"] - smooth_ece(y, p)) < 1e-6
    assert {"over_time_png", "reliability_png"} <= set(report["outputs"])
    table = capsys.readouterr().out
    assert all(name in table for name in data)


@pytest.mark.parametrize(
    "content", [b"", b"\x00" * 64, b"SKCALIB\x1a" + b"\x01\x00" + b"\xff" * 40]
)
def test_hostile_state_files_end_in_one_line_and_exit_2(tmp_path, capsys, content):
    bad = tmp_path / "bad.state"
    bad.write_bytes(content)
    code = main(["merge", str(bad), "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "bad.state" in err
    good = CalibrationAccumulator().partial_fit([0, 1, 1], [0.2, 0.6, 0.9])
    data = good.to_bytes()
    (tmp_path / "cut.state").write_bytes(data[: len(data) // 2])
    assert main(["merge", str(tmp_path / "cut.state"), "--quiet"]) == 2
    assert main(["merge", str(tmp_path / "missing.state"), "--quiet"]) == 2
