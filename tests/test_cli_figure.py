"""The figure of ``skcalib report`` is the Python display's, in memory and
streamed: same score range, density (with its own bandwidth), fade."""

import matplotlib
import numpy as np
import pytest
from _references import reflected_kde

import skcalib.cli as cli
from skcalib.cli import _report
from skcalib.display import SmoothReliabilityDisplay

matplotlib.use("Agg")


def _problem(kind, n=3000, seed=3):
    rng = np.random.default_rng(seed)
    w = None
    if kind in ("multiclass", "classwise"):
        k = 4 if kind == "multiclass" else 3
        P = rng.dirichlet(np.ones(k), size=n)
        y = np.array([rng.choice(k, p=row) for row in P])
        return y, P, w
    p = rng.beta(0.7, 1.3, size=n)
    y = (rng.uniform(size=n) < p**1.3).astype(int)
    if kind == "weighted":
        w = rng.integers(1, 4, size=n).astype(float)
    return y, p, w


def _cli_display(y, P, w, tmp_path, monkeypatch, *, reservoir_rows, mc):
    """Run ``skcalib report`` on a CSV of ``(y, P, w)`` and return the display
    it drew (and whether it streamed)."""
    P2 = P[:, None] if P.ndim == 1 else P
    cols = [y[:, None].astype(float), P2] + ([] if w is None else [w[:, None]])
    names = ["y"] + [f"p{j}" for j in range(P2.shape[1])]
    names = names if P.ndim == 2 else ["y", "p"]
    names += [] if w is None else ["weight"]
    path = tmp_path / "pred.csv"
    np.savetxt(
        path, np.hstack(cols), delimiter=",", header=",".join(names), comments=""
    )
    seen = {}
    real = cli.plot_reliability

    def record(display, fh, **kw):
        seen["display"] = display
        return real(display, fh, **kw)

    monkeypatch.setattr(cli, "plot_reliability", record)
    monkeypatch.setattr(_report, "RESERVOIR_ROWS", reservoir_rows)
    args = [
        "report",
        str(path),
        "--out",
        str(tmp_path / "out"),
        "--bootstrap",
        "0",
        "--quiet",
        "--multi-class",
        mc,
        "--y-true",
        "y",
        # The buffer holds at least the ECE-KDE's rows.
        "--kde-max-samples",
        "200",
    ]
    if w is not None:
        args += ["--sample-weight", "weight"]
    assert cli.main(args) == 0
    assert (tmp_path / "out" / "reliability.png").stat().st_size > 0
    report = (tmp_path / "out" / "report.json").read_text()
    return seen["display"], '"subsample": null' not in report


@pytest.mark.parametrize("kind", ["binary", "weighted", "multiclass", "classwise"])
@pytest.mark.parametrize("streamed", [False, True])
def test_cli_figure_is_the_python_display(kind, streamed, tmp_path, monkeypatch):
    y, P, w = _problem(kind)
    mc = "classwise" if kind == "classwise" else "top-label"
    ref = SmoothReliabilityDisplay.from_predictions(
        y, P, sample_weight=w, n_bootstrap=0, multi_class=mc
    )
    disp, was_streamed = _cli_display(
        y,
        P,
        w,
        tmp_path,
        monkeypatch,
        reservoir_rows=500 if streamed else 200_000,
        mc=mc,
    )
    assert was_streamed is streamed
    assert disp.score_range == ref.score_range
    if kind == "multiclass":
        assert disp.score_range == (0.25, 1.0)
        lo = disp.ax_.get_xlim()[0]
        assert 0.24 < lo < 0.25
    assert disp.multi_class == ref.multi_class
    a = ref.frame(as_frame=False)
    b = disp.frame(as_frame=False)
    np.testing.assert_allclose(b["score"], a["score"], rtol=0, atol=1e-12)
    # The streamed curve is the in-memory one up to the grid: already tested
    # for the accumulator; here the density and the fade.
    np.testing.assert_allclose(b["y_smooth"], a["y_smooth"], atol=1e-6)
    peak = a["density"].max()
    # In memory the same numbers; streamed, the density of the grid's masses
    # (the scores moved by less than 2**-16) and a rule of thumb on them
    # (measured: 1e-10 of the peak).
    tol = 1e-12 if not streamed else 1e-8
    np.testing.assert_allclose(b["density"], a["density"], rtol=0, atol=tol * peak)
    np.testing.assert_allclose(
        b["effective_size"], a["effective_size"], rtol=1e-12, atol=1e-9
    )
    np.testing.assert_allclose(
        disp.density_bandwidth, ref.density_bandwidth, rtol=1e-8 if streamed else 0
    )
    assert disp.fade_ is not None or ref.fade_ is None


def test_streamed_density_matches_a_direct_kernel_sum(tmp_path, monkeypatch):
    # Independent of the library: the reflected Gaussian KDE of the raw
    # top-label confidences on [1/K, 1], at the figure's bandwidth.
    y, P, _ = _problem("multiclass", n=3000, seed=5)
    disp, streamed = _cli_display(
        y, P, None, tmp_path, monkeypatch, reservoir_rows=400, mc="top-label"
    )
    assert streamed
    conf = P.max(axis=1)
    x = np.asarray(disp.scores)
    inside = (x >= 0.25) & (x <= 1.0)
    direct = reflected_kde(x[inside], conf, disp.density_bandwidth, lo=0.25, hi=1.0)
    np.testing.assert_allclose(
        np.asarray(disp.density)[inside], direct, atol=1e-4 * direct.max()
    )
