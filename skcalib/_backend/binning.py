"""Histogram-binned calibration statistics (the classic ECE family)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def uniform_edges(n_bins):
    return np.linspace(0.0, 1.0, n_bins + 1)


def relative_weights(w):
    """``w / max(w)``: the same ratios, none of the overflow or underflow that
    sums of squares of weights near 1e+-200 meet (all-zero weights unchanged)."""
    top = float(w.max(initial=0.0))
    return w / top if top > 0 else w


def positive_weight_rows(w, *arrays):
    """``(w, *arrays)`` restricted to the rows of positive weight.

    A row of zero weight is no row of the sample; left in, it would still
    shift cross-validation folds, count as a neighbour or be resampled.
    """
    keep = w > 0
    if keep.all():
        return (w, *arrays)
    return (w[keep], *(a[keep] for a in arrays))


def quantile_edges(s, w, n_bins):
    """Bin edges at the (weighted) quantiles of the scores.

    Linear interpolation between the sorted scores placed at the midpoints
    of their cumulative weights, rescaled so that the smallest sits at 0
    and the largest at 1. With equal weights this is numpy's default
    percentile (as in ``sklearn.calibration.calibration_curve``), so unit
    weights and no weights give the same bins; the edges move continuously
    with the weights, and a zero weight is the same as no row.
    """
    q = np.linspace(0.0, 1.0, n_bins + 1)
    keep = w > 0
    s, w = s[keep], w[keep]
    order = np.argsort(s, kind="stable")
    s, w = s[order], relative_weights(w[order])
    mid = np.cumsum(w) - 0.5 * w
    span = mid[-1] - mid[0]
    if not span > 0:
        return np.full(q.shape, s[0])
    return np.interp(q, (mid - mid[0]) / span, s)


def assign_bins(s, edges):
    """Bin index of each score; bins are ``[e_k, e_k+1)`` and the last is closed.

    A score equal to the right edge of the last bin (e.g. exactly 1.0) lands in
    the last bin, not in an extra one.
    """
    return np.searchsorted(edges[1:-1], s, side="right")


@dataclass
class BinTable:
    """Per-bin sums for non-empty bins."""

    edges: np.ndarray  # (n_bins + 1,)
    index: np.ndarray  # bin numbers of the non-empty bins
    weight: np.ndarray  # sum w
    n_eff: np.ndarray  # (sum w)^2 / sum w^2
    mean_label: np.ndarray  # weighted mean of y
    mean_score: np.ndarray  # weighted mean of s
    count: np.ndarray  # number of samples


def bin_table(y, s, w, edges):
    n_bins = edges.shape[0] - 1
    b = assign_bins(s, edges)
    sw = np.bincount(b, weights=w, minlength=n_bins)
    swy = np.bincount(b, weights=w * y, minlength=n_bins)
    sws = np.bincount(b, weights=w * s, minlength=n_bins)
    cnt = np.bincount(b, minlength=n_bins)
    keep = sw > 0
    v = relative_weights(w)  # the effective size is scale-free, squares are not
    sv = np.bincount(b, weights=v, minlength=n_bins)[keep]
    sv2 = np.bincount(b, weights=v * v, minlength=n_bins)[keep]
    return BinTable(
        edges=edges,
        index=np.flatnonzero(keep),
        weight=sw[keep],
        n_eff=sv * sv / sv2,
        mean_label=swy[keep] / sw[keep],
        mean_score=sws[keep] / sw[keep],
        count=cnt[keep],
    )


def binned_error(table, norm, debias):
    """ECE (``"l1"``), RMSCE (``"l2"``) or MCE (``"max"``) from a :class:`BinTable`.

    With ``debias`` (L2 only) each bin's squared gap is reduced by the variance
    of its mean label, ``ybar (1 - ybar) / (n_eff - 1)`` with the effective size
    ``n_eff = (sum w)^2 / sum w^2`` (Kumar, Liang & Ma, 2019). The debiased
    *squared* error is unbiased and can be negative; bins with ``n_eff <= 1``
    carry no variance information and are left undebiased.
    """
    p = table.weight / table.weight.sum()
    gap = table.mean_label - table.mean_score
    if norm == "l1":
        return float(np.sum(p * np.abs(gap)))
    if norm == "max":
        return float(np.max(np.abs(gap)))
    sq = gap * gap
    if debias:
        n_eff = table.n_eff
        ybar = table.mean_label
        corr = np.zeros_like(sq)
        ok = n_eff > 1 + 1e-12
        corr[ok] = ybar[ok] * (1 - ybar[ok]) / (n_eff[ok] - 1)
        sq = sq - corr
    return float(np.sum(p * sq))


def binned_error_value(table, norm, debias, squared):
    """:func:`binned_error` with the L2 root taken (keeping the sign of a
    negative debiased estimate, ``-sqrt(-v)``) unless ``squared``."""
    v = binned_error(table, norm, debias)
    if norm == "l2" and not squared:
        v = float(np.sign(v) * np.sqrt(abs(v)))
    return v


def table_as_dict(table):
    """The public per-bin table returned with ``return_bins=True``."""
    return {
        "edges": table.edges,
        "bin": table.index,
        "weight": table.weight,
        "count": table.count,
        "mean_label": table.mean_label,
        "mean_score": table.mean_score,
    }
