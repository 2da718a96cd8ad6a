"""Displays: artists carry the metric's data, axes handling, no global state."""

import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from _references import (  # noqa: E402
    reflected_kde,
    reflected_kernel,
    silverman_bandwidth,
)
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import KFold, cross_validate  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

from skcalib import perturb_proba
from skcalib.display import (  # noqa: E402
    BinnedReliabilityDisplay,
    CalibrationBoundDisplay,
    PerturbationDisplay,
    SmoothReliabilityDisplay,
)
from skcalib.metrics import smooth_calibration_curve  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _binary(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p**2).astype(int)
    return y, p


def _multiclass(n=3000, k=3, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(k), size=n)
    y = (rng.uniform(size=n)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    return y, P


def _vertices(collection):
    return np.concatenate([p.vertices for p in collection.get_paths()])


def _has_points(vertices, x, y):
    """Whether every finite (x_i, y_i) is a vertex of the polygon."""
    ok = np.isfinite(y)
    table = {(round(a, 9), round(b, 9)) for a, b in vertices}
    return all(
        (round(a, 9), round(b, 9)) in table for a, b in zip(x[ok], y[ok], strict=True)
    )


def test_smooth_artists_carry_metric_output():
    y, p = _binary()
    curve = smooth_calibration_curve(y, p, n_bootstrap=40, random_state=3)
    disp = SmoothReliabilityDisplay.from_predictions(
        y, p, n_bootstrap=40, random_state=3, name="model"
    )
    np.testing.assert_array_equal(disp.line_.get_xdata(), curve.scores)
    np.testing.assert_array_equal(disp.line_.get_ydata(), curve.y_smooth)
    np.testing.assert_array_equal(disp.scores, curve.scores)
    assert disp.smece == curve.smece and disp.smece_ci == curve.smece_ci
    band = _vertices(disp.band_)
    assert _has_points(band, curve.scores, curve.y_smooth_low)
    assert _has_points(band, curve.scores, curve.y_smooth_high)
    # The band polygon spans exactly the bootstrap limits.
    assert band[:, 1].min() == pytest.approx(np.nanmin(curve.y_smooth_low))
    assert band[:, 1].max() == pytest.approx(np.nanmax(curve.y_smooth_high))
    label = disp.line_.get_label()
    assert label.startswith("model (smECE = ")
    assert f"{curve.smece:.3f}" in label
    assert f"[{curve.smece_ci[0]:.3f}, {curve.smece_ci[1]:.3f}]" in label
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert label in legend and "Perfectly calibrated" in legend


def test_smooth_ribbon_width_follows_density():
    y, p = _binary()
    rng = np.random.default_rng(1)
    p = np.clip(rng.beta(0.6, 0.6, size=p.size), 0, 1)  # dense near 0 and 1
    curve = smooth_calibration_curve(y, p)
    width = 0.08
    disp = SmoothReliabilityDisplay.from_predictions(
        y, p, density_width=width, n_bootstrap=0
    )
    assert len(disp.ribbon_.get_paths()) >= 1
    # Ribbon = curve +- half-width, half-width proportional to the density of
    # the scores (its own bandwidth) and equal to width / 2 at the densest point.
    dens = reflected_kde(curve.scores, p, silverman_bandwidth(p))
    half = 0.5 * width * dens / dens.max()
    np.testing.assert_allclose(disp.density, dens, rtol=1e-3, atol=1e-3)
    half = 0.5 * width * disp.density / disp.density.max()
    ribbon = _vertices(disp.ribbon_)
    assert _has_points(ribbon, curve.scores, curve.y_smooth + half)
    assert _has_points(ribbon, curve.scores, curve.y_smooth - half)
    assert disp.band_ is None
    bare = SmoothReliabilityDisplay.from_predictions(y, p, density_width=0)
    assert bare.ribbon_ is None


def test_several_models_on_one_axes_and_ax_respected():
    y, p = _binary()
    fig, ax = plt.subplots()
    n_figs = len(plt.get_fignums())
    first = SmoothReliabilityDisplay.from_predictions(y, p, ax=ax, name="raw")
    second = SmoothReliabilityDisplay.from_predictions(
        y, np.sqrt(p), ax=ax, name="sqrt"
    )
    assert first.ax_ is ax and second.ax_ is ax
    assert first.figure_ is fig and second.figure_ is fig
    assert len(plt.get_fignums()) == n_figs
    assert second.ref_line_ is None  # the diagonal is drawn once
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # The curves, the diagonal, then what the band and the ribbon are (once).
    assert len(labels) == 5
    assert labels[0].startswith("raw (") and labels[2].startswith("sqrt (")
    assert labels[3:] == ["95% bootstrap band", "Width ∝ score density"]
    np.testing.assert_array_equal(
        second.line_.get_ydata(), smooth_calibration_curve(y, np.sqrt(p)).y_smooth
    )
    assert first.line_.get_color() != second.line_.get_color()


def test_rcparams_unchanged():
    before = matplotlib.rcParams.copy()
    y, P = _multiclass()
    SmoothReliabilityDisplay.from_predictions(
        y, P, multi_class="classwise", density_panel=True, despine=True
    )
    BinnedReliabilityDisplay.from_predictions(y, P, density_panel=True)
    yb, s = _binary(n=1000)
    CalibrationBoundDisplay.from_predictions(yb, s, random_state=0)
    PerturbationDisplay.from_result(_scale_result())
    after = matplotlib.rcParams.copy()
    assert before.keys() == after.keys()
    changed = [k for k in before if before[k] != after[k]]
    assert changed == []


def test_density_panel_created_and_reused():
    y, p = _binary()
    disp = SmoothReliabilityDisplay.from_predictions(y, p, density_panel=True)
    dax = disp.density_ax_
    assert dax is not None and dax.figure is disp.figure_ and dax is not disp.ax_
    curve = smooth_calibration_curve(y, p)
    ref = reflected_kde(curve.scores, p, silverman_bandwidth(p))
    np.testing.assert_allclose(dax.lines[0].get_ydata(), ref, rtol=1e-3, atol=1e-3)
    assert dax.get_xlabel().startswith("Predicted probability")
    n_axes = len(disp.figure_.axes)
    other = SmoothReliabilityDisplay.from_predictions(
        y, p**0.5, ax=disp.ax_, density_panel=dax
    )
    assert other.density_ax_ is dax and len(disp.figure_.axes) == n_axes
    assert len(dax.lines) == 2
    # A curve added without the panel leaves the shared x label on the panel.
    SmoothReliabilityDisplay.from_predictions(y, p**2, ax=disp.ax_)
    assert disp.ax_.get_xlabel() == ""
    with pytest.raises(TypeError, match="density_panel"):
        SmoothReliabilityDisplay.from_predictions(y, p, density_panel="yes")


def test_from_estimator_binary_and_pos_label():
    X, y = make_classification(n_samples=1200, random_state=0)
    labels = np.where(y == 1, "spam", "ham")
    clf = LogisticRegression().fit(X[:600], labels[:600])
    disp = SmoothReliabilityDisplay.from_estimator(clf, X[600:], labels[600:])
    proba = clf.predict_proba(X[600:])
    ref = smooth_calibration_curve(labels[600:], proba[:, 1], pos_label="spam")
    np.testing.assert_array_equal(disp.line_.get_ydata(), ref.y_smooth)
    assert disp.line_.get_label().startswith("LogisticRegression (")
    assert "positive class: spam" in disp.ax_.get_xlabel()
    neg = SmoothReliabilityDisplay.from_estimator(
        clf, X[600:], labels[600:], pos_label="ham"
    )
    ref = smooth_calibration_curve(labels[600:], proba[:, 0], pos_label="ham")
    np.testing.assert_array_equal(neg.line_.get_ydata(), ref.y_smooth)
    assert "positive class: ham" in neg.ax_.get_ylabel()


def test_from_estimator_errors():
    X, y = make_classification(n_samples=200, random_state=0)
    with pytest.raises(NotFittedError):
        SmoothReliabilityDisplay.from_estimator(LogisticRegression(), X, y)
    with pytest.raises(TypeError, match="predict_proba"):
        SmoothReliabilityDisplay.from_estimator(LinearSVC().fit(X, y), X, y)


def test_sample_weight_equals_repetition():
    y, p = _binary(n=800)
    w = np.random.default_rng(2).integers(1, 4, size=y.size)
    weighted = SmoothReliabilityDisplay.from_predictions(y, p, sample_weight=w)
    repeated = SmoothReliabilityDisplay.from_predictions(
        np.repeat(y, w), np.repeat(p, w)
    )
    np.testing.assert_allclose(weighted.line_.get_ydata(), repeated.line_.get_ydata())
    assert weighted.smece == pytest.approx(repeated.smece, abs=1e-6)


def test_from_cv_results_one_curve_per_fold():
    X, y = make_classification(n_samples=900, random_state=0)
    cv = cross_validate(
        LogisticRegression(), X, y, cv=3, return_estimator=True, return_indices=True
    )
    disp = SmoothReliabilityDisplay.from_cv_results(cv, X, y)
    assert isinstance(disp.line_, list) and len(disp.line_) == 3
    for line, est, test in zip(
        disp.line_, cv["estimator"], cv["indices"]["test"], strict=True
    ):
        ref = smooth_calibration_curve(y[test], est.predict_proba(X[test])[:, 1])
        np.testing.assert_array_equal(line.get_ydata(), ref.y_smooth)
    # One legend entry with the mean and std over folds.
    smeces = np.array(disp.smece)
    assert disp.line_[0].get_label() == (
        f"smECE = {smeces.mean():.3f} ± {smeces.std():.3f}"
    )
    assert all(line.get_label().startswith("_") for line in disp.line_[1:])
    names = ["a", "b", "c"]
    styled = SmoothReliabilityDisplay.from_cv_results(
        cv, X, y, name=names, curve_kwargs=[{"color": f"C{i}"} for i in range(3)]
    )
    assert [line.get_label()[0] for line in styled.line_] == names
    with pytest.raises(ValueError, match="curve_kwargs"):
        SmoothReliabilityDisplay.from_cv_results(cv, X, y, name=names)
    with pytest.raises(ValueError, match="curve_kwargs"):
        SmoothReliabilityDisplay.from_cv_results(cv, X, y, curve_kwargs=[{}, {}])
    with pytest.raises(ValueError, match="return_indices"):
        SmoothReliabilityDisplay.from_cv_results({"estimator": cv["estimator"]}, X, y)
    with pytest.raises(ValueError, match="samples"):
        SmoothReliabilityDisplay.from_cv_results(cv, X[:-1], y[:-1])
    with pytest.raises(ValueError, match="sample_weight"):
        SmoothReliabilityDisplay.from_cv_results(cv, X, y, sample_weight=np.ones(10))
    for X_bad in (X[:500], np.r_[X, X]):
        with pytest.raises(ValueError, match="X and y have inconsistent numbers"):
            SmoothReliabilityDisplay.from_cv_results(cv, X_bad, y)


def test_from_cv_results_fold_model_that_missed_a_class():
    # Unshuffled folds: the rare class sits in the last rows only, so the
    # last fold's model never saw it; it predicts it with probability 0.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    y[-20:] = 2
    cv = cross_validate(
        LogisticRegression(),
        X,
        y,
        cv=KFold(3),
        return_estimator=True,
        return_indices=True,
    )
    disp = SmoothReliabilityDisplay.from_cv_results(cv, X, y)
    est, test = cv["estimator"][2], cv["indices"]["test"][2]
    assert est.classes_.tolist() == [0, 1]
    P = np.column_stack([est.predict_proba(X[test]), np.zeros(len(test))])
    ref = smooth_calibration_curve(y[test], P, labels=[0, 1, 2])
    # Top-label confidences of 3 classes lie in [1/3, 1]: the curve is drawn there.
    on = ref.scores >= 1 / 3
    np.testing.assert_array_equal(disp.line_[2].get_xdata(), ref.scores[on])
    np.testing.assert_array_equal(disp.line_[2].get_ydata(), ref.y_smooth[on])


def test_from_cv_results_bootstrap_differs_between_folds_but_is_seeded():
    X, y = make_classification(n_samples=600, random_state=0)
    cv = cross_validate(
        LogisticRegression(), X, y, cv=2, return_estimator=True, return_indices=True
    )
    a = SmoothReliabilityDisplay.from_cv_results(
        cv, X, y, n_bootstrap=20, random_state=0
    )
    b = SmoothReliabilityDisplay.from_cv_results(
        cv, X, y, n_bootstrap=20, random_state=0
    )
    np.testing.assert_array_equal(a.y_smooth_low[0], b.y_smooth_low[0])
    assert a.smece_ci == b.smece_ci


def test_top_label_and_classwise_grid():
    y, P = _multiclass()
    # The bootstrap bands are not what this test checks (test_rcparams_unchanged
    # draws the classwise grid with them): the curves are drawn without them.
    top = SmoothReliabilityDisplay.from_predictions(y, P, n_bootstrap=0)
    conf = P.max(axis=1)
    correct = P.argmax(axis=1) == y
    ref = smooth_calibration_curve(correct, conf)  # top-label by definition
    on = ref.scores >= 1 / 3
    np.testing.assert_allclose(top.line_.get_ydata(), ref.y_smooth[on])
    assert top.ax_.get_xlabel().startswith("Confidence")
    assert top.ax_.get_ylabel() == "Accuracy"

    grid = SmoothReliabilityDisplay.from_predictions(
        y, P, multi_class="classwise", density_panel=True, n_bootstrap=0
    )
    assert grid.ax_.shape == (3,) and len(grid.line_) == 3
    for k in range(3):
        assert grid.line_[k].axes is grid.ax_[k]
        assert grid.ax_[k].get_title() == f"Class {k}"
        ref = smooth_calibration_curve(y == k, P[:, k])
        np.testing.assert_allclose(grid.line_[k].get_ydata(), ref.y_smooth)
    assert grid.density_ax_.shape == (3,)
    _, axes = plt.subplots(1, 2)
    with pytest.raises(ValueError, match="3 axes"):
        SmoothReliabilityDisplay.from_predictions(
            y, P, multi_class="classwise", ax=axes, n_bootstrap=0
        )
    _, axes = plt.subplots(1, 3)
    on_given = SmoothReliabilityDisplay.from_predictions(
        y, P, multi_class="classwise", ax=axes, n_bootstrap=0
    )
    assert list(on_given.ax_) == list(axes)


def test_despine_and_curve_kwargs_aliases():
    y, p = _binary(n=500)
    disp = SmoothReliabilityDisplay.from_predictions(
        y, p, despine=True, curve_kwargs={"c": "red", "lw": 3}
    )
    assert not disp.ax_.spines["top"].get_visible()
    assert not disp.ax_.spines["right"].get_visible()
    assert disp.line_.get_linewidth() == 3
    assert matplotlib.colors.same_color(disp.line_.get_color(), "red")
    assert matplotlib.colors.same_color(disp.ribbon_.get_facecolor()[0][:3], "red")
    with pytest.raises(TypeError, match="aliases"):
        SmoothReliabilityDisplay.from_predictions(
            y, p, curve_kwargs={"c": "red", "color": "blue"}
        )


def _brute_force_bins(y, p, n_bins, w=None):
    w = np.ones_like(p) if w is None else w
    edges = np.linspace(0, 1, n_bins + 1)
    idx = np.minimum((p * n_bins).astype(int), n_bins - 1)
    rows = []
    for b in range(n_bins):
        m = idx == b
        if m.any():
            rows.append(
                (
                    b,
                    w[m].sum(),
                    np.average(y[m], weights=w[m]),
                    np.average(p[m], weights=w[m]),
                )
            )
    b, wt, ybar, sbar = map(np.array, zip(*rows, strict=True))
    ece = np.sum(wt / wt.sum() * np.abs(ybar - sbar))
    return edges, b, wt, ybar, sbar, ece


def test_binned_bars_match_brute_force():
    y, p = _binary(n=2000)
    w = np.random.default_rng(5).uniform(0.5, 2, size=y.size)
    disp = BinnedReliabilityDisplay.from_predictions(
        y, p, n_bins=8, sample_weight=w, name="m"
    )
    edges, b, wt, ybar, sbar, ece = _brute_force_bins(y, p, 8, w)
    heights = np.array([r.get_height() for r in disp.bars_])
    lefts = np.array([r.get_x() for r in disp.bars_])
    widths = np.array([r.get_width() for r in disp.bars_])
    np.testing.assert_allclose(heights, ybar)
    np.testing.assert_allclose(lefts, edges[b])
    np.testing.assert_allclose(widths, 1 / 8)
    np.testing.assert_allclose(disp.line_.get_xdata(), sbar)
    np.testing.assert_allclose(disp.line_.get_ydata(), ybar)
    assert disp.line_.get_label() == f"m (ECE = {ece:.3f})"
    # Opacity increases with the bin's share of the weight.
    alphas = np.array([r.get_facecolor()[3] for r in disp.bars_])
    order = np.argsort(wt)
    assert np.all(np.diff(alphas[order]) >= -1e-12)
    assert alphas[order[-1]] > alphas[order[0]]


def test_binned_norm_names_quantile_and_classwise():
    y, P = _multiclass(n=1500)
    disp = BinnedReliabilityDisplay.from_predictions(
        y, P, multi_class="classwise", n_bins=5, strategy="quantile", norm="max"
    )
    assert disp.ax_.shape == (3,)
    for k in range(3):
        label = disp.line_[k].get_label()
        assert label.startswith("Classifier (MCE = ")
        # Quantile bins of one class hold equal counts: 300 each.
        counts = np.diff(np.searchsorted(np.sort(P[:, k]), disp.bin_edges[k][1:-1]))
        assert np.all(np.abs(counts - 300) <= 1)
        assert disp.class_label[k] == k
    top = BinnedReliabilityDisplay.from_predictions(y, P, norm="l2", n_bins=5)
    assert "RMSCE" in top.line_.get_label()


def test_binned_from_estimator_and_cv():
    X, y = make_classification(n_samples=900, random_state=1)
    clf = LogisticRegression().fit(X, y)
    disp = BinnedReliabilityDisplay.from_estimator(
        clf, X, y, n_bins=5, density_panel=True
    )
    edges, b, wt, ybar, sbar, ece = _brute_force_bins(y, clf.predict_proba(X)[:, 1], 5)
    np.testing.assert_allclose(disp.line_.get_ydata(), ybar)
    # The panel is the histogram as a density: share of the weight per unit.
    heights = [r.get_height() for r in disp.density_ax_.patches]
    np.testing.assert_allclose(heights, wt / wt.sum() / (1 / 5))
    cv = cross_validate(clf, X, y, cv=3, return_estimator=True, return_indices=True)
    multi = BinnedReliabilityDisplay.from_cv_results(cv, X, y, n_bins=5)
    assert len(multi.line_) == 3 and len(multi.bars_) == 3


# --- certified bounds -------------------------------------------------------


def _square_problem(n, seed=0):
    """Scores uniform on [0, 1], P(y = 1 | s) = s**2: CE = E[s - s**2] = 1/6."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n)
    return (rng.uniform(size=n) < s**2).astype(int), s


def test_bound_display_terms_and_references():
    y, s = _square_problem(20000)
    disp = CalibrationBoundDisplay.from_predictions(
        y, s, lipschitz=2.0, true_ce=1 / 6, n_bins=10, random_state=0
    )
    assert disp.methods == ["tv", "lipschitz"]
    tops = np.zeros(2)
    for bars in disp.bars_.values():
        tops += [r.get_height() for r in bars]
        bottoms = [r.get_y() for r in bars]
        assert np.all(np.array(bottoms) >= 0)
    np.testing.assert_allclose(tops, disp.upper)
    # The bars show the terms of the fold that gives the bound.
    np.testing.assert_allclose(
        [r.get_height() for r in disp.bars_["estimate"]],
        [t["validation_error"] for t in disp.terms],
    )
    np.testing.assert_allclose([sum(t.values()) for t in disp.terms], disp.upper)
    # Both assumptions hold (eta = s**2 is monotone and 2-Lipschitz): each
    # bound must cover the closed-form CE (delta = 0.05, seeded).
    assert all(u >= 1 / 6 for u in disp.upper)
    *_, ece = _brute_force_bins(y, s, 10)
    np.testing.assert_allclose(disp.ece_line_.get_ydata(), ece)
    np.testing.assert_allclose(disp.true_ce_line_.get_ydata(), 1 / 6)
    ticks = [t.get_text() for t in disp.ax_.get_xticklabels()]
    assert ticks == ["TV", "Lipschitz buckets"]


def test_bound_display_default_methods_and_binary_only():
    y, s = _square_problem(3000)
    assert CalibrationBoundDisplay.from_predictions(y, s, random_state=0).methods == [
        "tv"
    ]
    s_perturbed = perturb_proba(s, scale=2**-4, random_state=0)
    nw = CalibrationBoundDisplay.from_predictions(
        y, s_perturbed, perturbation_scale=2**-4, random_state=0
    )
    assert nw.methods == ["tv", "nw", "lipschitz"]
    yy, P = _multiclass(n=600)
    with pytest.raises(ValueError, match="binary"):
        CalibrationBoundDisplay.from_predictions(yy, P)
    with pytest.raises(ValueError, match="classes"):
        CalibrationBoundDisplay.from_predictions(yy, P[:, 0])
    with pytest.raises(ValueError, match="binary"):
        CalibrationBoundDisplay.from_sample_sizes(yy, P)


def test_bound_display_bad_arguments():
    y, s = _square_problem(2000)
    one = CalibrationBoundDisplay.from_predictions(y, s, methods="tv", random_state=0)
    assert one.methods == ["tv"]
    with pytest.raises(ValueError, match="'methods' parameter"):
        CalibrationBoundDisplay.from_predictions(y, s, methods=[])
    with pytest.raises(TypeError, match="'ax' parameter.* a matplotlib Axes"):
        CalibrationBoundDisplay.from_predictions(y, s, random_state=0, ax="x")
    with pytest.raises(ValueError, match="sample_sizes must be finite"):
        CalibrationBoundDisplay.from_sample_sizes(y, s, sample_sizes=[np.nan, 100])
    with pytest.raises(ValueError, match="terms are needed"):
        CalibrationBoundDisplay(methods=["tv"], upper=[0.2], estimate=[0.1]).plot()
    terms = [{"validation_error": 0.1}]
    with pytest.raises(ValueError, match="upper has 1 entries but there are 2"):
        CalibrationBoundDisplay(
            methods=["tv", "nw"], upper=[0.2], estimate=[0.1, 0.1], terms=terms * 2
        ).plot()
    with pytest.raises(ValueError, match="one value per sample size"):
        CalibrationBoundDisplay(
            methods=["tv"], upper=[[0.2]], estimate=[[0.1]], sample_sizes=[10, 20]
        ).plot()


def test_binned_quantile_bars_of_tied_scores_stay_visible():
    # 30 % of the scores are exactly 1: their quantile bin has no width.
    rng = np.random.default_rng(0)
    p = np.r_[rng.uniform(size=700), np.ones(300)]
    y = (rng.uniform(size=1000) < p).astype(int)
    disp = BinnedReliabilityDisplay.from_predictions(
        y, p, n_bins=10, strategy="quantile"
    )
    widths = np.array([b.get_width() for b in disp.bars_])
    assert widths.min() >= 0.01
    heavy = disp.bars_[int(np.argmax(disp.bin_weight))]
    assert heavy.get_x() <= 1.0 <= heavy.get_x() + heavy.get_width() + 1e-12
    # Bins of positive width keep their edges.
    edges = np.asarray(disp.bin_edges)
    idx = np.asarray(disp.bin_index)
    wide = edges[idx + 1] - edges[idx] >= 0.01
    np.testing.assert_allclose(widths[wide], (edges[idx + 1] - edges[idx])[wide])
    plt.close(disp.figure_)


def test_bound_display_sample_sizes():
    y, s = _square_problem(16000)
    fig, ax = plt.subplots()
    disp = CalibrationBoundDisplay.from_sample_sizes(
        y,
        s,
        sample_sizes=[1000, 4000, 16000],
        lipschitz=2.0,
        true_ce=1 / 6,
        random_state=0,
        ax=ax,
    )
    assert disp.ax_ is ax and disp.figure_ is fig
    assert len(disp.line_) == 2
    for line, upper in zip(disp.line_, disp.upper, strict=True):
        np.testing.assert_array_equal(line.get_xdata(), [1000, 4000, 16000])
        np.testing.assert_array_equal(line.get_ydata(), upper)
        assert upper[-1] < upper[0]  # the bounds tighten with n
        assert np.all(upper >= 1 / 6)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="sample_sizes"):
        CalibrationBoundDisplay.from_sample_sizes(y, s, sample_sizes=[100, 20000])


# --- perturbation -----------------------------------------------------------


def _scale_result(with_bounds=True):
    from skcalib.perturbation import PerturbationScaleResult

    scales = np.array([2.0**-6, 2.0**-4, 2.0**-2])
    scores = np.array([[0.90, 0.92], [0.89, 0.91], [0.80, 0.84]])
    extra = {}
    if with_bounds:
        extra = dict(
            bound_method="nw",
            bound_upper=np.array([0.3, 0.2, 0.1]),
            bound_estimate=np.array([0.05, 0.05, 0.06]),
            base_bound_upper=0.4,
            base_bound_estimate=0.05,
        )
    return PerturbationScaleResult(
        scales=scales,
        scores=scores,
        base_scores=np.array([0.91, 0.91]),
        scoring="roc_auc",
        tolerance=0.02,
        recommended_scale=2.0**-4,
        **extra,
    )


def test_perturbation_display_from_result():
    disp = PerturbationDisplay.from_result(_scale_result())
    np.testing.assert_array_equal(disp.line_.get_xdata(), [2.0**-6, 2.0**-4, 2.0**-2])
    np.testing.assert_allclose(disp.line_.get_ydata(), [0.91, 0.90, 0.82])
    np.testing.assert_array_equal(disp.bound_line_.get_ydata(), [0.3, 0.2, 0.1])
    assert disp.recommended_line_.get_xdata()[0] == 2.0**-4
    assert disp.bound_ax_ is not disp.ax_ and disp.bound_ax_.figure is disp.figure_
    assert disp.ax_.get_xscale() == "log"
    labels = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert any("0.910" in lab for lab in labels)  # unperturbed score
    # A single axes: the bound goes on a twin y-axis of that axes.
    fig, ax = plt.subplots()
    twin = PerturbationDisplay.from_result(_scale_result(), ax=ax)
    assert twin.ax_ is ax and twin.bound_ax_ is not ax
    assert twin.bound_ax_.get_shared_x_axes().joined(ax, twin.bound_ax_)
    no_bound = PerturbationDisplay.from_result(_scale_result(with_bounds=False))
    assert no_bound.bound_ax_ is None and no_bound.bound_line_ is None
    # Without bounds a given axes gets the score curve and its legend only.
    fig, ax1 = plt.subplots()
    alone = PerturbationDisplay.from_result(_scale_result(with_bounds=False), ax=ax1)
    assert alone.ax_ is ax1 and alone.bound_ax_ is None and len(fig.axes) == 1
    assert ax1.get_legend() is not None
    with pytest.raises(TypeError, match="PerturbationScaleResult"):
        PerturbationDisplay.from_result({"scales": [0.1]})
    with pytest.raises(TypeError, match="pair"):
        PerturbationDisplay.from_result(_scale_result(), ax=[ax, ax, ax])


def test_perturbation_display_takes_curve_kwargs():
    # As the reliability displays: the user's keywords win over the defaults,
    # the rest of the style stays, from every constructor.
    disp = PerturbationDisplay.from_result(
        _scale_result(),
        curve_kwargs={"color": "tab:green", "ls": "--", "label": "mine"},
        bound_kwargs={"c": "black", "marker": "x"},
    )
    assert disp.line_.get_color() == "tab:green"
    assert disp.line_.get_linestyle() == "--" and disp.line_.get_marker() == "o"
    assert disp.line_.get_label() == "mine"
    assert disp.bound_line_.get_color() == "black"
    assert disp.bound_line_.get_marker() == "x"
    # the band of the score takes the colour of the curve
    band = disp.ax_.collections[0]
    np.testing.assert_allclose(
        band.get_facecolor()[0][:3], matplotlib.colors.to_rgb("tab:green")
    )
    plain = PerturbationDisplay.from_result(_scale_result())
    assert plain.line_.get_color() == "C0" and plain.bound_line_.get_color() == "C3"
    for bad in ("red", ["color", "red"]):
        with pytest.raises(TypeError, match="curve_kwargs"):
            PerturbationDisplay.from_result(_scale_result(), curve_kwargs=bad)
    with pytest.raises(TypeError, match="bound_kwargs"):
        PerturbationDisplay.from_result(_scale_result(), bound_kwargs="red")
    with pytest.raises(TypeError, match="aliases"):
        PerturbationDisplay.from_result(
            _scale_result(), curve_kwargs={"c": "red", "color": "blue"}
        )


def test_perturbation_display_from_estimator():
    from skcalib.perturbation import select_perturbation_scale

    X, y = make_classification(n_samples=1500, random_state=0)
    kwargs = dict(scales=[2.0**-7, 2.0**-3], cv=3, bound_method="tv", random_state=0)
    disp = PerturbationDisplay.from_estimator(LogisticRegression(), X, y, **kwargs)
    ref = select_perturbation_scale(LogisticRegression(), X, y, **kwargs)
    np.testing.assert_allclose(disp.line_.get_ydata(), ref.score_mean)
    np.testing.assert_allclose(disp.bound_line_.get_ydata(), ref.bound_upper)
    assert disp.recommended_scale == ref.recommended_scale


def test_logit_metric_curve_and_density_label():
    y, p = _binary(n=2000)
    # The curve and the density panel are checked; the band is not drawn.
    disp = SmoothReliabilityDisplay.from_predictions(
        y, p, metric="logit", density_panel=True, n_bootstrap=0
    )
    ref = smooth_calibration_curve(y, p, metric="logit")
    np.testing.assert_array_equal(disp.line_.get_xdata(), ref.scores)
    np.testing.assert_array_equal(disp.line_.get_ydata(), ref.y_smooth)
    assert disp.density_ax_.get_ylabel() == "Density (logit)"
    assert disp.metric == "logit"


def test_from_cv_results_classwise_folds_share_panels():
    X, y = make_classification(
        n_samples=900, n_classes=3, n_informative=5, random_state=0
    )
    cv = cross_validate(
        LogisticRegression(), X, y, cv=2, return_estimator=True, return_indices=True
    )
    disp = SmoothReliabilityDisplay.from_cv_results(cv, X, y, multi_class="classwise")
    assert disp.ax_.shape == (3,) and len(disp.line_) == 6
    assert disp.class_label == [0, 1, 2, 0, 1, 2]
    for k, ax in enumerate(disp.ax_):
        on_panel = [line for line in disp.line_ if line.axes is ax]
        assert len(on_panel) == 2  # one curve per fold
        values = [disp.smece[i] for i in (k, k + 3)]
        assert on_panel[0].get_label() == (
            f"smECE = {np.mean(values):.3f} ± {np.std(values):.3f}"
        )


def test_smooth_band_uses_the_curve_interval_method():
    # One bootstrap, one default: the display band and legend interval are
    # those of smooth_calibration_curve, the inversion interval by default.
    y, p = _binary(n=1500)
    kw = dict(n_bootstrap=30, random_state=5)
    for method in ("inversion", "basic", "percentile"):
        curve = smooth_calibration_curve(y, p, ci_method=method, **kw)
        extra = {} if method == "inversion" else {"ci_method": method}
        disp = SmoothReliabilityDisplay.from_predictions(y, p, **kw, **extra)
        assert disp.smece_ci == curve.smece_ci
        np.testing.assert_array_equal(disp.y_smooth_low, curve.y_smooth_low)
        if method == "inversion":
            continue
        q_lo, q_hi = np.percentile(curve.smece_bootstrap, [2.5, 97.5])
        ref = (
            (q_lo, q_hi)
            if method == "percentile"
            else (
                max(2 * curve.smece - q_hi, 0.0),
                2 * curve.smece - q_lo,
            )
        )
        assert disp.smece_ci == pytest.approx(ref, abs=1e-12)
        plt.close(disp.figure_)
    with pytest.raises(ValueError, match="ci_method"):
        SmoothReliabilityDisplay.from_predictions(y, p, ci_method="bca", **kw)


def test_bound_display_from_estimator_reads_the_perturbation_scale():
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    from skcalib import PerturbedClassifier
    from skcalib.metrics import calibration_error_bound

    X, y = make_classification(n_samples=4000, random_state=0)
    clf = PerturbedClassifier(LogisticRegression(), scale=2**-5, random_state=0)
    clf.fit(X[:2000], y[:2000])
    disp = CalibrationBoundDisplay.from_estimator(
        clf, X[2000:], y[2000:], random_state=0
    )
    assert disp.methods == ["tv", "nw", "lipschitz"]
    p = clf.predict_proba(X[2000:])[:, 1]
    ref = CalibrationBoundDisplay.from_predictions(
        y[2000:], p, perturbation_scale=2**-5, random_state=0
    )
    np.testing.assert_array_equal(disp.upper, ref.upper)
    # The NW bar certifies these scores at the model's scale.
    nw = calibration_error_bound(
        y[2000:], p, method="nw", perturbation_scale=2**-5, return_details=True
    )
    assert disp.upper[1] == pytest.approx(nw.upper, abs=0.05)
    plain = LogisticRegression().fit(X[:2000], y[:2000])
    disp = CalibrationBoundDisplay.from_estimator(plain, X[2000:], y[2000:])
    assert disp.methods == ["tv"]


# --- range, density, fade and band of the reliability diagrams --------------


def _reliability(cls, y, p, **kw):
    if cls is SmoothReliabilityDisplay:
        kw.setdefault("n_bootstrap", 0)
    return cls.from_predictions(y, p, density_panel=True, **kw)


def _panel_density(disp):
    """(x, density) drawn on the density panel."""
    if isinstance(disp, SmoothReliabilityDisplay):
        line = disp.density_ax_.lines[0]
        return line.get_xdata(), line.get_ydata()
    bars = disp.density_ax_.patches
    left = np.array([b.get_x() for b in bars])
    return left, np.array([b.get_height() for b in bars])


def _panel_integral(disp):
    x, d = _panel_density(disp)
    if isinstance(disp, SmoothReliabilityDisplay):
        return np.trapezoid(d, x)
    widths = np.array([b.get_width() for b in disp.density_ax_.patches])
    return float(np.sum(d * widths))


RELIABILITY = [SmoothReliabilityDisplay, BinnedReliabilityDisplay]


@pytest.mark.parametrize("cls", RELIABILITY)
def test_density_panel_known_shapes(cls):
    # Uniform scores have density 1 on [0, 1]; Beta(1/2, 1/2) scores are
    # U-shaped. Labels far from calibrated (y ~ 1 - s) make sigma* = smECE
    # large, and labels exactly calibrated make it small: the panel must show
    # the scores' shape whatever the calibration.
    rng = np.random.default_rng(0)
    n = 20000
    for labels in ("calibrated", "reversed"):
        s = rng.uniform(size=n)
        u = rng.uniform(size=n)
        y = (u < s) if labels == "calibrated" else (u < 1 - s)
        disp = _reliability(cls, y.astype(int), s)
        x, d = _panel_density(disp)
        assert _panel_integral(disp) == pytest.approx(1.0, abs=0.01)
        assert np.max(np.abs(d - 1.0)) < 0.15, (labels, np.round(d, 2))
        b = rng.beta(0.5, 0.5, size=n)
        y = (u < b) if labels == "calibrated" else (u < 1 - b)
        disp = _reliability(cls, y.astype(int), b)
        x, d = _panel_density(disp)
        assert _panel_integral(disp) == pytest.approx(1.0, abs=0.01)
        middle = d[(x > 0.35) & (x < 0.65)]
        ends = np.r_[d[x < 0.05], d[x > 0.93]]
        # Beta(1/2, 1/2): density 0.64 at 1/2, above 1.4 within 0.07 of the ends.
        assert middle.max() < 0.8 and ends.min() > 1.3, (labels, np.round(d, 2))


def test_density_bandwidth_rule_and_override():
    y, p = _binary(n=4000)
    disp = SmoothReliabilityDisplay.from_predictions(y, p, n_bootstrap=0)
    assert disp.density_bandwidth == pytest.approx(silverman_bandwidth(p), rel=1e-3)
    given = SmoothReliabilityDisplay.from_predictions(
        y, p, n_bootstrap=0, density_bandwidth=0.2
    )
    assert given.density_bandwidth == 0.2
    np.testing.assert_allclose(
        given.density, reflected_kde(given.scores, p, 0.2), rtol=1e-3, atol=1e-3
    )
    scott = SmoothReliabilityDisplay.from_predictions(
        y, p, n_bootstrap=0, density_bandwidth="scott"
    )
    assert scott.density_bandwidth == pytest.approx(1.06 * p.std() * 4000**-0.2)
    for bad in ("wide", 0.0, -1.0, np.nan, True):
        with pytest.raises(ValueError, match="density_bandwidth"):
            SmoothReliabilityDisplay.from_predictions(
                y, p, n_bootstrap=0, density_bandwidth=bad
            )


@pytest.mark.parametrize("cls", RELIABILITY)
def test_top_label_drawn_where_confidences_lie(cls):
    y, P = _multiclass(n=4000, k=4)
    disp = _reliability(cls, y, P)
    assert disp.score_range == (0.25, 1.0)
    lo, hi = disp.ax_.get_xlim()
    assert 0.24 < lo < 0.25 and 1.0 < hi < 1.01
    np.testing.assert_allclose(disp.ref_line_.get_xdata(), [0.25, 1.0])
    np.testing.assert_allclose(disp.ref_line_.get_ydata(), [0.25, 1.0])
    x, _ = _panel_density(disp)
    assert x.min() >= 0.25 - 1e-12
    assert _panel_integral(disp) == pytest.approx(1.0, abs=0.01)
    if cls is SmoothReliabilityDisplay:
        assert disp.line_.get_xdata().min() >= 0.25 - 1e-12
        # The density is reflected at 1/4: it integrates to one on [1/4, 1]
        # and matches direct kernel sums there.
        conf = P.max(axis=1)
        xs, ds = _panel_density(disp)
        ref = reflected_kde(xs, conf, silverman_bandwidth(conf), lo=0.25)
        np.testing.assert_allclose(ds, ref, rtol=2e-3, atol=2e-3)
    else:
        assert min(b.get_x() for b in disp.bars_) >= 0.25 - 1e-12
    # Classwise probabilities can be anywhere in [0, 1].
    classwise = _reliability(cls, y, P, multi_class="classwise")
    assert classwise.score_range == (0.0, 1.0)


def test_fade_follows_local_sample_size():
    # Few scores near 1: the curve rests on little data there.
    rng = np.random.default_rng(4)
    p = rng.beta(2, 6, size=300)
    y = (rng.uniform(size=300) < p).astype(int)
    disp = SmoothReliabilityDisplay.from_predictions(y, p, n_bootstrap=0)
    K = reflected_kernel(disp.scores, p, disp.sigma)
    ess = K.sum(axis=1) ** 2 / (K**2).sum(axis=1)
    # Where about one sample is under the kernel the kernel sums are at the
    # round-off of the FFT; both say "faint" there.
    ok = ess >= 2
    assert ok.mean() > 0.7
    np.testing.assert_allclose(disp.effective_size[ok], ess[ok], rtol=1e-3)
    assert np.all(disp.effective_size[~ok] < 30)
    # The line keeps the whole curve but is clipped to the supported part;
    # the faded segments are where fewer than 30 samples are under the kernel.
    np.testing.assert_array_equal(disp.line_.get_ydata(), disp.y_smooth)
    assert disp.line_.get_clip_path() is not None
    alphas = disp.fade_.get_colors()[:, 3]
    assert alphas.min() >= 0.2 - 1e-12 and alphas.max() < 1
    starts = disp.fade_.get_segments()
    faded_x = np.array([seg[0, 0] for seg in starts])
    sparse = disp.scores[ess < 30]
    assert np.all(np.isin(sparse[:-1], faded_x) | np.isin(sparse[:-1] - 1, faded_x))
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert "Faint: < 30 samples nearby" in legend
    uniform = SmoothReliabilityDisplay.from_predictions(
        y, p, n_bootstrap=0, fade_below=None
    )
    assert uniform.fade_ is None and uniform.line_.get_clip_path() is None
    big_y, big_p = _binary(n=50000)
    big = SmoothReliabilityDisplay.from_predictions(big_y, big_p, n_bootstrap=0)
    assert big.fade_ is None  # everywhere well above 30 samples
    with pytest.raises(ValueError, match="fade_below"):
        SmoothReliabilityDisplay.from_predictions(y, p, n_bootstrap=0, fade_below=0)


def test_band_drawn_by_default_and_legend_says_what_it_is():
    y, p = _binary(n=2000)
    disp = SmoothReliabilityDisplay.from_predictions(y, p, random_state=0)
    assert disp.band_ is not None and disp.smece_ci is not None
    ref = smooth_calibration_curve(y, p, n_bootstrap=100, random_state=0)
    np.testing.assert_array_equal(disp.y_smooth_low, ref.y_smooth_low)
    legend = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert legend[-2:] == ["95% bootstrap band", "Width ∝ score density"]
    lvl = SmoothReliabilityDisplay.from_predictions(
        y, p, random_state=0, confidence_level=0.9
    )
    assert "90% bootstrap band" in [
        t.get_text() for t in lvl.ax_.get_legend().get_texts()
    ]
    none = SmoothReliabilityDisplay.from_predictions(y, p, n_bootstrap=0)
    assert none.band_ is None
    assert "95% bootstrap band" not in [
        t.get_text() for t in none.ax_.get_legend().get_texts()
    ]
    # Above 200,000 samples "auto" draws no band (its cost grows with n).
    rng = np.random.default_rng(0)
    s = rng.uniform(size=200_001)
    big = SmoothReliabilityDisplay.from_predictions(rng.uniform(size=s.size) < s, s)
    assert big.band_ is None and big.smece_ci is None


# --- the display battery: every display through one set of tests -----------


def _fitted():
    X, y = make_classification(n_samples=1200, random_state=0)
    return LogisticRegression().fit(X[:600], y[:600]), X[600:], y[600:]


def _smooth_case():
    def build(ax=None, style=None, **kw):
        y, p = _binary(n=1500)
        return SmoothReliabilityDisplay.from_predictions(
            y,
            p,
            n_bootstrap=20,
            random_state=0,
            ax=ax,
            curve_kwargs=style,
            density_panel=True,
            **kw,
        )

    def check_frame(disp, table):
        np.testing.assert_array_equal(table["score"], disp.line_.get_xdata())
        np.testing.assert_array_equal(table["y_smooth"], disp.line_.get_ydata())
        band = _vertices(disp.band_)
        assert _has_points(band, table["score"], table["y_smooth_low"])
        assert _has_points(band, table["score"], table["y_smooth_high"])
        dens = disp.density_ax_.lines[0]
        np.testing.assert_array_equal(table["score"], dens.get_xdata())
        np.testing.assert_array_equal(table["density"], dens.get_ydata())
        half = 0.5 * 0.05 * table["density"] / table["density"].max()
        assert _has_points(
            _vertices(disp.ribbon_), table["score"], table["y_smooth"] + half
        )
        np.testing.assert_array_equal(table["effective_size"], disp.effective_size)

    def styled(disp):
        return matplotlib.colors.same_color(disp.line_.get_color(), "red")

    y, p = _binary(n=300)
    return {
        "build": build,
        "estimator": lambda clf, X, y: SmoothReliabilityDisplay.from_estimator(
            clf, X, y, n_bootstrap=0
        ),
        "check_frame": check_frame,
        "styled": styled,
        "bad": [
            (
                lambda: SmoothReliabilityDisplay.from_predictions(y, p, n_bootstrap=-1),
                "n_bootstrap",
            ),
            (
                lambda: SmoothReliabilityDisplay.from_predictions(
                    y, np.r_[p[:-1], np.nan]
                ),
                "y_proba",
            ),
            (
                lambda: SmoothReliabilityDisplay.from_predictions(
                    y, p, n_bootstrap=0, ax="x"
                ),
                "ax",
            ),
            (
                lambda: SmoothReliabilityDisplay.from_predictions(y, p, ref_line="no"),
                "ref_line",
            ),
            (
                lambda: SmoothReliabilityDisplay.from_predictions(
                    y, p, ref_line_kw="k--"
                ),
                "ref_line_kw",
            ),
            (
                lambda: SmoothReliabilityDisplay.from_predictions(
                    y, p, density_panel=None
                ),
                "density_panel",
            ),
            (
                lambda: SmoothReliabilityDisplay.from_predictions(
                    y, p, density_bandwidth="wide"
                ),
                "density_bandwidth",
            ),
            (
                lambda: SmoothReliabilityDisplay.from_predictions(y, p, fade_below=0),
                "fade_below",
            ),
        ],
    }


def _binned_case():
    def build(ax=None, style=None, **kw):
        y, p = _binary(n=1500)
        return BinnedReliabilityDisplay.from_predictions(
            y, p, n_bins=8, ax=ax, curve_kwargs=style, density_panel=True, **kw
        )

    def check_frame(disp, table):
        bars = disp.bars_
        np.testing.assert_allclose(table["bin_left"], [b.get_x() for b in bars])
        np.testing.assert_allclose(
            table["bin_right"] - table["bin_left"], [b.get_width() for b in bars]
        )
        np.testing.assert_allclose(table["mean_label"], [b.get_height() for b in bars])
        np.testing.assert_array_equal(table["mean_score"], disp.line_.get_xdata())
        np.testing.assert_array_equal(table["mean_label"], disp.line_.get_ydata())
        panel = disp.density_ax_.patches
        np.testing.assert_allclose(table["density"], [b.get_height() for b in panel])
        alphas = np.array([b.get_facecolor()[3] for b in bars])
        order = np.argsort(table["share"])
        assert np.all(np.diff(alphas[order]) >= -1e-12)

    y, p = _binary(n=300)
    return {
        "build": build,
        "estimator": lambda clf, X, y: BinnedReliabilityDisplay.from_estimator(
            clf, X, y, n_bins=5
        ),
        "check_frame": check_frame,
        "styled": lambda d: matplotlib.colors.same_color(d.line_.get_color(), "red"),
        "bad": [
            (
                lambda: BinnedReliabilityDisplay.from_predictions(y, p, n_bins=0),
                "n_bins",
            ),
            (lambda: BinnedReliabilityDisplay.from_predictions(y[:-1], p), "samples"),
            (lambda: BinnedReliabilityDisplay.from_predictions(y, p, ax="x"), "ax"),
            (
                lambda: BinnedReliabilityDisplay.from_predictions(y, p, ref_line=2),
                "ref_line",
            ),
            (
                lambda: BinnedReliabilityDisplay.from_predictions(y, p, ref_line_kw=1),
                "ref_line_kw",
            ),
            (
                lambda: BinnedReliabilityDisplay.from_predictions(
                    y, p, density_panel="yes"
                ),
                "density_panel",
            ),
            (
                lambda: BinnedReliabilityDisplay.from_predictions(y, p, bar_kwargs=[]),
                "bar_kwargs",
            ),
        ],
    }


def _bound_case():
    def build(ax=None, style=None, **kw):
        y, s = _square_problem(4000)
        return CalibrationBoundDisplay.from_predictions(
            y,
            s,
            lipschitz=2.0,
            true_ce=1 / 6,
            random_state=0,
            ax=ax,
            bar_kwargs=style,
            **kw,
        )

    def check_frame(disp, table):
        np.testing.assert_array_equal(list(table["method"]), disp.methods)
        bottom = np.zeros(len(disp.methods))
        for group, bars in disp.bars_.items():
            heights = np.array([b.get_height() for b in bars])
            np.testing.assert_allclose(table[f"{group}_term"], heights)
            np.testing.assert_allclose([b.get_y() for b in bars], bottom)
            bottom = bottom + heights
        np.testing.assert_allclose(table["upper"], bottom)
        np.testing.assert_allclose(table["binned_ece"], disp.ece_line_.get_ydata()[0])
        np.testing.assert_allclose(table["true_ce"], 1 / 6)

    def styled(disp):
        return all(
            matplotlib.colors.same_color(b.get_facecolor(), "red")
            for bars in disp.bars_.values()
            for b in bars
        )

    y, s = _square_problem(500)
    return {
        "build": build,
        "estimator": lambda clf, X, y: CalibrationBoundDisplay.from_estimator(
            clf, X, y, random_state=0
        ),
        "check_frame": check_frame,
        "styled": styled,
        "bad": [
            (lambda: CalibrationBoundDisplay.from_predictions(y, s, delta=2), "delta"),
            (
                lambda: CalibrationBoundDisplay.from_predictions(y, s, true_ce=2.0),
                "true_ce",
            ),
            (
                lambda: CalibrationBoundDisplay.from_predictions(
                    y, s, random_state=0, ax="x"
                ),
                "ax",
            ),
            (
                lambda: CalibrationBoundDisplay.from_predictions(y, s, methods="tw"),
                "methods",
            ),
            (
                lambda: CalibrationBoundDisplay.from_predictions(y, s, methods=[1]),
                "methods",
            ),
            (
                lambda: CalibrationBoundDisplay.from_sample_sizes(
                    y, s, sample_sizes="many"
                ),
                "sample_sizes",
            ),
        ],
    }


def _perturbation_case():
    def build(ax=None, style=None, **kw):
        disp = PerturbationDisplay.from_result(_scale_result(), ax=ax, **kw)
        if style is not None:
            plt.close(disp.figure_) if ax is None else None
            disp = disp.plot(ax=ax, curve_kwargs=style)
        return disp

    def check_frame(disp, table):
        np.testing.assert_array_equal(table["scale"], disp.line_.get_xdata())
        np.testing.assert_array_equal(table["score_mean"], disp.line_.get_ydata())
        np.testing.assert_array_equal(
            table["bound_upper"], disp.bound_line_.get_ydata()
        )
        assert table["scale"][np.asarray(table["recommended"])].tolist() == [
            disp.recommended_line_.get_xdata()[0]
        ]

    X, y = make_classification(n_samples=300, random_state=0)
    return {
        "build": build,
        "estimator": lambda clf, X, y: PerturbationDisplay.from_estimator(
            LogisticRegression(), X, y, scales=[2**-6, 2**-3], cv=2, random_state=0
        ),
        "check_frame": check_frame,
        "styled": lambda d: matplotlib.colors.same_color(d.line_.get_color(), "red"),
        "bad": [
            (lambda: PerturbationDisplay.from_result({"scales": [0.1]}), "result"),
            (
                lambda: PerturbationDisplay.from_estimator(
                    LogisticRegression(), X, y, tolerance=-1
                ),
                "tolerance",
            ),
            (lambda: PerturbationDisplay.from_result(_scale_result(), ax="x"), "ax"),
            (
                lambda: PerturbationDisplay.from_result(
                    _scale_result(), curve_kwargs=[{}]
                ),
                "curve_kwargs",
            ),
            (
                lambda: PerturbationDisplay.from_estimator(None, X, y),
                "estimator",
            ),
        ],
    }


BATTERY = {
    "smooth": _smooth_case,
    "binned": _binned_case,
    "bound": _bound_case,
    "perturbation": _perturbation_case,
}


@pytest.fixture(params=sorted(BATTERY))
def case(request):
    return BATTERY[request.param]()


def test_battery_from_predictions_and_estimator(case):
    disp = case["build"]()
    assert disp.figure_ is disp.ax_.figure
    clf, X, y = _fitted()
    other = case["estimator"](clf, X, y)
    assert other.figure_ is not disp.figure_
    assert type(other) is type(disp)


def test_battery_plot_on_existing_axes(case):
    fig, ax = plt.subplots()
    n_figs = len(plt.get_fignums())
    disp = case["build"](ax=ax)
    assert disp.ax_ is ax and disp.figure_ is fig
    assert len(plt.get_fignums()) == n_figs
    # Re-plotting the same data elsewhere draws the same table.
    again = disp.plot(ax=plt.subplots()[1])
    assert again.ax_ is not ax


def test_battery_style_kwargs_reach_the_artists(case):
    assert case["styled"](case["build"](style={"color": "red"}))
    assert not case["styled"](case["build"]())


def test_battery_frame_equals_plotted_data(case):
    pd = pytest.importorskip("pandas")
    disp = case["build"]()
    table = disp.frame()
    assert isinstance(table, pd.DataFrame) and len(table) > 0
    case["check_frame"](disp, {c: table[c].to_numpy() for c in table.columns})
    arrays = disp.frame(as_frame=False)
    assert isinstance(arrays, dict) and list(arrays) == list(table.columns)
    for col, values in arrays.items():
        assert isinstance(values, np.ndarray)
        np.testing.assert_array_equal(values, table[col].to_numpy())
    with pytest.raises(TypeError, match="as_frame"):
        disp.frame(as_frame="yes")


def test_battery_frame_without_pandas(case, monkeypatch):
    disp = case["build"]()
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="as_frame=False"):
        disp.frame()
    case["check_frame"](disp, disp.frame(as_frame=False))


def test_battery_bad_input_names_the_argument(case):
    for call, name in case["bad"]:
        with pytest.raises((ValueError, TypeError), match=name):
            call()


@pytest.mark.parametrize("value", ["no", 2, None, np.array([True, False]), object()])
def test_battery_plot_flags_are_checked(case, value):
    # Every display's plot takes the same flag by the same rule.
    disp = case["build"]()
    with pytest.raises(ValueError, match=r"'despine' parameter of \w+\.plot\(\)"):
        disp.plot(despine=value)


def test_battery_from_estimator_checks_y_by_name(case):
    clf, X, y = _fitted()
    with pytest.raises(ValueError, match=r"X and y have inconsistent"):
        case["estimator"](clf, X, y[:-1])
    with pytest.raises(ValueError, match=r"'y' parameter.* must be an array-like"):
        case["estimator"](clf, X, 5)


_COMPUTE = {
    SmoothReliabilityDisplay: ("_smooth", "smooth_calibration_curve"),
    BinnedReliabilityDisplay: ("_binned", "binned_calibration_error"),
    CalibrationBoundDisplay: ("_bound", "calibration_error_bound"),
}


@pytest.mark.parametrize(
    "cls, bad",
    [
        (cls, bad)
        for cls in _COMPUTE
        for bad in ({"ref_line": "no"}, {"despine": None}, {"density_panel": 2})
        # The bound display has no diagonal nor density panel.
        if cls is not CalibrationBoundDisplay or "despine" in bad
    ],
)
def test_plot_arguments_are_checked_before_computing(cls, bad, monkeypatch):
    import importlib

    def never(*args, **kwargs):
        raise AssertionError("computed before the arguments were checked")

    module, metric = _COMPUTE[cls]
    monkeypatch.setattr(
        importlib.import_module(f"skcalib.display.{module}"), metric, never
    )
    y, p = _binary(n=200)
    (name,) = bad
    with pytest.raises(ValueError, match=f"'{name}' parameter of {cls.__name__}"):
        cls.from_predictions(y, p, **bad)


@pytest.mark.parametrize("weighted", [False, True])
def test_from_accumulator_draws_the_in_memory_figure(weighted):
    from skcalib.metrics import CalibrationAccumulator

    rng = np.random.default_rng(4)
    n = 20_000
    p = rng.beta(0.5, 2.0, size=n)
    y = rng.uniform(size=n) < np.sqrt(p)
    w = rng.integers(1, 5, size=n).astype(float) if weighted else None
    acc = CalibrationAccumulator()
    for part in np.array_split(np.arange(n), 6):
        acc.partial_fit(y[part], p[part], None if w is None else w[part])
    streamed = SmoothReliabilityDisplay.from_accumulator(acc, density_panel=True)
    memory = SmoothReliabilityDisplay.from_predictions(
        y, p, sample_weight=w, n_bootstrap=0, density_panel=True
    )
    a, b = memory.frame(as_frame=False), streamed.frame(as_frame=False)
    np.testing.assert_array_equal(a["score"], b["score"])
    np.testing.assert_allclose(b["y_smooth"], a["y_smooth"], atol=1e-9)
    np.testing.assert_allclose(
        b["density"], a["density"], atol=1e-8 * a["density"].max()
    )
    np.testing.assert_allclose(b["effective_size"], a["effective_size"], rtol=1e-9)
    # Drawn: the panel's curve is the density, and the fade is where the
    # in-memory one is.
    np.testing.assert_array_equal(
        streamed.density_ax_.lines[0].get_ydata(), b["density"]
    )
    assert (streamed.fade_ is None) == (memory.fade_ is None)
    with pytest.raises(TypeError, match="accumulator"):
        SmoothReliabilityDisplay.from_accumulator((y, p))


@pytest.mark.parametrize("multi_class", ["top-label", "classwise"])
def test_from_accumulator_of_multiclass_chunks(multi_class):
    from skcalib.metrics import CalibrationAccumulator

    y, P = _multiclass(n=6000)
    labels = np.unique(y)
    acc = CalibrationAccumulator(labels=labels, multi_class=multi_class)
    for part in np.array_split(np.arange(y.shape[0]), 4):
        acc.partial_fit(y[part], P[part])
    streamed = SmoothReliabilityDisplay.from_accumulator(acc)
    memory = SmoothReliabilityDisplay.from_predictions(
        y, P, labels=labels, multi_class=multi_class, n_bootstrap=0
    )
    a, b = memory.frame(as_frame=False), streamed.frame(as_frame=False)
    assert streamed.multi_class == memory.multi_class == multi_class
    assert a.keys() == b.keys()
    np.testing.assert_array_equal(a["score"], b["score"])
    if multi_class == "classwise":
        np.testing.assert_array_equal(a["label"], b["label"])
    np.testing.assert_allclose(b["y_smooth"], a["y_smooth"], atol=1e-9)
    np.testing.assert_allclose(b["effective_size"], a["effective_size"], rtol=1e-9)
    plt.close("all")


def test_frame_of_several_curves_and_classes():
    pd = pytest.importorskip("pandas")
    y, P = _multiclass(n=1500)
    disp = SmoothReliabilityDisplay.from_predictions(
        y, P, multi_class="classwise", n_bootstrap=0
    )
    table = disp.frame()
    assert list(table.columns[:2]) == ["curve", "label"]
    for k, line in enumerate(disp.line_):
        part = table[table["curve"] == k]
        assert set(part["label"]) == {k}
        np.testing.assert_array_equal(part["y_smooth"], line.get_ydata())
    binned = BinnedReliabilityDisplay.from_predictions(
        y, P, multi_class="classwise", n_bins=5
    ).frame()
    assert isinstance(binned, pd.DataFrame)
    assert binned.groupby("label")["share"].sum().round(12).tolist() == [1.0] * 3
    X, yy = make_classification(n_samples=600, random_state=0)
    cv = cross_validate(
        LogisticRegression(), X, yy, cv=3, return_estimator=True, return_indices=True
    )
    folds = SmoothReliabilityDisplay.from_cv_results(cv, X, yy).frame()
    assert "label" not in folds and sorted(set(folds["curve"])) == [0, 1, 2]
    sizes = CalibrationBoundDisplay.from_sample_sizes(
        *_square_problem(4000), sample_sizes=[1000, 4000], random_state=0
    )
    table = sizes.frame()
    assert table["n_samples"].tolist() == [1000, 4000]
    np.testing.assert_array_equal(table["upper"], sizes.line_[0].get_ydata())
