"""The binned calibration-error family: ECE, RMSCE, MCE."""

from __future__ import annotations

import numpy as np

from .._backend.binning import (
    bin_table,
    binned_error_value,
    quantile_edges,
    table_as_dict,
    uniform_edges,
)
from .._validation import (
    binary_tasks,
    check_binned_options,
    check_calibration_inputs,
    check_int,
    check_multi_class,
)
from ._accumulator import any_dask, dask_metric
from ._scorer import CalibrationScorer, register_scorer

__all__ = ["binned_calibration_error"]


def _n_bins(n_bins, n_samples):
    if isinstance(n_bins, str):
        if n_bins != "cbrt":
            raise ValueError(
                f"n_bins must be a positive integer or 'cbrt'; got {n_bins!r}."
            )
        return max(1, int(np.ceil(n_samples ** (1 / 3))))
    return check_int(n_bins, "n_bins", min_val=1)


def binned_calibration_error(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    norm="l1",
    debias=False,
    squared=False,
    multi_class="top-label",
    sample_weight=None,
    pos_label=None,
    labels=None,
    return_bins=False,
):
    """Binned calibration error: ECE (L1), RMSCE (L2) or MCE (max).

    Scores are grouped into bins; in each non-empty bin ``k`` the weighted mean
    label ``ybar_k`` is compared with the weighted mean score ``sbar_k``:

    * ``norm="l1"`` (ECE): ``sum_k (W_k / W) |ybar_k - sbar_k|``
    * ``norm="l2"`` (RMSCE): ``sqrt(sum_k (W_k / W) (ybar_k - sbar_k)^2)``
    * ``norm="max"`` (MCE): ``max_k |ybar_k - sbar_k|``

    Bins are ``[e_k, e_{k+1})`` with the last one closed, so a score of exactly
    1.0 is counted. The value depends on ``n_bins`` and ``strategy`` and is
    biased upward for small bins; prefer :func:`smooth_ece` for a consistent
    measure. ``strategy="quantile", norm="l2", n_bins="cbrt"`` is the binned L2
    calibration error proposed for scikit-learn (the calibration term of the
    Brier score decomposition).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
    n_bins : int or "cbrt", default=15
        Number of bins; ``"cbrt"`` uses ``ceil(n ** (1/3))`` with ``n`` the
        number of samples of positive weight.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1], or bins holding equal (weighted) mass
        (edges at the score quantiles, numpy's linear interpolation, with
        each score placed at the midpoint of its cumulative weight when
        weights are given; duplicate edges give empty bins, which are
        skipped).
    norm : {"l1", "l2", "max"}, default="l1"
    debias : bool, default=False
        Only for ``norm="l2"``: subtract the within-bin sampling variance of the
        mean label (Kumar et al., 2019). The debiased squared error is unbiased
        and can be negative; the root keeps its sign (``-sqrt(-v)``).
    squared : bool, default=False
        Only for ``norm="l2"``: return the squared error.
    multi_class : {"top-label", "classwise"}, default="top-label"
        Reduction for multiclass ``y_proba`` (ignored for binary problems).
    sample_weight : array-like of shape (n_samples,), default=None
    pos_label : int, float, bool or str, default=None
        Positive class of a binary problem; ``None`` means the greater label.
    labels : array-like, default=None
        All class labels, in the order of the columns of ``y_proba`` (as
        in :func:`sklearn.metrics.roc_auc_score`); needed when ``y_true``
        lacks some class of ``y_proba``.
    return_bins : bool, default=False
        Also return a dict per reduced problem with the bin ``edges``, the
        ``bin`` numbers of the non-empty bins and their ``weight``, ``count``,
        ``mean_label`` and ``mean_score`` (a list for ``"classwise"``).

    Returns
    -------
    error : float
    bins : dict or list of dict
        Only if ``return_bins=True``.

    References
    ----------
    M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining Well Calibrated
    Probabilities Using Bayesian Binning", AAAI 2015.
    A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration", NeurIPS 2019.

    Examples
    --------
    >>> from skcalib.metrics import binned_calibration_error
    >>> y = [0, 0, 1, 1]
    >>> p = [0.1, 0.4, 0.6, 1.0]
    >>> binned_calibration_error(y, p, n_bins=2)   # bins: 0.25 vs 0, 0.8 vs 1
    0.225
    >>> round(binned_calibration_error(y, p, n_bins=2, norm="max"), 3)
    0.25
    """
    if any_dask(y_true, y_proba, sample_weight):
        return dask_metric("binned_calibration_error", **locals())
    check_multi_class(strategy, ("uniform", "quantile"), name="strategy")
    check_multi_class(multi_class, ("top-label", "classwise"))
    check_binned_options(norm, debias, squared, return_bins)
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    n_bins = _n_bins(n_bins, int(np.count_nonzero(data.weight)))
    values, tables = [], []
    for y, s, w in binary_tasks(data, multi_class):
        if strategy == "uniform":
            edges = uniform_edges(n_bins)
        else:
            edges = quantile_edges(s, w, n_bins)
        table = bin_table(y, s, w, edges)
        values.append(binned_error_value(table, norm, debias, squared))
        tables.append(table_as_dict(table))
    value = float(np.mean(values))
    if not return_bins:
        return value
    if multi_class == "classwise" and data.kind == "multiclass":
        return value, tables
    return value, tables[0]


register_scorer(
    "neg_expected_calibration_error",
    CalibrationScorer(
        binned_calibration_error, n_bins=15, strategy="uniform", norm="l1"
    ),
)
register_scorer(
    "neg_l2_calibration_error",
    CalibrationScorer(
        binned_calibration_error, n_bins="cbrt", strategy="quantile", norm="l2"
    ),
)
