"""Karhunen–Loève bases against analytic eigenpairs and independent linear algebra."""

import jax.numpy as jnp
import numpy as np
import pytest

from dpaudit.model.spaces import (
    BrownianMotion,
    CallableKernel,
    Exponential,
    Gaussian,
    Matern,
    brownian_motion_basis,
    kl_basis,
    spectral_basis,
    uniform_grid,
)


def l2_distance_up_to_sign(grid, f, g):
    w = np.asarray(grid.weights)
    return min(np.sqrt(np.sum(w * (f - s * g) ** 2)) for s in (1.0, -1.0))


def test_brownian_motion_numerical_eigenpairs_match_analytic():
    """Acceptance: 1000-point grid, first 10 eigenvalues within 0.5%, eigenfunctions 1e-2."""
    grid = uniform_grid(1000)
    numeric = kl_basis(BrownianMotion(), grid, n_components=10)
    j = np.arange(1, 11) - 0.5
    analytic = 1.0 / (j * np.pi) ** 2
    np.testing.assert_allclose(numeric.eigenvalues, analytic, rtol=5e-3)
    t = np.asarray(grid.points[:, 0])
    for k in range(10):
        exact = np.sqrt(2) * np.sin(j[k] * np.pi * t)
        assert l2_distance_up_to_sign(grid, np.asarray(numeric.eigenfunctions[:, k]), exact) < 1e-2


def test_brownian_motion_on_trapezoid_grid_with_endpoints():
    grid = uniform_grid(801, rule="trapezoid")
    numeric = kl_basis(BrownianMotion(), grid, n_components=5)
    j = np.arange(1, 6) - 0.5
    np.testing.assert_allclose(numeric.eigenvalues, 1.0 / (j * np.pi) ** 2, rtol=5e-3)


def test_quadrature_normalisation_divides_gram_eigenvalues_by_m():
    """On the midpoint grid: lambda_k = mu_k / m and phi_k = sqrt(m) v_k.

    (docs/paper-errors.md#lr-discretization-scale)
    """
    m = 200
    grid = uniform_grid(m)
    kernel = Matern(1.5, 0.1)
    gram = np.asarray(kernel(grid.points))
    mu, v = np.linalg.eigh(gram)
    mu, v = mu[::-1][:20], v[:, ::-1][:, :20]
    basis = kl_basis(kernel, grid, n_components=20)
    np.testing.assert_allclose(basis.eigenvalues, mu / m, rtol=1e-10)
    for k in range(20):
        phi = np.asarray(basis.eigenfunctions[:, k])
        assert min(np.abs(phi - s * np.sqrt(m) * v[:, k]).max() for s in (1, -1)) < 1e-8
    # orthonormal in L2: sum_a (1/m) phi_k phi_l = delta_kl
    ef = np.asarray(basis.eigenfunctions)
    np.testing.assert_allclose(ef.T @ ef / m, np.eye(20), atol=1e-10)


def test_two_dimensional_tensor_kernel_has_product_eigenvalues():
    """exp(-||x-y||_1/rho) on [0,1]^2 is a tensor product: eigenvalues multiply."""
    n = 24
    one = kl_basis(Exponential(0.3), uniform_grid(n), rtol=0.0)
    two = kl_basis(Exponential(0.3), uniform_grid(n, dim=2), n_components=30)
    products = np.sort(np.outer(one.eigenvalues, one.eigenvalues).ravel())[::-1][:30]
    np.testing.assert_allclose(two.eigenvalues, products, rtol=1e-9)
    assert two.eigenfunctions.shape == (n * n, 30)


def test_truncation_by_count_and_by_relative_tolerance():
    basis = kl_basis(Gaussian(0.1), uniform_grid(300))
    lam = np.asarray(basis.eigenvalues)
    assert np.all(lam > 1e-10 * lam[0]) and np.all(np.diff(lam) <= 0)
    assert basis.n_components < 300  # the Gaussian kernel's spectrum falls below round-off
    assert basis.truncate(5).n_components == 5
    kept = basis.truncate(rtol=1e-3)
    assert np.all(kept.eigenvalues > 1e-3 * lam[0])
    assert kept.n_components == np.count_nonzero(lam > 1e-3 * lam[0])
    with pytest.raises(ValueError, match=r"outside 1\.\."):
        basis.truncate(basis.n_components + 1)
    with pytest.raises(ValueError, match="exceeds the"):
        kl_basis(Gaussian(0.1), uniform_grid(300), n_components=290)


def test_projection_round_trip_and_residual():
    grid = uniform_grid(64)
    full = kl_basis(Exponential(0.2), grid, rtol=0.0)
    assert full.n_components == 64
    f = np.sin(3 * np.asarray(grid.points[:, 0])) + np.asarray(grid.points[:, 0]) ** 2
    np.testing.assert_allclose(full.reconstruct(full.project(f)), f, atol=1e-12)
    small = full.truncate(8)
    residual = np.asarray(small.residual(f))
    # the residual is orthogonal to every retained eigenfunction
    np.testing.assert_allclose(small.project(residual), np.zeros(8), atol=1e-12)
    assert np.abs(residual).max() > 1e-4


def test_power_operator_is_not_the_pointwise_power_of_the_kernel():
    grid = uniform_grid(80)
    kernel = Matern(1.5, 0.2)
    full = kl_basis(kernel, grid, rtol=0.0)
    np.testing.assert_allclose(full.power(2.0).eigenvalues, np.asarray(full.eigenvalues) ** 2)
    gram = np.asarray(kernel(grid.points))
    # C^2(s, t) = int C(s, u) C(u, t) du, by the grid quadrature
    operator_square = gram @ (gram / grid.size)
    np.testing.assert_allclose(full.covariance(2.0), operator_square, atol=1e-12)
    assert np.abs(np.asarray(full.covariance(2.0)) - gram**2).max() > 0.1
    np.testing.assert_allclose(full.covariance(), gram, atol=1e-12)
    assert float(full.trace()) == pytest.approx(np.trace(gram) / grid.size, rel=1e-12)


def test_analytic_and_spectral_bases():
    grid = uniform_grid(128)
    bm = brownian_motion_basis(grid, 20)
    # exactly orthonormal on the midpoint grid (DST-IV)
    ef = np.asarray(bm.eigenfunctions)
    np.testing.assert_allclose(ef.T @ ef / 128, np.eye(20), atol=1e-12)
    np.testing.assert_allclose(bm.covariance(), bm.covariance().T)

    def cosine(t):
        return np.sqrt(2) * np.cos(np.pi * np.arange(1, 6) * t)

    sb = spectral_basis(1.0 / np.arange(1, 6) ** 2, cosine, grid)
    np.testing.assert_allclose(sb.project(sb.eigenfunctions[:, 2]), np.eye(5)[2], atol=1e-12)


def test_user_kernel_and_precomputed_matrix_give_the_same_basis():
    grid = uniform_grid(50)
    k = CallableKernel(lambda s, t: jnp.exp(-jnp.sum(jnp.abs(s - t)) / 0.3))
    a = kl_basis(k, grid, n_components=10)
    b = kl_basis(np.asarray(Exponential(0.3)(grid.points)), grid, n_components=10)
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=1e-12)
    np.testing.assert_allclose(a.eigenfunctions, b.eigenfunctions, atol=1e-9)


class TestBadInput:
    grid = uniform_grid(20)

    def test_asymmetric_matrix(self):
        gram = np.array(Exponential(0.3)(self.grid.points))
        gram[0, 1] += 0.1
        with pytest.raises(ValueError, match="not symmetric"):
            kl_basis(gram, self.grid)

    def test_not_positive_semidefinite(self):
        gram = np.asarray(Exponential(0.3)(self.grid.points)) - 0.5 * np.eye(20)
        with pytest.raises(ValueError, match="not positive semi-definite"):
            kl_basis(gram, self.grid)
        bad = CallableKernel(lambda s, t: jnp.cos(5 * jnp.sum(s - t)) - 0.5)
        with pytest.raises(ValueError, match="not positive semi-definite"):
            kl_basis(bad, self.grid)

    def test_nan_in_kernel(self):
        gram = np.array(Exponential(0.3)(self.grid.points))
        gram[3, 3] = np.nan
        with pytest.raises(ValueError, match="NaN or infinite"):
            kl_basis(gram, self.grid)

    def test_more_components_than_grid_points(self):
        with pytest.raises(ValueError, match="grid size"):
            kl_basis(Exponential(0.3), self.grid, n_components=21)
        with pytest.raises(ValueError, match=r"1\.\.20"):
            brownian_motion_basis(self.grid, 25)

    def test_grid_basis_mismatch(self):
        basis = kl_basis(Exponential(0.3), self.grid, n_components=5)
        with pytest.raises(ValueError, match="one value per grid point"):
            basis.project(np.zeros(21))
        with pytest.raises(ValueError, match="one per component"):
            basis.reconstruct(np.zeros(6))
        with pytest.raises(ValueError, match=r"expected \(20, 20\)"):
            kl_basis(np.eye(19), self.grid)

    def test_nan_function_values(self):
        basis = kl_basis(Exponential(0.3), self.grid, n_components=5)
        with pytest.raises(ValueError, match="NaN or infinite"):
            basis.project(np.full(20, np.inf))

    def test_spectral_basis_checks(self):
        ones = np.ones((20, 2))
        with pytest.raises(ValueError, match="not orthonormal"):
            spectral_basis([1.0, 0.5], ones, self.grid)
        with pytest.raises(ValueError, match="non-increasing"):
            spectral_basis([0.5, 1.0], ones, self.grid)
        with pytest.raises(ValueError, match="must be > 0"):
            spectral_basis([1.0, -0.5], ones, self.grid)
        with pytest.raises(ValueError, match=r"expected \(20, 3\)"):
            spectral_basis([1.0, 0.5, 0.1], ones, self.grid)

    def test_bad_grid(self):
        with pytest.raises(ValueError, match="positive integer"):
            uniform_grid(0)
        with pytest.raises(ValueError, match="one per axis"):
            uniform_grid((3, 4), dim=1)
        with pytest.raises(ValueError, match="Brownian motion"):
            brownian_motion_basis(uniform_grid(4, dim=2), 2)
        with pytest.raises(ValueError, match=r"rtol must lie in \[0, 1\)"):
            kl_basis(Exponential(0.3), self.grid, rtol=2.0)
