"""SmoothECE over more predictions than fit in memory.

Writes ``n`` predictions (float32 scores, int8 labels) to a file in ``--dir``,
then, each in a fresh process:

* streams it in chunks through ``CalibrationAccumulator`` (pages already read
  are released with ``madvise``, so the resident file pages stay ~ one chunk),
  for ``n / 10`` and ``n`` rows, reporting wall time, CPU time, throughput per
  core and the peak resident memory (``VmHWM``) and its increase over the
  process baseline after imports;
* times the accumulation kernel alone (cell moments of already validated
  chunks);
* runs ``smooth_ece`` on dask arrays backed by the same file on a
  ``distributed.LocalCluster`` (2 worker processes, 1 thread each; blocks of
  ``--dask-chunk`` rows, by default ``--chunk``: a worker's peak memory grows
  with the block size, not with ``n``);
* compares with the in-memory ``smooth_ece`` on the first ``--n-memory`` rows.

The streaming child imports only ``skcalib.metrics`` (numpy and scipy.fft
underneath, no scikit-learn: it would add ~150 MB of resident imports); the
report says which of these modules it ended up loading.

The file is deleted at the end. A separate run of ``n / 4`` rows (at least
five chunks) times ``partial_fit`` and the floor, one weighted
``np.bincount`` of each chunk after the first, side by side. With
``--state``: the size of the portable state against ``n`` and against the
number of occupied grid cells (and of two fitted models' predictions), and the
load and merge of 365 daily states; with ``--spark N``:
``skcalib.spark.accumulate`` on N rows of a local[2] Spark session against
collecting them and calling the in-memory function (``--n 0`` skips the
streaming part). Usage::

    python benchmarks/bench_scale.py --n 100000000
    python benchmarks/bench_scale.py --n 0 --state --spark 1e7
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TARGET_RATE = 50e6  # predictions / s / core for the accumulation
TARGET_PEAK_MB = 200.0
TARGET_FLOOR_RATIO = 2.0


def _status_mb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) / 1024
    return float("nan")


def _loaded(*names):
    """The packages among ``names`` imported by this process."""
    return [n for n in names if n in sys.modules]


def _paths(base):
    return base + ".scores.f32", base + ".labels.i8"


def write_data(base, n, seed=0, chunk=2**22):
    """Scores ~ Beta(2, 5), labels ~ Bernoulli(eta(s)), eta non-monotone."""
    rng = np.random.default_rng(seed)
    ps, py = _paths(base)
    with open(ps, "wb") as fs, open(py, "wb") as fy:
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            s = rng.beta(2.0, 5.0, size=m)
            eta = np.clip(s + 0.15 * np.sin(2 * np.pi * s), 0.0, 1.0)
            (rng.uniform(size=m) < eta).astype(np.int8).tofile(fy)
            s.astype(np.float32).tofile(fs)


class _MappedColumn:
    """A column of a binary file read through mmap, one chunk at a time."""

    def __init__(self, path, dtype):
        self.dtype = np.dtype(dtype)
        self._f = open(path, "rb")
        self._mm = mmap.mmap(self._f.fileno(), 0, access=mmap.ACCESS_READ)

    def chunk(self, start, stop):
        return np.frombuffer(
            self._mm, self.dtype, count=stop - start, offset=start * self.dtype.itemsize
        )

    def release(self, start, stop):
        """Drop the pages of rows [start, stop) from this process's resident set."""
        page = mmap.PAGESIZE
        lo = (start * self.dtype.itemsize) // page * page
        hi = stop * self.dtype.itemsize
        self._mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)


def run_stream(base, n, chunk, kernel_only, floor_every=0):
    """Child process: stream n rows; print a JSON line of measurements.

    With ``floor_every`` = k, every k-th chunk is also timed through one
    weighted ``np.bincount`` (the floor), next to its ``partial_fit``."""
    floor_fit = []
    from skcalib._backend.distributed import add_cell_moments, empty_moments
    from skcalib.metrics import CalibrationAccumulator

    base_rss = _status_mb("VmRSS")
    ps, py = _paths(base)
    scores, labels = _MappedColumn(ps, np.float32), _MappedColumn(py, np.int8)
    if kernel_only:
        # Chunks validated and converted beforehand; the kernel alone is timed.
        moments = empty_moments(2**16)
        busy = 0.0
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            s = scores.chunk(start, stop)
            slot = labels.chunk(start, stop).astype(np.intp)
            t0 = time.process_time()
            add_cell_moments(moments, slot, s)
            busy += time.process_time() - t0
            del s
            scores.release(start, stop)
            labels.release(start, stop)
        print(json.dumps({"cpu": busy, "n": n}))
        return
    t_wall, t_cpu = time.perf_counter(), time.process_time()
    acc = CalibrationAccumulator()
    floor = 0.0
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        t0 = time.process_time()
        acc.partial_fit(labels.chunk(start, stop), scores.chunk(start, stop))
        t1 = time.process_time()
        # The first chunk pays the first call's costs: timed from the second.
        if floor_every and start and (start // chunk) % floor_every == 0:
            # The floor, side by side on the same chunk: one weighted
            # bincount of the scores over the 2**16 cells, its key and the
            # float64 scores made outside the timing.
            s = np.asarray(scores.chunk(start, stop), dtype=np.float64)
            key = (s * 2**16).astype(np.intp)
            t2 = time.process_time()
            np.bincount(key, weights=s, minlength=2**16)
            floor += time.process_time() - t2
            floor_fit.append(t1 - t0)
            del s, key
        scores.release(start, stop)
        labels.release(start, stop)
    acc_wall = time.perf_counter() - t_wall
    acc_cpu = time.process_time() - t_cpu - floor
    value = acc.smooth_ece()
    total_wall = time.perf_counter() - t_wall
    print(
        json.dumps(
            {
                "n": n,
                "smece": value,
                "acc_wall": acc_wall,
                "acc_cpu": acc_cpu,
                "floor_cpu": floor,
                "floor_fit_cpu": sum(floor_fit),
                "total_wall": total_wall,
                "peak_mb": _status_mb("VmHWM"),
                "base_mb": base_rss,
                "loaded": _loaded("scipy.fft", "sklearn", "pandas", "joblib"),
                "n_modules": len(sys.modules),
            }
        )
    )


def run_memory(base, n):
    """Child process: in-memory smooth_ece on the first n rows."""
    from skcalib.metrics import smooth_ece

    base_rss = _status_mb("VmRSS")
    ps, py = _paths(base)
    t0 = time.perf_counter()
    s = np.fromfile(ps, dtype=np.float32, count=n)
    y = np.fromfile(py, dtype=np.int8, count=n)
    value = smooth_ece(y, s)
    wall = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "n": n,
                "smece": value,
                "wall": wall,
                "peak_mb": _status_mb("VmHWM"),
                "base_mb": base_rss,
            }
        )
    )


def _load_block(path, dtype, start, stop):
    dtype = np.dtype(dtype)
    mm = np.memmap(
        path,
        dtype=dtype,
        mode="r",
        offset=start * dtype.itemsize,
        shape=(stop - start,),
    )
    return np.array(mm)


def run_dask(base, n, chunk):
    """Child process: smooth_ece of dask arrays on a LocalCluster."""
    import dask
    import dask.array as da
    import distributed

    from skcalib.metrics import smooth_ece

    ps, py = _paths(base)

    def column(path, dtype):
        blocks = [
            da.from_delayed(
                dask.delayed(_load_block)(path, dtype, a, min(a + chunk, n)),
                shape=(min(a + chunk, n) - a,),
                dtype=dtype,
            )
            for a in range(0, n, chunk)
        ]
        return da.concatenate(blocks)

    with (
        distributed.LocalCluster(
            processes=True,
            n_workers=2,
            threads_per_worker=1,
            host="127.0.0.1",
            dashboard_address=None,
            memory_limit="1GB",
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        # Warm-up: workers import skcalib once, outside the timing.
        smooth_ece(
            da.from_array(np.array([0, 1]), chunks=1),
            da.from_array(np.array([0.2, 0.7]), chunks=1),
        )
        base = client.run(lambda: _status_mb("VmRSS"))
        y, s = column(py, np.int8), column(ps, np.float32)
        t0 = time.perf_counter()
        value = smooth_ece(y, s)
        wall = time.perf_counter() - t0
        workers = client.run(lambda: _status_mb("VmHWM"))
    print(
        json.dumps(
            {
                "n": n,
                "smece": value,
                "wall": wall,
                "worker_peak_mb": max(workers.values()),
                "worker_base_mb": max(base.values()),
            }
        )
    )


def state_sizes():
    """Bytes of the portable state vs n and vs occupied cells (in-process)."""
    import pickle

    from sklearn.datasets import make_classification
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    from skcalib.metrics import CalibrationAccumulator

    rng = np.random.default_rng(0)
    print("\nportable state (to_bytes) vs n, Beta(2, 5) scores:")
    print(f"{'n':>10} {'float64 KB':>11} {'float32 KB':>11} {'3 decimals KB':>14}")
    for n in (10**4, 10**5, 10**6, 10**7):
        p = rng.beta(2.0, 5.0, size=n)
        y = rng.uniform(size=n) < p
        sizes = [
            len(CalibrationAccumulator().partial_fit(y, q).to_bytes()) / 1e3
            for q in (p, p.astype(np.float32), np.round(p, 3))
        ]
        print(f"{n:>10.0e} {sizes[0]:>11.0f} {sizes[1]:>11.0f} {sizes[2]:>14.0f}")
    acc = CalibrationAccumulator().partial_fit(y, p)
    print(
        f"pickle of the same accumulator: {len(pickle.dumps(acc)) / 1e6:.2f} MB "
        f"(the state: {len(acc.to_bytes()) / 1e6:.2f} MB)"
    )
    print("\nstate vs occupied cells (1e6 scores on k distinct values):")
    for k in (10, 100, 1000, 10_000, 65_536):
        values = rng.uniform(size=k)
        p = values[rng.integers(0, k, size=10**6)]
        acc = CalibrationAccumulator().partial_fit(rng.uniform(size=10**6) < p, p)
        occupied = int(np.count_nonzero(acc.moments_[3].sum(axis=0)))
        print(
            f"  k = {k:>6}: {occupied:>6} occupied cells, "
            f"{len(acc.to_bytes()) / 1e3:>8.1f} KB"
        )
    print("\nstate of 1e6 predictions of fitted models (20 features, 2e5 to fit):")
    X, y = make_classification(
        n_samples=1_200_000, n_features=20, n_informative=8, random_state=0
    )
    for name, model in (
        ("logistic regression", LogisticRegression(max_iter=500)),
        ("gradient boosting", HistGradientBoostingClassifier(random_state=0)),
    ):
        p = model.fit(X[:200_000], y[:200_000]).predict_proba(X[200_000:])[:, 1]
        for label, q in (("float64", p), ("float32", p.astype(np.float32))):
            acc = CalibrationAccumulator().partial_fit(y[200_000:], q)
            occupied = int(np.count_nonzero(acc.moments_[3].sum(axis=0)))
            print(
                f"  {name:<20} {label}: {occupied:>6} occupied cells, "
                f"{len(acc.to_bytes()) / 1e3:>7.0f} KB"
            )


def merge_daily_states(days=365, per_day=20_000):
    """Load and merge 365 daily states vs the accumulator of all the rows."""
    from skcalib.metrics import CalibrationAccumulator

    rng = np.random.default_rng(1)
    states = []
    whole = CalibrationAccumulator()
    for _ in range(days):
        p = rng.beta(2.0, 5.0, size=per_day)
        y = rng.uniform(size=per_day) < p
        states.append(CalibrationAccumulator().partial_fit(y, p).to_bytes())
        whole.partial_fit(y, p)
    t0 = time.perf_counter()
    merged = CalibrationAccumulator()
    for data in states:
        merged.merge(CalibrationAccumulator.from_bytes(data))
    load_merge = time.perf_counter() - t0
    t0 = time.perf_counter()
    value = merged.smooth_ece()
    result = time.perf_counter() - t0
    print(
        f"\nmerge of {days} daily states ({per_day} predictions each, "
        f"{sum(map(len, states)) / 1e6:.1f} MB in all): load + merge "
        f"{load_merge:.2f} s ({1e3 * load_merge / days:.1f} ms a state), "
        f"smooth_ece {result:.2f} s; |merged - one stream| = "
        f"{abs(value - whole.smooth_ece()):.1e}, counts equal: "
        f"{np.array_equal(merged.moments_[3], whole.moments_[3])}"
    )


def run_spark(n):
    """Child process: skcalib.spark.accumulate on a local[2] session vs the
    in-memory accumulator of the collected rows."""
    import os

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from skcalib.metrics import CalibrationAccumulator, smooth_ece
    from skcalib.spark import accumulate

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    t0 = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", 100_000)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    startup = time.perf_counter() - t0
    score = F.pow(F.rand(seed=1), F.lit(2.5))
    df = (
        spark.range(n, numPartitions=8)
        .select(score.alias("score"), F.rand(seed=2).alias("u"))
        .select("score", (F.col("u") < F.col("score")).cast("int").alias("label"))
        .cache()
    )
    df.count()  # materialised outside the timings
    accumulate(df.limit(1000), y_true="label", y_proba="score")  # warm workers
    t0 = time.perf_counter()
    acc = accumulate(df, y_true="label", y_proba="score")
    value = acc.smooth_ece()
    spark_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    table = df.toArrow()
    collect_s = time.perf_counter() - t0
    y = table.column("label").to_numpy()
    p = table.column("score").to_numpy()
    t0 = time.perf_counter()
    ref = smooth_ece(y, p)
    memory_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    one = CalibrationAccumulator().partial_fit(y, p)
    stream_s = time.perf_counter() - t0
    spark.stop()
    print(
        json.dumps(
            {
                "n": n,
                "startup": startup,
                "spark": spark_s,
                "collect": collect_s,
                "memory": memory_s,
                "stream": stream_s,
                "diff": abs(value - ref),
                "diff_stream": abs(value - one.smooth_ece()),
                "counts_equal": bool(np.array_equal(acc.moments_[3], one.moments_[3])),
            }
        )
    )


def _child(*args):
    out = subprocess.run(
        [sys.executable, __file__, "--child", *map(str, args)],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e8, help="number of predictions")
    ap.add_argument("--chunk", type=int, default=2**21, help="rows per chunk")
    ap.add_argument(
        "--dask-chunk", type=int, default=None, help="rows per dask block (--chunk)"
    )
    ap.add_argument(
        "--n-memory", type=float, default=1e7, help="rows for the in-memory comparison"
    )
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument(
        "--state", action="store_true", help="state sizes and the 365-state merge"
    )
    ap.add_argument(
        "--spark", type=float, default=0, help="rows of the Spark local job (0: none)"
    )
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, base, *rest = args.child
        rest = [int(x) for x in rest]
        if kind == "spark":
            run_spark(int(base))
            return
        {"stream": run_stream, "memory": run_memory, "dask": run_dask}[kind](
            base, *rest
        )
        return
    if args.state:
        state_sizes()
        merge_daily_states()
    if args.spark:
        r = _child("spark", int(args.spark))
        print(
            f"\nSpark local[2], {r['n']:.0e} rows in 8 partitions: accumulate + "
            f"smooth_ece {r['spark']:.1f} s; collect to Arrow {r['collect']:.1f} s, "
            f"then in-memory smooth_ece {r['memory']:.1f} s (one accumulator "
            f"{r['stream']:.1f} s); ratio Spark / (collect + in-memory) "
            f"{r['spark'] / (r['collect'] + r['memory']):.2f}; |Spark - in-memory| "
            f"{r['diff']:.1e}, |Spark - one accumulator| {r['diff_stream']:.1e}, "
            f"counts equal {r['counts_equal']} (session start {r['startup']:.0f} s)"
        )
    if args.state or args.spark:
        if args.n == 0:
            return

    n, chunk = int(args.n), args.chunk
    dask_chunk = args.dask_chunk or chunk
    n_mem = min(int(args.n_memory), n)
    need = 5 * n
    free = shutil.disk_usage(args.dir).free
    print(
        f"disk: {free / 2**30:.1f} GiB free in {args.dir}, data needs "
        f"{need / 2**30:.2f} GiB"
    )
    if free < 2 * need:
        sys.exit("not enough free disk space; lower --n")
    base = tempfile.mktemp(prefix="skcalib_scale_", dir=args.dir)
    try:
        t0 = time.perf_counter()
        write_data(base, n)
        print(
            f"wrote {n:.3g} predictions (float32 + int8) in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        print(f"\nstreaming CalibrationAccumulator, chunks of {chunk} rows:")
        print(
            f"{'n':>12} {'smECE':>10} {'wall s':>8} {'cpu s':>8} "
            f"{'M pred/s/core':>14} {'peak MB':>8} {'+base MB':>9}"
        )
        for m in sorted({max(n // 10, 1), n}):
            r = _child("stream", base, m, chunk, 0)
            rate = m / r["acc_cpu"]
            print(
                f"{m:>12.3g} {r['smece']:>10.6f} {r['total_wall']:>8.2f} "
                f"{r['acc_cpu']:>8.2f} {rate / 1e6:>14.1f} {r['peak_mb']:>8.0f} "
                f"{r['peak_mb'] - r['base_mb']:>9.0f}"
            )
        stream = r
        print(
            f"streaming child imported {stream['n_modules']} modules; of scipy.fft, "
            f"sklearn, pandas, joblib: {', '.join(stream['loaded']) or 'none'}"
        )
        # A separate run (its floor arrays would count in the peak memory).
        m = min(n, max(n // 4, 5 * chunk))
        fl = _child("stream", base, m, chunk, 0, 1)
        print(
            f"\npartial_fit / floor (one weighted np.bincount of the same chunk, "
            f"chunks 2.. of {m:.3g} rows timed side by side, CPU time): "
            f"{fl['floor_fit_cpu'] / fl['floor_cpu']:.2f}x "
            f"(target <= {TARGET_FLOOR_RATIO:g}x)"
        )
        k = _child("stream", base, n, chunk, 1)
        k_rate = n / k["cpu"]
        rate = n / stream["acc_cpu"]
        print(
            f"\naccumulation kernel alone (validated chunks): "
            f"{k_rate / 1e6:.1f} M pred/s/core"
        )
        print(
            f"ratio partial_fit throughput / target {TARGET_RATE / 1e6:.0f} M/s: "
            f"{rate / TARGET_RATE:.2f}; kernel / target: {k_rate / TARGET_RATE:.2f}"
        )
        print(
            f"ratio peak RSS / target {TARGET_PEAK_MB:.0f} MB: "
            f"{stream['peak_mb'] / TARGET_PEAK_MB:.2f} (total), "
            f"{(stream['peak_mb'] - stream['base_mb']) / TARGET_PEAK_MB:.2f} "
            "(increase over imports)"
        )

        mem = _child("memory", base, n_mem)
        head = _child("stream", base, n_mem, chunk, 0)
        print(
            f"\nin-memory smooth_ece on the first {n_mem:.3g} rows: "
            f"{mem['smece']:.8f} in {mem['wall']:.2f} s, peak {mem['peak_mb']:.0f} MB;"
            f" accumulator: {head['smece']:.8f} (|diff| "
            f"{abs(mem['smece'] - head['smece']):.1e}), peak {head['peak_mb']:.0f} MB"
        )

        if not args.no_dask:
            d = _child("dask", base, n, dask_chunk)
            print(
                f"\ndask LocalCluster (2 processes x 1 thread, blocks of "
                f"{dask_chunk} rows): smECE {d['smece']:.8f}"
                f" (|diff| vs stream {abs(d['smece'] - stream['smece']):.1e}) in "
                f"{d['wall']:.2f} s = {n / d['wall'] / 1e6:.1f} M pred/s, "
                f"worker peak {d['worker_peak_mb']:.0f} MB (after imports "
                f"{d['worker_base_mb']:.0f} MB)"
            )
    finally:
        for p in _paths(base):
            if os.path.exists(p):
                os.remove(p)
        print("\ndata files removed")


if __name__ == "__main__":
    main()
