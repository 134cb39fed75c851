"""kl_basis decomposes on one BLAS thread: the same bits whatever the process's thread count
(a Ray worker started with OMP_NUM_THREADS=1 builds the driver's basis); a kernel's basis on a
grid is decomposed once per process."""

import numpy as np
import threadpoolctl

from dpaudit.model.spaces import Matern, kl_basis, uniform_grid


def _basis_bits(threads: int) -> tuple[bytes, bytes]:
    grid = uniform_grid(400)
    matrix = np.asarray(Matern(nu=1.5, lengthscale=0.2)(grid.points, grid.points))
    with threadpoolctl.threadpool_limits(threads, user_api="blas"):
        basis = kl_basis(matrix, grid, rtol=1e-12)  # a matrix: decomposed on every call
    return np.asarray(basis.eigenvalues).tobytes(), np.asarray(basis.eigenfunctions).tobytes()


def test_the_basis_bits_do_not_depend_on_the_thread_count():
    assert _basis_bits(1) == _basis_bits(2)


def test_a_basis_is_decomposed_once_per_kernel_and_grid():
    kernel, grid = Matern(nu=1.5, lengthscale=0.25), uniform_grid(64)
    first = kl_basis(kernel, grid, rtol=1e-9)
    assert kl_basis(Matern(nu=1.5, lengthscale=0.25), uniform_grid(64), rtol=1e-9) is first
    assert kl_basis(kernel, grid, rtol=1e-8) is not first  # another truncation
    assert kl_basis(Matern(nu=1.5, lengthscale=0.3), grid, rtol=1e-9) is not first
    matrix = np.asarray(kernel(grid.points, grid.points))
    assert kl_basis(matrix, grid, rtol=1e-9) is not kl_basis(matrix, grid, rtol=1e-9)
