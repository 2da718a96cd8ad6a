"""Calibration of predictions held in Spark, or in any engine that gives Arrow
record batches (Polars, DuckDB, Ray, pyarrow datasets).

* :func:`accumulate_arrow` reads record batches into a
  :class:`~skcalib.metrics.CalibrationAccumulator` (one per key with
  ``by=``);
* :func:`accumulate` does it on every partition of a Spark DataFrame
  (``mapInArrow``), ships the compact states (:meth:`CalibrationAccumulator.to_bytes`)
  and merges them on the cluster (``treeAggregate``, ``reduceByKey``).

pyspark and pyarrow (the ``spark`` extra) are imported when these functions
run. Read more in the :ref:`User Guide <monitoring>`.
"""

from __future__ import annotations

import functools

import numpy as np

from ._docstrings import PARAMETERS, fill_doc
from ._params import COLUMN_RULES, validate_params
from .metrics import CalibrationAccumulator

__all__ = ["accumulate", "accumulate_arrow"]


# The two entry points read the same columns; their entries are written once.
_COLUMN_DOCS = {
    "y_true": """\
y_true : str
    Column of the labels.""",
    "y_proba": """\
y_proba : str or list of str
    Column of the probability of the positive class, or the columns of
    the probabilities of each class (in the order of ``labels``).""",
    "sample_weight": """\
sample_weight : str, default=None
    Column of the sample weights.""",
    "pos_label": """\
pos_label : int, float, bool or str, default=None
    Positive class, as for :class:`~skcalib.metrics.CalibrationAccumulator`.""",
    "labels": """\
labels : array-like of shape (n_classes,), default=None
    The class labels, in the order of the probability columns, as for
    :class:`~skcalib.metrics.CalibrationAccumulator`.""",
    "multi_class": PARAMETERS["multi_class_reduce"],
}


def _columns(y_proba):
    """The probability columns (their names are checked by the rules)."""
    return [y_proba] if isinstance(y_proba, str) else list(y_proba)


def _batches(data):
    """Record batches of ``data``: a RecordBatch, a Table, a reader or an
    iterable of those."""
    import pyarrow as pa

    if isinstance(data, pa.RecordBatch):
        yield data
    elif isinstance(data, pa.Table):
        yield from data.to_batches()
    elif isinstance(data, pa.RecordBatchReader):
        yield from data
    else:
        try:
            items = iter(data)
        except TypeError:
            raise TypeError(
                "batches must be Arrow record batches, a table, a reader or an "
                f"iterable of them; got {type(data).__name__}."
            ) from None
        for item in items:
            if isinstance(item, (pa.RecordBatch, pa.Table, pa.RecordBatchReader)):
                yield from _batches(item)
            else:
                raise TypeError(
                    "batches must hold Arrow record batches; got "
                    f"{type(item).__name__}."
                )


# Record batches are read this many rows at a time: each partial_fit adds a
# fixed cost (its grid arrays), which Spark's 10,000-row batches would repeat.
_MIN_ROWS = 1 << 20


def _gathered(batches):
    """Consecutive non-empty batches joined into tables of at least
    ``_MIN_ROWS`` rows (the last one may be shorter)."""
    import pyarrow as pa

    pending, rows = [], 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        rows += batch.num_rows
        if rows >= _MIN_ROWS:
            yield pa.Table.from_batches(pending)
            pending, rows = [], 0
    if pending:
        yield pa.Table.from_batches(pending)


def _column(batch, name):
    try:
        col = batch.column(name)
    except KeyError:
        raise ValueError(
            f"Column {name!r} is not in the batch; its columns are "
            f"{batch.schema.names}."
        ) from None
    return col.to_numpy(zero_copy_only=False)


@validate_params(**COLUMN_RULES)
@fill_doc(**_COLUMN_DOCS)
def accumulate_arrow(
    batches,
    *,
    y_true,
    y_proba,
    sample_weight=None,
    by=None,
    pos_label=None,
    labels=None,
    multi_class="top-label",
):
    """Calibration statistics of Arrow record batches.

    Every batch is read column by column (without copying numeric columns)
    into :class:`~skcalib.metrics.CalibrationAccumulator`, one per value of
    ``by`` if given. Any engine that produces Arrow batches works: Polars
    (``df.to_arrow()``), DuckDB (``relation.to_arrow_reader()``), Ray
    (``ds.iter_batches(batch_format="pyarrow")``), pyarrow datasets.

    Parameters
    ----------
    batches : pyarrow.RecordBatch, Table, RecordBatchReader or iterable
        The data, as Arrow record batches (or an iterable of them).
    ${y_true}
    ${y_proba}
    ${sample_weight}
    by : str, default=None
        Column whose values split the rows into groups (a day, a segment).
    ${pos_label}
    ${labels}
    ${multi_class}

    Returns
    -------
    CalibrationAccumulator or dict
        The accumulator of all rows, or with ``by`` a dict of accumulators
        by group value.

    See Also
    --------
    accumulate : The same on a Spark DataFrame.

    Examples
    --------
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> from skcalib.spark import accumulate_arrow
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 5, size=10_000)
    >>> table = pa.table({
    ...     "label": rng.uniform(size=10_000) < p,
    ...     "score": p,
    ...     "day": np.repeat(["mon", "tue"], 5_000),
    ... })
    >>> acc = accumulate_arrow(table.to_batches(max_chunksize=3000),
    ...                        y_true="label", y_proba="score")
    >>> acc.n_samples_
    10000
    >>> days = accumulate_arrow(table, y_true="label", y_proba="score", by="day")
    >>> sorted(days), days["tue"].n_samples_
    (['mon', 'tue'], 5000)
    """
    proba_cols = _columns(y_proba)

    def new():
        return CalibrationAccumulator(
            pos_label=pos_label, labels=labels, multi_class=multi_class
        )

    total = None if by is not None else new()
    groups = {}
    for batch in _gathered(_batches(batches)):
        y = _column(batch, y_true)
        cols = [_column(batch, c) for c in proba_cols]
        p = cols[0] if len(cols) == 1 else np.column_stack(cols)
        w = None if sample_weight is None else _column(batch, sample_weight)
        if by is None:
            total.partial_fit(y, p, w)
            continue
        keys = _column(batch, by)
        try:
            values, inverse = np.unique(keys, return_inverse=True)
        except TypeError as exc:
            raise TypeError(
                f"The values of column {by!r} cannot be sorted: {exc}"
            ) from None
        for i, value in enumerate(values):
            rows = inverse == i
            key = value.item() if hasattr(value, "item") else value
            acc = groups.get(key)
            if acc is None:
                acc = groups[key] = new()
            acc.partial_fit(y[rows], p[rows], None if w is None else w[rows])
    return total if by is None else groups


def _partition_states(batches, *, by, key_type, options):
    """mapInArrow function: the states of one partition as one record batch
    (``key``, ``state``)."""
    import pyarrow as pa

    out = accumulate_arrow(batches, by=by, **options)
    if by is None:
        if not getattr(out, "n_samples_", 0):
            return
        out = {None: out}
    if not out:
        return
    keys = list(out)
    yield pa.RecordBatch.from_arrays(
        [
            pa.array(keys, type=key_type),
            pa.array([acc.to_bytes() for acc in out.values()], type=pa.binary()),
        ],
        names=["key", "state"],
    )


def _merge_states(a, b):
    merged = CalibrationAccumulator.from_bytes(a)
    return merged.merge(CalibrationAccumulator.from_bytes(b)).to_bytes()


def _merge_optional_states(a, b):
    """``_merge_states`` where ``None`` stands for no rows (the zero of the
    tree aggregation, so that an empty frame needs no separate job)."""
    if a is None:
        return b
    if b is None:
        return a
    return _merge_states(a, b)


@validate_params(**COLUMN_RULES)
@fill_doc(**_COLUMN_DOCS)
def accumulate(
    df,
    *,
    y_true,
    y_proba,
    sample_weight=None,
    by=None,
    pos_label=None,
    labels=None,
    multi_class="top-label",
    depth=2,
):
    """Calibration statistics of a Spark DataFrame, reduced on the cluster.

    Each partition is read as Arrow record batches (``mapInArrow``) into
    accumulators, whose portable states (a few hundred kilobytes) are merged
    on the executors (``treeAggregate``, or ``reduceByKey`` per group with
    ``by``); only the final states reach the driver. The result equals
    :class:`~skcalib.metrics.CalibrationAccumulator` fed the collected rows,
    up to the order of floating-point summation.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The predictions.
    ${y_true}
    ${y_proba}
    ${sample_weight}
    by : str, default=None
        Column whose values split the rows into groups (a day, a segment);
        all groups are computed in one pass.
    ${pos_label}
    ${labels}
    ${multi_class}
    depth : int, default=2
        Depth of the ``treeAggregate`` (without ``by``).

    Returns
    -------
    CalibrationAccumulator or dict
        The accumulator of all rows (unfitted if ``df`` is empty), or with
        ``by`` a dict of accumulators by group value.

    See Also
    --------
    accumulate_arrow : The same on Arrow record batches.
    skcalib.metrics.CalibrationMonitor : Windows, periods and their report.

    Examples
    --------
    >>> from pyspark.sql import SparkSession  # doctest: +SKIP
    >>> from skcalib.spark import accumulate  # doctest: +SKIP
    >>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
    >>> df = spark.read.parquet("predictions.parquet")  # doctest: +SKIP
    >>> acc = accumulate(df, y_true="label", y_proba="score")  # doctest: +SKIP
    >>> acc.smooth_ece()  # doctest: +SKIP
    0.0213...
    >>> days = accumulate(df, y_true="label", y_proba="p", by="day")  # doctest: +SKIP
    """
    proba_cols = _columns(y_proba)
    cols = [y_true, *proba_cols]
    cols += [c for c in (sample_weight, by) if c is not None]
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(
            f"Columns {missing} are not in df; its columns are {df.columns}."
        )
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_type

    if not (isinstance(depth, int) and depth >= 1):
        raise ValueError(f"depth must be a positive integer; got {depth!r}.")
    key_type = pa.null() if by is None else to_arrow_type(df.schema[by].dataType)
    key_spark = "string" if by is None else df.schema[by].dataType.simpleString()
    options = {
        "y_true": y_true,
        "y_proba": y_proba,
        "sample_weight": sample_weight,
        "pos_label": pos_label,
        "labels": None if labels is None else list(np.asarray(labels).tolist()),
        "multi_class": multi_class,
    }
    func = functools.partial(
        _partition_states, by=by, key_type=key_type, options=options
    )
    states = df.select(*cols).mapInArrow(func, f"key {key_spark}, state binary").rdd
    pairs = states.map(lambda row: (row.key, bytes(row.state)))
    if by is None:
        # One pass: ``treeReduce`` would need an ``isEmpty`` job first, which
        # reads the frame and runs the partition function once more.
        state = pairs.values().treeAggregate(
            None, _merge_optional_states, _merge_optional_states, depth=depth
        )
        if state is None:
            return CalibrationAccumulator(
                pos_label=pos_label, labels=labels, multi_class=multi_class
            )
        return CalibrationAccumulator.from_bytes(state)
    merged = pairs.reduceByKey(_merge_states).collect()
    return {key: CalibrationAccumulator.from_bytes(state) for key, state in merged}
