"""The ECE-KDE engine, written once against the array-API standard.

The estimator of Popordanoska, Sayer & Blaschko (2022) is defined here for
any supported namespace (NumPy, PyTorch, JAX, array-api-strict; what the
standard lacks comes from :mod:`skcalib._backend.array_api.namespace`), and
the metric and the differentiable loss read their numbers from it:

* :mod:`.statistics` -- the Dirichlet log-kernel, the smoother statistics
  from the row sums of the kernel weights (leave-one-out ratio, effective
  sample size, the pair U-statistics) and the per-sample error terms;
* :mod:`.dense` -- those row sums for blocks of rows formed densely, with
  no in-place writes, so that autograd (torch, JAX) differentiates them,
  and the leave-one-out error terms of a sample.

The NumPy metric forms the same row sums by streamed tiles
(:mod:`skcalib._backend.smoothing`, single-precision exponentials from
2**15 columns) and finishes them with :func:`.statistics.finish_statistics`.
"""
