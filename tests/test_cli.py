"""Tests of the ``skcalib report`` command, run as a subprocess."""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from _helpers import run_cli, run_main

PLOT = ["--bootstrap", "20", "--kde-max-samples", "400", "--quiet"]
FAST = [*PLOT, "--no-plot"]  # most tests check numbers only


def write_csv(path, header, rows, delimiter=","):
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, delimiter=delimiter)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def binary_sample(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 2, size=n)
    y = (rng.uniform(size=n) < p**2).astype(int)  # over-confident for large p
    return y, p


def multiclass_sample(n=1200, k=3, seed=1):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 1.5
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in P])
    return y, P


def load_report(out):
    with open(Path(out) / "report.json") as fh:
        return json.load(fh)


# --- independent references --------------------------------------------------


def ece_uniform_bins(y, p, n_bins=15):
    """15-bin uniform ECE written out directly: bins ``(lo, hi]``, the first
    one closed (the rule of ``sklearn.calibration.calibration_curve``)."""
    total = 0.0
    for b in range(n_bins):
        lo, hi = b / n_bins, (b + 1) / n_bins
        mask = ((p > lo) if b > 0 else (p >= lo)) & (p <= hi)
        if mask.any():
            total += mask.sum() / len(p) * abs(y[mask].mean() - p[mask].mean())
    return total


def ece_quantile_bins(y, p, n_bins=15):
    """15-bin equal-mass ECE: percentile edges, as ``calibration_curve``
    (interior edges in the bin below)."""
    edges = np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)
    idx = np.searchsorted(edges[1:-1], p, side="left")
    total = 0.0
    for b in range(n_bins):
        mask = idx == b
        if mask.any():
            total += mask.sum() / len(p) * abs(y[mask].mean() - p[mask].mean())
    return total


def demo_sample(perturbation_scale=None, seed=0):
    """The documented demo: Gaussian naive Bayes on make_classification,
    evaluated on the held-out half (rebuilt here with sklearn directly)."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(
        n_samples=20_000,
        n_features=20,
        n_informative=6,
        n_redundant=8,
        flip_y=0.05,
        class_sep=0.8,
        random_state=seed,
    )
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, random_state=seed)
    model = GaussianNB()
    if perturbation_scale is not None:
        from skcalib import PerturbedClassifier

        model = PerturbedClassifier(model, scale=perturbation_scale, random_state=seed)
    return y_te, model.fit(X_tr, y_tr).predict_proba(X_te)[:, 1]


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    err = result.stderr.strip()
    assert "Traceback" not in result.stderr
    assert len(err.splitlines()) == 1, err
    assert err.startswith("skcalib report: error:"), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    return err


# --- successful runs -----------------------------------------------------------


def test_demo_run(tmp_path):
    out = tmp_path / "demo"
    result = run_cli("report", "--out", out, "--bootstrap", "30", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "smooth ECE" in result.stdout
    assert "binned ECE (15 uniform bins)" in result.stdout
    assert "ECE-KDE" in result.stdout and "log-loss" in result.stdout
    # Progress goes to stderr, the table to stdout.
    assert "smooth ECE" in result.stderr and "done" in result.stderr
    report = load_report(out)
    png = out / "reliability.png"
    assert png.stat().st_size > 10_000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert report["n_samples"] == 10_000 and report["kind"] == "binary"
    sm = report["metrics"]["smooth_ece"]
    lo, hi = sm["ci"]
    assert 0 < lo <= sm["value"] <= hi < 1
    assert report["input"]["demo"]
    y, p = demo_sample()
    m = report["metrics"]
    assert m["brier_score"]["value"] == pytest.approx(np.mean((p - y) ** 2), abs=1e-9)
    assert m["binned_ece_uniform"]["value"] == pytest.approx(
        ece_uniform_bins(y, p), abs=1e-9
    )


def test_default_output_directory(tmp_path):
    result = run_cli("report", *PLOT, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "skcalib-report" / "report.json").exists()
    assert (tmp_path / "skcalib-report" / "reliability.png").exists()
    assert result.stderr == ""  # --quiet


def test_no_plot_writes_json_only(tmp_path):
    result = run_main("report", "--out", tmp_path / "o", *FAST)
    assert result.returncode == 0, result.stderr
    names = sorted(p.name for p in (tmp_path / "o").iterdir())
    assert names == ["report.html", "report.json"]
    assert load_report(tmp_path / "o")["outputs"]["reliability_png"] is None


def test_csv_binary_matches_direct_formulas(tmp_path):
    y, p = binary_sample()
    f = write_csv(tmp_path / "preds.csv", ["label", "score"], zip(y, p, strict=True))
    out = tmp_path / "out"
    result = run_main(
        "report", f, "--y-true", "label", "--y-proba", "score", "--out", out, *FAST
    )
    assert result.returncode == 0, result.stderr
    m = load_report(out)["metrics"]
    # CSV round trip keeps ~16 significant digits, so formulas agree tightly.
    assert m["brier_score"]["value"] == pytest.approx(np.mean((p - y) ** 2), abs=1e-9)
    ll = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    assert m["log_loss"]["value"] == pytest.approx(ll, abs=1e-9)
    assert m["binned_ece_uniform"]["value"] == pytest.approx(
        ece_uniform_bins(y, p), abs=1e-9
    )
    # smECE: the CLI passes the data through unchanged to the library function.
    from skcalib.metrics import smooth_ece

    assert m["smooth_ece"]["value"] == pytest.approx(smooth_ece(y, p), abs=1e-9)
    # A clearly miscalibrated sample (y ~ Bernoulli(p^2)): smECE far from zero.
    assert m["smooth_ece"]["value"] > 0.05
    assert m["binned_ece_quantile"]["value"] == pytest.approx(
        ece_quantile_bins(y, p), abs=1e-9
    )
    assert "ECE-KDE" in result.stdout
    assert m["ece_kde"]["n_samples_used"] == 400
    # ECE-KDE on the documented subsample (seed 0, sorted rows) equals the
    # library estimator, itself checked against a brute-force double loop.
    from skcalib.metrics import kde_calibration_error

    sub = np.sort(np.random.default_rng(0).choice(len(y), size=400, replace=False))
    kde = kde_calibration_error(y[sub], p[sub], p=1, bandwidth="risk")
    assert m["ece_kde"]["value"] == pytest.approx(kde, abs=1e-9)


def test_csv_default_columns_and_semicolons(tmp_path):
    y, p = binary_sample(n=600)
    f = write_csv(
        tmp_path / "p.csv", ["y_true", "y_proba"], zip(y, p, strict=True), ";"
    )
    out = tmp_path / "o"
    result = run_main("report", f, "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["input"]["y_true_column"] == "y_true"
    assert report["input"]["y_proba_columns"] == ["y_proba"]
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        np.mean((p - y) ** 2), abs=1e-9
    )


def test_csv_string_labels_and_pos_label(tmp_path):
    y, p = binary_sample(n=800, seed=3)
    words = np.where(y == 1, "spam", "ham")
    # The column is P(ham): ham is the positive class, not the greater label.
    f = write_csv(
        tmp_path / "s.csv", ["truth", "p_ham"], zip(words, 1 - p, strict=True)
    )
    out = tmp_path / "o"
    result = run_main(
        "report",
        f,
        "--y-true",
        "truth",
        "--y-proba",
        "p_ham",
        "--pos-label",
        "ham",
        "--out",
        out,
        *FAST,
    )
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["pos_label"] == "ham"
    # Brier score of P(ham) against 1{ham} equals that of p against y.
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        np.mean((p - y) ** 2), abs=1e-9
    )
    assert "positive label 'ham'" in result.stdout


@pytest.mark.parametrize("names", [["c", "a", "b"], ["p_c", "p_a", "p_b"]])
def test_csv_multiclass_columns_named_after_classes(tmp_path, names):
    y, P = multiclass_sample()
    labels = np.array(["a", "b", "c"])[y]
    # Columns deliberately not in sorted order: the CLI must match them by name.
    order = [2, 0, 1]
    rows = [[lab, *row[order]] for lab, row in zip(labels, P, strict=True)]
    f = write_csv(tmp_path / "m.csv", ["label", *names], rows)
    out = tmp_path / "o"
    result = run_main(
        "report", f, "--y-true", "label", "--y-proba", *names, "--out", out, *PLOT
    )
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["kind"] == "multiclass" and report["n_classes"] == 3
    onehot = np.eye(3)[y]
    brier = np.mean(np.sum((P - onehot) ** 2, axis=1))
    ll = -np.mean(np.log(P[np.arange(len(y)), y]))
    m = report["metrics"]
    assert m["brier_score"]["value"] == pytest.approx(brier, abs=1e-9)
    assert m["log_loss"]["value"] == pytest.approx(ll, abs=1e-9)
    # Top-label binned ECE written out directly.
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(float)
    assert m["binned_ece_uniform"]["value"] == pytest.approx(
        ece_uniform_bins(correct, conf), abs=1e-9
    )
    assert "3 classes" in result.stdout and "top-label" in result.stdout
    assert (out / "reliability.png").stat().st_size > 10_000


def test_csv_binary_two_columns_named_in_reverse_order(tmp_path):
    y, p = binary_sample(n=600, seed=9)
    words = np.where(y == 1, "yes", "no")
    rows = zip(words, p, 1 - p, strict=True)  # P(yes) first, P(no) second
    f = write_csv(tmp_path / "r.csv", ["answer", "yes", "no"], rows)
    out = tmp_path / "o"
    result = run_main("report", f, "--y-true", "answer", "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["kind"] == "binary" and report["pos_label"] == "yes"
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(
        np.mean((p - y) ** 2), abs=1e-9
    )
    assert report["metrics"]["binned_ece_uniform"]["value"] == pytest.approx(
        ece_uniform_bins(y, p), abs=1e-9
    )


def test_csv_multiclass_integer_labels_in_sorted_column_order(tmp_path):
    y, P = multiclass_sample(k=4, seed=5)
    rows = [[lab, *row] for lab, row in zip(y, P, strict=True)]
    f = write_csv(tmp_path / "m.csv", ["y", "s0", "s1", "s2", "s3"], rows)
    out = tmp_path / "o"
    # No --y-proba: every column besides the label is a class probability.
    result = run_main("report", f, "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["n_classes"] == 4
    assert report["input"]["y_proba_columns"] == ["s0", "s1", "s2", "s3"]
    ll = -np.mean(np.log(P[np.arange(len(y)), y]))
    assert report["metrics"]["log_loss"]["value"] == pytest.approx(ll, abs=1e-9)


def test_npz_and_npy_inputs(tmp_path):
    y, P = multiclass_sample(n=500)
    np.savez(tmp_path / "p.npz", y_true=y, y_proba=P)
    np.save(tmp_path / "p.npy", np.column_stack([y, P]))
    ll = -np.mean(np.log(P[np.arange(len(y)), y]))
    for name in ("p.npz", "p.npy"):
        out = tmp_path / name.replace(".", "_")
        result = run_main("report", tmp_path / name, "--out", out, *FAST)
        assert result.returncode == 0, (name, result.stderr)
        report = load_report(out)
        assert report["n_classes"] == 3
        assert report["metrics"]["log_loss"]["value"] == pytest.approx(ll, abs=1e-12)


def test_npz_classes_array_orders_the_columns(tmp_path):
    y, P = multiclass_sample(n=500, seed=11)
    names = np.array(["bird", "cat", "dog"])
    order = [1, 2, 0]  # columns stored as cat, dog, bird
    np.savez(
        tmp_path / "c.npz", y_true=names[y], y_proba=P[:, order], classes=names[order]
    )
    out = tmp_path / "o"
    result = run_main("report", tmp_path / "c.npz", "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["input"]["labels"] == ["bird", "cat", "dog"]
    ll = -np.mean(np.log(P[np.arange(len(y)), y]))
    assert report["metrics"]["log_loss"]["value"] == pytest.approx(ll, abs=1e-12)


def test_sample_weight_column(tmp_path):
    y, p = binary_sample(n=700, seed=4)
    w = np.random.default_rng(0).integers(1, 4, size=len(y))
    f = write_csv(tmp_path / "w.csv", ["y", "p", "w"], zip(y, p, w, strict=True))
    out = tmp_path / "o"
    result = run_main(
        "report", f, "--y-proba", "p", "--sample-weight", "w", "--out", out, *FAST
    )
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    assert report["weighted"] is True
    brier = np.sum(w * (p - y) ** 2) / np.sum(w)
    assert report["metrics"]["brier_score"]["value"] == pytest.approx(brier, abs=1e-9)


def test_tv_bound(tmp_path):
    y, p = binary_sample(n=3000, seed=7)
    f = write_csv(tmp_path / "b.csv", ["y", "p"], zip(y, p, strict=True))
    out = tmp_path / "o"
    result = run_main("report", f, "--bound", "tv", "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    b = load_report(out)["metrics"]["calibration_error_bound"]
    assert b["method"] == "tv" and b["delta"] == 0.05
    # The true CE of y ~ Bernoulli(p^2), p ~ Beta(2, 2) is E[p - p^2] = 0.2.
    assert b["upper"] >= 0.2
    assert b["upper"] >= b["estimate"]
    # Same numbers as the library bound (checked term by term against a
    # brute-force implementation) with the default seed 0.
    from skcalib.metrics import calibration_error_bound

    ref = calibration_error_bound(
        y, p, method="tv", delta=0.05, random_state=0, return_details=True
    )
    assert b["upper"] == pytest.approx(ref.upper, abs=1e-9)
    assert b["estimate"] == pytest.approx(ref.estimate, abs=1e-9)
    assert b["lower"] == pytest.approx(ref.lower, abs=1e-9)
    assert "certified CE bound (TV)" in result.stdout


def test_tv_bound_multiclass_is_top_label(tmp_path):
    y, P = multiclass_sample(n=2000, seed=8)
    np.savez(tmp_path / "m.npz", y_true=y, y_proba=P)
    out = tmp_path / "o"
    result = run_main(
        "report", tmp_path / "m.npz", "--bound", "tv", "--out", out, *FAST
    )
    assert result.returncode == 0, result.stderr
    b = load_report(out)["metrics"]["calibration_error_bound"]
    assert b["target"] == "top-label"
    # Labels drawn from P itself: calibrated, so the bound is the statistical slack.
    assert 0 < b["upper"] < 1 and b["lower"] <= b["estimate"] <= b["upper"]
    # Top-label reduction written out: confidence against correctness.
    from skcalib.metrics import calibration_error_bound

    correct = (P.argmax(axis=1) == y).astype(int)
    ref = calibration_error_bound(
        correct, P.max(axis=1), method="tv", random_state=0, return_details=True
    )
    assert b["upper"] == pytest.approx(ref.upper, abs=1e-12)
    assert b["estimate"] == pytest.approx(ref.estimate, abs=1e-12)


def test_nw_bound_demo_perturbs_the_model(tmp_path):
    out = tmp_path / "o"
    result = run_main(
        "report",
        "--bound",
        "nw",
        "--perturbation-scale",
        "0.015625",
        "--out",
        out,
        *FAST,
    )
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    b = report["metrics"]["calibration_error_bound"]
    assert b["method"] == "nw" and b["perturbation_scale"] == 0.015625
    assert "perturbed" in report["input"]["demo"]
    assert b["upper"] >= b["estimate"]
    from skcalib.metrics import calibration_error_bound

    y, p = demo_sample(perturbation_scale=2**-6)
    ref = calibration_error_bound(
        y, p, method="nw", perturbation_scale=2**-6, random_state=0, return_details=True
    )
    assert b["upper"] == pytest.approx(ref.upper, abs=1e-12)
    assert b["estimate"] == pytest.approx(ref.estimate, abs=1e-12)


def test_help_lists_options():
    result = run_cli("report", "--help")
    assert result.returncode == 0
    for option in (
        "--y-true",
        "--y-proba",
        "--pos-label",
        "--bootstrap",
        "--bound",
        "--perturbation-scale",
        "--delta",
        "--out",
        "--seed",
    ):
        assert option in result.stdout


def test_seed_makes_the_report_reproducible(tmp_path):
    y, p = binary_sample(n=500)
    f = write_csv(tmp_path / "p.csv", ["y", "p"], zip(y, p, strict=True))
    reports = []
    for name in ("a", "b"):
        assert (
            run_main(
                "report", f, "--out", tmp_path / name, "--seed", "3", *FAST
            ).returncode
            == 0
        )
        reports.append(load_report(tmp_path / name)["metrics"])
    assert reports[0] == reports[1]


# --- error paths: exit code 2 and a one-line message -----------------------------


def _binary_csv(tmp_path, n=50):
    y, p = binary_sample(n=n)
    return write_csv(tmp_path / "ok.csv", ["y", "p"], zip(y, p, strict=True))


def test_error_missing_file(tmp_path):
    assert_one_line_error(
        run_cli("report", tmp_path / "nope.csv", *FAST), "nope.csv", "no such file"
    )


def test_error_after_progress_starts_its_own_line(tmp_path):
    f = write_csv(tmp_path / "o.csv", ["y", "p"], [[1, 0.3], [0, 1.7], [1, 0.9]])
    result = run_cli("report", f)  # progress on stderr, not --quiet
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("skcalib: reading")
    assert lines[-1].startswith("skcalib report: error:") and "[0, 1]" in lines[-1]
    assert "Traceback" not in result.stderr


def test_error_directory(tmp_path):
    (tmp_path / "d.csv").mkdir()
    assert_one_line_error(run_cli("report", tmp_path / "d.csv", *FAST), "directory")


def test_error_unknown_suffix(tmp_path):
    f = tmp_path / "preds.xlsx"
    f.write_text("y,p\n1,0.5\n")
    assert_one_line_error(run_cli("report", f, *FAST), "unknown file type", ".xlsx")


def test_error_empty_file(tmp_path):
    f = tmp_path / "e.csv"
    f.write_text("")
    assert_one_line_error(run_cli("report", f, *FAST), "empty")


def test_error_header_only(tmp_path):
    f = tmp_path / "h.csv"
    f.write_text("y,p\n")
    assert_one_line_error(run_cli("report", f, *FAST), "no data rows")


def test_error_ragged_row(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("y,p\n1,0.3\n0,0.2,7\n")
    assert_one_line_error(run_cli("report", f, *FAST), "line 3", "expected 2 fields")


def test_error_missing_label_column(tmp_path):
    f = _binary_csv(tmp_path)
    err = assert_one_line_error(
        run_cli("report", f, "--y-true", "outcome", *FAST), "'outcome'", "--y-true"
    )
    assert "y, p" in err  # lists the available columns


def test_error_missing_probability_column(tmp_path):
    f = _binary_csv(tmp_path)
    assert_one_line_error(
        run_cli("report", f, "--y-proba", "prob", *FAST), "'prob'", "--y-proba"
    )


def test_error_no_label_column_guessable(tmp_path):
    f = write_csv(tmp_path / "g.csv", ["truth", "p"], [[1, 0.5], [0, 0.2]])
    assert_one_line_error(run_cli("report", f, *FAST), "--y-true", "truth")


def test_error_non_numeric_probability(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("y,p\n1,0.3\n0,high\n")
    assert_one_line_error(run_cli("report", f, *FAST), "'p'", "'high'")


def test_error_probability_out_of_range(tmp_path):
    f = write_csv(tmp_path / "o.csv", ["y", "p"], [[1, 0.3], [0, 1.7], [1, 0.9]])
    assert_one_line_error(run_cli("report", f, *FAST), "y_proba", "[0, 1]")


def test_error_nan_probability(tmp_path):
    f = write_csv(tmp_path / "n.csv", ["y", "p"], [[1, 0.3], [0, "nan"], [1, 0.9]])
    assert_one_line_error(run_cli("report", f, *FAST), "NaN")


def test_error_rows_not_summing_to_one(tmp_path):
    rows = [["a", 0.5, 0.3, 0.1], ["b", 0.2, 0.2, 0.6], ["c", 0.1, 0.1, 0.8]]
    f = write_csv(tmp_path / "m.csv", ["y", "a", "b", "c"], rows)
    assert_one_line_error(run_cli("report", f, *FAST), "sum to 1")


def test_error_multiclass_labels_with_one_column(tmp_path):
    rows = [["a", 0.5], ["b", 0.2], ["c", 0.1]]
    f = write_csv(tmp_path / "m.csv", ["y", "p"], rows)
    assert_one_line_error(run_cli("report", f, *FAST), "3 classes")


def test_error_unknown_pos_label(tmp_path):
    f = _binary_csv(tmp_path)
    assert_one_line_error(
        run_cli("report", f, "--pos-label", "yes", *FAST), "--pos-label", "'yes'"
    )


def test_error_nw_bound_needs_scale(tmp_path):
    f = _binary_csv(tmp_path)
    assert_one_line_error(
        run_cli("report", f, "--bound", "nw", *FAST), "--perturbation-scale"
    )


def test_error_bound_with_weights(tmp_path):
    f = write_csv(tmp_path / "w.csv", ["y", "p", "w"], [[1, 0.3, 1], [0, 0.2, 2]])
    assert_one_line_error(
        run_cli(
            "report",
            f,
            "--y-proba",
            "p",
            "--sample-weight",
            "w",
            "--bound",
            "tv",
            *FAST,
        ),
        "--sample-weight",
        "--bound",
    )


def test_error_corrupt_npy(tmp_path):
    f = tmp_path / "bad.npy"
    f.write_bytes(b"this is not a numpy file")
    assert_one_line_error(run_cli("report", f, *FAST), "bad.npy")


def test_error_npy_wrong_shape(tmp_path):
    f = tmp_path / "one.npy"
    np.save(f, np.arange(5.0))
    assert_one_line_error(run_cli("report", f, *FAST), "2-D")


def test_error_parquet_without_pyarrow(tmp_path):
    # A stub package earlier on the path makes ``import pyarrow`` fail, as on a
    # machine without pyarrow.
    stub = tmp_path / "stub" / "pyarrow"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('no pyarrow')\n")
    f = tmp_path / "p.parquet"
    f.write_bytes(b"PAR1")
    env = {"PYTHONPATH": str(tmp_path / "stub")}
    assert_one_line_error(run_cli("report", f, *FAST, env=env), "pyarrow")


def test_parquet_input(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    y, p = binary_sample(n=400)
    pq.write_table(pa.table({"y": y, "p": p}), tmp_path / "p.parquet")
    out = tmp_path / "o"
    result = run_main("report", tmp_path / "p.parquet", "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    assert load_report(out)["metrics"]["brier_score"]["value"] == pytest.approx(
        np.mean((p - y) ** 2), abs=1e-12
    )


def test_error_columns_without_file():
    assert_one_line_error(run_cli("report", "--y-true", "y", *FAST), "FILE")


def test_error_output_directory_is_a_file(tmp_path):
    f = _binary_csv(tmp_path)
    blocker = tmp_path / "out"
    blocker.write_text("")
    assert_one_line_error(run_cli("report", f, "--out", blocker, *FAST), "out")


@pytest.mark.parametrize(
    "args",
    [
        ["--delta", "1.5"],
        ["--bootstrap", "-3"],
        ["--bound", "magic"],
        ["--perturbation-scale", "zero"],
    ],
)
def test_bad_option_values_exit_2(args):
    result = run_cli("report", *args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr


@pytest.mark.parametrize(
    "names, labels",
    [
        (["p_cat", "p_car"], ["cat", "car"]),  # shared "p_ca": not a token
        (["cat_proba", "car_proba"], ["cat", "car"]),
        (["p_12", "p_10", "p_11"], ["12", "10", "11"]),
    ],
)
def test_columns_named_after_classes_sharing_leading_characters(
    tmp_path, names, labels
):
    from skcalib.cli import read_predictions

    rng = np.random.default_rng(5)
    k = len(names)
    P = rng.dirichlet(np.ones(k), size=300)
    y_idx = np.array([rng.choice(k, p=row) for row in P])
    rows = [[labels[i], *row] for i, row in zip(y_idx, P, strict=True)]
    f = write_csv(tmp_path / "n.csv", ["label", *names], rows)
    y, proba, _, info = read_predictions(f)
    order = np.argsort(labels)  # columns come back in sorted-label order
    assert [str(c) for c in info["labels"]] == sorted(labels)
    np.testing.assert_allclose(proba, P[:, order])
    assert [str(v) for v in y] == [labels[i] for i in y_idx]


def test_columns_naming_some_classes_only_are_an_error(tmp_path):
    from skcalib.cli import InputError, read_predictions

    rows = [["cat", 0.7, 0.3], ["car", 0.2, 0.8]]
    f = write_csv(tmp_path / "p.csv", ["label", "p_cat", "p_dog"], rows)
    with pytest.raises(InputError, match=r"name the classes \['cat'\] but not"):
        read_predictions(f)


def test_csv_label_column_named_classes(tmp_path):
    from skcalib.cli import read_predictions

    rows = [["a", 0.7, 0.3], ["b", 0.2, 0.8], ["a", 0.6, 0.4]]
    f = write_csv(tmp_path / "c.csv", ["classes", "p_b", "p_a"], rows)
    y, proba, _, info = read_predictions(f, y_true="classes")
    assert info["labels"] == ["a", "b"]
    np.testing.assert_allclose(proba, [[0.3, 0.7], [0.8, 0.2], [0.4, 0.6]])


def test_csv_empty_label_cell_and_non_numeric_cell_messages(tmp_path):
    from skcalib.cli import InputError, read_predictions

    f = tmp_path / "e.csv"
    f.write_text("label,p\n1,0.2\n,0.3\n")
    with pytest.raises(InputError, match="line 3: the label column 'label' has an"):
        read_predictions(f)
    f.write_text("label,p\n1,0.2\n0,abc\n")
    with pytest.raises(InputError, match="line 3: column 'p' holds 'abc'"):
        read_predictions(f)


def test_report_is_free_of_the_weights_scale():
    from skcalib.cli import compute_report

    y, p = binary_sample(n=500, seed=6)
    w = np.random.default_rng(1).uniform(0.5, 2.0, size=500)
    kw = dict(n_bootstrap=0, kde_max_samples=500)
    base = compute_report(y, p, sample_weight=w, **kw)[0]["metrics"]
    scaled = compute_report(y, p, sample_weight=10 * w, **kw)[0]["metrics"]
    for name, value in base.items():
        assert scaled[name]["value"] == pytest.approx(value["value"], rel=1e-9), name
    # Weights rescaled to mean 1 put some above 1, and ECE-KDE's
    # leave-one-out then kept part of those samples among their own
    # neighbours: 0.96 against 0.07 unweighted on this 3-class sample.
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), 800)
    y3 = np.array([rng.choice(3, p=row) for row in P])
    w3 = rng.uniform(0.0, 1.0, 800)
    kw = dict(n_bootstrap=0)
    plain = compute_report(y3, P, **kw)[0]["metrics"]["ece_kde"]["value"]
    weighted = compute_report(y3, P, sample_weight=w3, **kw)[0]["metrics"]
    assert weighted["ece_kde"]["value"] < 2 * plain


def test_npz_text_classes_with_numeric_text_labels(tmp_path):
    from skcalib.cli import read_predictions

    f = tmp_path / "c.npz"
    np.savez(
        f,
        y_true=np.array(["1", "2"] * 50),
        y_proba=np.tile([[0.6, 0.4]], (100, 1)),
        classes=np.array(["2", "1"]),  # column 0 is class 2
    )
    y, proba, _, info = read_predictions(f)
    assert info["labels"] == [1, 2] and y.tolist()[:2] == [1, 2]
    np.testing.assert_allclose(proba[0], [0.4, 0.6])


def test_report_interval_is_the_api_default_interval():
    from skcalib.cli import compute_report
    from skcalib.metrics import smooth_calibration_curve

    y, p = binary_sample(n=800, seed=3)
    report, curve = compute_report(y, p, n_bootstrap=40, kde_max_samples=300)
    ci = report["metrics"]["smooth_ece"]["ci"]
    api = smooth_calibration_curve(y, p, n_bootstrap=40, random_state=0)
    assert api.ci_method == curve.ci_method == "inversion"
    assert ci == pytest.approx(list(api.smece_ci), abs=1e-15)
    np.testing.assert_array_equal(curve.smece_bootstrap, api.smece_bootstrap)


def test_error_text_labels_with_one_probability_column_need_pos_label(tmp_path):
    # P(churn) of a calibrated model: taking "stay" (the greater label) as
    # positive would report a large error for it; the CLI asks instead.
    rng = np.random.default_rng(4)
    p = rng.uniform(size=500)
    words = np.where(rng.uniform(size=500) < p, "churn", "stay")
    f = write_csv(tmp_path / "c.csv", ["y_true", "y_proba"], zip(words, p, strict=True))
    assert_one_line_error(run_cli("report", f, *FAST), "--pos-label")
    out = tmp_path / "o"
    result = run_cli("report", f, "--pos-label", "churn", "--out", out, *FAST)
    assert result.returncode == 0, result.stderr
    report = load_report(out)
    y = (words == "churn").astype(int)
    assert report["metrics"]["binned_ece_uniform"]["value"] == pytest.approx(
        ece_uniform_bins(y, p), abs=1e-9
    )


def test_multiclass_table_names_the_notion_of_every_number(tmp_path):
    y, P = multiclass_sample(n=600)
    f = write_csv(
        tmp_path / "m.csv",
        ["label", "p0", "p1", "p2"],
        [(int(a), *row) for a, row in zip(y, P, strict=True)],
    )
    result = run_main("report", f, "--y-true", "label", "--out", tmp_path / "o", *FAST)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("---"))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line)
    assert len(rows) >= 6, rows
    notions = ("top-label", "canonical", "classwise")
    for row in rows:
        assert any(n in row for n in notions), row


def test_nw_bound_refuses_scores_that_were_not_perturbed(tmp_path):
    # "certified" must never be printed for scores the perturbation did not
    # produce: the NW bound's assumption would be false.
    y, p = binary_sample(n=2000, seed=5)
    f = write_csv(tmp_path / "p.csv", ["y_true", "y_proba"], zip(y, p, strict=True))
    result = run_cli(
        "report", f, "--bound", "nw", "--perturbation-scale", "0.015625", *FAST
    )
    assert_one_line_error(result, "not perturbed")
    assert "certified" not in result.stdout
