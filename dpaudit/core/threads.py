"""Dense linear algebra on one BLAS thread.

Small eigenproblems and solves (a Karhunen-Loeve basis on a grid of a few hundred to a few
thousand points, L-BFGS-B's algebra on a few parameters) are faster on one OpenBLAS thread
than on several, and much faster on a loaded machine: a multi-threaded OpenBLAS makes its
threads meet at every panel, and a thread waiting for a busy core stalls the others
(``benchmarks/blas_threads.py``: ``eigh`` at 256 / 512 / 1024 points, load 20 on 2 cores,
39x / 8x / 10x slower in wall time on 2 threads than on 1). One thread also sums in one
order whatever the process's thread count, so a Ray worker computes the driver's bits.
"""

from __future__ import annotations

import functools

import threadpoolctl

__all__ = ["one_blas_thread"]


@functools.lru_cache(maxsize=1)
def _controller() -> threadpoolctl.ThreadpoolController:
    return threadpoolctl.ThreadpoolController()  # scans the loaded libraries once


def one_blas_thread():
    """A context manager: the BLAS libraries of this process use one thread inside it.

    Returns:
        The ``threadpoolctl`` limiter (use it in a ``with`` statement).
    """
    return _controller().limit(limits=1, user_api="blas")
