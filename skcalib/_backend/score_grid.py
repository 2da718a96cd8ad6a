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
