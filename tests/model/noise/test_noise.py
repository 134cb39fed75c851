"""GP and ICLP noise: sample moments, goodness of fit, scipy densities, Radon–Nikodym forms."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpyro.distributions.gof import auto_goodness_of_fit

from dpaudit.model.noise import (
    GaussianProcessNoise,
    GridNoise,
    ICLPNoise,
    cameron_martin_log_rn,
    iclp_sigma,
    one_c_log_rn,
)
from dpaudit.model.spaces import Exponential, Matern, kl_basis, one_c_norm, uniform_grid

EIGENVALUES = jnp.array([1.0, 0.4, 0.1, 0.02, 0.003])
N_MOMENT_SAMPLES = 200_000
# Two-sided normal quantile for a family-wise error TEST_FAILURE_RATE over the K coordinates.
Z = scipy.stats.norm.isf(TEST_FAILURE_RATE / (2 * len(EIGENVALUES)))


def test_iclp_coefficient_variance_and_mean_absolute_deviation():
    """Coefficient j: variance sigma^2 lambda_j, mean |.| sigma sqrt(lambda_j / 2) (docs/oracles.md#oracle-iclp-coefficient-law)."""
    sigma = 1.7
    x = np.asarray(ICLPNoise(EIGENVALUES, sigma).sample(jax.random.key(11), (N_MOMENT_SAMPLES,)))
    lam = np.asarray(EIGENVALUES)
    # For Laplace, Var(x^2)/E[x^2]^2 = 5 and Var|x| / E|x|^2 = 1 (known mean 0).
    ratio_var = np.mean(x**2, axis=0) / (sigma**2 * lam)
    np.testing.assert_array_less(np.abs(ratio_var - 1), Z * math.sqrt(5 / N_MOMENT_SAMPLES))
    ratio_mad = np.mean(np.abs(x), axis=0) / (sigma * np.sqrt(lam / 2))
    np.testing.assert_array_less(np.abs(ratio_mad - 1), Z * math.sqrt(1 / N_MOMENT_SAMPLES))


def test_gaussian_process_coefficients_are_normal_with_variance_sigma2_lambda():
    sigma = 0.6
    x = np.asarray(
        GaussianProcessNoise(EIGENVALUES, sigma).sample(jax.random.key(12), (N_MOMENT_SAMPLES,))
    )
    z = x / (sigma * np.sqrt(np.asarray(EIGENVALUES)))
    np.testing.assert_array_less(np.abs(z.mean(0)), Z / math.sqrt(N_MOMENT_SAMPLES))
    np.testing.assert_array_less(np.abs((z**2).mean(0) - 1), Z * math.sqrt(2 / N_MOMENT_SAMPLES))
    # and the coordinates are independent: sample correlations vanish
    corr = np.corrcoef(z.T) - np.eye(len(EIGENVALUES))
    assert np.abs(corr).max() < Z / math.sqrt(N_MOMENT_SAMPLES)


@pytest.mark.parametrize("family", [ICLPNoise, GaussianProcessNoise])
def test_samples_fit_log_prob(family):
    """numpyro's goodness of fit between sample() and log_prob(), K = 1 and K = 3."""
    loc = jnp.array([0.3, -1.0, 2.0])
    for k, n in ((1, 20_000), (3, 20_000)):
        d = family(EIGENVALUES[:k], 0.8, loc[:k])
        x = d.sample(jax.random.key(3 + k), (n,))
        gof = auto_goodness_of_fit(x, jnp.exp(d.log_prob(x)))
        assert gof > TEST_FAILURE_RATE


def test_grid_samples_fit_grid_log_prob():
    grid = uniform_grid(60)
    basis = kl_basis(Matern(1.5, 0.2), grid, n_components=3)
    noise = GridNoise(ICLPNoise(basis.eigenvalues, 0.5), basis, loc=jnp.sin(grid.points[:, 0]))
    x = noise.sample(jax.random.key(5), (20_000,))
    # The release lives on a 3-dimensional affine set; its density is taken in the
    # coefficient chart, whose metric is the grid's L2 metric.
    gof = auto_goodness_of_fit(basis.project(x - noise.loc), jnp.exp(noise.log_prob(x)))
    assert gof > TEST_FAILURE_RATE


@pytest.mark.parametrize("seed", range(3))
def test_log_prob_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    lam = np.sort(rng.uniform(0.01, 1, 6))[::-1]
    loc, x, sigma = rng.normal(size=6), rng.normal(size=(4, 6)) * 2, rng.uniform(0.3, 3)
    iclp = ICLPNoise(lam, sigma, loc).log_prob(x)
    ref = scipy.stats.laplace(loc, sigma * np.sqrt(lam / 2)).logpdf(x).sum(-1)
    np.testing.assert_allclose(iclp, ref, rtol=1e-12)
    gp = GaussianProcessNoise(lam, sigma, loc).log_prob(x)
    ref = scipy.stats.multivariate_normal(loc, sigma**2 * np.diag(lam)).logpdf(x)
    np.testing.assert_allclose(gp, ref, rtol=1e-12)


def test_grid_gaussian_process_density_matches_scipy_with_kernel_covariance():
    """Full-rank grid GP is N(loc, sigma^2 K) on R^m, up to the chart's Jacobian."""
    grid = uniform_grid(25)
    kernel = Exponential(0.3)
    basis = kl_basis(kernel, grid, rtol=0.0)
    assert basis.n_components == 25
    sigma, loc = 0.7, jnp.cos(3 * grid.points[:, 0])
    noise = GridNoise(GaussianProcessNoise(basis.eigenvalues, sigma), basis, loc)
    x = noise.sample(jax.random.key(2), (5,))
    ref = scipy.stats.multivariate_normal(loc, sigma**2 * np.asarray(kernel(grid.points))).logpdf(x)
    # x = Phi c with Phi^T W Phi = I, so log p_x = log p_c + (1/2) sum_a log w_a
    jacobian = 0.5 * np.sum(np.log(np.asarray(grid.weights)))
    np.testing.assert_allclose(noise.log_prob(x) + jacobian, ref, rtol=1e-9)
    # the sample covariance of the grid process is sigma^2 K
    many = noise.sample(jax.random.key(9), (100_000,))
    cov = np.cov(np.asarray(many).T)
    assert np.abs(cov - sigma**2 * np.asarray(kernel(grid.points))).max() < 0.02


@st.composite
def shift_point_and_spectrum(draw):
    k = draw(st.integers(1, 25))
    values = st.floats(-5, 5, allow_nan=False)
    h = draw(arrays(np.float64, k, elements=values))
    x = draw(arrays(np.float64, k, elements=values))
    lam = np.sort(draw(arrays(np.float64, k, elements=st.floats(1e-2, 1.0))))[::-1]
    sigma = draw(st.floats(0.5, 5.0))
    return h, x, lam, sigma


def _log_prob_difference(family):
    """``log p_h(x) - log p_0(x)``, jitted as an audit evaluates it: one program per K (eagerly,
    every operation compiled for each of the 25 sizes: 4x the time)."""
    return jax.jit(
        lambda h, x, lam, sigma: family(lam, sigma, h).log_prob(x) - family(lam, sigma).log_prob(x)
    )


LOG_PROB_DIFFERENCES = (
    (_log_prob_difference(ICLPNoise), one_c_log_rn),
    (_log_prob_difference(GaussianProcessNoise), cameron_martin_log_rn),
)


@given(shift_point_and_spectrum())
def test_closed_form_radon_nikodym_equals_log_prob_difference(args):
    """Acceptance: log dP_h/dP_0 (x) = log p_h(x) - log p_0(x) to 1e-10 at finite K."""
    h, x, lam, sigma = args
    for difference, closed_form in LOG_PROB_DIFFERENCES:
        got = float(difference(h, x, lam, sigma))
        assert abs(float(closed_form(h, x, lam, sigma)) - got) < 1e-10


@given(shift_point_and_spectrum())
def test_one_c_privacy_loss_is_bounded_and_the_bound_is_attained(args):
    """|log dP_h/dP_0| <= sqrt(2) ||h||_{1,C} / sigma, with equality where sign(x)=sign(h), |x|>=|h|."""
    h, x, lam, sigma = args
    bound = math.sqrt(2) * float(one_c_norm(h, lam)) / sigma
    assert abs(float(one_c_log_rn(h, x, lam, sigma))) <= bound * (1 + 1e-12) + 1e-12
    extremal = h + np.sign(h)  # same sign as h, larger magnitude
    assert float(one_c_log_rn(h, extremal, lam, sigma)) == pytest.approx(
        bound, rel=1e-12, abs=1e-12
    )


def test_iclp_calibration_gives_exactly_epsilon_at_the_worst_point():
    """sigma = sqrt(2) Delta/epsilon (docs/paper-errors.md#lr-iclp-sigma-constant): worst-case loss is epsilon, not sqrt(2) epsilon."""
    lam = np.array([0.5, 0.2, 0.05])
    h = np.array([0.3, -0.1, 0.02])
    delta_1c, epsilon = float(one_c_norm(h, lam)), 0.7
    sigma = iclp_sigma(delta_1c, epsilon)
    worst = ICLPNoise(lam, sigma, h).log_prob(2 * h) - ICLPNoise(lam, sigma).log_prob(2 * h)
    assert float(worst) == pytest.approx(epsilon, rel=1e-12)
    # coefficient noise variance 2 Delta^2 lambda_j / epsilon^2 (the sqrt(2) of the calibration, squared)
    np.testing.assert_allclose(ICLPNoise(lam, sigma).variance, 2 * delta_1c**2 * lam / epsilon**2)


def test_grid_log_prob_differences_equal_closed_forms_and_detect_leaving_the_span():
    grid = uniform_grid(40)
    basis = kl_basis(Matern(2.5, 0.2), grid, n_components=6)
    f_d = basis.reconstruct(jnp.array([0.5, 0.1, -0.2, 0.05, 0.0, 0.01]))
    f_d_prime = basis.reconstruct(jnp.array([0.4, 0.2, -0.2, 0.0, 0.03, 0.0]))
    for family, closed_form in (
        (ICLPNoise, one_c_log_rn),
        (GaussianProcessNoise, cameron_martin_log_rn),
    ):
        centred = family(basis.eigenvalues, 0.3)
        x = GridNoise(centred, basis, f_d).sample(jax.random.key(0), (50,))
        loss = GridNoise(centred, basis, f_d).log_prob(x) - GridNoise(
            centred, basis, f_d_prime
        ).log_prob(x)
        expected = closed_form(
            basis.project(f_d - f_d_prime), basis.project(x - f_d_prime), basis.eigenvalues, 0.3
        )
        np.testing.assert_allclose(loss, expected, atol=1e-9)
        # a summary with a component outside the span gives a mutually singular release
        rough = f_d_prime + 1e-3 * basis.residual(jnp.sign(grid.points[:, 0] - 0.5))
        assert np.all(np.isinf(np.asarray(GridNoise(centred, basis, rough).log_prob(x))))


def test_batching_jit_and_no_recompilation():
    lam = EIGENVALUES
    locs = jnp.arange(15.0).reshape(3, 5)
    d = ICLPNoise(lam, jnp.array([1.0, 2.0, 3.0]), locs)
    assert d.batch_shape == (3,) and d.event_shape == (5,)
    assert d.sample(jax.random.key(0), (7,)).shape == (7, 3, 5)
    assert d.log_prob(jnp.zeros((7, 3, 5))).shape == (7, 3)

    traces = []

    @jax.jit
    def loss(key, loc_a, loc_b):
        traces.append(None)
        x = ICLPNoise(lam, 1.0, loc_a).sample(key, (100,))
        return ICLPNoise(lam, 1.0, loc_a).log_prob(x) - ICLPNoise(lam, 1.0, loc_b).log_prob(x)

    for i in range(4):
        out = loss(jax.random.key(i), locs[0] * i, locs[1])
    assert out.shape == (100,) and len(traces) == 1
    vmapped = jax.vmap(lambda loc: GaussianProcessNoise(lam, 1.0, loc).log_prob(loc))(locs)
    np.testing.assert_allclose(vmapped, GaussianProcessNoise(lam, 1.0, locs).log_prob(locs))
    # distributions are pytrees and cross jit boundaries
    flat = jax.jit(lambda dist: dist.log_prob(dist.loc))(d)
    np.testing.assert_allclose(flat, d.log_prob(d.loc))


def test_grid_noise_is_built_inside_jit():
    grid = uniform_grid(40)
    basis = kl_basis(Matern(nu=1.5, lengthscale=0.2), grid)
    f = jnp.sin(3.0 * grid.points[:, 0])

    @jax.jit
    def log_density(loc, x):
        noise = GridNoise(GaussianProcessNoise(basis.eigenvalues, 0.5), basis, loc)
        return noise.log_prob(x)

    x = f + 0.1 * basis.eigenfunctions[:, 0]
    eager = GridNoise(GaussianProcessNoise(basis.eigenvalues, 0.5), basis, f).log_prob(x)
    np.testing.assert_allclose(log_density(f, x), eager, rtol=1e-12)


class TestBadInput:
    def test_sigma_must_be_positive(self):
        with pytest.raises(ValueError, match="sigma must be > 0"):
            ICLPNoise(EIGENVALUES, 0.0)
        with pytest.raises(ValueError, match="sigma must be finite"):
            GaussianProcessNoise(EIGENVALUES, float("nan"))

    def test_eigenvalues_and_loc(self):
        with pytest.raises(ValueError, match="eigenvalues must be > 0"):
            ICLPNoise(jnp.array([1.0, 0.0]), 1.0)
        with pytest.raises(ValueError, match="one coefficient per eigenvalue"):
            ICLPNoise(EIGENVALUES, 1.0, jnp.zeros(4))
        with pytest.raises(ValueError, match="NaN or infinite"):
            GaussianProcessNoise(EIGENVALUES, 1.0, jnp.full(5, jnp.nan))

    def test_grid_noise_mismatches(self):
        basis = kl_basis(Matern(1.5, 0.2), uniform_grid(30), n_components=4)
        with pytest.raises(ValueError, match="the basis has 4"):
            GridNoise(ICLPNoise(EIGENVALUES, 1.0), basis)
        with pytest.raises(ValueError, match="eigenvalues differ"):
            GridNoise(ICLPNoise(basis.eigenvalues * 2, 1.0), basis)
        with pytest.raises(ValueError, match="one value per grid point"):
            GridNoise(ICLPNoise(basis.eigenvalues, 1.0), basis, jnp.zeros(29))
        with pytest.raises(ValueError, match="centred"):
            GridNoise(ICLPNoise(basis.eigenvalues, 1.0, jnp.ones(4)), basis)
        with pytest.raises(TypeError, match="GaussianProcessNoise or ICLPNoise"):
            GridNoise(basis, basis)
