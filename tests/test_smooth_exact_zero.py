"""SmoothECE of a sample whose residuals cancel exactly is exactly 0."""

import numpy as np
import pytest

from skcalib.metrics import CalibrationAccumulator, smooth_calibration_curve, smooth_ece


def _exactly_calibrated():
    # y == s on every row; and scores 1/2 (resp. 1/4) with exactly half
    # (resp. a quarter) of their labels positive.
    yield np.array([0, 1, 0, 1, 1]), np.array([0.0, 1.0, 0.0, 1.0, 1.0]), None
    s = np.r_[np.full(40, 0.5), np.full(40, 0.25)]
    y = np.r_[np.ones(20), np.zeros(20), np.ones(10), np.zeros(30)]
    yield y, s, None
    yield y, s, np.r_[np.full(40, 3.0), np.full(40, 0.5)]


@pytest.mark.parametrize("case", range(3))
def test_smooth_ece_is_exactly_zero_when_residuals_cancel(case):
    y, s, w = list(_exactly_calibrated())[case]
    # the reference: r_sigma = 0 for every sigma, so the fixed point is 0
    assert smooth_ece(y, s, sample_weight=w) == 0.0
    assert smooth_ece(y, s, sample_weight=w, metric="logit") == 0.0
    acc = CalibrationAccumulator().partial_fit(y, s, sample_weight=w)
    assert acc.smooth_ece() == 0.0
    curve = smooth_calibration_curve(y, s, sample_weight=w)
    assert curve.smece == 0.0 and curve.sigma > 0


def test_smooth_ece_stays_positive_when_residuals_do_not_cancel():
    y = np.array([0, 1, 0, 1, 1])
    s = np.array([0.0, 1.0, 0.0, 1.0, 0.999])
    assert smooth_ece(y, s) > 0.0
