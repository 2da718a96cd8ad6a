"""Consistency bands of the reliability displays: where a calibrated model's
curve would fall, against independent recomputations and closed forms."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy import stats  # noqa: E402

from skcalib.display import (  # noqa: E402
    BinnedReliabilityDisplay,
    SmoothReliabilityDisplay,
)
from skcalib.metrics import (  # noqa: E402
    binned_calibration_error,
    smooth_calibration_curve,
)

LABEL = "95% consistency band (calibrated model)"


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _band_rngs(random_state, n_draws):
    """The generators of the band's draws, rebuilt from the documented
    seeding: ``random_state``'s seed sequence (four 32-bit words of
    ``default_rng(random_state)``), child ``n_tasks + k`` for task ``k``
    (one task here), then one child per draw."""
    words = np.random.default_rng(random_state).integers(0, 2**32, size=4)
    root = np.random.SeedSequence([int(x) for x in words])
    return [np.random.default_rng(c) for c in root.spawn(2)[1].spawn(n_draws)]


def _calibrated(n, seed):
    rng = np.random.default_rng(seed)
    s = np.sort(rng.uniform(size=n))
    return (rng.uniform(size=n) < s).astype(int), s


def test_smooth_band_is_quantiles_of_recomputed_curves():
    y, s = _calibrated(800, 1)
    n_draws = 60
    disp = SmoothReliabilityDisplay.from_predictions(
        y,
        s,
        consistency_band=True,
        n_consistency=n_draws,
        random_state=3,
        n_bootstrap=0,
    )
    # Independent path: labels drawn in score order (scores sorted here) and
    # the public curve at the display's bandwidth.
    curves = []
    for rng in _band_rngs(3, n_draws):
        y_star = rng.random(s.shape[0]) < s
        c = smooth_calibration_curve(y_star, s, sigma=disp.sigma)
        curves.append(c.y_smooth)
    lo, hi = np.quantile(np.array(curves), [0.025, 0.975], axis=0)
    np.testing.assert_allclose(disp.y_consistency_low, lo, atol=1e-9)
    np.testing.assert_allclose(disp.y_consistency_high, hi, atol=1e-9)
    assert disp.consistency_band_.get_label() == LABEL
    assert LABEL in [t.get_text() for t in disp.ax_.get_legend().get_texts()]


def test_binned_band_is_quantiles_of_recomputed_bin_means():
    y, s = _calibrated(600, 2)
    n_draws = 80
    disp = BinnedReliabilityDisplay.from_predictions(
        y,
        s,
        n_bins=8,
        strategy="quantile",
        consistency_band=True,
        n_consistency=n_draws,
        random_state=5,
        confidence_level=0.9,
    )
    means = []
    for rng in _band_rngs(5, n_draws):
        y_star = (rng.random(s.shape[0]) < s).astype(int)
        res = binned_calibration_error(
            y_star, s, n_bins=8, strategy="quantile", return_details=True
        )
        assert np.array_equal(res.bin, disp.bin_index)
        means.append(res.mean_label)
    lo, hi = np.quantile(np.array(means), [0.05, 0.95], axis=0)
    np.testing.assert_allclose(disp.consistency_low, lo, atol=1e-12)
    np.testing.assert_allclose(disp.consistency_high, hi, atol=1e-12)
    assert disp.consistency_band_ is not None
    assert "90% consistency band (calibrated model)" in [
        t.get_text() for t in disp.ax_.get_legend().get_texts()
    ]


def test_binned_band_of_tied_scores_is_binomial():
    # Every bin holds one score value s repeated m times: a calibrated bin
    # mean is Binomial(m, s) / m. The band's quantiles from 4000 draws lie
    # between the binomial quantiles at levels 0.025 -/+ 0.01 (4 Monte-Carlo
    # standard deviations of the empirical CDF there).
    values, counts = [0.05, 0.35, 0.62, 0.97], [40, 25, 60, 200]
    s = np.repeat(values, counts)
    y = np.zeros(s.shape[0], dtype=int)
    y[::3] = 1
    disp = BinnedReliabilityDisplay.from_predictions(
        y, s, n_bins=10, consistency_band=True, n_consistency=4000, random_state=0
    )
    np.testing.assert_allclose(disp.mean_score, values)
    for k, (v, m) in enumerate(zip(values, counts, strict=True)):
        for q, got in (
            (0.025, disp.consistency_low[k]),
            (0.975, disp.consistency_high[k]),
        ):
            low = stats.binom.ppf(q - 0.01, m, v) / m
            high = stats.binom.ppf(q + 0.01, m, v) / m
            assert low - 1e-12 <= got <= high + 1e-12, (v, m, q, got, low, high)


def test_top_label_band_draws_the_label_from_the_rows():
    # Under the null hypothesis a class drawn from each row is the top class
    # with probability the confidence: the top-label band is the binary band
    # of (top class right, confidence).
    rng = np.random.default_rng(4)
    P = rng.dirichlet([2, 1, 1], size=700)
    y = np.array([rng.choice(3, p=row) for row in P])
    top = BinnedReliabilityDisplay.from_predictions(
        y, P, n_bins=6, consistency_band=True, n_consistency=50, random_state=1
    )
    binary = BinnedReliabilityDisplay.from_predictions(
        (P.argmax(axis=1) == y).astype(int),
        P.max(axis=1),
        n_bins=6,
        consistency_band=True,
        n_consistency=50,
        random_state=1,
    )
    # Top-label bins live on [1/3, 1]: compare bin means, edges differ.
    smooth_top = SmoothReliabilityDisplay.from_predictions(
        y,
        P,
        consistency_band=True,
        n_consistency=30,
        random_state=1,
        n_bootstrap=0,
    )
    smooth_bin = SmoothReliabilityDisplay.from_predictions(
        (P.argmax(axis=1) == y).astype(int),
        P.max(axis=1),
        consistency_band=True,
        n_consistency=30,
        random_state=1,
        n_bootstrap=0,
    )
    np.testing.assert_allclose(
        smooth_top.y_consistency_low, smooth_bin.y_consistency_low, atol=1e-12
    )
    np.testing.assert_allclose(
        smooth_top.y_consistency_high, smooth_bin.y_consistency_high, atol=1e-12
    )
    assert top.multi_class == "top-label"
    # The top-label band lies about the diagonal, where confidences can lie.
    inside = (top.consistency_low <= top.mean_score) & (
        top.mean_score <= top.consistency_high
    )
    assert inside.all()
    assert binary.consistency_low.shape == binary.mean_score.shape


def _coverage(disp_cls, n, n_reps, power):
    """Share of grid points (bins) whose truth and whose observed curve lie
    inside the band, over seeded repetitions with ``P(y = 1 | s) = s**power``."""
    truth_in, curve_in = [], []
    for rep in range(n_reps):
        rng = np.random.default_rng(1000 + rep)
        s = rng.uniform(size=n)
        y = (rng.uniform(size=n) < s**power).astype(int)
        if disp_cls is SmoothReliabilityDisplay:
            d = disp_cls.from_predictions(
                y,
                s,
                consistency_band=True,
                n_consistency=100,
                random_state=rep,
                n_bootstrap=0,
            )
            # Away from the ends, where the kernel is reflected and the
            # smoothed truth bends away from s**power.
            keep = (d.scores > 0.25) & (d.scores < 0.75)
            x, curve = d.scores[keep], d.y_smooth[keep]
            lo, hi = d.y_consistency_low[keep], d.y_consistency_high[keep]
            truth = x**power
        else:
            d = disp_cls.from_predictions(
                y,
                s,
                n_bins=10,
                consistency_band=True,
                n_consistency=100,
                random_state=rep,
            )
            curve, lo, hi = d.mean_label, d.consistency_low, d.consistency_high
            # The true frequency of a bin given its scores.
            truth = np.array(
                [
                    np.mean(s[(s >= a) & (s < b)] ** power)
                    for a, b in zip(
                        d.bin_edges[d.bin_index],
                        d.bin_edges[d.bin_index + 1],
                        strict=True,
                    )
                ]
            )
        truth_in.append(np.mean((lo <= truth) & (truth <= hi)))
        curve_in.append(np.mean((lo <= curve) & (curve <= hi)))
        plt.close("all")
    return float(np.mean(truth_in)), float(np.mean(curve_in))


@pytest.mark.slow
@pytest.mark.parametrize(
    "disp_cls", [SmoothReliabilityDisplay, BinnedReliabilityDisplay]
)
def test_band_covers_calibrated_truth_and_rejects_miscalibration(disp_cls):
    # Calibrated: the observed curve is exchangeable with the curves of the
    # draws, so it lies in the 95% band at about that pointwise rate (0.946
    # smooth, 0.940 binned with these seeds); the band is centred on the
    # truth (the diagonal), which lies inside it everywhere.
    truth, curve = _coverage(disp_cls, 1500, 40, 1.0)
    assert truth >= 0.99, truth
    assert 0.90 <= curve <= 0.98, curve
    # Clearly miscalibrated (P(y | s) = s^2): the curve and its truth leave
    # the band at most points (0.00 and 0.04 of them inside).
    truth, curve = _coverage(disp_cls, 1500, 5, 2.0)
    assert curve < 0.3, curve
    assert truth < 0.3, truth


def test_frame_has_band_columns():
    y, s = _calibrated(400, 0)
    smooth = SmoothReliabilityDisplay.from_predictions(
        y,
        s,
        consistency_band=True,
        n_consistency=20,
        random_state=0,
        n_bootstrap=0,
    )
    table = smooth.frame()
    assert {"y_consistency_low", "y_consistency_high"} <= set(table.columns)
    ok = table.y_consistency_low.notna()
    assert ok.all()
    assert (table.y_consistency_low[ok] <= table.y_consistency_high[ok]).all()
    plain = SmoothReliabilityDisplay.from_predictions(y, s, n_bootstrap=0).frame()
    assert plain.y_consistency_low.isna().all()
    binned = BinnedReliabilityDisplay.from_predictions(
        y, s, n_bins=5, consistency_band=True, n_consistency=20, random_state=0
    ).frame(as_frame=False)
    assert binned["consistency_low"].shape == binned["mean_score"].shape
    assert np.all(binned["consistency_low"] <= binned["consistency_high"])
    plain = BinnedReliabilityDisplay.from_predictions(y, s, n_bins=5).frame()
    assert plain.consistency_high.isna().all()
    assert plain.columns[-2:].tolist() == ["consistency_low", "consistency_high"]


def test_band_is_distinct_from_the_bootstrap_band():
    y, s = _calibrated(500, 3)
    disp = SmoothReliabilityDisplay.from_predictions(
        y,
        s,
        consistency_band=True,
        n_consistency=20,
        n_bootstrap=20,
        random_state=0,
    )
    assert disp.band_ is not None and disp.consistency_band_ is not None
    assert disp.band_.get_label() == "95% bootstrap band"
    assert disp.consistency_band_.get_label() == LABEL
    assert disp.consistency_band_.get_hatch() and not disp.band_.get_hatch()
    assert not np.allclose(
        disp.band_.get_facecolor(), disp.consistency_band_.get_facecolor()
    )
    assert (
        SmoothReliabilityDisplay.from_predictions(y, s, n_bootstrap=0).consistency_band_
        is None
    )


@pytest.mark.parametrize("cls", [SmoothReliabilityDisplay, BinnedReliabilityDisplay])
@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"consistency_band": "yes"}, "consistency_band"),
        ({"consistency_band": True, "n_consistency": 0}, "n_consistency"),
        ({"consistency_band": True, "n_consistency": 2.5}, "n_consistency"),
        ({"consistency_band": True, "confidence_level": 1.5}, "confidence_level"),
    ],
)
def test_bad_parameters_are_named(cls, kwargs, name):
    y, s = _calibrated(100, 0)
    with pytest.raises((TypeError, ValueError), match=name) as err:
        cls.from_predictions(y, s, **kwargs)
    assert "unexpected keyword" not in str(err.value)
