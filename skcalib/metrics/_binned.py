"""The binned calibration-error family: ECE, RMSCE, MCE."""

from __future__ import annotations

import numpy as np

from .._backend.binning import (
    SELECT_MIN,
    bin_table,
    binned_error_value,
    quantile_edges,
    quantile_table,
    uniform_edges,
)
from .._backend.distributed import any_dask
from .._params import check_binned_options, check_n_bins, validate_params
from .._validation import binary_tasks
from ._array_api import binned_tables, calibration_inputs, host_weight
from ._dask import dask_binned_calibration_error
from ._groups import by_group
from ._results import BinnedCalibrationResult

__all__ = ["binned_calibration_error"]


@validate_params()
@by_group
def binned_calibration_error(
    y_true,
    y_proba,
    *,
    n_bins=15,
    strategy="uniform",
    norm="l1",
    debias=False,
    root=True,
    multi_class="top-label",
    sample_weight=None,
    pos_label=None,
    labels=None,
    return_details=False,
    groups=None,
):
    """Binned calibration error: ECE (L1), RMSCE (L2) or MCE (max).

    Scores are grouped into bins; in each non-empty bin ``k`` the weighted mean
    label ``ybar_k`` is compared with the weighted mean score ``sbar_k``:

    * ``norm="l1"`` (ECE): ``sum_k (W_k / W) |ybar_k - sbar_k|``
    * ``norm="l2"`` (RMSCE): ``sqrt(sum_k (W_k / W) (ybar_k - sbar_k)^2)``
      (without the root for ``root=False``)
    * ``norm="max"`` (MCE): ``max_k |ybar_k - sbar_k|``

    Bin rule (that of :func:`sklearn.calibration.calibration_curve`, i.e.
    ``np.searchsorted(edges[1:-1], s)``): the first bin is ``[e_0, e_1]`` and
    bin ``k > 0`` is ``(e_k, e_{k+1}]``, so a score on an interior edge
    belongs to the bin below it, 0.0 to the first bin and 1.0 to the last.
    Uniform edges are exactly ``k / n_bins`` (the double nearest to it; not
    ``np.linspace`` values, which are one ulp off for some ``k``); quantile
    edges with equal weights are scikit-learn's
    ``np.percentile(s, 100 * np.linspace(0, 1, n_bins + 1))``. Hence the
    per-bin means equal ``calibration_curve``'s for tied scores too (scores
    exactly on edges such as 0.1, 0.2, 0.3, 0.7), except for scores within
    an ulp of a ``linspace`` edge that is not ``k / n_bins``.
    The value depends on ``n_bins`` and ``strategy`` and is
    biased upward for small bins; prefer :func:`smooth_ece` for a consistent
    measure. ``strategy="quantile", norm="l2", n_bins="cbrt"`` is the binned L2
    calibration error proposed for scikit-learn (the calibration term of the
    Brier score decomposition).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probability of the positive class, or of each class.
    n_bins : int or "cbrt", default=15
        Number of bins; ``"cbrt"`` uses ``ceil(n ** (1/3))`` with ``n`` the
        number of samples of positive weight.
    strategy : {"uniform", "quantile"}, default="uniform"
        Equal-width bins on [0, 1], or bins holding equal (weighted) mass
        (edges at the score quantiles, numpy's linear interpolation, with
        each score placed at the midpoint of its cumulative weight when
        unequal weights are given, so that rescaling the weights does not
        move the edges, but an integer weight is not the same as repeated
        rows; duplicate edges give empty bins, which are skipped).
    norm : {"l1", "l2", "max"}, default="l1"
    debias : bool, default=False
        Only for ``norm="l2"``: the debiased estimate of Kumar et al. (2019).
        A bin of ``n_k >= 2`` samples contributes its squared gap less the
        estimated variance of its mean label, ``ybar_k (1 - ybar_k) /
        (n_k - 1)``; a bin of a single sample contributes 0 (its ``(y - s)^2``
        is noise with no variance estimate). Each bin's term is unbiased for
        its squared calibration gap when the labels in the bin are
        independent with a common mean; the total is not unbiased (the
        single-sample bins are dropped, the gap varies within bins). It can
        be negative; the root keeps its sign (``-sqrt(-v)``).
    root : bool, default=True
        Only for ``norm="l2"``: ``True`` (the default) returns the root mean
        squared gap (RMSCE), ``False`` the mean squared gap itself. The other
        norms have no square: ``root=False`` is refused with them. The
        default differs from :func:`kde_calibration_error`'s ``root=False``,
        which returns the ``p``-th power by default.
    multi_class : {"top-label", "classwise"}, default="top-label"
        Reduction for multiclass ``y_proba`` (ignored for binary problems).
    sample_weight : array-like of shape (n_samples,), default=None
        Frequency weights: a weight of 2 counts like two copies of the row,
        and integer weights give the same number as repeated rows (uniform
        bins). Only ``debias=True`` reads their scale (``n_k`` is the bin's
        total weight, so bins of total weight at most 1 contribute 0); the
        other norms are unchanged when all weights are multiplied by a
        constant. Quantile edges read weights as relative (see ``strategy``).
    pos_label : int, float, bool or str, default=None
        Positive class of a binary problem. With a 1-D ``y_proba``, ``None``
        means 1 for labels in {0, 1} or {-1, 1} and ``True`` for booleans; any
        other labels (e.g. strings) need ``pos_label``. With a two-column
        ``y_proba``, ``None`` means the greater label (the last column in
        sorted order).
    labels : array-like, default=None
        All class labels, in the order of the columns of ``y_proba`` (as
        in :func:`sklearn.metrics.roc_auc_score`); needed when ``y_true``
        lacks some class of ``y_proba``.
    return_details : bool, default=False
        Return a :class:`BinnedCalibrationResult` instead of the float: the
        value and the bin table (the bin ``edges``, the ``bin`` numbers of
        the non-empty bins and their ``weight``, ``count``, ``mean_label`` and
        ``mean_score``; one table per class for ``"classwise"``).
    groups : array-like of shape (n_samples,), default=None
        Group of each sample (numbers, strings or booleans, as scikit-learn's
        ``groups``). With ``groups`` the error is computed on each group's
        rows alone, every other argument unchanged (the classes and the
        positive class are those of the whole sample, so a group lacking some
        class keeps the columns of the others), and a
        :class:`GroupedCalibrationResult` is returned. A group too small for
        the error raises a ``ValueError`` that names it. Read more in the
        :ref:`User Guide <groups>`.

    Returns
    -------
    float, BinnedCalibrationResult or GroupedCalibrationResult
        The error; a :class:`BinnedCalibrationResult` with
        ``return_details=True``.
        With ``groups``, a :class:`GroupedCalibrationResult` instead,
        whatever ``return_details`` (which then keeps each group's
        :class:`BinnedCalibrationResult` in its ``details``): the per-group
        breakdown is what was asked for.

    Notes
    -----
    Under scikit-learn's ``array_api_dispatch=True``, PyTorch, JAX and
    array-api-strict input is binned in its own namespace and on its device
    (the result is a float, as without dispatch); other input is converted
    to NumPy. Read more in the :ref:`User Guide <training>`.

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

    A score on an edge belongs to the bin below it, as in
    :func:`sklearn.calibration.calibration_curve`:

    >>> from sklearn.calibration import calibration_curve
    >>> y, p = [0, 1, 0, 1], [0.3, 0.3, 0.5, 0.9]
    >>> res = binned_calibration_error(y, p, n_bins=2, return_details=True)
    >>> res.mean_label, res.mean_score
    (array([0.33333333, 1.        ]), array([0.36666667, 0.9       ]))
    >>> calibration_curve(y, p, n_bins=2)
    (array([0.33333333, 1.        ]), array([0.36666667, 0.9       ]))
    """
    if any_dask(y_true, y_proba, sample_weight):
        return dask_binned_calibration_error(
            y_true,
            y_proba,
            n_bins=n_bins,
            strategy=strategy,
            norm=norm,
            debias=debias,
            root=root,
            multi_class=multi_class,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
            return_details=return_details,
        )
    check_binned_options(norm, debias, root)
    data, on_device = calibration_inputs(
        y_true,
        y_proba,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        caller="binned_calibration_error",
    )
    # Only "cbrt" reads the number of rows of positive weight (a pass at 1e7).
    n_positive = 0
    if isinstance(n_bins, str):
        n_positive = (
            data.n_samples
            if data.unit_weight
            else int(
                np.count_nonzero(host_weight(data) if on_device else data.sample_weight)
            )
        )
    n_bins = check_n_bins(n_bins, n_positive)
    if on_device:
        tables = binned_tables(data, multi_class, strategy, n_bins)
    else:
        tables = _tables(data, multi_class, strategy, n_bins)
    values = [binned_error_value(t, norm, debias, not root) for t in tables]
    value = float(np.mean(values))
    if not return_details:
        return value
    classwise = multi_class == "classwise" and data.kind == "multiclass"
    return BinnedCalibrationResult.from_tables(
        value,
        tables,
        values if classwise else None,
        data.classes if classwise else None,
        norm=norm,
        debias=debias,
        root=root,
        strategy=strategy,
        n_bins=n_bins,
        multi_class=multi_class if data.kind == "multiclass" else "binary",
        n_samples=data.n_samples,
    )


def _tables(data, multi_class, strategy, n_bins):
    """Bin table of each binary problem of ``data`` (NumPy)."""
    # without weights the bin sums need no products, no pass over w and no
    # array of ones (w is None then)
    unit = True if data.unit_weight else None
    tables = []
    for y, s, w in binary_tasks(data, multi_class, unit_as_none=True):
        if strategy == "uniform":
            table = bin_table(y, s, w, uniform_edges(n_bins), unit_weight=unit)
        elif unit and s.shape[0] >= SELECT_MIN:
            table = quantile_table(y, s, n_bins)
        else:
            edges = quantile_edges(s, w, n_bins, unit_weight=unit is True)
            table = bin_table(y, s, w, edges, unit_weight=unit)
        tables.append(table)
    return tables
