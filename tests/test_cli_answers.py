"""The answers of ``skcalib report`` (terminal, report.json, report.html)."""

import json
from html.parser import HTMLParser

import numpy as np
import pytest
from scipy.special import expit, logit
from sklearn.metrics import log_loss

from skcalib.cli import compute_report, main
from skcalib.cli._answers import answers, format_answers, recalibration_gain

FAST = ["--bootstrap", "20", "--kde-max-samples", "300", "--quiet"]
QUICK = dict(n_bootstrap=0, kde_max_samples=300)


def distorted(n, power, seed=0):
    """Scores ``expit(power * logit(q))`` of labels drawn from ``q``: over-
    confident for ``power > 1``, under-confident below 1, calibrated at 1."""
    rng = np.random.default_rng(seed)
    q = rng.uniform(0.1, 0.9, size=n)
    y = (rng.uniform(size=n) < q).astype(int)
    return y, expit(power * logit(q))


class Page(HTMLParser):
    """Sections, headings, links and images of a page."""

    def __init__(self):
        super().__init__()
        self.sections, self.answers, self.links, self.images = [], [], [], []
        self._in_h3 = False
        self.h3 = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self.sections.append(a.get("id"))
        elif tag == "div" and a.get("class") == "answer":
            self.answers.append(a.get("id"))
        elif tag == "a":
            self.links.append(a.get("href"))
        elif tag == "img":
            self.images.append(a.get("src"))
        self._in_h3 = tag == "h3"

    def handle_data(self, data):
        if self._in_h3:
            self.h3.append(data)

    def handle_endtag(self, tag):
        self._in_h3 = False


@pytest.mark.parametrize(
    "power, word", [(2.0, "Over-confident"), (0.5, "Under-confident")]
)
def test_direction_follows_the_distortion(power, word):
    y, s = distorted(3000, power)
    report, _ = compute_report(y, s, **QUICK)
    found = {a["key"]: a for a in answers(report)}
    assert found["direction"]["verdict"].startswith(word)
    assert found["calibrated"]["verdict"].startswith("No:")
    # Recalibrating fixes a distortion of the logit: a clear held-out gain.
    assert found["what_to_do"]["verdict"].startswith("Recalibrate")


def test_recalibration_gain_is_held_out_and_small_when_calibrated():
    y, s = distorted(4000, 1.0, seed=3)
    r = recalibration_gain(y, s, None, binary=True, random_state=0)
    # The loss before is the plain clipped log-loss of the scores.
    assert r["log_loss_before"] == pytest.approx(log_loss(y, s), rel=1e-12)
    # Calibrated scores: nothing to gain out of sample (in-sample refits
    # would always show a gain).
    assert r["gain"] < 2 * r["gain_se"] + 1e-3
    y, s = distorted(4000, 2.5, seed=3)
    r = recalibration_gain(y, s, None, binary=True, random_state=0)
    assert r["gain"] > 5 * r["gain_se"] > 0


def test_interval_below_the_estimate_is_explained():
    report = {
        "metrics": {
            "smooth_ece": {
                "value": 0.02,
                "ci": [0.001, 0.015],
                "confidence_level": 0.95,
            },
            "binned_ece_uniform": {"value": 0.03, "n_bins": 15},
        }
    }
    (how_far,) = [a for a in answers(report) if a["key"] == "how_far"]
    assert "biased upward" in how_far["how_to_read"]
    report["metrics"]["smooth_ece"]["ci"] = [0.01, 0.03]
    (how_far,) = [a for a in answers(report) if a["key"] == "how_far"]
    assert "biased upward" not in how_far["how_to_read"]


def test_report_html_json_and_terminal_answer_the_questions(tmp_path, capsys):
    y, s = distorted(1500, 2.0, seed=1)
    path = tmp_path / "p.csv"
    path.write_text(
        "label,score\n" + "".join(f"{a},{b:.8f}\n" for a, b in zip(y, s, strict=True))
    )
    out = tmp_path / "out"
    argv = ["report", str(path), "--out", str(out), "--bound", "tv", *FAST]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    keys = [a["key"] for a in report["answers"]]
    assert keys == ["calibrated", "how_far", "direction", "certified", "what_to_do"]
    for a in report["answers"]:
        assert a["question"] in printed
        assert f"(user guide: {a['section']})" in printed
    upper = report["metrics"]["calibration_error_bound"]["upper"]
    assert f"at most {upper:.4f}" in printed
    # The log-loss before recalibrating is the table's (every row is used).
    loss = report["metrics"]["log_loss"]["value"]
    assert report["recalibration"]["log_loss_before"] == pytest.approx(loss)
    assert f"log-loss {loss:.4f} ->" in report["answers"][-1]["verdict"]
    page = Page()
    page.feed((out / "report.html").read_text())
    assert page.sections == ["answers", "figure", "measures", "legend"]
    assert page.answers == keys
    assert page.h3 == [a["question"] for a in report["answers"]]
    assert page.images == ["reliability.png"] and (out / "reliability.png").is_file()
    assert all(h.startswith("user_guide/") and ".html" in h for h in page.links)
    assert len(page.links) == len(keys)


def test_format_answers_wraps_and_ends_with_the_legend():
    y, s = distorted(800, 1.5)
    report, _ = compute_report(y, s, **QUICK)
    lines = format_answers(answers(report))
    assert max(len(line) for line in lines) <= 88
    assert "legend:" in [line.strip() for line in lines]


def test_streamed_report_draws_the_subsample_band():
    from skcalib.cli._report import ReportBuilder

    y, s = distorted(6000, 1.5, seed=2)
    builder = ReportBuilder(
        np.array([0, 1]), 1, n_bootstrap=20, kde_max_samples=300, reservoir_rows=1500
    )
    for start in range(0, 6000, 1000):
        builder.add(y[start : start + 1000], s[start : start + 1000])
    report, curve = builder.finish()
    assert report["subsample"]["n_samples"] == 1500
    assert "1500-row uniform subsample" in report["metrics"]["smooth_ece"]["band"]
    low, high = curve.y_smooth_low, curve.y_smooth_high
    ok = np.isfinite(low) & np.isfinite(high) & np.isfinite(curve.y_smooth)
    assert ok.mean() > 0.5
    assert (low[ok] <= curve.y_smooth[ok] + 1e-12).all()
    assert (high[ok] >= curve.y_smooth[ok] - 1e-12).all()
    # The subsample's band about the curve of every row: as wide as a
    # 1500-row bootstrap band (well above zero where the data are).
    assert np.nanmedian(high - low) > 0.01
    disp = builder.display(curve)
    assert disp.y_smooth_low is not None
