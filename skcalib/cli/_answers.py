"""The questions ``skcalib report`` answers, from the numbers of the report.

:func:`recalibration_gain` measures what recalibrating would gain (it needs
the data); :func:`answers` turns a finished report into a short verdict per
question, each with one line on how to read it and the user-guide section
that explains it; :func:`format_answers` prints them and :data:`LEGEND`
explains the numbers that remain.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LEGEND",
    "answers",
    "compare_models",
    "format_answers",
    "recalibration_gain",
]

# Rows the cross-fitted recalibration uses at most (a uniform subsample).
GAIN_MAX_ROWS = 20_000
GAIN_SPLITS = 5
ALPHA = 0.05
WIDTH = 88  # of the printed lines

# Section title and page (relative to the built documentation's root).
SECTIONS = {
    "calibrated": ("Is my model calibrated?", "user_guide/calibration_tests.html"),
    "how_far": ("Measures of calibration error", "user_guide/measures.html"),
    "direction": (
        "The calibration summary",
        "user_guide/calibration_tests.html#calibration-summary",
    ),
    "certified": ("Certified bounds", "user_guide/certified.html"),
    "what_to_do": ("Recalibration", "user_guide/recalibration.html"),
    "compare": ("Several models", "user_guide/cli.html#several-models"),
}

LEGEND = [
    (
        "slope",
        "logistic slope of the labels on logit(score): 1 when calibrated, "
        "below 1 when the scores are too extreme (over-confident)",
    ),
    (
        "intercept",
        "calibration-in-the-large on the logit scale (slope fixed at "
        "1): 0 when calibrated, above 0 when the scores are too low on average",
    ),
    (
        "Emax, E90, E50, ICI",
        "largest, 90th-percentile, median and mean "
        "|smoothed calibration curve - score| over the rows (loess curve)",
    ),
    (
        "MCB, DSC, UNC",
        "the score = miscalibration - discrimination + "
        "uncertainty (CORP decomposition); MCB is what recalibration can remove",
    ),
    (
        "ECE-KDE",
        "kernel estimate of the L1 calibration error of the whole probability vector",
    ),
    (
        "Brier score, log-loss",
        "proper scores of the probabilities (lower is "
        "better); they mix calibration and discrimination",
    ),
]


def _clipped_log_loss(y, P, w):
    eps = np.finfo(np.float64).eps
    p = np.clip(P[np.arange(y.shape[0]), y], eps, 1.0)
    return -np.log(p) if w is None else -np.log(p) * w


def recalibration_gain(y, proba, sample_weight, *, binary, random_state=0):
    """Held-out log-loss gain of recalibrating with a cross-fitted
    :class:`~skcalib.KernelRecalibrator`.

    Each of :data:`GAIN_SPLITS` folds is recalibrated by a map fitted on the
    other folds, so every row's loss after recalibration is out of sample.
    Returns a dict: ``gain`` (mean loss before minus after, per row), its
    standard error over rows (paired), the two losses and the rows used.
    """
    from sklearn.model_selection import KFold

    from ..recalibration import KernelRecalibrator

    y = np.asarray(y).astype(int)
    n = y.shape[0]
    rng = np.random.default_rng([int(random_state), 11])
    rows = np.arange(n)
    if n > GAIN_MAX_ROWS:
        rows = np.sort(rng.choice(n, size=GAIN_MAX_ROWS, replace=False))
    y = y[rows]
    proba = np.asarray(proba)[rows]
    w = None if sample_weight is None else np.asarray(sample_weight)[rows]
    P = np.column_stack([1.0 - proba, proba]) if binary else proba
    before = _clipped_log_loss(y, P, w)
    after = np.empty_like(before)
    folds = KFold(GAIN_SPLITS, shuffle=True, random_state=int(random_state))
    for train, test in folds.split(P):
        fit_w = None if w is None else w[train]
        rec = KernelRecalibrator().fit(proba[train], y[train], sample_weight=fit_w)
        Q = rec.transform(proba[test])
        if binary:
            # transform of 1-D scores is 1-D (as IsotonicRegression's).
            q = np.reshape(Q, -1)
            Q = np.column_stack([1.0 - q, q])
        after[test] = _clipped_log_loss(y[test], Q, None if w is None else w[test])
    total = float(rows.shape[0] if w is None else w.sum())
    d = (before - after) * (rows.shape[0] / total)
    return {
        "log_loss_before": float(before.sum() / total),
        "log_loss_after": float(after.sum() / total),
        "gain": float(d.mean()),
        "gain_se": float(d.std(ddof=1) / np.sqrt(d.shape[0])),
        "n_splits": GAIN_SPLITS,
        "n_samples_used": int(rows.shape[0]),
        "recalibrator": "KernelRecalibrator()",
    }


def _answer(key, verdict, how_to_read):
    title, href = SECTIONS[key]
    return {
        "question": {
            "calibrated": "Is it calibrated?",
            "how_far": "How far off?",
            "direction": "In which direction?",
            "certified": "Is the gap certified?",
            "what_to_do": "What to do?",
            "compare": "Which model?",
        }[key],
        "key": key,
        "verdict": verdict,
        "how_to_read": how_to_read,
        "section": title,
        "href": href,
    }


def _pvalue_kind(t):
    kind = t.get("pvalue_method")
    if kind:
        return kind
    if t.get("n_resamples"):
        return f"resampled, {t['n_resamples']} label draws"
    return "asymptotic"


def _p(p):
    # A p-value below the smallest double prints as 0, which no test means.
    return "< 1e-300" if p < 1e-300 else f"= {p:.3g}"


def _calibrated(report):
    found = report.get("calibration_tests", {})
    tests = {k: v for k, v in found.items() if isinstance(v, dict)}
    if not tests:
        return None
    rejecting = [k for k, t in tests.items() if t["pvalue"] < ALPHA]
    shown = "; ".join(
        f"{k} p {_p(t['pvalue'])} [{_pvalue_kind(t)}]" for k, t in tests.items()
    )
    if rejecting:
        verdict = (
            f"No: {len(rejecting)} of {len(tests)} tests reject calibration at "
            f"the {ALPHA:g} level ({shown})."
        )
    else:
        verdict = (
            f"No evidence against calibration: no test rejects at the "
            f"{ALPHA:g} level ({shown})."
        )
    read = (
        "A small p-value is evidence of miscalibration, not its size; a large "
        "one does not prove calibration (small samples have little power)."
    )
    return _answer("calibrated", verdict, read)


def _how_far(report):
    m = report["metrics"]
    sm = m["smooth_ece"]
    b = m["binned_ece_uniform"]
    verdict = f"smooth ECE {sm['value']:.4f}"
    read = (
        "The mean |P(y | score) - score|: 0.01 means probabilities off by about "
        "one percentage point on average."
    )
    ci = sm.get("ci")
    if ci is not None:
        level = int(round(100 * sm["confidence_level"]))
        verdict += f" ({level}% CI [{ci[0]:.4f}, {ci[1]:.4f}])"
        if ci[1] < sm["value"]:
            read += (
                " The interval lies below the estimate: the estimator is biased "
                "upward, most for a nearly calibrated model, and the interval "
                "accounts for it."
            )
    verdict += f"; binned ECE {b['value']:.4f} ({b['n_bins']} uniform bins)."
    return _answer("how_far", verdict, read)


def _direction(report):
    s = report.get("calibration_summary")
    if not s or s.get("target") != "binary":
        return None
    slope, se = s["slope"], s["slope_se"]
    parts = []
    if slope is None or not np.isfinite(slope):
        parts.append("the slope is undefined (a single score value)")
    elif abs(slope - 1) <= 2 * (se or 0):
        parts.append(f"slope {slope:.2f} is within 2 standard errors of 1")
    elif slope < 1:
        parts.append(
            f"over-confident: slope {slope:.2f} < 1, the scores are too extreme"
        )
    else:
        parts.append(
            f"under-confident: slope {slope:.2f} > 1, the scores are too "
            "close to the base rate"
        )
    diff = s["mean_difference"]
    word = "too low" if diff > 0 else "too high"
    parts.append(
        f"on average {word} by {abs(diff):.4f} "
        f"(mean label - mean score = {diff:+.4f}; intercept {s['intercept']:+.2f})"
    )
    verdict = parts[0][0].upper() + parts[0][1:] + "; " + parts[1] + "."
    read = (
        "Slope below 1: high scores too high and low scores too low; the "
        "intercept and the mean difference show a shift of every score."
    )
    return _answer("direction", verdict, read)


def _certified(report):
    m = report["metrics"]
    b = m.get("calibration_error_bound")
    if b is None:
        verdict = (
            "Not computed: pass --bound tv (any scores), or --bound nw "
            "--perturbation-scale H for scores of a PerturbedClassifier."
        )
        read = (
            "A certified bound holds with probability 1 - delta whatever the "
            "data; an estimate above does not."
        )
        return _answer("certified", verdict, read)
    conf = 100 * (1 - b["delta"])
    what = "top-label " if b.get("target") == "top-label" else ""
    verdict = (
        f"The {what}calibration error is at most {b['upper']:.4f} with "
        f"probability {conf:g}% ({b['method'].upper()} bound)."
    )
    read = (
        "The bound holds for any sample with probability 1 - delta, so it is "
        "larger than the point estimates above."
    )
    return _answer("certified", verdict, read)


def _what_to_do(report):
    r = report.get("recalibration")
    if r is None:
        return None
    if "reason" in r:
        return _answer("what_to_do", f"No advice: {r['reason']}", "")
    gain, se = r["gain"], r["gain_se"]
    txt = (
        f"{r['n_splits']}-fold held-out log-loss {r['log_loss_before']:.4f} -> "
        f"{r['log_loss_after']:.4f}, gain {gain:.4f} (se {se:.4f})"
    )
    if r["n_samples_used"] < report.get("n_samples", 0):
        # Another log-loss than the table's: say on what.
        txt += f", on a uniform subsample of {r['n_samples_used']} rows"
    if gain > 2 * se and gain > 0:
        verdict = f"Recalibrate with RecalibratedClassifier: {txt}."
    else:
        verdict = f"No gain from recalibrating that the data can show: {txt}."
    read = (
        "The gain is measured out of sample: each fold is recalibrated by a "
        "KernelRecalibrator fitted on the other folds."
    )
    return _answer("what_to_do", verdict, read)


def answers(report):
    """A verdict per question: a list of dicts with ``question``,
    ``verdict``, ``how_to_read``, ``section`` and ``href``."""
    found = (
        _calibrated(report),
        _how_far(report),
        _direction(report),
        _certified(report),
        _what_to_do(report),
    )
    return [a for a in found if a is not None]


def compare_models(reports):
    """One answer ranking the models of ``reports`` (a dict name -> report)
    by smooth ECE, with the log-loss beside it: a constant score at the base
    rate is calibrated, so the lowest error alone does not pick a model."""
    sm = {k: r["metrics"]["smooth_ece"] for k, r in reports.items()}
    ranked = sorted(sm, key=lambda k: sm[k]["value"])
    best = ranked[0]

    def shown(k):
        txt = f"{k} {sm[k]['value']:.4f}"
        ci = sm[k].get("ci")
        if ci is not None:
            level = int(round(100 * sm[k]["confidence_level"]))
            txt += f" ({level}% CI [{ci[0]:.4f}, {ci[1]:.4f}])"
        return txt

    verdict = (
        f"Model {best} has the lowest smooth ECE ({', '.join(map(shown, ranked))})"
    )
    cis = [sm[k].get("ci") for k in ranked]
    if all(ci is not None for ci in cis):
        if cis[0][1] >= cis[1][0]:
            verdict += (
                f"; the intervals of {best} and {ranked[1]} overlap, so the data "
                "may not tell them apart"
            )
    loss = {k: r["metrics"]["log_loss"]["value"] for k, r in reports.items()}
    lowest = min(loss, key=lambda k: (loss[k] is None, loss[k]))
    verdict += f". Lowest log-loss: {lowest} ({loss[lowest]:.4f})."
    read = (
        "The smooth ECE measures calibration alone; the log-loss also rewards "
        "discrimination. Intervals are per model, not of the differences."
    )
    return _answer("compare", verdict, read)


def format_answers(found, *, legend=True):
    """Terminal lines of :func:`answers`, then the legend."""
    from textwrap import wrap

    lines = []
    for a in found:
        lines += wrap(
            f"{a['question']} {a['verdict']}",
            WIDTH,
            initial_indent="  ",
            subsequent_indent="      ",
        )
        if a["how_to_read"]:
            lines += wrap(
                a["how_to_read"],
                WIDTH,
                initial_indent="      ",
                subsequent_indent="      ",
            )
        lines.append(f"      (user guide: {a['section']})")
    if not legend:
        return lines
    lines.append("")
    lines.append("  legend:")
    for name, text in LEGEND:
        lines += wrap(
            f"{name}: {text}", WIDTH, initial_indent="    ", subsequent_indent="      "
        )
    return lines
