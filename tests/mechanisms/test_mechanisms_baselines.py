"""Baselines: Gaussian mechanism on KL coefficients and the Bernstein mechanism (1-D and 2-D).

Oracles: numpy projections, scipy.interpolate (np.interp, RegularGridInterpolator,
BPoly) for the lattice reading and the Bernstein polynomial, scipy.stats for the
noise laws and densities, the exact Gaussian privacy profile, and the Laplace
privacy loss computed by hand.
"""

import math

import jax
import numpy as np
import pytest
import scipy.interpolate
import scipy.stats
from conftest import TEST_FAILURE_RATE
from curve_test_support import (
    PAIR_KINDS,
    assert_summary_refuses_malformed,
    neighbour_draws,
    replace_first_record,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
from dpaudit.model.noise import gaussian_delta
from dpaudit.model.spaces import Matern, custom_grid, kl_basis, uniform_grid
from dpaudit.testing import Box, L2Ball, SearchBudget, worst_neighbours
from mechanisms.mrs.baselines import (
    bernstein_basis_matrix,
    bernstein_lattice,
    bernstein_mean,
    bernstein_mean_2d_mechanism,
    bernstein_mean_mechanism,
    bernstein_mean_sensitivity,
    bernstein_polynomial,
    enforce_sup_bound,
    gaussian_kl_coefficients,
    gaussian_kl_coefficients_mechanism,
    gaussian_kl_coefficients_sensitivity,
    lattice_interpolation_matrix,
)

GRID = uniform_grid(40)
T = np.asarray(GRID.points[:, 0])
BASIS = kl_basis(Matern(1.5, 0.2), GRID, n_components=10)
GRID_2D = uniform_grid((9, 7), dim=2)
#: Dataset size of most tests (one JAX compilation per shape keeps the file fast).
N = 12
Z_ONE_SIDED = scipy.stats.norm.isf


def l2_curves(rng, n, tau, grid=GRID):
    """Curves with quadrature L2 norms uniform in (0, tau]."""
    x = rng.normal(size=(n, grid.size)) + np.sin(np.pi * rng.integers(1, 5, size=(n, 1)) * T)
    norms = np.sqrt(np.sum(np.asarray(grid.weights) * x**2, axis=1))
    return x * (tau * rng.uniform(0.05, 1.0, size=n) / norms)[:, None]


def sup_curves(rng, n, tau, size=GRID.size):
    """Curves with values in [-tau, tau]."""
    return tau * rng.uniform(-1.0, 1.0, size=(n, size))


# ------------------------------------------------------ Gaussian on coefficients


def test_gaussian_summary_is_the_projection_of_the_sample_mean():
    data = l2_curves(np.random.default_rng(0), N, 1.0)
    w, phi = np.asarray(GRID.weights), np.asarray(BASIS.eigenfunctions)
    expected = (data.mean(0) * w) @ phi[:, :4]
    mech = gaussian_kl_coefficients_mechanism(N, 1.0, 0.1, 1.0, n_components=4, basis=BASIS)
    np.testing.assert_allclose(mech.summary(data), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(gaussian_kl_coefficients(data, BASIS)[:4], expected, rtol=1e-12)


@settings(max_examples=30)
@given(**neighbour_draws([1, N], k=st.sampled_from([1, 10]), kind=PAIR_KINDS))
def test_gaussian_l2_sensitivity_holds_and_is_attained(seed, n, tau, k, kind):
    rng = np.random.default_rng(seed)
    data, prime = replace_first_record(l2_curves, rng, n, tau, kind)
    out_of_bound = "clip" if kind == "huge-clipped" else "reject"
    if kind == "eigenfunction":  # tau phi_j against -tau phi_j attains 2 tau / n
        data[0] = tau * np.asarray(BASIS.eigenfunctions[:, rng.integers(k)])
        prime[0] = -data[0]
    elif kind == "huge-clipped":
        data[0] = 1e4 * tau * np.asarray(BASIS.eigenfunctions[:, 0])
        prime[0] = 1e4 * tau * rng.normal(size=GRID.size)
    mech = gaussian_kl_coefficients_mechanism(
        n, 1.0, 0.1, tau, n_components=k, basis=BASIS, out_of_bound=out_of_bound
    )
    assert mech.claim.sensitivity == pytest.approx(2 * tau / n, rel=1e-15)
    distance = float(mech.distance(data, prime))
    assert distance <= mech.claim.sensitivity * (1 + 1e-12)
    if kind == "eigenfunction":
        assert distance == pytest.approx(mech.claim.sensitivity, rel=1e-9)


def test_gaussian_worst_neighbour_search_finds_the_bound_and_no_more():
    mech = gaussian_kl_coefficients_mechanism(N, 1.0, 0.1, 1.0, n_components=5, basis=BASIS)
    worst = worst_neighbours(
        mech, record_space=L2Ball(1.0, GRID), n=N, budget=SearchBudget(restarts=2, steps=40)
    )
    assert 0.9 < worst.ratio <= 1 + 1e-9


@pytest.mark.parametrize("calibration", ["classical", "analytic"])
def test_gaussian_noise_law_density_and_calibration(calibration):
    epsilon, delta, tau, k = 0.7, 1e-3, 2.0, 6
    mech = gaussian_kl_coefficients_mechanism(
        N, epsilon, delta, tau, n_components=k, basis=BASIS, calibration=calibration
    )
    sigma, sensitivity = mech.params["sigma"], 2 * tau / N
    if calibration == "classical":  # by hand: sqrt(2 log(2/delta)) (2 tau / n) / epsilon
        assert sigma == pytest.approx(math.sqrt(2 * math.log(2 / delta)) * sensitivity / epsilon)
        assert gaussian_delta(epsilon, sensitivity / sigma) <= delta
    else:
        assert float(gaussian_delta(epsilon, sensitivity / sigma)) == pytest.approx(delta, rel=1e-6)
    data = l2_curves(np.random.default_rng(1), N, tau)
    loc = np.asarray(mech.summary(data))
    draws = np.asarray(mech.sample(data, jax.random.key(2), 10_000)) - loc
    for column in draws.T / sigma:
        assert scipy.stats.kstest(column, "norm").pvalue > TEST_FAILURE_RATE / (2 * k)
    x = loc + sigma * np.random.default_rng(3).normal(size=(4, k))
    np.testing.assert_allclose(
        mech.release_log_prob(data, x), scipy.stats.norm(loc, sigma).logpdf(x).sum(-1), rtol=1e-12
    )


def test_gaussian_bad_inputs():
    data = l2_curves(np.random.default_rng(4), N, 1.0)
    mech = gaussian_kl_coefficients_mechanism(N, 1.0, 0.1, 1.0, n_components=3, basis=BASIS)
    far = data.copy()
    far[2] *= 2.0 / np.sqrt(np.sum(np.asarray(GRID.weights) * far[2] ** 2))
    with pytest.raises(ValueError, match="curve 2 has L2 norm 2 > tau = 1"):
        mech.summary(far)
    with pytest.raises(ValueError, match=r"must be \(n, 40\)"):
        mech.summary(data[:, 1:])
    with pytest.raises(ValueError, match="built for n = 12"):
        mech.summary(data[:5])
    with pytest.raises(ValueError, match=r"epsilon <= 1.*calibration='analytic'"):
        gaussian_kl_coefficients_mechanism(N, 1.5, 0.1, 1.0, basis=BASIS)
    with pytest.raises(ValueError, match=r"n_components=11 is outside 1\.\.10"):
        gaussian_kl_coefficients_mechanism(N, 1.0, 0.1, 1.0, n_components=11, basis=BASIS)
    with pytest.raises(ValueError, match="n_components must be a positive integer"):
        gaussian_kl_coefficients_mechanism(N, 1.0, 0.1, 1.0, n_components=0, basis=BASIS)
    with pytest.raises(ValueError, match="tau must be a finite number > 0"):
        gaussian_kl_coefficients_sensitivity(N, -1.0)
    analytic = gaussian_kl_coefficients_mechanism(
        N, 4.0, 1e-5, 1.0, basis=BASIS, calibration="analytic"
    )
    assert analytic.claim.epsilon == 4.0


# ------------------------------------------------------------ Bernstein: pieces


def test_lattice_and_interpolation_against_numpy_and_scipy():
    lattice = bernstein_lattice(4)[:, 0]
    np.testing.assert_array_equal(lattice, [0.0, 0.25, 0.5, 0.75, 1.0])
    x = np.random.default_rng(5).normal(size=(3, GRID.size))
    a = np.asarray(lattice_interpolation_matrix(GRID, 4))
    # np.interp extends constantly beyond the outermost grid points, as documented
    expected = np.stack([np.interp(lattice, T, row) for row in x])
    np.testing.assert_allclose(x @ a.T, expected, rtol=1e-13)
    assert np.all(a >= 0) and np.allclose(a.sum(1), 1.0)
    # a grid through the lattice points reads them exactly
    trapezoid = uniform_grid(21, rule="trapezoid")
    values = np.cos(3 * np.asarray(trapezoid.points[:, 0]))
    np.testing.assert_allclose(
        np.asarray(lattice_interpolation_matrix(trapezoid, 5)) @ values, values[::4], rtol=1e-13
    )
    # 2-D: bilinear on the tensor grid (RegularGridInterpolator on clipped points)
    axes = [np.unique(np.asarray(GRID_2D.points[:, i])) for i in range(2)]
    f = np.random.default_rng(6).normal(size=GRID_2D.size)
    lattice_2d = bernstein_lattice(3, 2)
    clipped = np.stack([np.clip(lattice_2d[:, i], axes[i][0], axes[i][-1]) for i in range(2)], 1)
    oracle = scipy.interpolate.RegularGridInterpolator(axes, f.reshape(9, 7))(clipped)
    np.testing.assert_allclose(lattice_interpolation_matrix(GRID_2D, 3) @ f, oracle, rtol=1e-12)


@pytest.mark.parametrize("degree", [1, 5, 20, 60])
def test_bernstein_polynomial_against_scipy(degree):
    rng = np.random.default_rng(degree)
    c = rng.normal(size=degree + 1)
    x = np.concatenate([[0.0, 1.0], rng.uniform(size=30)])
    oracle = scipy.interpolate.BPoly(c[:, None], [0.0, 1.0])(x)
    np.testing.assert_allclose(bernstein_polynomial(c, x, degree), oracle, rtol=1e-9, atol=1e-12)
    binomial = scipy.stats.binom.pmf(np.arange(degree + 1), degree, x[:, None])
    np.testing.assert_allclose(bernstein_basis_matrix(x, degree), binomial, rtol=1e-9, atol=1e-300)
    # linear precision: the lattice points' coordinates are reproduced exactly
    np.testing.assert_allclose(
        bernstein_polynomial(bernstein_lattice(degree)[:, 0], x, degree), x, atol=1e-12
    )


def test_bernstein_polynomial_in_2d_is_the_tensor_product():
    rng = np.random.default_rng(7)
    k = 4
    c = rng.normal(size=(k + 1) ** 2)
    points = rng.uniform(size=(10, 2))
    b1 = scipy.stats.binom.pmf(np.arange(k + 1), k, points[:, :1])
    b2 = scipy.stats.binom.pmf(np.arange(k + 1), k, points[:, 1:])
    oracle = np.einsum("pi,pj,ij->p", b1, b2, c.reshape(k + 1, k + 1))
    np.testing.assert_allclose(bernstein_polynomial(c, points, k), oracle, rtol=1e-12)


def test_bernstein_approximation_error_of_the_noiseless_mean():
    """|B_k f - f| <= ||f''||_inf x (1 - x) / (2k): the post-processing reads a smooth mean right."""
    k = 20
    grid = uniform_grid(401, rule="trapezoid")
    t = np.asarray(grid.points[:, 0])
    curves = 0.5 * np.sin(np.pi * t)[None, :] * np.array([[0.5], [1.0], [1.5]])
    lattice_values = bernstein_mean(curves, grid, k)
    values = np.asarray(bernstein_polynomial(lattice_values, t, k))
    truth = 0.5 * np.sin(np.pi * t)
    assert np.all(np.abs(values - truth) <= 0.5 * np.pi**2 * t * (1 - t) / (2 * k) + 1e-12)


# --------------------------------------------------------- Bernstein: mechanism


@settings(max_examples=30)
@given(
    **neighbour_draws(
        [1, N],
        degree=st.sampled_from([1, 7, 20]),
        kind=st.sampled_from(["random", "constant", "huge-clipped"]),
    )
)
def test_bernstein_l1_sensitivity_holds_and_is_attained(seed, n, tau, degree, kind):
    rng = np.random.default_rng(seed)
    data, prime = replace_first_record(sup_curves, rng, n, tau, kind)
    out_of_bound = "clip" if kind == "huge-clipped" else "reject"
    if kind == "constant":  # X_1 = tau, X_1' = -tau attains 2 tau (k+1) / n
        data[0], prime[0] = tau, -tau
    elif kind == "huge-clipped":
        data[0] = 1e3 * tau * rng.normal(size=GRID.size)
        prime[0] = -data[0]
    mech = bernstein_mean_mechanism(
        n, 1.0, tau, degree=degree, grid=GRID, out_of_bound=out_of_bound
    )
    assert mech.claim.sensitivity == pytest.approx(2 * tau * (degree + 1) / n, rel=1e-15)
    distance = float(mech.distance(data, prime))
    assert distance <= mech.claim.sensitivity * (1 + 1e-12)
    if kind == "constant":
        assert distance == pytest.approx(mech.claim.sensitivity, rel=1e-12)


def test_bernstein_2d_sensitivity_and_worst_neighbour_search():
    rng = np.random.default_rng(8)
    mech = bernstein_mean_2d_mechanism(N, 1.0, 2.0, degree=3, grid=GRID_2D)
    assert mech.claim.sensitivity == pytest.approx(bernstein_mean_sensitivity(N, 2.0, 3, 2))
    assert mech.claim.sensitivity == pytest.approx(2 * 2.0 * 16 / N)
    data = sup_curves(rng, N, 2.0, GRID_2D.size)
    prime = data.copy()
    prime[0] = sup_curves(rng, 1, 2.0, GRID_2D.size)[0]
    assert float(mech.distance(data, prime)) <= mech.claim.sensitivity
    worst = worst_neighbours(
        mech,
        record_space=Box(-2.0, 2.0, GRID_2D.size),
        n=N,
        budget=SearchBudget(restarts=2, steps=40),
    )
    assert 0.9 < worst.ratio <= 1 + 1e-9


@pytest.mark.parametrize("dim", [1, 2])
def test_bernstein_noise_law_density_and_worst_privacy_loss(dim):
    epsilon, tau, degree = 0.5, 1.5, 4
    if dim == 1:
        grid, mech = GRID, bernstein_mean_mechanism(N, epsilon, tau, degree=degree, grid=GRID)
    else:
        grid = GRID_2D
        mech = bernstein_mean_2d_mechanism(N, epsilon, tau, degree=degree, grid=grid)
    size = (degree + 1) ** dim
    scale = 2 * tau * size / (N * epsilon)  # by hand
    assert mech.params["laplace_scale"] == pytest.approx(scale, rel=1e-15)
    rng = np.random.default_rng(9 + dim)
    data = sup_curves(rng, N, tau, grid.size)
    loc = np.asarray(mech.summary(data))
    draws = (np.asarray(mech.sample(data, jax.random.key(dim), 10_000)) - loc) / scale
    for column in draws.T:
        assert scipy.stats.kstest(column, "laplace").pvalue > TEST_FAILURE_RATE / (2 * size)
    # mean absolute deviation = scale: |Lap(1)| is Exp(1), sd 1
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / 4)
    assert abs(np.abs(draws).mean() - 1) < z / math.sqrt(draws.size)
    # the worst pair: the privacy loss reaches epsilon exactly, and never exceeds it
    data[0], prime = tau, data.copy()
    prime[0] = -tau
    h = np.asarray(mech.summary(data) - mech.summary(prime))
    far = np.asarray(mech.summary(data)) + np.sign(h)
    x = np.concatenate([far[None], loc + 3 * scale * rng.laplace(size=(199, size))])
    log_p = np.asarray(mech.release_log_prob(data, x))  # one batch: one compilation
    np.testing.assert_allclose(
        log_p, scipy.stats.laplace(mech.summary(data), scale).logpdf(x).sum(-1), rtol=1e-12
    )
    losses = log_p - np.asarray(mech.release_log_prob(prime, x))
    assert losses[0] == pytest.approx(epsilon, rel=1e-9)
    assert np.all(np.abs(losses) <= epsilon * (1 + 1e-9))


def test_bernstein_bad_inputs():
    data = sup_curves(np.random.default_rng(10), N, 1.0)
    mech = bernstein_mean_mechanism(N, 1.0, 1.0, degree=5, grid=GRID)
    bad = data.copy()
    bad[3, 7] = 1.25
    with pytest.raises(ValueError, match=r"value 1.25, outside \[-tau, tau\] with tau = 1"):
        mech.summary(bad)
    np.testing.assert_array_equal(enforce_sup_bound(bad, 1.0, "clip")[3, 7], 1.0)
    assert_summary_refuses_malformed(mech, data, columns=39, rows=3, nan_above=0.9)
    with pytest.raises(ValueError, match="degree must be a positive integer"):
        bernstein_mean_mechanism(N, 1.0, 1.0, degree=0)
    with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
        bernstein_mean_mechanism(N, 0.0, 1.0)
    with pytest.raises(ValueError, match="tensor grid"):
        points = np.random.default_rng(11).uniform(size=(20, 2))
        bernstein_mean_2d_mechanism(N, 1.0, 1.0, grid=custom_grid(points, np.full(20, 0.05)))
    with pytest.raises(ValueError, match="the grid has dimension 1 but dim = 2"):
        bernstein_mean_2d_mechanism(N, 1.0, 1.0, grid=GRID)
    with pytest.raises(ValueError, match="lattice values; use a smaller degree"):
        bernstein_mean_2d_mechanism(N, 1.0, 1.0, degree=400)
    with pytest.raises(ValueError, match="outside"):
        bernstein_polynomial(np.ones(3), np.array([1.5]), 2)
    with pytest.raises(ValueError, match="needs 3 lattice values"):
        bernstein_polynomial(np.ones(4), np.array([0.5]), 2)


def test_jit_poisons_out_of_bound_records():
    mech = bernstein_mean_mechanism(N, 1.0, 1.0, degree=5, grid=GRID)
    data = sup_curves(np.random.default_rng(12), N, 1.0)
    x = mech.sample(data, jax.random.key(3))
    log_prob = jax.jit(mech.release_log_prob)
    assert float(log_prob(data, x)) == pytest.approx(float(mech.release_log_prob(data, x)))
    data[0, 0] = 5.0
    assert np.isnan(float(log_prob(data, x)))


def test_registry_entries_build_from_their_examples():
    expected = {"gaussian-kl-coefficients": "l2", "bernstein-mean": "l1", "bernstein-mean-2d": "l1"}
    for name, norm in expected.items():
        assert name in dpaudit.catalogue()
        mech = dpaudit.build(name)
        assert mech.name == name and mech.claim.sensitivity_norm == norm
        assert mech.claim.pure == (norm == "l1")
    assert dpaudit.build("bernstein-mean-2d").params["grid_points"] == 400
