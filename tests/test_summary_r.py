"""calibration_summary against R: ``rms::val.prob`` and the same definitions
computed with R's own glm, lowess and ranks.

The data and R's results are stored in ``tests/reference`` (made by
``tests/reference/val_prob.py``, which runs ``val_prob.R``); the last test
re-runs R on the stored data when ``Rscript`` and ``rms`` are installed.
"""

import csv
import shutil
import subprocess
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import special

from skcalib.metrics import calibration_summary

REF = Path(__file__).resolve().parent / "reference"

# Field of the summary -> name in val.prob, where the definitions coincide.
VAL_PROB = {
    "slope": "Slope",
    "joint_intercept": "Intercept",
    "emax": "Emax",
    "e90": "E90",
    "ici": "Eavg",
    "brier": "Brier",
    "nagelkerke_r2": "R2",
    "discrimination_index": "D",
    "unreliability_index": "U",
    "unreliability_pvalue": "U:p",
    "quality_index": "Q",
}
FIELDS = [
    "slope",
    "slope_se",
    "intercept",
    "intercept_se",
    "joint_intercept",
    "joint_intercept_se",
    "emax",
    "e90",
    "e50",
    "ici",
    "c_index",
    "dxy",
    "nagelkerke_r2",
    "discrimination_index",
    "unreliability_index",
    "unreliability_pvalue",
    "quality_index",
    "brier",
    "mean_difference",
    "n_dropped",
]


def _read_data(path=REF / "val_prob_data.csv"):
    rows = defaultdict(list)
    with open(path) as f:
        for r in csv.DictReader(f):
            rows[r["dataset"]].append((float(r["p"]), int(r["y"]), int(r["w"])))
    out = {}
    for name, v in rows.items():
        p, y, w = np.array(v).T
        out[name] = (p, y.astype(int), w.astype(int))
    return out


def _read_results(path):
    out = defaultdict(dict)
    with open(path) as f:
        for r in csv.DictReader(f):
            v = r["value"]
            out[r["dataset"]][r["statistic"]] = np.nan if v == "NA" else float(v)
    return out


DATA = _read_data()
R = _read_results(REF / "val_prob_results.csv")


def _summary(name, **kw):
    p, y, w = DATA[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return calibration_summary(
            y, p, sample_weight=None if np.all(w == 1) else w, **kw
        )


def _repeated(name):
    p, y, w = DATA[name]
    return np.repeat(p, w), np.repeat(y, w).astype(float)


def test_the_reference_covers_the_hard_cases():
    assert len(DATA) >= 6
    p, y, _ = DATA["exact_0_1"]
    assert np.any((p == 0) & (y == 1)) and np.any((p == 1) & (y == 0))
    p, y, _ = DATA["rare_positives"]
    assert y.mean() < 0.02
    p, _, _ = DATA["breast_cancer_gnb"]
    assert np.any(p == 1) and np.min(p) < 1e-200
    assert np.any(DATA["weighted"][2] > 1)


@pytest.mark.parametrize("name", sorted(DATA))
def test_every_number_matches_r(name):
    s = _summary(name)
    ref = R[name]
    for field in FIELDS:
        assert getattr(s, field) == pytest.approx(ref[field], rel=1e-6, abs=1e-9), field


@pytest.mark.parametrize("name", sorted(DATA))
def test_val_prob_where_the_definitions_coincide(name):
    s = _summary(name)
    ref = R[name]
    p, y = _repeated(name)
    lg = special.logit(p)
    fit = np.isfinite(lg)
    for field, key in VAL_PROB.items():
        expected = ref[f"valprob:{key}"]
        if key in ("U", "U:p", "Q") and np.any((p == 0) & (y == 1)):
            # log(0) for an event: val.prob's U is infinite (and Q -inf).
            assert abs(expected) == np.inf or key == "U:p"
            continue
        if key in ("R2", "D", "Q") and np.any(np.abs(lg[fit]) > 30):
            # val.prob takes D and R2 from lrm.fit, whose likelihood is the
            # log of probabilities with the log-odds clamped to [-30, 30]:
            # that explains its value.
            yf = y[fit]
            q = 1 / (1 + np.exp(-np.clip(lg[fit], -30, 30)))
            L0 = -2 * np.sum(yf * np.log(yf.mean()) + (1 - yf) * np.log(1 - yf.mean()))
            L01 = -2 * np.sum(yf * np.log(q) + (1 - yf) * np.log(1 - q))
            if key == "D":
                d = (L0 - L01 - 1) / fit.sum()
                assert expected == pytest.approx(d, rel=1e-9)
            continue
        assert getattr(s, field) == pytest.approx(expected, rel=1e-6, abs=1e-9), field


@pytest.mark.parametrize("name", sorted(DATA))
def test_val_prob_c_is_the_c_of_binned_probabilities(name):
    # lrm.fit counts concordance in a table of 5001 cells of the predicted
    # probability, on the rows of the fit: the exact C of those cells.
    p, y = _repeated(name)
    lg = special.logit(p)
    fit = np.isfinite(lg)
    cells = np.floor(5000 * special.expit(np.clip(lg[fit], -30, 30)) + 1) / 5001
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = calibration_summary(y[fit], cells).c_index
    assert c == pytest.approx(R[name]["valprob:C (ROC)"], rel=1e-12)
    assert _summary(name).dxy == pytest.approx(R[name]["dxy"], rel=1e-6)


def test_clamped_log_odds_change_val_prob_d_when_contradicted():
    # The two most extreme logits (+-36) of near_0_1 are contradicted by their
    # labels: 6 units of log-likelihood each that the clamp at 30 hides.
    s = _summary("near_0_1")
    assert s.discrimination_index < R["near_0_1"]["valprob:D"] - 0.04


def test_breast_cancer_slope_keeps_the_extreme_logits():
    s = _summary("breast_cancer_gnb")
    assert s.slope == pytest.approx(0.1293, abs=5e-5)
    assert s.n_dropped == int(R["breast_cancer_gnb"]["n_dropped"]) > 0
    # Clipping at 1e-10 keeps every row and changes the slope.
    assert _summary("breast_cancer_gnb", clip=1e-10).slope > 0.17


def test_dropping_rows_warns_with_their_count():
    p, y, _ = DATA["exact_0_1"]
    with pytest.warns(UserWarning, match="24 of 400 rows") as caught:
        calibration_summary(y, p)
    assert [w.filename for w in caught] == [__file__]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_r_reproduces_the_stored_results(tmp_path):
    out = tmp_path / "results.csv"
    run = subprocess.run(
        ["Rscript", str(REF / "val_prob.R"), str(REF / "val_prob_data.csv"), str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    if "no package called" in run.stderr:
        pytest.skip("R package rms not installed")
    assert run.returncode == 0, run.stderr
    fresh = _read_results(out)
    assert fresh.keys() == R.keys()
    for name, stats in R.items():
        assert fresh[name].keys() == stats.keys()
        for key, value in stats.items():
            assert fresh[name][key] == pytest.approx(value, rel=1e-9, nan_ok=True), (
                name,
                key,
            )
