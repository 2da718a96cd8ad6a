"""Bandwidth selection for the Dirichlet-kernel smoother.

* ``"mle"``: leave-one-out log-likelihood of the Dirichlet kernel density,
  ``sum_j w_j log( sum_{i != j} w_i k_b(f_j; f_i) / sum_{i != j} w_i )``.
* ``"risk"``: risk alignment (Zhou, Popordanoska & Blaschko): minimise
  ``sum_j w_j (v_j(b) - t_j)^2`` with ``v_j = 1 - 2 <R_j, f_j> + ||f_j||^2``
  (``R_j`` the leave-one-out ratio) and ``t_j = ||e_{y_j} - f_j||^2``.

Both are evaluated on a fixed grid.
"""

from __future__ import annotations

import numpy as np

from .kernels import SIMPLEX_EPS
from .smoothing import DirichletCentres, label_squared_error, loo_grid_statistics
from .user_warning import warn_user

__all__ = ["BANDWIDTH_GRID", "select_dirichlet_bandwidth"]

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
