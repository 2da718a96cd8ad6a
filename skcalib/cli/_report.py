"""Assembling the numbers of ``skcalib report``.

:class:`ReportBuilder` takes the predictions chunk by chunk. While they fit
in its buffer (:data:`RESERVOIR_ROWS` rows) it keeps them all and computes
every number on the whole sample, exactly as the metric functions do on
arrays. Past that it streams: SmoothECE and the reliability curve come from
:class:`skcalib.metrics.CalibrationAccumulator`, the uniform-bin ECE from the
per-bin sums of :func:`skcalib.metrics.binned_calibration_error` on each
chunk, the Brier score and the log-loss from running sums -- all exact over
every row -- while the numbers that need the sample itself (the bootstrap
interval, quantile bins, ECE-KDE, the certified bound) are computed on a
uniform random subsample kept by the buffer (a reservoir), and the report
says so.
"""

from __future__ import annotations

import numpy as np

from ._progress import StepProgress
from ._read import InputError

__all__ = ["ReportBuilder", "compute_report", "format_table", "plot_reliability"]

# ECE-KDE costs O(n^2 K); above this many rows it is computed on a subsample.
KDE_MAX_SAMPLES = 20_000
N_BINS = 15
# Rows kept in memory: every row up to this many, then a uniform subsample.
RESERVOIR_ROWS = 200_000
RESERVOIR_BYTES = 64 << 20
# Classwise streaming keeps one accumulator per class.
MAX_STREAMED_TASKS = 64
# The report measures the gain of recalibrating up to this many classes.
MAX_RECALIBRATED_CLASSES = 20


def _float(x):
    return None if x is None else float(x)


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    return x


def _position(values, value):
    hits = [i for i, v in enumerate(values) if v == value]
    return hits[0] if hits else None


class _Sample:
    """The rows a report step computes on: ``y``, ``proba``, ``w`` (scaled
    weights or None), ``n`` rows, whether the input was ``streamed`` (the rows
    are then a reservoir subsample), and the keywords of the metrics: ``kw``
    (labels, weights) and ``mc`` (the multiclass reduction)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


class ReportBuilder:
    """Every number of ``skcalib report``, from predictions given in chunks.

    Parameters
    ----------
    classes : ndarray
        The distinct labels of the data (sorted); chunks give labels as
        indices (codes) into it.
    n_columns : int
        Number of probability columns (1: probability of the positive class).
    weighted : bool
        Whether chunks carry sample weights.
    pos_label, labels
        As for the metric functions; ``labels`` is the class of each
        probability column.
    describe : str, default=None
        The columns in use, prefixed to messages about the values.
    Other parameters
        As for :func:`compute_report`.
    """

    def __init__(
        self,
        classes,
        n_columns,
        *,
        weighted=False,
        pos_label=None,
        labels=None,
        n_bins=N_BINS,
        multi_class="top-label",
        n_bootstrap=200,
        confidence_level=0.95,
        bound=None,
        perturbation_scale=None,
        delta=0.05,
        kde_max_samples=KDE_MAX_SAMPLES,
        random_state=0,
        n_jobs=None,
        describe=None,
        reservoir_rows=None,
    ):
        from .._validation import check_calibration_inputs

        self._check = check_calibration_inputs
        self.describe = describe
        if bound is not None and weighted:
            raise InputError(
                "certified bounds need one row per sample; --sample-weight cannot "
                "be combined with --bound."
            )
        if bound == "nw" and perturbation_scale is None:
            raise InputError(
                "--bound nw needs --perturbation-scale H, the scale of the sech "
                "perturbation that produced the scores."
            )
        classes = np.asarray(classes)
        dummy = (
            np.full(classes.shape[0], 0.5)
            if n_columns == 1
            else np.full((classes.shape[0], n_columns), 1.0 / n_columns)
        )
        with self._input_errors():
            data = check_calibration_inputs(
                classes, dummy, pos_label=pos_label, labels=labels
            )
        self.classes = data.classes  # in the column order
        self.kind = data.kind
        self.binary = data.kind == "binary"
        self.pos_label = data.pos_label if self.binary else None
        k = len(self.classes)
        self.n_classes = k
        self._remap = np.array([_position(self.classes, c) for c in classes.tolist()])
        self._pos_code = (
            _position(self.classes, data.pos_label) if self.binary else None
        )
        self.class_idx = np.array([0.0, 1.0]) if self.binary else np.arange(k)
        self.weighted = weighted
        self.n_bins = n_bins
        self.multi_class = multi_class
        self.n_bootstrap = n_bootstrap
        self.confidence_level = confidence_level
        self.bound = bound
        self.perturbation_scale = perturbation_scale
        self.delta = delta
        self.kde_max_samples = kde_max_samples
        self.random_state = random_state
        self.n_jobs = n_jobs
        if reservoir_rows is None:
            per_row = 8 * (n_columns + 3)
            reservoir_rows = max(2, min(RESERVOIR_ROWS, RESERVOIR_BYTES // per_row))
            if kde_max_samples:
                reservoir_rows = max(reservoir_rows, kde_max_samples)
        self.reservoir_rows = int(reservoir_rows)
        self._rng = np.random.default_rng([int(random_state), 7])
        self.n_samples = 0
        self._keys = np.empty(0)
        self._rows = []  # kept chunks: (row index, y, proba, w)
        self._kept = None
        self._streaming = False
        self._accumulator = None
        self._sums = np.zeros(3)  # sum w, sum w * brier, sum w * log-loss
        self._bins = None
        self._max_weight = 0.0

    # -- input --------------------------------------------------------------
    def _input_errors(self):
        builder = self

        class _Wrap:
            def __enter__(self):
                return self

            def __exit__(self, typ, exc, tb):
                if typ is not None and issubclass(typ, ValueError):
                    if isinstance(exc, InputError):
                        return False
                    msg = " ".join(str(exc).split())
                    if builder.describe:
                        msg = f"{builder.describe}: {msg}"
                    raise InputError(msg) from None
                return False

        return _Wrap()

    def _canonical(self, codes, proba, w):
        labels = self.classes if self.binary else np.arange(self.n_classes)
        y = self.classes[self._remap[codes]] if self.binary else self._remap[codes]
        kw = {} if self.binary else {"labels": labels}
        if self.binary:
            kw = {"labels": self.classes, "pos_label": self.pos_label}
        with self._input_errors():
            return self._check(y, proba, sample_weight=w, **kw)

    def add(self, codes, proba, sample_weight=None):
        """Add a chunk: label codes (indices into ``classes``), probabilities
        and weights."""
        codes = np.asarray(codes)
        if codes.shape[0] == 0:
            return self
        data = self._canonical(codes, proba, sample_weight)
        w = data.weight if self.weighted else None
        n = data.n_samples
        self._add_sums(data, w)
        self._add_bins(data, w)
        if w is not None:
            self._max_weight = max(self._max_weight, float(w.max(initial=0.0)))
        start = self.n_samples
        self.n_samples += n
        row = np.arange(start, start + n)
        if not self._streaming and self.n_samples > self.reservoir_rows:
            self._start_streaming()
        if self._streaming:
            self._accumulator.partial_fit(data.y, data.proba, sample_weight=w)
        self._keep(row, data.y, data.proba, data.weight)
        return self

    def _add_sums(self, data, w):
        from sklearn.metrics import brier_score_loss, log_loss

        kw_w = {"sample_weight": w} if w is not None else {}
        total = float(w.sum()) if w is not None else float(data.n_samples)
        if total <= 0:
            return
        P = data.proba_matrix()
        with self._input_errors():
            brier = brier_score_loss(
                data.y, data.proba if self.binary else P, labels=self.class_idx, **kw_w
            )
            loss = log_loss(data.y, P, labels=self.class_idx, normalize=False, **kw_w)
        self._sums += (total, brier * total, loss)

    def _add_bins(self, data, w):
        """Add the chunk's per-bin sums (uniform bins), from the bin table of
        :func:`skcalib.metrics.binned_calibration_error`."""
        from .. import metrics

        with self._input_errors():
            res = metrics.binned_calibration_error(
                data.y,
                data.proba,
                sample_weight=w,
                n_bins=self.n_bins,
                strategy="uniform",
                multi_class=self.multi_class,
                labels=self.class_idx,
                return_details=True,
            )
        tables = zip(res.bin, res.weight, res.mean_label, res.mean_score, strict=True)
        if res.class_values is None:
            tables = [(res.bin, res.weight, res.mean_label, res.mean_score)]
        tables = list(tables)
        if self._bins is None:
            self._bins = np.zeros((len(tables), 3, self.n_bins))
        for t, (idx, weight, mean_label, mean_score) in enumerate(tables):
            idx = np.asarray(idx, dtype=int)
            weight = np.asarray(weight, dtype=float)
            np.add.at(self._bins[t, 0], idx, weight)
            np.add.at(self._bins[t, 1], idx, weight * np.asarray(mean_label))
            np.add.at(self._bins[t, 2], idx, weight * np.asarray(mean_score))

    def _start_streaming(self):
        from .. import metrics

        n_tasks = self._bins.shape[0]
        if n_tasks > MAX_STREAMED_TASKS:
            # One grid (about 5 MB) per one-vs-rest problem.
            raise InputError(
                f"--multi-class classwise on more than {self.reservoir_rows} rows "
                f"handles at most {MAX_STREAMED_TASKS} classes, not "
                f"{n_tasks}; use --multi-class top-label."
            )
        self._streaming = True
        if self.binary:
            kw = {"labels": self.classes, "pos_label": self.pos_label}
        else:
            kw = {"labels": np.arange(self.n_classes), "multi_class": self.multi_class}
        self._accumulator = metrics.CalibrationAccumulator(**kw)
        # Every row so far is still kept: give them to the accumulator.
        for _, y, proba, w in self._rows:
            self._accumulator.partial_fit(
                y, proba, sample_weight=w if self.weighted else None
            )

    def _keep(self, row, y, proba, w):
        """Keep the rows of smallest random keys: a uniform subsample."""
        keys = self._rng.random(row.shape[0])
        self._rows.append((row, y, proba, w))
        self._keys = np.concatenate([self._keys, keys])
        if self._keys.shape[0] > self.reservoir_rows:
            keep = np.sort(
                np.argpartition(self._keys, self.reservoir_rows - 1)[
                    : self.reservoir_rows
                ]
            )
            merged = [np.concatenate(a) for a in zip(*self._rows, strict=True)]
            self._rows = [tuple(a[keep] for a in merged)]
            self._keys = self._keys[keep]

    def _sample(self):
        row, y, proba, w = (np.concatenate(a) for a in zip(*self._rows, strict=True))
        return row, y, proba, w if self.weighted else None

    # -- results ------------------------------------------------------------
    def finish(self, progress=None):
        """``(report, curve)``: every number and the smooth reliability curve.

        One step per quantity. The in-memory and streamed paths share each
        step; they differ only where the accumulator or the running sums give
        a number over every row (smECE and its curve, the uniform-bin ECE,
        the Brier score and the log-loss) and the sample kept is a subsample.
        """
        progress = progress or StepProgress(False)
        if self.n_samples == 0:
            raise InputError("no data rows.")
        sample = self._report_sample()
        report = self._report_header(sample)
        m = report["metrics"]
        curve, m["smooth_ece"] = self._smooth_ece(sample, progress)
        progress.start("binned ECE")
        for strategy in ("uniform", "quantile"):
            m[f"binned_ece_{strategy}"] = self._binned_ece(sample, strategy)
        progress.done()
        m["ece_kde"] = self._ece_kde(sample, progress)
        m.update(self._proper_scores())
        if self.bound is not None:
            m["calibration_error_bound"] = self._certified_bound(sample, progress)
        progress.start("calibration tests, decomposition and summary")
        # Beside "metrics", whose entries are single values.
        with self._input_errors():
            report.update(
                _calibration_checks(
                    sample.y,
                    sample.proba,
                    self.binary,
                    self.random_state,
                    self.n_jobs,
                    {**sample.mc, **sample.kw},
                    sample.n,
                )
            )
        progress.done()
        progress.start("cross-fitted recalibration")
        report["recalibration"] = self._recalibration_gain(
            sample.y, sample.proba, sample.w
        )
        progress.done()
        return report, curve

    def _report_sample(self):
        """The rows kept (all of them, or the reservoir subsample), with the
        weights scaled to a maximum of 1 and the keywords of every metric."""
        _, y, proba, w = self._sample()
        if w is not None:
            top = self._max_weight
            w = w / top if top > 0 else w
        kw = {"labels": self.class_idx if self.binary else np.arange(self.n_classes)}
        if w is not None:
            kw["sample_weight"] = w
        return _Sample(
            y=y,
            proba=proba,
            w=w,
            n=int(y.shape[0]),
            streamed=self._streaming,
            kw=kw,
            mc={"multi_class": self.multi_class},
        )

    def _report_header(self, sample):
        report = {
            "n_samples": int(self.n_samples),
            "n_classes": int(self.n_classes),
            "kind": self.kind,
            "classes": [_jsonable(c) for c in self.classes],
            "pos_label": _jsonable(self.pos_label) if self.binary else None,
            "weighted": self.weighted,
            "multi_class": self.multi_class if not self.binary else None,
            "subsample": None,
            "metrics": {},
        }
        if sample.streamed:
            report["subsample"] = {
                "n_samples": sample.n,
                "kind": "uniform random subsample (reservoir) of the rows",
                "used_for": ["smooth_ece.ci", "binned_ece_quantile", "ece_kde"]
                + (["calibration_error_bound"] if self.bound else []),
            }
        return report

    def _smooth_ece(self, sample, progress):
        """The smooth reliability curve and its smECE entry: of the rows in
        memory, or of the accumulator with the subsample's interval and
        band."""
        from .. import metrics

        n_boot, streamed, m_rows = self.n_bootstrap, sample.streamed, sample.n
        progress.start(
            f"smooth ECE ({n_boot} bootstrap resamples"
            + (f" of a {m_rows}-row subsample)" if streamed else ")")
            if n_boot
            else "smooth ECE"
        )
        with self._input_errors():
            sample_curve = None
            if not streamed or n_boot:
                sample_curve = metrics.smooth_calibration_curve(
                    sample.y,
                    sample.proba,
                    n_bootstrap=n_boot,
                    confidence_level=self.confidence_level,
                    random_state=self.random_state,
                    n_jobs=self.n_jobs,
                    **sample.mc,
                    **sample.kw,
                )
        curve = self._streamed_curve(sample_curve) if streamed else sample_curve
        cl = _as_list(curve)
        progress.done()
        entry = {
            "value": float(np.mean([c.smece for c in cl])),
            "sigma": _float(cl[0].sigma) if len(cl) == 1 else None,
            "ci": _mean_ci([c.smece_ci for c in cl]),
            "confidence_level": self.confidence_level if n_boot else None,
            "n_bootstrap": int(n_boot),
            "ci_n_samples": m_rows if n_boot else None,
        }
        if streamed and n_boot:
            entry["band"] = (
                f"bootstrap band of a {m_rows}-row uniform subsample, drawn "
                "about the curve of every row (wider than every row's band)"
            )
        if len(cl) > 1:
            entry["sigma_per_class"] = [float(c.sigma) for c in cl]
        return curve, entry

    def _streamed_curve(self, sample_curve):
        curves = _as_list(self._accumulator.calibration_curve())
        cis = (
            [None] * len(curves)
            if sample_curve is None
            else [c.smece_ci for c in _as_list(sample_curve)]
        )
        for c, ci in zip(curves, cis, strict=True):
            c.smece_ci = ci
            c.confidence_level = self.confidence_level if ci is not None else None
        if sample_curve is not None:
            for c, sc in zip(curves, _as_list(sample_curve), strict=True):
                _band_from_subsample(c, sc)
        if self.binary or self.multi_class == "top-label":
            return curves[0]
        for c, label in zip(curves, self.classes, strict=True):
            c.label = label
        return curves

    def _binned_ece(self, sample, strategy):
        from .. import metrics

        if sample.streamed and strategy == "uniform":
            v, used = self._binned_from_sums(), self.n_samples
        else:
            with self._input_errors():
                v = metrics.binned_calibration_error(
                    sample.y,
                    sample.proba,
                    n_bins=self.n_bins,
                    strategy=strategy,
                    norm="l1",
                    **sample.mc,
                    **sample.kw,
                )
            used = sample.n
        return {"value": _float(v), "n_bins": self.n_bins, "n_samples_used": int(used)}

    def _ece_kde(self, sample, progress):
        from .. import metrics

        rng = np.random.default_rng(self.random_state)
        n, kde_max = sample.n, self.kde_max_samples
        sub = None
        if kde_max and n > kde_max:
            sub = np.sort(rng.choice(n, size=kde_max, replace=False))
        used = n if sub is None else kde_max
        progress.start(
            "ECE-KDE"
            + (f" on a subsample of {used} rows" if used < self.n_samples else "")
        )

        def pick(a):
            return a if sub is None else a[sub]

        # Risk alignment rather than likelihood: the likelihood bandwidth is
        # tuned to the density of the scores and is often too small for the L1
        # plug-in, which is then biased upward.
        with self._input_errors():
            kde = metrics.kde_calibration_error(
                pick(sample.y),
                pick(sample.proba),
                p=1,
                bandwidth="risk",
                labels=self.class_idx,
                return_details=True,
                **({"sample_weight": pick(sample.w)} if sample.w is not None else {}),
            )
        progress.done()
        return {
            "value": float(kde.value),
            "p": 1,
            "multi_class": "canonical",
            "bandwidth_selector": "risk",
            "bandwidth": float(kde.bandwidth),
            "effective_sample_size_min": float(kde.effective_sample_size_min),
            "effective_sample_size_median": float(kde.effective_sample_size_median),
            "n_samples_used": int(used),
        }

    def _proper_scores(self):
        """Brier score and log-loss, from running sums over every row."""
        total, brier, loss = self._sums
        if not total > 0:
            raise InputError("sample_weight must have a positive sum.")
        return {
            "brier_score": {"value": float(brier / total)},
            "log_loss": {"value": float(loss / total)},
        }

    def _certified_bound(self, sample, progress):
        from .. import metrics

        progress.start(
            f"certified bound ({self.bound.upper()})"
            + (f" on a subsample of {sample.n} rows" if sample.streamed else "")
        )
        kw = {}
        if self.bound == "nw":
            kw["perturbation_scale"] = self.perturbation_scale
        with self._input_errors():
            res = metrics.calibration_error_bound(
                sample.y,
                sample.proba,
                multi_class="top-label",
                return_details=True,
                labels=sample.kw["labels"],
                method=self.bound,
                delta=self.delta,
                random_state=self.random_state,
                **kw,
            )
        progress.done()
        return {
            "method": self.bound,
            "upper": float(res.upper),
            "estimate": float(res.estimate),
            "lower": float(res.lower),
            "delta": float(self.delta),
            "perturbation_scale": _float(self.perturbation_scale),
            "n_splits": int(res.n_splits),
            "terms": {k: float(v) for k, v in res.terms.items()},
            "target": "binary" if self.binary else "top-label",
            "n_samples_used": sample.n,
        }

    def _recalibration_gain(self, y, proba, w):
        from ._answers import GAIN_SPLITS, recalibration_gain

        if self.n_classes > MAX_RECALIBRATED_CLASSES:
            return {
                "reason": f"more than {MAX_RECALIBRATED_CLASSES} classes; "
                "recalibrating is not measured."
            }
        if y.shape[0] < 10 * GAIN_SPLITS:
            return {"reason": f"fewer than {10 * GAIN_SPLITS} rows to cross-fit."}
        with self._input_errors():
            return recalibration_gain(
                y, proba, w, binary=self.binary, random_state=self.random_state
            )

    def display(self, curve):
        """The smooth reliability display of ``curve`` (from :meth:`finish`).

        Its density and fade come from the rows in memory, or, when the input
        was streamed, from the accumulators' grids (the same figure up to the
        grid resolution): what ``SmoothReliabilityDisplay.from_predictions``
        draws on the same data.
        """
        from .._validation import binary_tasks
        from ..display import SmoothReliabilityDisplay
        from ..display._plotting import score_range_of
        from ..display._smooth import accumulator_samples

        if self._streaming:
            tasks = accumulator_samples(self._accumulator)
        else:
            _, y, proba, w = self._sample()
            with self._input_errors():
                data = self._check(y, proba, sample_weight=w, labels=self.class_idx)
            tasks = binary_tasks(data, self.multi_class)
        return SmoothReliabilityDisplay._from_curves(
            _as_list(curve),
            tasks,
            multi_class=None if self.binary else self.multi_class,
            pos_label=self.pos_label if self.binary else None,
            score_range=score_range_of(self.n_classes, self.multi_class),
            name="predictions",
        )

    def _binned_from_sums(self):
        values = []
        for weight, wy, ws in self._bins:
            total = weight.sum()
            values.append(float(np.abs(wy - ws).sum() / total) if total > 0 else 0.0)
        return float(np.mean(values))


# Label draws of the consistency test in the report (its p-value is at least
# 1 / (_REPORT_RESAMPLES + 1)).
_REPORT_RESAMPLES = 999


def _calibration_checks(y, proba, binary, random_state, n_jobs, kw, n_used):
    """Tests, CORP decomposition and calibration summary for the report."""
    from .. import metrics

    tests = {}
    for method in ("consistency", "spiegelhalter", "hosmer-lemeshow", "kuiper"):
        res = metrics.calibration_test(
            y,
            proba,
            method=method,
            n_resamples=_REPORT_RESAMPLES,
            random_state=random_state,
            n_jobs=n_jobs,
            **kw,
        )
        tests[method] = {
            "statistic": float(res.statistic),
            "statistic_name": res.statistic_name,
            "pvalue": float(res.pvalue),
            "n_resamples": res.n_resamples,
            "dof": res.dof,
        }
    no_mc = {k: v for k, v in kw.items() if k != "multi_class"}
    dec = {}
    for score in ("brier", "log_loss") if binary else ("brier",):
        # The log-loss of the table clips the probabilities as scikit-learn's
        # log_loss does; decomposing the same numbers keeps one log-loss in
        # the report (a 0 or 1 against its label made this one infinite).
        eps = np.finfo(np.float64).eps
        p = np.clip(proba, eps, 1.0 - eps) if score == "log_loss" else proba
        d = metrics.score_decomposition(y, p, score=score, **no_mc)
        dec[score] = {
            "score": float(d.score),
            "miscalibration": float(d.miscalibration),
            "discrimination": float(d.discrimination),
            "uncertainty": float(d.uncertainty),
        }
    s = metrics.calibration_summary(y, proba, **no_mc)
    summary = {
        f: float(getattr(s, f))
        for f in (
            "slope",
            "slope_se",
            "intercept",
            "intercept_se",
            "mean_difference",
            "emax",
            "e90",
            "e50",
            "ici",
        )
    }
    summary["target"] = "binary" if binary else "top-label"
    return {
        "calibration_tests": {**tests, "n_samples_used": n_used},
        "score_decomposition": {**dec, "n_samples_used": n_used},
        "calibration_summary": {**summary, "n_samples_used": n_used},
    }


def _format_checks(m):
    """Lines of the tests, decomposition and summary (if in the report)."""
    if "calibration_tests" not in m:
        return []
    lines = ["", "  test of calibration          statistic    p-value"]
    for method, r in m["calibration_tests"].items():
        if isinstance(r, dict):
            lines.append(
                f"  {method:<26} {r['statistic']:>11.4g}   {r['pvalue']:>8.3g}"
            )
    lines.append("  (a p-value is evidence against calibration, not its size)")
    for score, d in m["score_decomposition"].items():
        if isinstance(d, dict):
            lines.append(
                f"  {score} = MCB {d['miscalibration']:.4f} - DSC "
                f"{d['discrimination']:.4f} + UNC {d['uncertainty']:.4f}"
            )
    s = m["calibration_summary"]
    lines.append(
        f"  slope {s['slope']:.3f} (se {s['slope_se']:.3f}), intercept "
        f"{s['intercept']:.3f} (se {s['intercept_se']:.3f}), Emax {s['emax']:.4f}, "
        f"E90 {s['e90']:.4f}, E50 {s['e50']:.4f}, ICI {s['ici']:.4f}"
    )
    return lines


def _band_from_subsample(curve, sample):
    """Give the curve of every row the bootstrap band of the subsample's curve:
    its deviations from the subsample's curve, carried to the full curve's
    grid. The subsample has fewer rows, so the band is wider than the band of
    every row would be: conservative, and the report says so."""
    if sample.y_smooth_low is None:
        return
    x = np.asarray(curve.scores, dtype=float)
    sx = np.asarray(sample.scores, dtype=float)
    for end in ("low", "high"):
        dev = np.asarray(getattr(sample, f"y_smooth_{end}")) - sample.y_smooth
        ok = np.isfinite(dev)
        shifted = np.full(x.shape, np.nan)
        if ok.sum() >= 2:
            inside = (x >= sx[ok].min()) & (x <= sx[ok].max())
            shifted[inside] = curve.y_smooth[inside] + np.interp(
                x[inside], sx[ok], dev[ok]
            )
        setattr(curve, f"y_smooth_{end}", np.clip(shifted, 0.0, 1.0))
    curve.n_bootstrap = sample.n_bootstrap
    curve.ci_method = sample.ci_method


def _as_list(curve):
    return curve if isinstance(curve, list) else [curve]


def _mean_ci(cis):
    if any(c is None for c in cis):
        return None
    if len(cis) == 1:
        return [_float(cis[0][0]), _float(cis[0][1])]
    return None


def compute_report(
    y_true,
    y_proba,
    *,
    sample_weight=None,
    pos_label=None,
    labels=None,
    n_bins=N_BINS,
    multi_class="top-label",
    n_bootstrap=200,
    confidence_level=0.95,
    bound=None,
    perturbation_scale=None,
    delta=0.05,
    kde_max_samples=KDE_MAX_SAMPLES,
    random_state=0,
    n_jobs=None,
    progress=None,
    return_display=False,
):
    """Compute every number of ``skcalib report`` as a JSON-serialisable dict.

    Parameters
    ----------
    y_true, y_proba, pos_label, labels
        As for the metric functions of :mod:`skcalib.metrics`.
    sample_weight : array-like of shape (n_samples,), default=None
        Relative weights: they are divided by their maximum, so that every
        number is the same for weights ``w`` and ``c * w`` and each sample
        leaves ECE-KDE's leave-one-out whole.
    n_bins : int, default=15
        Bins of the binned ECE.
    multi_class : {"top-label", "classwise"}, default="top-label"
        Reduction of multiclass input for SmoothECE and the binned ECE.
    n_bootstrap : int, default=200
        Bootstrap resamples for the smECE confidence interval (0: none).
    confidence_level : float, default=0.95
    bound : {"nw", "tv"} or None, default=None
        Certified upper bound to compute. Multiclass input is bounded on its
        top-label (confidence) calibration, which is a binary problem.
    perturbation_scale : float, default=None
        Scale ``h`` of the sech perturbation that produced the scores; needed
        by ``bound="nw"``.
    delta : float, default=0.05
        Failure probability of the bound.
    kde_max_samples : int, default=20000
        ECE-KDE is computed on a random subsample of at most this many rows.
    random_state : int, default=0
    n_jobs : int, default=None
    progress : StepProgress, default=None
    return_display : bool, default=False
        Also return the display that ``skcalib report`` draws.

    Returns
    -------
    report : dict
        Every number, JSON-serialisable (``report["metrics"]``).
    curve : SmoothCalibrationCurve or list of SmoothCalibrationCurve
        The smooth reliability curve behind ``report["metrics"]["smooth_ece"]``
        (one per class for ``multi_class="classwise"``).
    display : SmoothReliabilityDisplay
        Only with ``return_display=True``: the unplotted display of the
        figure, with the density and fade of the data.

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.cli import compute_report, format_table
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=2000)
    >>> y = rng.uniform(size=2000) < p ** 2
    >>> report, curve = compute_report(y, p, n_bootstrap=20, kde_max_samples=500)
    >>> report["metrics"]["smooth_ece"]["ci"] is not None
    True
    >>> print(format_table(report).splitlines()[0])
    2000 samples, binary, positive label True
    """
    from .._validation import check_calibration_inputs

    # The library's checks first: a scalar, None, a sparse matrix or a
    # zero-column y_proba would otherwise fail deep inside the builder.
    try:
        check_calibration_inputs(
            y_true,
            y_proba,
            sample_weight=sample_weight,
            pos_label=pos_label,
            labels=labels,
        )
    except ValueError as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(str(exc)) from None
    y_true = np.asarray(y_true)
    y_proba = np.asarray(y_proba)
    if y_true.ndim != 1:
        raise InputError(f"y_true must be 1-D, got shape {y_true.shape}.")
    try:
        classes, codes = np.unique(y_true, return_inverse=True)
    except TypeError as exc:
        raise InputError(f"y_true labels cannot be compared: {exc}") from None
    n = y_true.shape[0]
    builder = ReportBuilder(
        classes,
        1 if y_proba.ndim == 1 else y_proba.shape[1],
        weighted=sample_weight is not None,
        pos_label=pos_label,
        labels=labels,
        n_bins=n_bins,
        multi_class=multi_class,
        n_bootstrap=n_bootstrap,
        confidence_level=confidence_level,
        bound=bound,
        perturbation_scale=perturbation_scale,
        delta=delta,
        kde_max_samples=kde_max_samples,
        random_state=random_state,
        n_jobs=n_jobs,
        reservoir_rows=max(n, 2),
    )
    builder.add(codes.ravel(), y_proba, sample_weight)
    report, curve = builder.finish(progress)
    if return_display:
        return report, curve, builder.display(curve)
    return report, curve


# ---------------------------------------------------------------------------
# The table and the figure
# ---------------------------------------------------------------------------


def _fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}"


def _table_rows(report):
    """``(measure, value, note)`` of each row of the table of ``report``."""
    m = report["metrics"]
    kind = report["kind"]
    tl = "" if kind == "binary" else f", {report['multi_class']}"
    rows = []
    sm = m["smooth_ece"]
    ci = sm["ci"]
    ci_txt = (
        f"{int(round(100 * sm['confidence_level']))}% CI [{_fmt(ci[0])}, {_fmt(ci[1])}]"
        if ci is not None
        else ""
    )
    sig = f"sigma*={_fmt(sm['sigma'], 3)}" if sm["sigma"] is not None else "mean"
    rows.append((f"smooth ECE ({sig}{tl})", sm["value"], ci_txt))
    for strategy in ("uniform", "quantile"):
        b = m[f"binned_ece_{strategy}"]
        rows.append((f"binned ECE ({b['n_bins']} {strategy} bins{tl})", b["value"], ""))
    k = m["ece_kde"]
    note = f"bandwidth {k['bandwidth']:.3g}" if k["bandwidth"] is not None else ""
    if k["n_samples_used"] < report["n_samples"]:
        note += f", {k['n_samples_used']} rows"
    rows.append(("ECE-KDE (canonical, L1)", k["value"], note.lstrip(", ")))
    # Brier score and log-loss score the whole probability vector.
    canon = "" if kind == "binary" else " (canonical)"
    rows.append((f"Brier score{canon}", m["brier_score"]["value"], ""))
    rows.append((f"log-loss{canon}", m["log_loss"]["value"], ""))
    if "calibration_error_bound" in m:
        b = m["calibration_error_bound"]
        conf = 100 * (1 - b["delta"])
        btl = "" if kind == "binary" else ", top-label"
        label = f"certified CE bound ({b['method'].upper()}{btl})"
        # The bound's own estimate is of a surrogate of the error (another
        # number than the estimates above): the JSON keeps it, the table not.
        rows.append((label, b["upper"], f"holds w.p. {conf:g}%"))
    return rows


def format_table(report, *, title=None):
    """The metrics table printed by ``skcalib report``.

    Parameters
    ----------
    report : dict
        The first output of :func:`compute_report`.
    title : str, default=None
        A first line.

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> from skcalib.cli import compute_report, format_table
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=400)
    >>> y = rng.uniform(size=400) < p
    >>> report, _ = compute_report(y, p, n_bootstrap=0, kde_max_samples=200)
    >>> "smooth ECE" in format_table(report, title="demo")
    True
    """
    lines = [title] if title else []
    lines += [_describe(report), ""]
    rows = _table_rows(report)
    width = max(len(r[0]) for r in rows)
    lines.append(f"  {'measure'.ljust(width)}   {'value':>8}")
    lines.append(f"  {'-' * width}   {'-' * 8}")
    for name, value, extra in rows:
        lines.append(f"  {name.ljust(width)}   {_fmt(value):>8}   {extra}".rstrip())
    lines.extend(_format_checks(report))
    lines.extend(_table_notes(report))
    return "\n".join(lines)


def _describe(report):
    if report["kind"] == "binary":
        desc = f"binary, positive label {report['pos_label']!r}"
    else:
        desc = f"{report['n_classes']} classes"
    weighted = ", weighted" if report["weighted"] else ""
    return f"{report['n_samples']} samples, {desc}{weighted}"


def _table_notes(report):
    lines = []
    if report["kind"] != "binary":
        lines.append("")
        lines.append(
            "  top-label: confidence of the predicted class vs. its correctness; "
            "canonical: the whole probability vector."
        )
    sub = report.get("subsample")
    if sub:
        bound = (
            " and the bound" if "calibration_error_bound" in report["metrics"] else ""
        )
        lines.append("")
        lines.append(
            "note: the smooth ECE interval and the figure's band, the "
            f"quantile-bin ECE, ECE-KDE{bound} use a uniform random subsample "
            f"of {sub['n_samples']} of the {report['n_samples']} rows; the other "
            "numbers use every row."
        )
    return lines


def format_comparison_table(reports):
    """The table of several models: a row per measure, a column per model.

    ``reports`` maps each model's name to its report (of the same rows).
    """
    names = list(reports)
    first = reports[names[0]]
    tl = "" if first["kind"] == "binary" else f", {first['multi_class']}"
    per_model = [_table_rows(r) for r in reports.values()]
    rows = []
    for i, (label, _, _) in enumerate(per_model[0]):
        if i == 0:
            label = f"smooth ECE{tl}"
        rows.append((label, [_fmt(m[i][1]) for m in per_model]))
        if i == 0:
            sms = [r["metrics"]["smooth_ece"] for r in reports.values()]
            if all(sm["ci"] is not None for sm in sms):
                level = int(round(100 * sms[0]["confidence_level"]))
                for j, end in enumerate(("low", "high")):
                    cells = [_fmt(sm["ci"][j]) for sm in sms]
                    rows.append((f"  {level}% CI {end}", cells))
            rows.append(("  sigma*", [_fmt(sm["sigma"], 3) for sm in sms]))
    if "calibration_tests" in first:
        for method, t in first["calibration_tests"].items():
            if isinstance(t, dict):
                cells = [
                    f"{r['calibration_tests'][method]['pvalue']:.3g}"
                    for r in reports.values()
                ]
                rows.append((f"{method} p-value", cells))
        for key in ("slope", "intercept"):
            cells = [_fmt(r["calibration_summary"][key], 3) for r in reports.values()]
            rows.append((key, cells))
    width = max(len(label) for label, _ in rows)
    cell = max(8, *map(len, names), *(len(c) for _, cells in rows for c in cells))
    lines = [_describe(first), ""]
    lines.append(
        f"  {'measure'.ljust(width)}" + "".join(f"   {n:>{cell}}" for n in names)
    )
    lines.append(f"  {'-' * width}" + f"   {'-' * cell}" * len(names))
    for label, cells in rows:
        lines.append(
            f"  {label.ljust(width)}" + "".join(f"   {c:>{cell}}" for c in cells)
        )
    if "calibration_tests" in first:
        lines.append("  (a p-value is evidence against calibration, not its size)")
    lines.extend(_table_notes(first))
    return "\n".join(lines)


def plot_reliability(display, fh, *, title=None, fmt="png", names=None):
    """Save the smooth reliability diagram of ``display`` to ``fh``.

    ``display`` is the unplotted :class:`~skcalib.display.SmoothReliabilityDisplay`
    of :meth:`ReportBuilder.display`, or a list of them (one per model, named
    by ``names`` in the legend, drawn on the same axes): the figure is the
    Python display's, with a density panel. It is a bare
    :class:`matplotlib.figure.Figure` (no pyplot), so the command changes no
    global matplotlib state and needs no display.
    """
    from matplotlib.figure import Figure

    displays = display if isinstance(display, list) else [display]
    display = displays[0]
    k = len(display.scores) if isinstance(display.scores, list) else 1
    fig = Figure(figsize=(6.0 if k == 1 else 3.2 * k, 7.0), layout="constrained")
    axes = fig.subplots(2, k, sharex=True, height_ratios=[4, 1], squeeze=False)
    ax = axes[0, 0] if k == 1 else axes[0, :]
    dax = axes[1, 0] if k == 1 else axes[1, :]
    for i, d in enumerate(displays):
        kw = (
            {}
            if names is None
            else {"name": names[i], "curve_kwargs": {"color": f"C{i}"}}
        )
        d.plot(ax=ax, density_panel=dax, **kw)
    # The diagram is drawn with equal aspect on its score range (narrower than
    # [0, 1] for top-label): a density panel a quarter as high, of the box
    # aspect that keeps it as wide as the diagram, stays aligned with it.
    for a, top in zip(np.ravel(dax), np.ravel(ax), strict=True):
        (x0, x1), (y0, y1) = top.get_xlim(), top.get_ylim()
        a.set_box_aspect(0.25 * (y1 - y0) / (x1 - x0))
    if title:
        if k == 1:
            axes[0, 0].set_title(title, fontsize="medium")
        else:
            fig.suptitle(title, fontsize="medium")
    fig.savefig(fh, dpi=110, format=fmt)
