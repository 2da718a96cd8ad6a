"""Certified upper (and lower) bounds on the binary L1 calibration error."""

from __future__ import annotations

import numpy as np
from joblib import Parallel, delayed

from .._backend.certificate import (
    FOLD_DELTA_PARTS,
    aggregate_folds,
    fold_delta,
    smoother_fold_terms,
    tv_fold_terms,
)
from .._backend.distributed import any_dask
from .._backend.progress import Progress
from .._backend.score_grid import discretisation_term
from .._backend.sorting import stable_sort
from .._backend.tv import fit_label_steps, steps_extension, tie_averaged_steps
from .._backend.window import (
    NW_HALF_WIDTHS,
    bucket_edges,
    bucket_prefix_sums,
    bucket_smoother,
    exclusion,
    fine_cells,
    nw_error_bound,
    select_half_width,
    window_influence,
    window_moments,
    window_prefix_sums,
)
from .._docstrings import fill_doc
from .._params import StrOptions, check_random_generator, validate_params
from .._validation import (
    binary_tasks,
    check_calibration_inputs,
    check_perturbed_scores,
    check_perturbed_spread,
)
from ._dask import dask_calibration_error_bound
from ._groups import by_group
from ._results import CalibrationBound

__all__ = ["calibration_error_bound"]

_METHODS = ("nw", "tv", "lipschitz")
_MULTI_CLASS = ("top-label",)
# Training points (evenly spaced in sorted order) used to choose the half-width.
_NW_SELECT_POINTS = 1000
# Fractional shifts per bucket count in the Lipschitz baseline.
_N_SHIFTS = 4
_MAX_LOG2_BUCKETS = 16


def _smoother_fold(err, g, sum_sq_influence, delta):
    """Fold bound of the smoother-based methods (NW and Lipschitz buckets)."""
    return smoother_fold_terms(
        err.shape[0], (err.mean(), err.var()), g.mean(), sum_sq_influence, delta
    )


def _nw_fold(s_sorted, y_sorted, held_out, s_valid, delta, *, scale, prefix):
    """NW fold on the whole sorted sample with the held-out fold subtracted
    from the shared prefix sums (no per-fold copy of the training part)."""
    lip1, lip2 = 1.0 / (2.0 * scale), 3.0 / (2.0 * scale**2)
    exclude = exclusion(s_sorted, y_sorted, held_out)
    held = exclude.positions
    n_train = s_sorted.shape[0] - held.shape[0]
    # The half-width is chosen from training scores only (evenly spaced in
    # sorted order), never from the held-out fold nor from any label: given
    # the scores it is fixed, as the label-deviation term requires.
    pick = np.linspace(0, n_train - 1, min(n_train, _NW_SELECT_POINTS))
    rank = np.unique(pick.astype(np.int64))
    # The training point of rank r follows the held-out points h_i with
    # h_i - i <= r (those with at most r training points before them).
    gaps = held - np.arange(held.shape[0])
    query = s_sorted[rank + np.searchsorted(gaps, rank, side="right")]
    del gaps
    hw = select_half_width(s_sorted, prefix, query, NW_HALF_WIDTHS, lip1, lip2, exclude)
    count, eta, m1, m2, lo, hi = window_moments(
        s_sorted, prefix, s_valid, hw, exclude, return_ranges=True
    )
    g = nw_error_bound(count, m1, m2, lip1, lip2)
    influence = window_influence(lo, hi, count, s_sorted.shape[0], excluded=held)
    terms, lower = _smoother_fold(np.abs(eta - s_valid), g, influence, delta)
    return terms, lower, {"bandwidth": hw, "n_train": int(n_train)}


def _tv_fold(s_sorted, y_sorted, train, s_valid, delta, *, variation, assume):
    monotone = assume == "monotone"
    # The fit needs the labels only and the averaging over ties the scores
    # only: the training scores (8 bytes per sample) are taken after the
    # fit's work arrays are gone.
    y_train = y_sorted[train]
    n_train = y_train.shape[0]
    starts, values, penalty = fit_label_steps(y_train, delta, monotone=monotone)
    del y_train
    s_train = s_sorted[train]
    starts, values, fitted_variation = tie_averaged_steps(
        s_train, starts, values, monotone=monotone
    )
    extra = {} if penalty is None else {"penalty": penalty}
    err = np.abs(s_valid - steps_extension(s_train, starts, values, s_valid))
    terms, lower = tv_fold_terms(
        err.shape[0],
        (err.mean(), err.var()),
        n_train,
        delta,
        variation,
        fitted_variation,
    )
    extra["fitted_variation"] = fitted_variation
    extra["n_train"] = int(n_train)
    return terms, lower, extra


def _lipschitz_fold(
    s_sorted, y_sorted, train, s_valid, delta, *, lipschitz, discretisation
):
    n_train = int(np.count_nonzero(train))
    log2_max = int(min(_MAX_LOG2_BUCKETS, max(1, np.floor(np.log2(n_train)))))
    n_fine = (1 << log2_max) * _N_SHIFTS
    prefix = bucket_prefix_sums(s_sorted, y_sorted, n_fine, keep=train)
    iv = fine_cells(s_valid, n_fine)
    order = np.argsort(iv, kind="stable")
    best = None
    best_lower = -np.inf
    for log2_b in range(1, log2_max + 1):
        n_buckets = 1 << log2_b
        # Σ_B 1/B <= 1 over B = 2, 4, 8, ...: the union over every candidate
        # stays within the fold's budget.
        delta_c = delta / (n_buckets * _N_SHIFTS)
        for shift in range(_N_SHIFTS):
            edges = bucket_edges(n_buckets, shift, _N_SHIFTS, n_fine)
            eta, g, influence = bucket_smoother(
                prefix, edges, iv, s_valid, lipschitz, discretisation, order
            )
            terms, lower = _smoother_fold(np.abs(eta - s_valid), g, influence, delta_c)
            upper = sum(terms.values())
            if best is None or upper < best[0]:
                best = (upper, terms, {"n_bins": n_buckets, "shift": shift / _N_SHIFTS})
            best_lower = max(best_lower, lower)
    return best[1], best_lower, {**best[2], "n_train": n_train}


_FOLD_FUNCS = {"tv": _tv_fold, "lipschitz": _lipschitz_fold}


def _run_fold(method, s_sorted, y_sorted, fold_sorted, k, s_valid, delta, kwargs):
    held_out = fold_sorted == k
    if method == "nw":
        terms, lower, extra = _nw_fold(
            s_sorted, y_sorted, held_out, s_valid, delta, **kwargs
        )
    else:
        train = ~held_out
        del held_out
        terms, lower, extra = _FOLD_FUNCS[method](
            s_sorted, y_sorted, train, s_valid, delta, **kwargs
        )
    return {
        "lower": float(lower),
        "estimate": terms["validation_error"],
        "terms": terms,
        "n_valid": int(s_valid.shape[0]),
        "delta": delta * FOLD_DELTA_PARTS,
        **extra,
    }


def _validation_size(n_samples):
    return int(min(15000, max(5000, 0.05 * n_samples)))


def _method_kwargs(method, perturbation_scale, lipschitz, variation, assume):
    """The fold function's kwargs; the cross-parameter rules of each method
    (the scalar rules are checked by ``validate_params``)."""
    if assume is not None and method != "tv":
        raise ValueError(
            "assume must be None or 'monotone' (with method='tv'); "
            f"got assume={assume!r} with method={method!r}."
        )
    # A parameter the chosen method does not use is a mistake about the method.
    unused = {
        "nw": {"lipschitz": lipschitz is not None, "variation": variation != 1.0},
        "lipschitz": {"variation": variation != 1.0},
        "tv": {
            "lipschitz": lipschitz is not None,
            "perturbation_scale": perturbation_scale is not None,
        },
    }[method]
    for name, given in unused.items():
        if given:
            raise ValueError(f"{name} is not used by method={method!r}.")
    if method == "nw":
        if perturbation_scale is None:
            raise ValueError(
                "method='nw' needs perturbation_scale, the scale h of the sech "
                "perturbation that produced the scores."
            )
        return {"scale": float(perturbation_scale)}
    if method == "lipschitz":
        if lipschitz is None:
            if perturbation_scale is None:
                raise ValueError(
                    "method='lipschitz' needs lipschitz= (a Lipschitz constant of "
                    "the calibration function) or perturbation_scale= (then "
                    "lipschitz = 1 / (2 perturbation_scale))."
                )
            lip = 1.0 / (2.0 * perturbation_scale)
            # The constant comes from the perturbation: the scores live on
            # its grid, whose cells cost the same as in the NW bound.
            return {"lipschitz": lip, "discretisation": discretisation_term(lip)}
        return {"lipschitz": float(lipschitz), "discretisation": 0.0}
    if assume == "monotone" and variation != 1.0:
        raise ValueError(
            "assume='monotone' fixes the variation to 1; leave variation=1.0."
        )
    return {"variation": float(variation), "assume": assume}


@validate_params(method=StrOptions(*_METHODS), multi_class=StrOptions(*_MULTI_CLASS))
@by_group
@fill_doc
def calibration_error_bound(
    y_true,
    y_proba,
    *,
    method="tv",
    delta=0.05,
    perturbation_scale=None,
    lipschitz=None,
    variation=1.0,
    assume=None,
    n_splits=5,
    pos_label=None,
    labels=None,
    multi_class="top-label",
    random_state=None,
    n_jobs=None,
    return_details=False,
    verbose=0,
    groups=None,
):
    """Certified bound on the L1 calibration error of a classifier.

    With probability at least ``1 - delta`` over the sample, ``upper`` is at
    least the true calibration error ``CE = E|s - η(s)|``, where
    ``η(s) = P(y = 1 | s)``, for any sample size (no asymptotics). Each method
    rests on an assumption about ``η``, stated below; the guarantee holds only
    under that assumption.

    The sample is split into ``n_splits`` folds. For each fold, a surrogate
    ``η̂`` is fitted on the other folds (the training part ``T``) and
    ``E|η̂(s) - s|`` is bounded on (a subsample of) the held-out fold with an
    empirical Bernstein term; a method-specific term bounds ``E|η̂ - η|``
    for the realised ``η̂``. Each fold uses ``delta / n_splits``; every fold
    bound then holds on one event of probability ``1 - delta``, and the
    smallest of them (clipped at 1) is reported.

    Read more in the :ref:`User Guide <certified>`, which derives every term.

    Parameters
    ----------
    ${y_true}
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Scores (1-D: predicted probability of the positive class), drawn
        i.i.d. together with the labels. With three or more classes the bound
        is on the top-label problem (see ``multi_class``).
    method : {"tv", "nw", "lipschitz"}, default="tv"
        * ``"tv"``: ``η`` has total variation at most ``variation`` (the
          default 1 covers every monotone ``η``). Exact total-variation
          denoising on ``T``.
        * ``"nw"``: **only valid for scores produced by the sech perturbation
          of scale ``perturbation_scale``** (by
          :class:`~skcalib.PerturbedClassifier` or
          :func:`~skcalib.perturb_proba`), which guarantees
          ``|η'| <= 1/(2h)`` and ``|η''| <= 3/(2h²)``. Box-kernel
          Nadaraya–Watson smoother on ``T``; usually the tightest bound.
          Perturbed scores lie on the grid ``k / 2**24``; scores that do not
          are refused (they were not perturbed, so the assumption fails).
          Being on the grid is necessary, not sufficient: unperturbed scores
          that happen to lie on it (e.g. a few atoms ``k / 2**24``) make the
          bound false. Scores with fewer distinct values than perturbed
          scores take except with probability 1e-9 (for any model; see the
          :ref:`User Guide <certified>`) are refused too; scores that pass
          this check are not thereby shown to be perturbed.
        * ``"lipschitz"``: ``η`` is ``lipschitz``-Lipschitz. Uniform buckets
          with shifts; the best of all bucket counts ``2, 4, 8, ...`` and
          shifts is reported, with ``delta`` union-bounded over them.
    delta : float, default=0.05
        Failure probability, in (0, 1).
    perturbation_scale : float, default=None
        Scale ``h`` of the sech perturbation. Required for ``"nw"``; for
        ``"lipschitz"`` it sets ``lipschitz = 1 / (2h)`` when ``lipschitz`` is
        not given (the scores must then be perturbed ones, as for ``"nw"``).
    lipschitz : float, default=None
        Lipschitz constant of ``η`` for ``method="lipschitz"``.
    variation : float, default=1.0
        Bound on the total variation of ``η`` for ``method="tv"`` (other
        methods need the default).
    assume : {None, "monotone"}, default=None
        With ``method="tv"``, ``"monotone"`` fits isotonic regression instead
        of total-variation denoising (same guarantee, for non-decreasing
        ``η``).
    n_splits : int, default=5
        Number of cross-fitting folds, >= 2.
    pos_label : int, float, bool or str, default=None
        The positive class of a binary problem; ``None`` means the greater
        label.
    labels : array-like of shape (n_classes,), default=None
        Class labels of the columns of a 2-D ``y_proba`` (e.g.
        ``estimator.classes_``), for data where some class is absent.
    multi_class : {"top-label"}, default="top-label"
        With three or more classes, the calibration error of the top-label
        confidence: ``E|c - P(y = argmax | c)|``, the problem that
        :class:`~skcalib.PerturbedClassifier` perturbs. It is the only notion a
        single certificate covers.
    random_state : int, Generator, RandomState or None, default=None
        Fold assignment and validation subsampling.
    n_jobs : int, default=None
        Folds run in parallel with ``joblib.Parallel`` (threads: the folds
        share the sorted sample). ``None`` means one job.
    return_details : bool, default=False
        Return a :class:`CalibrationBound` instead of the float upper bound.
    verbose : int, default=0
        Report progress (one step per fold) on stderr when positive.
    groups : array-like of shape (n_samples,), default=None
        Group of each sample (numbers, strings or booleans, as scikit-learn's
        ``groups``). With ``groups`` the bound is computed on each group's
        rows alone, every other argument unchanged (the classes and the
        positive class are those of the whole sample, so a group lacking some
        class keeps the columns of the others), and a
        :class:`GroupedCalibrationResult` is returned. A group too small for
        the bound raises a ``ValueError`` that names it. Read more in the
        :ref:`User Guide <groups>`.

        Each group's bound holds with probability ``1 - delta`` on its own
        (it is the bound of that group's rows called alone). For the bounds
        of all the groups to hold together, e.g. to say that no group's
        error exceeds ``worst_value``, pass ``delta=delta / n_groups``
        (Bonferroni, with ``n_groups = len(np.unique(groups))``).

    Returns
    -------
    float, CalibrationBound or GroupedCalibrationResult
        The certified upper bound. With ``return_details=True``, a
        :class:`CalibrationBound` holding ``upper``, ``lower``, ``estimate``,
        the additive ``terms``, ``per_fold`` details, the ``vacuous`` flag and
        the tuning parameters used.
        With ``groups``, a :class:`GroupedCalibrationResult` instead,
        whatever ``return_details`` (which then keeps each group's
        :class:`CalibrationBound` in its ``details``): the per-group breakdown
        is what was asked for.

    Notes
    -----
    The held-out part of each fold is subsampled to
    ``min(15000, max(5000, 0.05 n))`` points. Tuning parameters (the NW window,
    the TV penalty) depend on the training part only. The labels of the
    held-out part are not used: ``E|η̂(s) - s|`` only needs its scores.
    A parameter that the chosen method does not use raises a ``ValueError``.

    Dask arrays are bounded with the two passes of
    :class:`StreamingCalibrationBound` (methods ``"nw"`` and ``"tv"`` only).
    Its folds follow a hash of each sample's position rather than a random
    permutation, so the numbers differ slightly from the in-memory call's,
    with the same guarantee.

    References
    ----------
    K. Ciosek et al., "Measuring Uncertainty Calibration", ICLR 2026,
    arXiv:2512.13872.

    Examples
    --------
    >>> from skcalib.datasets import make_calibration_problem
    >>> from skcalib.metrics import calibration_error_bound
    >>> prob = make_calibration_problem(
    ...     20000, problem="u2", perturbation_scale=2**-4, random_state=0
    ... )
    >>> upper = calibration_error_bound(
    ...     prob.y_true, prob.y_proba, method="nw",
    ...     perturbation_scale=2**-4, random_state=0,
    ... )
    >>> bool(prob.calibration_error <= upper)
    True
    >>> b = calibration_error_bound(
    ...     prob.y_true, prob.y_proba, method="nw",
    ...     perturbation_scale=2**-4, random_state=0, return_details=True,
    ... )
    >>> b.upper == upper and bool(b.lower <= prob.calibration_error)
    True
    """
    if any_dask(y_true, y_proba):
        if method != "lipschitz":  # which the dask path rejects by name
            _method_kwargs(method, perturbation_scale, lipschitz, variation, assume)
        return dask_calibration_error_bound(
            y_true,
            y_proba,
            method=method,
            delta=delta,
            perturbation_scale=perturbation_scale,
            lipschitz=lipschitz,
            variation=variation,
            assume=assume,
            n_splits=n_splits,
            pos_label=pos_label,
            labels=labels,
            random_state=random_state,
            return_details=return_details,
        )
    kwargs = _method_kwargs(method, perturbation_scale, lipschitz, variation, assume)
    data = check_calibration_inputs(y_true, y_proba, pos_label=pos_label, labels=labels)
    ((y, s, _),) = binary_tasks(data, multi_class)
    # The binary task's labels are 0/1: one byte each. The validated float
    # labels and the unit weights (16 bytes per sample) go before any work
    # array is made.
    y = y.astype(np.uint8)
    del data, _
    perturbed = method == "nw" or bool(kwargs.get("discretisation"))
    if perturbed:
        check_perturbed_scores(s, method)
    n = s.shape[0]
    if n < 2 * n_splits:
        raise ValueError(
            f"n_samples={n} is too small for n_splits={n_splits}: every fold needs "
            f"at least 2 samples (n_samples >= 2 * n_splits = {2 * n_splits})."
        )
    rng = check_random_generator(random_state)

    # Small integer types: at 1e7 samples every byte per sample is 10 MB.
    fold = np.empty(n, dtype=np.min_scalar_type(n_splits - 1))
    perm = rng.permutation(n)
    step = 1 << 20
    for i in range(0, n, step):
        # A slice of ``perm`` kept in a name would keep all of it alive.
        fold[perm[i : i + step]] = np.arange(i, min(n, i + step)) % n_splits
    del perm
    n_valid = _validation_size(n)
    valid_scores = []
    for k in range(n_splits):
        idx = np.flatnonzero(fold == k)
        if idx.shape[0] > n_valid:
            idx = np.sort(rng.choice(idx, n_valid, replace=False))
        valid_scores.append(s[idx])
    del idx
    # One stable sort serves every fold: the training part of a fold is a
    # subsequence of the sorted sample, so it is sorted too, and ties keep an
    # order that does not depend on the labels. Only the sorted copies are
    # used from here on; each original goes as soon as it is copied.
    order, s_sorted = stable_sort(s)
    del s
    if perturbed:
        check_perturbed_spread(s_sorted, perturbation_scale, method)
    y_sorted = y[order]
    del y
    fold_sorted = fold[order]
    del fold, order
    if method == "nw":
        kwargs["prefix"] = window_prefix_sums(s_sorted, y_sorted)

    # Threads: the folds share the sorted sample (no copy per worker), and the
    # numpy passes release the GIL. One job by default: each running fold
    # holds about 25 bytes per sample.
    with Progress(f"{method} bound, folds", n_splits, verbose) as progress:
        folds = list(
            progress.track(
                Parallel(n_jobs=n_jobs, prefer="threads", return_as="generator")(
                    delayed(_run_fold)(
                        method,
                        s_sorted,
                        y_sorted,
                        fold_sorted,
                        k,
                        valid_scores[k],
                        fold_delta(delta, n_splits),
                        kwargs,
                    )
                    for k in range(n_splits)
                )
            )
        )
    combined = aggregate_folds(folds)
    if not return_details:
        return float(combined["upper"])
    return CalibrationBound(
        upper=combined["upper"],
        lower=combined["lower"],
        estimate=combined["estimate"],
        method=method,
        delta=delta,
        n_samples=int(n),
        n_splits=n_splits,
        terms=combined["terms"],
        per_fold=tuple(folds),
        vacuous=combined["vacuous"],
        bandwidth=np.array([f["bandwidth"] for f in folds]) if method == "nw" else None,
        n_bins=np.array([f["n_bins"] for f in folds])
        if method == "lipschitz"
        else None,
        assume=assume,
    )
