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
    yd = da.from_array(y, chunks=25_000)
    sd = da.from_array(s, chunks=40_000)  # different chunking: rows realigned
    wd = da.from_array(w, chunks=30_000)
    assert abs(smooth_ece(yd, sd) - smooth_ece(y, s)) < 1e-6
    assert abs(smooth_ece(yd, sd, sample_weight=wd) - smooth_ece(y, s, sample_weight=w)) < 1e-6
    assert abs(smooth_ece(yd, sd, sigma=0.03) - smooth_ece(y, s, sigma=0.03)) < 1e-10
    # numpy labels with dask scores
    assert abs(smooth_ece(y, sd, sigma=0.03) - smooth_ece(y, s, sigma=0.03)) < 1e-10
    for norm in ("l1", "l2", "max"):
        got = binned_calibration_error(yd, sd, n_bins=16, norm=norm, sample_weight=wd)
        ref = binned_calibration_error(y, s, n_bins=16, norm=norm, sample_weight=w)
        assert got == pytest.approx(ref, rel=1e-10)
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
            func, lambda a, b: a + b,
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
    d = make_calibration_problem(60_000, problem="u2", perturbation_scale=h,
                                 random_state=1)
    b = calibration_error_bound(
        da.from_array(d.y_true, chunks=17_000), da.from_array(d.y_proba, chunks=13_000),
        method="nw", perturbation_scale=h, random_state=0,
    )
    # same fold hash seed as the dask path draws from random_state=0
    seed = int(np.random.default_rng(0).integers(0, 2**63))
    sb = StreamingCalibrationBound(perturbation_scale=h, random_state=seed)
    sb.partial_fit(d.y_true, d.y_proba).partial_validate(d.y_proba)
    ref = sb.result()
    assert b.upper == pytest.approx(ref.upper, rel=1e-10)
    assert b.lower == pytest.approx(ref.lower, rel=1e-10)
    assert b.lower <= d.calibration_error <= b.upper
    with pytest.raises(ValueError, match="method='nw'"):
        calibration_error_bound(da.from_array(d.y_true), da.from_array(d.y_proba))
