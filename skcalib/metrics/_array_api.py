"""The metrics that compute in the inputs' namespace under scikit-learn's
``array_api_dispatch``: ECE-KDE and the binned calibration error.

As scikit-learn's own metrics, they resolve the namespace and device of
``y_proba`` when ``sklearn.set_config(array_api_dispatch=True)`` is in effect,
bring ``y_true`` and ``sample_weight`` to them, compute there and return
Python floats. Only PyTorch, JAX and array-api-strict arrays take this path
(NumPy arrays and other namespaces are converted to NumPy, as without
dispatch); scikit-learn is imported only when such an array is given.
"""

from __future__ import annotations

import numpy as np

from .._backend.array_api.binned import bin_sums, quantile_edges
from .._backend.array_api.namespace import SUPPORTED, namespace_name, to_numpy
from .._backend.array_api.tasks import binary_tasks, simplex_tasks
from .._backend.bandwidth import select_kde_bandwidth
from .._backend.binning import table_from_sums, uniform_edges
from .._backend.kde.dense import loo_error_terms
from .._backend.kernels import SIMPLEX_EPS
from .._validation import check_array_api_inputs, check_calibration_inputs

__all__ = ["array_api_inputs", "binned_tables", "calibration_inputs", "kde_results"]

# Entries of a dense block of the kernel matrix (rows times samples) of the
# metric: 2**22 doubles are 32 MB, a few of which are alive at once.
_KDE_BLOCK_ENTRIES = 1 << 22

_FRAMEWORK_MODULES = ("torch", "jax", "jaxlib", "array_api_strict")


def _framework_array(x):
    """``x`` is an array of a non-NumPy framework the metrics compute on."""
    return type(x).__module__.split(".")[0] in _FRAMEWORK_MODULES


def array_api_inputs(y_true, y_proba, *, sample_weight, pos_label, labels, caller):
    """The checked :class:`~skcalib._validation.ArrayAPIData` when
    ``array_api_dispatch`` is on and ``y_proba`` is an array of PyTorch, JAX
    or array-api-strict; None otherwise (the caller then converts to NumPy)."""
    if not _framework_array(y_proba):
        return None
    from sklearn import get_config

    if not get_config()["array_api_dispatch"]:
        return None
    from sklearn.utils._array_api import get_namespace_and_device

    # scikit-learn's resolution (it also checks that dispatch can work).
    xp, _, _ = get_namespace_and_device(y_proba)
    if namespace_name(xp) not in SUPPORTED:
        return None
    return check_array_api_inputs(
        y_true,
        y_proba,
        sample_weight=sample_weight,
        pos_label=pos_label,
        labels=labels,
        caller=caller,
    )


def calibration_inputs(y_true, y_proba, *, sample_weight, pos_label, labels, caller):
    """``(data, on_device)``: :func:`array_api_inputs` when it applies, else
    the NumPy :func:`~skcalib._validation.check_calibration_inputs`."""
    kw = dict(sample_weight=sample_weight, pos_label=pos_label, labels=labels)
    data = array_api_inputs(y_true, y_proba, caller=caller, **kw)
    if data is not None:
        return data, True
    return check_calibration_inputs(y_true, y_proba, **kw), False


def host_weight(data):
    """The weights as a float64 host array (ones without weights)."""
    if data.sample_weight is None:
        return np.ones(data.proba.shape[0])
    return to_numpy(data.sample_weight, data.xp).astype(np.float64)


def kde_results(data, rows, *, p, bandwidth, multi_class, debias, chunk_size, progress):
    """ECE-KDE of each problem, computed in ``data``'s namespace and device.

    Returns the per-problem tuples of the NumPy path,
    ``(scale * terms, bandwidth, median ess, min ess)``, with the terms of
    the evaluation rows ``rows`` brought to the host.
    """
    xp = data.xp
    n = data.proba.shape[0]
    weight = host_weight(data)
    if chunk_size is None:
        chunk_size = max(1, _KDE_BLOCK_ENTRIES // n)
    every_row = rows.shape[0] == n
    rows_xp = None if every_row else xp.asarray(rows, device=data.device)
    results = []
    for F, y, scale in simplex_tasks(data.kind, data.y, data.proba, multi_class, xp):
        b = bandwidth
        if isinstance(b, str):
            b, _ = select_kde_bandwidth(
                to_numpy(F, xp).astype(np.float64), to_numpy(y, xp), weight, b
            )
            progress.advance()
        terms, ess = loo_error_terms(
            F,
            y,
            data.sample_weight,
            b,
            p=p,
            debias=debias,
            eps=SIMPLEX_EPS,
            xp=xp,
            rows=rows_xp,
            block_rows=chunk_size,
            ess=True,
        )
        progress.advance()
        terms = to_numpy(terms, xp).astype(np.float64)
        ess = to_numpy(ess, xp).astype(np.float64)[weight[rows] > 0]
        results.append((scale * terms, b, float(np.median(ess)), float(ess.min())))
    return results


def binned_tables(data, multi_class, strategy, n_bins):
    """Bin tables of each binary problem of ``data``, their sums formed in its
    namespace and device (the tables themselves are small host arrays)."""
    xp = data.xp
    tables = []
    for y, s in binary_tasks(data.kind, data.y, data.proba, multi_class, xp):
        if strategy == "uniform":
            edges = uniform_edges(n_bins)
        else:
            edges = quantile_edges(s, data.sample_weight, n_bins, xp)
        sums = bin_sums(y, s, data.sample_weight, edges, xp, data.device)
        tables.append(table_from_sums(edges, *sums))
    return tables
