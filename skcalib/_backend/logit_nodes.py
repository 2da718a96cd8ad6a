"""Nodes at quantiles of the log-odds, and linear binning of samples onto them."""

from __future__ import annotations

import numpy as np

MAX_NODES = 129


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
