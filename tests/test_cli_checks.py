"""skcalib report: the tests, the decomposition and the summary."""

import json

import numpy as np
import pytest

from skcalib.cli import compute_report, format_table
from skcalib.metrics import calibration_summary, calibration_test, score_decomposition


def test_report_holds_tests_decomposition_and_summary():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=3000)
    y = (rng.uniform(size=3000) < 0.5 + 0.7 * (p - 0.5)).astype(int)
    report, _ = compute_report(y, p, n_bootstrap=0, kde_max_samples=200)
    m = json.loads(json.dumps(report))
    for method in ("spiegelhalter", "hosmer-lemeshow", "kuiper"):
        res = calibration_test(y, p, method=method)
        assert m["calibration_tests"][method]["statistic"] == pytest.approx(
            res.statistic, rel=1e-12
        )
        assert m["calibration_tests"][method]["pvalue"] == pytest.approx(
            res.pvalue, rel=1e-12
        )
    assert m["calibration_tests"]["consistency"]["pvalue"] == 1 / 1000
    d = score_decomposition(y, p, score="log_loss")
    assert m["score_decomposition"]["log_loss"]["miscalibration"] == pytest.approx(
        d.miscalibration, rel=1e-12
    )
    assert m["calibration_summary"]["slope"] == pytest.approx(
        calibration_summary(y, p).slope, rel=1e-12
    )
    text = format_table(report)
    assert "test of calibration" in text and "MCB" in text and "ICI" in text


def test_checks_are_free_of_the_weights_scale():
    rng = np.random.default_rng(1)
    p = rng.uniform(size=600)
    y = (rng.uniform(size=600) < p).astype(int)
    w = rng.uniform(0.5, 2.0, 600)
    kw = dict(n_bootstrap=0, kde_max_samples=300)
    a = compute_report(y, p, sample_weight=w, **kw)[0]
    b = compute_report(y, p, sample_weight=10 * w, **kw)[0]
    for key in ("calibration_tests", "score_decomposition", "calibration_summary"):
        for name, va in a[key].items():
            vb = b[key][name]
            if isinstance(va, dict):
                for f, x in va.items():
                    if isinstance(x, float):
                        assert vb[f] == pytest.approx(x, rel=1e-9), (key, name, f)
            elif isinstance(va, float):
                assert vb == pytest.approx(va, rel=1e-9), (key, name)


def test_one_log_loss_with_predictions_of_zero_and_one():
    # A 0 for an event: the table's log-loss clips it (as scikit-learn's
    # log_loss does) and the decomposition decomposes that same number.
    from sklearn.metrics import log_loss

    rng = np.random.default_rng(2)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p).astype(int)
    p[:3], y[:3] = 0.0, 1
    with pytest.warns(UserWarning, match="exactly 0 or 1"):
        report, _ = compute_report(y, p, n_bootstrap=0, kde_max_samples=200)
    d = report["score_decomposition"]["log_loss"]
    assert d["score"] == pytest.approx(report["metrics"]["log_loss"]["value"])
    assert d["score"] == pytest.approx(log_loss(y, p), rel=1e-12)
    assert d["miscalibration"] - d["discrimination"] + d["uncertainty"] == (
        pytest.approx(d["score"], rel=1e-12)
    )
