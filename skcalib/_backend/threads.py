"""BLAS on one thread, for work whose parallelism is elsewhere or too small.

Products of a few hundred entries, or products already run by several
workers, only lose to BLAS's own threads: those oversubscribe the cores (on
a busy machine a 100 x 100 solve took 100 times as long). The thread pools
are found once per process (finding them takes milliseconds, as long as a
small fit).
"""

from __future__ import annotations

from threadpoolctl import ThreadpoolController

_CONTROLLER = []


def one_blas_thread():
    """Context manager: BLAS limited to one thread, restored on exit."""
    if not _CONTROLLER:
        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0].limit(limits=1, user_api="blas")
