"""Binary base maps (temperature, Platt, beta, sigmoid): fits and posterior
predictive log-odds.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit

from .scaling import (
    EXTRA_PRIOR_SD,
    INTERCEPT_PRIOR_SD,
    LOG_SCALE_PRIOR_SD,
    fit_platt_batch,
)

# The beta base's |c| / a at most: below 1, so that both exponents of the
# beta map stay positive and the base log-odds strictly increasing.
BETA_SHAPE_LIMIT = 0.9


# A binary base is its posterior predictive (the posterior mean probability,
# see posterior_draws) rather than its maximum a posteriori fit. On small
# near-separable calibration sets the maximum sits at a sharp slope that the
# data hardly pin (test rows in the gap between the classes then get
# probabilities of 0.005); averaging over the slopes and intercepts the data
# allow keeps those rows near the middle. On the benchmark's tuning seeds
# (n <= 200) it took breast_cancer/MLP/100 from +7.4 % to +2.3 % of the
# best peer's log-loss, the mean gap from +0.37 % to +0.22 % and the wins
# from 22 to 30 (report seeds: +53 % to -0.3 %, +4.31 % to +3.64 %, 23 to
# 30). False: the maximum.
POSTERIOR_AVERAGE = True


# Quadrature of that posterior: grid points per coordinate (by number of
# coefficients) and half-width in standard deviations of the Laplace
# approximation (within about 0.1 % of the exact posterior mean probability:
# the posterior of a small sample is skewed towards sharp slopes, beyond the
# Laplace approximation's span); the predictive base is tabulated at
# TABLE_POINTS log-odds.
POSTERIOR_GRID = {1: 41, 2: 25, 3: 11}


POSTERIOR_SPAN = 8.0


# Prior precisions of (log a, b, c), in the order of the coefficients.
_PRIOR_PRECISION = np.array(
    [LOG_SCALE_PRIOR_SD**-2, INTERCEPT_PRIOR_SD**-2, EXTRA_PRIOR_SD**-2]
)


# Standardised quadrature points of posterior_draws by number of
# coefficients, built on first use (building them cost as much as the rest
# of a small fit's quadrature).
_STANDARD_POINTS = {}


TABLE_POINTS = 1025


def _base_feature(z, base):
    """Regressor of the parametric base: the log-odds, or the probability."""
    return expit(z) if base == "sigmoid" else z


def _beta_feature(z):
    """``log p + log(1 - p)`` of the score of log-odds ``z``."""
    return log_expit(z) + log_expit(-z)


def _base_log_odds(z, base, coef):
    """Base log-odds ``a x + b (+ c s)`` of scores of log-odds ``z``."""
    u = coef[0] * _base_feature(z, base) + coef[1]
    if base == "beta":
        u = u + coef[2] * _beta_feature(z)
    return u


def _fit_base(z_nodes, stats, base):
    """Base log-odds at the nodes and its coefficients ``(a, b)`` (or
    ``(a, b, c)`` for the beta base)."""
    u, coef = _fit_bases(z_nodes[None], np.asarray(stats)[None], base)
    return u[0], tuple(float(c) for c in coef[0])


def _fit_bases(z_nodes, stats, base):
    """:func:`_fit_base` of ``B`` problems: nodes ``(B, m)`` (zero-weight
    padding allowed), statistics ``(B, 2, m)``; base log-odds ``(B, m)`` and
    coefficients ``(B, 2)`` (``(B, 3)`` for the beta base)."""
    x = _base_feature(z_nodes, base)
    if base != "beta":
        intercept = base != "temperature"
        theta = fit_platt_batch(x, stats, intercept=intercept)
        coef = np.column_stack(
            [np.exp(theta[:, 0]), theta[:, 1] if intercept else np.zeros(len(x))]
        )
        return coef[:, :1] * x + coef[:, 1:], coef
    s = _beta_feature(z_nodes)
    theta = fit_platt_batch(x, stats, extra=s)
    coef = np.column_stack([np.exp(theta[:, 0]), theta[:, 1], theta[:, 2]])
    face = np.abs(coef[:, 2]) > BETA_SHAPE_LIMIT * coef[:, 0]
    if face.any():
        # The constrained optimum lies on the violated face c = +-limit a,
        # where the map is Platt scaling of the regressor z +- limit s (and
        # the prior of c one on a).
        ratio = np.copysign(BETA_SHAPE_LIMIT, coef[face, 2])
        theta = fit_platt_batch(
            x[face] + ratio[:, None] * s[face],
            stats[face],
            ridge=(BETA_SHAPE_LIMIT / EXTRA_PRIOR_SD) ** 2,
        )
        a = np.exp(theta[:, 0])
        coef[face] = np.column_stack([a, theta[:, 1], ratio * a])
    return _base_log_odds(z_nodes.T, base, coef.T).T, coef


def _fit_base_coefficients(nodes_and_stats, base):
    """Coefficients of :func:`_fit_base` for ``(nodes, stats)`` pairs of any
    sizes, fitted together (shorter ones padded with zero-weight nodes)."""
    pairs = list(nodes_and_stats)
    m = max(nodes.shape[0] for nodes, _ in pairs)
    Z = np.empty((len(pairs), m))
    S = np.zeros((len(pairs), 2, m))
    for i, (nodes, stats) in enumerate(pairs):
        Z[i, : nodes.shape[0]] = nodes
        Z[i, nodes.shape[0] :] = nodes[-1]
        S[i, :, : nodes.shape[0]] = stats
    return _fit_bases(Z, S, base)[1]


def _base_parameters(coef):
    """``theta = (log a, b[, c])`` of base coefficients ``(a, b[, c])``."""
    # np.concatenate: np.r_ cost as much as the rest of a small quadrature.
    return np.concatenate(([np.log(coef[0])], coef[1:]))


def _base_regressors(z, base):
    """``(x, X)``: the slope's regressor and those of the other coefficients."""
    cols = [np.ones_like(z)]
    if base == "beta":
        cols.append(_beta_feature(z))
    return _base_feature(z, base), np.array(cols)


def _standard_points(free):
    """The points of :func:`posterior_draws` before scaling, shape ``(G, free)``:
    a regular grid of ``POSTERIOR_GRID[free]`` values per coordinate over
    ``[-POSTERIOR_SPAN, POSTERIOR_SPAN]``, within ``POSTERIOR_SPAN`` of 0."""
    if free not in _STANDARD_POINTS:
        t = np.linspace(-POSTERIOR_SPAN, POSTERIOR_SPAN, POSTERIOR_GRID[free])
        T = np.stack(np.meshgrid(*([t] * free), indexing="ij"), -1).reshape(-1, free)
        # The corners of the cube lie up to sqrt(d) times further out than
        # its faces: beyond POSTERIOR_SPAN of the centre (a Laplace density
        # of e^-32) they only cost time (half of the beta base's grid).
        T = T[np.einsum("ij,ij->i", T, T) <= POSTERIOR_SPAN**2]
        T.flags.writeable = False
        _STANDARD_POINTS[free] = T
    return _STANDARD_POINTS[free]


def _linear_predictor(theta, x, X):
    """``exp(theta[:, 0]) x + theta[:, 1:] @ X`` at points ``theta`` (G, d) for
    the regressors of :func:`_base_regressors` (``X`` with at most ``d - 1``
    rows; further coefficients ignored)."""
    eta = np.exp(theta[:, :1]) * x
    if X.shape[0] == 2:
        # The beta base's intercept and extra coefficient, by the product
        # (its rounding is the map's), added to it in place.
        linear = theta[:, 1:3] @ X
        linear += eta
        return linear
    if X.shape[0] == 1:
        # X holds the ones of the intercept: a product with them would give
        # the intercept itself, exactly, for G by m entries.
        eta += theta[:, 1:2]
    return eta


def posterior_draws(z_nodes, stats, base, coef):
    """Quadrature of the posterior of the base: parameter points and weights.

    The likelihood and the priors are those of :func:`fit_platt` (the beta
    base's ``|c| <= BETA_SHAPE_LIMIT a`` as a hard constraint), with the
    slope's prior read as a density of ``a``: flat below 1, half-normal in
    ``log a`` above (continuous at 1, and proper; flat in ``log a`` below 0
    it would put as much mass on slopes of 1e-3 as on 0.5, and the average
    of a small sample would flatten maps that need no flattening). The
    points of the quadrature are a regular
    grid of ``POSTERIOR_GRID[d]`` values per coordinate over
    ``POSTERIOR_SPAN`` standard deviations either side of the maximum, in
    the principal axes of the Laplace approximation there; each point is
    weighted by its exact (unnormalised) posterior density. Returns
    ``((theta, weights), eta, e)``: ``theta`` of shape ``(G, d)`` holding
    ``(log a, b[, c])`` (``b = 0`` for the temperature base), weights summing
    to one; the points' log-odds at the nodes and their ``exp(-|eta|)``
    (for :func:`_mean_log_odds` at the nodes without a second pass).
    """
    W1, W = stats
    x, X = _base_regressors(z_nodes, base)
    free = 1 if base == "temperature" else X.shape[0] + 1
    X = X[: free - 1]
    prec = _PRIOR_PRECISION[:free]
    theta0 = _base_parameters(coef)[:free]
    # Laplace approximation at the maximum (the slope's prior curvature
    # counted on either side of its kink, which only narrows the grid where
    # the data alone would leave log a unbounded below).
    a = np.exp(theta0[0])
    p = expit(a * x + theta0[1:] @ X)
    r, v = W * p - W1, W * p * (1.0 - p)
    J = np.vstack([a * x, X])
    hess = (J * v) @ J.T + np.diag(prec)
    hess[0, 0] += a * (r @ x)
    lam, vec = np.linalg.eigh(hess)
    lam = np.maximum(lam, 1e-6 * max(lam.max(), 1.0))
    theta = theta0 + (_standard_points(free) / np.sqrt(lam)) @ vec.T
    eta = _linear_predictor(theta, x, X)
    # Points outside the beta base's constraint get no weight whatever their
    # likelihood, and over half of its grid lies there: their softplus (an
    # exp and a log1p per node, most of the quadrature's time) is skipped.
    inside = None
    if base == "beta":
        inside = ~(np.abs(theta[:, 2]) > BETA_SHAPE_LIMIT * np.exp(theta[:, 0]))
    e, sp = _exp_softplus(eta, inside)
    nll = sp @ W - eta @ W1
    pen = np.concatenate([np.maximum(theta[:, :1], 0.0), theta[:, 1:]], axis=1)
    # The slope's prior as a density of a: flat below 1 (the penalty's flat
    # side is in log a, where it would be improper), half-normal in log a
    # above; in theta = log a that is the factor a = e^theta below 0.
    logp = -nll - 0.5 * (pen**2) @ prec + np.minimum(theta[:, 0], 0.0)
    if inside is not None:
        logp[~inside] = -np.inf
    weights = np.exp(logp - logp.max())
    # Points below 1e-12 of the largest weight change no probability.
    keep = weights > 1e-12
    theta, weights = theta[keep], weights[keep]
    theta = np.concatenate([theta, np.zeros((theta.shape[0], 3 - free))], axis=1)
    if base == "temperature":
        theta[:, 1] = 0.0
    # The kept points lie inside the constraint, where e has its rows.
    e = e[keep if inside is None else keep[inside]]
    return (theta, weights / weights.sum()), eta[keep], e


def predictive_log_odds(z, base, draws):
    """Log-odds of the posterior mean probability of the base at ``z``."""
    theta, weights = draws
    x, X = _base_regressors(z, base)
    return _mean_log_odds(_linear_predictor(theta, x, X), weights)


def _mean_log_odds(eta, weights, e=None):
    """Log-odds of the ``weights``-mean probability of the points ``eta``.

    Overwrites ``eta`` and ``e`` (see :func:`_expit_pair`).
    """
    # Each side's mean probability separately: no cancellation where one is
    # tiny (below 1e-300 only beyond log-odds of 690).
    p1, p0 = _expit_pair(eta, e)
    q1, q0 = weights @ p1, weights @ p0
    return np.log(np.maximum(q1, 1e-300)) - np.log(np.maximum(q0, 1e-300))


def _softplus(eta, e=None):
    """``log(1 + e^eta)`` (as ``np.logaddexp(0, eta)`` to a few ulps, in
    half its time: ``exp`` is vectorised here, ``logaddexp`` is not);
    ``e = exp(-|eta|)`` if already computed."""
    if e is None:
        e = _exp_neg_abs(eta)
    out = np.log1p(e)
    out += np.maximum(eta, 0.0)
    return out


def _exp_softplus(eta, rows=None):
    """``exp(-|eta|)`` and :func:`_softplus` of ``eta`` at the rows ``rows``.

    ``rows`` is a mask of the rows of ``eta`` (default all). The first is
    returned for those rows only, the second for all, zero in the others.
    The rows left out are still in the second's shape: a matrix product
    over a subset of its rows rounds each row differently from the product
    over all of them.
    """
    part = eta if rows is None else eta[rows]
    e = _exp_neg_abs(part)
    sp = _softplus(part, e)
    if rows is not None:
        full = np.zeros_like(eta)
        full[rows] = sp
        sp = full
    return e, sp


def _exp_neg_abs(eta):
    """``exp(-|eta|)`` in one new array."""
    e = np.abs(eta)
    np.negative(e, out=e)
    return np.exp(e, out=e)


def _expit_pair(eta, e=None):
    """``(expit(eta), expit(-eta))`` from one ``exp`` (``e = exp(-|eta|)``,
    if already computed), neither as one minus the other (no cancellation
    where one of them is tiny).

    The first is returned in ``eta``'s array and ``e`` is overwritten: a
    tabulated base's arrays are megabytes, and the pages of each new one
    were faulted in at a cost that came to half of the arithmetic's.
    """
    if e is None:
        e = _exp_neg_abs(eta)
    # expit(eta) is big = 1 / (1 + e) where eta >= 0, e big elsewhere: big
    # times max(e, 1) or max(e, 0) (e <= 1), and big times 1 is big exactly.
    # Masks of ones and zeros, in place, instead of np.where on both sides:
    # the fewer arrays of G by m entries, the fewer pages to fault in. The
    # mask is a cast comparison, not np.heaviside, whose loop took a third
    # of the binary fit's quadrature (at eta = 0 either value gives e = 1).
    mask = (eta >= 0.0).astype(np.float64)
    p1 = np.maximum(e, mask, out=eta)
    p0 = np.subtract(1.0, mask, out=mask)
    np.maximum(e, p0, out=p0)
    big = np.add(e, 1.0, out=e)
    # np.divide, not np.reciprocal: the same quotient in half the time (the
    # latter is not vectorised).
    np.divide(1.0, big, out=big)
    p1 *= big
    p0 *= big
    return p1, p0


def _fit_averaged_base(z_nodes, stats, base, fitted=None):
    """:func:`_fit_base` with the base's posterior predictive log-odds.

    Returns ``(u, coef, draws)``: ``coef`` the maximum a posteriori
    coefficients, ``draws`` the quadrature of :func:`posterior_draws`, or
    ``None`` (and the maximum's log-odds) without ``POSTERIOR_AVERAGE``.
    ``fitted`` is the result of :func:`_fit_base`, if already known.
    """
    u, coef = _fit_base(z_nodes, stats, base) if fitted is None else fitted
    if not POSTERIOR_AVERAGE:
        return u, coef, None
    u, draws = _posterior_log_odds(z_nodes, stats, base, coef)
    return u, coef, draws


def _fold_base_log_odds(nodes, stats, base, whole):
    """The base's log-odds at the nodes fitted on each row of ``stats`` (the
    training parts of the folds): posterior predictive, or the maximum
    without ``POSTERIOR_AVERAGE``; and :func:`_fit_base` of the statistics
    ``whole`` of all the rows.

    The fit to ``whole`` is one more problem of the folds' batched Newton
    iteration (the same fit as alone, at almost no cost).
    """
    U, coef = _fit_bases(
        np.tile(nodes, (len(stats) + 1, 1)), np.concatenate([stats, whole[None]]), base
    )
    fitted = U[-1], tuple(float(c) for c in coef[-1])
    U, coef = U[:-1], coef[:-1]
    if not POSTERIOR_AVERAGE:
        return U, fitted
    return np.array(
        [
            _posterior_log_odds(nodes, st, base, c)[0]
            for st, c in zip(stats, coef, strict=True)
        ]
    ), fitted


def _posterior_log_odds(z_nodes, stats, base, coef):
    """The posterior predictive log-odds of the base at the nodes, and the
    quadrature of its posterior around the maximum ``coef``."""
    draws, eta, e = posterior_draws(z_nodes, stats, base, coef)
    return _mean_log_odds(eta, draws[1], e), draws
