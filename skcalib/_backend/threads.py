"""Threads: how many the backend's own pools run, and BLAS on one thread.

The backend's own thread pools (the sech sampler's) follow the settings a
scikit-learn user already has: an explicit ``n_jobs``, else the ``n_jobs``
of an active ``joblib.parallel_config`` (or ``parallel_backend``), else a
default that no native thread pool's limit may exceed, so that
``threadpoolctl.threadpool_limits(limits=k)`` (and ``OMP_NUM_THREADS`` or
``OPENBLAS_NUM_THREADS``) caps them too, as it caps scikit-learn's OpenMP
loops.

BLAS on one thread is for products of a few hundred entries, or products
already run by several workers: BLAS's own threads only oversubscribe the
cores there (on a busy machine a 100 x 100 solve took 100 times as long).

The native thread pools are found once per process, when first needed
(finding them reads the process's map of loaded libraries: milliseconds);
their limits are read again at every call (microseconds).
"""

from __future__ import annotations

import os
import sys

_CONTROLLER = []


def _controller():
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


def one_blas_thread():
    """Context manager: BLAS limited to one thread, restored on exit."""
    return _controller().limit(limits=1, user_api="blas")


def usable_cpus():
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


def native_thread_limit():
    """The fewest threads any native thread pool (BLAS, OpenMP) is allowed
    now, or None if there is none."""
    counts = [lib.num_threads for lib in _controller().lib_controllers]
    counts = [c for c in counts if c]
    return min(counts) if counts else None


def _joblib_n_jobs():
    """``n_jobs`` of an active joblib configuration, or None."""
    if "joblib" not in sys.modules:
        # No configuration can be active without joblib having been imported;
        # importing it here would cost a tenth of a second.
        return None
    from joblib.parallel import get_active_backend

    return get_active_backend()[1]


def worker_threads(n_jobs=None, default_max=None):
    """Threads for a pool of the backend, counting the calling thread.

    Parameters
    ----------
    n_jobs : int or None
        As in scikit-learn: a positive count, or ``-1`` for all usable CPUs
        (``-2`` all but one, ...). ``None``: the ``n_jobs`` of an active
        joblib configuration if one sets it, else ``min(default_max, usable
        CPUs, the fewest threads any native pool is allowed)``.
    default_max : int or None
        Largest default.

    Returns
    -------
    int, at least 1
    """
    if n_jobs is None:
        n_jobs = _joblib_n_jobs()
    if n_jobs is not None:
        n_jobs = int(n_jobs)
        return max(1, n_jobs if n_jobs > 0 else usable_cpus() + 1 + n_jobs)
    n = usable_cpus()
    if default_max is not None:
        n = min(n, default_max)
    if n > 1:
        limit = native_thread_limit()
        if limit is not None:
            n = min(n, limit)
    return max(1, n)
