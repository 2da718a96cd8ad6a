"""Recalibration maps in log-odds space: a parametric fit plus a kernel correction.

The map of a binary problem is ``q(z) = expit(u + alpha(u))`` with ``z`` the
log-odds of the input probability, ``u = a z + b`` a Platt (or, with ``b = 0``,
temperature; with ``+ c log p(1 - p)``, beta) fit and ``alpha`` a
local-likelihood correction: at each node
``u_k`` the offset ``alpha_k`` maximises the kernel-weighted log-likelihood
``sum_i w_i K_h(u_k - u_i) log p(y_i | expit(u_i + alpha_k))``, shrunk towards
0 by a pseudo-observation whose label is the base prediction ``expit(u_k)``.
As ``h -> infinity`` the correction vanishes (Platt's first-order conditions
already hold), so the family runs from the parametric fit to a local one, and
the bandwidth is chosen by cross-validated log-loss with ``h = inf`` among the
candidates. Multiclass maps apply the same correction to each class's
log-odds after temperature (or matrix) scaling, then renormalise the rows.

Working in log-odds keeps the resolution where confident models put their
scores (a probability-space kernel cannot tell 0.999 from 0.99999). Beyond
the calibration data the correction is constant; a binary map is constant
there too, a multiclass map follows its parametric base (see
:class:`LogitMap`).

All kernel sums run over ``m <= MAX_NODES`` nodes at quantiles of the data,
onto which the samples are binned linearly (weights and first moments kept
exactly), so a fit costs ``O(n + m^2)`` per bandwidth after one binning pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_expit, log_softmax, logsumexp, softmax

from .binning import positive_weight_rows, relative_weights
from .threads import one_blas_thread

__all__ = [
    "BANDWIDTHS",
    "LogitMap",
    "binary_log_odds",
    "class_log_odds",
    "fit_binary_logit_map",
    "fit_logit_map",
    "fit_multiclass_logit_map",
    "logit_map_proba",
    "log_probabilities",
]

# Added to probabilities before the logarithm (as scikit-learn's temperature
# scaling does), so that a zero probability becomes a finite log-odds of -27.6.
LOGIT_FLOOR = 1e-12
# Scores of a class below this share of its smallest positive calibration
# score are raised to it (see score_floor). For atoms j / k (k neighbours,
# k trees) a share of 1/2 would put the 0 atom as far below the first as the
# second is above it, in log-probability; but the labels' log-odds step from
# atom 0 to atom 1 is the wider one where the model's scores pile up at 0
# and 1 (about twice the next one for k-neighbour shares of a Beta(1/2, 1/2)
# probability), and 1/4 was as good as or better than 1/2, 1/3 and 1/10 on
# the tuning seeds of the benchmark's forest and neighbour models.
ZERO_SCORE_FRACTION = 0.25
# The bandwidth that stands for the most local map of all: a monotone step
# function (isotonic regression on the nodes), for calibration functions
# with jumps that a smooth correction can only blur.
MONOTONE = 0.0
# Candidate correction bandwidths, in units of the empirical distribution
# function of the scores (a nearest-neighbour-like bandwidth: narrow where
# the scores are dense, wide in the tails); inf = no correction.
BANDWIDTHS = tuple(2.0 ** np.arange(-7, 0)) + (np.inf, MONOTONE)
N_FOLDS = 5
# Entropy mixed into the seeds of the folds (see stratified_folds).
FOLD_ENTROPY = 0x9E3779B97F4A7C15
# Prior standard deviations of the log-slope (log inverse temperature; a
# one-sided penalty on slopes above 1) and of the intercept of the base.
LOG_SCALE_PRIOR_SD = 2.0
INTERCEPT_PRIOR_SD = 10.0
# The same for the one inverse temperature of a multiclass map. A small
# multiclass calibration set is often separable (every row's top class is
# right), and then the likelihood rewards an ever sharper temperature: with
# a standard deviation of 2, softmax(beta log P) reached beta = 8.4 on 50 rows
# of a 15-neighbour classifier (held-out log-loss 0.023, test 0.37, where a
# few test rows of 0.8 to 0.93 confidence were wrong). A non-separable set
# pins beta with its mistakes, so the prior matters only where the data
# cannot. Chosen on the benchmark's tuning seeds (mean gap to the best peer
# for n <= 200: sd 4 +1.56 %, 2 +0.92 %, 1 +0.37 %, 0.7 +0.29 %, 0.5 +0.38 %;
# 1 had the fewest losses).
TEMPERATURE_PRIOR_SD = 1.0
# Prior standard deviations of the matrix base (fit_matrix_scaling): of the
# off-diagonal and the diagonal entries of its departure from the
# temperature-scaled identity. Matrix scaling alone, without selection,
# gains 10-20 % of log-loss on digits at 100-200 rows (GaussianNB,
# boosting, SVC) but loses up to 9.5 % where one temperature is right
# (synth_10c, MLP, 50 rows), so it is selected. On the benchmark's tuning
# seeds (multiclass settings up to 1000 rows; settings beyond the target,
# mean gap to the best peer for n <= 200; before it: 16, -2.48 %), with
# intercepts of prior standard deviation s_b, on raw log-probabilities:
# (0.1, 0.2; s_b 1) 16, -3.50 %; (0.05, 0.1; 0.5) 13, -4.12 %; (0.03, 0.05;
# 0.3) 10, -4.05 %; on row-centred ones: (0.03, 0.05; 0.3) 7, -4.04 %;
# (0.03, 0.05; 0.1) 12, -3.56 %; without intercepts 12, -3.45 %. The
# intercepts' gain is the benchmark's stratified subsamples, whose class
# frequencies are the test's: where the labels are drawn afresh, auto chose
# the matrix base with intercepts on 4 of 6 samples of 300 rows whose truth
# was one temperature, at 4-11e-3 nats of excess log-loss where the
# temperature had 0.02-6e-3 (without intercepts 0.5-2.8e-3), and on 3000
# rows of a calibrated model, moving a 0.92 probability to 0.88.
MATRIX_PRIOR_SD = (0.03, 0.05)
# Standard errors by which the matrix base must beat the other bases'
# choice (see _matrix_challenge). Its prior already holds it near the
# temperature, and any margin kept it out where it helped (tuning seeds, at
# the priors (0.05, 0.1, 0.5): 0 13 settings beyond the target, mean gap
# -4.12 %; 0.5 14, -3.87 %; 1 15, -3.47 %).
MATRIX_SE_MULTIPLIER = 0.0
# Prior standard deviation of the beta base's coefficient on log p(1 - p).
EXTRA_PRIOR_SD = 2.0
# The beta base's |c| / a at most: below 1, so that both exponents of the
# beta map stay positive and the base log-odds strictly increasing.
BETA_SHAPE_LIMIT = 0.9
# Candidates within this many standard errors of the best count as ties.
SE_MULTIPLIER = 2.0
# The same among the parametric bases alone, from MIN_NARROW_MARGIN_ROWS
# rows (see _two_stage_choice).
BASE_SE_MULTIPLIER = 1.0
MIN_NARROW_MARGIN_ROWS = 500
# Rows within one standard deviation of the narrowest correction window.
MIN_WINDOW_ROWS = 8.0
# Rows from which the step map (bandwidth 0) is a candidate.
MIN_STEP_ROWS = 500
# Rows from which the beta base is a candidate.
MIN_BETA_ROWS = 500
MAX_NODES = 129
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
TABLE_POINTS = 1025
# A binary base is not one base but the mixture of all of them (their
# probabilities averaged), weighted by their cross-validated log scores
# (see base_weights). Below MIN_NARROW_MARGIN_ROWS the hard choice kept
# temperature scaling unless a base beat it by 2 standard errors, and on
# known-truth problems of 50 rows it kept it where the data favoured Platt
# by 0.1 nats a row; a 1-standard-error margin fixed those but let noisy
# comparisons on saturated real scores pick the wrong base outright. A
# mixture moves from temperature only as far as the evidence goes.
# Measured on the benchmark's tuning seeds (known truths at n = 50 and 200,
# 30 samples: worst ratio to the best peer apart from the jump, which no
# smooth base follows; binary real data at n <= 200: mean gap to the best
# peer, settings beyond the target): hard choice 4.7 (platt/200; beta/50
# 4.6, u2/50 4.0), -0.18 %, 5; weights from the bases' marginal
# likelihoods (equal prior odds) 2.1 (their Occam factors under the wide
# intercept prior kept temperature on the Platt truth at n = 200), -0.83 %,
# 4; stacking of the held-out probabilities (prior odds 2) 2.2 (the
# temperature-shaped truth at n = 50), -0.70 %, 5; these weights without
# the bootstrap (odds 2) 2.4 (the same). On calibrated scores (exactly
# temperature scaling) the mixture costs +25 % of the hard choice's excess
# log-loss at 30 rows, +15 % at 100 (some weight on intercepts the data
# cannot pin); on four atoms it gains 13 % and 36 %. From 500 rows, against
# the hard choice among four bases (with beta; SIGMOID_PRIOR_ODDS), on the
# tuning seeds: known truths at n = 1000 and 5000 (12 samples), ratio to the
# best peer beta/1000 2.04 -> 1.46, u2/1000 1.37 -> 1.04, u2/5000 1.96 ->
# 1.18, overconfident/1000 1.03 -> 1.35, platt/1000 0.75 -> 0.94 (the
# others within 0.05; the jump 3.4 -> 3.1 at 1000); binary real data above
# 200 rows: win/tie/loss against the best peer 3/8/3 -> 5/8/1, median gap
# +0.01 % -> -0.06 %, worst +1.16 % -> +0.78 % (synth_bin/RF/1000). A
# hard choice that misses a better base by less than its margin loses the
# whole difference; the mixture loses a share of it. False: the hard choice
# (_two_stage_choice).
AVERAGE_BASES = True
# Prior odds of temperature scaling against each other base in the mixture
# (1 to 1 among the others). Same measures as above: odds 2, 2.3 (the
# temperature-shaped truth at n = 50); 5, 1.9, -0.92 %, 4; 10, 1.6 (u2/50
# and the temperature-shaped truth at n = 50; beta/50 1.5), -0.98 %, 3; 20,
# 1.8 (u2/50), -0.96 %, 4.
BASE_PRIOR_ODDS = 10.0
# Prior odds of the sigmoid base (against 1 for Platt and beta) in the
# mixture from MIN_NARROW_MARGIN_ROWS rows. Its map of the raw score is
# rarely the shape of the truth where the log-odds one is, yet its held-out
# score is within noise of theirs often enough that pseudo-BMA+ gave it 10
# to 25 % of the weight on Platt-shaped and overconfident truths at 1000
# rows, where it alone had 3 to 10 times their excess log-loss (the hard
# choice keeps it last). Same measures as above, odds 1: beta/1000 1.92,
# overconfident/1000 1.59, platt/1000 1.08, real data median -0.15 %, worst
# +0.54 %; 0.3: 1.64, 1.41, 0.99; 0.1: as above.
SIGMOID_PRIOR_ODDS = 0.1
# Bases below this weight are left out of the mixture (and the others'
# weights renormalised): they would move no probability by more than this
# share, and each costs a fit and a tabulation.
MIN_BASE_WEIGHT = 1e-4
# Name of the mixture of bases among the candidates of a selection.
MIXTURE = "mixture"
# Gauss-Hermite points per coordinate of the normal approximation in
# base_weights, by number of coordinates (bases - 1). With four bases, 41
# per axis (68921 points) took 19 ms; 21 (9261) 2 ms, within 1e-3 of 41's
# weights (11: 4e-3), against the normal approximation's own 2e-3 from a
# Monte Carlo of the Bayesian bootstrap.
WEIGHT_QUADRATURE_POINTS = {1: 41, 2: 41, 3: 21}
# Rows used to select the multiclass bandwidth and to fit the temperature
# (one inverse temperature on 8192 rows has a relative standard error of
# about 1 %, which moves the log-loss by far less than the selection's noise).
MAX_SELECTION_ROWS = 2**13
# Larger total weights are scaled down to it (see fit_logit_map).
MAX_TOTAL_WEIGHT = 1e100
# Log-odds offsets are kept within this range where the data cannot pin them.
_ALPHA_LIMIT = 30.0


def score_floor(P):
    """Per-column floor: ``ZERO_SCORE_FRACTION`` of the smallest positive score.

    Models with a few distinct scores (k-nearest neighbours, forests) give
    exact 0s and 1s; ``log(0 + LOGIT_FLOOR)`` would put them at log-odds of
    about -27.6, far beyond every other score, and that gap would decide the
    nodes, the bandwidth's coordinates and the fit of the base. Raised to a
    share of the column's smallest positive score, they sit one step beyond
    it (see ``ZERO_SCORE_FRACTION`` for the size of the step). Only columns
    with an exact 0 get a floor (the others 0, and ``LOGIT_FLOOR`` alone then
    applies): without one nothing says that the scores are atoms, and a
    multiclass map follows its base beyond the calibration range, however
    small a new score is. Returns an array of shape ``(K,)``.
    """
    atoms = np.any(P == 0, axis=0)
    if not atoms.any():
        return np.zeros(P.shape[1])
    positive = np.where(P > 0, P, np.inf).min(axis=0)
    atoms &= np.isfinite(positive)
    return np.where(atoms, ZERO_SCORE_FRACTION * np.where(atoms, positive, 0.0), 0.0)


def log_probabilities(P, floor=None):
    """``log(max(P, floor) + LOGIT_FLOOR)`` (``floor`` per column, default 0)."""
    if floor is not None:
        P = np.maximum(P, floor)
    return np.log(P + LOGIT_FLOOR)


def binary_log_odds(P, floor=None):
    """Log-odds of the second column of a two-column probability matrix."""
    L = log_probabilities(P, floor)
    return L[:, 1] - L[:, 0]


def class_log_odds(L):
    """One-vs-rest log-odds ``L_k - log sum_{j != k} exp(L_j)`` of each column."""
    n, K = L.shape
    # log sum_{j != k} exp(L_j) from running log-sums of the columns before
    # and after k: O(n K), and no cancellation when one class dominates.
    before = np.full((n, K), -np.inf)
    after = np.full((n, K), -np.inf)
    for k in range(1, K):
        np.logaddexp(before[:, k - 1], L[:, k - 1], out=before[:, k])
        j = K - 1 - k
        np.logaddexp(after[:, j + 1], L[:, j + 1], out=after[:, j])
    return L - np.logaddexp(before, after)


# ---------------------------------------------------------------------------
# Nodes and linear binning
# ---------------------------------------------------------------------------


# Half-width (relative) of the two nodes standing for a single distinct value.
_SINGLE_NODE_HALF_WIDTH = 1e-6


def make_nodes(u, w, max_nodes=MAX_NODES):
    """Increasing nodes at weighted quantiles of ``u``, taken at data values.

    The extreme nodes are the smallest and largest ``u`` of positive weight,
    and a sample of at most ``max_nodes`` distinct values gets one node per
    value. Integer weights give the nodes of the repeated rows.
    """
    step = max(1, u.shape[0] // 2**16)
    keep = w[::step] > 0
    u, w = u[::step][keep], w[::step][keep]
    if w.shape[0] and np.all(w == w[0]):
        # Equal weights: their cumulative sums do not depend on the order,
        # and sorting the values alone is many times faster.
        u, cum = np.sort(u), np.cumsum(w)
    else:
        order = np.argsort(u, kind="stable")
        u, cum = u[order], np.cumsum(w[order])
    # np.unique of sorted values (np.concatenate: np.r_ costs more than the
    # rest of a small call)
    nodes = u[np.concatenate(([True], u[1:] != u[:-1]))] if u.shape[0] else u
    if nodes.shape[0] > max_nodes:
        at = np.searchsorted(cum, np.linspace(0.0, cum[-1], max_nodes), side="left")
        q = u[np.minimum(at, u.shape[0] - 1)]
        q[0], q[-1] = u[0], u[-1]
        nodes = np.unique(q)
    # Scores equal up to rounding (one row predicted in two batches) share a
    # node, so that the fit does not depend on the last bits of the input.
    close = np.diff(nodes) <= 1e-9 * (1.0 + np.abs(nodes[1:]))
    nodes = nodes[np.concatenate(([True], ~close))]
    if nodes.shape[0] == 1:
        # One distinct value: an interval centred on it, whose ends share its
        # mass equally, so that the map is the same on both sides of it; a
        # narrow one, so that a base without intercept is fitted at the value
        # itself (at +-0.5 temperature scaling could not reproduce even
        # calibrated scores).
        half = _SINGLE_NODE_HALF_WIDTH * (1.0 + abs(nodes[0]))
        nodes = np.array([nodes[0] - half, nodes[0] + half])
    return nodes


def hat_weights(u, nodes):
    """Left node index and the share ``theta`` of the right node for each ``u``."""
    m = nodes.shape[0]
    # np.minimum/np.maximum: np.clip without its wrapper's overhead
    idx = np.minimum(np.maximum(np.searchsorted(nodes, u, side="right") - 1, 0), m - 2)
    left = nodes[idx]
    theta = np.minimum(np.maximum((u - left) / (nodes[idx + 1] - left), 0.0), 1.0)
    return idx, theta


def bin_to_nodes(u, y, w, nodes, groups=None, n_groups=1):
    """Node sums ``(sum w y, sum w)`` with hat weights; shape ``(2, m)``.

    With ``groups`` (a group index in ``[0, n_groups)`` per sample), the sums
    of each group's samples, shape ``(n_groups, 2, m)``: the same numbers as
    one call per group (each sum adds its samples in the same order), from
    one search of the nodes.
    """
    m = nodes.shape[0]
    idx, theta = hat_weights(u, nodes)
    if groups is not None:
        # Group g owns bins g m .. g m + m - 1 (idx + 1 <= m - 1 stays in it).
        idx = idx + groups * m
    size = m * n_groups
    right = w * theta
    left = w - right
    out = np.empty((2, size))
    for row, wy in enumerate((y, None)):
        a, b = (left, right) if wy is None else (left * wy, right * wy)
        out[row] = np.bincount(idx, a, minlength=size) + np.bincount(idx + 1, b, size)
    if groups is None:
        return out
    return out.reshape(2, n_groups, m).transpose(1, 0, 2)


# ---------------------------------------------------------------------------
# Parametric base
# ---------------------------------------------------------------------------


def _damped_newton(objective, derivatives, theta, max_iter=100):
    """Minimise ``objective`` by Newton steps from ``theta``.

    ``derivatives(theta)`` gives the gradient and the Hessian; the Hessian is
    shifted to positive definiteness where needed, each step is capped at 4
    in every coordinate (a factor e^4 on a log-scale) and halved until the
    objective does not increase.
    """
    d = theta.shape[0]
    value = objective(theta)
    for _ in range(max_iter):
        grad, hess = derivatives(theta)
        low = np.linalg.eigvalsh(hess)[0]
        if low <= 1e-12:
            hess += (1e-9 - low + 1e-12 * np.abs(hess).max()) * np.eye(d)
        step = -np.linalg.solve(hess, grad)
        step *= min(1.0, 4.0 / np.abs(step).max(initial=1e-300))
        t = 1.0
        while True:
            new = objective(theta + t * step)
            if new <= value or t < 1e-10:
                break
            t *= 0.5
        if new > value:
            break
        theta = theta + t * step
        gain, value = value - new, new
        if gain <= 1e-13 * (abs(value) + 1.0):
            break
    return theta


def _damped_newton_batch(objective, derivatives, theta, max_iter=100):
    """:func:`_damped_newton` of ``B`` independent problems at once.

    ``theta`` has shape ``(B, d)``; ``objective(theta, idx)`` gives the values
    ``(b,)`` of the problems ``idx`` at their rows ``theta`` (shape ``(b,
    d)``), ``derivatives(theta, idx)`` their gradients ``(b, d)`` and
    Hessians ``(b, d, d)``. Each problem takes the steps, halvings and stop
    of :func:`_damped_newton` on its own; the iteration only shares the
    array operations (many small Platt fits cost one Python loop).
    """
    theta = np.array(theta, dtype=np.float64)
    B, d = theta.shape
    value = objective(theta, np.arange(B))
    active = np.arange(B)
    eye = np.eye(d)
    for _ in range(max_iter):
        if active.shape[0] == 0:
            break
        th = theta[active]
        old = value[active]
        grad, hess = derivatives(th, active)
        low = np.linalg.eigvalsh(hess)[:, 0]
        shift = low <= 1e-12
        if shift.any():
            big = np.abs(hess[shift]).max(axis=(1, 2))
            hess[shift] += (1e-9 - low[shift] + 1e-12 * big)[:, None, None] * eye
        step = -np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        step *= np.minimum(1.0, 4.0 / np.abs(step).max(axis=1, initial=1e-300))[:, None]
        t = np.ones(active.shape[0])
        new = objective(th + step, active)
        halve = ~((new <= old) | (t < 1e-10))
        while halve.any():
            t[halve] *= 0.5
            new[halve] = objective(
                th[halve] + t[halve, None] * step[halve], active[halve]
            )
            halve[halve] = ~((new[halve] <= old[halve]) | (t[halve] < 1e-10))
        # A problem whose step does not lower its objective stops there.
        moved = ~(new > old)
        theta[active[moved]] = th[moved] + t[moved, None] * step[moved]
        value[active[moved]] = new[moved]
        gain = old - new
        going = moved & ~(gain <= 1e-13 * (np.abs(new) + 1.0))
        active = active[going]
    return theta


def fit_platt(z, stats, *, intercept=True, extra=None, ridge=0.0, max_iter=100):
    """Platt scaling ``expit(a z + b)``, ``a > 0``, fitted to node statistics.

    Maximum a posteriori: the weighted log-likelihood plus a half-Gaussian
    penalty ``max(log a, 0)^2 / (2 LOG_SCALE_PRIOR_SD^2)`` (slopes sharper
    than the model's own scale cost something, softer ones nothing) and a
    wide Gaussian prior on ``b``. The penalty keeps ``a`` finite on
    separable calibration data (the plain maximum-likelihood slope is then
    infinite) without shrinking confident predictions the way Platt's
    smoothed targets do. With ``extra`` (a second regressor ``s`` at the
    nodes) the map is ``expit(a z + b + c s)``, with a Gaussian prior of
    standard deviation ``EXTRA_PRIOR_SD`` on ``c``; ``ridge`` adds ``ridge a^2
    / 2`` (the prior of a ``c`` tied to ``a``). Newton's method on
    ``(log a, b, c)``, the Hessian shifted to positive definiteness where
    needed, with step halving.

    Returns
    -------
    (a, b) or (a, b, c) : tuple of float (``b = 0`` without intercept)
    """
    extra = None if extra is None else np.asarray(extra)[None]
    theta = fit_platt_batch(
        np.asarray(z)[None],
        np.asarray(stats)[None],
        intercept=intercept,
        extra=extra,
        ridge=ridge,
        max_iter=max_iter,
    )[0]
    coef = (float(np.exp(theta[0])), float(theta[1]) if intercept else 0.0)
    return coef + ((float(theta[-1]),) if extra is not None else ())


def fit_platt_batch(z, stats, *, intercept=True, extra=None, ridge=0.0, max_iter=100):
    """:func:`fit_platt` of ``B`` problems at once, by one batched Newton iteration.

    ``z`` and ``extra`` of shape ``(B, m)``, ``stats`` ``(B, 2, m)``; ``ridge``
    a float or one per problem. Nodes of zero weight add nothing, so
    problems with fewer nodes can be padded with them. Returns the
    parameters ``(log a, b, c)`` (without ``b`` if not ``intercept``, without
    ``c`` without ``extra``), shape ``(B, d)``.
    """
    z = np.asarray(z, dtype=np.float64)
    stats = np.asarray(stats, dtype=np.float64)
    B, m = z.shape
    W1, W = stats[:, 0], stats[:, 1]
    cols = [np.ones_like(z)] if intercept else []
    prec = [LOG_SCALE_PRIOR_SD**-2] + [INTERCEPT_PRIOR_SD**-2] * len(cols)
    if extra is not None:
        cols.append(np.asarray(extra, dtype=np.float64))
        prec.append(EXTRA_PRIOR_SD**-2)
    # Regressors of the linear coefficients (all but the log-slope).
    X = np.stack(cols, axis=1) if cols else np.zeros((B, 0, m))
    prec = np.array(prec)
    d = prec.shape[0]
    ridge = np.broadcast_to(np.asarray(ridge, dtype=np.float64), (B,))

    def penalised(theta):
        # Only a log-slope above 0 (sharper than the model) is penalised.
        pen = theta.copy()
        np.maximum(pen[:, 0], 0.0, out=pen[:, 0])
        return pen

    def linear(theta, idx):
        eta = np.exp(theta[:, :1]) * z[idx]
        if d > 1:
            eta += np.einsum("bc,bcm->bm", theta[:, 1:], X[idx])
        return eta

    def objective(theta, idx):
        eta = linear(theta, idx)
        nll = np.einsum("bm,bm->b", W[idx], np.logaddexp(0.0, eta))
        nll -= np.einsum("bm,bm->b", W1[idx], eta)
        pen = penalised(theta)
        return nll + 0.5 * (pen**2 @ prec + ridge[idx] * np.exp(2.0 * theta[:, 0]))

    def derivatives(theta, idx):
        a = np.exp(theta[:, 0])
        p = expit(linear(theta, idx))
        Wi, zi = W[idx], z[idx]
        r, v = Wi * p - W1[idx], Wi * p * (1.0 - p)
        # Jacobian of the linear predictor in theta, one row per coefficient.
        J = np.concatenate([(a[:, None] * zi)[:, None], X[idx]], axis=1)
        grad = np.einsum("bdm,bm->bd", J, r) + prec * penalised(theta)
        aa = ridge[idx] * a * a
        grad[:, 0] += aa
        hess = np.einsum("bdm,bem->bde", J * v[:, None], J)
        hess[:, 0, 0] += a * np.einsum("bm,bm->b", r, zi) + 2.0 * aa
        diag = np.broadcast_to(prec, theta.shape).copy()
        diag[:, 0] *= theta[:, 0] > 0
        hess[:, np.arange(d), np.arange(d)] += diag
        return grad, hess

    return _damped_newton_batch(objective, derivatives, np.zeros((B, d)), max_iter)


def fit_inverse_temperature(L, y_idx, w):
    """Inverse temperature ``beta`` of ``softmax(beta L)`` (maximum a posteriori).

    Minimises ``-sum_i w_i log softmax(beta L_i)[y_i]`` plus the penalty
    of :func:`fit_platt` on ``log beta`` (with ``TEMPERATURE_PRIOR_SD`` in
    place of ``LOG_SCALE_PRIOR_SD``), by a bounded scalar search
    on ``log beta`` in ``[-10, 10]`` polished by Newton steps on the
    analytic gradient (the objective is flat at its minimum, so the search
    alone leaves ``beta`` uncertain at the ``1e-8`` level).
    """
    Ly = L[np.arange(L.shape[0]), y_idx]
    prec = TEMPERATURE_PRIOR_SD**-2
    # beta > 0, so the row maximum of beta L is beta times that of L: the
    # shifted logits are computed once, and each evaluation costs one exp.
    top = L.max(axis=1)
    shifted = L - top[:, None]
    label_gap = Ly - top

    def objective(log_beta):
        b = np.exp(log_beta)
        log_norm = np.log(np.exp(b * shifted).sum(axis=1))
        nll = float(w @ (log_norm - b * label_gap))
        return nll + 0.5 * prec * max(log_beta, 0.0) ** 2

    t = minimize_scalar(
        objective, bounds=(-10.0, 10.0), method="bounded", options={"xatol": 1e-5}
    ).x
    for _ in range(3):
        b = np.exp(t)
        S = softmax(b * L, axis=1)
        mean = np.einsum("ij,ij->i", S, L)
        var = np.einsum("ij,ij->i", S, L * L) - mean * mean
        g = b * float(w @ (mean - Ly))
        grad = g + prec * max(t, 0.0)
        curv = g + b * b * float(w @ var) + prec * (t > 0)
        if not curv > 0:
            break
        step = -grad / curv
        if abs(step) > 1e-3 or not -10.0 <= t + step <= 10.0:
            break  # not in Newton's region: keep the search's answer
        t += step
        if abs(step) < 1e-15:
            break
    return float(np.exp(t))


def fit_vector_scaling(L, y_idx, w, max_iter=100):
    """Vector scaling ``softmax(a * L + b)``, ``a > 0`` per class (maximum a
    posteriori).

    One slope and one intercept per class (Guo et al. 2017), with the priors
    of :func:`fit_platt`: the half-Gaussian penalty on each ``log a_k``
    (sharper than the model costs something, softer nothing) and the wide
    Gaussian prior on each ``b_k``, which also fixes the intercepts' common
    shift that the softmax cannot see. Newton's method on ``(log a, b)``.

    Returns
    -------
    coef : ndarray of shape (n_classes, 2)
        Columns ``a`` and ``b``.
    """
    n, K = L.shape
    Y = np.zeros((n, K))
    Y[np.arange(n), y_idx] = 1.0
    prec = np.r_[np.full(K, LOG_SCALE_PRIOR_SD**-2), np.full(K, INTERCEPT_PRIOR_SD**-2)]

    def penalised(theta):
        return np.r_[np.maximum(theta[:K], 0.0), theta[K:]]

    y_mask = Y.astype(bool)
    last = {}

    def softmax_rows(theta):
        # The softmax and the log-normaliser from one exp pass, kept for the
        # derivatives at the point the objective was last evaluated at (a
        # Newton step evaluates the objective first).
        if last.get("theta") is None or not np.array_equal(last["theta"], theta):
            M = np.exp(theta[:K]) * L + theta[K:]
            top = M.max(axis=1)
            E = np.exp(M - top[:, None])
            total = E.sum(axis=1)
            E /= total[:, None]
            log_norm = top + np.log(total)
            last.update(theta=theta.copy(), S=E, nll=float(w @ (log_norm - M[y_mask])))
        return last["S"], last["nll"]

    def objective(theta):
        return softmax_rows(theta)[1] + 0.5 * float(prec @ penalised(theta) ** 2)

    def derivatives(theta):
        a = np.exp(theta[:K])
        S = softmax_rows(theta)[0]
        R = w[:, None] * (S - Y)
        # The logits' derivatives in log a_k and b_k are a_k L_k and 1 (column
        # k only); the log-loss's Hessian in the logits of row i is
        # w_i (diag S_i - S_i S_i^T), so each block is diag(sum_i w_i S_i U_i
        # V_i) - (w S U)^T (S V) for the derivative columns U, V.
        WS = w[:, None] * S
        WSG = WS * (a * L)
        SG = S * (a * L)
        h_gg = np.diag((WSG * (a * L)).sum(axis=0)) - WSG.T @ SG
        h_gb = np.diag(WSG.sum(axis=0)) - WSG.T @ S
        h_bb = np.diag(WS.sum(axis=0)) - WS.T @ S
        hess = np.block([[h_gg, h_gb], [h_gb.T, h_bb]])
        grad_g = a * (R * L).sum(axis=0)
        hess[np.arange(K), np.arange(K)] += grad_g
        hess += np.diag(prec * np.r_[theta[:K] > 0, np.ones(K)])
        grad = np.r_[grad_g, R.sum(axis=0)]
        return grad + prec * penalised(theta), hess

    theta = _damped_newton(objective, derivatives, np.zeros(2 * K), max_iter)
    return np.column_stack([np.exp(theta[:K]), theta[K:]])


def _row_centred(L):
    """``L`` minus each row's mean (the features of the matrix base).

    On raw log-probabilities a row of ``D`` that is constant, ``D_kj = c_k``,
    adds ``c_k sum_j L_ij`` to class ``k``'s logit: an intercept in all but
    name, which stratified folds (every fold with the sample's class
    frequencies) cannot catch fitting the sample's class frequencies. Centred
    rows sum to 0, and the softmax cannot tell ``beta L`` from ``beta`` times
    the centred rows.
    """
    return L - L.mean(axis=1, keepdims=True)


def fit_matrix_scaling(L, y_idx, w, beta, prior_sd=None, max_iter=100):
    """Matrix scaling ``softmax(A L)`` shrunk towards ``softmax(beta L)``
    (maximum a posteriori).

    ``A = beta I + D`` acts on the row-centred ``L`` (see
    :func:`_row_centred`), with independent Gaussian priors of standard
    deviations ``prior_sd = (off-diagonal, diagonal)`` (default
    ``MATRIX_PRIOR_SD``) on the entries of ``D``: the map runs from
    temperature scaling at the inverse temperature ``beta`` (fitted
    beforehand, with its own prior) to an unrestricted linear map of the
    log-probabilities as the data outweigh the prior. Every class's logit may
    borrow from every other class's log-probability, which one temperature,
    or a slope per class, cannot do: a model that confuses two classes
    systematically is recalibrated pairwise. The softmax cannot see ``D -> D
    + 1 v^T``; the prior settles it, and makes the objective strictly convex.
    No intercepts: they would fit the calibration sample's class
    frequencies, which cross-validation on stratified folds cannot tell from
    a gain (see ``MATRIX_PRIOR_SD``). Newton's method
    (:func:`_damped_newton`) on the objective per unit weight.

    Returns
    -------
    A : ndarray of shape (n_classes, n_classes)
    """
    n, K = L.shape
    d = K * K
    if prior_sd is None:
        prior_sd = MATRIX_PRIOR_SD
    # Coefficients row by row: class k's logit gets (beta e_k + D[k]) . X_i.
    X = _row_centred(L)
    prec = np.full((K, K), prior_sd[0] ** -2.0)
    prec[np.arange(K), np.arange(K)] = prior_sd[1] ** -2.0
    # Per unit weight: the same minimiser, an objective of order 1.
    total = float(w.sum())
    v = w / total
    prec = prec.ravel() / total
    rows = np.arange(n)
    base = beta * X
    Y = np.zeros((n, K))
    Y[rows, y_idx] = 1.0
    last = {}

    def log_softmax_rows(theta):
        if last.get("theta") is None or not np.array_equal(last["theta"], theta):
            log_q = log_softmax(base + X @ theta.reshape(K, K).T, axis=1)
            last.update(theta=theta.copy(), log_q=log_q)
        return last["log_q"]

    def objective(theta):
        log_q = log_softmax_rows(theta)
        return -float(v @ log_q[rows, y_idx]) + 0.5 * float(prec @ theta**2)

    def derivatives(theta):
        S = np.exp(log_softmax_rows(theta))
        grad = ((v[:, None] * (S - Y)).T @ X).ravel() + prec * theta
        # The log-loss's Hessian in the logits of row i is v_i (diag S_i -
        # S_i S_i^T), and the logits are linear in theta with the row's
        # features X_i in each class's block: the Hessian is the sum over
        # rows of that matrix Kronecker X_i X_i^T, two matrix products.
        M = (S[:, :, None] * X[:, None, :]).reshape(n, d)
        VM = v[:, None] * M
        hess = -(M.T @ VM)
        blocks = (VM.T @ X).reshape(K, K, K)
        for k in range(K):
            block = slice(k * K, (k + 1) * K)
            hess[block, block] += blocks[k]
        hess[np.arange(d), np.arange(d)] += prec
        return grad, hess

    # Products and solves of order K^2 are far too small for BLAS threads.
    with one_blas_thread():
        theta = _damped_newton(objective, derivatives, np.zeros(d), max_iter)
    return beta * np.eye(K) + theta.reshape(K, K)


# ---------------------------------------------------------------------------
# Kernel correction
# ---------------------------------------------------------------------------


def node_coordinates(stats):
    """Empirical distribution function at the nodes (mid-point of each mass)."""
    W = stats[1]
    total = W.sum()
    return (np.cumsum(W) - 0.5 * W) / total if total > 0 else np.zeros_like(W)


def correction_kernel(F, h):
    """Gaussian kernels ``exp(-(F_k - F_j)^2 / (2 h^2))`` between node coordinates.

    ``F`` of shape ``(m,)`` or ``(B, m)`` (one matrix per row).
    """
    F = np.asarray(F)
    return np.exp(np.square(F[..., :, None] - F[..., None, :]) * (-0.5 / (h * h)))


def fit_correction(u, stats, h, prior, *, init=None, max_iter=100, tol=1e-9, kern=None):
    """Local-likelihood log-odds offsets ``alpha`` at the nodes ``u``.

    ``alpha_k`` solves ``sum_j K_kj (W1_j - W_j expit(u_j + alpha_k)) +
    prior (expit(u_k) - expit(u_k + alpha_k)) = 0`` with the Gaussian kernel
    ``K_kj = exp(-(F_k - F_j)^2 / (2 h^2))`` in the coordinates ``F`` of
    :func:`node_coordinates` (its peak is 1, so ``prior`` is a weight in the
    units of ``W``; ``kern``, if given, is that matrix, from
    :func:`correction_kernel`). Each equation is the score of a concave
    one-parameter likelihood; Newton's method from ``init`` (default 0) with
    steps capped at 4, until the offset moves by less than ``tol``. Offsets
    are kept in ``[-30, 30]``: a node whose data all carry one label (and no
    prior) would drift towards an infinite offset, and stopping it at the
    bound rather than wherever its probability stops changing keeps the fit
    independent of the path (sample order, warm starts), which matters
    because ``alpha`` is interpolated between nodes. ``h = inf`` returns
    zeros, ``h = MONOTONE`` (0) the isotonic fit of :func:`fit_monotone`.
    """
    return fit_corrections(
        u[None],
        np.asarray(stats)[None],
        h,
        prior,
        init=None if init is None else init[None],
        max_iter=max_iter,
        tol=tol,
        kern=None if kern is None else kern[None],
    )[0]


_BLOCK_ROWS = 256


def _newton_step(a, kw, eu, kw1, u, base, prior):
    """One Newton step of :func:`fit_corrections` on a block of rows."""
    P = np.multiply(np.exp(-a)[:, None], eu)
    P += 1.0
    np.reciprocal(P, out=P)
    own = expit(u + a)
    grad = kw1 - np.einsum("kj,kj->k", kw, P) + prior * (base - own)
    P *= 1.0 - P
    curv = np.einsum("kj,kj->k", kw, P) + prior * own * (1.0 - own)
    step = np.clip(grad / np.maximum(curv, 1e-300), -4.0, 4.0)
    return np.clip(a + step, -_ALPHA_LIMIT, _ALPHA_LIMIT)


def fit_corrections(
    U, stats, h, prior, *, init=None, max_iter=100, tol=1e-9, kern=None
):
    """:func:`fit_correction` of ``B`` problems at once.

    ``U`` of shape ``(B, m)``, ``stats`` ``(B, 2, m)``, ``init`` ``(B, m)``
    and ``kern`` ``(B, m, m)``; returns the offsets, shape ``(B, m)``.
    """
    U = np.asarray(U, dtype=np.float64)
    if not np.isfinite(h):
        return np.zeros_like(U)
    if h == MONOTONE:
        return np.array(
            [fit_monotone(u, st, prior) for u, st in zip(U, stats, strict=True)]
        )
    B, m = U.shape
    W1, W = stats[:, 0], stats[:, 1]
    if kern is None:
        kern = correction_kernel(np.array([node_coordinates(st) for st in stats]), h)
    # Every offset solves its own one-parameter equation: the B m equations
    # are rows of one Newton iteration, and a row leaves it once converged
    # (its next steps would be below round-off, Newton converging
    # quadratically), so that the work follows the rows still moving.
    kw1 = np.matmul(kern, W1[:, :, None])[:, :, 0].reshape(-1)
    kw = (kern * W[:, None, :]).reshape(B * m, m)
    u = U.reshape(-1)
    base = expit(u)
    # expit(u_j + alpha_k) = 1 / (1 + e^-u_j e^-alpha_k): one exponential per
    # node and per offset instead of one per pair (|alpha| <= 30 keeps
    # e^-alpha finite and positive, so an overflow of e^-u_j gives 0).
    with np.errstate(over="ignore"):
        eu = np.repeat(np.exp(-U), m, axis=0)
    alpha = np.zeros(B * m) if init is None else np.array(init, dtype=np.float64)
    alpha = alpha.reshape(-1)
    rows = np.arange(B * m)
    frozen = np.zeros(B * m, dtype=bool)
    a = alpha.copy()
    for _ in range(max_iter):
        new = np.empty_like(a)
        # Blocks of rows small enough for the cache (the work is a few
        # passes over each row).
        for lo in range(0, a.shape[0], _BLOCK_ROWS):
            sl = slice(lo, lo + _BLOCK_ROWS)
            new[sl] = _newton_step(
                a[sl], kw[sl], eu[sl], kw1[sl], u[sl], base[sl], prior
            )
        done = (np.abs(new - a) < tol) & ~frozen
        a = new
        alpha[rows[done]] = a[done]
        frozen |= done
        if frozen.all():
            break
        # Converged rows keep being stepped (and ignored) until they are half
        # of the block: dropping them costs a copy of the rest.
        if 2 * np.count_nonzero(frozen) > frozen.shape[0]:
            keep = ~frozen
            rows, a, kw, eu = rows[keep], a[keep], kw[keep], eu[keep]
            kw1, u, base, frozen = kw1[keep], u[keep], base[keep], frozen[keep]
    else:
        alpha[rows[~frozen]] = a[~frozen]
    return alpha.reshape(B, m)


def pool_adjacent_violators(mean, weight):
    """Blocks of the weighted non-decreasing least-squares fit to ``mean``.

    ``weight`` must be positive. Returns the block index of every entry
    (blocks numbered from 0 in increasing order).
    """
    # Each block: (sum of weight * mean, sum of weight, first entry).
    sums, weights, starts = [], [], []
    for i, (m, w) in enumerate(zip(mean, weight, strict=True)):
        sums.append(m * w)
        weights.append(w)
        starts.append(i)
        while len(sums) > 1 and sums[-2] * weights[-1] >= sums[-1] * weights[-2]:
            merged_sum, merged_weight = sums.pop(), weights.pop()
            sums[-1] += merged_sum
            weights[-1] += merged_weight
            starts.pop()
    block = np.zeros(len(mean), dtype=np.intp)
    block[starts[1:]] = 1
    return np.cumsum(block)


def fit_monotone(u, stats, prior):
    """Log-odds offsets of the isotonic fit at the nodes ``u``.

    The node frequencies ``W1 / W`` are pooled into non-decreasing blocks
    (:func:`pool_adjacent_violators`), each block's frequency is shrunk by
    ``prior`` pseudo-observations labelled with the block's mean base
    probability ``expit(u)``, which keeps it away from 0 and 1 (a running
    maximum restores the order the shrinkage may break), and nodes without
    mass take the value interpolated between their neighbours. Offsets are
    ``logit(q) - u`` within ``[-30, 30]``.
    """
    W1, W = stats
    has = W > 0
    if not np.any(has):
        return np.zeros_like(u)
    block = pool_adjacent_violators(W1[has] / W[has], W[has])
    size = np.bincount(block, W[has])
    ones = np.bincount(block, W1[has])
    base = np.bincount(block, W[has] * expit(u[has]))
    q = np.maximum.accumulate((ones + prior * base / size) / (size + prior))
    q = np.interp(u, u[has], q[block])
    with np.errstate(divide="ignore"):
        log_odds = np.log(q) - np.log1p(-q)
    return np.clip(log_odds - u, -_ALPHA_LIMIT, _ALPHA_LIMIT)


@dataclass(frozen=True)
class LogitMap:
    """``u -> expit(u + alpha(u))`` with ``alpha`` interpolated between nodes.

    Beyond the extreme nodes ``alpha`` is constant. With ``clip`` (binary
    maps) the map itself is constant there: no extrapolation beyond the
    most extreme calibration score, where being more confident costs little
    when right and much when wrong. Without it (multiclass maps) the
    parametric base carries the map beyond them: each class clipped to its
    own range and the row renormalised would reorder the classes of a row
    more confident than any calibration row.
    """

    nodes: np.ndarray
    alpha: np.ndarray
    bandwidth: float
    clip: bool = True

    def log_odds(self, u):
        inside = np.clip(u, self.nodes[0], self.nodes[-1])
        if self.clip:
            u = inside
        if not np.any(self.alpha):
            return u
        return u + np.interp(inside, self.nodes, self.alpha)


def _node_log_loss(log_odds, stats, eps, mix=0.0):
    """Held-out log-losses of the node masses and their weights.

    The probabilities are ``expit(log_odds)`` mixed ``mix`` towards 1/2 (the
    output the fitted map will give). Returns ``(losses, weights)``, each of
    shape ``(2 m,)``: the loss of a positive and of a negative sample at
    each node, weighted by the positive and negative mass there.
    """
    W1, W = stats
    q1 = (1.0 - mix) * expit(log_odds) + 0.5 * mix
    q0 = (1.0 - mix) * expit(-log_odds) + 0.5 * mix
    l1 = -np.log(np.clip(q1, eps, 1.0 - eps))
    l0 = -np.log(np.clip(q0, eps, 1.0 - eps))
    return np.concatenate([l1, l0]), np.concatenate([W1, W - W1])


def standard_error_choice(candidates, losses, weights, n_eff, multiplier=SE_MULTIPLIER):
    """The first (simplest) candidate within ``multiplier`` standard errors.

    ``losses[c]`` holds the held-out losses of candidate ``c``, paired across
    candidates (same samples, same order) and weighted by ``weights``. A
    candidate is kept if its mean loss exceeds the best one's by at most
    ``multiplier`` standard errors of the mean paired difference, with
    ``n_eff`` independent samples (Breiman's one-SE rule, on paired
    differences; for the bandwidths with a wider margin). The paired
    difference is what tells two candidates apart; its standard error
    shrinks with the sample size much faster than that of either mean loss,
    so a large calibration set gets the map it supports, while on a small
    one the margin keeps the winner of many noisy comparisons from being
    chosen by chance. Returns the chosen candidate and ``{candidate: mean
    loss}``.
    """
    total = weights.sum()
    means = {c: float(weights @ losses[c]) / total for c in candidates}
    best = min(candidates, key=means.get)
    for c in candidates:
        d = losses[c] - losses[best]
        gap = means[c] - means[best]
        var = max(float(weights @ (d * d)) / total - gap * gap, 0.0)
        if gap <= multiplier * np.sqrt(var / max(n_eff, 1.0)):
            return c, means
    return best, means  # pragma: no cover (the best is within 0 of itself)


def _two_stage_choice(bases, hs, cross_validate, weights, n_eff):
    """Base, then bandwidth, by :func:`standard_error_choice`.

    ``cross_validate(base, h, state)`` returns ``(state, losses)``: the
    held-out losses of the map ``(base, h)``, and what warm-starts the next
    bandwidth. The bases are compared at the simplest bandwidth ``hs[0]``
    (``inf`` when the bandwidth is selected) with ``BASE_SE_MULTIPLIER``;
    only the chosen base is then corrected, at the other bandwidths, and
    the bandwidth is chosen with ``SE_MULTIPLIER`` (the margin of the bases
    too below ``MIN_NARROW_MARGIN_ROWS`` rows). A few nested parametric
    maps are not many noisy comparisons: an extra coefficient costs about
    ``1 / (2 n)`` nats where it is not needed, while one that is needed but
    refused costs its whole gain, which the bandwidths' wide margin would
    let reach ``2 SE_MULTIPLIER^2 / n``. The corrections of different bases
    at one bandwidth differ far less than their bases (the correction
    absorbs the difference), so correcting one base costs little and saves
    most of the fits. Returns ``((base, h), {candidate: mean loss})``.
    """
    losses, states = {}, {}
    for bs in bases:
        states[bs], losses[(bs, hs[0])] = cross_validate(bs, hs[0], None)
    first = [(bs, hs[0]) for bs in bases]
    # Below MIN_NARROW_MARGIN_ROWS the paired standard error understates the
    # noise of the comparison (one confident mistake more or less in a fold
    # of saturated scores moves a base's loss by far more), and the bases
    # keep the wide margin.
    narrow = n_eff >= MIN_NARROW_MARGIN_ROWS
    (base, _), _ = standard_error_choice(
        first,
        losses,
        weights,
        n_eff,
        BASE_SE_MULTIPLIER if narrow else SE_MULTIPLIER,
    )
    state = states[base]
    for h in hs[1:]:
        state, losses[(base, h)] = cross_validate(base, h, state)
    chosen, _ = standard_error_choice(
        [(base, h) for h in hs], losses, weights, n_eff, SE_MULTIPLIER
    )
    total = weights.sum()
    return chosen, {c: float(weights @ v) / total for c, v in losses.items()}


def effective_size(w):
    """Kish's effective sample size ``(sum w)^2 / sum w^2``."""
    v = relative_weights(w)
    total_sq = float(v @ v)
    return float(v.sum() ** 2 / total_sq) if total_sq > 0 else 0.0


def stratified_folds(y_idx, n_folds=N_FOLDS, seed=0):
    """Fold index per sample: labels spread evenly, order otherwise random.

    The generator is seeded with ``(FOLD_ENTROPY, seed)``, not with ``seed``
    alone: scores drawn as ``default_rng(0).uniform(size=n)`` would otherwise
    be the very numbers that order the folds, each fold would then hold
    every fifth row of each class in order of its score, and the held-out
    rows would sit between training rows of the same label, a leak that
    makes the narrowest corrections look best.
    """
    rng = np.random.default_rng((FOLD_ENTROPY, seed))
    key = rng.random(y_idx.shape[0])
    # np.lexsort((key, y_idx)), as a sort by key then a stable sort by label:
    # without ties in the key (almost sure) any sort of it is the stable one,
    # and small labels sort by radix (3x faster than lexsort at 1e6 rows).
    by_key = np.argsort(key)
    sorted_key = key[by_key]
    if np.any(sorted_key[1:] == sorted_key[:-1]):
        by_key = np.argsort(key, kind="stable")
    labels = y_idx[by_key]
    if labels.shape[0] and 0 <= labels.min() and labels.max() < 2**16:
        labels = labels.astype(np.uint16)
    order = by_key[np.argsort(labels, kind="stable")]
    folds = np.empty(y_idx.shape[0], dtype=np.intp)
    folds[order] = np.arange(y_idx.shape[0]) % n_folds
    return folds


# ---------------------------------------------------------------------------
# Binary
# ---------------------------------------------------------------------------


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
    return np.r_[np.log(coef[0]), coef[1:]]


def _base_regressors(z, base):
    """``(x, X)``: the slope's regressor and those of the other coefficients."""
    cols = [np.ones_like(z)]
    if base == "beta":
        cols.append(_beta_feature(z))
    return _base_feature(z, base), np.array(cols)


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
    ``(theta, weights)``, ``theta`` of shape ``(G, d)`` holding ``(log a, b[,
    c])`` (``b = 0`` for the temperature base), weights summing to one.
    """
    W1, W = stats
    x, X = _base_regressors(z_nodes, base)
    free = 1 if base == "temperature" else X.shape[0] + 1
    X = X[: free - 1]
    prec = np.r_[LOG_SCALE_PRIOR_SD**-2, INTERCEPT_PRIOR_SD**-2, EXTRA_PRIOR_SD**-2]
    prec = prec[:free]
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
    k = POSTERIOR_GRID[free]
    t = np.linspace(-POSTERIOR_SPAN, POSTERIOR_SPAN, k)
    T = np.stack(np.meshgrid(*([t] * free), indexing="ij"), -1).reshape(-1, free)
    # The corners of the cube lie up to sqrt(d) times further out than its
    # faces: beyond POSTERIOR_SPAN of the centre (a Laplace density of
    # e^-32) they only cost time (half of the beta base's grid).
    T = T[np.einsum("ij,ij->i", T, T) <= POSTERIOR_SPAN**2]
    theta = theta0 + (T / np.sqrt(lam)) @ vec.T
    eta = np.exp(theta[:, :1]) * x + theta[:, 1:] @ X
    nll = _softplus(eta) @ W - eta @ W1
    pen = np.concatenate([np.maximum(theta[:, :1], 0.0), theta[:, 1:]], axis=1)
    # The slope's prior as a density of a: flat below 1 (the penalty's flat
    # side is in log a, where it would be improper), half-normal in log a
    # above; in theta = log a that is the factor a = e^theta below 0.
    logp = -nll - 0.5 * (pen**2) @ prec + np.minimum(theta[:, 0], 0.0)
    if base == "beta":
        logp[np.abs(theta[:, 2]) > BETA_SHAPE_LIMIT * np.exp(theta[:, 0])] = -np.inf
    weights = np.exp(logp - logp.max())
    # Points below 1e-12 of the largest weight change no probability.
    keep = weights > 1e-12
    theta, weights = theta[keep], weights[keep]
    theta = np.concatenate([theta, np.zeros((theta.shape[0], 3 - free))], axis=1)
    if base == "temperature":
        theta[:, 1] = 0.0
    return theta, weights / weights.sum()


def predictive_log_odds(z, base, draws):
    """Log-odds of the posterior mean probability of the base at ``z``."""
    theta, weights = draws
    x, X = _base_regressors(z, base)
    X = np.vstack([X, np.zeros((2 - X.shape[0], z.shape[0]))])
    eta = np.exp(theta[:, :1]) * x + theta[:, 1:] @ X
    # Each side's mean probability separately: no cancellation where one is
    # tiny (below 1e-300 only beyond log-odds of 690).
    p1, p0 = _expit_pair(eta)
    q1, q0 = weights @ p1, weights @ p0
    return np.log(np.maximum(q1, 1e-300)) - np.log(np.maximum(q0, 1e-300))


def _softplus(eta):
    """``log(1 + e^eta)`` (as ``np.logaddexp(0, eta)`` to a few ulps, in
    half its time: ``exp`` is vectorised here, ``logaddexp`` is not)."""
    return np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))


def _expit_pair(eta):
    """``(expit(eta), expit(-eta))`` from one ``exp``, neither as one minus
    the other (no cancellation where one of them is tiny)."""
    e = np.exp(-np.abs(eta))
    big = 1.0 / (1.0 + e)
    small = e * big
    positive = eta >= 0
    return np.where(positive, big, small), np.where(positive, small, big)


def _fit_averaged_base(z_nodes, stats, base):
    """:func:`_fit_base` with the base's posterior predictive log-odds.

    Returns ``(u, coef, draws)``: ``coef`` the maximum a posteriori
    coefficients, ``draws`` the quadrature of :func:`posterior_draws`, or
    ``None`` (and the maximum's log-odds) without ``POSTERIOR_AVERAGE``.
    """
    u, coef = _fit_base(z_nodes, stats, base)
    if not POSTERIOR_AVERAGE:
        return u, coef, None
    u, draws = _posterior_log_odds(z_nodes, stats, base, coef)
    return u, coef, draws


def _posterior_log_odds(z_nodes, stats, base, coef):
    """The posterior predictive log-odds of the base at the nodes, and the
    quadrature of its posterior around the maximum ``coef``."""
    draws = posterior_draws(z_nodes, stats, base, coef)
    return predictive_log_odds(z_nodes, base, draws), draws


@dataclass(frozen=True)
class BinaryLogitFit:
    """Fitted binary map: base log-odds ``u = a x + b`` then the correction.

    ``x`` is the log-odds ``z`` of the score (bases ``"temperature"``, with
    ``b = 0``, and ``"platt"``) or the score itself (``"sigmoid"``). The
    ``"beta"`` base adds ``c log(p (1 - p))``: ``u = (a + c) log p - (a - c)
    log(1 - p) + b``, beta calibration, with ``|c| < a`` so that it
    increases. ``coef`` holds the maximum a posteriori coefficients; with
    ``base_table`` the base log-odds are instead those of the posterior mean
    probability (:func:`posterior_draws`), tabulated at increasing ``z``.
    """

    base: str
    coef: tuple
    correction: LogitMap
    # Per-column floor of the input scores (score_floor), set by fit_logit_map.
    score_floor: object = None
    # Base log-odds tabulated at increasing log-odds (posterior predictive
    # of the base, see posterior_draws, or of the mixture of bases),
    # interpolated; None: the base itself.
    base_table: object = None
    # {base: weight} of the mixture of bases (base_weights), or None: one base.
    base_weights: object = None

    @property
    def bandwidth(self):
        return self.correction.bandwidth

    def __call__(self, z):
        if self.base_table is None:
            u = _base_log_odds(z, self.base, self.coef)
        else:
            u = np.interp(z, *self.base_table)
        return expit(self.correction.log_odds(u))


def _n_repeats(n, n_maps=1):
    """Cross-validation repeats: more for small samples, where one split is noisy.

    ``n_maps`` one-vs-rest corrections per fit (the cost) count against it.
    """
    return int(np.clip(4000 // max(n * n_maps, 1), 1, 4))


def _simplest_first(hs):
    """Bandwidths from no correction (inf) to the smallest."""
    return sorted(hs, reverse=True)


BINARY_BASES = ("temperature", "platt", "beta", "sigmoid")


def candidate_bandwidths(n_eff):
    """``BANDWIDTHS`` that the effective sample size ``n_eff`` can support.

    A Gaussian window whose standard deviation holds fewer than
    ``MIN_WINDOW_ROWS`` rows fits the noise of a handful of labels, and the
    step map rests on the few rows of each of its steps: on ``n_eff <
    MIN_STEP_ROWS`` rows its cross-validated loss is an average over folds
    whose steps differ from one fit to the next, and a few lucky folds make
    it look best (a map with steps of ten rows costs a few tenths of a nat
    per test row where it is wrong). ``inf`` (no correction) always remains.
    """
    keep = []
    for h in BANDWIDTHS:
        if h == MONOTONE:
            ok = n_eff >= MIN_STEP_ROWS
        else:
            ok = not np.isfinite(h) or h * n_eff >= MIN_WINDOW_ROWS
        if ok:
            keep.append(h)
    return tuple(keep)


def uniform_mix(n):
    """Weight ``1 / (n + 1)`` of the uniform distribution in the output.

    The predictive distribution of a model fitted on ``n`` rows, mixed with
    one pseudo-observation that could carry any label (Laplace's rule for the
    outcome not seen yet): a map fitted on few rows is never more confident
    than ``n + 1`` to 1 against a class, so one confident mistake on new data
    costs at most ``log(K (n + 1))`` nats, and the mixture vanishes as the
    calibration set grows.
    """
    return 1.0 / (max(float(n), 0.0) + 1.0)


def _candidates(bandwidth, base, auto_bases, n_eff):
    """Bandwidths, bases and ``(base, h)`` pairs, simplest first."""
    hs = _simplest_first(
        candidate_bandwidths(n_eff) if bandwidth == "auto" else (float(bandwidth),)
    )
    if base == "auto":
        bases = tuple(b for b in auto_bases if b != "beta" or n_eff >= MIN_BETA_ROWS)
    else:
        bases = (base,)
    return hs, bases, [(bs, h) for h in hs for bs in bases]


def base_weights(losses, weights, n_eff, prior_odds=None):
    """Weights of the bases in their mixture, from their held-out log scores.

    Pseudo-Bayesian model averaging with the Bayesian bootstrap (Yao et al.
    2018, "pseudo-BMA+"): base ``k``'s weight is its posterior probability
    ``pi_k exp(-S_k) / sum_j pi_j exp(-S_j)`` when the held-out log-losses
    ``S_k = sum_i v_i l_ki`` of the bases are those of the sample, averaged
    over the uncertainty of ``S`` as a sample of ``n_eff`` rows gives it:
    the bootstrap's differences ``S_k - S_0`` approximated by their normal
    distribution (mean ``n_eff`` times the mean paired difference, the
    Bayesian bootstrap's covariance of the paired differences), integrated
    by a Gauss-Hermite product rule. A base ahead by a few standard errors
    takes the weight; bases within noise of each other share it, in the
    proportions of the prior.

    Parameters
    ----------
    losses : ndarray of shape (k, N)
        Held-out losses of each base, paired (same samples, same order).
    weights : ndarray of shape (N,)
        Weights of the held-out losses (their total stands for ``n_eff``
        rows).
    n_eff : float
        Independent rows behind the losses.
    prior_odds : ndarray of shape (k,), optional
        Prior weights of the bases (any scale); default equal.

    Returns
    -------
    ndarray of shape (k,)
        Weights summing to one.
    """
    losses = np.asarray(losses, dtype=np.float64)
    k = losses.shape[0]
    log_prior = np.zeros(k) if prior_odds is None else np.log(prior_odds)
    if k == 1:
        return np.ones(1)
    v = weights * (n_eff / weights.sum())
    diff = losses[1:] - losses[0]
    mean = diff @ v
    dev = diff - mean[:, None] / n_eff
    cov = (dev * v) @ dev.T * (n_eff / (n_eff + 1.0))
    lam, vec = np.linalg.eigh(cov)
    t, gw = np.polynomial.hermite_e.hermegauss(WEIGHT_QUADRATURE_POINTS[k - 1])
    T = np.stack(np.meshgrid(*([t] * (k - 1)), indexing="ij"), -1).reshape(-1, k - 1)
    G = np.prod(np.stack(np.meshgrid(*([gw] * (k - 1)), indexing="ij"), -1), -1)
    G = G.reshape(-1) / G.sum()
    S = mean + (T * np.sqrt(np.maximum(lam, 0.0))) @ vec.T
    logits = log_prior - np.concatenate([np.zeros((S.shape[0], 1)), S], axis=1)
    return G @ softmax(logits, axis=1)


def _mixture_log_odds(U, pi):
    """Log-odds of ``sum_k pi_k expit(U[k])`` (``U`` of shape ``(k, ...)``),
    each side's sum taken in logarithms (no cancellation in the tails)."""
    U = np.asarray(U)
    lw = np.log(pi).reshape((-1,) + (1,) * (U.ndim - 1))
    return logsumexp(lw + log_expit(U), axis=0) - logsumexp(lw + log_expit(-U), axis=0)


def _fit_mixture(nodes, stats, bases, pi, grid):
    """Each base of positive weight fitted to ``stats``, then mixed: the log-odds
    at the nodes and at ``grid``, and the base of largest weight with its
    coefficients."""
    at_nodes, at_grid = [], []
    for bs in bases:
        u, coef, draws = _fit_averaged_base(nodes, stats, bs)
        at_nodes.append(u)
        if draws is None:
            at_grid.append(_base_log_odds(grid, bs, coef))
        else:
            at_grid.append(predictive_log_odds(grid, bs, draws))
        if bs == bases[int(np.argmax(pi))]:
            top = (bs, coef)
    u = _mixture_log_odds(at_nodes, pi)
    return u, _mixture_log_odds(at_grid, pi), top


def fit_binary_logit_map(z, y, w, *, prior, eps, bandwidth="auto", base="auto"):
    """Fit the binary map; choose base and bandwidth by cross-validated log-loss.

    The candidates are the bases (``base="auto"``: ``BINARY_BASES``, the
    beta base from ``MIN_BETA_ROWS`` rows; else the one given) and the
    bandwidths (``bandwidth="auto"``: ``BANDWIDTHS``, else the one given); a
    single candidate is fitted directly. The held-out log-loss is evaluated
    on node statistics (stratified 5-fold cross-validation, repeated for
    small samples), with the held-out probabilities mixed towards 1/2 as the
    output will be (:func:`uniform_mix` of the training folds' size); the
    base, then the bandwidth of its correction, are chosen by
    :func:`_two_stage_choice` (bases in the order of ``BINARY_BASES``,
    larger bandwidths before smaller ones) without ``AVERAGE_BASES``. With
    it (and more than one base) the base is instead the mixture of the bases
    (:func:`_average_then_correct`), whose weights the fit keeps in
    ``base_weights``.

    Parameters
    ----------
    z : ndarray of shape (n,)
        Log-odds of the scores.
    y : ndarray of shape (n,)
        Labels in {0, 1} (float).
    w : ndarray of shape (n,)
        Sample weights.
    prior : float
        Pseudo-observation weight of the correction.
    eps : float
        Clipping of probabilities inside the log-loss.
    bandwidth : "auto" or float (``inf`` allowed)
    base : "auto" or one of ``BINARY_BASES``

    Returns
    -------
    fit : BinaryLogitFit
    scores : dict or None
        ``{(base, h): cross-validated log-loss}`` when something was selected.
    """
    n_eff = effective_size(w)
    nodes = make_nodes(z, w)
    hs, bases, candidates = _candidates(bandwidth, base, BINARY_BASES, n_eff)
    scores = None
    if len(candidates) > 1 and z.shape[0] >= 2 * N_FOLDS:
        repeats = _n_repeats(z.shape[0])
        mix = uniform_mix(float(w.sum()) * (N_FOLDS - 1) / N_FOLDS)
        # Node statistics of every (repeat, fold): the corrections of one
        # bandwidth are fitted together, warm-started from the previous
        # bandwidth's.
        held = []
        for r in range(repeats):
            folds = stratified_folds(y.astype(np.intp), seed=r)
            held.append(bin_to_nodes(z, y, w, nodes, folds, N_FOLDS))
        held = np.array(held).reshape(repeats * N_FOLDS, 2, -1)
        total = held.reshape(repeats, N_FOLDS, 2, -1).sum(axis=1)
        train = np.repeat(total, N_FOLDS, axis=0) - held
        weights = np.concatenate([_node_log_loss(nodes, st, eps)[1] for st in held])
        squared, base_fits = [], {}
        mixed = AVERAGE_BASES and len(bases) > 1

        def cross_validate(bs, h, alpha):
            if bs not in base_fits:
                U, coef = _fit_bases(np.tile(nodes, (len(train), 1)), train, bs)
                if POSTERIOR_AVERAGE:
                    U = np.array(
                        [
                            _posterior_log_odds(nodes, st, bs, c)[0]
                            for st, c in zip(train, coef, strict=True)
                        ]
                    )
                base_fits[bs] = U
            U = base_fits[bs]
            kern = None
            if np.isfinite(h) and h != MONOTONE:
                if not squared:
                    F = np.array([node_coordinates(st) for st in train])
                    squared.append(np.square(F[:, :, None] - F[:, None, :]))
                kern = np.exp(squared[0] * (-0.5 / (h * h)))
            alpha = fit_corrections(U, train, h, prior, init=alpha, kern=kern)
            losses = [
                _node_log_loss(U[i] + alpha[i], held[i], eps, mix)[0]
                for i in range(U.shape[0])
            ]
            return alpha, np.concatenate(losses)

        if mixed:
            h, scores, pi = _average_then_correct(
                bases, hs, cross_validate, weights, n_eff, base_fits
            )
        else:
            (base, h), scores = _two_stage_choice(
                bases, hs, cross_validate, weights, n_eff
            )
    else:
        base, h = candidates[0]
        mixed = False
    stats = bin_to_nodes(z, y, w, nodes)
    # The map is constant beyond the extreme nodes: a base is tabulated
    # between them, finely enough for linear interpolation.
    grid = np.union1d(np.linspace(nodes[0], nodes[-1], TABLE_POINTS), nodes)
    mixture = None
    if mixed:
        # Bases of negligible weight change no probability by more than it.
        keep = pi >= MIN_BASE_WEIGHT
        kept = tuple(b for b, k in zip(bases, keep, strict=True) if k)
        u, table, (base, coef) = _fit_mixture(
            nodes, stats, kept, pi[keep] / pi[keep].sum(), grid
        )
        table = (grid, table)
        mixture = dict(zip(bases, map(float, pi), strict=True))
    else:
        u, coef, draws = _fit_averaged_base(nodes, stats, base)
        table = None
        if draws is not None:
            table = (grid, predictive_log_odds(grid, base, draws))
    alpha = fit_correction(u, stats, h, prior)
    fit = BinaryLogitFit(
        base, coef, LogitMap(u, alpha, h), base_table=table, base_weights=mixture
    )
    return fit, scores


def _average_then_correct(bases, hs, cross_validate, weights, n_eff, base_fits):
    """The bases at ``hs[0]``, their mixture, then its bandwidth.

    The mixture's weights come from the bases' held-out losses
    (:func:`base_weights`, temperature scaling ``BASE_PRIOR_ODDS`` times as
    likely a priori as each other base, the sigmoid base
    ``SIGMOID_PRIOR_ODDS`` times from ``MIN_NARROW_MARGIN_ROWS`` rows); its
    held-out log-odds in every
    fold mix the fold's bases, and its bandwidth is chosen by
    :func:`standard_error_choice` with ``SE_MULTIPLIER``. Returns the
    bandwidth, ``{(base, h): mean loss}`` (the mixture as ``MIXTURE``) and
    the weights.
    """
    losses = {}
    for bs in bases:
        losses[(bs, hs[0])] = cross_validate(bs, hs[0], None)[1]
    prior = np.array([BASE_PRIOR_ODDS if b == "temperature" else 1.0 for b in bases])
    if n_eff >= MIN_NARROW_MARGIN_ROWS:
        prior[np.array(bases) == "sigmoid"] = SIGMOID_PRIOR_ODDS
    pi = base_weights(
        [losses[(bs, hs[0])] for bs in bases], weights, n_eff, prior_odds=prior
    )
    keep = pi >= MIN_BASE_WEIGHT
    base_fits[MIXTURE] = _mixture_log_odds(
        [base_fits[b] for b, k in zip(bases, keep, strict=True) if k],
        pi[keep] / pi[keep].sum(),
    )
    state = None
    for h in hs:
        state, losses[(MIXTURE, h)] = cross_validate(MIXTURE, h, state)
    (_, h), _ = standard_error_choice(
        [(MIXTURE, h) for h in hs], losses, weights, n_eff, SE_MULTIPLIER
    )
    total = weights.sum()
    return h, {c: float(weights @ v) / total for c, v in losses.items()}, pi


# ---------------------------------------------------------------------------
# Multiclass
# ---------------------------------------------------------------------------

MULTICLASS_BASES = ("temperature", "sigmoid", "matrix")


def one_vs_rest_log_probabilities(Z, coef, base):
    """Log of the renormalised one-vs-rest fits ``expit(a_k x_k + b_k)``.

    ``Z`` holds each class's one-vs-rest log-odds and ``coef`` the ``(K, 2)``
    coefficients; ``x_k`` is ``Z[:, k]`` (``"platt"``) or its probability
    (``"sigmoid"``).
    """
    log_q = log_expit(_base_log_odds(Z, base, coef.T))
    return log_q - logsumexp(log_q, axis=1, keepdims=True)


@dataclass(frozen=True)
class MulticlassLogitFit:
    """Base log-odds per class, one correction per class, rows renormalised.

    Bases: ``"temperature"`` (``softmax(beta L)``, whose one-vs-rest log-odds
    are corrected), ``"vector"`` (``softmax(a * L + b)``, one slope and one
    intercept per class fitted jointly, :func:`fit_vector_scaling`),
    ``"matrix"`` (``softmax(A L)``, :func:`fit_matrix_scaling`), or
    one-vs-rest Platt scaling of each class's log-odds
    (``"platt"``, ``a_k z_k + b_k``) or of its probability (``"sigmoid"``,
    ``a_k p_k + b_k``), renormalised and then temperature-scaled: the
    renormalisation of ``K`` separately fitted columns moves every row's
    confidence (towards ``1/K`` when the columns sum to more than 1), and
    one inverse temperature fitted after it restores the calibration of the
    whole row that no single column can see. The corrections move it again,
    for the same reason, so a corrected map ends with a second inverse
    temperature, ``sharpness``, fitted to cross-fitted (out-of-fold) output
    of the same map: fitted to the map's own in-sample output it would
    reward the corrections' overfitting with a sharper row.
    """

    base: str
    coef: object  # beta, or ((K, 2) array, beta)
    corrections: tuple
    # Inverse temperature applied to the corrected, renormalised rows.
    sharpness: float = 1.0
    # Per-column floor of the input scores (score_floor), set by fit_logit_map.
    score_floor: object = None

    @property
    def bandwidth(self):
        return self.corrections[0].bandwidth

    def base_log_odds(self, L):
        if self.base == "temperature":
            return class_log_odds(self.coef * L)
        ab, beta = self.coef
        return class_log_odds(beta * _base_log_probabilities(L, ab, self.base))

    def __call__(self, L):
        return self.corrected(self.base_log_odds(L))

    def corrected(self, U):
        """Probabilities from base log-odds ``U``: corrected, rows renormalised."""
        Q = np.column_stack(
            [expit(c.log_odds(U[:, k])) for k, c in enumerate(self.corrections)]
        )
        Q /= Q.sum(axis=1, keepdims=True)
        if self.sharpness == 1.0:
            return Q
        return softmax(self.sharpness * log_probabilities(Q), axis=1)


def _base_log_probabilities(L, ab, base):
    """Log-probabilities of a multiclass base other than temperature scaling."""
    if base == "vector":
        return log_softmax(ab[:, 0] * L + ab[:, 1], axis=1)
    if base == "matrix":
        return log_softmax(_row_centred(L) @ ab.T, axis=1)
    return one_vs_rest_log_probabilities(class_log_odds(L), ab, base)


class _ClassStatistics:
    """A fitted multiclass base, with per-class nodes and node statistics."""

    def __init__(self, L, y_idx, w, base, rows=slice(None), ab=None):
        self.base = base
        if base == "vector":
            # Fitted on the selection rows, like the temperature: its 2 K
            # coefficients are settled long before MAX_SELECTION_ROWS.
            ab = fit_vector_scaling(L[rows], y_idx[rows], w[rows])
        elif base == "matrix":
            # Shrunk towards the temperature fitted on the same rows.
            Lr, yr, wr = L[rows], y_idx[rows], w[rows]
            ab = fit_matrix_scaling(Lr, yr, wr, fit_inverse_temperature(Lr, yr, wr))
        elif base != "temperature" and ab is None:
            ab = _fit_base_coefficients(
                self._statistics(class_log_odds(L), y_idx, w), base
            )
        if base != "temperature":
            L = _base_log_probabilities(L, ab, base)
        # Vector and matrix scaling already hold every class's scale: a
        # temperature after them would only undo part of their priors.
        beta = (
            1.0
            if base in ("vector", "matrix")
            else fit_inverse_temperature(L[rows], y_idx[rows], w[rows])
        )
        self.coef = beta if base == "temperature" else (ab, beta)
        self.nodes, self.stats = zip(
            *self._statistics(class_log_odds(beta * L), y_idx, w), strict=True
        )

    @classmethod
    def many(cls, parts, base):
        """One per ``(L, y_idx, w)`` of ``parts`` (the training folds).

        The one-vs-rest bases of every part and class are fitted together:
        the same fits as one at a time, in one batched Newton iteration.
        """
        if base in ("temperature", "vector", "matrix"):
            return [cls(L, y_idx, w, base) for L, y_idx, w in parts]
        pairs = [
            list(cls._statistics(class_log_odds(L), y_idx, w)) for L, y_idx, w in parts
        ]
        coef = _fit_base_coefficients([p for ps in pairs for p in ps], base)
        coef = np.split(coef, np.cumsum([len(ps) for ps in pairs])[:-1])
        return [
            cls(L, y_idx, w, base, ab=ab)
            for (L, y_idx, w), ab in zip(parts, coef, strict=True)
        ]

    @staticmethod
    def _statistics(Z, y_idx, w):
        """Nodes and node statistics of each class's log-odds."""
        for k in range(Z.shape[1]):
            nodes = make_nodes(Z[:, k], w)
            yield (
                nodes,
                bin_to_nodes(Z[:, k], (y_idx == k).astype(np.float64), w, nodes),
            )

    def fit(self, h, prior, init=None):
        """The map at bandwidth ``h`` (corrections warm-started from ``init``)."""
        # Classes have their own nodes: batched only when their counts agree.
        sizes = {nodes.shape[0] for nodes in self.nodes}
        if len(sizes) == 1:
            alphas = list(
                fit_corrections(
                    np.array(self.nodes),
                    np.array(self.stats),
                    h,
                    prior,
                    init=None if init is None else np.array(init),
                )
            )
        else:
            init = init or [None] * len(self.nodes)
            alphas = [
                fit_correction(nodes, stats, h, prior, init=a0)
                for nodes, stats, a0 in zip(self.nodes, self.stats, init, strict=True)
            ]
        corrections = tuple(
            LogitMap(nodes, a, h, clip=False)
            for nodes, a in zip(self.nodes, alphas, strict=True)
        )
        return MulticlassLogitFit(self.base, self.coef, corrections), alphas


def _multiclass_losses(fit, U, y_idx, eps, mix):
    """Log-losses of the map ``fit`` on rows of base log-odds ``U`` (output
    mixed ``mix`` towards uniform)."""
    Q = fit.corrected(U)
    Q = np.clip((1.0 - mix) * Q + mix / Q.shape[1], eps, 1.0)
    return -np.log(Q[np.arange(U.shape[0]), y_idx])


def _systematic(n, max_rows):
    return np.arange(0, n, -(-n // max_rows))


def _matrix_challenge(bases, hs, cross_validate, weights, n_eff):
    """:func:`_two_stage_choice`, with the matrix base as a challenger.

    The other bases choose among themselves as they would alone; the
    matrix base then replaces their choice if its cross-validated loss (at
    ``hs[0]``) is lower by more than ``MATRIX_SE_MULTIPLIER`` standard
    errors of the paired difference, and the bandwidth is chosen for the
    winner. Among the bases, the matrix base would be the best of many
    noisy comparisons: it would move the margin of the others, and turn a
    temperature within the margin of the sigmoid base into a sigmoid base
    beyond the margin of the matrix one (on digits with GaussianNB at 100
    rows, tuning seeds: +5 % -> +20 % of the best peer's log-loss).
    Returns ``((base, h), {candidate: mean loss})``.
    """
    if "matrix" not in bases or len(bases) == 1:
        return _two_stage_choice(bases, hs, cross_validate, weights, n_eff)
    first = {}

    def memo(bs, h, state):
        if state is None and h == hs[0]:
            if bs not in first:
                first[bs] = cross_validate(bs, h, None)
            return first[bs]
        return cross_validate(bs, h, state)

    others = tuple(b for b in bases if b != "matrix")
    (incumbent, _), scores = _two_stage_choice(others, hs[:1], memo, weights, n_eff)
    losses = {bs: memo(bs, hs[0], None)[1] for bs in (incumbent, "matrix")}
    chosen, _ = standard_error_choice(
        [incumbent, "matrix"], losses, weights, n_eff, MATRIX_SE_MULTIPLIER
    )
    (base, h), scores = _two_stage_choice(
        ("matrix",) if chosen == "matrix" else others, hs, memo, weights, n_eff
    )
    total = weights.sum()
    for bs in bases:
        scores[(bs, hs[0])] = float(weights @ memo(bs, hs[0], None)[1]) / total
    return (base, h), scores


def fit_multiclass_logit_map(L, y_idx, w, *, prior, eps, bandwidth="auto", base="auto"):
    """Fit the multiclass map; choose base and bandwidth by cross-validated log-loss.

    ``L`` holds log-probabilities (:func:`log_probabilities`). Selection uses
    an evenly spaced subset of at most ``MAX_SELECTION_ROWS`` rows (the final
    fit uses all of them), stratified 5-fold cross-validation (repeated for
    small samples) and :func:`_two_stage_choice` (with the matrix base as
    a challenger, :func:`_matrix_challenge`); one bandwidth serves
    every class. The temperature is fitted on the same subset. When a
    corrected map (finite bandwidth) was selected, its ``sharpness`` is
    fitted on the same subset too, to the map's out-of-fold output; a single
    candidate is fitted once, without cross-validation (and so with integer
    weights equal to repeated rows).

    Returns
    -------
    fit : MulticlassLogitFit
    scores : dict or None
        ``{(base, h): cross-validated log-loss}`` when something was selected.
    """
    n = L.shape[0]
    rows = _systematic(n, MAX_SELECTION_ROWS)
    hs, bases, candidates = _candidates(
        bandwidth, base, MULTICLASS_BASES, effective_size(w)
    )
    scores = None
    if len(candidates) > 1 and n >= 2 * N_FOLDS:
        Ls, ys, ws = L[rows], y_idx[rows], w[rows]
        # The first split's fold maps and held-out base log-odds, from which
        # the chosen map's out-of-fold output is rebuilt without refitting.
        first_split = {}
        repeats = _n_repeats(rows.shape[0], L.shape[1] - 1)
        mix = uniform_mix(float(ws.sum()) * (N_FOLDS - 1) / N_FOLDS)
        splits = []
        for r in range(repeats):
            folds = stratified_folds(ys, seed=r)
            for f in range(N_FOLDS):
                tr, te = np.flatnonzero(folds != f), np.flatnonzero(folds == f)
                splits.append((r, tr, te))
        weights = np.concatenate([ws[te] for _, _, te in splits])
        parts = {}  # base -> [(fold statistics, held-out base log-odds)]

        def cross_validate(bs, h, alphas):
            if bs not in parts:
                parts[bs] = [
                    [fold, None]
                    for fold in _ClassStatistics.many(
                        [(Ls[tr], ys[tr], ws[tr]) for _, tr, _ in splits], bs
                    )
                ]
            alphas = alphas or [None] * len(splits)
            out, losses = [], []
            for i, (r, _, te) in enumerate(splits):
                part = parts[bs][i]
                fit, a = part[0].fit(h, prior, alphas[i])
                if part[1] is None:  # the same base for every bandwidth
                    part[1] = fit.base_log_odds(Ls[te])
                out.append(a)
                losses.append(_multiclass_losses(fit, part[1], ys[te], eps, mix))
                if r == 0:
                    first_split.setdefault((bs, h), []).append((te, fit, part[1]))
            return out, np.concatenate(losses)

        (base, h), scores = _matrix_challenge(
            bases, hs, cross_validate, weights, effective_size(ws)
        )
    else:
        base, h = candidates[0]
    fit = _ClassStatistics(L, y_idx, w, base, rows).fit(h, prior)[0]
    if scores is not None and np.isfinite(h):
        Q = np.empty(Ls.shape)
        for te, fold_fit, U_te in first_split[(base, h)]:
            Q[te] = fold_fit.corrected(U_te)
        sharpness = fit_inverse_temperature(log_probabilities(Q), ys, ws)
        fit = replace(fit, sharpness=sharpness)
    return fit, scores


# ---------------------------------------------------------------------------
# Probability matrices in, probability matrices out
# ---------------------------------------------------------------------------


def fit_logit_map(P, y_idx, w, *, prior, eps, bandwidth="auto", base="auto"):
    """The binary or multiclass map of a probability matrix ``P`` (n, K).

    Returns ``(fit, scores)`` of :func:`fit_binary_logit_map` (``K = 2``) or
    :func:`fit_multiclass_logit_map`. Rows of zero weight are dropped first;
    the scores are raised to the :func:`score_floor` of those rows, which the
    fit keeps (``score_floor``) for :func:`logit_map_proba`.
    """
    options = {"prior": prior, "eps": eps, "bandwidth": bandwidth, "base": base}
    w, P, y_idx = positive_weight_rows(w, P, y_idx)
    if float(w.max()) * w.shape[0] > MAX_TOTAL_WEIGHT:
        # Against this much weight the priors weigh nothing at double
        # precision anyway; smaller weights keep every sum finite.
        w = relative_weights(w) * (MAX_TOTAL_WEIGHT / w.shape[0])
    floor = score_floor(P)
    if P.shape[1] == 2:
        fit, scores = fit_binary_logit_map(
            binary_log_odds(P, floor), y_idx.astype(np.float64), w, **options
        )
    else:
        fit, scores = fit_multiclass_logit_map(
            log_probabilities(P, floor), y_idx, w, **options
        )
    return replace(fit, score_floor=floor), scores


def logit_map_proba(fit, P):
    """Recalibrated probability matrix of ``P`` under a fitted map."""
    if P.shape[1] == 2:
        q = fit(binary_log_odds(P, fit.score_floor))
        return np.column_stack([1.0 - q, q])
    return fit(log_probabilities(P, fit.score_floor))
