"""Synthetic binary calibration problems with exact ground truth.

Each problem draws an original score ``f ~ Uniform(0, 1)`` and a label
``y ~ Bernoulli(η₀(f))``. Optionally the score is perturbed with the
truncated sech kernel of scale ``h`` (as :class:`~skcalib.perturbation.
PerturbedClassifier` does): ``s ~ k(· | f)``. The calibration function of the
reported score is then ``η_h(s) = E[η₀(f) | s]`` and its L1 calibration error
``CE = E|s - η_h(s)|`` is computed here by Gauss–Legendre quadrature, so any
estimator can be checked against the truth.

The perturbed scores are rounded to the grid ``G = {k / 2**24}``, as every
perturbed score is (see :mod:`skcalib.perturbation`); the exact quantities are
those of the continuous law before the rounding. The rounding moves a score by
at most ``2**-25`` and its calibration function by at most ``2**-24 / (2h)``
(an average of ``η_h``, ``|η_h'| <= 1/(2h)``, over a cell of width ``2**-24``),
so the calibration error of the reported scores is within ``2**-25 + 2**-24 /
(2h)`` of ``calibration_error`` (``1.6e-5`` at ``h = 2**-9``, ``2e-3`` at the
smallest scale ``2**-16``).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import expit, logit
from sklearn.utils import Bunch

from ._backend.kernels import _sech, sech_normalizer
from ._backend.sech.sampler import sech_sample
from ._params import ArrayLike, StrOptions, check_random_generator, validate_params

__all__ = [
    "PROBLEMS",
    "make_calibration_problem",
    "calibration_function",
    "true_calibration_error",
    "score_density",
]


def _overconfident(f):
    # Temperature 2 on the logit scale: true odds are the square root of the
    # predicted odds.
    with np.errstate(divide="ignore"):
        return expit(0.5 * logit(f))


_ETA = {
    "calibrated": lambda f: f,
    "overconfident": _overconfident,
    "u2": lambda f: f * f,
    "step": lambda f: np.where(f < 0.5, 0.2, 0.8),
    "wiggle": lambda f: np.clip(f + 0.15 * np.sin(30.0 * np.pi * f), 0.0, 1.0),
}

#: Names of the available problems.
PROBLEMS = tuple(_ETA)

# Gauss–Legendre nodes per panel; panels are dyadic so that the jump of
# "step" at 0.5 is a panel edge.
_GL_NODES = 8
# The sech kernel beyond this many scales carries mass < 1e-17.
_SECH_REACH = 40.0


# The rules of the datasets' own parameters (the others are in RULES; the
# lower end of the perturbation scale is also where the quadrature, panels
# no wider than the scale so memory growing as its inverse, stops resolving
# the kernel).
_RULES = {"problem": StrOptions(*PROBLEMS), "s": ArrayLike()}


def _scale(perturbation_scale):
    return None if perturbation_scale is None else float(perturbation_scale)


def _panels(width):
    """Gauss–Legendre nodes and weights on [0, 1] with panels of ``width``."""
    n_panels = int(round(1.0 / width))
    x, w = np.polynomial.legendre.leggauss(_GL_NODES)
    left = np.arange(n_panels) / n_panels
    nodes = (left[:, None] + (x[None, :] + 1.0) / (2.0 * n_panels)).ravel()
    weights = np.tile(w / (2.0 * n_panels), n_panels)
    return nodes, weights


def _panel_width(h, finest):
    # Panels no wider than the kernel scale h (the kernel is analytic on that
    # scale) and than ``finest``.
    width = finest
    if h is not None:
        width = min(width, 2.0 ** np.floor(np.log2(h)))
    return width


# Widest panels of the f-integral: η₀ of "wiggle" oscillates with period 1/15
# and has kinks, the others are smooth away from dyadic points. The
# s-integrand is smooth on the scale h (up to kinks where η_h crosses the
# diagonal). Halving every width changes the results by < 1e-6.
_F_PANEL = {"wiggle": 2.0**-11}
_F_PANEL_DEFAULT = 2.0**-9
_S_PANEL = 2.0**-8


@lru_cache(maxsize=16)
def _f_quadrature(problem, h):
    """Nodes of the f-integral with weights absorbing the density of f (1) and
    the normaliser of the kernel, plus the same weights times η₀(f)."""
    f_nodes, f_weights = _panels(
        _panel_width(h, _F_PANEL.get(problem, _F_PANEL_DEFAULT))
    )
    # k(s | f) = sech((s - f) / h) / Z(f): the normaliser depends on f only.
    f_mass = f_weights / sech_normalizer(f_nodes, h)
    return f_nodes, f_mass, f_mass * _ETA[problem](f_nodes)


def _integrate_f(s_points, problem, h):
    """Score density ``q(s)`` and ``η_h(s)`` at sorted points ``s``."""
    f_nodes, f_mass, f_eta = _f_quadrature(problem, h)
    reach = _SECH_REACH * h
    q = np.empty_like(s_points)
    num = np.empty_like(s_points)
    block = 256
    for start in range(0, s_points.shape[0], block):
        s = s_points[start : start + block]
        lo = np.searchsorted(f_nodes, s[0] - reach)
        hi = np.searchsorted(f_nodes, s[-1] + reach)
        k = _sech((s[:, None] - f_nodes[None, lo:hi]) / h)
        q[start : start + block] = k @ f_mass[lo:hi]
        num[start : start + block] = k @ f_eta[lo:hi]
    return q, num / q


@lru_cache(maxsize=16)
def _perturbed_tables(problem, h):
    """Gauss–Legendre nodes and weights in s with ``q`` and ``η_h`` there."""
    nodes, weights = _panels(_panel_width(h, _S_PANEL))
    return (nodes, weights, *_integrate_f(nodes, problem, h))


# Largest interpolation grid; beyond it (h < ~2**-9) values are computed at the
# requested points directly.
_MAX_GRID = 2**16


def _grid_size(h):
    # Uniform grid fine enough for linear interpolation of η_h
    # (|η_h''| <= 3 / (2 h²)): error <= (step² / 8) 3 / (2 h²) <= 1e-5.
    step = min(2.0**-11, h * np.sqrt(16.0 / 3.0 * 1e-5))
    return int(np.ceil(1.0 / step)) + 1


@lru_cache(maxsize=16)
def _interpolation_table(problem, h):
    grid = np.linspace(0.0, 1.0, _grid_size(h))
    return (grid, *_integrate_f(grid, problem, h))


def _perturbed_values(s, problem, h):
    """``(q(s), η_h(s))`` at arbitrary points (clipped to [0, 1])."""
    if _grid_size(h) <= _MAX_GRID:
        grid, q, eta = _interpolation_table(problem, h)
        return np.interp(s, grid, q), np.interp(s, grid, eta)
    flat = np.clip(s.ravel(), 0.0, 1.0)
    order = np.argsort(flat)
    q = np.empty_like(flat)
    eta = np.empty_like(flat)
    q[order], eta[order] = _integrate_f(flat[order], problem, h)
    return q.reshape(s.shape), eta.reshape(s.shape)


@validate_params(**_RULES)
def calibration_function(s, *, problem="u2", perturbation_scale=None):
    """Calibration function ``η(s) = P(y = 1 | score = s)`` of a problem.

    Parameters
    ----------
    s : array-like
        Scores in [0, 1].
    problem : str, default="u2"
        One of ``skcalib.datasets.PROBLEMS``.
    perturbation_scale : float, default=None
        Scale ``h`` in [2**-16, 1] of the sech perturbation; ``None`` for the
        original scores. With a perturbation, ``η`` is interpolated linearly
        from a grid fine enough for an error below about 1e-5.

    Returns
    -------
    ndarray
        ``η(s)``, of the shape of ``s``.

    Examples
    --------
    >>> from skcalib.datasets import calibration_function
    >>> calibration_function([0.5], problem="u2")
    array([0.25])
    """
    h = _scale(perturbation_scale)
    s = np.asarray(s, dtype=np.float64)
    if not np.all((s >= 0.0) & (s <= 1.0)):  # also catches NaN
        raise ValueError("s must hold scores in [0, 1] (no NaN).")
    if h is None:
        return np.asarray(_ETA[problem](s), dtype=np.float64)
    return _perturbed_values(s, problem, h)[1]


@validate_params(**_RULES)
def score_density(s, *, problem="u2", perturbation_scale=None):
    """Density of the (perturbed) score on [0, 1].

    Parameters
    ----------
    s : array-like
        Points at which to evaluate the density (0 outside [0, 1]).
    problem : str, default="u2"
        One of ``skcalib.datasets.PROBLEMS``.
    perturbation_scale : float, default=None
        Scale ``h`` in [2**-16, 1] of the sech perturbation; ``None`` for the
        original (uniform) scores.

    Returns
    -------
    ndarray
        Density at ``s``, of the shape of ``s``.

    Examples
    --------
    >>> from skcalib.datasets import score_density
    >>> score_density([0.2, 0.7])
    array([1., 1.])
    """
    h = _scale(perturbation_scale)
    s = np.asarray(s, dtype=np.float64)
    if np.isnan(s).any():
        raise ValueError("s must not contain NaN.")
    if h is None:
        return np.where((s >= 0) & (s <= 1), 1.0, 0.0)
    return np.where((s >= 0) & (s <= 1), _perturbed_values(s, problem, h)[0], 0.0)


@validate_params(**_RULES)
def true_calibration_error(problem="u2", *, perturbation_scale=None):
    """Exact L1 calibration error ``E|s - η(s)|`` of a problem, by quadrature.

    Accurate to about 1e-6 (the integrand has kinks where ``η(s)`` crosses
    ``s``). With a perturbation, this is the error of the continuous law; the
    scores of :func:`make_calibration_problem`, rounded to the grid ``k /
    2**24``, have an error within ``2**-25 + 2**-24 / (2h)`` of it.

    Parameters
    ----------
    problem : str, default="u2"
        One of ``skcalib.datasets.PROBLEMS``.
    perturbation_scale : float, default=None
        Scale ``h`` in [2**-16, 1] of the sech perturbation; ``None`` for the
        original scores.

    Returns
    -------
    float
        The calibration error ``E|s - η(s)|``.

    Examples
    --------
    >>> from skcalib.datasets import true_calibration_error
    >>> round(true_calibration_error("u2"), 6)  # ∫ (u - u²) du = 1/6
    0.166667
    """
    h = _scale(perturbation_scale)
    return _true_ce(problem, h)


@lru_cache(maxsize=64)
def _true_ce(problem, h):
    if h is None:
        nodes, weights = _panels(2.0**-11)
        return float(np.sum(weights * np.abs(nodes - _ETA[problem](nodes))))
    nodes, weights, q, eta = _perturbed_tables(problem, h)
    return float(np.sum(weights * q * np.abs(nodes - eta)))


@validate_params(**_RULES)
def make_calibration_problem(
    n_samples, *, problem="u2", perturbation_scale=None, random_state=None
):
    """Sample a binary calibration problem whose calibration error is known.

    Original scores are ``f ~ Uniform(0, 1)``, labels ``y ~ Bernoulli(η₀(f))``
    with

    * ``"calibrated"``: ``η₀(f) = f``;
    * ``"overconfident"``: ``η₀(f) = expit(logit(f) / 2)``;
    * ``"u2"``: ``η₀(f) = f²``;
    * ``"step"``: ``η₀(f) = 0.2`` below 0.5 and ``0.8`` above;
    * ``"wiggle"``: ``η₀(f) = clip(f + 0.15 sin(30πf), 0, 1)``, which a 15-bin
      ECE averages away.

    With ``perturbation_scale=h`` the reported score is drawn from the sech
    kernel of scale ``h`` centred at ``f`` and rounded to the grid ``G = {k /
    2**24}``, by the sampler of :func:`skcalib.perturb_proba`
    (the labels still depend on ``f``).

    Parameters
    ----------
    n_samples : int
        Number of samples, at least 1.
    problem : str, default="u2"
        One of ``skcalib.datasets.PROBLEMS``.
    perturbation_scale : float, default=None
        Scale ``h`` in [2**-16, 1] of the sech perturbation, or ``None``.
    random_state : int, Generator, RandomState or None, default=None
        Seed or generator of the scores, labels and perturbation; pass an
        int for reproducible output across calls.

    Returns
    -------
    :class:`~sklearn.utils.Bunch`
        ``y_true`` (int 0/1), ``y_proba`` (reported scores, on ``G`` when
        perturbed), ``scores_orig`` (``f``), ``calibration_error`` (exact CE
        of the reported scores; with a perturbation, of the continuous law
        before the rounding to ``G``, which moves it by at most ``2**-25 +
        2**-24 / (2h)``, see the module docstring),
        ``total_variation`` (of ``η₀``, an upper bound for the perturbed
        calibration function), ``problem``, ``perturbation_scale``.

    Examples
    --------
    >>> from skcalib.datasets import make_calibration_problem
    >>> d = make_calibration_problem(1000, problem="u2", random_state=0)
    >>> d.y_proba.shape, round(d.calibration_error, 4)
    ((1000,), 0.1667)
    """
    h = _scale(perturbation_scale)
    rng = check_random_generator(random_state)
    f = rng.random(n_samples)
    y = (rng.random(n_samples) < _ETA[problem](f)).astype(np.int64)
    s = f if h is None else sech_sample(f, h, rng)
    return Bunch(
        y_true=y,
        y_proba=np.asarray(s, dtype=np.float64),
        scores_orig=f,
        calibration_error=_true_ce(problem, h),
        total_variation=_total_variation(problem),
        problem=problem,
        perturbation_scale=h,
    )


@lru_cache(maxsize=16)
def _total_variation(problem):
    # Perturbation averages η₀ with a monotone-likelihood-ratio kernel, which
    # does not increase the total variation, so TV(η₀) also bounds TV(η_h).
    x = np.linspace(0.0, 1.0, 2**20 + 1)
    return float(np.abs(np.diff(_ETA[problem](x))).sum())
