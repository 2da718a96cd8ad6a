"""SmoothECE (Blasiok & Nakkiran 2023) on grid sufficient statistics.

Everything here works from the histograms of :func:`grid.calibration_statistics`
(``sum w``, ``sum w*y``, ``sum w*s`` per grid point of a fine grid). The
bandwidth search coarsens those histograms exactly, so the data are binned
once whatever the number of bisection steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import fft as _fft
from scipy import optimize as _optimize

from .grid import (
    FINE_M,
    GridPyramid,
    calibration_statistics,
    grid_points,
    grid_size,
    reflected_smooth,
    residual_statistics,
    trapezoid,
)

SIGMA_TOL = 1e-6
# First pass of the sigma* search: a 2**12-cell grid keeps the histograms in
# L1/L2 cache (binning is then close to a plain bincount) and is fine enough
# whenever sigma* > ~0.012; smaller sigma* trigger a second, finer pass.
FIRST_PASS_M = 2**12
# Scores are clipped to [LOGIT_EPS, 1 - LOGIT_EPS] before the logit transform.
LOGIT_EPS = 1e-6
_LOGIT_MAX = float(np.log((1 - LOGIT_EPS) / LOGIT_EPS))
# The logit grid extends past the clipped range by this margin so that a
# Gaussian of scale <= 1 (the bisection range) loses < 1e-12 of its mass.
_LOGIT_PAD = 8.0


@dataclass(frozen=True)
class GridGeometry:
    """Where the grid lives and how it smooths.

    ``"l1"``: the unit interval with the reflected Gaussian. ``"logit"``: an
    interval of the real line holding ``logit(s)`` with an ordinary Gaussian.
    Scores are mapped affinely onto the unit grid in both cases.
    """

    metric: str = "l1"

    @property
    def lo(self):
        return 0.0 if self.metric == "l1" else -_LOGIT_MAX - _LOGIT_PAD

    @property
    def hi(self):
        return 1.0 if self.metric == "l1" else _LOGIT_MAX + _LOGIT_PAD

    @property
    def length(self):
        return self.hi - self.lo

    def to_unit(self, s, out=None, tmp=None):
        """Scores -> positions in [0, 1] on the grid.

        ``out`` and ``tmp`` (arrays of the shape of ``s``) receive the
        positions and serve as scratch; new arrays are made when omitted.
        """
        if self.metric == "l1":
            if out is None:
                return s
            np.copyto(out, s)
            return out
        # logit(c) = log(c / (1 - c)): one logarithm instead of log(c) and
        # log1p(-c), the costliest operations here. 1 - c is exact for
        # c >= 1/2 and within half an ulp of 1 below, so the quotient, and
        # the logit, are as accurate as the difference of the two logarithms.
        u = np.clip(s, LOGIT_EPS, 1.0 - LOGIT_EPS, out=out)
        t = np.subtract(1.0, u, out=tmp)
        np.divide(u, t, out=u)
        np.log(u, out=u)
        u -= self.lo
        u /= self.length
        return u

    def scores_at(self, M):
        """Score (probability) value of each of the ``M + 1`` grid points."""
        t = grid_points(M)
        if self.metric == "l1":
            return t
        return 1.0 / (1.0 + np.exp(-(self.lo + t * self.length)))

    def smooth(self, hist, sigma):
        """Kernel sums at the grid points, as densities in the metric's units."""
        unit_sigma = sigma / self.length
        if self.metric == "l1":
            return reflected_smooth(hist, unit_sigma)
        return _linear_gaussian_smooth(hist, unit_sigma) / self.length

    def integrate(self, values, M):
        return trapezoid(values, M) * self.length

    @property
    def finest_sigma(self):
        """One step of the finest grid, in the metric's units: the narrowest
        kernel the grid resolves."""
        return self.length / FINE_M

    def grid_size(self, sigma, fine_m):
        return grid_size(sigma / self.length, fine_m)


def _linear_gaussian_smooth(hist, sigma):
    """Ordinary (non-reflected) Gaussian smoothing of grid masses on [0, 1]."""
    squeeze = hist.ndim == 1
    h = hist[:, None] if squeeze else hist
    M = h.shape[0] - 1
    half = min(M, int(np.ceil(7.5 * sigma * M)))
    d = np.arange(-half, half + 1) / M
    ker = np.exp(-0.5 * (d / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))
    n = _fft.next_fast_len(M + 1 + 2 * half)
    spec = _fft.rfft(h, n=n, axis=0) * _fft.rfft(ker, n=n)[:, None]
    out = _fft.irfft(spec, n=n, axis=0)[half : half + M + 1]
    return out[:, 0] if squeeze else out


def statistics(y, s, w, geometry, M=FINE_M, *, positions=None):
    """Fine-grid sufficient statistics for ``geometry`` (see module docstring).

    ``positions`` is ``geometry.to_unit(s)`` if the caller has it already.
    """
    if geometry.metric == "l1":
        return calibration_statistics(y, s, w, M)
    if positions is None:
        # positions chunk by chunk (the map is elementwise): no array of the
        # positions of every sample
        return calibration_statistics(y, s, w, M, scores=s, transform=geometry.to_unit)
    return calibration_statistics(y, positions, w, M, scores=s)


def fit(y, s, w, geometry, sigma=None):
    """SmoothECE of one binary problem: ``(value, sigma, stats)``.

    ``w`` holds the weights, or is None for unit weights.

    With ``sigma=None`` the value is ``sigma*`` (0 for a residual that is
    zero on the grid, see :func:`self_consistent_value`). ``stats`` are the grid
    statistics used, on a grid fine enough for ``sigma`` (at least
    ``MIN_STEPS_PER_SIGMA`` steps per bandwidth down to ``0.8 * sigma``).
    """
    if sigma is not None:
        stats = statistics(y, s, w, geometry, geometry.grid_size(0.8 * sigma, FINE_M))
        return smece_at(stats, sigma, geometry), sigma, stats
    if geometry.metric == "l1":
        sig, stats = _search(
            lambda M: pyramid(statistics(y, s, w, geometry, M)), geometry
        )
    else:
        # The logit grid is ~44 units long: sigma* of ~0.1 needs ~2**15 cells,
        # so a first pass on 2**12 nearly always leads to a second. Bin once on
        # the finest grid and take each grid of the search from its exact
        # coarsenings (the numbers of a direct binning up to round-off).
        fine = pyramid(statistics(y, s, w, geometry, FINE_M))
        sig, stats = _search(lambda M: pyramid(fine.at(M)), geometry)
    return self_consistent_value(stats, sig), sig, stats


def fit_value(y, s, w, geometry, sigma=None):
    """``(value, sigma)`` of :func:`fit`, from the binned residuals alone.

    SmoothECE reads the statistics only through ``sum w (y - s)`` per grid
    point and ``sum w`` (:func:`grid.residual_statistics`): half the
    histograms of :func:`fit`, which also needs the curve's. The search and
    its grids are those of :func:`fit`. A residual within round-off of zero
    at every grid point is decided by :func:`fit` itself, whose exact test
    (``sum w y == sum w s``) the residuals cannot repeat.
    """

    def residuals(M):
        return ResidualPyramid(*residual_statistics_of(y, s, w, geometry, M), n=len(s))

    if sigma is not None:
        stats = residuals(geometry.grid_size(0.8 * sigma, FINE_M))
        return smece_at(stats, sigma, geometry), sigma
    if geometry.metric == "l1":
        sig, stats = _search(residuals, geometry)
    else:
        fine = residuals(FINE_M)
        sig, stats = _search(fine.coarsened, geometry)
    if stats.near_zero():
        return fit(y, s, w, geometry)[:2]
    return sig, sig


def _search(bin_at, geometry):
    """``(sigma*, stats)``: the bandwidth search of :func:`fit` on the grids
    ``bin_at(M)`` gives (a first pass on ``FIRST_PASS_M`` cells, then on the
    grid the bandwidth found needs)."""
    M = FIRST_PASS_M
    while True:
        stats = bin_at(M)
        sig = solve_sigma(stats, geometry, grid=M)
        need = geometry.grid_size(0.8 * sig, FINE_M)
        if need <= M:
            return sig, stats
        M = need


def residual_statistics_of(y, s, w, geometry, M=FINE_M):
    """:func:`grid.residual_statistics` on the grid of ``geometry``."""
    if geometry.metric == "l1":
        return residual_statistics(y, s, w, M)
    # the padded logit grid holds every clipped score strictly inside
    return residual_statistics(
        y,
        s,
        w,
        M,
        transform=geometry.to_unit,
        interior=True,
        logit=(LOGIT_EPS, geometry.lo, geometry.length),
    )


class ResidualPyramid(GridPyramid):
    """Binned residuals (:func:`grid.residual_statistics`) with their exact
    coarsenings, the total weight, and a bound on their round-off."""

    def __init__(self, resid, total, *, n):
        super().__init__(resid)
        self.total = total
        # each grid sum is off by at most ~n eps times the total weight (the
        # sums of the residuals, their differences and the coarsening steps);
        # 8 times that is a safe margin for :meth:`near_zero`
        self.roundoff = 8.0 * (n + self.fine_m) * np.finfo(float).eps * abs(total)
        self._n = n

    def coarsened(self, M):
        """The residuals on ``M`` cells, as a pyramid of their own."""
        return ResidualPyramid(self.at(M), self.total, n=self._n)

    def near_zero(self):
        """Every residual is within round-off of 0 (then the exact test of
        :func:`self_consistent_value` on the full statistics decides)."""
        return bool(np.abs(self.at(self.fine_m)).max() <= self.roundoff)


def self_consistent_value(stats, sigma):
    """SmoothECE from the bisection's ``sigma*``: ``sigma*`` itself, but 0 when
    the residual ``sum w (y - s)`` is zero at every grid point.

    Then ``smECE_sigma = 0`` for every ``sigma`` and the fixed point is 0;
    bisection, which only narrows ``[0, 1]`` to a width of ``SIGMA_TOL``,
    would report the midpoint of ``[0, SIGMA_TOL]`` (4.8e-7). ``sigma`` stays
    the bandwidth of the reliability curve.
    """
    h = pyramid(stats).at(pyramid(stats).fine_m)
    return 0.0 if np.array_equal(h[:, 1], h[:, 2]) else sigma


def pyramid(stats):
    """Wrap fine-grid statistics so that repeated coarsenings are cached."""
    return stats if isinstance(stats, GridPyramid) else GridPyramid(stats)


def smece_at(stats, sigma, geometry):
    """``smECE_sigma = integral |r_sigma(t)| dt`` from fine-grid statistics.

    ``stats`` is an ``(M + 1, 3)`` array or a :class:`GridPyramid` of one.
    """
    stats = pyramid(stats)
    M = geometry.grid_size(sigma, stats.fine_m)
    h = stats.at(M)
    if isinstance(stats, ResidualPyramid):
        resid = h / stats.total
    else:
        resid = (h[:, 1] - h[:, 2]) / h[:, 0].sum()
    r = geometry.smooth(resid, sigma)
    return float(geometry.integrate(np.abs(r), M))


def solve_sigma(stats, geometry, *, tol=SIGMA_TOL, lo=0.0, hi=1.0, grid=None):
    """The fixed point ``sigma*`` with ``smECE_sigma* = sigma*`` by bisection.

    ``smECE_sigma - sigma`` is decreasing, positive near 0 (unless the sample
    is exactly calibrated) and negative at 1, so bisection on ``[lo, hi]``
    brackets the root; the returned value is within ``tol`` of it.

    With ``grid=M`` the search stops as soon as every ``sigma`` left in the
    bracket needs the same grid of more than ``M`` cells (of
    ``geometry.grid_size(0.8 * sigma)``): a value found on ``M`` cells is then
    only read for that grid, and is found again on it.

    The bisection's midpoints, stopping rule and answer are kept, but its
    steps are not all evaluated: once two evaluated points bracket the root,
    Brent's method (see :func:`_narrow_bracket`) narrows that bracket to a
    fraction of the bisection's final width in a few evaluations, and a
    midpoint outside the bracket takes the side the bracket gives it (the
    difference is decreasing). Midpoints inside it are evaluated, as before.
    """
    stats = pyramid(stats)

    def excess(sig):
        return smece_at(stats, sig, geometry) - sig

    final = _final_width(lo, hi, tol)
    # the root is in (a, b]; fa, fb are the excesses there once evaluated
    a, fa, b, fb = lo, None, hi, None
    while hi - lo > tol:
        if grid is not None:
            finest = geometry.grid_size(0.8 * lo, FINE_M)
            if finest > grid and finest == geometry.grid_size(0.8 * hi, FINE_M):
                break
        mid = 0.5 * (lo + hi)
        if a < mid < b and fa is not None and fb is not None:
            a, fa, b, fb = _narrow_bracket(excess, a, fa, b, fb, 0.25 * final)
        if mid <= a:
            above = True
        elif mid >= b:
            above = False
        else:
            f = excess(mid)
            # ``s - mid > 0`` exactly when ``s > mid`` (IEEE subtraction)
            above = f > 0
            if above:
                a, fa = mid, f
            else:
                b, fb = mid, f
        if above:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _final_width(lo, hi, tol):
    """Width of the bracket at which bisection of ``[lo, hi]`` stops."""
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        hi = mid
    return hi - lo


def _narrow_bracket(f, a, fa, b, fb, width):
    """Shrink ``(a, b]`` holding the root of the decreasing ``f``
    (``fa > 0 >= fb``) to about ``width``.

    Brent's method locates the root to within ``width / 4``; each point it
    evaluates is on a known side of the root, and the nearest ones on each
    side make the bracket. The width is not guaranteed (the caller evaluates
    any midpoint left inside). A kink in ``f`` (the grid is refined at some
    bandwidths) makes Brent fall back to bisection steps.
    """
    seen = {a: fa, b: fb}

    def recorded(x):
        if x not in seen:
            seen[x] = f(x)
        return seen[x]

    _optimize.brentq(
        recorded,
        a,
        b,
        xtol=0.25 * width,
        rtol=4 * np.finfo(float).eps,
        maxiter=200,
        disp=False,
    )
    for x, fx in seen.items():
        if fx > 0 and x > a:
            a, fa = x, fx
        elif fx <= 0 and x < b:
            b, fb = x, fx
    return a, fa, b, fb


def smooth_curve(stats, sigma, geometry):
    """Reliability curve and score density at bandwidth ``sigma``.

    Returns
    -------
    scores : ndarray (M + 1,)
        Grid points as probabilities.
    y_smooth : ndarray (M + 1,)
        Kernel-weighted mean label; NaN where the estimated density is below
        1e-10 of its maximum (no data nearby: the ratio is round-off there).
    density : ndarray (M + 1,)
        Kernel density of the scores (integrates to 1 in the metric's units).
    residual : ndarray (M + 1,)
        Smoothed residual ``r_sigma`` (its integral of ``|.|`` is smECE).
    """
    stats = pyramid(stats)
    M = geometry.grid_size(sigma, stats.fine_m)
    h = stats.at(M)
    total = h[:, 0].sum()
    sm = geometry.smooth(h / total, sigma)
    dens = sm[:, 0]
    num = sm[:, 1]
    resid = sm[:, 1] - sm[:, 2]
    ok = dens > 1e-10 * dens.max()
    y_smooth = np.full(M + 1, np.nan)
    y_smooth[ok] = np.clip(num[ok] / dens[ok], 0.0, 1.0)
    return geometry.scores_at(M), y_smooth, dens, resid
