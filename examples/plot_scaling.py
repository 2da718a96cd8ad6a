"""
======================================
Scaling out: streams, partitions, dask
======================================

Click logs, search results and recommendation feeds produce billions of
predictions, more than fit in memory. Every grid-based measure of skcalib
(SmoothECE, the smooth reliability curve, grid-aligned binned errors) depends
on the data only through per-cell sums on a fine grid of :math:`[0, 1]`.
Sums can be accumulated chunk by chunk and merged across machines, so the
streaming result equals the in-memory one while memory stays constant.
"""

# %%
# A stream of chunks
# ------------------
# We simulate a stream of 2 million predictions in chunks of 250 000 from a
# synthetic problem with a known calibration error, and feed it to a
# :class:`~skcalib.metrics.CalibrationAccumulator` (about 5 MB of state,
# whatever the number of predictions).
import time

import matplotlib.pyplot as plt
import numpy as np

from skcalib.datasets import make_calibration_problem
from skcalib.display import SmoothReliabilityDisplay
from skcalib.metrics import CalibrationAccumulator, smooth_ece

h = 2**-6
n_chunks, chunk_size = 8, 250_000


def stream(seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n_chunks):
        d = make_calibration_problem(
            chunk_size, problem="overconfident", perturbation_scale=h, random_state=rng
        )
        yield d.y_true, d.y_proba


true_ce = make_calibration_problem(
    1, problem="overconfident", perturbation_scale=h
).calibration_error

acc = CalibrationAccumulator()
start = time.perf_counter()
for y_chunk, p_chunk in stream():
    acc.partial_fit(y_chunk, p_chunk)
elapsed = time.perf_counter() - start
print(f"{acc.n_samples_} predictions generated and accumulated in {elapsed:.2f} s")
print(f"streaming smECE: {acc.smooth_ece():.6f}")

# %%
# The same number in memory
# -------------------------
# Here the data still fit in memory, so we can check that the streaming value
# is the in-memory one.
chunks = list(stream())
y_all = np.concatenate([c[0] for c in chunks])
p_all = np.concatenate([c[1] for c in chunks])
print(f"in-memory smECE: {smooth_ece(y_all, p_all):.6f}")

# %%
# Partitions merge
# ----------------
# Accumulators built on separate partitions — on separate workers, or on
# separate days of logs — combine with
# :meth:`~skcalib.metrics.CalibrationAccumulator.merge`. Here four partitions
# are processed in parallel with joblib.
from joblib import Parallel, delayed


def accumulate(part):
    return CalibrationAccumulator().partial_fit(y_all[part], p_all[part])


parts = np.array_split(np.arange(y_all.size), 4)
partials = Parallel(n_jobs=2)(delayed(accumulate)(part) for part in parts)
merged = partials[0]
for other in partials[1:]:
    merged = merged.merge(other)
print(f"merged smECE:    {merged.smooth_ece():.6f}")

# %%
# The streamed reliability diagram
# --------------------------------
# :meth:`~skcalib.display.SmoothReliabilityDisplay.from_accumulator` draws
# the diagram from the accumulator alone: the curve, the density of the
# predictions and the fade where they are few all come from its grid, and
# match what :meth:`~skcalib.display.SmoothReliabilityDisplay.from_predictions`
# draws from the predictions themselves.
fig, ax = plt.subplots(figsize=(5.5, 6.5))
disp = SmoothReliabilityDisplay.from_accumulator(
    acc, name=f"{acc.n_samples_:,} streamed predictions", ax=ax, density_panel=True
)
ax.set_title(f"over-confident model (true CE = {true_ce:.3f})")
fig.tight_layout()  # the density panel is outside a constrained layout
plt.show()

# %%
# A certified bound from two passes
# ---------------------------------
# :class:`~skcalib.metrics.StreamingCalibrationBound` computes the NW and TV
# certified bounds over a stream: the first pass collects what the surrogate
# of each fold needs, the second evaluates it on the held-out samples. Folds
# are assigned by a hash of the position in the stream, so the second pass
# must see the same stream in the same order.
from skcalib.metrics import StreamingCalibrationBound

sb = StreamingCalibrationBound(method="nw", perturbation_scale=h, random_state=0)
for y_chunk, p_chunk in stream():
    sb.partial_fit(y_chunk, p_chunk)
for _, p_chunk in stream():
    sb.partial_validate(p_chunk)
upper = sb.result()
print(f"true CE {true_ce:.4f} <= certified bound {upper:.4f}")

# %%
# dask arrays and joblib backends
# -------------------------------
# The metric functions accept dask arrays and reduce per-chunk statistics on
# the cluster without materialising the data (install ``skcalib[dask]``).
# Every ``n_jobs`` path — bootstrap resamples, cross-fitting folds, the
# perturbation-scale search — goes through :class:`joblib.Parallel`, so
# ``with joblib.parallel_backend("dask"):`` sends it to a dask cluster.
try:
    import dask.array as da
except ImportError:
    print("dask is not installed; skipping the dask part")
else:
    y_dask = da.from_array(y_all, chunks=500_000)
    p_dask = da.from_array(p_all, chunks=500_000)
    print(f"dask smECE:      {smooth_ece(y_dask, p_dask):.6f}")
