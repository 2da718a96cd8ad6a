"""dask arrays and the joblib dask backend give the numpy results."""

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")

from skcalib._backend.distributed import map_reduce_blocks  # noqa: E402
from skcalib.metrics import (  # noqa: E402
    binned_calibration_error,
    smooth_calibration_curve,
    smooth_ece,
)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        processes=True,
        n_workers=2,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _problem(n, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.beta(2.0, 2.0, size=n)
    eta = np.clip(s + 0.25 * np.sin(2 * np.pi * s), 0, 1)
    y = (rng.uniform(size=n) < eta).astype(np.int8)
    w = rng.exponential(size=n)
    return y, s, w


def test_dask_arrays_equal_numpy(client):
    y, s, w = _problem(120_000)
    yd = da.from_array(y, chunks=40_000)
    sd = da.from_array(s, chunks=50_000)  # different chunking: rows realigned
    wd = da.from_array(w, chunks=30_000)
    assert abs(smooth_ece(yd, sd) - smooth_ece(y, s)) < 1e-6
    got = smooth_ece(yd, sd, sample_weight=wd, sigma=0.03)
    assert abs(got - smooth_ece(y, s, sample_weight=w, sigma=0.03)) < 1e-10
    # numpy labels with dask scores
    assert abs(smooth_ece(y, sd, sigma=0.03) - smooth_ece(y, s, sigma=0.03)) < 1e-10
    # exact bins for any count: scores on the edges k / 15 (and 1.0)
    s_edge = s.copy()
    s_edge[:16] = np.arange(16) / 15
    sd_edge = da.from_array(s_edge, chunks=50_000)
    for n_bins in (15, "cbrt"):
        bins = binned_calibration_error(
            yd, sd_edge, n_bins=n_bins, norm="l2", sample_weight=wd, return_details=True
        )
        got = bins.value
        ref_bins = binned_calibration_error(
            y, s_edge, n_bins=n_bins, norm="l2", sample_weight=w, return_details=True
        )
        ref = ref_bins.value
        assert got == pytest.approx(ref, rel=1e-10)
        np.testing.assert_array_equal(bins.count, ref_bins.count)
    curve = smooth_calibration_curve(yd, sd)
    ref = smooth_calibration_curve(y, s)
    assert abs(curve.smece - ref.smece) < 1e-6
    np.testing.assert_allclose(curve.density, ref.density, rtol=1e-6, atol=1e-9)


def test_dask_two_columns_and_string_labels(client):
    y, s, _ = _problem(40_000, seed=1)
    lab = np.where(y == 1, "pos", "neg")
    P = np.column_stack([1 - s, s])
    Pd = da.from_array(P, chunks=(10_000, 1))
    labd = da.from_array(lab, chunks=10_000)
    assert abs(smooth_ece(labd, Pd) - smooth_ece(lab, P)) < 1e-6
    got = smooth_ece(labd, da.from_array(1 - s, chunks=10_000), pos_label="neg")
    assert abs(got - smooth_ece(lab, 1 - s, pos_label="neg")) < 1e-6


def test_blocks_are_not_gathered():
    y, s, _ = _problem(10_000, seed=2)
    seen = []

    def func(yb, sb, wb):
        seen.append(len(yb))
        return len(yb)

    with __import__("dask").config.set(scheduler="sync"):
        total = map_reduce_blocks(
            func,
            lambda a, b: a + b,
            (da.from_array(y, chunks=1000), da.from_array(s, chunks=1000), None),
            split_every=3,
        )
    assert total == 10_000
    assert max(seen) == 1000 and len(seen) == 10


def test_dask_bad_input():
    y, s, _ = _problem(1000, seed=3)
    yd, sd = da.from_array(y, chunks=300), da.from_array(s, chunks=300)
    with __import__("dask").config.set(scheduler="sync"):
        with pytest.raises(ValueError, match="n_bootstrap"):
            smooth_calibration_curve(yd, sd, n_bootstrap=10)
        with pytest.raises(ValueError, match="logit"):
            smooth_ece(yd, sd, metric="logit")
        with pytest.raises(ValueError, match="strategy"):
            binned_calibration_error(yd, sd, strategy="quantile")
        with pytest.raises(ValueError, match="y_proba"):
            smooth_ece(yd, sd * 2)
        with pytest.raises(ValueError, match="samples"):
            smooth_ece(yd, sd[:500])


def test_bootstrap_under_joblib_dask_backend(client):
    y, s, w = _problem(3000, seed=4)
    kw = dict(n_bootstrap=24, random_state=0, sample_weight=w)
    seq = smooth_calibration_curve(y, s, **kw)
    with joblib.parallel_backend("dask"):
        par = smooth_calibration_curve(y, s, n_jobs=-1, **kw)
    assert par.smece_ci == seq.smece_ci
    np.testing.assert_array_equal(par.y_smooth_low, seq.y_smooth_low)
    np.testing.assert_array_equal(par.y_smooth_high, seq.y_smooth_high)


def test_dask_nw_bound_equals_two_pass_stream(client):
    from skcalib.datasets import make_calibration_problem
    from skcalib.metrics import StreamingCalibrationBound, calibration_error_bound

    h = 2**-4
    d = make_calibration_problem(
        60_000, problem="u2", perturbation_scale=h, random_state=1
    )
    b = calibration_error_bound(
        da.from_array(d.y_true, chunks=17_000),
        da.from_array(d.y_proba, chunks=13_000),
        method="nw",
        perturbation_scale=h,
        random_state=0,
        return_details=True,
    )
    # same fold hash seed as the dask path draws from random_state=0
    seed = int(np.random.default_rng(0).integers(0, 2**63))
    sb = StreamingCalibrationBound(perturbation_scale=h, random_state=seed)
    sb.partial_fit(d.y_true, d.y_proba).partial_validate(d.y_proba)
    ref = sb.result(return_details=True)
    assert b.upper == pytest.approx(ref.upper, rel=1e-10)
    assert b.lower == pytest.approx(ref.lower, rel=1e-10)
    assert b.lower <= d.calibration_error <= b.upper
    with pytest.raises(ValueError, match="method='nw'"):
        calibration_error_bound(
            da.from_array(d.y_true),
            da.from_array(d.y_proba),
            method="lipschitz",
            return_details=True,
        )
    with pytest.raises(ValueError, match="perturbation_scale"):
        calibration_error_bound(
            da.from_array(d.y_true),
            da.from_array(d.y_proba),
            method="nw",
            return_details=True,
        )


def test_dask_tv_bound_equals_two_pass_stream(client):
    from skcalib.datasets import make_calibration_problem
    from skcalib.metrics import StreamingCalibrationBound, calibration_error_bound

    d = make_calibration_problem(50_000, problem="overconfident", random_state=4)
    b = calibration_error_bound(
        da.from_array(d.y_true, chunks=12_000),
        da.from_array(d.y_proba, chunks=12_000),
        method="tv",
        assume="monotone",
        random_state=1,
        return_details=True,
    )
    seed = int(np.random.default_rng(1).integers(0, 2**63))
    sb = StreamingCalibrationBound(method="tv", assume="monotone", random_state=seed)
    sb.partial_fit(d.y_true, d.y_proba).partial_validate(d.y_proba)
    assert b.upper == pytest.approx(sb.result(return_details=True).upper, rel=1e-10)
    assert b.lower <= d.calibration_error <= b.upper


def _n_jobs_paths():
    """Every public n_jobs path, as (name, call(n_jobs) -> array of results)."""
    from sklearn.linear_model import LogisticRegression

    from skcalib import select_perturbation_scale
    from skcalib.metrics import calibration_error_bound, kde_calibration_error
    from skcalib.recalibration import KernelRecalibrator, RecalibratedClassifier

    y, s, _ = _problem(1500, seed=6)
    rng = np.random.default_rng(7)
    X = np.column_stack([np.log(s / (1 - s)), rng.normal(size=1500)])
    P = np.column_stack([1 - s, s])
    return [
        (
            "calibration_error_bound",
            lambda j: np.array(
                [
                    calibration_error_bound(
                        y, s, method="tv", n_jobs=j, random_state=0, return_details=True
                    ).upper
                ]
            ),
        ),
        (
            "kde_calibration_error",
            lambda j: np.array([kde_calibration_error(y, s, n_jobs=j)]),
        ),
        (
            "KernelRecalibrator",
            lambda j: KernelRecalibrator(n_jobs=j).fit(P, y).transform(P),
        ),
        (
            "RecalibratedClassifier",
            lambda j: (
                RecalibratedClassifier(LogisticRegression(), cv=3, n_jobs=j)
                .fit(X, y)
                .predict_proba(X)
            ),
        ),
        (
            "select_perturbation_scale",
            lambda j: np.asarray(
                select_perturbation_scale(
                    LogisticRegression(),
                    X,
                    y,
                    cv=3,
                    n_jobs=j,
                    random_state=0,
                    bound_method=None,
                ).scores
            ),
        ),
    ]


def test_every_n_jobs_path_under_joblib_dask_backend(client):
    for name, call in _n_jobs_paths():
        seq = call(None)
        with joblib.parallel_backend("dask"):
            par = call(-1)
        np.testing.assert_allclose(par, seq, rtol=1e-12, atol=0, err_msg=name)


def test_dask_bound_classes_come_from_the_whole_sample(client):
    # The first block holds only label 1 of labels {1, 2}: read alone it
    # passes for the positive class of {0, 1}. The dask path must use the
    # classes of the whole sample, as in memory: {1, 2} with 1-D scores has
    # no default positive class.
    from skcalib.metrics import StreamingCalibrationBound, calibration_error_bound

    rng = np.random.default_rng(0)
    n = 20_000
    s = rng.uniform(size=n)
    y = np.where(rng.uniform(size=n) < s, 2, 1)
    neg = np.flatnonzero(y == 1)[:5000]
    order = np.r_[neg, rng.permutation(np.setdiff1d(np.arange(n), neg))]
    s, y = s[order], y[order]
    with pytest.raises(ValueError, match="pos_label"):
        calibration_error_bound(
            da.from_array(y, chunks=5000),
            da.from_array(s, chunks=5000),
            method="tv",
            random_state=0,
            return_details=True,
        )
    b = calibration_error_bound(
        da.from_array(y, chunks=5000),
        da.from_array(s, chunks=5000),
        method="tv",
        pos_label=2,
        random_state=0,
        return_details=True,
    )
    seed = int(np.random.default_rng(0).integers(0, 2**63))
    ref = StreamingCalibrationBound(method="tv", pos_label=2, random_state=seed)
    ref.partial_fit(y, s).partial_validate(s)
    assert b.upper == pytest.approx(ref.result(return_details=True).upper, rel=1e-10)
    # pos_label=1 with the scores of label 1, against the stream told so.
    flipped = calibration_error_bound(
        da.from_array(y, chunks=5000),
        da.from_array(1 - s, chunks=5000),
        method="tv",
        pos_label=1,
        random_state=0,
        return_details=True,
    )
    ref = StreamingCalibrationBound(method="tv", pos_label=1, random_state=seed)
    ref.partial_fit(y, 1 - s).partial_validate(1 - s)
    assert flipped.upper == pytest.approx(
        ref.result(return_details=True).upper, rel=1e-10
    )


def test_dask_metrics_follow_labels_order_and_zero_weight_blocks(client):
    y, s, w = _problem(20_000, seed=5)
    P = np.column_stack([s, 1 - s])  # labels=[1, 0]: column 0 is label 1
    yd = da.from_array(y, chunks=5000)
    Pd = da.from_array(P, chunks=(5000, 2))
    for metric in (smooth_ece, binned_calibration_error):
        ref = metric(y, P, labels=[1, 0])
        assert abs(ref - metric(y, s)) < 1e-9
        assert abs(metric(yd, Pd, labels=[1, 0]) - ref) < 1e-6
    # The last block has no weight at all; "cbrt" counts positive weights.
    w0 = w.copy()
    w0[15_000:] = 0.0
    wd = da.from_array(w0, chunks=5000)
    sd = da.from_array(s, chunks=5000)
    for n_bins in (15, "cbrt"):
        got = binned_calibration_error(yd, sd, n_bins=n_bins, sample_weight=wd)
        ref = binned_calibration_error(
            y[:15_000], s[:15_000], n_bins=n_bins, sample_weight=w[:15_000]
        )
        assert got == pytest.approx(ref, rel=1e-9)
