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

The file is deleted at the end. Usage::

    python benchmarks/bench_scale.py --n 100000000
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


def run_stream(base, n, chunk, kernel_only):
    """Child process: stream n rows; print a JSON line of measurements."""
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
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        acc.partial_fit(labels.chunk(start, stop), scores.chunk(start, stop))
        scores.release(start, stop)
        labels.release(start, stop)
    acc_wall = time.perf_counter() - t_wall
    acc_cpu = time.process_time() - t_cpu
    value = acc.smooth_ece()
    total_wall = time.perf_counter() - t_wall
    print(
        json.dumps(
            {
                "n": n,
                "smece": value,
                "acc_wall": acc_wall,
                "acc_cpu": acc_cpu,
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
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, base, *rest = args.child
        rest = [int(x) for x in rest]
        {"stream": run_stream, "memory": run_memory, "dask": run_dask}[kind](
            base, *rest
        )
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
