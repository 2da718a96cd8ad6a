"""Nodes at quantiles of the log-odds, and linear binning of samples onto them."""

from __future__ import annotations

import numpy as np

MAX_NODES = 129


# Buckets per node of interval_index, the most nodes it compares a sample
# with (more in one bucket: a binary search), and the fewest samples for
# which the buckets beat a binary search.
BUCKETS_PER_NODE = 32


MAX_NODES_PER_BUCKET = 4


MIN_BUCKET_ROWS = 2048


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


def _searched_index(u, nodes):
    """:func:`interval_index` by a binary search per sample."""
    # np.minimum/np.maximum: np.clip without its wrapper's overhead
    idx = np.searchsorted(nodes, u, side="right") - 1
    return np.minimum(np.maximum(idx, 0), nodes.shape[0] - 2)


def interval_index(u, nodes):
    """Index of the node interval holding each ``u``, the end ones extended.

    ``np.clip(np.searchsorted(nodes, u, side="right") - 1, 0, m - 2)`` for
    increasing ``nodes`` (``m >= 2``), that is the number of interior nodes
    at or below ``u``. A binary search per sample mispredicts its branches
    and took most of the binning of large samples; here each sample falls
    in one of ``BUCKETS_PER_NODE * m`` equal buckets spanning the nodes,
    which gives the interior nodes of the buckets before its own, and is
    compared with the few nodes in its own bucket. The bucket is a
    non-decreasing function of the value, rounding included, and the nodes'
    buckets come from the same operations, so a node in an earlier bucket
    lies below the sample and one in a later bucket above it: the count is
    exact. Small samples, ``NaN`` and nodes crowded into one bucket take the
    binary search.

    Parameters
    ----------
    u : ndarray of shape (n,)
        Values to place.
    nodes : ndarray of shape (m,)
        Increasing nodes, ``m >= 2``.

    Returns
    -------
    ndarray of shape (n,), intp
        Left node of each value's interval, in ``[0, m - 2]``.
    """
    m = nodes.shape[0]
    if u.shape[0] < MIN_BUCKET_ROWS or m < 3:
        return _searched_index(u, nodes)
    n_buckets = BUCKETS_PER_NODE * m
    lo = nodes[0]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scale = n_buckets / (nodes[-1] - lo)

        def bucket(v):
            pos = v - lo
            pos *= scale
            np.maximum(pos, 0.0, out=pos)
            return np.minimum(pos, n_buckets - 1, out=pos)

        pos = bucket(u)
    # Clipped positions sum to a finite number unless one of them is NaN.
    if not np.isfinite(scale) or np.isnan(np.add.reduce(pos)):
        return _searched_index(u, nodes)
    inner = nodes[1:-1]
    at = bucket(inner).astype(np.intp)
    count = np.bincount(at, minlength=n_buckets)
    crowd = int(count.max())
    if crowd > MAX_NODES_PER_BUCKET:
        return _searched_index(u, nodes)
    first = np.cumsum(count) - count
    b = pos.astype(np.intp)
    idx = np.take(first, b)
    # The j-th interior node of each bucket; NaN (below no value) where the
    # bucket has fewer.
    padded = np.concatenate([inner, np.full(crowd, np.nan)])
    for j in range(crowd):
        node = np.where(j < count, padded[first + j], np.nan)
        idx += u >= np.take(node, b)
    return idx


def hat_weights(u, nodes):
    """Left node index and the share ``theta`` of the right node for each ``u``."""
    idx = interval_index(u, nodes)
    left = np.take(nodes, idx)
    width = np.take(np.diff(nodes), idx)
    theta = np.minimum(np.maximum((u - left) / width, 0.0), 1.0)
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
