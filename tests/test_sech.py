"""Truncated sech kernel: sampler, cdf, inverse cdf and normaliser."""

import numpy as np
import pytest
from scipy import integrate, stats

from skcalib._backend.kernels import (
    sech_cdf,
    sech_normalizer,
    sech_pdf,
    sech_ppf,
    sech_sample,
)

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
