"""Matplotlib keywords given in the wrong place are refused before computing."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")
import matplotlib  # noqa: E402

matplotlib.use("Agg")

from skcalib.display import (  # noqa: E402
    BinnedReliabilityDisplay,
    CalibrationBoundDisplay,
    SmoothReliabilityDisplay,
)


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=200)
    return rng.uniform(size=200) < p, p


def _never_called(*args, **kwargs):
    raise AssertionError("the computation ran before the style was checked")


@pytest.mark.parametrize(
    "display, style_arg",
    [
        (BinnedReliabilityDisplay, "curve_kwargs"),
        (SmoothReliabilityDisplay, "curve_kwargs"),
        (CalibrationBoundDisplay, "bar_kwargs"),
    ],
)
def test_a_direct_matplotlib_keyword_points_to_the_style_argument(
    display, style_arg, data
):
    with pytest.raises(TypeError, match=rf"'color'.*{style_arg}=\{{'color'"):
        display.from_predictions(*data, color="red")


@pytest.mark.parametrize(
    "display, module, computation",
    [
        (
            BinnedReliabilityDisplay,
            "skcalib.display._binned",
            "binned_calibration_error",
        ),
        (
            SmoothReliabilityDisplay,
            "skcalib.display._smooth",
            "smooth_calibration_curve",
        ),
    ],
)
def test_an_unknown_style_key_is_named_before_computing(
    display, module, computation, data, monkeypatch
):
    monkeypatch.setattr(f"{module}.{computation}", _never_called)
    with pytest.raises(ValueError, match="curve_kwargs has the key 'colour'"):
        display.from_predictions(*data, curve_kwargs={"colour": "red"})
    with pytest.raises(ValueError, match="'linestlye'"):
        display.from_predictions(*data, curve_kwargs=[{"linestlye": "--"}])


def test_valid_styles_and_aliases_still_work(data):
    shown = BinnedReliabilityDisplay.from_predictions(
        *data, curve_kwargs={"c": "red", "lw": 3, "label": "model"}
    )
    line = shown.line_
    assert line.get_linewidth() == 3 and line.get_label() == "model"
    with pytest.raises(ValueError, match="'colour'"):
        shown.plot(curve_kwargs={"colour": "red"})
    with pytest.raises(TypeError, match="curve_kwargs"):
        shown.plot(linewidth=2)


def test_several_models_on_one_axes_get_outlined_bars(data):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    first = BinnedReliabilityDisplay.from_predictions(*data, ax=ax, name="a")
    assert all(bar.get_facecolor()[3] > 0 for bar in first.bars_)
    y, p = data
    second = BinnedReliabilityDisplay.from_predictions(y, p**2, ax=ax, name="b")
    # No translucent fills left to blend: each model's bars are outlines in
    # its own (distinct) colour.
    for shown in (first, second):
        assert all(bar.get_facecolor()[3] == 0 for bar in shown.bars_)
        edge = shown.bars_[0].get_edgecolor()[:3]
        assert np.allclose(edge, matplotlib.colors.to_rgb(shown.line_.get_color()))
    assert first.line_.get_color() != second.line_.get_color()
    plt.close(fig)
