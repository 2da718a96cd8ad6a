"""Several models in one ``skcalib report``: each model's numbers are those of
a report of its columns alone (the reference: one run per column)."""

import json

import matplotlib
import numpy as np
import pytest

import skcalib.cli as cli

matplotlib.use("Agg")

FAST = ["--bootstrap", "20", "--kde-max-samples", "300", "--quiet"]
# What a single-model report holds besides its numbers.
RUN_KEYS = {"input", "outputs", "seed", "skcalib_version"}


def _binary_csv(path, n=600, seed=0, weights=False):
    """Labels drawn from ``a`` (calibrated), ``b`` over-confident, ``c`` near
    0 and 1 (rare extremes), and a text column that is not a model."""
    rng = np.random.default_rng(seed)
    a = rng.beta(0.8, 1.5, size=n)
    y = (rng.uniform(size=n) < a).astype(int)
    b = np.clip(a + 0.6 * (a - 0.5), 0.001, 0.999)
    c = np.where(a > 0.5, 1 - 1e-6, 1e-6) * 0.5 + 0.5 * a
    lines = ["name,y,a,b,c" + (",w" if weights else "")]
    w = rng.integers(1, 4, size=n)
    for i in range(n):
        row = f"id{i},{y[i]},{a[i]:.17g},{b[i]:.17g},{c[i]:.17g}"
        lines.append(row + (f",{w[i]}" if weights else ""))
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(tmp_path, capsys, name, *args, code=0):
    out = tmp_path / name
    assert cli.main(["report", *map(str, args), "--out", str(out), *FAST]) == code
    captured = capsys.readouterr()
    if code:
        return captured.err
    report = json.loads((out / "report.json").read_text())
    return report, captured.out, out


def _alone(report):
    return {k: v for k, v in report.items() if k not in RUN_KEYS}


@pytest.mark.parametrize("weights", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_each_model_is_its_single_report(weights, tmp_path, capsys):
    path = _binary_csv(tmp_path / "p.csv", weights=weights)
    extra = ["--sample-weight", "w"] if weights else []
    both, stdout, _ = _run(
        tmp_path,
        capsys,
        "all",
        path,
        "--y-true",
        "y",
        "--y-proba",
        "a,b,c",
        "--no-plot",
        *extra,
    )
    assert list(both["models"]) == ["a", "b", "c"]
    assert "metrics" not in both  # no model is promoted to the top level
    for col in "abc":
        single, single_out, _ = _run(
            tmp_path,
            capsys,
            col,
            path,
            "--y-true",
            "y",
            "--y-proba",
            col,
            "--no-plot",
            *extra,
        )
        assert both["models"][col] == _alone(single)
        # The table's column of the model holds the single table's values.
        sm = single["metrics"]["smooth_ece"]["value"]
        assert f"{sm:.4f}" in _table_row(stdout, "smooth ECE")[1 + "abc".index(col)]
    if not weights:
        return
    # --compare finds the same three models (not the text or weight column).
    compared, _, _ = _run(
        tmp_path,
        capsys,
        "cmp",
        path,
        "--y-true",
        "y",
        "--compare",
        "--no-plot",
        *extra,
    )
    assert compared["models"] == both["models"]
    assert [m["name"] for m in compared["input"]["models"]] == ["a", "b", "c"]


def _table_row(stdout, start):
    for line in stdout.splitlines():
        if line.strip().startswith(start):
            return line.split("   ")[:1] + line.split()[-3:]
    raise AssertionError(f"no row {start!r} in\n{stdout}")


def test_table_and_comparison_name_the_models(tmp_path, capsys):
    path = _binary_csv(tmp_path / "p.csv", n=3000, seed=1)
    report, stdout, out = _run(
        tmp_path, capsys, "o", path, "--y-true", "y", "--y-proba", "b,a", "--no-plot"
    )
    header = next(ln for ln in stdout.splitlines() if ln.strip().startswith("measure"))
    assert header.split() == ["measure", "b", "a"]
    # Every cell fits its column (a p-value of 1e-105 included).
    lines = stdout.splitlines()
    start = lines.index(header)
    end = next(i for i in range(start, len(lines)) if not lines[i].strip())
    table = [ln for ln in lines[start:end] if not ln.strip().startswith("(")]
    assert len({len(ln) for ln in table}) == 1, "\n".join(table)
    for row in ("smooth ECE", "binned ECE", "ECE-KDE", "Brier score", "log-loss"):
        _table_row(stdout, row)
    # The labels are drawn from a: it is the calibrated model.
    (cmp,) = report["answers"]
    assert cmp["key"] == "compare"
    assert cmp["verdict"].startswith("Model a has the lowest smooth ECE")
    assert "Which model? Model a" in stdout
    page = (out / "report.html").read_text()
    for key in ("compare", "a-calibrated", "b-calibrated", "a-how_far"):
        assert f'id="{key}"' in page


@pytest.mark.slow
def test_multiclass_models(tmp_path, capsys):
    rng = np.random.default_rng(2)
    n = 600
    P = rng.dirichlet(np.ones(3), size=n)
    y = np.array([rng.choice(3, p=row) for row in P])
    Q = P**2 / (P**2).sum(axis=1, keepdims=True)
    data = np.column_stack([y, P, Q])
    names = "y,p_0,p_1,p_2,q_0,q_1,q_2"
    path = tmp_path / "m.csv"
    np.savetxt(path, data, delimiter=",", header=names, comments="", fmt="%.17g")
    both, _, _ = _run(
        tmp_path,
        capsys,
        "all",
        path,
        "--y-true",
        "y",
        "--y-proba",
        "p_0,q_0",
        "p_1,q_1",
        "p_2,q_2",
        "--no-plot",
    )
    assert list(both["models"]) == ["p", "q"]
    for m in "pq":
        single, _, _ = _run(
            tmp_path,
            capsys,
            m,
            path,
            "--y-true",
            "y",
            "--y-proba",
            f"{m}_0",
            f"{m}_1",
            f"{m}_2",
            "--no-plot",
        )
        assert both["models"][m] == _alone(single)


@pytest.mark.slow
def test_figure_has_one_named_curve_per_model(tmp_path, capsys, monkeypatch):
    path = _binary_csv(tmp_path / "preds.csv", n=800)
    seen = {}
    real = cli.plot_reliability

    def record(display, fh, **kw):
        seen["displays"], seen["kw"] = display, kw
        return real(display, fh, **kw)

    monkeypatch.setattr(cli, "plot_reliability", record)
    _run(tmp_path, capsys, "o", path, "--y-true", "y", "--y-proba", "c,a,b")
    displays = seen["displays"]
    assert len(displays) == 3
    ax = displays[0].ax_
    assert all(d.ax_ is ax for d in displays)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    model_labels = [t for t in labels if "smECE" in t]
    assert [t.split(" (")[0] for t in model_labels] == ["c", "a", "b"]
    assert len({d.line_.get_color() for d in displays}) == 3
    assert ax.figure.get_suptitle() == "preds.csv" or ax.get_title() == "preds.csv"
    # Each curve is the one a report of its column alone draws.
    monkeypatch.setattr(cli, "plot_reliability", record)
    _run(tmp_path, capsys, "a", path, "--y-true", "y", "--y-proba", "a")
    np.testing.assert_array_equal(
        displays[1].line_.get_ydata(), seen["displays"].line_.get_ydata()
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (["--y-proba", "a,nope"], ["--y-proba", "nope"]),
        (["--y-proba", "a,b", "c"], ["--y-proba", "one non-empty name per model"]),
        (["--y-proba", "a,"], ["--y-proba"]),
        (["--compare", "--y-proba", "a"], ["--compare", "--y-proba"]),
        (["--compare", "--save-state", "s.npz"], ["--save-state"]),
    ],
)
def test_bad_model_columns(args, words, tmp_path, capsys):
    path = _binary_csv(tmp_path / "p.csv", n=50)
    err = _run(tmp_path, capsys, "o", path, "--y-true", "y", *args, code=2)
    for word in words:
        assert word in err


def test_compare_without_numeric_column(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_text("y,name\n" + "".join(f"{i % 2},x{i}\n" for i in range(20)))
    err = _run(tmp_path, capsys, "o", path, "--y-true", "y", "--compare", code=2)
    assert "--compare: no numeric column" in err


def test_compare_needs_a_file(tmp_path, capsys):
    err = _run(tmp_path, capsys, "o", "--compare", code=2)
    assert "--compare" in err


def test_one_model_keeps_the_single_layout(tmp_path, capsys):
    path = tmp_path / "p.csv"
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    path.write_text(
        "y,s\n" + "".join(f"{a},{b:.17g}\n" for a, b in zip(y, p, strict=True))
    )
    compared, _, _ = _run(tmp_path, capsys, "c", path, "--compare", "--no-plot")
    single, _, _ = _run(tmp_path, capsys, "s", path, "--y-proba", "s", "--no-plot")
    assert "models" not in compared
    assert _alone(compared) == _alone(single)
