"""calibration_test: each statistic against a reference written here, the
exact p-values against a brute-force simulation of the same draws, the
asymptotic laws against simulation, and the size of every test under H0."""

import numpy as np
import pytest
from scipy import stats

from skcalib._backend import smece as _sm
from skcalib._backend.calibration_tests import brownian_max_abs_sf, brownian_range_sf
from skcalib._backend.consistency import SmoothECEStatistic
from skcalib.metrics import (
    binned_calibration_error,
    calibration_test,
    smooth_ece,
)


def _problem(n, seed, *, kind="uniform", calibrated=True):
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        p = rng.uniform(size=n)
    elif kind == "ties":  # a discrete model: nine distinct scores
        p = rng.integers(1, 10, n) / 10.0
    elif kind == "ends":  # scores at exactly 0 and 1 among others
        p = rng.uniform(size=n)
        p[rng.uniform(size=n) < 0.2] = 0.0
        p[rng.uniform(size=n) < 0.2] = 1.0
    elif kind == "rare":  # rare positives: mean score 0.0025
        p = rng.beta(0.5, 200.0, n)
    elif kind == "extreme":  # most scores near 0 or 1
        p = rng.beta(0.2, 0.2, n)
    else:
        raise ValueError(kind)
    q = p if calibrated else 0.5 + 0.6 * (p - 0.5)
    y = (rng.uniform(size=n) < q).astype(float)
    return y, p


def _seed_sequence(random_state):
    """The documented seeding: four 32-bit words of
    ``default_rng(random_state)``."""
    words = np.random.default_rng(random_state).integers(0, 2**32, size=4)
    return np.random.SeedSequence([int(x) for x in words])


# ---------------------------------------------------------------- references


def _z_by_hand(y, p, w, q):
    rows = list(zip(y, p, w, q, strict=True))
    num = sum(wi * (yi - pi) * (1 - 2 * pi) for yi, pi, wi, _ in rows)
    var = sum(qi * (1 - 2 * pi) ** 2 * pi * (1 - pi) for _, pi, _, qi in rows)
    return num / np.sqrt(var)


def test_spiegelhalter_by_hand():
    y, p = _problem(500, 0, kind="ties", calibrated=False)
    w = np.random.default_rng(1).uniform(0.5, 2.0, y.size)
    # one label per row: the variance weights are w^2
    z = _z_by_hand(y, p, w, w * w)
    res = calibration_test(
        y, p, method="spiegelhalter", sample_weight=w, pvalue_method="asymptotic"
    )
    assert res.statistic == pytest.approx(z, rel=1e-12)
    assert res.pvalue == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-10)
    assert res.pvalue_method == "asymptotic" and res.n_resamples is None
    # a row of frequency weight w is w observations: variance weights w
    wi = np.random.default_rng(2).integers(1, 5, y.size)
    z = _z_by_hand(y, p, wi, wi)
    res = calibration_test(
        y,
        p,
        method="spiegelhalter",
        sample_weight=wi,
        sample_weight_kind="frequency",
        pvalue_method="asymptotic",
    )
    assert res.statistic == pytest.approx(z, rel=1e-12)


def _groups(p, n_bins=10):
    """Deciles of risk as numpy's percentiles, the bin rule of
    calibration_curve (interior edges belong to the bin below)."""
    edges = np.percentile(p, np.linspace(0, 100, n_bins + 1))
    return np.searchsorted(edges[1:-1], p, side="left")


def _chi2_by_hand(y, p, kind, n_bins=10):
    g = _groups(p, n_bins)
    total, dof = 0.0, 0
    for k in np.unique(g):
        inside = g == k
        o, e, m = y[inside].sum(), p[inside].sum(), inside.sum()
        exact_var = np.sum(p[inside] * (1 - p[inside]))
        if exact_var == 0:
            assert o == e
            continue
        dof += 1
        var = exact_var if kind == "pigeon-heyse" else e * (1 - e / m)
        total += (o - e) ** 2 / var
    return total, dof


@pytest.mark.parametrize("kind", ["hosmer-lemeshow", "pigeon-heyse"])
def test_grouped_chi_squares_by_hand(kind):
    y, p = _problem(1000, 2, calibrated=False)
    chi2, dof = _chi2_by_hand(y, p, kind)
    res = calibration_test(y, p, method=kind, pvalue_method="asymptotic")
    assert res.statistic == pytest.approx(chi2, rel=1e-12)
    assert res.dof == dof == 10
    assert res.pvalue == pytest.approx(stats.chi2.sf(chi2, 10), rel=1e-10)


@pytest.mark.slow  # pycaleva's import takes ~15 s
def test_grouped_chi_squares_against_pycaleva():
    pycaleva = pytest.importorskip("pycaleva")
    y, p = _problem(2000, 3, calibrated=False)
    ce = pycaleva.CalibrationEvaluator(y, p, outsample=True, n_groups=10)
    hl = ce.hosmerlemeshow(verbose=False)
    ph = ce.pigeonheyse(verbose=False)
    for ref, kind in ((hl, "hosmer-lemeshow"), (ph, "pigeon-heyse")):
        res = calibration_test(y, p, method=kind, pvalue_method="asymptotic")
        assert res.statistic == pytest.approx(ref.statistic, rel=1e-10)
        assert res.dof == ref.dof
        assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-15)


def test_hosmer_lemeshow_dof_counts_groups_of_positive_null_variance():
    # 30 % of the scores are exactly 0 and 20 % exactly 1: their groups have
    # no null variance (the labels are fixed), so they add neither a term
    # nor a degree of freedom.
    rng = np.random.default_rng(4)
    p = rng.uniform(size=600)
    p[:180] = 0.0
    p[180:300] = 1.0
    y = (rng.uniform(size=600) < p).astype(float)
    g = _groups(p)
    inner = [k for k in np.unique(g) if np.any((p[g == k] > 0) & (p[g == k] < 1))]
    for method in ("hosmer-lemeshow", "pigeon-heyse"):
        res = calibration_test(y, p, method=method, pvalue_method="asymptotic")
        chi2, dof = _chi2_by_hand(y, p, method)
        assert res.dof == dof == len(inner) < len(np.unique(g))
        assert res.statistic == pytest.approx(chi2, rel=1e-12)
        assert res.pvalue == pytest.approx(stats.chi2.sf(chi2, dof), rel=1e-10)
    # A label that contradicts a score of 0 is impossible under the null.
    y[0] = 1.0
    res = calibration_test(y, p, method="hosmer-lemeshow", pvalue_method="asymptotic")
    assert res.statistic == np.inf and res.pvalue == 0.0


def test_frequency_weights_are_repeated_rows():
    # Aggregated counts read as frequency weights: every statistic, its
    # degrees of freedom and its asymptotic p-value are those of the
    # repeated rows (the groups are the quantiles of the repeated rows).
    rng = np.random.default_rng(5)
    p = np.round(rng.uniform(0.02, 0.98, 300), 3)
    y = (rng.uniform(size=300) < 0.5 + 0.8 * (p - 0.5)).astype(float)
    w = rng.integers(0, 6, 300)
    w[0] = 1
    yr, pr = np.repeat(y, w), np.repeat(p, w)
    for method in ("hosmer-lemeshow", "pigeon-heyse", "spiegelhalter", "ks", "kuiper"):
        a = calibration_test(
            y,
            p,
            method=method,
            sample_weight=w,
            sample_weight_kind="frequency",
            pvalue_method="asymptotic",
        )
        b = calibration_test(yr, pr, method=method, pvalue_method="asymptotic")
        assert a.statistic == pytest.approx(b.statistic, rel=1e-12), method
        assert a.pvalue == pytest.approx(b.pvalue, rel=1e-9), method
        assert a.dof == b.dof
    for statistic in ("brier", "binned_ece", "skce", "smooth_ece"):
        a = calibration_test(
            y,
            p,
            statistic=statistic,
            sample_weight=w,
            sample_weight_kind="frequency",
            n_resamples=9,
            random_state=0,
        )
        b = calibration_test(yr, pr, statistic=statistic, n_resamples=9)
        assert a.statistic == pytest.approx(b.statistic, rel=1e-10, abs=1e-15)


def test_frequency_quantile_edges_are_the_repeated_rows_percentiles():
    from skcalib._backend.calibration_tests.statistics import (
        frequency_quantile_edges,
    )

    rng = np.random.default_rng(6)
    for n in (5, 40, 700):
        s = np.sort(np.round(rng.uniform(size=n), 2))
        w = rng.integers(0, 7, n)
        w[-1] = 3
        for n_bins in (2, 7, 10):
            want = np.percentile(np.repeat(s, w), np.linspace(0, 100, n_bins + 1))
            got = frequency_quantile_edges(s, w, n_bins)
            np.testing.assert_array_equal(got, want)


def _walk_by_hand(y, p, w, q):
    """Cumulative differences read at the end of each block of equal scores."""
    order = np.lexsort((w, p))
    c, path = 0.0, [0.0]
    ps, ys, ws = p[order], y[order], w[order]
    for i in range(len(ps)):
        c += ws[i] * (ys[i] - ps[i])
        if i == len(ps) - 1 or ps[i + 1] != ps[i]:
            path.append(c)
    sd = np.sqrt(np.sum(q * p * (1 - p)))
    path = np.array(path)
    return np.abs(path).max() / sd, (path.max() - path.min()) / sd


@pytest.mark.parametrize("kind", ["uniform", "ties"])
@pytest.mark.parametrize("weights", ["none", "importance"])
def test_ks_and_kuiper_statistics_by_hand(kind, weights):
    y, p = _problem(400, 3, kind=kind, calibrated=False)
    w = np.ones(y.size)
    if weights == "importance":
        w = np.random.default_rng(7).uniform(0.3, 3.0, y.size)
    ks, ku = _walk_by_hand(y, p, w, w * w)
    kw = dict(sample_weight=w, pvalue_method="asymptotic")
    res = calibration_test(y, p, method="ks", **kw)
    assert res.statistic == pytest.approx(ks, rel=1e-12)
    assert res.pvalue == pytest.approx(brownian_max_abs_sf(ks), rel=1e-12)
    res = calibration_test(y, p, method="kuiper", **kw)
    assert res.statistic == pytest.approx(ku, rel=1e-12)
    assert res.pvalue == pytest.approx(brownian_range_sf(ku), rel=1e-12)


@pytest.mark.slow
def test_brownian_laws_against_simulation():
    # Gaussian random walks of 4000 steps: their maximum of |B| and range.
    rng = np.random.default_rng(0)
    n_walks, steps = 20000, 4000
    mx = np.empty(n_walks)
    rg = np.empty(n_walks)
    for i in range(0, n_walks, 1000):
        b = np.cumsum(rng.standard_normal((1000, steps)), axis=1) / np.sqrt(steps)
        b = np.concatenate([np.zeros((1000, 1)), b], axis=1)
        mx[i : i + 1000] = np.abs(b).max(axis=1)
        rg[i : i + 1000] = b.max(axis=1) - b.min(axis=1)
    for x in (0.8, 1.2, 1.8, 2.5):
        emp = np.mean(mx > x)
        se = np.sqrt(emp * (1 - emp) / n_walks)
        # The discrete walk's maximum is slightly below the continuous one.
        assert abs(brownian_max_abs_sf(x) - emp) < 4 * se + 0.01
    for x in (1.2, 1.8, 2.5, 3.2):
        emp = np.mean(rg > x)
        se = np.sqrt(emp * (1 - emp) / n_walks)
        assert abs(brownian_range_sf(x) - emp) < 4 * se + 0.01


def test_brownian_laws_closed_form_means():
    # E sup|B| = sqrt(pi / 2) and E range = 2 sqrt(2 / pi) (Feller, 1951).
    from scipy.integrate import quad

    m1 = quad(brownian_max_abs_sf, 0, 20, limit=200)[0]
    m2 = quad(brownian_range_sf, 0, 20, limit=200)[0]
    assert m1 == pytest.approx(np.sqrt(np.pi / 2), rel=1e-8)
    assert m2 == pytest.approx(2 * np.sqrt(2 / np.pi), rel=1e-8)
    # The two series of each law meet where they switch.
    assert brownian_max_abs_sf(1 - 1e-12) == pytest.approx(brownian_max_abs_sf(1.0))
    assert brownian_range_sf(2.5 - 1e-12) == pytest.approx(brownian_range_sf(2.5))


def _skce_brute(y, p, w, bw, *, frequency):
    """U-statistic over ordered pairs of distinct observations: rows (one
    label per row, weights w_i w_j) or copies of the repeated rows."""
    if frequency:
        y, p, w = np.repeat(y, w), np.repeat(p, w), np.ones(int(np.sum(w)))
    n, total = len(y), 0.0
    for i in range(n):
        for j in range(n):
            if i != j:
                k = np.exp(-((p[i] - p[j]) ** 2) / (2 * bw * bw))
                ei = np.array([1 - y[i], y[i]]) - np.array([1 - p[i], p[i]])
                ej = np.array([1 - y[j], y[j]]) - np.array([1 - p[j], p[j]])
                total += w[i] * w[j] * k * ei @ ej
    return total / (np.sum(w) ** 2 - np.sum(w * w))


@pytest.mark.parametrize("kind", ["importance", "frequency"])
def test_skce_against_double_sum(kind):
    y, p = _problem(40, 4, kind="ties", calibrated=False)
    w = np.random.default_rng(5).integers(1, 4, y.size)
    res = calibration_test(
        y,
        p,
        method="skce",
        bandwidth=0.2,
        sample_weight=w,
        sample_weight_kind=kind,
        n_resamples=9,
        random_state=0,
    )
    want = _skce_brute(y, p, w, 0.2, frequency=kind == "frequency")
    assert res.statistic == pytest.approx(want, rel=1e-10)


@pytest.mark.parametrize("chunk", [3, 7, 2048])
def test_skce_kernel_kept_or_chunked_equals_the_double_sum(chunk):
    # The kernel matrix of the distinct scores is kept when there are at
    # most ``chunk`` of them and rebuilt in row chunks otherwise; both equal
    # the double sum for every label vector.
    from skcalib._backend.calibration_tests.statistics import SKCE
    from skcalib._backend.calibration_tests.task import NullTask

    rng = np.random.default_rng(12)
    y, p = _problem(30, 9, kind="ties", calibrated=False)
    w = rng.integers(1, 4, y.size) * 1.0
    task = NullTask(y, p, w)
    Y = np.array([y, 1.0 - y, (rng.uniform(size=y.size) < p) * 1.0])
    got = SKCE(task, 0.15, chunk=chunk).values(task.weigh(Y[:, task.order] > 0.5))
    want = [_skce_brute(row, p, w, 0.15, frequency=False) for row in Y]
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("n", [1, 2, 3, 50, 2500])
def test_median_bandwidth_is_the_median_pairwise_distance(n):
    from skcalib._backend.calibration_tests import median_bandwidth

    rng = np.random.default_rng(n)
    s = np.round(rng.beta(0.5, 3.0, n), 2)  # ties and many zero distances
    ss = np.sort(s)
    if n > 2000:
        ss = ss[np.linspace(0, n - 1, 2000).astype(int)]
    i, j = np.triu_indices(ss.size, 1)
    want = max(np.median(np.abs(ss[i] - ss[j])), 1e-3) if i.size else 1e-3
    assert median_bandwidth(s) == want


@pytest.mark.parametrize("kind", ["uniform", "ties", "ends"])
def test_consistency_statistics_are_the_library_metrics(kind):
    y, p = _problem(3000, 7, kind=kind, calibrated=False)
    w = np.random.default_rng(8).uniform(0.2, 3.0, y.size)
    res = calibration_test(y, p, n_resamples=9, sample_weight=w, random_state=0)
    assert res.statistic == smooth_ece(y, p, sample_weight=w)
    res = calibration_test(
        y, p, statistic="binned_ece", n_resamples=9, sample_weight=w, random_state=0
    )
    assert res.statistic == pytest.approx(
        binned_calibration_error(y, p, sample_weight=w), rel=1e-12
    )


# ------------------------------------------------- exact p-values, brute force


def test_bernoulli_draw_is_the_comparison_of_a_61_bit_uniform():
    # Each label is 1 exactly when (byte + u) / 256 < s, the byte and, for
    # the labels whose byte is floor(256 s), the double u read from the
    # generator in that order; scores at the byte boundaries included.
    from skcalib._backend.calibration_tests.draws import BernoulliDraw

    s = np.array([0.0, 1.0, 0.5, 1 / 256, 255 / 256, 3 / 256 + 1e-17, 1e-300, 0.3])
    draw = BernoulliDraw(s)
    m, n = 900, s.size
    y = draw(np.random.default_rng(3), m)
    rng = np.random.default_rng(3)
    raw = rng.bit_generator.random_raw((m * n + 7) // 8).view(np.uint8)[: m * n]
    want = np.empty(m * n, dtype=bool)
    ties = []
    for j, byte in enumerate(raw):
        k = min(int(np.floor(256 * s[j % n])), 255)
        if byte != k:
            want[j] = byte < k
        else:
            ties.append(j)
    u = rng.random(len(ties))
    for t, j in enumerate(ties):
        k = min(int(np.floor(256 * s[j % n])), 255)
        want[j] = u[t] < 256 * s[j % n] - k
    np.testing.assert_array_equal(y.ravel(), want)
    assert y[:, 0].sum() == 0 and y[:, 1].all()


@pytest.mark.slow
def test_bernoulli_draw_frequencies():
    from skcalib._backend.calibration_tests.draws import BernoulliDraw

    s = np.array([1e-4, 1 / 512, 1 / 256, 0.1, 0.5, 0.75, 1 - 1 / 1024])
    y = BernoulliDraw(s)(np.random.default_rng(9), 400_000)
    se = np.sqrt(s * (1 - s) / y.shape[0])
    assert np.all(np.abs(y.mean(axis=0) - s) < 4.5 * se)


def _brute_labels(p, w, n_resamples, random_state, *, frequency=False):
    """Labels of the exact test, redrawn here in a Python loop from the
    documented scheme: rows sorted by (score, weight); one block of draws
    (tiny problems) from the first child of the seed sequence; a byte per
    label compared with floor(256 s), a double for the ties; then, with
    frequency weights, Binomial(w, s) positives for the rows of weight > 1
    (as weighted labels)."""
    order = np.lexsort((w, p))
    ps, ws = p[order], w[order]
    n = p.size
    rng = np.random.default_rng(_seed_sequence(random_state).spawn(1)[0])
    raw = rng.bit_generator.random_raw((n_resamples * n + 7) // 8)
    raw = raw.view(np.uint8)[: n_resamples * n]
    y = np.zeros((n_resamples, n))
    ties = []
    for b in range(n_resamples):
        for i in range(n):
            k = min(int(np.floor(256 * ps[i])), 255)
            byte = raw[b * n + i]
            if byte == k:
                ties.append((b, i))
            else:
                y[b, i] = float(byte < k)
    u = rng.random(len(ties))
    for t, (b, i) in enumerate(ties):
        y[b, i] = float(u[t] < 256 * ps[i] - min(int(np.floor(256 * ps[i])), 255))
    counts = y * ws
    if frequency:
        many = np.flatnonzero(ws > 1)
        counts[:, many] = rng.binomial(
            ws[many].astype(np.int64), ps[many], size=(n_resamples, many.size)
        )
    # back in the caller's row order
    out = np.empty_like(counts)
    out[:, order] = counts
    return out


def _by_hand(name, c, y, p, w, q, *, frequency=False):
    """A statistic of weighted labels ``c`` (observed: ``c = w y``), written
    here without the library's code (the groups of Hosmer-Lemeshow are the
    percentiles of the repeated rows for frequency weights, the weighted
    quantiles of :func:`binning.quantile_edges` otherwise)."""
    W = np.sum(w)
    if name == "spiegelhalter":
        return abs(
            np.sum((c - w * p) * (1 - 2 * p))
            / np.sqrt(np.sum(q * (1 - 2 * p) ** 2 * p * (1 - p)))
        )
    if name == "brier":
        # sum over observations of (y - s)^2 with y^2 = y
        return np.sum(c * (1 - 2 * p) + w * p * p) / W
    if name in ("ks", "kuiper"):
        order = np.lexsort((w, p))
        path, run = [0.0], 0.0
        for j, i in enumerate(order):
            run += c[i] - w[i] * p[i]
            if j == len(order) - 1 or p[order[j + 1]] != p[i]:
                path.append(run)
        sd = np.sqrt(np.sum(q * p * (1 - p)))
        path = np.array(path)
        span = np.abs(path).max() if name == "ks" else path.max() - path.min()
        return span / sd
    if name in ("hosmer-lemeshow", "pigeon-heyse"):
        from skcalib._backend.binning import quantile_edges

        if frequency:
            edges = np.percentile(np.repeat(p, w.astype(int)), np.linspace(0, 100, 11))
        else:
            edges = quantile_edges(p, w, 10)
        g = np.searchsorted(edges[1:-1], p, side="left")
        total = 0.0
        for k in np.unique(g):
            inside = g == k
            o, e = np.sum(c[inside]), np.sum(w[inside] * p[inside])
            qg, qs = np.sum(q[inside]), np.sum(q[inside] * p[inside])
            var = np.sum(q[inside] * p[inside] * (1 - p[inside]))
            if name == "hosmer-lemeshow":
                var = qg * (qs / qg) * (1 - qs / qg)
            total += (o - e) ** 2 / var
        return total
    raise ValueError(name)


_BRUTE = ["spiegelhalter", "brier", "ks", "kuiper", "hosmer-lemeshow", "pigeon-heyse"]


@pytest.mark.parametrize("name", _BRUTE)
@pytest.mark.parametrize("weights", ["none", "integer", "frequency"])
def test_exact_pvalue_equals_a_brute_force_simulation(name, weights):
    # Same seed, labels redrawn by a Python loop, statistics by the formulas
    # above: the resampled statistics and the p-value are the library's.
    rng = np.random.default_rng(10)
    n, B = 40, 199
    p = rng.integers(1, 12, n) / 12.0  # ties
    y = (rng.uniform(size=n) < p).astype(float)
    w = np.ones(n) if weights == "none" else rng.integers(1, 4, n) * 1.0
    frequency = weights == "frequency"
    q = w if frequency else w * w
    kw = dict(n_resamples=B, random_state=17, sample_weight=w)
    if frequency:
        kw["sample_weight_kind"] = "frequency"
    res = calibration_test(y, p, statistic=name, **kw)
    c = _brute_labels(p, w, B, 17, frequency=frequency)
    kw = dict(frequency=frequency)
    null = np.array([_by_hand(name, row, y, p, w, q, **kw) for row in c])
    observed = _by_hand(name, w * y, y, p, w, q, **kw)
    np.testing.assert_allclose(res.null_statistics, null, rtol=1e-10, atol=1e-13)
    assert res.statistic == pytest.approx(observed, rel=1e-10)
    count = np.sum(null >= observed * (1 - 1e-9))
    assert res.pvalue == (1 + count) / (B + 1)
    assert 0 < count < B  # the design tells ties from order


def test_exact_smooth_ece_equals_a_brute_force_simulation():
    rng = np.random.default_rng(11)
    n, B = 60, 99
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < 0.5 + 0.8 * (p - 0.5)).astype(float)
    w = rng.uniform(0.5, 2.0, n)
    res = calibration_test(y, p, sample_weight=w, n_resamples=B, random_state=3)
    c = _brute_labels(p, w, B, 3)
    observed = smooth_ece(y, p, sample_weight=w)
    null = np.array([smooth_ece((row > 0) * 1.0, p, sample_weight=w) for row in c])
    count = np.sum(null >= observed - _sm.SIGMA_TOL)
    assert res.statistic == observed
    assert res.pvalue == (1 + count) / (B + 1)


def test_exact_skce_equals_a_brute_force_simulation():
    rng = np.random.default_rng(12)
    n, B = 25, 49
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(float)
    res = calibration_test(
        y, p, method="skce", bandwidth=0.3, n_resamples=B, random_state=4
    )
    c = _brute_labels(p, np.ones(n), B, 4)
    null = [_skce_brute(row, p, np.ones(n), 0.3, frequency=False) for row in c]
    np.testing.assert_allclose(res.null_statistics, null, rtol=1e-9, atol=1e-14)


def test_named_exact_tests_are_consistency_tests_of_their_statistic():
    y, p = _problem(700, 13, kind="ties")
    w = np.random.default_rng(14).uniform(0.5, 2.0, y.size)
    for name in ("spiegelhalter", "hosmer-lemeshow", "pigeon-heyse", "ks", "kuiper"):
        kw = dict(sample_weight=w, n_resamples=99, random_state=5)
        a = calibration_test(y, p, method=name, pvalue_method="exact", **kw)
        b = calibration_test(y, p, statistic=name, **kw)
        assert a.pvalue == b.pvalue and a.pvalue_method == "exact", name
        np.testing.assert_array_equal(a.null_statistics, b.null_statistics)


def test_compiled_loops_equal_the_numpy_passes():
    # Bit for bit for integer labels; float labels in tie blocks are added
    # in another order (round-off only).
    pytest.importorskip("numba")
    from skcalib._backend.calibration_tests import statistics as st
    from skcalib._backend.calibration_tests.task import NullTask
    from skcalib._backend.consistency import SmoothECETest

    rng = np.random.default_rng(15)
    for kind in ("uniform", "ties"):
        y, p = _problem(5000, 16, kind=kind)
        for w in (None, rng.integers(1, 4, y.size), rng.uniform(0.5, 2, y.size)):
            task = NullTask(y, p, np.ones(y.size) if w is None else w * 1.0)
            c = task.labels(rng, 3)
            exact = w is None or np.all(w == np.floor(w)) or kind == "uniform"
            walk = st.CumulativeDifferences(task, "kuiper")
            a = walk.values(c.copy())
            walk.use_compiled = True
            b = walk.values(c.copy())
            np.testing.assert_allclose(a, b, rtol=1e-12)
            assert np.array_equal(a, b) or not exact
            grid = SmoothECETest(task).stat
            for M in (512, 4096, 65536):
                a = grid.label_columns(c, M)
                b = grid.label_columns(c, M, compiled=True)
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- defects


def test_skce_counts_ties_as_at_least_as_extreme():
    # Rare positives: most label vectors drawn from the null are all zero,
    # exactly like the observed one; they tie, so the p-value is large.
    rng = np.random.default_rng(18)
    p = rng.beta(0.5, 200.0, 30)
    y = np.zeros(30)
    for statistic in ("brier", "ks", "smooth_ece"):
        res = calibration_test(
            y, p, statistic=statistic, n_resamples=199, random_state=0
        )
        assert res.pvalue > 0.5, statistic
    res = calibration_test(y, p, method="skce", random_state=0)
    share = np.mean(np.all(_brute_labels(p, np.ones(30), 999, 0) == 0, axis=1))
    assert res.pvalue >= share > 0.5


@pytest.mark.parametrize("method", ["spiegelhalter", "hosmer-lemeshow", "ks", "kuiper"])
def test_one_positive_among_30_rare_scores_is_not_evidence(method):
    # 0.075 expected positives: one positive happens in 7 % of the label
    # vectors drawn from these scores (its p-value is about 0.02 for a
    # positive at a median score); the asymptotic laws gave ~1e-4.
    rng = np.random.default_rng(27)
    p = rng.beta(0.5, 200.0, 30)
    y = np.zeros(30)
    y[np.argsort(p)[15]] = 1.0
    res = calibration_test(y, p, method=method, random_state=0)
    assert res.pvalue > 0.01, res


def _bound(reps, alpha):
    """A count that Binomial(reps, alpha) exceeds with probability < 1e-4."""
    return stats.binom.ppf(1 - 1e-4, reps, alpha)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", ["spiegelhalter", "hosmer-lemeshow", "pigeon-heyse", "ks", "kuiper"]
)
def test_rare_positives_at_n_30_keep_the_level(method):
    # Beta(0.5, 200) scores: 0.075 expected positives in 30 rows. The
    # asymptotic laws rejected 5-7 times as often as alpha = 0.01; the
    # default now simulates the null law here.
    reps = 1000
    pv = _pvalues(method, {}, 30, "rare", reps)
    for alpha in (0.01, 0.05):
        assert np.sum(pv <= alpha) <= _bound(reps, alpha), alpha


_ASYMPTOTIC_METHODS = ("spiegelhalter", "hosmer-lemeshow", "pigeon-heyse", "kuiper")


@pytest.mark.parametrize(
    "method, kw",
    [
        ("spiegelhalter", {}),
        ("hosmer-lemeshow", {}),
        ("pigeon-heyse", {}),
        ("kuiper", {}),
        ("kuiper", {"pvalue_method": "asymptotic"}),
        ("consistency", {}),
        ("skce", {}),
    ],
)
def test_the_scale_of_importance_weights_does_not_matter(method, kw):
    # The asymptotic tests read weights as counts: weights normalised to sum
    # 1 turned p = 1e-5 into 0.97. One label per row makes every p-value
    # free of the weights' scale.
    rng = np.random.default_rng(28)
    n = 3000 if method in _ASYMPTOTIC_METHODS else 400
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < 0.5 + 0.85 * (p - 0.5)).astype(float)
    w = rng.integers(1, 4, n).astype(float)
    a = calibration_test(y, p, method=method, sample_weight=w, random_state=0, **kw)
    for c in (1 / w.sum(), 1e6, 1e-200, 1e200):
        b = calibration_test(
            y, p, method=method, sample_weight=c * w, random_state=0, **kw
        )
        assert b.pvalue == pytest.approx(a.pvalue, rel=1e-9)
        assert b.pvalue_method == a.pvalue_method


@pytest.mark.slow
@pytest.mark.parametrize("method", ["spiegelhalter", "hosmer-lemeshow", "kuiper"])
@pytest.mark.parametrize("n", [400, 20_000])
def test_importance_weights_keep_the_level(method, n):
    # Weights in {1, 2, 3} drawn independently of scores and labels (one
    # label per row): a calibrated model is rejected at most alpha of the
    # time (the analytic tests rejected 19-62 % at alpha = 0.05), by the
    # exact p-value at n = 400 and by the asymptotic one at n = 20000.
    reps = 400
    pv, kinds = [], set()
    for r in range(reps):
        rng = np.random.default_rng(9000 + r)
        p = rng.uniform(size=n)
        y = (rng.uniform(size=n) < p).astype(float)
        w = rng.integers(1, 4, n).astype(float)
        res = calibration_test(
            y, p, method=method, sample_weight=w, n_resamples=99, random_state=r
        )
        pv.append(res.pvalue)
        kinds.add(res.pvalue_method)
    assert kinds == {"exact" if n == 400 else "asymptotic"}
    for alpha in (0.01, 0.05):
        assert np.sum(np.array(pv) <= alpha) <= _bound(reps, alpha), alpha


def test_nan_statistic_is_an_error():
    y, p = _problem(200, 19)

    def nan(y, s, w):
        return float("nan")

    with pytest.raises(ValueError, match="statistic"):
        calibration_test(y, p, statistic=nan, n_resamples=9)

    def nan_on_resamples(yy, s, w):
        return 0.0 if np.array_equal(yy, y) else float("nan")

    with pytest.raises(ValueError, match="statistic.*NaN"):
        calibration_test(y, p, statistic=nan_on_resamples, n_resamples=9)
    for bad in (np.inf, "0.1", np.array([1.0, 2.0]), None):
        with pytest.raises(ValueError, match="statistic"):
            calibration_test(y, p, statistic=lambda y, s, w, b=bad: b, n_resamples=9)


# ---------------------------------------------------------------- options


def test_pvalue_method_auto_switches_by_the_documented_rule():
    from skcalib.metrics import _calibration_test as ct

    y, p = _problem(30, 20)
    for method in ("spiegelhalter", "hosmer-lemeshow", "ks"):
        res = calibration_test(y, p, method=method, random_state=0)
        assert res.pvalue_method == "exact" and res.n_resamples == 999
    y, p = _problem(20_000, 21)
    for method in ("spiegelhalter", "hosmer-lemeshow", "pigeon-heyse", "ks"):
        res = calibration_test(y, p, method=method)
        assert res.pvalue_method == "asymptotic", method
    # Spiegelhalter's rule: the effective size of its sum
    v = p * (1 - p)
    coef = np.abs(1 - 2 * p)
    size = np.sum(coef**2 * v) ** 3 / np.sum(coef**3 * v * (p**2 + (1 - p) ** 2)) ** 2
    assert size > ct.AUTO_MIN_SIZE_Z
    for method in ("consistency", "skce"):
        with pytest.raises(ValueError, match="pvalue_method"):
            calibration_test(y[:50], p[:50], method=method, pvalue_method="asymptotic")


def test_frequency_reading_needs_integer_weights():
    y, p = _problem(100, 22)
    w = np.full(100, 1.5)
    with pytest.raises(ValueError, match="sample_weight"):
        calibration_test(
            y, p, method="ks", sample_weight=w, sample_weight_kind="frequency"
        )
    with pytest.raises(ValueError, match="statistic"):
        calibration_test(
            y,
            p,
            statistic=lambda y, s, w: 0.0,
            sample_weight=np.ones(100),
            sample_weight_kind="frequency",
        )


def test_result_reads_like_scipy():
    y, p = _problem(500, 11)
    res = calibration_test(y, p, method="kuiper", random_state=0)
    assert repr(res).startswith("CalibrationTestResult(method='kuiper', statistic=")
    assert "pvalue_method='exact', n_resamples=999" in repr(res)
    with pytest.raises(AttributeError):
        res.pvalue = 0.5  # frozen


def test_results_do_not_depend_on_n_jobs_nor_on_the_row_order():
    # 20000 rows: blocks of 209 resamples, two of them here.
    y, p = _problem(20_000, 12, kind="ties")
    w = np.random.default_rng(23).integers(1, 4, y.size)
    order = np.random.default_rng(24).permutation(y.size)
    hl = {"method": "hosmer-lemeshow", "pvalue_method": "exact"}
    for kw in ({}, {"statistic": "ks"}, hl):
        kw = dict(kw, n_resamples=250, random_state=0, sample_weight=w)
        a = calibration_test(y, p, n_jobs=1, **kw)
        b = calibration_test(y, p, n_jobs=2, **kw)
        c = calibration_test(
            y[order], p[order], n_jobs=1, **dict(kw, sample_weight=w[order])
        )
        assert (a.statistic, a.pvalue) == (b.statistic, b.pvalue)
        assert a.pvalue == c.pvalue and a.pvalue_method == "exact"
        assert a.statistic == pytest.approx(c.statistic, rel=1e-12)


def test_classwise_is_bonferroni_of_one_vs_rest():
    rng = np.random.default_rng(14)
    P = rng.dirichlet([1, 1, 1], 600)
    Y = (rng.uniform(size=600)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    res = calibration_test(Y, P, method="spiegelhalter", multi_class="classwise")
    per = [
        calibration_test((Y == k).astype(int), P[:, k], method="spiegelhalter")
        for k in range(3)
    ]
    assert res.pvalue == pytest.approx(min(1, 3 * min(r.pvalue for r in per)))
    assert len(res.per_class) == 3


def test_top_label_is_the_binary_test_of_correctness():
    rng = np.random.default_rng(25)
    P = rng.dirichlet([1, 1, 1, 1], 800)
    Y = (rng.uniform(size=800)[:, None] > np.cumsum(P, axis=1)).sum(axis=1)
    conf, pred = P.max(axis=1), P.argmax(axis=1)
    for kw in ({"method": "kuiper"}, {"statistic": "brier"}, {}):
        a = calibration_test(Y, P, random_state=1, n_resamples=99, **kw)
        b = calibration_test(
            (Y == pred).astype(int), conf, random_state=1, n_resamples=99, **kw
        )
        assert (a.statistic, a.pvalue) == (b.statistic, b.pvalue)


def test_classwise_consistency_draws_one_class_per_row():
    # The mean of the per-class statistics under joint draws: its resampled
    # values are those of labels drawn by a loop over the rows here.
    rng = np.random.default_rng(26)
    P = rng.dirichlet([1, 1, 1], 300)
    Y = np.array([rng.choice(3, p=row) for row in P])
    res = calibration_test(
        Y, P, statistic="brier", multi_class="classwise", n_resamples=50, random_state=2
    )
    gen = np.random.default_rng(_seed_sequence(2).spawn(1)[0])
    u = gen.random((50, 300))
    cum = np.cumsum(P, axis=1)
    want = []
    for b in range(50):
        cls = [int(np.sum(u[b, i] >= cum[i, :-1])) for i in range(300)]
        want.append(
            np.mean([np.mean((np.equal(cls, k) - P[:, k]) ** 2) for k in range(3)])
        )
    np.testing.assert_allclose(res.null_statistics, want, rtol=1e-12)


def test_classwise_smooth_ece_resamples_decided_by_brackets_match_their_values():
    # The classwise SmoothECE test decides "mean of K fixed points >= t"
    # from bisection brackets alone; each resample's full value (a root
    # solve per class, the public metric) must give the same decisions.
    from skcalib._backend.calibration_tests.task import NullTask
    from skcalib._backend.consistency import ClasswiseSmoothECE, SmoothECETest

    rng = np.random.default_rng(11)
    P = rng.dirichlet(np.ones(3), size=400)
    tasks = [NullTask(np.zeros(400), P[:, k], np.ones(400)) for k in range(3)]
    test = ClasswiseSmoothECE([SmoothECETest(t) for t in tasks], P)
    blocks = test.draw(np.random.default_rng(0), 40)
    values = np.array(
        [
            np.mean(
                [
                    smooth_ece(b[i][np.argsort(t.order)] * 1.0, P[:, k])
                    for k, (b, t) in enumerate(zip(blocks, tasks, strict=True))
                ]
            )
            for i in range(40)
        ]
    )
    for t in np.quantile(values, [0.1, 0.5, 0.9]):
        decided = test.exceeds(blocks, t + _sm.SIGMA_TOL)
        close = np.abs(values - t) < 2 * _sm.SIGMA_TOL
        np.testing.assert_array_equal(decided[~close], (values >= t)[~close])
        assert 0 < decided.sum() < decided.size


def test_smooth_ece_exceedance_matches_the_metric():
    # A resample reaches T exactly when the SmoothECE of its labels does:
    # the shortcut (one smoothing at bandwidth T) against smooth_ece itself.
    y, p = _problem(5000, 9)
    w = np.ones(y.size)
    stat = SmoothECEStatistic(p, w, _sm.GridGeometry("l1"))
    ps = p[stat.order]
    rng = np.random.default_rng(0)
    values = []
    for _ in range(40):
        mask = stat.draw(rng).copy()
        values.append(smooth_ece(mask.astype(float), ps))
    thresholds = np.quantile(values, [0.2, 0.5, 0.8])
    for t in thresholds:
        rng = np.random.default_rng(0)
        got = [stat.exceeds(rng, t) for _ in range(40)]
        want = [v >= t for v in values]
        assert got == want


def test_power_against_over_confidence():
    y, p = _problem(3000, 15, calibrated=False)
    for method in (
        "consistency",
        "spiegelhalter",
        "hosmer-lemeshow",
        "pigeon-heyse",
        "ks",
        "kuiper",
        "skce",
    ):
        res = calibration_test(y, p, method=method, n_resamples=99, random_state=0)
        assert res.pvalue <= 0.01, method


# ---------------------------------------------------------------- size


_SIZE_METHODS = [
    ("consistency", {"statistic": s}) for s in ("smooth_ece", "binned_ece")
] + [(m, {}) for m in ("spiegelhalter", *_ASYMPTOTIC_METHODS[1:], "ks", "skce")]
_SIZE_IDS = [m + "-" + kw.get("statistic", "") for m, kw in _SIZE_METHODS]


def _pvalues(method, kw, n, kind, reps, weights=None):
    out = []
    for r in range(reps):
        y, p = _problem(n, 1000 + r, kind=kind)
        w = None
        if weights == "importance":
            w = np.random.default_rng(r).integers(1, 4, n) * 1.0
        # 99 resamples: alpha = 0.01 and 0.05 are multiples of 1 / 100.
        res = calibration_test(
            y, p, method=method, n_resamples=99, random_state=r, sample_weight=w, **kw
        )
        out.append(res.pvalue)
    return np.array(out)


# The benchmark prints the full size table; here a few adversarial designs,
# fewer data sets for the statistics costly to resample (their p-values
# are exact by construction: the check is of the draws and the ties).
_DESIGNS = [
    ("uniform", 200, None),
    ("ties", 300, "importance"),
    ("ends", 300, None),
    ("rare", 1500, "importance"),
    ("extreme", 100, None),
]


@pytest.mark.slow
@pytest.mark.parametrize("method, kw", _SIZE_METHODS, ids=_SIZE_IDS)
@pytest.mark.parametrize("kind, n, weights", _DESIGNS)
def test_tests_keep_their_level_under_h0(method, kw, kind, n, weights):
    costly = method == "skce" or kw.get("statistic") == "smooth_ece"
    if costly and n > 300:
        n = 300
    reps = 100 if costly else 300
    pv = _pvalues(method, kw, n, kind, reps, weights)
    for alpha in (0.01, 0.05, 0.1):
        assert np.sum(pv <= alpha) <= _bound(reps, alpha), alpha
