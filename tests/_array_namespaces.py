"""The array namespaces the losses and the array-API metrics are tested on.

``array(name, a)`` puts the NumPy array ``a`` into the namespace ``name``
(array-api-strict on its non-default ``device1``, to check that results stay
on the input's device); a namespace that is not installed skips the test.
"""

import numpy as np
import pytest

# JAX compiles every new operation and shape on first use (seconds each on a
# busy machine), so it is left out of the broad parametrisations; a few tests
# of their own run it (most in the slow set).
NAMESPACES = ["numpy", "array_api_strict", "torch"]
# Framework namespaces: the metrics compute in them under array_api_dispatch.
FRAMEWORKS = ["array_api_strict", "torch"]


def module(name):
    """The namespace's package, or a skip."""
    if name == "numpy":
        return np
    if name == "jax":
        jax = pytest.importorskip("jax")
        # float64 arrays (JAX computes in float32 otherwise)
        jax.config.update("jax_enable_x64", True)
        return jax
    return pytest.importorskip(name)


def array(name, a, *, requires_grad=False):
    """``a`` as an array of the namespace ``name`` (same dtype)."""
    a = np.asarray(a)
    mod = module(name)
    if name == "numpy":
        return a.copy()
    if name == "array_api_strict":
        return mod.asarray(a, device=mod.Device("device1"))
    if name == "torch":
        return mod.tensor(a, requires_grad=requires_grad)
    return mod.numpy.asarray(a)


def to_numpy(x):
    """A NumPy copy of an array of any of the namespaces."""
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    if type(x).__module__.startswith("array_api_strict"):
        import array_api_strict as xs

        return np.asarray(xs.asarray(x, device=xs.Device("CPU_DEVICE")))
    return np.asarray(x)


def device(x):
    """The device of an array of any of the namespaces (None for NumPy)."""
    if isinstance(x, np.ndarray | np.generic):
        return None
    return x.device
