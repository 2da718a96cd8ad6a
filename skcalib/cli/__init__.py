"""The ``skcalib`` command line: ``skcalib report [FILE] ...``.

``skcalib report`` reads predictions from a file (CSV, ``.npy``, ``.npz``, or
Parquet when pyarrow is installed), prints a table of calibration measures,
and writes a reliability diagram (``reliability.png``) and every number
(``report.json``) to an output directory. Without a file it runs a demo on a
built-in dataset.

Errors in the input (unreadable file, missing column, values that are not
probabilities, ...) are reported on one line on stderr with exit code 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .._validation import MAX_BOOTSTRAP

__all__ = ["main", "build_parser", "read_predictions", "compute_report", "format_table"]

EXIT_OK = 0
EXIT_USAGE = 2

# Names tried, in order, when --y-true / --y-proba are not given.
_LABEL_CANDIDATES = ("y_true", "y", "label", "labels", "target", "class")
_PROBA_CANDIDATES = ("y_proba", "y_prob", "y_score", "proba", "probability", "score")

# ECE-KDE costs O(n^2 K); above this many rows it is computed on a subsample.
_KDE_MAX_SAMPLES = 20_000
_N_BINS = 15


class InputError(ValueError):
    """A problem with the user's input, reported as a one-line message."""


# ---------------------------------------------------------------------------
# Reading predictions
# ---------------------------------------------------------------------------


def _parse_labels(values):
    """Strings from a text file -> int, float or str labels (first type that fits)."""
    arr = np.asarray(values, dtype=str)
    for dtype in (np.int64, np.float64):
        try:
            return arr.astype(dtype)
        except (ValueError, OverflowError):
            continue
    return arr


def _read_csv(path):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        head = fh.read(65536)
        fh.seek(0)
        if not head.strip():
            raise InputError(f"{path}: the file is empty.")
        try:
            dialect = csv.Sniffer().sniff(head, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
        reader = csv.reader(fh, dialect)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError(f"{path}: the file is empty.") from None
        header = [h.strip() for h in header]
        if len(set(header)) != len(header) or any(h == "" for h in header):
            raise InputError(
                f"{path}: the first line must be a header with distinct, non-empty "
                f"column names; got {header}."
            )
        columns = [[] for _ in header]
        for line_no, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise InputError(
                    f"{path}, line {line_no}: expected {len(header)} fields, "
                    f"got {len(row)}."
                )
            for col, value in zip(columns, row, strict=True):
                col.append(value.strip())
    if not columns or not columns[0]:
        raise InputError(f"{path}: no data rows after the header.")
    return {
        name: np.asarray(col, dtype=str)
        for name, col in zip(header, columns, strict=True)
    }


def _read_npy(path):
    arr = np.load(path, allow_pickle=False)
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise InputError(
            f"{path}: a .npy file must hold a 2-D array whose first column is the "
            f"label and the other columns probabilities; got shape {arr.shape}."
        )
    return {str(j): arr[:, j] for j in range(arr.shape[1])}


def _read_npz(path):
    with np.load(path, allow_pickle=False) as data:
        table = {}
        for key in data.files:
            arr = data[key]
            if arr.ndim == 2:
                # A 2-D array (e.g. y_proba) stands for one column per class.
                table[key] = arr
            elif arr.ndim == 1:
                table[key] = arr
            else:
                raise InputError(
                    f"{path}: array {key!r} has shape {arr.shape}; expected 1-D "
                    "labels or probabilities, or a 2-D probability matrix."
                )
    return table


def _read_parquet(path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"{path}: reading Parquet files needs pyarrow (pip install pyarrow)."
        ) from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises its own exception types
        raise InputError(f"{path}: cannot read Parquet file: {exc}") from None
    return {
        name: table.column(name).to_numpy(zero_copy_only=False)
        for name in table.column_names
    }


_READERS = {
    ".csv": _read_csv,
    ".tsv": _read_csv,
    ".txt": _read_csv,
    ".npy": _read_npy,
    ".npz": _read_npz,
    ".parquet": _read_parquet,
    ".pq": _read_parquet,
}


def _read_table(path, suffix):
    if not path.exists():
        raise InputError(f"{path}: no such file.")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a file.")
    reader = _READERS.get(suffix)
    if reader is None:
        raise InputError(
            f"{path}: unknown file type {suffix!r}; expected one of "
            f"{', '.join(sorted(_READERS))}."
        )
    try:
        return reader(path)
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file.") from None
    except (InputError, OSError):
        raise
    except (ValueError, EOFError) as exc:  # corrupt .npy / .npz
        raise InputError(f"{path}: cannot read file: {exc}") from None


def _pick(table, wanted, candidates, what, option):
    names = list(table)
    if wanted is not None:
        if wanted not in table:
            raise InputError(
                f"no column {wanted!r} for {option}; available columns: "
                f"{', '.join(names)}."
            )
        return wanted
    lowered = {n.lower(): n for n in names}
    for cand in candidates:
        if cand in lowered:
            return lowered[cand]
    raise InputError(
        f"cannot tell which column holds {what}; pass {option} "
        f"(available columns: {', '.join(names)})."
    )


def _as_float_column(values, name):
    arr = np.asarray(values)
    try:
        return arr.astype(np.float64)
    except ValueError:
        for i, v in enumerate(arr.ravel()):
            try:
                float(v)
            except ValueError:
                raise InputError(
                    f"column {name!r} must hold numbers; data row {i + 1} holds "
                    f"{str(v)!r}."
                ) from None
        raise  # pragma: no cover


_NAME_SEPARATORS = "_-.: "


def _whole_token_prefix(names):
    """The longest common prefix of ``names`` that ends with a separator."""
    prefix = os.path.commonprefix(list(names))
    cut = max(prefix.rfind(c) for c in _NAME_SEPARATORS)
    return prefix[: cut + 1]


def _common_affix_stripped(names):
    """Column names without a shared prefix or suffix such as ``p_`` or ``_proba``.

    Only whole tokens (up to a separator ``_ - . :`` or space) are removed:
    ``p_cat, p_car`` give ``cat, car``, not ``t, r``.
    """
    names = list(names)
    if len(names) < 2:
        return names
    prefix = _whole_token_prefix(names)
    suffix = _whole_token_prefix([n[len(prefix) :][::-1] for n in names])[::-1]
    stripped = [n[len(prefix) : len(n) - len(suffix)] for n in names]
    return stripped if all(stripped) else names


def _labels_from_columns(proba_names, label_strings):
    """Class labels in column order when column names spell the labels.

    Returns ``None`` when the names are not about the labels; the columns are
    then taken to follow the sorted labels, as ``estimator.classes_`` does.
    Names that spell some labels but not all of them are an error: guessing
    the order would silently swap columns.
    """
    present = set(label_strings)
    candidates = (list(proba_names), _common_affix_stripped(proba_names))
    for names in candidates:
        if len(set(names)) == len(names) and present <= set(names):
            return names
    for names in candidates:
        named = present & set(names)
        if named:
            raise InputError(
                f"the probability columns {list(proba_names)} name the classes "
                f"{sorted(named)} but not {sorted(present - set(names))}; name "
                "each column after its class, or pass --y-proba with the "
                "columns in sorted-label order."
            )
    return None


def read_predictions(
    path, *, y_true=None, y_proba=None, sample_weight=None, file_type=None
):
    """Read labels, probabilities and optional weights from a file.

    Parameters
    ----------
    path : str or path-like
        A CSV (header line required; ``,``, ``;``, tab or ``|`` separated),
        ``.npy`` (2-D array: column 0 the labels, the rest probabilities;
        columns are named ``"0"``, ``"1"``, ...), ``.npz`` (arrays by name, a
        2-D array counts as one column per class; an optional ``classes``
        array gives the label of each probability column) or Parquet file.
    y_true : str, default=None
        Label column. ``None`` tries ``y_true``, ``y``, ``label``, ``target``
        and ``class``.
    y_proba : list of str, default=None
        Probability columns: one column (probability of the positive class) or
        one per class. ``None`` tries ``y_proba``, ``proba``, ``score``, ...
        and otherwise takes every remaining column.
    sample_weight : str, default=None
        Optional weight column.
    file_type : str, default=None
        Override the type given by the file's suffix (``"csv"``, ``"npy"``,
        ``"npz"``, ``"parquet"``).

    Returns
    -------
    y_true : ndarray of shape (n_samples,)
    y_proba : ndarray of shape (n_samples,) or (n_samples, n_columns)
        When the probability columns are named after the classes (``cat``,
        ``dog``, or ``p_cat``, ``p_dog``), they are reordered to follow the
        sorted labels, as ``predict_proba`` does.
    sample_weight : ndarray of shape (n_samples,) or None
    info : dict
        Column names used, and ``"labels"``: the sorted class labels when the
        probability columns are named after the classes (else ``None``).

    Raises
    ------
    InputError
        A subclass of ``ValueError`` with a one-line message.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from skcalib.cli import read_predictions
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "preds.csv"
    >>> lines = ["label,p_a,p_b", "b,0.2,0.8", "a,0.6,0.4"]
    >>> _ = path.write_text(chr(10).join(lines))
    >>> y, proba, weight, info = read_predictions(path, y_true="label")
    >>> y.tolist(), proba.shape, info["labels"]
    (['b', 'a'], (2, 2), ['a', 'b'])
    """
    path = Path(path)
    suffix = path.suffix.lower() if file_type is None else "." + file_type.lower()
    table = _read_table(path, suffix)
    if y_true is None and suffix == ".npy":
        y_true = "0"  # a .npy file holds the labels in its first column
    label_col = _pick(table, y_true, _LABEL_CANDIDATES, "the labels", "--y-true")
    weight_col = None
    if sample_weight is not None:
        weight_col = _pick(table, sample_weight, (), "weights", "--sample-weight")
    if y_proba:
        proba_cols = [
            _pick(table, c, (), "probabilities", "--y-proba") for c in y_proba
        ]
    else:
        npz_classes = "classes" if suffix == ".npz" else None
        rest = [n for n in table if n not in (label_col, weight_col, npz_classes)]
        lowered = {n.lower(): n for n in rest}
        named = [lowered[c] for c in _PROBA_CANDIDATES if c in lowered]
        proba_cols = named[:1] if named else rest
        if not proba_cols:
            raise InputError(
                f"no probability column besides the label column {label_col!r}; "
                "pass --y-proba."
            )
    if label_col in proba_cols:
        raise InputError(f"column {label_col!r} is both the label and a probability.")

    raw_labels = table[label_col]
    if raw_labels.ndim != 1:
        raise InputError(f"the label column {label_col!r} must be 1-D.")
    labels_are_text = raw_labels.dtype.kind in "US"
    if labels_are_text:
        empty = np.flatnonzero(np.char.strip(raw_labels.astype(str)) == "")
        if empty.size:
            raise InputError(
                f"the label column {label_col!r} has an empty cell in data row "
                f"{empty[0] + 1}."
            )
    y = _parse_labels(raw_labels) if labels_are_text else raw_labels

    blocks = []
    for col in proba_cols:
        values = table[col]
        values = _as_float_column(values, col)
        blocks.append(values if values.ndim == 2 else values[:, None])
    proba = np.hstack(blocks) if len(blocks) > 1 else blocks[0]
    if proba.shape[1] == 1:
        proba = proba[:, 0]

    weight = None
    if weight_col is not None:
        weight = _as_float_column(table[weight_col], weight_col)
        if weight.ndim != 1:
            raise InputError(f"the weight column {weight_col!r} must be 1-D.")

    class_names = None
    if proba.ndim == 2 and len(proba_cols) == proba.shape[1]:
        label_strings = (
            np.unique(raw_labels) if labels_are_text else np.unique(y).astype(str)
        )
        names = _labels_from_columns(proba_cols, label_strings.tolist())
        if names is not None:
            class_names = _convert_like(names, y)
    if (
        proba.ndim == 2
        and suffix == ".npz"
        and "classes" in table
        and "classes" not in (label_col, *proba_cols)
    ):
        # An .npz may store ``estimator.classes_``: the label of each column.
        class_names = np.asarray(table["classes"]).reshape(-1)
        if class_names.shape[0] != proba.shape[1]:
            raise InputError(
                f"'classes' has {class_names.shape[0]} labels but there are "
                f"{proba.shape[1]} probability columns."
            )
        if class_names.dtype.kind in "US" and labels_are_text:
            # Text labels were parsed (e.g. "1" -> 1); parse the names alike.
            converted = _convert_like(class_names.tolist(), y)
            if converted is not None:
                class_names = converted
    if class_names is not None:
        # Columns in sorted-label order, as ``predict_proba`` returns them, so
        # that the default positive class is the greater label.
        order = np.argsort(class_names, kind="stable")
        proba, class_names = proba[:, order], class_names[order]
    info = {
        "file": str(path),
        "y_true_column": label_col,
        "y_proba_columns": list(proba_cols),
        "sample_weight_column": weight_col,
        "labels": None if class_names is None else class_names.tolist(),
    }
    return y, proba, weight, info


def _convert_like(values, reference):
    """Convert strings (column names, --pos-label) to the dtype of the labels."""
    reference = np.asarray(reference)
    kind = reference.dtype.kind
    out = []
    for v in values:
        if kind in "iu":
            try:
                out.append(int(v))
                continue
            except ValueError:
                pass
            try:
                f = float(v)
                if f.is_integer():
                    out.append(int(f))
                    continue
            except ValueError:
                pass
            return None
        elif kind == "f":
            try:
                out.append(float(v))
            except ValueError:
                return None
        elif kind == "b":
            low = str(v).lower()
            if low in ("true", "1"):
                out.append(True)
            elif low in ("false", "0"):
                out.append(False)
            else:
                return None
        else:
            out.append(str(v))
    return np.asarray(out, dtype=reference.dtype if kind in "iufb" else object)


# ---------------------------------------------------------------------------
# Demo data
# ---------------------------------------------------------------------------


def demo_predictions(*, perturbation_scale=None, random_state=0):
    """Held-out probabilities of a naive Bayes model on synthetic data.

    Gaussian naive Bayes is over-confident on correlated features, which
    makes its miscalibration visible. When ``perturbation_scale`` is given the
    model is wrapped in :class:`skcalib.PerturbedClassifier` so that the NW
    certified bound applies to its scores.
    """
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(
        n_samples=20_000,
        n_features=20,
        n_informative=6,
        n_redundant=8,
        flip_y=0.05,
        class_sep=0.8,
        random_state=random_state,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.5, random_state=random_state
    )
    model = GaussianNB()
    description = "GaussianNB on make_classification (10000 held-out samples)"
    if perturbation_scale is not None:
        from skcalib import PerturbedClassifier

        model = PerturbedClassifier(
            model, scale=perturbation_scale, random_state=random_state
        )
        description += f", perturbed with scale h={perturbation_scale:g}"
    model.fit(X_train, y_train)
    return y_test, model.predict_proba(X_test)[:, 1], description


# ---------------------------------------------------------------------------
# Computing the report
# ---------------------------------------------------------------------------


class _Progress:
    """Progress of long steps on stderr, one line per step."""

    def __init__(self, enabled):
        self.enabled = enabled
        self._start = None
        self._open = False

    def start(self, message):
        self._start = time.perf_counter()
        if self.enabled:
            print(f"skcalib: {message} ...", file=sys.stderr, end="", flush=True)
            self._open = True

    def done(self):
        if self.enabled:
            elapsed = time.perf_counter() - self._start
            print(f" done ({elapsed:.1f} s)", file=sys.stderr, flush=True)
            self._open = False

    def abort(self):
        """End an unfinished step line so that an error message starts a line."""
        if self._open:
            print(" failed", file=sys.stderr, flush=True)
            self._open = False

    def note(self, message):
        if self.enabled:
            print(f"skcalib: {message}", file=sys.stderr, flush=True)


def _float(x):
    return None if x is None else float(x)


def compute_report(
    y_true,
    y_proba,
    *,
    sample_weight=None,
    pos_label=None,
    labels=None,
    n_bootstrap=200,
    confidence_level=0.95,
    bound=None,
    perturbation_scale=None,
    delta=0.05,
    kde_max_samples=_KDE_MAX_SAMPLES,
    random_state=0,
    n_jobs=None,
    progress=None,
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
    progress : _Progress, default=None

    Returns
    -------
    report : dict
        Every number, JSON-serialisable (``report["metrics"]``).
    curve : SmoothCalibrationCurve
        The smooth reliability curve behind ``report["metrics"]["smooth_ece"]``.

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
    from sklearn.metrics import brier_score_loss, log_loss

    from .. import metrics
    from .._backend.binning import relative_weights
    from .._validation import binary_tasks, check_calibration_inputs

    progress = progress or _Progress(False)
    data = check_calibration_inputs(
        y_true, y_proba, sample_weight=sample_weight, pos_label=pos_label, labels=labels
    )
    binary = data.kind == "binary"
    n_classes = len(data.classes)
    # The metric functions receive the canonical arrays, so that every measure
    # sees the same classes and positive label.
    y_c, p_c = data.y, data.proba
    class_idx = np.array([0.0, 1.0]) if binary else np.arange(n_classes)
    weighted = sample_weight is not None
    # Weights are relative, scaled so that the largest is 1: ECE-KDE reads
    # weights as frequencies, and its leave-one-out removes one copy, so a
    # weight above 1 would keep part of a sample among its own neighbours.
    w = relative_weights(data.weight) if weighted else None
    kw_w = {"sample_weight": w} if weighted else {}

    if bound is not None and weighted:
        raise InputError(
            "certified bounds need one row per sample; --sample-weight cannot be "
            "combined with --bound."
        )
    if bound == "nw" and perturbation_scale is None:
        raise InputError(
            "--bound nw needs --perturbation-scale H, the scale of the sech "
            "perturbation that produced the scores."
        )

    report = {
        "n_samples": int(data.n_samples),
        "n_classes": int(n_classes),
        "kind": data.kind,
        "classes": [_jsonable(c) for c in data.classes],
        "pos_label": _jsonable(data.pos_label) if binary else None,
        "weighted": weighted,
        "multi_class": None if binary else "top-label",
        "metrics": {},
    }
    m = report["metrics"]

    what = (
        f"smooth ECE ({n_bootstrap} bootstrap resamples)"
        if n_bootstrap
        else ("smooth ECE")
    )
    progress.start(what)
    curve = metrics.smooth_calibration_curve(
        y_c,
        p_c,
        n_bootstrap=n_bootstrap,
        confidence_level=confidence_level,
        random_state=random_state,
        n_jobs=n_jobs,
        **kw_w,
    )
    progress.done()
    ci = curve.smece_ci
    m["smooth_ece"] = {
        "value": _float(curve.smece),
        "sigma": _float(curve.sigma),
        "ci": None if ci is None else [_float(ci[0]), _float(ci[1])],
        "confidence_level": confidence_level if n_bootstrap else None,
        "n_bootstrap": int(n_bootstrap),
    }

    progress.start("binned ECE")
    for strategy in ("uniform", "quantile"):
        m[f"binned_ece_{strategy}"] = {
            "value": _float(
                metrics.binned_calibration_error(
                    y_c, p_c, n_bins=_N_BINS, strategy=strategy, norm="l1", **kw_w
                )
            ),
            "n_bins": _N_BINS,
        }
    progress.done()

    rng = np.random.default_rng(random_state)
    n = data.n_samples
    sub = None
    if kde_max_samples and n > kde_max_samples:
        sub = np.sort(rng.choice(n, size=kde_max_samples, replace=False))
    progress.start(
        "ECE-KDE"
        + (f" on a subsample of {kde_max_samples} rows" if sub is not None else "")
    )
    pick = (lambda a: a) if sub is None else (lambda a: a[sub])
    # Risk alignment rather than likelihood: the likelihood bandwidth is tuned
    # to the density of the scores and is often too small for the L1 plug-in,
    # which is then biased upward.
    kde = metrics.kde_calibration_error(
        pick(y_c),
        pick(p_c),
        p=1,
        bandwidth="risk",
        labels=class_idx,
        return_details=True,
        **({"sample_weight": pick(w)} if weighted else {}),
    )
    progress.done()
    m["ece_kde"] = {
        "value": float(kde.value),
        "p": 1,
        "multi_class": "canonical",
        "bandwidth_selector": "risk",
        "bandwidth": float(kde.bandwidth),
        "effective_sample_size_min": float(kde.effective_sample_size_min),
        "effective_sample_size_median": float(kde.effective_sample_size_median),
        "n_samples_used": int(n if sub is None else kde_max_samples),
    }

    proba_matrix = data.proba_matrix()
    m["brier_score"] = {
        "value": float(
            brier_score_loss(
                y_c, p_c if binary else proba_matrix, labels=class_idx, **kw_w
            )
        )
    }
    m["log_loss"] = {
        "value": float(log_loss(y_c, proba_matrix, labels=class_idx, **kw_w))
    }

    if bound is not None:
        # binary data give the positive-class task, multiclass the top-label one
        ((yb, sb, _),) = binary_tasks(data, "top-label")
        progress.start(f"certified bound ({bound.upper()})")
        kw = {}
        if bound == "nw":
            kw["perturbation_scale"] = perturbation_scale
        res = metrics.calibration_error_bound(
            yb, sb, method=bound, delta=delta, random_state=random_state, **kw
        )
        progress.done()
        m["calibration_error_bound"] = {
            "method": bound,
            "upper": float(res.upper),
            "estimate": float(res.estimate),
            "lower": float(res.lower),
            "delta": float(delta),
            "perturbation_scale": _float(perturbation_scale),
            "n_splits": int(res.n_splits),
            "terms": {k: float(v) for k, v in res.terms.items()},
            "target": "binary" if binary else "top-label",
        }
    return report, curve


def _json_default(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"cannot write {type(x).__name__} to JSON")


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    return x


# ---------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------


def _fmt(x, digits=4):
    return "-" if x is None else f"{x:.{digits}f}"


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
    m = report["metrics"]
    lines = []
    if title:
        lines.append(title)
    kind = report["kind"]
    if kind == "binary":
        desc = f"binary, positive label {report['pos_label']!r}"
    else:
        desc = f"{report['n_classes']} classes"
    lines.append(
        f"{report['n_samples']} samples, {desc}"
        + (", weighted" if report["weighted"] else "")
    )
    lines.append("")
    tl = "" if kind == "binary" else ", top-label"
    rows = []
    sm = m["smooth_ece"]
    ci = sm["ci"]
    ci_txt = (
        f"{int(round(100 * sm['confidence_level']))}% CI [{_fmt(ci[0])}, {_fmt(ci[1])}]"
        if ci is not None
        else ""
    )
    rows.append(
        (f"smooth ECE (sigma*={_fmt(sm['sigma'], 3)}{tl})", sm["value"], ci_txt)
    )
    for strategy in ("uniform", "quantile"):
        b = m[f"binned_ece_{strategy}"]
        rows.append((f"binned ECE ({b['n_bins']} {strategy} bins{tl})", b["value"], ""))
    k = m["ece_kde"]
    note = f"bandwidth {k['bandwidth']:.3g}" if k["bandwidth"] is not None else ""
    if k["n_samples_used"] < report["n_samples"]:
        note += f", {k['n_samples_used']} rows"
    rows.append(("ECE-KDE (canonical, L1)", k["value"], note.lstrip(", ")))
    rows.append(("Brier score", m["brier_score"]["value"], ""))
    rows.append(("log-loss", m["log_loss"]["value"], ""))
    if "calibration_error_bound" in m:
        b = m["calibration_error_bound"]
        conf = 100 * (1 - b["delta"])
        label = f"certified CE bound ({b['method'].upper()}{tl})"
        rows.append(
            (label, b["upper"], f"holds w.p. {conf:g}%, estimate {_fmt(b['estimate'])}")
        )
    width = max(len(r[0]) for r in rows)
    lines.append(f"  {'measure'.ljust(width)}   {'value':>8}")
    lines.append(f"  {'-' * width}   {'-' * 8}")
    for name, value, extra in rows:
        lines.append(f"  {name.ljust(width)}   {_fmt(value):>8}   {extra}".rstrip())
    return "\n".join(lines)


def plot_reliability(curve, path, *, title=None, multi_class=None, pos_label=None):
    """Save the smooth reliability diagram of ``curve`` to ``path``.

    The figure is a bare :class:`matplotlib.figure.Figure` (no pyplot), so the
    command changes no global matplotlib state and needs no display.
    """
    from matplotlib.figure import Figure

    from ..display import SmoothReliabilityDisplay

    fig = Figure(figsize=(6.0, 7.0), layout="constrained")
    ax, dax = fig.subplots(2, 1, sharex=True, height_ratios=[4, 1])
    disp = SmoothReliabilityDisplay(
        scores=curve.scores,
        y_smooth=curve.y_smooth,
        density=curve.density,
        smece=curve.smece,
        smece_ci=curve.smece_ci,
        y_smooth_low=curve.y_smooth_low,
        y_smooth_high=curve.y_smooth_high,
        sigma=curve.sigma,
        confidence_level=curve.confidence_level,
        multi_class=multi_class,
        pos_label=pos_label,
        name="predictions",
    )
    disp.plot(ax=ax, density_panel=dax)
    # The diagram is drawn with equal aspect; a density panel of matching box
    # aspect keeps both axes the same width.
    dax.set_box_aspect(0.25)
    if title:
        ax.set_title(title, fontsize="medium")
    fig.savefig(path, dpi=110)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected a non-negative integer, got {value}"
        )
    return value


def _bootstrap_count(text):
    value = _positive_int(text)
    if value > MAX_BOOTSTRAP:
        raise argparse.ArgumentTypeError(
            f"expected at most {MAX_BOOTSTRAP}, got {value}"
        )
    return value


def _kde_rows(text):
    value = _positive_int(text)
    if value == 1:
        raise argparse.ArgumentTypeError("expected 0 (all rows) or at least 2, got 1")
    return value


def _unit_interval(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {value}")
    return value


def _scale(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {value}")
    return value


def build_parser():
    """The ``argparse`` parser of the ``skcalib`` command.

    Returns
    -------
    argparse.ArgumentParser

    Examples
    --------
    >>> from skcalib.cli import build_parser
    >>> args = build_parser().parse_args(["report", "preds.csv", "--bootstrap", "50"])
    >>> args.file, args.bootstrap
    ('preds.csv', 50)
    """
    parser = argparse.ArgumentParser(
        prog="skcalib",
        description="Measure, certify and plot the calibration of a classifier.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"skcalib {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    rep = sub.add_parser(
        "report",
        help="calibration report of predictions in a file (or a demo)",
        description=(
            "Print calibration measures of predicted probabilities and write "
            "reliability.png and report.json. Without FILE, run a demo on a "
            "built-in dataset."
        ),
        epilog=(
            "examples:\n"
            "  skcalib report\n"
            "  skcalib report preds.csv --y-true label --y-proba score --out report/\n"
            "  skcalib report preds.csv --y-true label --y-proba p_a p_b p_c\n"
            "  skcalib report preds.npz --bootstrap 500 --bound nw "
            "--perturbation-scale 0.015625"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument(
        "file",
        nargs="?",
        metavar="FILE",
        help="CSV (with a header), .npy, .npz or Parquet file of predictions",
    )
    rep.add_argument(
        "--y-true",
        metavar="COL",
        help="label column (default: y_true, y, label, target)",
    )
    rep.add_argument(
        "--y-proba",
        metavar="COL",
        nargs="+",
        help=(
            "probability column(s): one for the positive class, or one per class "
            "(default: y_proba/proba/score, else every other column)"
        ),
    )
    rep.add_argument(
        "--sample-weight",
        metavar="COL",
        help="optional weight column (relative weights: divided by their maximum)",
    )
    rep.add_argument(
        "--pos-label",
        metavar="LABEL",
        help="positive class of a binary problem (default: the greater label)",
    )
    rep.add_argument(
        "--bootstrap",
        metavar="N",
        type=_bootstrap_count,
        default=200,
        help="bootstrap resamples for the smooth ECE interval (default: 200; 0: none)",
    )
    rep.add_argument(
        "--confidence-level",
        metavar="Q",
        type=_unit_interval,
        default=0.95,
        help="level of the bootstrap interval (default: 0.95)",
    )
    rep.add_argument(
        "--bound",
        choices=("nw", "tv"),
        help=(
            "also compute a certified upper bound on the calibration error; nw "
            "is valid only for scores perturbed with the sech kernel of scale "
            "--perturbation-scale"
        ),
    )
    rep.add_argument(
        "--perturbation-scale",
        metavar="H",
        type=_scale,
        help="scale h of the sech perturbation of the scores (for --bound nw)",
    )
    rep.add_argument(
        "--delta",
        type=_unit_interval,
        default=0.05,
        help="failure probability of the bound (default: 0.05)",
    )
    rep.add_argument(
        "--kde-max-samples",
        metavar="N",
        type=_kde_rows,
        default=_KDE_MAX_SAMPLES,
        help=(
            "compute ECE-KDE (quadratic cost) on a subsample of at most N rows "
            f"(default: {_KDE_MAX_SAMPLES}; 0: all rows)"
        ),
    )
    rep.add_argument(
        "--out",
        metavar="DIR",
        default="skcalib-report",
        help="directory for reliability.png and report.json (default: skcalib-report/)",
    )
    rep.add_argument(
        "--no-plot", action="store_true", help="write report.json only, no PNG"
    )
    rep.add_argument(
        "--seed", type=_positive_int, default=0, help="random seed (default: 0)"
    )
    rep.add_argument(
        "--n-jobs", type=int, default=None, help="parallel jobs for the bootstrap"
    )
    rep.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    rep.set_defaults(handler=_run_report)
    return parser


def _run_report(args, progress):
    if args.bound == "nw" and args.perturbation_scale is None and args.file is not None:
        # Checked before reading a possibly large file.
        raise InputError(
            "--bound nw needs --perturbation-scale H, the scale of the sech "
            "perturbation that produced the scores."
        )
    if args.file is None:
        if args.y_true or args.y_proba or args.sample_weight:
            raise InputError("--y-true, --y-proba and --sample-weight need a FILE.")
        scale = args.perturbation_scale
        if args.bound == "nw" and scale is None:
            scale = 2.0**-6
        progress.start("demo: fitting a model on a built-in dataset")
        y_true, y_proba, source = demo_predictions(
            perturbation_scale=scale, random_state=args.seed
        )
        progress.done()
        weight, labels = None, None
        info = {"file": None, "demo": source}
        args.perturbation_scale = scale
        plot_title = "demo: " + source.split(" (")[0]
    else:
        progress.start(f"reading {args.file}")
        y_true, y_proba, weight, info = read_predictions(
            args.file,
            y_true=args.y_true,
            y_proba=args.y_proba,
            sample_weight=args.sample_weight,
        )
        progress.done()
        labels = info["labels"]
        source = args.file
        plot_title = Path(args.file).name

    pos_label = None
    if args.pos_label is not None:
        converted = _convert_like([args.pos_label], y_true)
        present = np.unique(y_true)
        if converted is None or not np.isin(converted, present).all():
            raise InputError(
                f"--pos-label {args.pos_label!r} is not one of the labels "
                f"{[_jsonable(v) for v in present[:20]]}."
            )
        pos_label = converted[0]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report, curve = compute_report(
            y_true,
            y_proba,
            sample_weight=weight,
            pos_label=pos_label,
            labels=labels,
            n_bootstrap=args.bootstrap,
            confidence_level=args.confidence_level,
            bound=args.bound,
            perturbation_scale=args.perturbation_scale,
            delta=args.delta,
            kde_max_samples=args.kde_max_samples,
            random_state=args.seed,
            n_jobs=args.n_jobs,
            progress=progress,
        )
        report["input"] = info
        report["seed"] = args.seed

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        png = None if args.no_plot else out / "reliability.png"
        if png is not None:
            progress.start(f"writing {png}")
            plot_reliability(
                curve,
                png,
                title=plot_title,
                multi_class=report["multi_class"],
                pos_label=report["pos_label"],
            )
            progress.done()
    for w in caught:
        progress.note(f"warning: {_one_line(str(w.message))}")

    from .. import __version__

    report["skcalib_version"] = __version__
    report["outputs"] = {
        "reliability_png": None if png is None else str(png),
        "report_json": str(out / "report.json"),
    }
    with open(out / "report.json", "w", encoding="utf-8") as fh:
        json.dump(report, fh, indent=2, allow_nan=False, default=_json_default)
        fh.write("\n")
    title = f"skcalib report: {source}"
    print(format_table(report, title=title))
    written = [str(p) for p in (png, out / "report.json") if p is not None]
    print(f"\nwrote {' and '.join(written)}")
    return EXIT_OK


def _one_line(text):
    return " ".join(str(text).split())


def main(argv=None):
    """Entry point of the ``skcalib`` command; returns the exit code.

    Parameters
    ----------
    argv : list of str, default=None
        Arguments without the program name; ``None`` reads ``sys.argv``.

    Returns
    -------
    int
        0 on success, 2 on bad input (one-line message on stderr).

    Examples
    --------
    >>> from skcalib.cli import main
    >>> main(["report", "no-such-file.csv", "--quiet"])
    2
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = _Progress(not args.quiet)
    try:
        return args.handler(args, progress)
    except (ValueError, TypeError, OSError, KeyError) as exc:
        progress.abort()
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"skcalib {args.command}: error: {_one_line(msg)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        progress.abort()
        print("skcalib: interrupted", file=sys.stderr)
        return 130
