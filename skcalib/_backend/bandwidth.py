"""Bandwidth selection for the Dirichlet-kernel smoother.

* ``"mle"``: leave-one-out log-likelihood of the Dirichlet kernel density,
  ``sum_j w_j log( sum_{i != j} w_i k_b(f_j; f_i) / sum_{i != j} w_i )``.
* ``"risk"``: risk alignment (Zhou, Popordanoska & Blaschko): minimise
  ``sum_j w_j (v_j(b) - t_j)^2`` with ``v_j = 1 - 2 <R_j, f_j> + ||f_j||^2``
  (``R_j`` the leave-one-out ratio) and ``t_j = ||e_{y_j} - f_j||^2``.

Both are evaluated on a fixed grid (:func:`select_dirichlet_bandwidth`).
The ECE-KDE estimate refines the grid's choice continuously on the whole
sample (:func:`select_kde_bandwidth`), so that its bandwidth keeps shrinking
with ``n`` beyond the grid search's subsample and is not held on a grid point.
"""

from __future__ import annotations

import numpy as np

from .kernels import SIMPLEX_EPS, clip_simplex
from .smoothing import (
    DirichletCentres,
    dirichlet_nw,
    label_squared_error,
    loo_grid_statistics,
)
from .user_warning import warn_user

__all__ = ["BANDWIDTH_GRID", "select_dirichlet_bandwidth", "select_kde_bandwidth"]

BANDWIDTH_GRID = np.concatenate([np.logspace(-5, -1, 15), [0.2, 0.4, 0.6, 0.8, 1.0]])

# Selection cost is O(m^2 K + m^2 * len(grid)); above this many points a
# random subsample (fixed seed) is used.
DEFAULT_MAX_SAMPLES = 3000


def select_dirichlet_bandwidth(
    F,
    y,
    weight,
    method="mle",
    *,
    grid=None,
    max_samples=DEFAULT_MAX_SAMPLES,
    random_state=0,
    chunk_size=None,
    n_jobs=None,
    warn=True,
    eps=SIMPLEX_EPS,
):
    """Choose the Dirichlet kernel bandwidth on a grid.

    Parameters
    ----------
    F : ndarray of shape (n, K)
        Probability vectors.
    y : ndarray of shape (n,) of int
        Class indices in ``[0, K)``.
    weight : ndarray of shape (n,)
        Non-negative frequency weights.
    method : {"mle", "risk"}
    grid : array-like of float or None
        Candidate bandwidths; default :data:`BANDWIDTH_GRID` (15 log-spaced
        values in ``[1e-5, 1e-1]`` and ``0.2, 0.4, ..., 1.0``).
    max_samples : int
        Use a random subsample of this size when ``n`` is larger.
    random_state : int
        Seed of the subsample.
    chunk_size, n_jobs : int or None
        As in :func:`~skcalib._backend.smoothing.dirichlet_nw`.
    warn : bool
        Warn when the choice is an end of the grid.

    Returns
    -------
    bandwidth : float
    info : dict
        ``grid``, ``scores`` (criterion per grid value, greater is better),
        ``method``, ``n_used`` and ``at_edge``.
    """
    if method not in ("mle", "risk"):
        raise ValueError(f"method must be 'mle' or 'risk'; got {method!r}.")
    grid = BANDWIDTH_GRID if grid is None else np.asarray(grid, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    weight = np.asarray(weight, dtype=np.float64)
    n = F.shape[0]
    if n > max_samples:
        rng = np.random.default_rng(random_state)
        idx = np.sort(rng.choice(n, size=max_samples, replace=False))
        F, y, weight = F[idx], y[idx], weight[idx]
    centres = DirichletCentres(F, y, weight, eps)
    m = centres.n
    if m < 2:
        # No neighbour to leave in: every bandwidth scores the same, and the
        # tie goes to the smoothest.
        scores = np.zeros(len(grid))
        best = int(np.argmax(grid))
    else:
        scores = _grid_scores(centres, grid, method, chunk_size, n_jobs)
        best = int(np.argmax(np.where(np.isfinite(scores), scores, -np.inf)))
    bandwidth = float(grid[best])
    at_edge = best in (0, len(grid) - 1)
    if at_edge and warn:
        copies = ""
        if best == 0 and float(weight.max(initial=0.0)) > 1.0:
            # Leave-one-out leaves one copy out: the others vote for it.
            copies = (
                " A weight above 1 counts as that many copies of the sample, "
                "which favour small bandwidths as duplicates do: divide weights "
                "that are not counts by their maximum."
            )
        warn_user(
            f"The {method!r} bandwidth selector chose {bandwidth:g}, an end of the "
            f"grid [{grid[0]:g}, {grid[-1]:g}]; the criterion may keep improving "
            "beyond it (e.g. duplicated scores favour ever smaller bandwidths). "
            f"Consider passing a float bandwidth.{copies}",
        )
    info = {
        "method": method,
        "grid": grid.copy(),
        "scores": scores,
        "n_used": m,
        "at_edge": at_edge,
    }
    return bandwidth, info


def _grid_scores(centres, grid, method, chunk_size, n_jobs):
    """Criterion (greater is better) at each bandwidth, rows in sorted order."""
    stats = loo_grid_statistics(
        centres, grid, ratio=method == "risk", chunk_size=chunk_size, n_jobs=n_jobs
    )
    w = centres.w
    if method == "mle":
        log_total = np.log(centres.row_total_weight(centres.order))
        return np.array([np.dot(w, st["log_mass"] - log_total) for st in stats])
    F = centres.F
    f_sq = np.einsum("ij,ij->i", F, F)
    target = label_squared_error(F, centres.y)
    scores = []
    for st in stats:
        v = 1.0 - 2.0 * np.einsum("ij,ij->i", st["ratio"], F) + f_sq
        scores.append(-np.dot(w, (v - target) ** 2))
    return np.array(scores)


#: Rows at which :func:`select_kde_bandwidth` evaluates the refined criterion,
#: each against every centre (up to REFINE_CENTRES of them).
REFINE_ROWS = 1000
#: Centres of the refinement: above this many, a random subsample of them,
#: and the rate carries the bandwidth found to the whole sample. A criterion
#: evaluation then costs at most REFINE_ROWS * REFINE_CENTRES * K.
REFINE_CENTRES = 20000
# The refined bandwidth is located to within this factor (5 %): the
# criteria are flat near their optimum.
_REFINE_XTOL = np.log(1.05)
# The search interval spans this factor on each side of its centre, and is
# moved (at most _REFINE_MOVES times) while the optimum sits on its edge.
_REFINE_SPAN = 2.0
_REFINE_MOVES = 4


def _rate_shift(n_from, n_to, n_classes):
    """``log`` of the factor by which a cross-validated Dirichlet bandwidth
    moves from ``n_from`` to ``n_to`` points: the kernel's spread is
    ``~ sqrt(b)`` and that of a smoother in ``d = K - 1`` dimensions shrinks
    as ``n^(-1 / (d + 4))``, so ``b ~ n^(-2 / (K + 3))``."""
    return 2.0 / (n_classes + 3) * np.log(n_from / n_to)


def select_kde_bandwidth(
    F,
    y,
    weight,
    method="risk",
    *,
    max_samples=DEFAULT_MAX_SAMPLES,
    refine_rows=REFINE_ROWS,
    refine_centres=REFINE_CENTRES,
    chunk_size=None,
    n_jobs=None,
    warn=True,
    eps=SIMPLEX_EPS,
):
    """Bandwidth of the ECE-KDE estimate: a grid search, then a continuous
    refinement of the same criterion on the whole sample.

    1. :func:`select_dirichlet_bandwidth` on ``BANDWIDTH_GRID`` (on a
       subsample of ``max_samples`` points when ``n`` is larger) gives
       ``b_m``; an end of the grid is returned as is (with its warning).
    2. The criterion is then evaluated at ``refine_rows`` rows of positive
       weight (all of them when fewer; a fixed seed), each against all the
       centres with its own copy left out: a mean over rows of the
       full-sample criterion. Its optimum over ``log b`` is located by
       bounded Brent search to 5 %, on an interval spanning a factor 2 on
       each side of ``b_m (m / n)^(2 / (K + 3))`` (moved while the optimum
       sits on its edge). That centre is where the optimum of a regression
       criterion moves from ``m`` to ``n`` points: the kernel's spread is
       ``~ sqrt(b)`` and the cross-validated spread of a smoother in
       ``d = K - 1`` dimensions shrinks as ``n^(-1 / (d + 4))``.
    3. Above ``refine_centres`` samples of positive weight, step 2 runs on a
       random subsample of that many (rows drawn from it), and the
       bandwidth found is carried to ``n`` by the same rate, which bounds the
       cost of an evaluation by ``refine_rows * refine_centres * K``.

    The chosen bandwidth therefore shrinks with ``n`` at the criterion's own
    rate instead of stopping at the subsample's grid value.

    Returns
    -------
    bandwidth : float
    info : dict
        That of :func:`select_dirichlet_bandwidth` (the grid search), plus
        ``grid_bandwidth``, ``refined`` (False at an end of the grid),
        ``refine_rows``, ``refine_centres`` and ``evaluations`` (bandwidth,
        criterion pairs of the refinement, before any carrying to ``n``;
        greater is better).
    """
    from scipy.optimize import minimize_scalar

    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    weight = np.asarray(weight, dtype=np.float64)
    b_grid, info = select_dirichlet_bandwidth(
        F,
        y,
        weight,
        method,
        max_samples=max_samples,
        chunk_size=chunk_size,
        n_jobs=n_jobs,
        warn=warn,
        eps=eps,
    )
    info.update(
        grid_bandwidth=b_grid,
        refined=False,
        refine_rows=0,
        refine_centres=0,
        evaluations=[],
    )
    pool = np.flatnonzero(weight > 0)
    if info["at_edge"] or pool.shape[0] < 3:
        return b_grid, info
    rng = np.random.default_rng(0)
    n_rows, n_pool = F.shape[0], pool.shape[0]
    if n_pool > refine_centres:
        keep = np.sort(rng.choice(pool, size=refine_centres, replace=False))
        F, y, weight = F[keep], y[keep], weight[keep]
        pool = np.flatnonzero(weight > 0)
    rows = pool
    if pool.shape[0] > refine_rows:
        rows = np.sort(rng.choice(pool, size=refine_rows, replace=False))
    w_rows = weight[rows]
    if method == "risk":
        # the smoother's (clipped) probability vectors, as in the grid search
        F_rows = clip_simplex(F[rows], eps)
        target = label_squared_error(F_rows, y[rows])
        f_sq = np.einsum("ij,ij->i", F_rows, F_rows)
    evaluations = {}

    def loss(log_b):
        b = float(np.exp(log_b))
        res = dirichlet_nw(
            F,
            y,
            weight,
            None,
            b,
            leave_one_out=True,
            chunk_size=chunk_size,
            n_jobs=n_jobs,
            eps=eps,
            eval_rows=rows,
        )
        if method == "risk":
            v = 1.0 - 2.0 * np.einsum("ij,ij->i", res.ratio, F_rows) + f_sq
            crit = -float(np.dot(w_rows, (v - target) ** 2))
        else:
            crit = float(np.dot(w_rows, res.log_density))
        evaluations[b] = crit
        return -crit if np.isfinite(crit) else np.inf

    K = F.shape[1]
    centre = np.log(b_grid)
    if info["n_used"] < n_rows:
        # the grid search ran on a subsample of the rows
        centre += _rate_shift(info["n_used"], n_rows, K)
    if n_pool > pool.shape[0]:
        centre += _rate_shift(n_rows, pool.shape[0], K)
    lo_end, hi_end = np.log(BANDWIDTH_GRID[0]), np.log(BANDWIDTH_GRID[-1])
    span = np.log(_REFINE_SPAN)
    for _ in range(_REFINE_MOVES):
        lo, hi = max(centre - span, lo_end), min(centre + span, hi_end)
        best = minimize_scalar(
            loss, bounds=(lo, hi), method="bounded", options={"xatol": _REFINE_XTOL}
        ).x
        on_low_edge = best - lo <= 2 * _REFINE_XTOL and lo > lo_end
        on_high_edge = hi - best <= 2 * _REFINE_XTOL and hi < hi_end
        if not (on_low_edge or on_high_edge):
            break
        centre = best
    # the best bandwidth evaluated (the search's answer is one of them)
    bandwidth = max(evaluations, key=evaluations.get)
    if n_pool > pool.shape[0]:
        bandwidth = float(bandwidth * np.exp(_rate_shift(pool.shape[0], n_pool, K)))
    info.update(
        refined=True,
        refine_rows=int(rows.shape[0]),
        refine_centres=int(pool.shape[0]),
        evaluations=sorted(evaluations.items()),
    )
    return bandwidth, info
