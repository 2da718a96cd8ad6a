"""Tests and resamples computed from the cell moments of an accumulator.

The moments (per cell of the ``2**16``-cell grid and label slot: ``sum w``,
``sum w theta``, ``sum w theta^2``, count; see :mod:`.distributed`) do not
keep the samples, but the scores of a cell differ by less than ``2**-16``.
Everything here treats the samples of a cell as having the cell's mean score
(and, with weights, the cell's mean weight), which changes a probability
by at most ``2**-16`` per sample:

* the exact calibration test draws the labels of every cell from the null
  (binomial with the cell's count and mean score, times the weight of a
  sample, when the weights of the cell are equal; else a normal draw with
  the mean ``sum w s`` and variance ``sum w^2 s (1 - s)`` of the weighted
  events) and compares the largest absolute cumulative residual
  ``max_c |sum_{c' <= c} (O - E)|`` with its simulated law;
* the change test of two windows conditions on the events per stratum
  (``2**k`` strata of equal width): under equal calibration functions the
  events of a stratum are spread over the two windows as a hypergeometric
  draw; the statistic is the same cumulative maximum;
* the Poisson bootstrap draws every cell's count from a Poisson law and
  scales the cell's moments with it.
"""

from __future__ import annotations

import numpy as np

# Replicates drawn at once: a block of (replicates x cells) draws.
_BLOCK_CELLS = 1 << 22


def cell_summary(moments, pos_slot, neg_slot):
    """Per occupied cell: count, weight, positive weight, ``sum w s`` and
    ``sum w^2``.

    Returns five 1-D arrays over the cells that hold samples, in score order.
    """
    M = moments.shape[2]
    slots = [s for s in (pos_slot, neg_slot) if s is not None]
    count = moments[3, slots].sum(axis=0)
    cells = np.flatnonzero(count)
    weight = moments[0, slots][:, cells].sum(axis=0)
    theta = moments[1, slots][:, cells].sum(axis=0)
    positive = (
        moments[0, pos_slot, cells] if pos_slot is not None else np.zeros(cells.size)
    )
    # s = (c + theta) / M in cell c
    expected = (cells * weight + theta) / M
    squares = moments[4, slots][:, cells].sum(axis=0)
    return count[cells], weight, positive, expected, squares


def _cumulative_max(residual):
    return np.max(np.abs(np.cumsum(residual, axis=-1)), axis=-1)


def _blocks(n_resamples, n_cells):
    size = max(1, min(n_resamples, _BLOCK_CELLS // max(n_cells, 1)))
    for start in range(0, n_resamples, size):
        yield min(size, n_resamples - start)


def cumulative_residual_test(
    count, weight, positive, expected, squares, n_resamples, rng
):
    """Monte Carlo p-value of ``max_c |sum (O - E)|`` under ``y ~ Bernoulli(s)``.

    Returns ``(statistic, p_value)``; the statistic is divided by the total
    weight (a difference of rates).
    """
    keep = weight > 0
    count, weight, positive, expected, squares = (
        a[keep] for a in (count, weight, positive, expected, squares)
    )
    total = weight.sum()
    stat = _cumulative_max(positive - expected)
    n_int = np.rint(count).astype(np.int64)
    prob = np.clip(expected / weight, 0.0, 1.0)
    unit = weight / count
    # Equal weights in a cell (always without weights): exact binomial draws.
    equal = np.abs(count * squares - weight * weight) <= 1e-12 * count * squares
    sd = np.where(equal, 0.0, np.sqrt(squares * prob * (1.0 - prob)))
    exceed = 0
    for size in _blocks(n_resamples, count.size):
        draws = rng.binomial(np.where(equal, n_int, 0), prob, size=(size, count.size))
        draws = draws * unit
        if not equal.all():
            draws += np.where(equal, 0.0, expected) + sd * rng.standard_normal(
                (size, count.size)
            )
        exceed += int(np.count_nonzero(_cumulative_max(draws - expected) >= stat))
    return stat / total, (1 + exceed) / (n_resamples + 1)


def stratum_sums(values, n_strata):
    """Sums of ``values`` (arrays over the grid cells) per stratum of
    consecutive cells (``n_strata`` divides the number of cells)."""
    return [v.reshape(n_strata, -1).sum(axis=1) for v in values]


def change_test(n1, o1, n2, o2, n_resamples, rng):
    """Conditional test of equal calibration functions in two windows.

    ``n1``, ``o1`` (``n2``, ``o2``) are the samples and events of each
    stratum in window 1 (2), whole numbers. Under the null the ``o1 + o2``
    events of a stratum are a random subset of its ``n1 + n2`` samples, so
    ``o1`` is hypergeometric. Returns ``(statistic, p_value)``; the statistic
    is ``max_b |sum_{b' <= b} (o1 - E o1)|`` divided by ``sum n1``.
    """
    n = n1 + n2
    o = o1 + o2
    keep = (n1 > 0) & (n2 > 0) & (o > 0) & (o < n)
    n1, n2, o1, o = (np.rint(a[keep]).astype(np.int64) for a in (n1, n2, o1, o))
    mean = n1 * o / np.maximum(n1 + n2, 1)
    stat = _cumulative_max(o1 - mean) if n1.size else 0.0
    exceed = 0
    if n1.size:
        for size in _blocks(n_resamples, n1.size):
            draws = rng.hypergeometric(o, n1 + n2 - o, n1, size=(size, n1.size))
            exceed += int(np.count_nonzero(_cumulative_max(draws - mean) >= stat))
    else:
        exceed = n_resamples
    total = max(float(n1.sum()), 1.0)
    return float(stat) / total, (1 + exceed) / (n_resamples + 1)


def poisson_resample(moments, rng):
    """The cell moments of a Poisson bootstrap resample (each cell's samples
    drawn again with a Poisson count; the moments scale with it)."""
    count = moments[3]
    draws = rng.poisson(count).astype(np.float64)
    factor = np.divide(draws, count, out=np.zeros_like(count), where=count > 0)
    out = moments * factor
    out[3] = draws
    return out
