"""CalibrationAccumulator: chunked statistics equal the in-memory computation."""

import pickle

import numpy as np
import pytest
from _references import reflected_kernel
from sklearn.exceptions import NotFittedError

from skcalib.metrics import (
    CalibrationAccumulator,
    smooth_calibration_curve,
    smooth_ece,
)


def _problem(n, seed=0):
    """Miscalibration whose sign changes with s, so smECE depends on sigma."""
    rng = np.random.default_rng(seed)
    s = rng.beta(2.0, 2.0, size=n)
    eta = np.clip(s + 0.25 * np.sin(2 * np.pi * s), 0, 1)
    y = rng.uniform(size=n) < eta
    return y, s


def _brute_smece(y, s, w, sigma, n_grid=20001):
    """Direct kernel sums of the reflected Gaussian on a 20001-point grid."""
    t = np.linspace(0.0, 1.0, n_grid)
    r = np.zeros(n_grid)
    resid = w * (y - s) / w.sum()
    for start in range(0, s.shape[0], 400):
        k = reflected_kernel(s[start : start + 400], t, sigma)
        r += resid[start : start + 400] @ k
    a = np.abs(r)
    return (a.sum() - 0.5 * (a[0] + a[-1])) / (n_grid - 1)


def _chunks(n, n_chunks, seed=1):
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, n), size=n_chunks - 1, replace=False))
    return np.split(np.arange(n), cuts)


def _fit(y, s, w=None, n_chunks=7, **kw):
    acc = CalibrationAccumulator(**kw)
    for c in _chunks(y.shape[0], n_chunks):
        acc.partial_fit(y[c], s[c], None if w is None else w[c])
    return acc


@pytest.mark.parametrize("weighted", [False, True])
def test_chunks_match_in_memory(weighted):
    y, s = _problem(50_000)
    w = np.random.default_rng(3).exponential(size=y.shape[0]) if weighted else None
    s[:5], s[5:10] = 0.0, 1.0  # both ends of the grid
    acc = _fit(y, s, w)
    assert acc.n_samples_ == y.shape[0]
    res = acc.smooth_ece(return_details=True)
    ref = smooth_ece(y, s, sample_weight=w, return_details=True)
    assert abs(res.value - ref.value) <= 1e-6
    assert abs(res.sigma - ref.sigma) <= 1e-6
    assert res.value == acc.smooth_ece() and res.n_samples == ref.n_samples
    for sig in (0.01, 0.1):
        assert (
            abs(
                acc.smooth_ece(sigma=sig) - smooth_ece(y, s, sigma=sig, sample_weight=w)
            )
            < 1e-10
        )


def test_matches_brute_force_kernel_sums():
    y, s = _problem(1200, seed=5)
    w = np.random.default_rng(6).uniform(0.5, 2.0, size=1200)
    acc = _fit(y, s, w, n_chunks=4)
    yf = y.astype(float)
    # fixed bandwidth against the direct definition
    assert abs(acc.smooth_ece(sigma=0.05) - _brute_smece(yf, s, w, 0.05)) < 1e-4
    # sigma* is a fixed point of the brute-force smECE_sigma
    sig = acc.smooth_ece()
    assert abs(_brute_smece(yf, s, w, sig) - sig) < 1e-4


def test_curve_matches_smooth_calibration_curve():
    y, s = _problem(20_000, seed=2)
    curve = _fit(y, s).calibration_curve()
    ref = smooth_calibration_curve(y, s)
    assert type(curve) is type(ref)
    assert abs(curve.sigma - ref.sigma) < 1e-6 and abs(curve.smece - ref.smece) < 1e-6
    np.testing.assert_allclose(curve.scores, ref.scores)
    np.testing.assert_allclose(curve.density, ref.density, rtol=1e-6, atol=1e-9)
    ok = ~np.isnan(ref.y_smooth)
    np.testing.assert_allclose(curve.y_smooth[ok], ref.y_smooth[ok], atol=1e-6)
    fixed = _fit(y, s).calibration_curve(sigma=0.07)
    assert fixed.sigma == 0.07
    assert abs(fixed.smece - smooth_ece(y, s, sigma=0.07)) < 1e-10


def _brute_binned(y, s, w, edges, norm):
    """Bins (e_k, e_k+1], the first closed (the rule of scikit-learn's
    calibration_curve), written out with a Python loop."""
    n_bins = edges.shape[0] - 1
    total, out = w.sum(), []
    for k in range(n_bins):
        lower = s > edges[k] if k > 0 else s >= edges[k]
        m = lower & (s <= edges[k + 1])
        if w[m].sum() > 0:
            gap = np.average(y[m], weights=w[m]) - np.average(s[m], weights=w[m])
            out.append((w[m].sum() / total, gap))
    p, g = np.array(out).T
    if norm == "l1":
        return np.sum(p * np.abs(g))
    if norm == "max":
        return np.max(np.abs(g))
    return np.sqrt(np.sum(p * g * g))


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
@pytest.mark.parametrize("n_bins", [1, 4, 16, 15, 10])
def test_binned_exact_on_grid_aligned_edges(norm, n_bins):
    rng = np.random.default_rng(n_bins)
    y, s = _problem(20_000, seed=n_bins)
    # scores exactly on the requested edges, and just next to them
    e = np.arange(n_bins + 1) / n_bins
    s[: n_bins + 1] = e
    s[n_bins + 1 : 2 * n_bins + 2] = np.clip(e - 1e-7, 0, 1)
    w = rng.exponential(size=s.shape[0])
    acc = _fit(y, s, w)
    bins = acc.binned_calibration_error(n_bins=n_bins, norm=norm, return_details=True)
    value = bins.value
    # documented edges: k / n_bins rounded to a multiple of 2**-16
    edges = np.round(e * 2**16) / 2**16
    np.testing.assert_array_equal(bins.edges, edges)
    if 2**16 % n_bins == 0:
        np.testing.assert_array_equal(edges, e)
    ref = _brute_binned(y.astype(float), s, w, edges, norm)
    assert value == pytest.approx(ref, rel=1e-10, abs=1e-13)
    assert bins.count.sum() == s.shape[0]


def test_binned_debias_and_counts():
    y, s = _problem(5000, seed=9)
    acc = _fit(y, s)
    bins = acc.binned_calibration_error(
        n_bins=8, norm="l2", debias=True, root=False, return_details=True
    )
    value = bins.value
    b = np.minimum((s * 8).astype(int), 7)
    gap = [y[b == k].mean() - s[b == k].mean() for k in range(8)]
    cnt = np.bincount(b, minlength=8)
    ybar = np.array([y[b == k].mean() for k in range(8)])
    ref = np.sum(cnt / cnt.sum() * (np.square(gap) - ybar * (1 - ybar) / (cnt - 1)))
    assert value == pytest.approx(ref, rel=1e-9)
    np.testing.assert_array_equal(bins.count, cnt)


def _partitions(n_parts=6, n=6000):
    y, s = _problem(n * n_parts, seed=11)
    w = np.random.default_rng(12).uniform(size=y.shape[0])
    labels = np.where(y, "spam", "ham")
    parts = []
    for i, c in enumerate(np.array_split(np.arange(y.shape[0]), n_parts)):
        if i == 0:  # a partition holding a single class
            c = c[labels[c] == "ham"]
        # s is the probability of "spam": text labels with 1-D scores need
        # pos_label, as in the in-memory metrics.
        parts.append(
            CalibrationAccumulator(pos_label="spam").partial_fit(labels[c], s[c], w[c])
        )
    return parts


def test_merge_associative_and_order_independent():
    parts = _partitions()
    left = CalibrationAccumulator(pos_label="spam")
    for p in parts:
        left.merge(pickle.loads(pickle.dumps(p)))
    rev = CalibrationAccumulator(pos_label="spam")
    for p in reversed(parts):
        rev.merge(pickle.loads(pickle.dumps(p)))
    # ((0 1) (2 3)) (4 5)
    cp = [pickle.loads(pickle.dumps(p)) for p in parts]
    tree = cp[0].merge(cp[1]).merge(cp[2].merge(cp[3])).merge(cp[4].merge(cp[5]))
    ref = left.smooth_ece()
    for acc in (rev, tree):
        assert acc.n_samples_ == left.n_samples_
        assert list(acc.classes_) == ["ham", "spam"]
        np.testing.assert_allclose(acc.moments_, left.moments_, rtol=1e-12, atol=0)
        assert abs(acc.smooth_ece() - ref) < 1e-6
        assert acc.binned_calibration_error(n_bins=16) == pytest.approx(
            left.binned_calibration_error(n_bins=16), rel=1e-12
        )
    # merge leaves ``other`` unchanged and returns self
    before = parts[1].moments_.copy()
    assert left.merge(parts[1]) is left
    np.testing.assert_array_equal(parts[1].moments_, before)


def test_merge_equals_single_stream():
    y, s = _problem(20_000, seed=4)
    one = _fit(y, s, n_chunks=1)
    a = CalibrationAccumulator().partial_fit(y[:7000], s[:7000])
    b = CalibrationAccumulator().partial_fit(y[7000:], s[7000:])
    np.testing.assert_allclose(a.merge(b).moments_, one.moments_, rtol=1e-12)


def test_pickle_round_trip_and_continue():
    y, s = _problem(10_000, seed=8)
    acc = CalibrationAccumulator(pos_label=True).partial_fit(y[:5000], s[:5000])
    clone = pickle.loads(pickle.dumps(acc))
    assert clone.smooth_ece() == acc.smooth_ece()
    clone.partial_fit(y[5000:], s[5000:])
    assert abs(clone.smooth_ece() - smooth_ece(y, s)) < 1e-6
    assert repr(clone) == "CalibrationAccumulator(n_samples=10000)"


def test_labels_pos_label_and_two_columns():
    y, s = _problem(8000, seed=13)
    lab = np.where(y, "a", "b")  # positive class "a" sorts first
    P = np.column_stack([s, 1 - s])  # columns in sorted order: "a", "b"
    ref = smooth_ece(lab, P, pos_label="a")
    acc = CalibrationAccumulator(pos_label="a", labels=["a", "b"])
    for c in _chunks(8000, 5):
        acc.partial_fit(lab[c], P[c])
    assert abs(acc.smooth_ece() - ref) < 1e-6
    # 1-D scores of the positive class, classes discovered from the data
    acc1 = _fit(lab, s, pos_label="a")
    assert abs(acc1.smooth_ece() - ref) < 1e-6
    # default pos_label: 1 of labels {0, 1}, decided after the data are seen
    acc2 = CalibrationAccumulator()
    acc2.partial_fit(np.zeros(10, dtype=int), s[:10])  # only the negative class
    acc2.partial_fit(y[10:].astype(int), s[10:])
    y_all = np.concatenate([np.zeros(10, dtype=int), y[10:].astype(int)])
    assert abs(acc2.smooth_ece() - smooth_ece(y_all, s)) < 1e-6


def test_single_class_with_inferable_partner():
    s = np.linspace(0, 1, 101)
    acc = CalibrationAccumulator().partial_fit(np.zeros(101), s)
    assert abs(acc.smooth_ece() - smooth_ece(np.zeros(101), s)) < 1e-6


def test_inputs_not_modified():
    y, s = _problem(1000)
    s32 = s.astype(np.float32)
    y0, s0 = y.copy(), s32.copy()
    CalibrationAccumulator().partial_fit(y, s32).smooth_ece()
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(s32, s0)


def test_errors():
    acc = CalibrationAccumulator()
    with pytest.raises(NotFittedError):
        acc.smooth_ece()
    acc.partial_fit([0, 1], [0.2, 0.7])
    with pytest.raises(ValueError, match="y_true"):
        acc.partial_fit([2, 2], [0.2, 0.7])  # a third class
    with pytest.raises(ValueError, match="y_true"):
        CalibrationAccumulator().partial_fit([0, 1, 2], [0.2, 0.7, 0.1])
    with pytest.raises(ValueError, match="inconsistent"):
        acc.partial_fit([0, 1], [0.2])
    with pytest.raises(ValueError, match="y_proba"):
        acc.partial_fit([0, 1], [0.2, 1.5])
    with pytest.raises(ValueError, match="y_proba"):
        acc.partial_fit([0, 1], [0.2, np.nan])
    with pytest.raises(ValueError, match="sample_weight"):
        acc.partial_fit([0, 1], [0.2, 0.3], sample_weight=[1, -1])
    with pytest.raises(ValueError, match="labels"):
        CalibrationAccumulator(labels=[0, 1]).partial_fit([0, 3], [0.2, 0.3])
    with pytest.raises(ValueError, match="labels"):
        CalibrationAccumulator(labels=[0, 1, 2]).partial_fit([0, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="pos_label"):
        CalibrationAccumulator(labels=[0, 1], pos_label=5).partial_fit([0], [0.2])
    with pytest.raises(ValueError, match="pos_label"):
        CalibrationAccumulator().partial_fit(["a", "b"], [0.2, 0.3])
    with pytest.raises(ValueError, match="single class"):
        CalibrationAccumulator(pos_label="a").partial_fit(
            ["a", "a"], [0.2, 0.3]
        ).smooth_ece()
    with pytest.raises(ValueError, match="pos_label"):
        acc.merge(CalibrationAccumulator(pos_label=0).partial_fit([0], [0.1]))
    with pytest.raises(TypeError, match="CalibrationAccumulator"):
        acc.merge("not an accumulator")
    with pytest.raises(ValueError, match="columns"):
        acc.partial_fit([0, 1], np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match="labels="):
        CalibrationAccumulator(pos_label=1).partial_fit([1, 1], [[0.3, 0.7]] * 2)
    with pytest.raises(ValueError, match="n_bins"):
        acc.binned_calibration_error(n_bins=0)
    with pytest.raises(ValueError, match="debias"):
        acc.binned_calibration_error(debias=True)
    with pytest.raises(ValueError, match="sigma"):
        acc.smooth_ece(sigma=0.0)


# -- two-pass certified NW bound ------------------------------------------------
from skcalib._backend.distributed import stream_folds  # noqa: E402
from skcalib.datasets import make_calibration_problem  # noqa: E402
from skcalib.metrics import StreamingCalibrationBound  # noqa: E402


def _two_pass(y, s, h, chunk=25_000, **kw):
    """Pass 1 then pass 2 over the same chunks."""
    sb = StreamingCalibrationBound(perturbation_scale=h, **kw)
    for i in range(0, y.shape[0], chunk):
        sb.partial_fit(y[i : i + chunk], s[i : i + chunk])
    for i in range(0, y.shape[0], chunk):
        sb.partial_validate(s[i : i + chunk])
    return sb


def test_stream_folds_deterministic_and_balanced():
    whole = stream_folds(0, 100_000, 7, 5)
    parts = np.concatenate(
        [stream_folds(0, 30_001, 7, 5), stream_folds(30_001, 69_999, 7, 5)]
    )
    np.testing.assert_array_equal(whole, parts)
    freq = np.bincount(whole, minlength=5) / whole.shape[0]
    assert np.all(np.abs(freq - 0.2) < 0.005)
    assert not np.array_equal(whole, stream_folds(0, 100_000, 8, 5))


def test_two_pass_terms_match_brute_force_window():
    h = 2**-4
    d = make_calibration_problem(
        3000, problem="overconfident", perturbation_scale=h, random_state=3
    )
    y, s = d.y_true.astype(float), d.y_proba
    sb = _two_pass(d.y_true, s, h, chunk=700, random_state=0)
    b = sb.result(return_details=True)
    M = 2**16
    fold = stream_folds(0, 3000, sb.seed_, 5)
    cell = np.minimum((s * M).astype(int), M - 1)
    lip1, lip2 = 1 / (2 * h), 3 / (2 * h * h)
    for k in range(5):
        r = sb.window_cells_[k]
        tr = fold != k
        errs, gs = [], []
        influence = np.zeros(s.shape[0])
        valid = np.flatnonzero(fold == k)
        for i in valid:
            inwin = tr & (np.abs(cell - cell[i]) <= r)
            if not inwin.any():
                errs.append(0.0)
                gs.append(1.0)
                continue
            diff = s[inwin] - s[i]
            errs.append(abs(y[inwin].mean() - s[i]))
            g = lip1 * abs(diff.mean()) + lip2 / 2 * np.mean(diff**2)
            g += 0.5 / np.sqrt(inwin.sum()) + 2 * lip1 * 2.0**-24
            gs.append(min(1.0, g))
            influence[inwin] += 1.0 / (inwin.sum() * valid.size)
        t = b.per_fold[k]["terms"]
        assert t["validation_error"] == pytest.approx(np.mean(errs), abs=1e-12)
        assert t["smoother_error"] == pytest.approx(np.mean(gs), abs=1e-12)
        # McDiarmid over the training labels at a third of the fold's delta.
        L = np.log(3 * 5 / 0.05)
        label = np.sqrt(L * np.sum(influence**2) / 2)
        assert t["label_deviation"] == pytest.approx(label, rel=1e-9)
        assert b.per_fold[k]["n_valid"] == len(errs)


@pytest.mark.parametrize(
    "problem, h", [("u2", 2**-4), ("overconfident", 2**-5), ("wiggle", 2**-6)]
)
def test_two_pass_bound_covers_true_ce(problem, h):
    d = make_calibration_problem(
        200_000, problem=problem, perturbation_scale=h, random_state=11
    )
    b = _two_pass(d.y_true, d.y_proba, h, chunk=50_000, random_state=0).result(
        return_details=True
    )
    assert b.lower <= d.calibration_error <= b.upper
    # Informative, not just <= 1 (the realised-fit terms cost about 0.01 here).
    assert b.upper - d.calibration_error < 0.045
    assert b.upper == pytest.approx(sum(b.terms.values()))
    assert b.upper == min(f["upper"] for f in b.per_fold)


@pytest.mark.slow
def test_two_pass_bound_coverage_over_seeds():
    h = 2**-5
    misses = 0
    for seed in range(12):
        d = make_calibration_problem(
            60_000, problem="overconfident", perturbation_scale=h, random_state=seed
        )
        b = _two_pass(
            d.y_true, d.y_proba, h, chunk=30_000, random_state=seed, delta=0.05
        ).result(return_details=True)
        misses += not (b.lower <= d.calibration_error <= b.upper)
    assert misses == 0  # expected misses are well below 1 (the bound is loose)


def test_two_pass_partitions_merge():
    h = 2**-4
    d = make_calibration_problem(
        40_000, problem="u2", perturbation_scale=h, random_state=2
    )
    y, s = d.y_true, d.y_proba
    whole = _two_pass(y, s, h, chunk=40_000, random_state=5)
    a = StreamingCalibrationBound(perturbation_scale=h, random_state=5)
    b = pickle.loads(pickle.dumps(a))
    a.partial_fit(y[:15_000], s[:15_000], start=0)
    b.partial_fit(y[15_000:], s[15_000:], start=15_000)
    a.merge(b)
    a2 = pickle.loads(pickle.dumps(a))
    a.partial_validate(s[15_000:], start=15_000)
    a2.partial_validate(s[:15_000], start=0)
    res = a.merge(a2).result(return_details=True)
    ref = whole.result(return_details=True)
    np.testing.assert_array_equal(a.window_cells_, whole.window_cells_)
    assert res.upper == pytest.approx(ref.upper, rel=1e-10)
    assert res.lower == pytest.approx(ref.lower, rel=1e-10)


def test_two_pass_errors():
    sb = StreamingCalibrationBound(perturbation_scale=2**-4, random_state=0)
    with pytest.raises(NotFittedError):
        sb.partial_validate([0.5])
    sb.partial_fit([0, 1] * 50, np.arange(100) / 128)
    with pytest.raises(NotFittedError):
        sb.result(return_details=True)
    sb.partial_validate(np.arange(60) / 128)
    with pytest.raises(ValueError, match="same stream"):
        sb.result(return_details=True)
    with pytest.raises(ValueError, match="pass 1"):
        sb.partial_fit([0, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="perturbation_scale"):
        StreamingCalibrationBound(perturbation_scale=-1).partial_fit([0, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="delta"):
        StreamingCalibrationBound(perturbation_scale=0.1, delta=1.5).partial_fit(
            [0, 1], [0.1, 0.2]
        )
    with pytest.raises(ValueError, match="y_true"):
        StreamingCalibrationBound(perturbation_scale=0.1).partial_fit(
            [0, 1, 2], [0.1, 0.2, 0.3]
        )
    # Checked before use, with the argument named (numpy used to complain
    # first, or a division by an underflowed h**2).
    nw = dict(perturbation_scale=0.1)
    with pytest.raises(TypeError, match="'n_splits' parameter.* an int"):
        StreamingCalibrationBound(**nw, n_splits=2.0).partial_fit([0, 1], [0.2, 0.8])
    with pytest.raises(ValueError, match=r"'n_splits' parameter.*\[2, 1000\]"):
        StreamingCalibrationBound(**nw, n_splits=-1).partial_fit([0, 1], [0.2, 0.8])
    with pytest.raises(ValueError, match=r"'perturbation_scale'.*\[2\*\*-16, 1\]"):
        StreamingCalibrationBound(perturbation_scale=1e-300).partial_fit(
            [0, 1], [0.2, 0.8]
        )
    with pytest.raises(ValueError, match=r"'start' parameter.*\[0, 2\*\*62\]"):
        StreamingCalibrationBound(method="tv").partial_fit(
            [0, 1], [0.2, 0.8], start=2**64
        )


def test_tv_kept_subset_is_data_independent_bottom_k():
    d = make_calibration_problem(30_000, problem="u2", random_state=0)
    y, s = d.y_true, d.y_proba
    a = _two_pass(y, s, None, chunk=7_000, method="tv", max_train=5_000, random_state=3)
    b = _two_pass(
        y, s, None, chunk=30_000, method="tv", max_train=5_000, random_state=3
    )
    from skcalib._backend.distributed import stream_priority

    pr = stream_priority(0, 30_000, a.seed_)
    want = np.sort(np.argsort(pr)[:5_000])
    for acc in (a, b):
        kept_s = acc.kept_[1][0]
        np.testing.assert_array_equal(np.sort(kept_s), np.sort(s[want]))


def test_tv_validation_terms_match_isotonic_reference():
    from sklearn.isotonic import IsotonicRegression

    d = make_calibration_problem(20_000, problem="overconfident", random_state=6)
    y, s = d.y_true.astype(float), d.y_proba
    sb = _two_pass(
        d.y_true,
        s,
        None,
        chunk=6_000,
        method="tv",
        assume="monotone",
        max_train=8_000,
        random_state=2,
    )
    b = sb.result(return_details=True)
    from skcalib._backend.distributed import stream_priority

    fold = stream_folds(0, 20_000, sb.seed_, 5)
    kept = np.argsort(stream_priority(0, 20_000, sb.seed_))[:8_000]
    for k in range(5):
        tr = kept[fold[kept] != k]
        iso = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")
        iso.fit(s[tr], y[tr])
        # step extension: value at the closest training score at or below
        order = np.argsort(s[tr], kind="stable")
        st, vt = s[tr][order], iso.predict(s[tr][order])
        sv = s[fold == k]
        j = np.clip(np.searchsorted(st, sv, side="right") - 1, 0, st.shape[0] - 1)
        ref = np.mean(np.abs(sv - vt[j]))
        got = b.per_fold[k]["terms"]["validation_error"]
        assert got == pytest.approx(ref, abs=1e-9)
        assert b.per_fold[k]["n_train"] == tr.shape[0]


@pytest.mark.parametrize(
    "problem, assume", [("u2", None), ("overconfident", "monotone"), ("step", None)]
)
def test_tv_two_pass_bound_covers_true_ce(problem, assume):
    d = make_calibration_problem(150_000, problem=problem, random_state=21)
    V = 1.0 if assume else d.total_variation
    b = _two_pass(
        d.y_true,
        d.y_proba,
        None,
        chunk=50_000,
        method="tv",
        variation=V,
        assume=assume,
        max_train=60_000,
        random_state=0,
    ).result(return_details=True)
    assert b.lower <= d.calibration_error <= b.upper
    assert b.upper < 0.5
    assert set(b.terms) == {
        "validation_error",
        "validation_deviation",
        "tv_estimation",
        "tv_transfer",
    }


def test_two_columns_follow_labels_order():
    # labels=[1, 0] puts the positive class (the greater label) in column 0,
    # as in the in-memory metrics; pos_label=None and pos_label=1 agree.
    y, s = _problem(6000, seed=21)
    P = np.column_stack([s, 1 - s])
    ref = smooth_ece(y, P, labels=[1, 0])
    assert abs(ref - smooth_ece(y, s)) < 1e-9
    for pos_label in (None, 1):
        acc = CalibrationAccumulator(labels=[1, 0], pos_label=pos_label)
        for c in _chunks(6000, 3):
            acc.partial_fit(y[c], P[c])
        assert abs(acc.smooth_ece() - ref) < 1e-6


def test_chunks_of_zero_weight():
    # A chunk whose weights are all zero is a valid part of a stream; only a
    # stream without any weight has no metric.
    y, s = _problem(3000, seed=22)
    w = np.r_[np.ones(2000), np.zeros(1000)]
    acc = CalibrationAccumulator()
    acc.partial_fit(y[:2000], s[:2000], sample_weight=w[:2000])
    acc.partial_fit(y[2000:], s[2000:], sample_weight=w[2000:])
    assert abs(acc.smooth_ece() - smooth_ece(y[:2000], s[:2000])) < 1e-6
    empty = CalibrationAccumulator().partial_fit(y, s, sample_weight=np.zeros(3000))
    with pytest.raises(ValueError, match="sample_weight must have a positive sum"):
        empty.smooth_ece()


def test_streaming_bound_merge_rejects_disagreeing_classes():
    rng = np.random.default_rng(3)
    s = rng.uniform(size=400)
    a = StreamingCalibrationBound(method="tv", random_state=0)
    b = StreamingCalibrationBound(method="tv", random_state=0)
    b = StreamingCalibrationBound(method="tv", pos_label=2, random_state=0)
    a.partial_fit(np.full(200, 1), s[:200])  # read as labels {0, 1}
    b.partial_fit(np.r_[np.full(100, 1), np.full(100, 2)], s[200:], start=200)
    with pytest.raises(ValueError, match="resolved different classes"):
        a.merge(b)
    # A fresh object takes the classes of what it merges.
    c = StreamingCalibrationBound(method="tv", random_state=0).merge(b)
    assert c.classes_.tolist() == [1, 2]


@pytest.mark.parametrize(
    "other", [dict(delta=0.1), dict(perturbation_scale=0.2), dict(n_splits=3)]
)
def test_streaming_bound_merge_rejects_other_bound_parameters(other):
    # Merged silently, the result carried one partition's delta or scale.
    params = dict(method="nw", perturbation_scale=0.1, random_state=0)
    s = np.arange(200) / 256  # on the perturbation grid
    y = np.arange(200) % 2
    a = StreamingCalibrationBound(**params).partial_fit(y[:100], s[:100])
    b = StreamingCalibrationBound(**{**params, **other})
    b.partial_fit(y[100:], s[100:], start=100)
    with pytest.raises(ValueError, match="Cannot merge"):
        a.merge(b)


def test_chunks_of_text_and_numeric_labels_do_not_mix():
    # numpy would have turned 0 and 1 into "0" and "1" and merged the classes.
    acc = CalibrationAccumulator().partial_fit([0, 1], [0.2, 0.8])
    with pytest.raises(TypeError, match="not of the type of the labels seen"):
        acc.partial_fit(["0", "1"], [0.2, 0.8])
    other = CalibrationAccumulator().partial_fit(["0", "1"], [[0.8, 0.2], [0.2, 0.8]])
    with pytest.raises(TypeError, match="other labels"):
        acc.merge(other)
    # Booleans and 0/1 integers stay one class set, as in the in-memory metrics.
    mixed = CalibrationAccumulator().partial_fit([True, False], [0.8, 0.2])
    assert mixed.partial_fit([1], [0.7]).classes_.tolist() == [0, 1]


def test_streaming_bound_refuses_a_tiny_max_train_at_the_first_fit():
    y, s = _problem(1_000)
    sb = StreamingCalibrationBound(method="tv", max_train=2, random_state=0)
    with pytest.raises(ValueError, match="max_train"):
        sb.partial_fit(y, s)
    assert not hasattr(sb, "n_samples_")


def test_cell_moments_of_unit_and_general_weights_match_a_loop():
    """The five moments per cell and slot against a loop over the samples,
    with scores on cell edges, 0 and 1 (the extra cell of the key)."""
    from skcalib._backend.distributed import add_cell_moments, empty_moments

    M = 2**16
    rng = np.random.default_rng(0)
    s = np.concatenate([rng.uniform(size=500), [0.0, 0.0, 1.0, 0.5, 3 / M, 2**-20]])
    slot = rng.integers(0, 2, size=s.shape[0])
    for w in (None, rng.exponential(size=s.shape[0])):
        got = add_cell_moments(empty_moments(M), slot, s, w)
        want = np.zeros_like(got)
        for i, v in enumerate(s):
            cell = max(int(np.ceil(v * M)) - 1, 0)  # (j/M, (j+1)/M], 0 in cell 0
            theta = v * M - cell
            wi = 1.0 if w is None else w[i]
            want[:, slot[i], cell] += [wi, wi * theta, wi * theta**2, 1.0, wi * wi]
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
