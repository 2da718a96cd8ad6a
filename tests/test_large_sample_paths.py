"""The chunked large-sample paths equal direct computations.

Binned errors, quantile edges and top-label reductions take cache-sized
chunks and histogram selection above a few 1e5 rows; here they are compared
with brute-force loops written in the test (bins by explicit comparisons,
exact sums by ``math.fsum``) and with numpy's own reductions.
"""

import math

import numpy as np
import pytest

from skcalib._backend import smece as _sm
from skcalib._backend import top_label
from skcalib._backend.binning import SELECT_MIN, percentile_edges
from skcalib._backend.grid import calibration_statistics
from skcalib._backend.top_label import top_label_task
from skcalib._validation import (
    PROBA_TOL,
    ROW_SUM_TOL,
    binary_tasks,
    check_calibration_inputs,
)
from skcalib.metrics import binned_calibration_error, smooth_ece

N = SELECT_MIN + 12_345  # above the thresholds, several chunks


def _scores(kind, n, rng):
    """Adversarial score sets: smooth, skewed, discrete, ties on edges, only
    0 and 1, a tight cluster."""
    if kind == "beta":
        return rng.beta(2, 5, size=n)
    if kind == "skewed":
        return rng.beta(0.2, 4, size=n)
    if kind == "discrete":
        return rng.integers(0, 7, size=n) / 6.0
    if kind == "edges":
        return rng.choice(np.arange(16) / 15, size=n)
    if kind == "zero_one":
        return (rng.uniform(size=n) < 0.3).astype(float)
    return 0.5 + 1e-9 * rng.standard_normal(n)


KINDS = ["beta", "skewed", "discrete", "edges", "zero_one", "cluster"]


@pytest.mark.parametrize("kind", KINDS)
def test_percentile_edges_are_numpys_bit_for_bit(kind):
    s = _scores(kind, N, np.random.default_rng(KINDS.index(kind)))
    for n_bins in (2, 7, 15, 40):
        q = np.linspace(0.0, 1.0, n_bins + 1)
        np.testing.assert_array_equal(percentile_edges(s, q), np.percentile(s, q * 100))


def _brute_table(y, s, edges):
    """Bins by explicit comparisons (first bin ``[e0, e1]``, then ``(e_k,
    e_k+1]``) and exact sums."""
    B = edges.shape[0] - 1
    rows = []
    for k in range(B):
        member = s <= edges[k + 1] if k == 0 else (s > edges[k]) & (s <= edges[k + 1])
        if k == B - 1:
            member = s > edges[k] if k else np.ones_like(s, dtype=bool)
        c = int(member.sum())
        if c:
            rows.append((k, c, math.fsum(y[member]) / c, math.fsum(s[member]) / c))
    return rows


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("kind", KINDS)
def test_large_binned_table_is_the_brute_force(strategy, kind):
    rng = np.random.default_rng(100 + KINDS.index(kind))
    s = _scores(kind, N, rng)
    y = (rng.uniform(size=N) < s).astype(float)
    s_before, y_before = s.copy(), y.copy()
    res = binned_calibration_error(
        y, s, n_bins=15, strategy=strategy, return_details=True
    )
    np.testing.assert_array_equal(s, s_before)
    np.testing.assert_array_equal(y, y_before)
    if strategy == "uniform":
        edges = np.array([k / 15 for k in range(16)])
    else:
        edges = np.percentile(s, np.linspace(0, 1, 16) * 100)
    np.testing.assert_array_equal(res.edges, edges)
    ref = _brute_table(y, s, edges)
    np.testing.assert_array_equal(res.bin, [r[0] for r in ref])
    np.testing.assert_array_equal(res.count, [r[1] for r in ref])
    np.testing.assert_allclose(res.mean_label, [r[2] for r in ref], rtol=1e-13)
    np.testing.assert_allclose(res.mean_score, [r[3] for r in ref], rtol=1e-11)
    counts = np.array([r[1] for r in ref])
    gaps = np.abs(np.array([r[2] - r[3] for r in ref]))
    assert res.value == pytest.approx(math.fsum(counts * gaps) / N, abs=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("kind", KINDS)
def test_unweighted_binned_error_is_the_unit_weighted_one(strategy, kind):
    # no weights (no array of ones is made), unit weights given as an array,
    # and integer weights with zeros against the rows they keep
    rng = np.random.default_rng(200 + KINDS.index(kind))
    s = _scores(kind, N, rng)
    y = (rng.uniform(size=N) < s).astype(float)
    for norm in ("l1", "l2", "max"):
        kw = dict(n_bins=15, strategy=strategy, norm=norm)
        plain = binned_calibration_error(y, s, **kw)
        ones = binned_calibration_error(y, s, sample_weight=np.ones(N), **kw)
        if strategy == "uniform":
            assert plain == ones
        else:  # sum s of a bin is added per cell first (quantile_table)
            assert plain == pytest.approx(ones, rel=0, abs=1e-15)
    w = rng.integers(0, 3, size=N).astype(float)
    keep = w > 0
    kw = dict(n_bins=15, strategy="uniform")
    assert binned_calibration_error(
        y, s, sample_weight=w, **kw
    ) == binned_calibration_error(y[keep], s[keep], sample_weight=w[keep], **kw)


def test_weighted_large_table_is_the_brute_force():
    rng = np.random.default_rng(7)
    s = rng.beta(2, 3, size=N)
    y = (rng.uniform(size=N) < s).astype(float)
    w = rng.uniform(0.1, 3.0, size=N)
    res = binned_calibration_error(
        y, s, n_bins=15, sample_weight=w, return_details=True
    )
    edges = np.arange(16) / 15
    b = np.minimum(np.maximum(np.ceil(s * 15).astype(int) - 1, 0), 14)
    for j, k in enumerate(res.bin):
        m = b == k
        sw = math.fsum(w[m])
        assert res.weight[j] == pytest.approx(sw, rel=1e-13)
        assert res.mean_label[j] == pytest.approx(
            math.fsum(w[m] * y[m]) / sw, rel=1e-12
        )
        assert res.mean_score[j] == pytest.approx(
            math.fsum(w[m] * s[m]) / sw, rel=1e-12
        )
    np.testing.assert_array_equal(res.edges, edges)


def test_float_labels_are_not_exposed_for_writing():
    rng = np.random.default_rng(1)
    y = (rng.uniform(size=1000) < 0.5).astype(float)
    data = check_calibration_inputs(y, rng.uniform(size=1000))
    np.testing.assert_array_equal(data.y, y)
    assert not (np.shares_memory(data.y, y) and data.y.flags.writeable)
    # other labels are compared with pos_label, not copied
    d2 = check_calibration_inputs(2.0 * y, rng.uniform(size=1000), pos_label=2.0)
    np.testing.assert_array_equal(d2.y, y)


def _brute_top_label(P, y):
    """Per-row reference: the first column holding the row's maximum."""
    correct, conf = np.empty(P.shape[0]), np.empty(P.shape[0])
    for i, row in enumerate(P.tolist()):
        top = max(row)
        conf[i] = top
        correct[i] = float(row.index(top) == int(y[i]))
    return correct, conf


def _tied_rows(k, n, rng):
    """Dirichlet rows (each summing to 1) with two-way, k-way and last-column
    ties of the maximum, exact 0/1 rows (one-hot), and ties below the
    maximum."""
    P = rng.dirichlet(np.ones(k), size=n)
    P[::7, :2] = P[::7, :2].sum(axis=1, keepdims=True) / 2  # two-way ties
    P[::11] = 1.0 / k  # all tied
    last = P[::13]
    last[:, -1] = last.max(axis=1)  # last column tied with the max
    P[::13] = last / last.sum(axis=1, keepdims=True)
    P[5::17] = np.eye(k)[rng.integers(0, k, size=P[5::17].shape[0])]  # 0 and 1
    below = P[3::19]
    below[:] = 0.4 / (k - 1)  # equal values below the maximum
    below[np.arange(below.shape[0]), rng.integers(0, k, size=below.shape[0])] = 0.6
    P[3::19] = below
    return P


@pytest.mark.parametrize("k", [2, 3, 4, 5, 10, 31, 32, 33, 50])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "float32"])
def test_top_label_task_is_first_argmax_with_ties(k, layout):
    rng = np.random.default_rng(k)
    n = 40_000 if k <= 10 else 9_000
    P = _tied_rows(k, n, rng)
    # every class index, and labels on the tied columns
    y = rng.integers(0, k, size=n)
    y[::7] = rng.integers(0, 2, size=y[::7].shape[0])
    correct_ref, conf_ref = _brute_top_label(P, y)
    if layout == "F":
        P = np.asfortranarray(P)
    elif layout == "strided":
        wide = np.zeros((n, 2 * k))
        wide[:, ::2] = P
        P = wide[:, ::2]
    elif layout == "float32":
        # rows that sum to 1 in float32 within the tolerance; the reference is
        # that of the float64 values the float32 ones are
        P = P.astype(np.float32)
        correct_ref, conf_ref = _brute_top_label(P.astype(np.float64), y)
    before = P.copy()
    if k == 2:  # two columns are a binary problem: the reduction itself
        correct, conf = top_label_task(P, y)
    else:
        data = check_calibration_inputs(y, P, labels=np.arange(k))
        ((correct, conf, _),) = binary_tasks(data, "top-label")
        # reduced while the matrix is checked: the same numbers
        fused = check_calibration_inputs(y, P, labels=np.arange(k), top_label=True)
        np.testing.assert_array_equal(fused.proba, data.proba)
        ((fused_correct, fused_conf, _),) = binary_tasks(fused, "top-label")
        np.testing.assert_array_equal(fused_conf, conf_ref)
        np.testing.assert_array_equal(fused_correct, correct_ref)
    np.testing.assert_array_equal(conf, conf_ref)
    np.testing.assert_array_equal(correct, correct_ref)
    np.testing.assert_array_equal(P, before)  # the input is not written


def _bad_matrices(k, n, rng):
    """Matrices that fail one value check (in a late block), and one whose
    values just outside [0, 1] are clipped."""
    P = rng.dirichlet(np.ones(k), size=n)
    for value in (np.nan, np.inf, -np.inf, 1.5, -0.2):
        bad = P.copy()
        bad[n - 3, 1] = value
        yield "bad", bad
    bad = P.copy()
    bad[n - 5] *= 1.01  # a row summing to 1.01
    yield "bad", bad
    clipped = P.copy()
    clipped[n - 7, :] = 0.0
    clipped[n - 7, 2] = 1.0 + 5e-9  # within the tolerance: clipped to 1
    clipped[n - 9, 1] += clipped[n - 9, 0] + 5e-9
    clipped[n - 9, 0] = -5e-9
    yield "clipped", clipped


@pytest.mark.parametrize("k", [3, 10, 40])
def test_top_label_checks_are_those_of_the_plain_checks(k):
    rng = np.random.default_rng(k)
    n = 50_000
    y = rng.integers(0, k, size=n)
    for outcome, P in _bad_matrices(k, n, rng):
        before = P.copy()
        if outcome == "bad":
            with pytest.raises(ValueError) as plain:
                check_calibration_inputs(y, P, labels=np.arange(k))
            with pytest.raises(ValueError) as fused:
                check_calibration_inputs(y, P, labels=np.arange(k), top_label=True)
            assert str(fused.value) == str(plain.value)
        else:
            data = check_calibration_inputs(y, P, labels=np.arange(k), top_label=True)
            assert data.proba.min() == 0.0 and data.proba.max() == 1.0
            np.testing.assert_array_equal(
                binary_tasks(data, "top-label")[0][:2], _brute_top_label(data.proba, y)
            )
        np.testing.assert_array_equal(P, before)  # the input is not written


def test_top_label_task_is_the_argmax_one():
    rng = np.random.default_rng(3)
    n, k = 20_000, 6
    P = rng.dirichlet(np.ones(k), size=n)
    y = rng.integers(0, k, size=n)
    data = check_calibration_inputs(y, P)
    ((correct, conf, _),) = binary_tasks(data, "top-label")
    pred = P.argmax(axis=1)
    np.testing.assert_array_equal(correct, (pred == y).astype(float))
    np.testing.assert_array_equal(conf, P.max(axis=1))


def test_logit_positions_are_the_formula():
    g = _sm.GridGeometry("logit")
    s = np.concatenate([np.random.default_rng(0).uniform(size=5000), [0, 1, 1e-300]])
    c = np.clip(s, _sm.LOGIT_EPS, 1 - _sm.LOGIT_EPS)
    ref = (np.log(c / (1 - c)) - g.lo) / g.length
    np.testing.assert_array_equal(g.to_unit(s), ref)
    # one logarithm of the quotient is as accurate as the difference of two:
    # within a few ulps of the logit (about 1e-15 of the positions here)
    two_logs = (np.log(c) - np.log1p(-c) - g.lo) / g.length
    np.testing.assert_allclose(g.to_unit(s), two_logs, rtol=0, atol=1e-15)
    # the buffered form writes the same numbers
    out, tmp = np.empty_like(s), np.empty_like(s)
    np.testing.assert_array_equal(g.to_unit(s, out, tmp), ref)


def test_unit_weight_statistics_are_the_weighted_ones():
    rng = np.random.default_rng(4)
    s = rng.uniform(size=300_000)
    y = (rng.uniform(size=s.shape[0]) < s).astype(float)
    u = _sm.GridGeometry("logit").to_unit(s)
    for pos, scores in ((s, None), (u, s)):
        one = calibration_statistics(y, pos, np.ones_like(s), 4096, scores=scores)
        # doubling every weight doubles every sum exactly (weighted path)
        two = calibration_statistics(y, pos, np.full_like(s, 2.0), 4096, scores=scores)
        np.testing.assert_array_equal(one, two / 2)
        # no weights at all: the unit-weight sums, bit for bit
        none = calibration_statistics(y, pos, None, 4096, scores=scores)
        np.testing.assert_array_equal(none, one)


@pytest.mark.parametrize("metric", ["l1", "logit"])
def test_unweighted_smooth_ece_is_the_unit_weighted_one(metric):
    # adversarial scores (exact 0 and 1, ties, edges) and a 10-class matrix
    # with tied maxima: without weights the fit gets None, not ones
    rng = np.random.default_rng(5)
    for kind in ("zero_one", "edges", "discrete", "beta"):
        s = _scores(kind, N, rng)
        y = (rng.uniform(size=N) < s).astype(int)
        plain = smooth_ece(y, s, metric=metric)
        assert plain == smooth_ece(y, s, metric=metric, sample_weight=np.ones(N))
    P = _tied_rows(10, 60_000, rng)
    y = rng.integers(0, 10, size=60_000)
    for multi_class in ("top-label", "classwise"):
        kw = dict(metric=metric, multi_class=multi_class)
        plain = smooth_ece(y, P, **kw)
        assert plain == smooth_ece(y, P, sample_weight=np.ones(60_000), **kw)


def _two_pass_fit(y, s, w, geometry):
    """The bandwidth search with a direct binning on every grid it tries."""
    M = _sm.FIRST_PASS_M
    while True:
        stats = _sm.statistics(y, s, w, geometry, M)
        sig = _sm.solve_sigma(stats, geometry)
        need = geometry.grid_size(0.8 * sig, _sm.FINE_M)
        if need <= M:
            return _sm.self_consistent_value(stats, sig), stats
        M = need


@pytest.mark.parametrize("seed", [0, 1])
def test_logit_fit_from_one_binning_is_the_direct_search(seed):
    rng = np.random.default_rng(seed)
    n, k = 60_000, 10
    logits = 2.0 * rng.standard_normal((n, k))
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    y = rng.integers(0, k, size=n)
    data = check_calibration_inputs(y, P)
    ((c, s, w),) = binary_tasks(data, "top-label")
    geometry = _sm.GridGeometry("logit")
    value, _, stats = _sm.fit(c, s, w, geometry)
    ref_value, ref_stats = _two_pass_fit(c, s, w, geometry)
    assert value == pytest.approx(ref_value, rel=1e-9)
    got = stats.at(stats.fine_m)
    assert got.shape == ref_stats.shape
    np.testing.assert_allclose(got, ref_stats, rtol=1e-9, atol=1e-9 * ref_stats.max())


def _edge_rows(k, n, rng):
    """Tied rows, and rows summing to 1 within a few units of 2**-53 of the
    tolerance on either side (a sum's last bits depend on the order it is
    added in)."""
    P = _tied_rows(k, n, rng)
    P[1::23] = 1.0 / (k - 1)
    P[1::23, 0] = -0.0
    for j, step in enumerate(range(-6, 7, 2)):
        P[29 + j, 0] += ROW_SUM_TOL + step * np.finfo(float).eps
        P[31 + j, 0] -= ROW_SUM_TOL + step * np.finfo(float).eps
    return P


def _layout(P, layout):
    if layout == "F":
        return np.asfortranarray(P)
    if layout == "strided":
        wide = np.zeros((P.shape[0], 2 * P.shape[1]))
        wide[:, ::2] = P
        return wide[:, ::2]
    if layout == "float32":
        return P.astype(np.float32)
    if layout == "read-only":
        P = P.copy()
        P.flags.writeable = False
    return P


def _fused_outcome(y, P, k):
    """The checked matrix and its top-label problem, or the error's text."""
    try:
        data = check_calibration_inputs(y, P, labels=np.arange(k), top_label=True)
    except ValueError as exc:
        return str(exc)
    return (data.proba, *binary_tasks(data, "top-label")[0][:2])


@pytest.mark.skipif(not top_label.HAVE_NUMBA, reason="needs numba")
@pytest.mark.parametrize("k", [3, 10, 32])
@pytest.mark.parametrize("layout", ["C", "F", "strided", "float32", "read-only"])
def test_compiled_top_label_scan_is_the_numpy_one(monkeypatch, k, layout):
    # The compiled scan gives the numpy passes' reduction, checked matrix
    # and errors, bit for bit: ties of the maximum, exact 0 and 1, 1/K,
    # -0.0, values outside [0, 1] (clipped or not), NaN and infinity, and
    # row sums at the tolerance, in every layout; the input is not written.
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    rng = np.random.default_rng(k)
    n = 20_003  # four stretches of rows, and three rows after them
    y = rng.integers(0, k, size=n)
    matrices = [P for _, P in _bad_matrices(k, n, rng)]
    matrices.append(_edge_rows(k, n, rng))
    # Valid rows whose checks pass with a margin: the compiled scan's own
    # results reach the caller (the others fall back to the numpy scan).
    matrices.append(_tied_rows(k, n, rng))
    for P in matrices:
        P = _layout(P, layout)
        before = P.copy()
        monkeypatch.setattr(top_label, "_COMPILED_MIN_SIZE", 0)
        compiled = _fused_outcome(y, P, k)
        with monkeypatch.context() as patch:
            patch.setattr(top_label, "_compiled_loop", lambda: None)
            passes = _fused_outcome(y, P, k)
        if isinstance(passes, str):
            assert compiled == passes
        else:
            for a, b in zip(compiled, passes, strict=True):
                np.testing.assert_array_equal(a, b)
                assert np.signbit(a).tolist() == np.signbit(b).tolist()
        np.testing.assert_array_equal(P, before)
    # The scan's own results: the reduction and the extremes of the values
    # are the numpy ones, the row sums within rounding.
    P = _layout(_tied_rows(k, n, rng), layout)
    y = y.astype(np.intp)
    compiled = top_label._compiled_scan(P, y, PROBA_TOL, ROW_SUM_TOL)
    passes = top_label._reduce(P, y, scan=True)
    for a, b in zip(compiled[:4], passes[:4], strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(compiled[4:], passes[4:], rtol=0, atol=1e-14)
