"""MRS penalised-mean mechanisms: closed form, Theorem 4.1/4.2 constants, noise laws, utility.

Oracles: scipy.optimize for the penalised objective, scipy.stats for the
Gaussian laws and densities, the exact Gaussian privacy profile
(``gaussian_delta``) for the calibration, and hand computations of the
formulas of docs/papers/mrs.md#mrs-penalized-mean and docs/oracles.md#oracle-mrs-sensitivity.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
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
from dpaudit.model.noise import GaussianProcessNoise, gaussian_delta
from dpaudit.model.spaces import Matern, cameron_martin_norm, kl_basis, spectral_basis, uniform_grid
from dpaudit.testing import L2Ball, SearchBudget, worst_neighbours
from mechanisms.mrs.mean import (
    enforce_l2_bound,
    linear_functional_matrix,
    mrs_linear_functionals,
    mrs_linear_functionals_mechanism,
    mrs_penalized_mean,
    mrs_penalized_mean_coefficients,
    mrs_penalized_mean_coefficients_mechanism,
    mrs_penalized_mean_mechanism,
    mrs_penalized_mean_sensitivity,
    mrs_penalized_mean_sigma,
    mrs_shrinkage,
    mrs_sup_bound,
    mrs_sup_function,
)

GRID = uniform_grid(40)
BASIS = kl_basis(Matern(1.5, 0.2), GRID, n_components=8)
T = np.asarray(GRID.points[:, 0])
#: Dataset size of most tests: JAX compiles each op once per shape, so few shapes keep the
#: file fast.
N = 12


def cosine_basis(eigenvalues, grid=GRID):
    """Exact eigenpairs: phi_j = sqrt(2) cos(j pi t) on the midpoint grid (orthonormal there)."""
    k = np.arange(1, len(eigenvalues) + 1)
    phi = np.sqrt(2.0) * np.cos(np.pi * k * np.asarray(grid.points)[:, :1])
    return spectral_basis(eigenvalues, phi, grid)


def random_curves(rng, n, tau, basis=BASIS):
    """n smooth-ish curves with L2 norms uniform in (0, tau], plus an off-span part."""
    coefficients = rng.normal(size=(n, basis.n_components)) / np.arange(1, basis.n_components + 1)
    x = np.asarray(basis.reconstruct(coefficients)) + 0.3 * rng.normal(size=(n, basis.grid_size))
    norms = np.sqrt(np.sum(np.asarray(basis.grid.weights) * x**2, axis=1))
    return x * (tau * rng.uniform(0.05, 1.0, size=n) / norms)[:, None]


def unit(values, grid=GRID):
    """Grid values rescaled to L2 norm 1."""
    return values / np.sqrt(np.sum(np.asarray(grid.weights) * values**2))


# --------------------------------------------------------------- closed form


@settings(max_examples=12)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.sampled_from([1, N]),
    eta=st.floats(1.0, 3.0),
    phi=st.floats(1e-3, 1.0),
)
def test_closed_form_is_the_minimiser_of_the_penalised_objective(seed, n, eta, phi):
    """MRS eq. (2) against scipy on (1/N) sum ||X_i - m||^2 + phi ||m||_{C^eta}^2 over the span."""
    x = random_curves(np.random.default_rng(seed), n, 1.0)
    phis = np.asarray(BASIS.eigenfunctions)
    lam_eta = np.asarray(BASIS.eigenvalues) ** eta
    w = np.asarray(GRID.weights)

    def objective(c):  # evaluated on grid values, independently of project()
        residual = x - phis @ c
        return np.mean(np.sum(w * residual**2, axis=1)) + phi * np.sum(c**2 / lam_eta)

    def gradient(c):
        residual = x - phis @ c
        return -2 * phis.T @ (w * residual.mean(0)) + 2 * phi * c / lam_eta

    hessian = 2 * phis.T @ (w[:, None] * phis) + np.diag(2 * phi / lam_eta)
    result = scipy.optimize.minimize(
        objective,
        np.zeros(BASIS.n_components),
        jac=gradient,
        hess=lambda c: hessian,
        method="trust-exact",
        options={"gtol": 1e-12},
    )
    assert result.success
    closed = mrs_penalized_mean_coefficients(x, BASIS, eta=eta, phi=phi)
    np.testing.assert_allclose(closed, result.x, atol=1e-6)
    grid_values = mrs_penalized_mean(x, BASIS, eta=eta, phi=phi, tau=1.0)
    np.testing.assert_allclose(grid_values, phis @ result.x, atol=1e-6)


def test_shrinkage_factor_by_hand():
    lam = np.array([0.5, 0.1, 0.01])
    np.testing.assert_allclose(mrs_shrinkage(lam, 2.0, 0.01), lam**2 / (lam**2 + 0.01), rtol=1e-15)


# ---------------------------------------------------------- Theorem 4.1 bounds


@given(eta=st.floats(1.0, 50.0), phi=st.floats(1e-6, 10.0))
def test_sup_inequality_of_theorem_4_1(eta, phi):
    """sup_x x^(2eta-1)/(x^eta+phi)^2 = phi^(-1/eta)(2eta-1)^(2-1/eta)/(4eta^2) at x^eta=(2eta-1)phi."""
    bound = (2 * eta - 1) ** (2 - 1 / eta) / (4 * eta**2 * phi ** (1 / eta))  # by hand
    assert math.isclose(mrs_sup_bound(eta, phi), bound, rel_tol=1e-13)
    x_star = ((2 * eta - 1) * phi) ** (1 / eta)
    assert math.isclose(float(mrs_sup_function(x_star, eta, phi)), bound, rel_tol=1e-12)
    x = np.logspace(-12, 4, 4001) * x_star
    assert np.all(mrs_sup_function(x, eta, phi) <= bound * (1 + 1e-12))
    best = scipy.optimize.minimize_scalar(
        lambda s: -mrs_sup_function(x_star * math.exp(s), eta, phi) / bound,
        bounds=(-5, 5),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert math.isclose(-best.fun, 1.0, rel_tol=1e-9)
    assert (2 * eta - 1) ** (2 - 1 / eta) / eta**2 <= 4.0  # the last inequality of Thm 4.1


def test_theorem_4_1_constants():
    assert mrs_sup_bound(1.0, 0.04) == pytest.approx(1 / (4 * 0.04), rel=1e-15)
    # eta = 1: Delta^2 = tau^2 / (N^2 phi)
    assert mrs_penalized_mean_sensitivity(50, 2.0, 1.0, 0.04) ** 2 == pytest.approx(
        4.0 / (50**2 * 0.04), rel=1e-14
    )
    constant = [(2 * e - 1) ** (2 - 1 / e) / e**2 for e in (1.0, 1.5, 3.0, 200.0)]
    assert constant[0] == 1.0 and np.all(np.diff(constant) > 0)
    assert constant[-1] == pytest.approx(3.86, abs=0.01)  # docs/papers/mrs.md#mrs-penalized-mean


@settings(max_examples=30)
@given(
    **neighbour_draws([1, N], eta=st.floats(1.0, 4.0), phi=st.floats(1e-5, 1.0), kind=PAIR_KINDS)
)
def test_sensitivity_bound_holds_on_neighbours(seed, n, tau, eta, phi, kind):
    """||f_D - f_D'||_C <= Delta (spectral and closed-form bounds) on random and adversarial pairs."""
    rng = np.random.default_rng(seed)
    data, prime = replace_first_record(random_curves, rng, n, tau, kind)
    out_of_bound = "clip" if kind == "huge-clipped" else "reject"
    if kind == "eigenfunction":  # the maximiser of Thm 4.1's first bound, +-tau v_j
        j = int(np.argmax(mrs_sup_function(np.asarray(BASIS.eigenvalues), eta, phi)))
        data[0] = tau * unit(np.asarray(BASIS.eigenfunctions[:, j]))
        prime[0] = -data[0]
    elif kind == "huge-clipped":  # records far outside the ball, rescaled onto it by clipping
        data[0] = 1e3 * tau * unit(np.asarray(BASIS.eigenfunctions[:, 0]))
        prime[0] = -1e3 * tau * unit(rng.normal(size=GRID.size))
    dpaudit.check_adjacent(data, prime)
    bounds = {}
    for bound in ("spectral", "closed-form"):
        for builder in (mrs_penalized_mean_mechanism, mrs_penalized_mean_coefficients_mechanism):
            mech = builder(
                n, 1.0, 0.1, tau, eta=eta, phi=phi, basis=BASIS, sensitivity_bound=bound,
                out_of_bound=out_of_bound,
            )  # fmt: skip
            distance = float(mech.distance(data, prime))
            assert distance <= mech.claim.sensitivity * (1 + 1e-12)
            bounds[bound] = mech.claim.sensitivity
    assert bounds["spectral"] <= bounds["closed-form"] * (1 + 1e-12)
    if kind == "eigenfunction":  # the spectral bound is attained
        assert distance == pytest.approx(bounds["spectral"], rel=1e-9)


def test_worst_neighbour_search_approaches_the_spectral_bound_and_never_exceeds_it():
    """Projected gradient ascent over pairs of curves in the L2 ball (dpaudit.testing)."""
    mech = mrs_penalized_mean_coefficients_mechanism(
        N, 1.0, 0.1, 1.0, eta=1.5, phi=0.01, basis=BASIS, sensitivity_bound="spectral"
    )
    worst = worst_neighbours(
        mech, record_space=L2Ball(1.0, GRID), n=N, budget=SearchBudget(restarts=2, steps=40)
    )
    assert 0.9 < worst.ratio <= 1 + 1e-9


@pytest.mark.parametrize(("eta", "j"), [(1.0, 2), (1.7, 4), (3.0, 0)])
def test_closed_form_bound_is_attained_when_an_eigenvalue_hits_the_maximiser(eta, j):
    """With lambda_j^eta = (2 eta - 1) phi the pair +-tau v_j has ||.||_C equal to Thm 4.1's bound."""
    lam = 0.6 ** np.arange(8)
    basis = cosine_basis(lam)
    phi = lam[j] ** eta / (2 * eta - 1)
    n, tau = N, 1.3
    data = random_curves(np.random.default_rng(j), n, tau, basis)
    prime = data.copy()
    data[0] = tau * np.asarray(basis.eigenfunctions[:, j])
    prime[0] = -data[0]
    mech = mrs_penalized_mean_mechanism(n, 0.5, 1e-3, tau, eta=eta, phi=phi, basis=basis)
    assert float(mech.distance(data, prime)) == pytest.approx(mech.claim.sensitivity, rel=1e-12)


# ------------------------------------------------------------- Theorem 4.2 sigma


@pytest.mark.parametrize(
    ("n", "tau", "eta", "phi", "epsilon", "delta"),
    [
        (N, 1.0, 1.0, 0.01, 1.0, 0.1),
        (1000, 0.5, 1.5, 1e-3, 0.3, 1e-6),
        (7, 3.0, 4.0, 0.2, 0.9, 0.5),
    ],
)
def test_theorem_4_2_sigma_is_reproduced_exactly(n, tau, eta, phi, epsilon, delta):
    by_hand = (2 * math.log(2 / delta) / epsilon**2) * (
        tau**2 * (2 * eta - 1) ** (2 - 1 / eta) / (n**2 * phi ** (1 / eta) * eta**2)
    )
    assert mrs_penalized_mean_sigma(n, tau, eta, phi, epsilon, delta) ** 2 == pytest.approx(
        by_hand, rel=1e-13
    )
    mech = mrs_penalized_mean_mechanism(n, epsilon, delta, tau, eta=eta, phi=phi, basis=BASIS)
    assert mech.params["sigma"] ** 2 == pytest.approx(by_hand, rel=1e-13)
    if n == N:  # the release really uses it
        noise = mech.release_distribution(np.zeros((n, GRID.size))).coefficient_noise
        assert float(noise.sigma) ** 2 == pytest.approx(by_hand, rel=1e-13)


@pytest.mark.parametrize("calibration", ["classical", "analytic"])
def test_calibration_meets_delta_on_the_worst_pair(calibration):
    """Exact Gaussian profile at d = Delta: delta(epsilon) <= delta; analytic is tight."""
    for epsilon, delta in ((1.0, 0.1), (0.5, 1e-5)):
        sensitivity = mrs_penalized_mean_sensitivity(100, 1.0, 1.5, 0.01)
        sigma = mrs_penalized_mean_sigma(
            100, 1.0, 1.5, 0.01, epsilon, delta, calibration=calibration
        )
        achieved = float(gaussian_delta(epsilon, sensitivity / sigma))
        assert achieved <= delta
        if calibration == "analytic":
            assert achieved == pytest.approx(delta, rel=1e-6)
    # epsilon > 1 is refused classically but fine analytically
    sigma = mrs_penalized_mean_sigma(100, 1.0, 1.0, 0.01, 3.0, 1e-5, calibration="analytic")
    assert float(gaussian_delta(3.0, 0.1 / sigma)) <= 1e-5


def test_privacy_loss_on_the_worst_pair_is_the_gaussian_shift():
    """log p_D - log p_D' under P_D is N(d^2/(2 sigma^2), d^2/sigma^2) with d = ||f_D - f_D'||_C."""
    n, tau, eta, phi = N, 1.0, 1.0, 0.02
    mech = mrs_penalized_mean_coefficients_mechanism(
        n, 1.0, 0.1, tau, eta=eta, phi=phi, basis=BASIS, sensitivity_bound="spectral"
    )
    j = int(np.argmax(mrs_sup_function(np.asarray(BASIS.eigenvalues), eta, phi)))
    data = random_curves(np.random.default_rng(0), n, tau)
    prime = data.copy()
    data[0] = tau * unit(np.asarray(BASIS.eigenfunctions[:, j]))
    prime[0] = -data[0]
    d, sigma = float(mech.distance(data, prime)), mech.params["sigma"]
    draws = mech.sample(data, jax.random.key(1), 10_000)
    loss = np.asarray(mech.release_log_prob(data, draws) - mech.release_log_prob(prime, draws))
    mu = d / sigma
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / 4)
    assert abs(loss.mean() - mu**2 / 2) < z * mu / math.sqrt(loss.size)
    assert abs(loss.var() / mu**2 - 1) < z * math.sqrt(2 / loss.size)


# ------------------------------------------------------------------ noise laws


def test_whole_function_noise_has_coefficient_variances_sigma2_lambda():
    n = N
    mech = mrs_penalized_mean_mechanism(n, 1.0, 0.1, 1.0, eta=1.0, phi=0.01, basis=BASIS)
    data = random_curves(np.random.default_rng(1), n, 1.0)
    draws = mech.sample(data, jax.random.key(2), 10_000)
    centred = np.asarray(draws - mech.summary(data))
    assert np.abs(np.asarray(BASIS.residual(centred))).max() < 1e-10  # lives on the span
    z = np.asarray(BASIS.project(centred)) / (mech.params["sigma"] * np.sqrt(BASIS.eigenvalues))
    k = BASIS.n_components
    for column in z.T:
        assert scipy.stats.kstest(column, "norm").pvalue > TEST_FAILURE_RATE / (2 * k)
    # sum of z^2 over all draws and components is chi-square with 10000 K degrees of freedom
    chi2 = scipy.stats.chi2(z.size)
    total = float(np.sum(z**2))
    assert TEST_FAILURE_RATE / 4 < chi2.cdf(total) < 1 - TEST_FAILURE_RATE / 4


def test_release_densities_match_scipy():
    n = N
    data = random_curves(np.random.default_rng(3), n, 1.0)
    kw = {"eta": 1.2, "phi": 0.05, "basis": BASIS}
    coefficient_mech = mrs_penalized_mean_coefficients_mechanism(n, 0.8, 0.05, 1.0, **kw)
    sigma = coefficient_mech.params["sigma"]
    loc = np.asarray(coefficient_mech.summary(data))
    x = loc + np.random.default_rng(4).normal(size=(5, BASIS.n_components)) * 0.1
    expected = scipy.stats.norm.logpdf(x, loc, sigma * np.sqrt(BASIS.eigenvalues)).sum(-1)
    np.testing.assert_allclose(coefficient_mech.release_log_prob(data, x), expected, rtol=1e-12)
    # the whole-function release has the same density in the coefficient chart
    grid_mech = mrs_penalized_mean_mechanism(n, 0.8, 0.05, 1.0, **kw)
    np.testing.assert_allclose(
        grid_mech.release_log_prob(data, BASIS.reconstruct(x)), expected, rtol=1e-10
    )
    assert float(grid_mech.release_log_prob(data, BASIS.reconstruct(x[0]) + 0.1)) == -np.inf


FUNCTIONALS = np.stack([np.ones_like(T), T, np.where(T < 0.3, 1.0, 0.0), np.sin(7 * T)])


def test_linear_functionals_law_density_and_projection_inequality():
    n = N
    mech = mrs_linear_functionals_mechanism(
        n, 1.0, 0.1, 1.0, functionals=FUNCTIONALS, eta=1.0, phi=0.01, basis=BASIS
    )
    whole = mrs_penalized_mean_mechanism(n, 1.0, 0.1, 1.0, eta=1.0, phi=0.01, basis=BASIS)
    sigma = mech.params["sigma"]
    assert sigma == whole.params["sigma"]  # Thm 3.2 uses the whole-function sigma
    # covariance sigma^2 G Lambda G^T, G by grid quadrature of g_l against C's kernel matrix
    w = np.asarray(GRID.weights)
    cov = sigma**2 * (FUNCTIONALS * w) @ np.asarray(BASIS.covariance()) @ (FUNCTIONALS * w).T
    data = random_curves(np.random.default_rng(5), n, 1.0)
    release = mech.release_distribution(data)
    np.testing.assert_allclose(release.covariance_matrix, cov, rtol=1e-10, atol=1e-16)
    summary = np.asarray(mech.summary(data))
    np.testing.assert_allclose(summary, (FUNCTIONALS * w) @ np.asarray(whole.summary(data)))
    np.testing.assert_allclose(
        summary, mrs_linear_functionals(data, BASIS, FUNCTIONALS, eta=1.0, phi=0.01), rtol=1e-12
    )
    x = summary + np.random.default_rng(6).multivariate_normal(np.zeros(4), cov, size=6)
    expected = scipy.stats.multivariate_normal(summary, cov).logpdf(x)
    np.testing.assert_allclose(mech.release_log_prob(data, x), expected, rtol=1e-9)
    # sampling: whitened draws are N(0, I)
    draws = np.asarray(mech.sample(data, jax.random.key(7), 10_000)) - summary
    white = np.linalg.solve(np.linalg.cholesky(cov), draws.T).T
    for column in white.T:
        assert scipy.stats.kstest(column, "norm").pvalue > TEST_FAILURE_RATE / 8
    assert abs(np.corrcoef(white.T) - np.eye(4)).max() < scipy.stats.norm.isf(
        TEST_FAILURE_RATE / 12
    ) / math.sqrt(10_000)


@settings(max_examples=12)
@given(seed=st.integers(0, 2**31 - 1), p=st.sampled_from([2, 6]))
def test_functional_sensitivity_never_exceeds_the_whole_function_one(seed, p):
    """(nu_D - nu_D')^T K^{-1} (nu_D - nu_D') <= ||theta_D - theta_D'||_H^2 (proof of MRS Thm 3.2)."""
    rng = np.random.default_rng(seed)
    functionals = rng.normal(size=(p, GRID.size))
    kw = {"eta": 1.0, "phi": 0.003, "basis": BASIS}
    lin = mrs_linear_functionals_mechanism(N, 1.0, 0.1, 1.0, functionals=functionals, **kw)
    whole = mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, **kw)
    data = random_curves(rng, N, 1.0)
    prime = data.copy()
    prime[0] = random_curves(rng, 1, 1.0)[0]
    assert float(lin.distance(data, prime)) <= float(whole.distance(data, prime)) * (1 + 1e-9)
    assert float(whole.distance(data, prime)) <= whole.claim.sensitivity


# ------------------------------------------------------------------- utility


def test_utility_privacy_error_is_sigma2_trace_and_penalisation_beats_the_raw_mean():
    """MRS Sec. 5 data at n = 1000, (epsilon, delta) = (1, 0.1)."""
    n, epsilon, delta, tau, phi = 1000, 1.0, 0.1, 1.0, 1e-3
    basis = kl_basis(Matern(2.5, 0.1), uniform_grid(60), n_components=30)
    t = np.asarray(basis.grid.points[:, 0])
    mu = 0.1 * np.sin(np.pi * t)
    rng = np.random.default_rng(8)
    j = np.arange(1, basis.n_components + 1)
    u = rng.uniform(-0.4, 0.4, size=(n, basis.n_components))
    data = mu + np.asarray(basis.reconstruct(u * j**-2.0))  # p = 4
    mech = mrs_penalized_mean_mechanism(n, epsilon, delta, tau, eta=1.0, phi=phi, basis=basis)
    sigma, trace = mech.params["sigma"], float(basis.trace())
    draws = np.asarray(mech.sample(data, jax.random.key(9), 4000))
    w = np.asarray(basis.grid.weights)
    noise2 = np.sum(w * (draws - np.asarray(mech.summary(data))) ** 2, axis=1)
    # ||noise||^2 = sigma^2 sum_j lambda_j chi2_1: mean sigma^2 tr C, var 2 sigma^4 sum lambda^2
    se = sigma**2 * math.sqrt(2 * float(basis.trace(2.0)) / noise2.size)
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / 4)
    assert abs(noise2.mean() - sigma**2 * trace) < z * se
    # the raw mean is compatible with the truncated noise only through its smallest eigenvalue:
    # Delta_raw = 2 tau / (n sqrt(lambda_K)), far larger than Thm 4.1's bound
    raw_sigma = (
        math.sqrt(2 * math.log(2 / delta))
        * 2
        * tau
        / (n * math.sqrt(float(basis.eigenvalues[-1])) * epsilon)
    )
    assert sigma**2 * trace < raw_sigma**2 * trace / 10
    raw_mean = np.asarray(basis.reconstruct(basis.project(data.mean(0))))
    raw_draws = raw_mean + np.asarray(
        basis.reconstruct(
            GaussianProcessNoise(basis.eigenvalues, raw_sigma).sample(jax.random.key(10), (4000,))
        )
    )
    mse_penalised = np.mean(np.sum(w * (draws - mu) ** 2, axis=1))
    mse_raw = np.mean(np.sum(w * (raw_draws - mu) ** 2, axis=1))
    assert mse_penalised < mse_raw / 10


# ------------------------------------------------------------------- bad input


def test_bad_inputs_get_one_clear_sentence():
    data = random_curves(np.random.default_rng(11), N, 1.0)
    mech = mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, basis=BASIS)
    too_long = data.copy()
    too_long[3] *= 3.0 / np.sqrt(np.sum(np.asarray(GRID.weights) * too_long[3] ** 2))
    with pytest.raises(ValueError, match=r"curve 3 has L2 norm 3 > tau = 1"):
        mech.summary(too_long)
    assert_summary_refuses_malformed(mech, data, columns=30, rows=4, nan_above=0.5)
    with pytest.raises(ValueError, match=r"epsilon <= 1.*calibration='analytic'"):
        mrs_penalized_mean_mechanism(N, 2.0, 0.1, 1.0, basis=BASIS)
    for eta in (0.0, -1.0, 0.5):
        with pytest.raises(ValueError, match="eta must be a finite number >= 1"):
            mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, eta=eta, basis=BASIS)
    for phi in (0.0, -0.1, math.inf):
        with pytest.raises(ValueError, match="phi must be a finite number > 0"):
            mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, phi=phi, basis=BASIS)
    with pytest.raises(ValueError, match="tau must be"):
        mrs_penalized_mean_mechanism(N, 1.0, 0.1, 0.0, basis=BASIS)
    with pytest.raises(ValueError, match="delta must lie strictly between 0 and 1"):
        mrs_penalized_mean_mechanism(N, 1.0, 0.0, 1.0, basis=BASIS)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        mrs_penalized_mean_mechanism(0, 1.0, 0.1, 1.0, basis=BASIS)
    with pytest.raises(ValueError, match="calibration must be one of"):
        mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, basis=BASIS, calibration="exact")
    with pytest.raises(ValueError, match="sensitivity_bound must be one of"):
        mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, basis=BASIS, sensitivity_bound="x")
    with pytest.raises(TypeError, match=r"basis must be a dpaudit\.spaces\.KarhunenLoeveBasis"):
        mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, basis=np.eye(3))
    with pytest.raises(TypeError, match="eta must be a number"):
        mrs_penalized_mean_mechanism(N, 1.0, 0.1, 1.0, eta="1", basis=BASIS)
    with pytest.raises(ValueError, match="linearly dependent"):
        mrs_linear_functionals_mechanism(
            N, 1.0, 0.1, 1.0, functionals=np.stack([T, 2 * T]), basis=BASIS
        )
    with pytest.raises(ValueError, match=r"functionals have shape \(2, 39\)"):
        linear_functional_matrix(np.ones((2, 39)), BASIS)


def test_clipping_is_a_claimed_rescaling_onto_the_ball():
    x = np.stack([3.0 * unit(np.sin(3 * T)), 0.5 * unit(T)])
    clipped = np.asarray(enforce_l2_bound(x, GRID, 1.0, "clip"))
    np.testing.assert_allclose(clipped, [unit(np.sin(3 * T)), 0.5 * unit(T)], rtol=1e-12)
    # rounding-level excess is rescaled, not refused, in reject mode
    assert float(jnp.max(jnp.abs(enforce_l2_bound(x[1:] * 2 * (1 + 1e-12), GRID, 1.0)))) > 0


def test_jit_keeps_values_and_poisons_out_of_bound_records():
    n = N
    mech = mrs_penalized_mean_coefficients_mechanism(n, 1.0, 0.1, 1.0, basis=BASIS)
    data = random_curves(np.random.default_rng(12), n, 1.0)
    x = mech.sample(data, jax.random.key(13))
    log_prob = jax.jit(mech.release_log_prob)
    assert float(log_prob(data, x)) == pytest.approx(float(mech.release_log_prob(data, x)))
    bad = data.copy()
    bad[0] *= 10 / np.sqrt(np.sum(np.asarray(GRID.weights) * bad[0] ** 2))
    assert np.isnan(float(log_prob(bad, x)))  # traced data cannot raise: NaN, never a number


def test_registry_entries_build_from_their_examples():
    for name in ("mrs-penalized-mean", "mrs-penalized-mean-coefficients", "mrs-linear-functionals"):
        assert name in dpaudit.catalogue()
        mech = dpaudit.build(name)
        assert mech.name == name and mech.claim.sensitivity_norm == "cameron-martin"
        assert mech.claim.delta == 0.1 and not mech.claim.pure
        assert mech.params["n"] == 100 and mech.params["grid_points"] == 100
    data = np.zeros((100, 100))
    release = mech.sample(data, jax.random.key(0))  # the functionals' example: 3 integrals
    assert release.shape == (3,) and np.isfinite(float(mech.release_log_prob(data, release)))
    norm = cameron_martin_norm(jnp.array([1.0, 1.0]), jnp.array([1.0, 0.25]))
    assert float(norm) == pytest.approx(math.sqrt(5))
