"""Truncated sech kernel: sampler, cdf, inverse cdf and normaliser."""

import multiprocessing

import numpy as np
import pytest
from scipy import integrate, stats

from skcalib._backend import sech_sampler
from skcalib._backend.kernels import sech_cdf, sech_normalizer, sech_pdf, sech_ppf
from skcalib._backend.sech_compiled import HAVE_NUMBA
from skcalib._backend.sech_sampler import sech_noise, sech_sample

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
def test_proposal_bits_and_single_precision(h):
    # Each 64-bit word gives two proposals from its two 32-bit halves (low half
    # first on little-endian machines): bit 31 is the sign, bits 0-30 give
    # m and the draw is ±h ln tan(pi m / 2**33), m = 0 giving an infinite
    # draw that is always rejected. Single precision keeps the error below
    # ~1e-6 h (a few 1e-7 relative away from the centre) down to m = 1, the
    # end of the tail (|x| = 21.7 h).
    rng = np.random.default_rng(0)
    mags = np.concatenate(
        [[0, 1, 2, 3, 1000, 2**24 + 1, 2**31 - 1], rng.integers(1, 2**31, 993)]
    ).astype(np.uint64)
    signs = rng.integers(0, 2, mags.size).astype(np.uint64)
    halves = mags | (signs << np.uint64(31))
    if np.little_endian:
        words = halves[0::2] | (halves[1::2] << np.uint64(32))
    else:
        words = halves[1::2] | (halves[0::2] << np.uint64(32))
    x = sech_noise(mags.size, h, _FixedWords(words))
    with np.errstate(divide="ignore"):
        expected = h * np.log(np.tan(np.pi * mags.astype(np.float64) / 2.0**33))
    expected = np.where(signs == 1, -expected, expected)
    assert np.isinf(x[0]) and np.isinf(expected[0])
    np.testing.assert_allclose(x[1:], expected[1:], rtol=5e-7, atol=2e-6 * h)
    assert np.abs(x[1:]).max() == pytest.approx(21.73 * h, rel=1e-3)


def test_threaded_blocks_equal_sequential_draws(monkeypatch):
    # Blocks read fixed positions of the stream: one thread or several give
    # the same draws and leave the generator in the same state.
    s0 = np.random.default_rng(2).uniform(size=5 * sech_sampler._SECH_BLOCK + 12_345)
    runs = []
    for n_threads in (1, 2, 3):
        monkeypatch.setattr(sech_sampler, "_sech_threads", lambda k=n_threads: k)
        rng = np.random.default_rng(9)
        runs.append((sech_sample(s0, 2.0**-6, rng), rng.random()))
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
    # Below 2**-80 the noise is scaled in double precision (no underflow):
    # draws around 0 divided by h follow |X|, of cdf 4 arctan(e^t) / pi - 1.
    h = 1e-200
    x = sech_sample(np.zeros(4000), h, np.random.default_rng(3))
    assert np.all(x >= 0) and np.median(x) > 0.5 * h
    res = stats.kstest(x / h, lambda t: 4.0 / np.pi * np.arctan(np.exp(t)) - 1.0)
    assert res.pvalue > 1e-3


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
    # rejected rows (edges), centres outside [0, 1] and NaN.
    rng = np.random.default_rng(3)
    n = 3 * sech_sampler._SECH_BLOCK + 1001
    s0 = rng.uniform(size=n)
    s0[:300] = 0.0
    s0[300:600] = 1.0
    s0[600:610] = [-0.5, 1.5, np.nan, 1e-9, 1 - 1e-9, -0.0, 0.5, 2.0, -1.0, np.nan]
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
    assert np.isnan(fresh[[602, 609]]).all()
    ok = np.delete(fresh, [602, 609])
    assert np.all((ok >= 0.0) & (ok <= 1.0))


def test_noise_drawn_beforehand_gives_the_same_draws():
    s0 = np.random.default_rng(0).uniform(size=2 * sech_sampler._SECH_BLOCK + 3)
    s0[:100] = 0.0  # rejections, redrawn from the generator afterwards
    h = 2.0**-7
    plain_rng = np.random.default_rng(4)
    plain = sech_sample(s0, h, plain_rng)
    rng = np.random.default_rng(4)
    noise = sech_sampler.sech_noise_async(s0.size, h, rng).result()
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
    np.testing.assert_array_equal(future.result(), sech_noise(s0.size, h, ref))
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
