"""Choice among candidate maps: folds, candidate bandwidths, the
standard-error rules applied to held-out log-loss, and the weights of the
mixtures (of bases, and of a smooth correction with the step map).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, softmax

from ..binning import relative_weights
from .correction import MONOTONE

# Candidate correction bandwidths, in units of the empirical distribution
# function of the scores (a nearest-neighbour-like bandwidth: narrow where
# the scores are dense, wide in the tails); inf = no correction.
BANDWIDTHS = tuple(2.0 ** np.arange(-7, 0)) + (np.inf, MONOTONE)


N_FOLDS = 5


# Entropy mixed into the seeds of the folds (see stratified_folds).
FOLD_ENTROPY = 0x9E3779B97F4A7C15


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


# Prior odds of temperature scaling against each other base in the
# mixtures of bases, binary and multiclass (1 to 1 among the others, but
# for the multiclass sigmoid base's own odds). Measured on the binary
# mixture (the measures of AVERAGE_BASES in binary): odds 2, 2.3 (the
# temperature-shaped truth at n = 50); 5, 1.9, -0.92 %, 4; 10, 1.6 (u2/50
# and the temperature-shaped truth at n = 50; beta/50 1.5), -0.98 %, 3; 20,
# 1.8 (u2/50), -0.96 %, 4. The multiclass mixture had odds 3 until the
# benchmark drew 10 calibration sets per setting; then, on the tuning
# seeds, odds 3 / 10: three-class known truths (40 samples, 50 to 1000
# rows) worst ratio to the best peer 1.82 / 1.48 (overconfident/200;
# calibrated/200 1.67 / 1.35, the confused classes 0.93 / 1.00); real
# multiclass data, settings beyond the target 1 / 2 (digits/RF/200 +2.11 %,
# se 1.01), mean gap to the best peer -3.87 / -3.68 % (n <= 200 +0.23 %
# on average, the worst wine/KNN/50 +3.3 %; n > 200 level). Odds 3 had
# been chosen on one calibration set per split, where the count of
# settings beyond the target moved with the draws.
BASE_PRIOR_ODDS = 10.0


# Prior odds of the smooth correction against the step map (bandwidth
# MONOTONE) in their mixture: the step map enters the output at every size
# with its pseudo-BMA weight (step_weight), where it replaced the smooth map
# from MIN_STEP_ROWS rows if it beat it by SE_MULTIPLIER standard errors.
# Measured on the benchmark's known truths (tuning seeds, 6 samples; exact
# excess log-loss / best peer's at n = 50, 200, 1000): without the step map
# the jump truth was 1.47, 2.04, 3.14 and the temperature-shaped truth
# 1.37, 1.19, 1.19. With the Bayesian bootstrap of base_weights, odds 30
# gave the jump 1.35, 1.28, 1.12 but the temperature-shaped truth 1.40,
# 1.33, 1.42 (the bootstrap keeps a few per cent on a step map within
# noise); odds 100: 1.40, 1.40, 1.17 and 1.38, 1.26, 1.31. Without it, odds
# 10: 1.32, 1.21, 1.05 and 1.42, 1.31, 1.24; odds 30: 1.39, 1.36, 1.05
# and 1.38, 1.23, 1.20 (the other truths within 0.03 of no step map).
# Stacking the two maps instead (the weight that maximises their mixture's
# held-out log score, less c log(1 - weight)), tuning seeds, 40 samples,
# against these odds: c = 0 took the jump at 200 rows to 1.09 (from 1.52)
# but Platt/200 to 4.33 (1.42) and the temperature-shaped truth at 1000
# rows to 12.3 (1.63); c = 10 gave the step map too little (jump/200 2.51).
STEP_PRIOR_ODDS = 30.0


# Bases below this weight are left out of the mixture (and the others'
# weights renormalised): they would move no probability by more than this
# share, and each costs a fit and a tabulation.
MIN_BASE_WEIGHT = 1e-4


# Gauss-Hermite points per coordinate of the normal approximation in
# base_weights, by number of coordinates (bases - 1). With four bases, 41
# per axis (68921 points) took 19 ms; 21 (9261) 2 ms, within 1e-3 of 41's
# weights (11: 4e-3), against the normal approximation's own 2e-3 from a
# Monte Carlo of the Bayesian bootstrap.
WEIGHT_QUADRATURE_POINTS = {1: 41, 2: 41, 3: 21}


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


# Rows between which stratified_folds orders its keys by _packed_argsort:
# below, np.argsort is as fast; above, the leading bits of two keys agree
# too often (expected pairs n^2 / 2^(66 - 2 log2 n): 0.03 at 1e6 rows, 0.25
# at 2^21).
MIN_PACKED_SORT_ROWS = 2**17


MAX_PACKED_SORT_ROWS = 2**21


def _packed_argsort(key):
    """``np.argsort(key)`` of uniform draws ``rng.random(n)``, or ``None``.

    The draws are multiples of ``2**-53`` in ``[0, 1)``: their leading bits,
    with the row index in the bits below, are integers that ``np.sort``
    orders (vectorised, where ``np.argsort`` is not: 70 ms against 15 ms
    for 1e6 draws, 40 % of a binary fit of 1e6 rows). Where the leading
    bits of all the draws differ, the order is that of the draws, without
    ties, so the one permutation that sorts them; where two agree (3 % of
    the time for 1e6 draws), ``None``, and the caller sorts the draws.
    """
    n = key.shape[0]
    bits = max(int(n - 1).bit_length(), 1)
    packed = (key * 2.0**53).astype(np.uint64)
    packed >>= np.uint64(max(bits - 11, 0))
    packed <<= np.uint64(bits)
    packed |= np.arange(n, dtype=np.uint64)
    packed.sort()
    lead = packed >> np.uint64(bits)
    if np.any(lead[1:] == lead[:-1]):
        return None
    return (packed & np.uint64((1 << bits) - 1)).astype(np.intp)


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
    by_key = None
    if MIN_PACKED_SORT_ROWS <= key.shape[0] <= MAX_PACKED_SORT_ROWS:
        by_key = _packed_argsort(key)
    if by_key is None:
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


def _n_repeats(n, n_maps=1):
    """Cross-validation repeats: more for small samples, where one split is noisy.

    ``n_maps`` one-vs-rest corrections per fit (the cost) count against it.
    """
    return int(np.clip(4000 // max(n * n_maps, 1), 1, 4))


def _simplest_first(hs):
    """Bandwidths from no correction (inf) to the smallest."""
    return sorted(hs, reverse=True)


def candidate_bandwidths(n_eff, min_step_rows=MIN_STEP_ROWS):
    """``BANDWIDTHS`` that the effective sample size ``n_eff`` can support.

    A Gaussian window whose standard deviation holds fewer than
    ``MIN_WINDOW_ROWS`` rows fits the noise of a handful of labels, and the
    step map rests on the few rows of each of its steps: on ``n_eff <
    MIN_STEP_ROWS`` rows its cross-validated loss is an average over folds
    whose steps differ from one fit to the next, and a few lucky folds make
    it look best (a map with steps of ten rows costs a few tenths of a nat
    per test row where it is wrong). A selection that weighs the step map
    by its evidence instead of choosing it (the binary mixture) passes
    ``min_step_rows=0``. ``inf`` (no correction) always remains.
    """
    keep = []
    for h in BANDWIDTHS:
        if h == MONOTONE:
            ok = n_eff >= min_step_rows
        else:
            ok = not np.isfinite(h) or h * n_eff >= MIN_WINDOW_ROWS
        if ok:
            keep.append(h)
    return tuple(keep)


# Pseudo-observations of the uniform distribution mixed into the output
# (uniform_mix). One (Laplace's rule) charged every confident right answer
# about 1 / (n + 1) nats to guard against a confident mistake, which the
# logit map's priors already make rarer; half of one did better on the
# benchmark. Tuning seeds, 10 calibration sets per setting, n <= 200, mean
# gap to the best peer (the output mixed c / (n + 1) after the same fit),
# c = 1 / 0.5 / 0.25 / 0: three classes -4.03 / -4.56 / -4.55 / -3.15 %,
# ten classes -3.71 / -4.23 / -4.23 / -2.88 %, binary -1.12 / -1.23 /
# -1.17 / -0.84 %; settings beyond the target (multiclass and binary)
# 4 + 1 / 1 + 1 / 2 + 1 / 11 + 3. Above 200
# rows c = 1 was better on multiclass data (-1.11 against -1.02 %), level
# on binary. Known truths, ratio to the best peer: within 0.06 of c = 1
# (binary overconfident/50 2.23 -> 2.29), better where the truth is sharper
# than the scores (three classes, under-confident, 200 rows 1.55 -> 1.45).
UNIFORM_PSEUDO_COUNT = 0.5


def uniform_mix(n):
    """Weight ``c / (n + c)`` of the uniform distribution in the output.

    The predictive distribution of a model fitted on ``n`` rows, mixed with
    ``c = UNIFORM_PSEUDO_COUNT`` pseudo-observations that could carry any
    label (Laplace's rule for the outcome not seen yet, with ``c = 1``): a
    map fitted on few rows never gives a class less than ``c / (K (n + c))``,
    so one confident mistake on new data costs at most
    ``log(K (n + c) / c)`` nats, and the mixture vanishes as the calibration
    set grows.
    """
    c = UNIFORM_PSEUDO_COUNT
    return c / (max(float(n), 0.0) + c)


def _candidates(bandwidth, base, auto_bases, n_eff, weigh_step=False):
    """Bandwidths, bases and ``(base, h)`` pairs, simplest first; the step
    map at every size with ``weigh_step`` (see :func:`candidate_bandwidths`)."""
    if bandwidth == "auto":
        hs = candidate_bandwidths(n_eff, 0 if weigh_step else MIN_STEP_ROWS)
    else:
        hs = (float(bandwidth),)
    hs = _simplest_first(hs)
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


def step_weight(smooth, step, weights, n_eff):
    """Weight of the step map against the smooth correction in their mixture.

    Pseudo-BMA: ``1 / (1 + odds exp(S_step - S_smooth))`` with ``S`` the
    summed held-out log-losses (weighted to ``n_eff`` rows) and ``odds =
    STEP_PRIOR_ODDS``. Unlike :func:`base_weights` it does not average over
    the bootstrap of ``S``: that average gives a step map within noise of
    the smooth map a share of about ``1 / (1 + odds)``, and a smooth truth
    pays for it.
    """
    v = weights * (n_eff / weights.sum())
    gap = float((step - smooth) @ v) + np.log(STEP_PRIOR_ODDS)
    return float(expit(-gap))
