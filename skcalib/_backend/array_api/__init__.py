"""Numerics on any supported array-API namespace (NumPy, PyTorch, JAX, strict).

* :mod:`.namespace` -- what the standard lacks, per namespace (``lgamma``,
  detached host copies, JAX tracing) and helpers that also run on plain
  ``numpy`` 1.24;
* :mod:`.tasks` -- the binary reductions of a probability matrix
  (top-label, one-vs-rest), differentiable in the scores;
* :mod:`.smooth` -- SmoothECE at a fixed bandwidth: linear binning of the
  residuals and the reflected Gaussian smoother, differentiable almost
  everywhere in the scores;
* :mod:`.binned` -- the per-bin sums of the binned calibration error.

The ECE-KDE engine, which also runs on these namespaces, is
:mod:`skcalib._backend.kde`.
"""
