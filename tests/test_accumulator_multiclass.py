"""CalibrationAccumulator on multiclass chunks: the in-memory reductions."""

import numpy as np
import pytest

from skcalib.metrics import (
    CalibrationAccumulator,
    binned_calibration_error,
    smooth_calibration_curve,
    smooth_ece,
)

LABELS = np.array(["ant", "bee", "cat", "dog"])


def _problem(n, seed=0):
    """Over-confident four-class predictions with string labels."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, 4)) * 2.0
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    Q = np.exp(0.5 * logits)
    Q /= Q.sum(axis=1, keepdims=True)
    y = (rng.uniform(size=(n, 1)) > Q.cumsum(axis=1)).sum(axis=1)
    return LABELS[np.minimum(y, 3)], P


def _chunked(y, P, w=None, multi_class="top-label", sizes=(1, 7, 5000, 20_000)):
    acc = CalibrationAccumulator(labels=LABELS, multi_class=multi_class)
    start = 0
    for size in (*sizes, y.shape[0]):
        stop = min(start + size, y.shape[0])
        if stop > start:
            acc.partial_fit(
                y[start:stop], P[start:stop], None if w is None else w[start:stop]
            )
        start = stop
    return acc


@pytest.mark.parametrize("multi_class", ["top-label", "classwise"])
@pytest.mark.parametrize("weighted", [False, True])
def test_chunks_match_in_memory(multi_class, weighted):
    y, P = _problem(40_000)
    P[:3] = np.eye(4)[:3]  # scores at exactly 0 and 1
    w = np.random.default_rng(1).integers(0, 4, size=y.shape[0]) if weighted else None
    # The first chunks hold a single row: most classes are absent from them.
    acc = _chunked(y, P, w, multi_class)
    kw = {"labels": LABELS, "multi_class": multi_class, "sample_weight": w}
    assert acc.n_samples_ == y.shape[0]

    res = acc.smooth_ece(return_details=True)
    ref = smooth_ece(y, P, return_details=True, **kw)
    assert res.value == pytest.approx(ref.value, abs=1e-9)
    assert res.multi_class == ref.multi_class == multi_class
    np.testing.assert_allclose(res.sigma, ref.sigma, atol=1e-9)
    if multi_class == "classwise":
        np.testing.assert_allclose(res.class_values, ref.class_values, atol=1e-9)
        assert list(res.classes) == list(ref.classes) == list(LABELS)
        assert acc.grid_statistics().shape == (4, 2**16 + 1, 3)

    # 16 divides the grid: the edges are exact and the tables equal.
    got = acc.binned_calibration_error(n_bins=16, return_details=True)
    want = binned_calibration_error(
        y, P, n_bins=16, strategy="uniform", return_details=True, **kw
    )
    assert got.value == pytest.approx(want.value, abs=1e-12)
    if multi_class == "classwise":
        np.testing.assert_allclose(got.class_values, want.class_values, atol=1e-12)

    curves = acc.calibration_curve()
    refs = smooth_calibration_curve(y, P, n_bootstrap=0, **kw)
    if multi_class == "top-label":
        curves, refs = [curves], [refs]
    assert len(curves) == len(refs)
    for c, r in zip(curves, refs, strict=True):
        assert getattr(c, "label", None) == getattr(r, "label", None)
        np.testing.assert_allclose(
            np.interp(r.scores, c.scores, c.y_smooth), r.y_smooth, atol=1e-6
        )


def test_merge_equals_concatenation():
    y, P = _problem(12_000, seed=2)
    left = _chunked(y[:5000], P[:5000], multi_class="classwise")
    right = _chunked(y[5000:], P[5000:], multi_class="classwise")
    whole = _chunked(y, P, multi_class="classwise")
    empty = CalibrationAccumulator(labels=LABELS, multi_class="classwise")
    merged = empty.merge(left).merge(right)
    assert merged.n_samples_ == 12_000
    assert merged.smooth_ece() == pytest.approx(whole.smooth_ece(), abs=1e-12)
    np.testing.assert_allclose(merged.grid_statistics(), whole.grid_statistics())
    assert left.n_samples_ == 5000  # the merged accumulator is left unchanged


def test_rejected_chunk_changes_nothing():
    y, P = _problem(2000, seed=3)
    acc = _chunked(y, P, multi_class="classwise")
    before = acc.grid_statistics().copy()
    bad = P[:10].copy()
    bad[0] = [0.5, 0.5, 0.5, 0.5]  # rows must sum to one
    with pytest.raises(ValueError, match="y_proba"):
        acc.partial_fit(y[:10], bad)
    with pytest.raises(ValueError, match="y_true"):
        acc.partial_fit(np.array(["ant"] * 9 + ["eel"]), P[:10])
    with pytest.raises(ValueError, match="sample_weight"):
        acc.partial_fit(y[:10], P[:10], sample_weight=-np.ones(10))
    assert acc.n_samples_ == 2000
    np.testing.assert_array_equal(acc.grid_statistics(), before)


def test_errors_name_the_argument():
    y, P = _problem(100, seed=4)
    with pytest.raises(ValueError, match="labels="):
        CalibrationAccumulator().partial_fit(y, P)
    with pytest.raises(ValueError, match="pos_label"):
        CalibrationAccumulator(labels=LABELS, pos_label="ant").partial_fit(y, P)
    with pytest.raises(ValueError, match="multi_class"):
        CalibrationAccumulator(labels=LABELS, multi_class="ovr").partial_fit(y, P)
    multi = CalibrationAccumulator(labels=LABELS).partial_fit(y, P)
    with pytest.raises(ValueError, match="earlier chunks were multiclass"):
        multi.partial_fit([0, 1], [0.3, 0.4])
    binary = CalibrationAccumulator().partial_fit([0, 1], [0.3, 0.4])
    with pytest.raises(ValueError, match="merge"):
        multi.merge(binary)
    with pytest.raises(ValueError, match="merge"):
        binary.merge(multi)
    classwise = CalibrationAccumulator(labels=LABELS, multi_class="classwise")
    with pytest.raises(ValueError, match="multi_class"):
        multi.merge(classwise.partial_fit(y, P))
