"""Truncated sech kernel: sampler, cdf, inverse cdf and normaliser."""

import multiprocessing

import numpy as np
import pytest
from _references import rational_log_tan, sech_noise_of_words
from scipy import integrate, stats

from skcalib._backend.kernels import sech_cdf, sech_normalizer, sech_pdf, sech_ppf
from skcalib._backend.score_grid import off_grid
from skcalib._backend.sech import sampler as sech_sampler
from skcalib._backend.sech.compiled import HAVE_NUMBA, compiled_loops
from skcalib._backend.sech.sampler import sech_noise, sech_sample

CENTRES = [0.0, 1e-3, 0.3, 0.5, 1.0]
SCALES = [0.25, 2.0**-6, 2.0**-12]


def sech_stable(x):
    # Written independently of the library: 1 / cosh(x) without overflow.
    ax = np.abs(x)
    return 2.0 * np.exp(-ax) / (1.0 + np.exp(-2.0 * ax))


def reference_cdf(s, s0, h):
    # scipy's hyperbolic-secant law has density sech(x) / pi; truncate it to
    # [(0 - s0) / h, (1 - s0) / h].
    law = stats.hypsecant
    a, b = -s0 / h, (1.0 - s0) / h
    z = np.clip((np.asarray(s) - s0) / h, a, b)
    with np.errstate(over="ignore"):  # scipy evaluates exp(z) for large z
        return (law.cdf(z) - law.cdf(a)) / (law.cdf(b) - law.cdf(a))


@pytest.mark.parametrize("h", SCALES)
@pytest.mark.parametrize("s0", CENTRES)
def test_sampler_ks(s0, h):
    rng = np.random.default_rng(int(1e6 * s0) + int(1 / h))
    x = sech_sample(np.full(4000, s0), h, rng)
    assert np.all((x >= 0) & (x <= 1))
    res = stats.kstest(x, lambda t: reference_cdf(t, s0, h))
    assert res.pvalue > 1e-3


@pytest.mark.parametrize("h", SCALES + [1.0, 2.0**-9])
@pytest.mark.parametrize("s0", CENTRES + [0.999, 0.77])
def test_normalizer_against_quadrature(s0, h):
    pts = [s0] if 0 < s0 < 1 else None
    q, _ = integrate.quad(
        lambda s: sech_stable((s - s0) / h),
        0.0,
        1.0,
        points=pts,
        limit=500,
        epsabs=1e-15,
        epsrel=1e-12,
    )
    assert sech_normalizer(s0, h) == pytest.approx(q, rel=1e-9)


@pytest.mark.parametrize("h", SCALES)
@pytest.mark.parametrize("s0", CENTRES)
def test_cdf_is_integral_of_pdf_and_matches_reference(s0, h):
    xs = np.array([0.0, 0.1, s0 - 3 * h, s0, s0 + 0.5 * h, 0.6, 1.0])
    xs = np.clip(xs, 0.0, 1.0)
    for x in xs:
        pts = [p for p in (s0,) if 0 < p < x]
        q, _ = integrate.quad(
            lambda s: sech_pdf(s, s0, h), 0.0, x, points=pts or None, limit=500
        )
        assert sech_cdf(x, s0, h) == pytest.approx(q, abs=1e-9)
    np.testing.assert_allclose(
        sech_cdf(xs, s0, h), reference_cdf(xs, s0, h), atol=1e-12
    )
    assert sech_cdf(-0.5, s0, h) == 0.0 and sech_cdf(1.5, s0, h) == 1.0
    assert sech_pdf(-0.1, s0, h) == 0.0 and sech_pdf(1.1, s0, h) == 0.0


@pytest.mark.parametrize("h", SCALES)
@pytest.mark.parametrize("s0", CENTRES)
def test_ppf_inverts_cdf(s0, h):
    u = np.array([1e-9, 1e-4, 0.01, 0.25, 0.5, 0.75, 0.99, 1 - 1e-6])
    x = sech_ppf(u, s0, h)
    assert np.all(np.diff(x) >= 0)
    np.testing.assert_allclose(sech_cdf(x, s0, h), u, rtol=1e-6, atol=1e-12)
    # The ends of the unit interval are the ends of the support.
    assert sech_ppf(0.0, s0, h) == pytest.approx(0.0, abs=1e-14)
    assert sech_ppf(1.0, s0, h) == pytest.approx(1.0, abs=1e-14)


def test_ppf_tails_small_scale():
    # Central kernel at h = 2**-12: F⁻¹(u) - s0 = h ln tan(π u / 2) for the
    # untruncated law, and the truncation changes nothing measurable here.
    h, s0 = 2.0**-12, 0.5
    u = np.array([1e-12, 1e-6, 0.3, 0.5, 0.7, 1 - 1e-6])
    expected = s0 + h * np.log(np.tan(np.pi * u / 2))
    np.testing.assert_allclose(sech_ppf(u, s0, h), expected, rtol=0, atol=1e-12)


def test_broadcasting_and_shapes():
    s0 = np.array([[0.0, 0.5], [0.9, 1.0]])
    h = 2.0**-6
    rng = np.random.default_rng(0)
    assert sech_sample(s0, h, rng).shape == (2, 2)
    assert sech_pdf(0.5, s0, h).shape == (2, 2)
    assert sech_cdf(np.array([[0.1], [0.2]]), np.array([0.3, 0.4, 0.5]), h).shape == (
        2,
        3,
    )
    assert sech_normalizer(s0, h).shape == (2, 2)
    assert sech_ppf(np.full((2, 2), 0.5), s0, h).shape == (2, 2)
    assert np.isscalar(sech_sample(0.3, h, rng))


def test_sampler_reproducible_and_no_warnings():
    s0 = np.linspace(0, 1, 1001)
    a = sech_sample(s0, 2.0**-12, np.random.default_rng(5))
    b = sech_sample(s0, 2.0**-12, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    assert np.all(np.isfinite(a))
    # Concentrated kernels stay near their centres.
    assert np.max(np.abs(a - s0)) < 0.02


def test_sample_moments_match_quadrature():
    s0, h = 0.02, 2.0**-4
    rng = np.random.default_rng(1)
    x = sech_sample(np.full(200_000, s0), h, rng)
    mean, _ = integrate.quad(lambda s: s * sech_pdf(s, s0, h), 0, 1, points=[s0])
    assert abs(x.mean() - mean) < 5 * x.std() / np.sqrt(x.size)


def _untruncated_sf(t):
    # P(X > t) for the law of density sech(x) / pi: its cdf is 2 arctan(e^x) / pi.
    return 2.0 / np.pi * np.arctan(np.exp(-np.asarray(t, dtype=np.float64)))


@pytest.mark.parametrize("s0", [0.0, 0.5, 1.0])
def test_sampler_tails_small_scale(s0):
    # Chi-square over bins reaching far into both tails (the last bins hold
    # about 1e-4 of the mass each), where a KS test has little power.
    h, n = 2.0**-12, 400_000
    x = sech_sample(np.full(n, s0), h, np.random.default_rng(11))
    assert np.all((x >= 0) & (x <= 1))
    t = np.array([0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.5, 9.0])
    edges = np.unique(np.clip(s0 + h * np.concatenate([-t[::-1], t]), 0.0, 1.0))
    edges = np.concatenate([[-np.inf], edges[1:-1], [np.inf]])
    observed = np.histogram(x, bins=edges)[0]
    expected = n * np.diff(reference_cdf(np.clip(edges, 0.0, 1.0), s0, h))
    assert expected.min() > 20
    res = stats.chisquare(observed, expected)
    assert res.pvalue > 1e-3
    # Beyond 9 h: both tails of the untruncated law inside, or one tail
    # divided by the half mass kept at an edge: 2 P(X > 9) either way.
    tail = np.mean(np.abs(x - s0) > 9 * h)
    p_tail = 2 * _untruncated_sf(9.0)
    assert abs(tail - p_tail) < 5 * np.sqrt(p_tail / n)


class _FixedWords:
    """A stand-in generator whose bit generator returns chosen 64-bit words."""

    def __init__(self, words):
        self.words = np.asarray(words, dtype=np.uint64)
        self.bit_generator = self

    def random_raw(self, size):
        assert size == self.words.size
        return self.words.copy()


@pytest.mark.parametrize("h", [2.0**-6, 1e-200])
def test_proposal_bits_and_double_precision(h):
    # One proposal per 64-bit word: bit 63 is the sign, bits 0-62 give m and
    # the draw is ±h ln tan(pi m / 2**65), m = 0 giving an infinite draw that
    # is always rejected. Reference in extended precision, where m is exact.
    rng = np.random.default_rng(0)
    mags = np.concatenate(
        [[0, 1, 2, 3, 1000, 2**53 + 1, 2**62, 2**63 - 1], rng.integers(1, 2**63, 992)]
    ).astype(np.uint64)
    signs = rng.integers(0, 2, mags.size).astype(np.uint64)
    words = mags | (signs << np.uint64(63))
    x = sech_noise(mags.size, h, _FixedWords(words))
    assert x.dtype == np.float64
    theta = np.pi * mags.astype(np.longdouble) / np.longdouble(2.0**65)
    with np.errstate(divide="ignore"):
        expected = np.log(np.tan(theta)) * np.longdouble(h)
    expected = np.where(signs == 1, -expected, expected)
    assert np.isinf(x[0]) and np.isinf(expected[0])
    # A few units in the last place (of the noise, or of tan ~ 1 where the
    # noise is ~0).
    np.testing.assert_allclose(
        x[1:], expected[1:].astype(np.float64), rtol=1e-15, atol=1e-15 * h
    )
    # The end of the tail: m = 1, |x| = h ln(2**65 / pi) = 44.4 h.
    assert np.abs(x[1:]).max() == pytest.approx(h * np.log(2.0**65 / np.pi), rel=1e-12)


def _adversarial_m():
    """Values of ``m`` at the edges of the magnitude's range and of its steps:
    the smallest, powers of two and their neighbours (``m`` loses bits
    when rounded to a double above 2**53), the angle next to π/4."""
    powers = [2**k + d for k in range(64) for d in (-1, 0, 1)]
    near_end = [2**63 - k for k in (1, 2, 3, 512, 513, 1023, 1024, 1025, 10**6)]
    # Angles where tan θ crosses a power of two (its rounding changes step).
    crossings = [
        int(np.arctan(2.0**-k) * 2.0**65 / np.pi) + d
        for k in range(30)
        for d in (-1, 0, 1)
    ]
    m = [1, 2, 3, 5, 7, 1000, *powers, *near_end, *crossings]
    return np.array(sorted({k for k in m if 1 <= k < 2**63}), dtype=np.uint64)


def _magnitude_errors(m, *computed):
    """Errors of each of ``computed`` = ln tan(m π / 2**65) against mpmath
    (50 digits, evaluated once for all of them), in units in the last place
    of ``max(|ln tan|, 1/2)``.

    Below 1/2 an absolute unit (2**-53): there ``ln tan θ`` is the small
    difference of ``ln θ`` and ``ln(tan θ / θ)``, and the rounding of the
    angle ``θ`` to a double (half a unit of ``θ`` and of ``m``), the same on
    every path, already moves it by up to ~3e-16.
    """
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    unit = mpmath.pi / mpmath.mpf(2) ** 65
    errors = np.empty((len(computed), m.size))
    values = zip(*(c.tolist() for c in computed), strict=True)
    for i, (k, row) in enumerate(zip(m.tolist(), values, strict=True)):
        exact = mpmath.log(mpmath.tan(k * unit))
        scale = np.spacing(max(abs(float(exact)), 0.5))
        for j, value in enumerate(row):
            errors[j, i] = float(abs(mpmath.mpf(value) - exact)) / scale
    return errors


@pytest.mark.slow
def test_magnitude_against_mpmath(monkeypatch):
    # The magnitude ln tan θ of 1e5 random and ~270 adversarial m, through
    # the sampler (h = 1/4 scales it exactly), against mpmath, in units of
    # 2**-53 max(|ln tan θ|, 1/2) (see _magnitude_errors). The angle
    # θ = m π / 2**65 is rounded twice (m to a double above 2**53, then the
    # product), which moves ln tan θ by up to 2**-52 θ / (sin θ cos θ), π
    # units at θ = π/4, on every path; the tangent and its logarithm add
    # about a unit. Measured: 3.32 units at most (np.log(np.tan(θ)): 3.40),
    # and 1.2 (1.42) against ln tan of the rounded angle.
    rng = np.random.default_rng(12)
    m = np.concatenate(
        [_adversarial_m(), rng.integers(1, 2**63, 100_000).astype(np.uint64)]
    )
    h = 0.25
    monkeypatch.setattr(sech_sampler, "_COMPILED_MIN_SIZE", np.inf)
    x = sech_noise(m.size, h, _FixedWords(m)) / h
    if HAVE_NUMBA:
        # The compiled loops give the same bits.
        monkeypatch.setenv("SKCALIB_NUMBA", "1")
        monkeypatch.setattr(sech_sampler, "_COMPILED_MIN_SIZE", 0)
        np.testing.assert_array_equal(sech_noise(m.size, h, _FixedWords(m)) / h, x)
    theta = m.astype(np.float64) * (np.pi / 2.0**65)
    errors, old = _magnitude_errors(m, x, np.log(np.tan(theta)))
    assert errors.max() <= 3.5
    assert errors.max() <= old.max() + 0.1
    assert errors.mean() <= old.mean() + 0.01


def test_threaded_blocks_equal_sequential_draws():
    # Blocks read fixed positions of the stream: one thread or several give
    # the same draws and leave the generator in the same state.
    s0 = np.random.default_rng(2).uniform(size=5 * sech_sampler._SECH_BLOCK + 12_345)
    runs = []
    for n_threads in (1, 2, 3):
        rng = np.random.default_rng(9)
        runs.append((sech_sample(s0, 2.0**-6, rng, n_jobs=n_threads), rng.random()))
    for draws, after in runs[1:]:
        np.testing.assert_array_equal(draws, runs[0][0])
        assert after == runs[0][1]


def test_large_sample_follows_kernel_edges_and_interior():
    # Large enough for several blocks (and threads), centres on both edges.
    rng = np.random.default_rng(4)
    h = 2.0**-9
    size = 4 * sech_sampler._SECH_BLOCK
    s0 = np.concatenate(
        [rng.uniform(size=size), np.zeros(size // 8), np.ones(size // 8)]
    )
    x = sech_sample(s0, h, rng)
    assert np.all((x >= 0) & (x <= 1))
    pit = reference_cdf(x, s0, h)
    assert stats.kstest(pit, "uniform").pvalue > 1e-3


def test_sampler_out_argument_and_other_bit_generators():
    s0 = np.linspace(0.0, 1.0, 4 * sech_sampler._SECH_BLOCK + 7)
    h = 2.0**-6
    out = np.empty((2, s0.size))
    res = sech_sample(s0, h, np.random.default_rng(1), out=out[1], complement=out[0])
    assert np.shares_memory(res, out)
    np.testing.assert_array_equal(out[1], sech_sample(s0, h, np.random.default_rng(1)))
    # Complement of every draw, including those redrawn after a rejection
    # (centres on the edges) and those of the inverse-cdf path (small input).
    np.testing.assert_array_equal(out[0], 1.0 - out[1])
    small = np.empty((2, 10))
    sech_sample(s0[:10], h, np.random.default_rng(1), out=small[1], complement=small[0])
    np.testing.assert_array_equal(small[0], 1.0 - small[1])
    with pytest.raises(ValueError, match="out"):
        sech_sample(s0, h, np.random.default_rng(1), out=np.empty(3))
    with pytest.raises(ValueError, match="complement"):
        sech_sample(s0, h, np.random.default_rng(1), out=out[1], complement=out[0, :5])
    # A bit generator without ``advance`` is read sequentially.
    mt = np.random.Generator(np.random.MT19937(5))
    a = sech_sample(np.full(300_000, 0.2), h, mt)
    b = sech_sample(np.full(300_000, 0.2), h, np.random.Generator(np.random.MT19937(5)))
    np.testing.assert_array_equal(a, b)
    res = stats.kstest(a[:20_000], lambda t: reference_cdf(t, 0.2, h))
    assert res.pvalue > 1e-3


def test_tiny_scale_keeps_the_law():
    # The noise stays exact far below the grid: at h = 1e-200 it divided by h
    # follows the sech law (cdf 2 arctan(e^t) / pi); the draws, rounded to the
    # grid, are then the grid point nearest the centre, as the discretised
    # law has it (all of its mass but ~1e-190 is there).
    h = 1e-200
    noise = sech_noise(4000, h, np.random.default_rng(3))
    res = stats.kstest(noise / h, lambda t: 2.0 / np.pi * np.arctan(np.exp(t)))
    assert res.pvalue > 1e-3
    for s0 in (0.0, 0.3, 1.0):
        x = sech_sample(np.full(4000, s0), h, np.random.default_rng(3))
        np.testing.assert_array_equal(x, np.rint(s0 * 2.0**24) / 2.0**24)


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(),
    reason="needs the fork start method",
)
def test_threaded_sampler_after_fork():
    # The worker threads of the parent do not exist in a forked child: the
    # child must make its own and give the same draws.
    s0 = np.random.default_rng(0).uniform(size=5 * sech_sampler._SECH_BLOCK)
    expected = sech_sample(s0, 2.0**-6, np.random.default_rng(1))
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        got = pool.apply(_draw_in_child, (s0,))
    np.testing.assert_array_equal(got, expected)


def _draw_in_child(s0):
    return sech_sample(s0, 2.0**-6, np.random.default_rng(1))


def _layouts(s0, h, seed):
    """Draws around ``s0`` through every output layout the sampler handles."""
    n = s0.size
    fresh = sech_sample(s0, h, np.random.default_rng(seed))
    cols = np.empty((2, n))
    sech_sample(s0, h, np.random.default_rng(seed), out=cols[1], complement=cols[0])
    pairs = np.column_stack([1.0 - s0, s0])
    p = pairs[:, 1]
    sech_sample(p, h, np.random.default_rng(seed), out=p, complement=pairs[:, 0])
    strided = np.repeat(s0, 3)[::3]  # a strided view as centres
    other = sech_sample(strided, h, np.random.default_rng(seed))
    return fresh, cols, pairs, other


@pytest.mark.skipif(not HAVE_NUMBA, reason="needs numba")
@pytest.mark.parametrize("h", [2.0**-6, 2.0**-12, 1e-200])
def test_compiled_loops_give_the_numpy_draws(monkeypatch, h):
    # The compiled loops do the numpy passes' floating-point operations in the
    # same order: the same draws, bit for bit, in every layout, including
    # rejected rows (edges), centres outside [0, 1] and NaN. One thread, so
    # that the blocks follow each other: the second block is full of rows on
    # an edge, and the compiled loop collects the rejected rows of the third
    # (and its NaN) without a branch, then of the fourth with one again.
    monkeypatch.setattr(sech_sampler, "_threads", lambda n, n_jobs: 1)
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    rng = np.random.default_rng(3)
    block = sech_sampler._SECH_BLOCK
    n = 3 * block + 1001
    s0 = rng.uniform(size=n)
    s0[:300] = 0.0
    s0[300:600] = 1.0
    s0[600:610] = [-0.5, 1.5, np.nan, 1e-9, 1 - 1e-9, -0.0, 0.5, 2.0, -1.0, np.nan]
    s0[block : block + block // 4] = 0.0
    s0[block + 7 : block + block // 4 : 997] = np.nan
    s0[2 * block : 2 * block + 100] = 1.0
    s0[2 * block + 5] = np.nan
    compiled = _layouts(s0, h, 7)
    monkeypatch.setattr(sech_sampler, "_COMPILED_MIN_SIZE", np.inf)
    passes = _layouts(s0, h, 7)
    for a, b in zip(compiled, passes, strict=True):
        np.testing.assert_array_equal(a, b)
    fresh, cols, pairs, other = compiled
    np.testing.assert_array_equal(cols[1], fresh)
    np.testing.assert_array_equal(pairs[:, 1], fresh)
    np.testing.assert_array_equal(other, fresh)
    np.testing.assert_array_equal(cols[0], 1.0 - fresh)
    np.testing.assert_array_equal(pairs[:, 0], 1.0 - fresh)
    nan_rows = np.isnan(fresh)
    np.testing.assert_array_equal(nan_rows, np.isnan(s0))
    ok = fresh[~nan_rows]
    assert np.all((ok >= 0.0) & (ok <= 1.0))


def test_noise_drawn_beforehand_gives_the_same_draws():
    s0 = np.random.default_rng(0).uniform(size=2 * sech_sampler._SECH_BLOCK + 3)
    s0[:100] = 0.0  # rejections, redrawn from the generator afterwards
    h = 2.0**-7
    plain_rng = np.random.default_rng(4)
    plain = sech_sample(s0, h, plain_rng)
    rng = np.random.default_rng(4)
    noise, _ = sech_sampler.sech_noise_async(s0.size, h, rng).result()
    np.testing.assert_array_equal(sech_sample(s0, h, rng, noise=noise), plain)
    assert rng.random() == plain_rng.random()
    # Threads: the noise is the same whatever their number.
    again = sech_noise(s0.size, h, np.random.default_rng(4))
    np.testing.assert_array_equal(again, noise)
    with pytest.raises(ValueError, match="noise"):
        sech_sample(s0, h, rng, noise=noise[:-1])
    # The generator is advanced at once, not by the background thread: it is
    # free for other draws, which follow the noise in its stream.
    rng = np.random.default_rng(4)
    future = sech_sampler.sech_noise_async(s0.size, h, rng)
    after = rng.random(1000)
    ref = np.random.default_rng(4)
    np.testing.assert_array_equal(future.result()[0], sech_noise(s0.size, h, ref))
    np.testing.assert_array_equal(after, ref.random(1000))


def test_sampler_rejects_overlapping_outputs():
    s0 = np.random.default_rng(0).uniform(size=1000)
    P = np.column_stack([1.0 - s0, s0])
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="s0 itself or not overlap"):
        sech_sample(P[:, 1], 0.1, rng, out=P.reshape(-1)[1:1001])
    # Interleaved columns share no element: allowed.
    sech_sample(P[:, 1], 0.1, rng, out=P[:, 0])
    work = s0.copy()
    with pytest.raises(ValueError, match="s0 itself or not overlap"):
        sech_sample(work[1:], 0.1, rng, out=work[:-1])
    with pytest.raises(ValueError, match="complement must not overlap"):
        sech_sample(P[:, 1], 0.1, rng, out=P[:, 1], complement=P[:, 1])
    with pytest.raises(ValueError, match="complement must not overlap"):
        sech_sample(s0, 0.1, rng, out=np.empty(1000), complement=s0)


# ---------------------------------------------------------------------------
# The grid G = {k / 2**24}: perturbed scores share one support
# ---------------------------------------------------------------------------

GRID = 2.0**24


def on_grid(x):
    # Written independently of skcalib's helper: k / 2**24 exactly, k integer.
    k = np.asarray(x, dtype=np.float64) * GRID
    return bool(np.all((k == np.floor(k)) & (k >= 0) & (k <= GRID)))


def grid_ks_pvalue(x, s0, h):
    """KS test of draws against the exact truncated-sech law rounded to G.

    Point ``g`` of G receives the mass of its cell ``[g - 2**-25, g + 2**-25]``
    (clipped to [0, 1]), so ``P(S <= g) = F(g + 2**-25)`` and ``P(S < g) =
    F(g - 2**-25)``; the statistic is the largest distance between the
    empirical and the exact distribution functions on either side of each
    observed point (all that a step function needs). A draw off G has no mass
    under this law at all: the test is failed outright.
    """
    if not on_grid(x):
        return 0.0
    x = np.sort(x)
    n = x.size
    g, first = np.unique(x, return_index=True)
    last = np.append(first[1:], n)  # ECDF at g is last / n, just below first / n
    half = 0.5 / GRID
    upper = sech_cdf(np.minimum(g + half, 1.0), s0, h)
    lower = np.where(g > 0.0, sech_cdf(np.maximum(g - half, 0.0), s0, h), 0.0)
    stat = max(np.abs(last / n - upper).max(), np.abs(first / n - lower).max())
    # Conservative for a discrete law (the continuous null distribution).
    return stats.kstwo.sf(stat, n)


@pytest.mark.parametrize("h", SCALES)
@pytest.mark.parametrize("s0", CENTRES)
def test_proposal_draws_follow_the_discretised_kernel(s0, h):
    # n >= 64 and h <= 0.25: rejection sampling from 64-bit proposals.
    assert sech_sampler._uses_proposals(4000, h)
    rng = np.random.default_rng(int(1e6 * s0) + int(1 / h) + 17)
    x = sech_sample(np.full(4000, s0), h, rng)
    assert grid_ks_pvalue(x, s0, h) > 1e-3


@pytest.mark.parametrize("h", SCALES + [0.5, 1.0])
@pytest.mark.parametrize("s0", CENTRES)
def test_inverse_cdf_draws_follow_the_discretised_kernel(s0, h):
    # Fewer than 64 centres (or h > 0.25): the closed-form inverse cdf.
    assert not sech_sampler._uses_proposals(40, h)
    rng = np.random.default_rng(int(1e6 * s0) + int(1 / h) + 29)
    x = np.concatenate([sech_sample(np.full(40, s0), h, rng) for _ in range(100)])
    assert grid_ks_pvalue(x, s0, h) > 1e-3


def test_discretised_ks_detects_a_wrong_scale():
    # The test above has power: draws at scale h fail against 2h.
    h = 2.0**-6
    x = sech_sample(np.full(4000, 0.4), h, np.random.default_rng(0))
    assert grid_ks_pvalue(x, 0.4, h) > 1e-3
    assert grid_ks_pvalue(x, 0.4, 2 * h) < 1e-6


@pytest.mark.parametrize("n", [10, 5000, 3 * sech_sampler._SECH_BLOCK + 11])
def test_draws_and_complements_on_the_grid(n):
    # Every path: inverse cdf (n = 10), numpy passes, compiled loops, threads,
    # and rows redrawn after a rejection (centres exactly on 0 and 1).
    rng = np.random.default_rng(n)
    s0 = rng.uniform(size=n)
    s0[: n // 5] = 0.0
    s0[n // 5 : 2 * n // 5] = 1.0
    for h in (2.0**-12, 2.0**-6, 0.25, 0.5):
        out = np.empty((2, n))
        sech_sample(s0, h, rng, out=out[1], complement=out[0])
        assert on_grid(out[1]) and on_grid(out[0])
        assert off_grid(out[1]) == -1 and off_grid(out[0]) == -1
        np.testing.assert_array_equal(out[0] + out[1], 1.0)
    # The unrounded draws (for a caller that maps them first) are not.
    raw = sech_sample(np.full(n, 0.3), 2.0**-6, rng, grid=False)
    assert off_grid(raw) != -1


@pytest.mark.parametrize("n", [5000, 3 * sech_sampler._SECH_BLOCK])
def test_nearby_centres_share_their_support(n):
    # Two base scores a non-dyadic distance apart: their draws land on the
    # same grid points, so a draw does not tell which of them it came from
    # (a lattice shifted by each centre never has a point in common).
    h = 2.0**-12
    a = sech_sample(np.full(n, 0.3), h, np.random.default_rng(1))
    b = sech_sample(np.full(n, 0.3 + 1e-7 * np.pi), h, np.random.default_rng(2))
    shared = np.isin(a, b).mean()
    # Grid points near the centre hold ~2**12 / (pi 2**24) of the mass each:
    # most draws of a hit a point that b also hit once n is in the thousands.
    assert shared > (0.1 if n < 10_000 else 0.8)


@pytest.mark.skipif(not HAVE_NUMBA, reason="needs numba")
@pytest.mark.parametrize("n", [0, 1, 3, 4, 5, 1001, 2**17 + 3])
def test_compiled_pcg64_stream_is_random_raw(n):
    # The compiled loop steps numpy's PCG64 itself: the words, the angles and
    # the state afterwards are those of ``random_raw`` and the numpy passes.
    loops = compiled_loops()
    ref = np.random.PCG64(2024)
    ref.random_raw(7)
    state = ref.state["state"]
    bits = np.empty(n, dtype=np.int64)
    x = np.empty(n)
    after = sech_sampler._pcg64_block(loops[3], state["state"], state["inc"], bits, x)
    words = ref.random_raw(n)
    np.testing.assert_array_equal(bits.view(np.uint64), words)
    mag = words.view(np.int64) & np.int64(2**63 - 1)
    np.testing.assert_array_equal(x, mag * (np.pi / 2.0**65))
    assert after == ref.state["state"]["state"]


@pytest.mark.skipif(not HAVE_NUMBA, reason="needs numba")
def test_compiled_log_tan_is_the_numpy_one():
    # ln tan by the rational tangent and its rounding's correction (no
    # fused multiply-add in either) gives the same bits compiled and by
    # numpy passes, and those of its plain formula, on every angle of the
    # sampler's range: random ones, the ends, the subnormal and tiny ones.
    rng = np.random.default_rng(6)
    top = np.pi / 4
    theta = np.concatenate(
        [
            rng.uniform(0.0, top, 1_000_000),
            rng.integers(0, 2**63, 100_000) * (np.pi / 2.0**65),
            np.nextafter(top, 0.0) - np.arange(1000) * 2.0**-53,
            [0.0, 5e-324, 1e-300, 2.0**-65 * np.pi, 1e-8, 0.5, top],
        ]
    )
    loops = compiled_loops()
    compiled, corr = theta.copy(), np.empty(theta.size)
    loops[6](compiled, corr)
    with np.errstate(divide="ignore"):
        np.log(compiled, out=compiled)
    loops[1](compiled, corr, np.zeros(theta.size, dtype=np.int64), 1.0)
    passes = theta.copy()
    work = np.empty((3, theta.size))
    sech_sampler._log_tan_passes(passes, *work)
    np.testing.assert_array_equal(compiled, passes)
    np.testing.assert_array_equal(passes, rational_log_tan(theta))
    assert passes[-7] == -np.inf
    with np.errstate(divide="ignore"):
        expected = np.log(np.tan(theta))
    ok = theta > 0
    np.testing.assert_allclose(passes[ok], expected[ok], rtol=1e-15, atol=3e-16)


@pytest.mark.skipif(not HAVE_NUMBA, reason="needs numba")
def test_compiled_noise_leaves_the_generator_as_random_raw(monkeypatch):
    # A pending 32-bit half word of the generator survives, as with the
    # numpy passes, and the generator ends where they leave it.
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    n = 2 * sech_sampler._SECH_BLOCK + 5
    results = []
    for min_size in (0, np.inf):
        monkeypatch.setattr(sech_sampler, "_COMPILED_MIN_SIZE", min_size)
        gen = np.random.default_rng(5)
        gen.integers(0, 10, dtype=np.int32)
        noise = sech_sampler.sech_noise(n, 2**-6, gen)
        results.append((noise, gen.bit_generator.state, gen.integers(2**31, size=4)))
    (a, state_a, next_a), (b, state_b, next_b) = results
    np.testing.assert_array_equal(a, b)
    assert state_a == state_b and state_a["has_uint32"] == 1
    np.testing.assert_array_equal(next_a, next_b)


def test_numpy_passes_round_to_the_grid_like_rint():
    # The numpy passes round a draw s in [0, 1] as (s + 2**28) - 2**28: the
    # same grid point as rint(s 2**24) / 2**24, ties to even included.
    rng = np.random.default_rng(0)
    k = rng.integers(0, 2**24, 20_000).astype(np.float64)
    ties = (k + 0.5) / 2**24
    s = np.concatenate(
        [
            rng.uniform(size=20_000),
            rng.uniform(size=20_000) ** 12,
            ties,
            np.nextafter(ties, 0.0),
            np.nextafter(ties, 1.0),
            k / 2**24,
            [0.0, 5e-324, 2.0**-25, 3 * 2.0**-25, 1 - 2.0**-25, 1 - 2.0**-53, 1.0],
        ]
    )
    shift = sech_sampler._GRID_SHIFT
    expected = np.rint(s * 2.0**24) / 2.0**24
    np.testing.assert_array_equal((s + shift) - shift, expected)
    assert not np.signbit((s + shift) - shift).any()


# ---------------------------------------------------------------------------
# The draws are those of the plain sequential sampler
# ---------------------------------------------------------------------------


def _sequential_sampler(s0, h, rng, grid=True, first_words=None):
    """The sampler step by step, one round at a time: the first ``n`` words
    give the first proposals; the rows outside [0, 1] are redrawn, in row
    order, from the words that follow, for four rounds; the inverse cdf
    (one ``random()`` per row) then draws the rest. Also the number of rows
    of each round. ``first_words``: the words of the first proposals, if not
    the first ``n`` of ``rng``."""
    if first_words is None:
        first_words = rng.bit_generator.random_raw(s0.size)
    cc = np.clip(s0, 0.0, 1.0)
    draws = cc + sech_noise_of_words(first_words, h)
    todo = np.flatnonzero(~((draws >= 0.0) & (draws <= 1.0)))
    sizes = []
    for _ in range(4):
        sizes.append(todo.size)
        y = cc[todo] + sech_noise_of_words(rng.bit_generator.random_raw(todo.size), h)
        ok = (y >= 0.0) & (y <= 1.0)
        draws[todo[ok]] = y[ok]
        todo = todo[~ok]
    sizes.append(todo.size)
    draws[todo] = sech_ppf(rng.random(size=todo.size), cc[todo], h)
    if grid:
        draws = np.rint(draws * 2.0**24) / 2.0**24
    return draws, sizes


def _adversarial_centres(n):
    rng = np.random.default_rng(8)
    s0 = 1.0 / (1.0 + np.exp(-3.0 * rng.standard_normal(n)))  # a confident model
    s0[rng.uniform(size=n) < 0.15] = 0.0
    s0[rng.uniform(size=n) < 0.15] = 1.0
    s0[rng.uniform(size=n) < 0.05] = 0.5  # ties
    s0[:4000:2] = 2.0**-24  # ties next to an edge
    s0[1:4000:2] = 0.0
    return s0


@pytest.mark.parametrize("compiled", [True, False])
def test_draws_are_those_of_the_sequential_sampler(monkeypatch, compiled):
    # Whether the first proposals and the reserve for the redraw are drawn
    # in the background or not, with the compiled loops or numpy passes, in
    # every output layout, and whether the reserve covers the redraw, ends
    # in the middle of a round or exactly at its end: the draws are those of
    # the plain sequential sampler, which also leaves the generator where
    # the sampler does (a pending 32-bit half word included).
    if compiled and not HAVE_NUMBA:
        pytest.skip("needs numba")
    monkeypatch.setenv("SKCALIB_NUMBA", "1" if compiled else "0")
    n, h = 2 * sech_sampler._SECH_BLOCK + 777, 2.0**-6
    s0 = _adversarial_centres(n)
    ref_rng = np.random.default_rng(21)
    ref_rng.integers(0, 10, dtype=np.int32)
    expected, sizes = _sequential_sampler(s0, h, ref_rng)
    after = ref_rng.bit_generator.state
    assert sizes[0] > n // 8 and sizes[-1] > 0  # the reserve and the cdf used
    proposals = np.cumsum(sizes[:-1])
    for reserve in (0, n // 8, proposals[0], proposals[1] + 5, 10 * n):
        rng = np.random.default_rng(21)
        rng.integers(0, 10, dtype=np.int32)
        # Two threads named: with the default, the worker's ambient state (a
        # joblib configuration or native pool left at one thread by an earlier
        # test) can send every draw down the calling-thread path.
        future = sech_sampler.sech_noise_async(
            n, h, rng, with_complement=True, reserve=int(reserve), n_jobs=2
        )
        buf, ahead = future.result()
        assert (ahead is None) == (reserve == 0)
        sech_sample(
            s0, h, rng, out=buf[1], complement=buf[0], noise=buf[1], reserve=ahead
        )
        np.testing.assert_array_equal(buf[1], expected)
        np.testing.assert_array_equal(buf[0], 1.0 - expected)
        assert rng.bit_generator.state == after
    # Without noise drawn beforehand, unrounded, centres replaced in place.
    rng = np.random.default_rng(21)
    rng.integers(0, 10, dtype=np.int32)
    work = s0.copy()
    sech_sample(work, h, rng, out=work)
    np.testing.assert_array_equal(work, expected)
    assert rng.bit_generator.state == after
    ref_rng = np.random.default_rng(3)
    raw_expected, _ = _sequential_sampler(s0, h, ref_rng, grid=False)
    rng = np.random.default_rng(3)
    noise, ahead = sech_sampler.sech_noise_async(n, h, rng, reserve=n // 8).result()
    raw = sech_sample(s0, h, rng, noise=noise, reserve=ahead, grid=False)
    np.testing.assert_array_equal(raw, raw_expected)
    assert rng.bit_generator.state == ref_rng.bit_generator.state
    # A generator read between the noise and the redraw: the reserve no
    # longer starts where it stands and is left unused.
    ref_rng = np.random.default_rng(21)
    words = ref_rng.bit_generator.random_raw(n)
    ref_rng.random(3)
    expected, _ = _sequential_sampler(s0, h, ref_rng, first_words=words)
    rng = np.random.default_rng(21)
    noise, ahead = sech_sampler.sech_noise_async(n, h, rng, reserve=n // 8).result()
    rng.random(3)
    np.testing.assert_array_equal(
        sech_sample(s0, h, rng, noise=noise, reserve=ahead), expected
    )
    assert rng.bit_generator.state == ref_rng.bit_generator.state


@pytest.mark.skipif(not HAVE_NUMBA, reason="needs numba")
@pytest.mark.parametrize("calm_head", [True, False])
@pytest.mark.parametrize("kind", [np.random.PCG64, np.random.PCG64DXSM])
def test_probed_blocks_and_compiled_redraw_give_the_numpy_draws(
    monkeypatch, calm_head, kind
):
    # The compiled loop decides how to collect a run's rejected rows from
    # its first rows: a calm head followed by a confident rest, and the
    # other way round, give the draws of the numpy passes and of the
    # sequential sampler. No reserve: the whole redraw reads the generator
    # (by the compiled loops, for both bit generators that skip words).
    monkeypatch.setenv("SKCALIB_NUMBA", "1")
    n, h = 3 * sech_sampler._SECH_BLOCK + 5, 2.0**-6
    head = sech_sampler._DENSE_PROBE
    s0 = _adversarial_centres(n)
    calm = np.random.default_rng(4).uniform(0.3, 0.7, size=n)
    if calm_head:
        s0[:head] = calm[:head]
    else:
        s0[head:] = calm[head:]
    s0[head - 1 : head + 2] = [0.0, np.nan, 1.0]  # across the probe's edge
    ref_rng = np.random.Generator(kind(11))
    expected, _ = _sequential_sampler(s0, h, ref_rng)
    # The row sums are checked on centres without NaN (which fails them).
    finite = np.where(np.isnan(s0), 0.5, s0)
    other = 1.0 - finite
    results = []
    for loops in (True, False):
        if not loops:
            monkeypatch.setattr(sech_sampler, "_sech_loops", lambda n: None)
        rng = np.random.Generator(kind(11))
        buf = np.empty((2, n))
        sech_sample(s0, h, rng, out=buf[1], complement=buf[0])
        assert rng.bit_generator.state == ref_rng.bit_generator.state
        results.append(buf)
        checked = sech_sample(
            finite, h, np.random.Generator(kind(11)), check_sum=(other, 0.0, 1.0)
        )
        results.append(np.stack([1.0 - checked, checked]))
        for row in (head - 2, head + 3, n - 1):  # a row sum off, either side
            bad = other.copy()
            bad[row] += 1e-3
            with pytest.raises(sech_sampler.RowSumError):
                sech_sample(
                    finite,
                    h,
                    np.random.Generator(kind(11)),
                    check_sum=(bad, 1.0 - 1e-5, 1.0 + 1e-5),
                )
    np.testing.assert_array_equal(results[0], results[2])
    np.testing.assert_array_equal(results[1], results[3])
    np.testing.assert_array_equal(results[0][1], expected)
    np.testing.assert_array_equal(results[0][0], 1.0 - expected)
    finite_expected, _ = _sequential_sampler(finite, h, np.random.Generator(kind(11)))
    np.testing.assert_array_equal(results[1][1], finite_expected)


def test_philox_reads_its_stream_in_order():
    # Philox's advance(k) skips k blocks of four words: its noise is read in
    # order, with one thread or several.
    n = 5 * sech_sampler._SECH_BLOCK
    runs = []
    for n_threads in (1, 3):
        gen = np.random.Generator(np.random.Philox(4))
        noise, _ = sech_sampler.sech_noise_async(
            n, 2.0**-6, gen, n_jobs=n_threads
        ).result()
        runs.append((noise, gen.bit_generator.random_raw(2)))
    ref = np.random.Philox(4)
    np.testing.assert_array_equal(
        runs[0][0], sech_noise_of_words(ref.random_raw(n), 2.0**-6)
    )
    np.testing.assert_array_equal(runs[0][1], ref.random_raw(2))
    np.testing.assert_array_equal(runs[1][0], runs[0][0])
    np.testing.assert_array_equal(runs[1][1], runs[0][1])


def test_flagged_rows_are_those_of_flatnonzero():
    # Rejected rows are found in flags padded with set entries when they are
    # a few per cent (numpy's branchy scan is slow there): the same indices
    # as flatnonzero, whatever the share and the length of the block.
    rng = np.random.default_rng(0)
    block = sech_sampler._SECH_BLOCK
    flags = np.empty(block + sech_sampler._FLAG_PADDING, dtype=bool)
    for m in (1, 31, 1000, block - 3, block):
        for share in (0.0, 0.01, 0.05, 0.0999, 0.5, 1.0):
            flags[:m] = rng.uniform(size=m) < share
            flags[m:] = rng.uniform(size=flags.size - m) < 0.5  # left over
            expected = np.flatnonzero(flags[:m])
            np.testing.assert_array_equal(sech_sampler._flagged(flags, m), expected)
