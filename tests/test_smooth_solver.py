"""The bandwidth search of SmoothECE: the same answer as plain bisection, and
the top-label logit smECE against a direct kernel sum.

The search evaluates only some of the bisection's midpoints (the others take
the side of a bracket found by Brent's method); the tests below replay plain
bisection, written here, on the same grid statistics and require the very
same number, then check the whole pipeline against a brute-force reference
that uses neither the grid nor the library.
"""

import numpy as np
import pytest
from scipy.special import logit

from skcalib._backend import grid
from skcalib._backend import smece as _sm
from skcalib._backend.compiled import HAVE_NUMBA
from skcalib.metrics import smooth_ece


def plain_bisection(stats, geometry, tol=_sm.SIGMA_TOL, grid=None):
    """The bisection of ``solve_sigma``, every midpoint evaluated."""
    stats = _sm.pyramid(stats)
    lo, hi = 0.0, 1.0
    while hi - lo > tol:
        if grid is not None:
            finest = geometry.grid_size(0.8 * lo, _sm.FINE_M)
            if finest > grid and finest == geometry.grid_size(0.8 * hi, _sm.FINE_M):
                break
        mid = 0.5 * (lo + hi)
        if _sm.smece_at(stats, mid, geometry) > mid:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _top_label_rows(kind, n, k, rng):
    """Adversarial top-label problems: ties of the maximum, confidences
    exactly 1 and exactly 1/k, rare errors, discrete confidences."""
    logits = 2.0 * rng.standard_normal((n, k))
    P = np.exp(logits)
    P /= P.sum(axis=1, keepdims=True)
    y = P.argmax(axis=1)
    if kind == "ties":
        P[::3, :2] = P[::3, :2].sum(axis=1, keepdims=True) / 2
        P[1::5] = 1.0 / k  # confidence exactly 1/k
        wrong = rng.uniform(size=n) < 0.3
        y[wrong] = rng.integers(0, k, size=wrong.sum())
    elif kind == "one_hot":
        P[::2] = np.eye(k)[rng.integers(0, k, size=P[::2].shape[0])]  # exactly 1
        y = np.where(rng.uniform(size=n) < 0.2, rng.integers(0, k, size=n), y)
    elif kind == "rare_errors":
        P = 0.9 * np.eye(k)[y] + 0.1 / k  # confidence 0.91 everywhere
        y = np.where(rng.uniform(size=n) < 0.002, (y + 1) % k, y)
    elif kind == "uniform_rows":
        P[:] = 1.0 / k
        y = rng.integers(0, k, size=n)
    elif kind == "discrete":
        P = np.round(P, 2)
        P[:, -1] = 1.0 - P[:, :-1].sum(axis=1)
        P = np.clip(P, 0.0, 1.0)
        P /= P.sum(axis=1, keepdims=True)
        y = np.where(rng.uniform(size=n) < 0.3, rng.integers(0, k, size=n), y)
    else:  # over-confident softmax with tempered labels
        Q = np.exp(logits / 1.5)
        Q /= Q.sum(axis=1, keepdims=True)
        y = (Q.cumsum(axis=1) > rng.uniform(size=(n, 1))).argmax(axis=1)
    return y, P


KINDS = ["ties", "one_hot", "rare_errors", "uniform_rows", "discrete", "softmax"]


def _binary_problems(rng):
    for n in (50, 200, 1000, 10_000, 100_000):
        s = rng.beta(2, 2, size=n)
        yield (rng.uniform(size=n) < s**1.5).astype(float), s
        s = np.round(rng.uniform(size=n), 1)  # ties
        yield (rng.uniform(size=n) < s).astype(float), s
        s = np.r_[np.ones(n // 2), rng.uniform(size=n - n // 2)]  # exact ones
        yield (rng.uniform(size=n) < s**2).astype(float), s
        s = np.full(n, 0.0005)  # rare events: a small sigma*
        yield (rng.uniform(size=n) < 0.001).astype(float), s


@pytest.mark.parametrize("metric", ["l1", "logit"])
def test_search_is_plain_bisection_on_every_grid(metric):
    # Both passes of ``fit`` (a coarse first grid with the early stop, then
    # the grid the answer needs), on binary and top-label problems
    rng = np.random.default_rng(0)
    geometry = _sm.GridGeometry(metric)
    problems = list(_binary_problems(rng))
    for kind in KINDS:
        for n in (50, 1000, 100_000):
            y, P = _top_label_rows(kind, n, 10, rng)
            conf = P.max(axis=1)
            problems.append(((P.argmax(axis=1) == y).astype(float), conf))
    for y, s in problems:
        fine = _sm.pyramid(_sm.statistics(y, s, None, geometry, _sm.FINE_M))
        for M in (_sm.FIRST_PASS_M, 2**14, _sm.FINE_M):
            stats = _sm.pyramid(fine.at(M))
            grid = M if M < _sm.FINE_M else None
            ref = plain_bisection(stats, geometry, grid=grid)
            assert _sm.solve_sigma(stats, geometry, grid=grid) == ref


def test_search_keeps_the_bisection_of_an_exactly_calibrated_sample():
    # smECE_sigma = 0 for every sigma: every midpoint is on the right side
    s = np.r_[np.full(40, 0.5), np.full(40, 0.25)]
    y = np.r_[np.ones(20), np.zeros(20), np.ones(10), np.zeros(30)]
    for metric in ("l1", "logit"):
        geometry = _sm.GridGeometry(metric)
        stats = _sm.statistics(y, s, None, geometry, 4096)
        assert _sm.solve_sigma(stats, geometry) == plain_bisection(stats, geometry)


@pytest.mark.parametrize("metric", ["l1", "logit"])
@pytest.mark.parametrize("weighted", [False, True])
def test_residual_statistics_are_the_difference_of_the_full_ones(metric, weighted):
    # smooth_ece bins sum w (y - s) alone; the curve's statistics hold
    # sum w y and sum w s apart, and their difference is the same residual
    rng = np.random.default_rng(1)
    n = 300_000  # several chunks
    s = np.r_[rng.beta(0.5, 0.5, size=n - 3), 0.0, 1.0, 0.5]
    y = (rng.uniform(size=n) < s).astype(float)
    w = rng.uniform(0.5, 2.0, size=n) if weighted else None
    geometry = _sm.GridGeometry(metric)
    for M in (64, 4096, _sm.FINE_M):
        resid, total = _sm.residual_statistics_of(y, s, w, geometry, M)
        full = _sm.statistics(y, s, w, geometry, M)
        assert total == pytest.approx(full[:, 0].sum(), rel=1e-12)
        np.testing.assert_allclose(resid, full[:, 1] - full[:, 2], rtol=0, atol=1e-9)


def _residual_inputs(rng, n):
    """Scores with exact 0 and 1, the logit clip's bounds and their
    neighbours, ties, and cell edges; labels; positive weights."""
    s = rng.beta(0.3, 0.3, size=n)
    eps = _sm.LOGIT_EPS
    edges = [0.0, 1.0, 0.5, eps, 1 - eps, eps / 2, 1 - eps / 2, 2.0**-16, 0.25]
    edges += [np.nextafter(eps, 0), np.nextafter(1 - eps, 1), 1 - 2.0**-53]
    s[: len(edges) * 50] = np.repeat(edges, 50)
    y = (rng.uniform(size=n) < s).astype(float)
    return y, s, rng.uniform(0.5, 2.0, size=n)


@pytest.mark.skipif(not HAVE_NUMBA, reason="needs numba")
@pytest.mark.parametrize("metric", ["l1", "logit"])
def test_compiled_residual_binning_is_the_numpy_one(monkeypatch, metric):
    # The compiled loops do the numpy passes' operations in their order
    # (numpy's logarithm included) and add to the cells in sample order, as
    # np.bincount: the same sums bit for bit, weighted or not, on every grid,
    # whatever the layout (read-only inputs; strided ones take the numpy
    # passes). A position off the grid gives the numpy passes' error.
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    rng = np.random.default_rng(5)
    n = grid._CHUNK * 2 + 1234
    y, s, w = _residual_inputs(rng, n)
    geometry = _sm.GridGeometry(metric)
    frozen = s.copy()
    frozen.flags.writeable = False
    strided = np.repeat(s, 2)[::2]
    before = s.copy()
    for M in (64, 4096, _sm.FINE_M):
        for weights in (None, w):
            for scores in (s, frozen, strided):
                monkeypatch.setattr(grid, "_COMPILED_MIN_SIZE", 0)
                compiled = _sm.residual_statistics_of(y, scores, weights, geometry, M)
                monkeypatch.setattr(grid, "_COMPILED_MIN_SIZE", np.inf)
                passes = _sm.residual_statistics_of(y, scores, weights, geometry, M)
                np.testing.assert_array_equal(compiled[0], passes[0])
                assert compiled[1] == passes[1]
    np.testing.assert_array_equal(s, before)
    if metric == "l1":
        bad = s.copy()
        bad[n - 7] = np.nan  # in the last chunk, after clean ones
        errors = []
        for size in (0, np.inf):
            monkeypatch.setattr(grid, "_COMPILED_MIN_SIZE", size)
            with pytest.raises((ValueError, RuntimeWarning)) as exc:
                _sm.residual_statistics_of(y, bad, None, geometry, 4096)
            errors.append((exc.type, str(exc.value)))
        assert errors[0] == errors[1]


# ---------------------------------------------------------------------------
# Brute force: the top-label logit smECE from direct Gaussian sums at the
# exact logits, with neither the grid nor the library.
# ---------------------------------------------------------------------------


def _brute_logit_smece_sigma(u, r, sigma):
    """``integral |(1/n) sum_i r_i phi_sigma(t - u_i)| dt`` on the real line.

    Equal logits are merged first (the sum is linear in the masses). The
    integral is a trapezoid rule with 40 points per ``sigma`` over the
    support (8 ``sigma`` around every logit; between separate windows the
    integrand is below 1e-14 and contributes nothing).
    """
    at, inverse = np.unique(u, return_inverse=True)
    mass = np.bincount(inverse, weights=r) / u.shape[0]
    offsets = sigma * np.linspace(-8.0, 8.0, 641)
    span = at[-1] - at[0] + 16 * sigma
    if span / (sigma / 40) <= 40_000:
        t = np.linspace(
            at[0] - 8 * sigma, at[-1] + 8 * sigma, int(span / sigma * 40) + 1
        )
    else:
        t = np.unique((at[:, None] + offsets[None, :]).ravel())
    density = np.zeros_like(t)
    for start in range(0, at.shape[0], 500):
        d = (t[:, None] - at[None, start : start + 500]) / sigma
        density += np.exp(-0.5 * d * d) @ mass[start : start + 500]
    density /= sigma * np.sqrt(2 * np.pi)
    return np.trapezoid(np.abs(density), t)


# n up to 1e5 where the confidences take few values (the direct sum merges
# them); continuous confidences make it quadratic, so 2e4 is their largest n
BRUTE_CASES = [(kind, n) for kind in KINDS for n in (50, 1000, 20_000)] + [
    (kind, 100_000) for kind in ("rare_errors", "uniform_rows", "discrete")
]


@pytest.mark.parametrize(("kind", "n"), BRUTE_CASES)
def test_top_label_logit_smece_is_the_direct_kernel_sum(kind, n):
    # The fixed point is checked by the sign of the brute-force excess
    # smECE_sigma - sigma just below and just above the returned value:
    # it must change sign within TOL. TOL = 1e-4 is the accuracy the grid
    # promises against direct kernel sums (40 grid steps per bandwidth at
    # 0.8 sigma*, linear binning, a trapezoid rule); 1e-6 of it is the
    # search's own tolerance.
    TOL = 1e-4
    rng = np.random.default_rng([KINDS.index(kind), n])
    y, P = _top_label_rows(kind, n, 10, rng)
    got = smooth_ece(y, P, metric="logit", labels=np.arange(10))
    conf = P.max(axis=1)
    correct = (P.argmax(axis=1) == y).astype(float)
    u = logit(np.clip(conf, 1e-6, 1 - 1e-6))

    def excess(sigma):
        return _brute_logit_smece_sigma(u, correct - conf, sigma) - sigma

    assert excess(got + TOL) < 0
    if got > TOL:
        assert excess(got - TOL) > 0
