"""What the array-API standard lacks, per namespace.

Namespaces are told apart by name (scikit-learn's vendored
``array_api_compat`` wraps NumPy and PyTorch); nothing here imports torch or
JAX unless an array of theirs is already in hand.
"""

from __future__ import annotations

import math

import numpy as np

# Namespaces the engine is tested on, by the name :func:`namespace_name` gives.
SUPPORTED = ("numpy", "torch", "jax.numpy", "array_api_strict")

_COMPAT_PREFIXES = ("sklearn.externals.array_api_compat.", "array_api_compat.")


def namespace_name(xp):
    """``"numpy"``, ``"torch"``, ``"jax.numpy"``, ... whether wrapped or not."""
    name = xp.__name__
    for prefix in _COMPAT_PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def check_supported(xp, caller):
    """The name of ``xp`` if the engine supports it, else a ``TypeError``."""
    name = namespace_name(xp)
    if name not in SUPPORTED:
        raise TypeError(
            f"{caller} computes on arrays of NumPy, PyTorch, JAX or "
            f"array-api-strict; got arrays of the namespace {name!r}. Convert "
            "them to one of these first."
        )
    return name


def lgamma(x, xp):
    """``log Gamma(x)`` elementwise, differentiable where the namespace is.

    NumPy uses ``scipy.special.gammaln``, PyTorch
    ``torch.special.gammaln`` and JAX ``jax.scipy.special.gammaln`` (both
    with their gradients, the digamma function); other namespaces get
    :func:`lgamma_standard`, written with the standard's functions only.
    """
    name = namespace_name(xp)
    if name == "numpy":
        from scipy.special import gammaln

        return xp.asarray(gammaln(x))
    if name == "torch":
        import torch

        return torch.special.gammaln(x)
    if name == "jax.numpy":
        from jax.scipy.special import gammaln

        return gammaln(x)
    return lgamma_standard(x, xp)


# Stirling's series for log Gamma(z) - [(z - 1/2) log z - z + log(2 pi) / 2],
# coefficients B_2k / (2k (2k - 1)); from z >= 11 on, the first term left out
# (3617 / (122400 z^15)) is below 1e-17 and the series is exact to rounding.
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)
_STIRLING_FROM = 11.0
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def lgamma_standard(x, xp):
    """``log Gamma(x)`` for ``x >= 1`` with the array-API standard's functions.

    Arguments below 11 are shifted up by ``log Gamma(x) = log Gamma(x + 10)
    - sum_{k < 10} log(x + k)``, then Stirling's series with seven terms
    gives ``log Gamma`` to a few units in the last place (the Dirichlet
    kernel's arguments are all at least 1).
    """
    small = x < _STIRLING_FROM
    z = xp.where(small, x + 10.0, x)
    shift = xp.zeros_like(x)
    for k in range(10):
        shift = shift + xp.where(small, xp.log(x + float(k)), xp.zeros_like(x))
    inv = 1.0 / z
    inv2 = inv * inv
    series = xp.zeros_like(x)
    for coef in reversed(_STIRLING):
        series = series * inv2 + coef
    series = series * inv
    return (z - 0.5) * xp.log(z) - z + _HALF_LOG_2PI + series - shift


def is_traced(x):
    """``x`` is a JAX tracer (under ``jax.jit``): its values are unknown."""
    if not type(x).__module__.startswith("jax"):
        return False
    import jax

    return isinstance(x, jax.core.Tracer)


def has_values(x):
    """The values of ``x`` can be read now (not inside a ``jax.jit`` trace)."""
    if not is_traced(x):
        return True
    try:
        x.__array__()
    except Exception:
        return False
    return True


def detach(x, xp):
    """``x`` cut from the autograd graph (a no-op for NumPy and the like)."""
    name = namespace_name(xp)
    if name == "torch":
        return x.detach()
    if name == "jax.numpy":
        import jax

        return jax.lax.stop_gradient(x)
    return x


def to_numpy(x, xp):
    """A detached NumPy copy of ``x`` on the host."""
    name = namespace_name(xp)
    if name == "torch":
        return x.detach().cpu().numpy()
    if name == "array_api_strict":
        return np.asarray(xp.asarray(x, device=xp.Device("CPU_DEVICE")))
    if name == "jax.numpy":
        import jax

        return np.asarray(jax.device_get(jax.lax.stop_gradient(x)))
    return np.asarray(x)


def contiguous(x, xp):
    """``x`` laid out contiguously where the namespace has strides (a column
    of a PyTorch matrix is copied: its search functions warn otherwise)."""
    if namespace_name(xp) == "torch":
        return x.contiguous()
    return x


def as_zero_d(x, xp):
    """``x`` as a 0-d array (NumPy's reductions return scalars)."""
    if namespace_name(xp) == "numpy":
        return np.asarray(x)
    return x


def device_of(x):
    """The device of the array ``x`` (None for arrays that have none, such as
    JAX arrays being traced: new arrays then go to the default device, as
    ``array_api_compat.device`` has it)."""
    return getattr(x, "device", None)


def from_numpy(a, xp, device):
    """``a`` (host data) as an array of ``xp`` on ``device``."""
    a = np.asarray(a)
    if not a.flags.writeable:
        # PyTorch warns on (and cannot protect) read-only memory
        a = a.copy()
    return xp.asarray(a, device=device)


def concat(arrays, xp, axis=0):
    """``xp.concat`` (``numpy.concatenate`` before NumPy 2)."""
    if hasattr(xp, "concat"):
        return xp.concat(arrays, axis=axis)
    return xp.concatenate(arrays, axis=axis)


def astype(x, dtype, xp):
    """``xp.astype`` (the array method before NumPy 2)."""
    if hasattr(xp, "astype"):
        return xp.astype(x, dtype)
    return x.astype(dtype)


def arange(n, like, xp):
    """``xp.arange(n)`` (integers) on the device of the array ``like``."""
    if namespace_name(xp) == "numpy":
        return xp.arange(n)
    return xp.arange(n, device=device_of(like))


def full(shape, value, like, xp):
    """An array of ``value`` of the dtype and device of the array ``like``."""
    if namespace_name(xp) == "numpy":
        return xp.full(shape, value, dtype=like.dtype)
    return xp.full(shape, value, dtype=like.dtype, device=device_of(like))


def diagonal_mask(n_rows, n_columns, offset, like, xp):
    """Boolean ``(n_rows, n_columns)`` mask of the diagonal ``j = i + offset``
    on the device of ``like``."""
    if namespace_name(xp) == "numpy":
        return xp.eye(n_rows, n_columns, k=offset, dtype=bool)
    return xp.eye(n_rows, n_columns, k=offset, dtype=xp.bool, device=device_of(like))


def one_hot(index, n_columns, dtype, xp):
    """``(n, n_columns)`` indicator rows of the integer ``index``."""
    hit = index[:, None] == arange(n_columns, index, xp)[None, :]
    return astype(hit, dtype, xp)


def pick(A, index, xp):
    """``A[i, index[i]]`` for each row ``i`` (a gather: gradients reach one
    entry per row only)."""
    return xp.take_along_axis(A, index[:, None], axis=1)[:, 0]
