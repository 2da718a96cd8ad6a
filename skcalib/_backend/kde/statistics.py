"""The Dirichlet-kernel smoother statistics, from the row sums of its weights.

Written against the array-API standard (namespace ``xp`` passed in), with no
in-place writes: the same functions finish the NumPy metric's streamed sums
and the differentiable loss's dense ones (:mod:`.dense`). Plain ``numpy``
works as ``xp`` (NumPy 1.24 included).

Weights are frequency weights (see :mod:`skcalib._backend.smoothing`): a
centre of weight ``w`` is ``w`` copies of itself, leaving a point out leaves
``max(w - 1, 0)`` copies of it, and ``w`` copies form ``w * max(w - 1, 0)``
ordered pairs of distinct samples, i.e. the share ``1 - c`` of the squared
weighted kernel mass with the self-pair factor ``c = min(1, 1 / w)``.
"""

from __future__ import annotations

from ..array_api.namespace import concat, full, lgamma, one_hot, pick

__all__ = [
    "clip_simplex",
    "finish_statistics",
    "kde_error_terms",
    "label_squared_error",
    "log_normalizer",
    "pair_factor",
]


def clip_simplex(F, eps, xp):
    """Rows of ``F`` clipped to ``[eps, 1 - eps]`` and renormalised to sum to 1
    (exact zeros would give ``0 * log 0 = nan`` in the kernel)."""
    F = xp.clip(F, eps, 1.0 - eps)
    return F / xp.sum(F, axis=1, keepdims=True)


def log_normalizer(F, bandwidth, xp):
    """``c_i = sum_k lnGamma(f_ik / b + 1) - lnGamma(1 / b + K)`` per row of ``F``.

    ``-c_i`` is the log normalising constant of the Dirichlet kernel centred
    at ``f_i`` (parameters ``alpha_i = f_i / b + 1``, which sum to
    ``1 / b + K`` because the rows of ``F`` sum to one); the log-kernel matrix
    is ``L = log(X) (F / b)^T - 1 c^T``.
    """
    inv_b = 1.0 / bandwidth
    total = lgamma(full((1,), inv_b + F.shape[1], F, xp), xp)
    return xp.sum(lgamma(F * inv_b + 1.0, xp), axis=1) - total


def pair_factor(w, xp):
    """Self-pair factor ``c = min(1, 1 / max(w, 1))`` of each weight."""
    one = xp.ones_like(w)
    return one / xp.where(w > 1.0, w, one)


def label_squared_error(F, y, xp):
    """``||e_{y_j} - f_j||^2`` per row, for class indices ``y``."""
    return 1.0 - 2.0 * pick(F, y, xp) + xp.sum(F * F, axis=1)


def _safe_ratio(num, den, use, xp):
    """``num / den`` where ``use``; elsewhere 0 from a denominator of 1, so
    that an unused branch (``0 / 0``) puts no NaN into a gradient."""
    one = xp.ones_like(den)
    return xp.where(use, num, xp.zeros_like(num)) / xp.where(use, den, one)


def finish_statistics(sums, *, labels, pair_c, loo=None, ratio, ess, pairs, X=None, xp):
    """Smoother statistics of evaluation rows from the row sums of their weights.

    Parameters
    ----------
    sums : dict
        Per-row sums, relative to a reference ``m_ref`` per row: ``m1``,
        ``a`` (class or target sums), ``z`` (total, target matrices only),
        ``q`` or ``qk`` (squared weights times the self-pair factor, in total
        or per class), ``g_own`` (weight of the row's own centre, with
        ``loo``), and with ``pairs`` the row's leading entry split off:
        ``istar`` (its column), ``m1`` (its log-weight), ``m_ref`` and
        ``has_rest`` (whether any other column has weight). Without
        ``pairs``, ``m1`` is the reference of the sums.
    labels : array of int of shape (n,) or None
        Class of each centre (None for a target matrix).
    pair_c : array of shape (n,)
        Self-pair factor of each centre (:func:`pair_factor`).
    loo : tuple or None
        ``(cols, diag_c)``: the own column of each evaluation row and the
        self-pair factor of the copies left in it; None without leaving out.
    ratio, ess, pairs : bool
        Return the ratio ``R``, the effective sample size and the pair
        agreement (class-label targets only).
    X : array of shape (m, K) or None
        Evaluation points; when given, also the U-statistic
        ``squared_error`` of ``||R_j - x_j||^2`` (class-label targets only).
    xp : namespace

    Returns
    -------
    dict
        ``log_mass`` (``log sum_i v_ji k_ji``) and, as requested, ``ratio``,
        ``ess``, ``pairs`` and ``squared_error``.

    Notes
    -----
    Rows are exponentiated relative to their maximum (a row softmax), which
    is exact for the ratio and the effective sample size. The pair statistic
    ``(||A||^2 - Q) / (Z^2 - Q)`` cancels catastrophically when one neighbour
    dominates (tiny bandwidth, many classes), so for it the row maximum
    ``m1`` (column ``i*``) is split off and the other columns are
    exponentiated relative to their own reference ``m2``: with
    ``rho = exp(m2 - m1)`` every sum reads ``1 + rho * (...)`` and the
    statistic tends, as ``rho`` underflows, to the share of the remaining
    mass that agrees with the nearest neighbour's label instead of ``0 / 0``.
    The squared-error U-statistic is split the same way: with
    ``d_i = e_{y_i} - x_j``, ``D = sum_{i != i*} g_i d_i`` and
    ``Q = sum_{i != i*} c_i g_i^2 ||d_i||^2`` its numerator is
    ``t ||d_i*||^2 + rho (2 <d_i*, D> + rho (||D||^2 - Q))`` over the pair
    mass ``t + rho (2 z + rho (z^2 - q))``.
    """
    pairs = pairs or X is not None
    m1 = sums["m1"]
    a = sums.get("a")
    qk = sums.get("qk")
    if pairs:
        istar = sums["istar"]
        lead_gap = sums["m_ref"] - m1
        rho = xp.where(
            sums["has_rest"],
            xp.exp(xp.where(lead_gap < 0.0, lead_gap, xp.zeros_like(m1))),
            xp.zeros_like(m1),
        )
        lead = 1.0
    else:
        rho, lead = 1.0, 0.0
    labelled_sums = labels is not None and (ratio or pairs)
    z = xp.sum(a, axis=1) if labelled_sums else sums["z"]
    total = lead + rho * z
    out = {"log_mass": m1 + xp.log(total)}
    if not (ess or pairs or ratio):
        return out
    q = None
    if ess or pairs:
        q = xp.sum(qk, axis=1) if X is not None else sums["q"]
        if loo is not None:
            cols, diag_c = loo
            q_loo = sums["g_own"] ** 2 * (diag_c - xp.take(pair_c, cols, axis=0))
            q = q + q_loo
            if X is not None:
                own = one_hot(xp.take(labels, cols, axis=0), qk.shape[1], qk.dtype, xp)
                qk = qk + own * q_loo[:, None]
        c_star = 0.0
        if pairs:
            c_star = xp.take(pair_c, istar, axis=0)
            if loo is not None:
                c_star = xp.where(istar == cols, diag_c, c_star)
        if ess:
            out["ess"] = total**2 / (lead * c_star + rho**2 * q)
    if ratio:
        top = a
        if pairs:
            y_star = xp.take(labels, istar, axis=0)
            top = a * rho[:, None] + one_hot(y_star, a.shape[1], a.dtype, xp)
        out["ratio"] = top / total[:, None]
    if pairs:
        t = 1.0 - c_star
        a_top = pick(a, xp.take(labels, istar, axis=0), xp)
        x_num = xp.sum(a * a, axis=1) - q
        x_den = z * z - q
        out["pairs"] = _split_pair_ratio(t, t, 2.0 * a_top, x_num, z, x_den, rho, xp)
    if X is not None:
        out["squared_error"] = _squared_error_u(
            a, qk, q, z, rho, t, istar, X, labels, xp
        )
    return out


def _split_pair_ratio(t, t_lead, lead_cross, x_num, z, x_den, rho, xp):
    """``(t_lead + rho (lead_cross + rho x_num)) / (t + rho (2 z + rho x_den))``,
    divided through by ``rho`` where ``t == 0`` (unit weights: the leader
    forms no pair with itself), which keeps its limit as ``rho`` underflows."""
    plain_num = t_lead + rho * (lead_cross + rho * x_num)
    plain_den = t + rho * (2.0 * z + rho * x_den)
    scaled_num = lead_cross + rho * x_num
    scaled_den = 2.0 * z + rho * x_den
    has_self = t > 0
    plain = _safe_ratio(plain_num, plain_den, has_self, xp)
    scaled = _safe_ratio(scaled_num, scaled_den, ~has_self, xp)
    return xp.where(has_self, plain, scaled)


def _squared_error_u(a, qk, q, z, rho, t, istar, X, labels, xp):
    """Pair (i != i') U-statistic of ``||R_j - x_j||^2``; see finish_statistics."""
    x_sq = xp.sum(X * X, axis=1)
    a_x = xp.sum(a * X, axis=1)
    ystar = xp.take(labels, istar, axis=0)
    x_star = pick(X, ystar, xp)
    d_star_sq = 1.0 - 2.0 * x_star + x_sq
    # <d_i*, D> with D = a - z x
    cross = pick(a, ystar, xp) - z * x_star - a_x + z * x_sq
    big_d = xp.sum(a * a, axis=1) - 2.0 * z * a_x + z * z * x_sq
    big_q = q - 2.0 * xp.sum(qk * X, axis=1) + x_sq * q
    x_num = big_d - big_q
    x_den = z * z - q
    return _split_pair_ratio(t, t * d_star_sq, 2.0 * cross, x_num, z, x_den, rho, xp)


def kde_error_terms(F, y, stats, p, debias, xp):
    """Per-sample terms of the ECE-KDE estimate of ``CE_p^p``.

    ``stats`` are the leave-one-out statistics of the rows ``(F, y)``. The
    plug-in term is ``sum_k |R_jk - f_jk|^p``; the debiased ``p = 2`` term is
    the U-statistic ``||R_j - f_j||^2`` without its diagonal (``i = i'``)
    pairs (``squared_error``), whose conditional mean given the neighbours'
    scores is the kernel average of ``<E[e_y|f_i] - f_j, E[e_y|f_i'] - f_j>``:
    zero-mean noise is gone and only the smoothing bias remains.
    """
    if debias:
        return stats["squared_error"]
    gap = xp.abs(stats["ratio"] - F)
    if p == 1:
        return xp.sum(gap, axis=1)
    if p == 2:
        return xp.sum(gap * gap, axis=1)
    return xp.sum(gap**p, axis=1)


def concat_rows(parts, xp):
    """Per-row arrays of consecutive row blocks, joined (one block: itself)."""
    return parts[0] if len(parts) == 1 else concat(parts, xp)
