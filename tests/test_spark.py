"""skcalib.spark on a real local Spark session, and Arrow batches from
Polars and DuckDB, against the in-memory accumulator."""

import os
import shutil
import sys

import numpy as np
import pytest

from skcalib.metrics import CalibrationAccumulator

pa = pytest.importorskip("pyarrow")

from skcalib.spark import accumulate, accumulate_arrow  # noqa: E402


def _data(n=40_000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 5.0, size=n)
    return {
        "label": (rng.uniform(size=n) < p**1.2).astype(np.int64),
        "score": p,
        "w": rng.exponential(size=n),
        "day": rng.integers(0, 5, size=n),
        "segment": np.array(["eu", "us", "asia"])[rng.integers(0, 3, size=n)],
    }


def _close(a, b):
    """Equal up to the order of floating-point summation."""
    assert a.n_samples_ == b.n_samples_
    assert np.array_equal(a.classes_, b.classes_)
    np.testing.assert_allclose(a.moments_, b.moments_, rtol=1e-12, atol=1e-9)
    assert abs(a.smooth_ece() - b.smooth_ece()) < 1e-9


def test_arrow_batches_equal_the_in_memory_accumulator():
    d = _data()
    table = pa.table(d)
    ref = CalibrationAccumulator().partial_fit(d["label"], d["score"], d["w"])
    got = accumulate_arrow(
        table.to_batches(max_chunksize=7_000),
        y_true="label",
        y_proba="score",
        sample_weight="w",
    )
    _close(got, ref)
    groups = accumulate_arrow(table, y_true="label", y_proba="score", by="segment")
    assert sorted(groups) == ["asia", "eu", "us"]
    for key, acc in groups.items():
        m = d["segment"] == key
        _close(acc, CalibrationAccumulator().partial_fit(d["label"][m], d["score"][m]))


def test_arrow_multiclass_columns_and_errors():
    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(3), size=5000)
    y = (rng.uniform(size=(5000, 1)) > P.cumsum(axis=1)).sum(axis=1)
    table = pa.table({"y": y, "a": P[:, 0], "b": P[:, 1], "c": P[:, 2]})
    got = accumulate_arrow(
        table,
        y_true="y",
        y_proba=["a", "b", "c"],
        labels=[0, 1, 2],
        multi_class="classwise",
    )
    ref = CalibrationAccumulator(labels=[0, 1, 2], multi_class="classwise")
    assert abs(got.smooth_ece() - ref.partial_fit(y, P).smooth_ece()) < 1e-12
    with pytest.raises(ValueError, match="'nope' is not in the batch"):
        accumulate_arrow(table, y_true="nope", y_proba="a")
    with pytest.raises(TypeError, match="y_proba"):
        accumulate_arrow(table, y_true="y", y_proba=3)
    with pytest.raises(TypeError, match="record batches"):
        accumulate_arrow([1, 2], y_true="y", y_proba="a")


def test_polars_batches():
    pl = pytest.importorskip("polars")
    d = _data(n=8000)
    frame = pl.DataFrame(d)
    got = accumulate_arrow(
        frame.to_arrow().to_batches(max_chunksize=3000), y_true="label", y_proba="score"
    )
    _close(got, CalibrationAccumulator().partial_fit(d["label"], d["score"]))


def test_duckdb_batches():
    duckdb = pytest.importorskip("duckdb")
    d = _data(n=8000)
    con = duckdb.connect()
    con.register("preds", pa.table(d))
    reader = con.sql("SELECT label, score, day FROM preds WHERE score < 0.9")
    reader = reader.to_arrow_reader(2048)
    groups = accumulate_arrow(reader, y_true="label", y_proba="score", by="day")
    for day, acc in groups.items():
        m = (d["day"] == day) & (d["score"] < 0.9)
        _close(acc, CalibrationAccumulator().partial_fit(d["label"][m], d["score"][m]))


needs_spark = pytest.mark.skipif(
    shutil.which("java") is None, reason="Spark needs a Java runtime"
)


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    # the workers run this interpreter, where skcalib is installed
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    session = (
        SparkSession.builder.master("local[2]")
        .appName("skcalib-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "3")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _spark_frame(spark, d, n_partitions=5):
    table = pa.table(d)
    return spark.createDataFrame(table.to_pandas()).repartition(n_partitions)


@pytest.mark.slow
@needs_spark
def test_spark_accumulate_equals_the_collected_data(spark):
    d = _data()
    # Cached: the five passes below read the same partitions without
    # rebuilding the frame and its shuffle each time.
    df = _spark_frame(spark, d).cache()
    rows = df.toPandas()  # the rows as Spark holds them, in its order
    ref = CalibrationAccumulator().partial_fit(
        rows["label"].to_numpy(), rows["score"].to_numpy(), rows["w"].to_numpy()
    )
    got = accumulate(df, y_true="label", y_proba="score", sample_weight="w")
    _close(got, ref)
    by_day = accumulate(df, y_true="label", y_proba="score", by="day")
    assert sorted(by_day) == sorted(set(d["day"].tolist()))
    for day, acc in by_day.items():
        m = rows["day"].to_numpy() == day
        ref = CalibrationAccumulator().partial_fit(
            rows["label"].to_numpy()[m], rows["score"].to_numpy()[m]
        )
        _close(acc, ref)
    by_segment = accumulate(df, y_true="label", y_proba="score", by="segment")
    assert sorted(by_segment) == ["asia", "eu", "us"]
    empty = accumulate(df.limit(0), y_true="label", y_proba="score")
    assert not hasattr(empty, "moments_")
    with pytest.raises(ValueError, match="not in df"):
        accumulate(df, y_true="nope", y_proba="score")
