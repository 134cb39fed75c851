"""kl_basis decomposes on one BLAS thread: the same bits whatever the process's thread count
(a Ray worker started with OMP_NUM_THREADS=1 builds the driver's basis)."""

import numpy as np
import threadpoolctl

from dpaudit.model.spaces import Matern, kl_basis, uniform_grid


def _basis_bits(threads: int) -> tuple[bytes, bytes]:
    with threadpoolctl.threadpool_limits(threads, user_api="blas"):
        basis = kl_basis(Matern(nu=1.5, lengthscale=0.2), uniform_grid(400), rtol=1e-12)
    return np.asarray(basis.eigenvalues).tobytes(), np.asarray(basis.eigenfunctions).tobytes()


def test_the_basis_bits_do_not_depend_on_the_thread_count():
    assert _basis_bits(1) == _basis_bits(2)
