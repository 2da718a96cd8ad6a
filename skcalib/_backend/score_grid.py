"""The fixed dyadic grid that every perturbed score lives on.

A perturbed score is rounded to ``G = {k / 2**24 : k = 0, ..., 2**24}``. All
base scores then share one support, so a perturbed score cannot reveal the
base score it came from (noise drawn in finite precision around a centre lives
on a lattice shifted by that centre). The true calibration function at a grid
point is the average of the smooth one over the point's cell (at most one grid
step wide), which costs the derivative-based bounds :func:`discretisation_term`.
"""

from __future__ import annotations

import numpy as np

GRID_BITS = 24
GRID_SCALE = float(2**GRID_BITS)
GRID_STEP = 1.0 / GRID_SCALE

__all__ = [
    "GRID_BITS",
    "GRID_SCALE",
    "GRID_STEP",
    "discretisation_term",
    "off_grid",
    "round_to_grid",
    "DISTINCT_FALSE_ALARM",
    "max_cell_mass",
    "min_distinct_perturbed",
]


def round_to_grid(x, out=None):
    """Round scores to the nearest point of ``G`` (ties to even), in place if
    ``out is x``.

    Multiplying by a power of two is exact, and so is the rounded result.
    """
    out = np.multiply(x, GRID_SCALE, out=out)
    np.rint(out, out=out)
    out *= GRID_STEP
    return out


def off_grid(s):
    """Index of the first score not on ``G`` (-1 when all are)."""
    s = np.asarray(s, dtype=np.float64)
    scaled = s * GRID_SCALE
    bad = np.flatnonzero(scaled != np.rint(scaled))
    return int(bad[0]) if bad.size else -1


def discretisation_term(lip1):
    """Bound on ``|η(g) - η̃(g)| + |η(s_j) - η̃(s_j)|`` summed over a query and
    the points averaged around it, for ``|η̃'| <= lip1``.

    ``η`` at a grid point is a weighted average of ``η̃`` over a cell that
    contains the point and is at most one grid step wide (half a step on each
    side inside [0, 1]; a cell cut by the lower end ``1/K`` of a top-label
    confidence can reach one step from its point), so each of the two
    deviations is at most ``lip1 * GRID_STEP``.
    """
    return 2.0 * lip1 * GRID_STEP


#: False-alarm probability of :func:`min_distinct_perturbed` as the bounds use
#: it: genuinely perturbed scores are refused at most this often.
DISTINCT_FALSE_ALARM = 1e-9


def max_cell_mass(scale):
    """Largest probability a score perturbed at ``scale`` can have of landing
    on any one point of ``G``, whatever its base score.

    The truncated sech law around ``s0`` on an interval of length ``L`` has
    density ``sech((s - s0)/h) / Z`` with ``Z = h [gd(d1/h) + gd(d2/h)]``,
    ``d1 + d2 = L`` the distances to the ends; ``gd`` is concave and
    increasing, so ``Z >= h gd(L/h)``. The interval is [0, 1] for a binary
    score and ``[1/K, 1]`` (``L >= 2/3``) for a top-label confidence, so
    ``L >= 1/2`` everywhere. A mixture over base scores (any model) keeps
    the density bound. A grid point collects the mass of at most one and a
    half steps (its own cell, plus the cut below the lowest top-label point).
    """
    h = float(scale)
    gd = 2.0 * np.arctan(np.tanh(0.25 / h))  # gd(1 / (2 h))
    return min(1.0, 1.5 * GRID_STEP / (h * gd))


def min_distinct_perturbed(n, scale, false_alarm=DISTINCT_FALSE_ALARM):
    """Fewest distinct grid values that ``n`` perturbed scores take, except
    with probability at most ``false_alarm``.

    With ``q = max_cell_mass(scale)`` bounding the mass of every point, the
    expected number of distinct values is
    ``E[D] = sum_k 1 - (1 - p_k)^n >= mu = (1 - (1 - q)^n) / q`` (the summand
    ``phi(p)`` is concave with ``phi(0) = 0``, so ``phi(p) >= p phi(q) / q``
    for ``p <= q``). ``D`` is a self-bounding function of the ``n`` draws
    (removing one draw lowers it by 0 or 1, and by 1 only for a value seen
    once), so ``P(D <= E[D] - t) <= exp(-t^2 / (2 E[D]))`` (Boucheron,
    Lugosi & Massart 2013, Thm 6.12), which decreases in ``E[D]`` above the
    threshold: ``P(D < mu - sqrt(2 mu ln(1 / false_alarm))) <= false_alarm``.
    The threshold returned is that value (at most 0 when ``n`` is too small
    for the check to refuse anything).
    """
    q = max_cell_mass(scale)
    mu = 1.0 if q >= 1.0 else -np.expm1(n * np.log1p(-q)) / q
    return mu - np.sqrt(2.0 * mu * np.log(1.0 / false_alarm))
