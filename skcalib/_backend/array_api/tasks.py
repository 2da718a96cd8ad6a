"""Binary reductions of a probability matrix, in any array-API namespace.

The rules of :func:`skcalib._validation.binary_tasks`: top-label (the
confidence ``max_k P_ik`` against the correctness of the first column
holding it, ``argmax``'s rule) and one-vs-rest per class. The scores stay
differentiable functions of ``P`` (the maximum's gradient goes to the
largest entries); the labels are constants.
"""

from __future__ import annotations

from .namespace import astype

__all__ = ["binary_tasks", "simplex_tasks"]


def binary_tasks(kind, y, proba, multi_class, xp):
    """``[(y01, s), ...]``: binary problems to be averaged.

    Parameters
    ----------
    kind : {"binary", "multiclass"}
    y : array of shape (n,)
        Binary: 0/1 indicator (float). Multiclass: int class index.
    proba : array of shape (n,) or (n, K)
    multi_class : {"top-label", "classwise"}
    xp : namespace
    """
    if kind == "binary":
        return [(y, proba)]
    if multi_class == "top-label":
        correct = astype(xp.argmax(proba, axis=1) == y, proba.dtype, xp)
        return [(correct, xp.max(proba, axis=1))]
    if multi_class == "classwise":
        return [
            (astype(y == k, proba.dtype, xp), proba[:, k])
            for k in range(proba.shape[1])
        ]
    raise ValueError(f"multi_class={multi_class!r} does not reduce to binary problems.")


def simplex_tasks(kind, y, proba, multi_class, xp):
    """``[(F, y_index, scale), ...]``: problems on the simplex for ECE-KDE.

    The canonical multiclass problem is the matrix itself; every binary
    problem runs on the two-class simplex ``(1 - s, s)``, whose two
    coordinates carry the same error, so ``scale = 1/2`` turns the sum over
    them into the scalar error of the positive class.
    """
    if kind == "multiclass" and multi_class == "canonical":
        return [(proba, y, 1.0)]
    return [
        (xp.stack([1.0 - s, s], axis=1), astype(y01, xp.int64, xp), 0.5)
        for y01, s in binary_tasks(kind, y, proba, multi_class, xp)
    ]
