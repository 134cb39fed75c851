"""HRW mechanisms: KDE and ERM sensitivities, the batch noise law (s^2 K), the online OU sampler.

Oracles from outside the code under test: scipy's multivariate normal (KDE
values, kernel values, release densities), numerical quadrature of HRW eq. (10)
(the Sobolev norm), scipy.optimize (ERM objectives), weak duality (hinge
solutions), Gaussian conditioning with numpy (online sampler), chi-square and
normal quantiles at TEST_FAILURE_RATE with Bonferroni corrections (noise laws).
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.linalg
import scipy.optimize
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dpaudit
from dpaudit.model.noise import analytic_gaussian_sigma, gaussian_delta
from mechanisms.hrw.erm import (
    erm_kernel,
    erm_rkhs_distance,
    kernel_erm,
    kernel_logistic,
    kernel_ridge,
    kernel_ridge_sensitivity,
    kernel_svm,
    kernel_svm_sensitivity,
)
from mechanisms.hrw.kde import (
    bandwidth_matrix,
    gaussian_bump_sobolev_inner,
    gaussian_kde,
    gaussian_kde_kernel,
    gaussian_kde_rkhs_distance,
    gaussian_kde_sensitivity,
    sobolev_kde_rkhs_distance,
    sobolev_kde_sensitivity,
    sobolev_kernel,
)
from mechanisms.hrw.release import (
    OnlineExponentialRelease,
    grid_release,
    hrw_noise_multiplier,
    kernel_matrix,
    online_exponential_release,
    ou_conditional,
)

HRW_NAMES = (
    "hrw-gaussian-kde",
    "hrw-gaussian-kde-anisotropic",
    "hrw-sobolev-kde",
    "hrw-kernel-ridge",
    "hrw-kernel-logistic",
    "hrw-kernel-svm",
)
FULL_H = ((0.02, 0.006), (0.006, 0.01))


def c_classical(delta):
    """HRW eq. (6): c(delta) = sqrt(2 log(2/delta))."""
    return math.sqrt(2 * math.log(2 / delta))


def gaussian_kernel_oracle(x, y, matrix):
    """exp(-(x-y)^T H^-1 (x-y)/2) from scipy's normal density: N(x; y, H) (2 pi)^(d/2) |H|^(1/2)."""
    matrix = np.atleast_2d(matrix)
    d = matrix.shape[0]
    pdf = scipy.stats.multivariate_normal(mean=np.atleast_1d(y), cov=matrix).pdf(x)
    return pdf * (2 * math.pi) ** (d / 2) * math.sqrt(np.linalg.det(matrix))


def gaussian_gram_oracle(points, matrix):
    """The Gram matrix of exp(-(x-y)^T H^-1 (x-y)/2) on ``points`` (m, d), column by column."""
    return np.array([np.atleast_1d(gaussian_kernel_oracle(points, p, matrix)) for p in points]).T


def unit_points(dim, min_size=1, max_size=12):
    corner = st.sampled_from([0.0, 1.0])
    coordinate = st.one_of(st.floats(0.0, 1.0), corner)
    return st.integers(min_size, max_size).flatmap(
        lambda n: arrays(np.float64, (n, dim), elements=coordinate)
    )


@st.composite
def neighbours(draw, dim, min_size=1, max_size=12):
    """A dataset in [0,1]^dim and a replace-one neighbour; the new record is often a corner."""
    data = draw(unit_points(dim, min_size, max_size))
    i = draw(st.integers(0, len(data) - 1))
    corner = np.array(draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=dim, max_size=dim)))
    free = draw(arrays(np.float64, dim, elements=st.floats(0.0, 1.0)))
    new = draw(st.sampled_from(["corner", "opposite", "free"]))
    prime = data.copy()
    prime[i] = (
        corner if new == "corner" else (1.0 - np.round(data[i]) if new == "opposite" else free)
    )
    return data, prime


# -------------------------------------------------------------------- catalogue


@pytest.mark.parametrize("name", HRW_NAMES)
def test_catalogue_entry_claims_rkhs_sensitivity_and_has_a_density(name):
    mech = dpaudit.build(name)
    claim, p = mech.claim, mech.params
    assert claim.adjacency == "replace-one" and claim.sensitivity_norm == "rkhs"
    assert (claim.epsilon, claim.delta) == (p["epsilon"], p["delta"])
    assert claim.reference.startswith("Hall, Rinaldo & Wasserman 2013, Sec. 4.")
    n, dim = p["n"], p["dim"]
    if name == "hrw-gaussian-kde":  # sqrt(2) / (n (2 pi h^2)^(d/2))
        expected = math.sqrt(2) / (n * (2 * math.pi * p["bandwidth"] ** 2) ** (dim / 2))
    elif name == "hrw-gaussian-kde-anisotropic":
        expected = math.sqrt(2) / (n * 2 * math.pi * math.sqrt(np.linalg.det(FULL_H)))
    elif name == "hrw-sobolev-kde":  # 2 / ((2 pi)^(d/4) n h^d)
        expected = 2 / ((2 * math.pi) ** (dim / 4) * n * p["bandwidth"] ** dim)
    elif name == "hrw-kernel-ridge":  # 2B(1 + 1/sqrt(lambda)) / (lambda n)
        lam, b = p["regularization"], p["y_bound"]
        expected = 2 * b * (1 + 1 / math.sqrt(lam)) / (lam * n)
    else:
        expected = 1 / (p["regularization"] * n)
    assert claim.sensitivity == pytest.approx(expected, rel=1e-12)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(n, dim))
    data = x if "kde" in name else (x, np.where(rng.uniform(size=n) < 0.5, 1.0, -1.0))
    law = mech.release_distribution(data)  # sampling is exercised by the noise-law tests
    assert law.event_shape == (p["grid_size"] ** dim,)
    np.testing.assert_allclose(law.mean, mech.summary(data), rtol=1e-12)
    assert np.isfinite(float(law.log_prob(law.mean)))


# ------------------------------------------------------------------- Gaussian KDE


@pytest.mark.parametrize("bandwidth", [0.1, (0.1, 0.2), FULL_H])
def test_gaussian_kde_matches_scipy_normal_mixture(bandwidth):
    rng = np.random.default_rng(3)
    dim = 1 if np.ndim(bandwidth) == 0 else 2
    data, points = rng.uniform(size=(30, dim)), rng.uniform(size=(7, dim))
    matrix = bandwidth_matrix(bandwidth, dim)
    expected = np.mean(
        [scipy.stats.multivariate_normal(mean=xi, cov=matrix).pdf(points) for xi in data], axis=0
    )
    np.testing.assert_allclose(gaussian_kde(data, points, bandwidth), expected, rtol=1e-12)
    # the noise kernel is the unnormalised kernel of the estimator
    kernel = gaussian_kde_kernel(bandwidth, dim)
    oracle = np.array([gaussian_kernel_oracle(points, xi, matrix) for xi in data]).T
    np.testing.assert_allclose(np.asarray(kernel(points, data)), oracle, rtol=1e-12)
    np.testing.assert_allclose(kernel_matrix(kernel, points, data), oracle, rtol=1e-12)


@settings(max_examples=40)
@given(
    st.sampled_from([(1, "iso"), (2, "iso"), (2, "diag"), (2, "full")]),
    st.floats(0.02, 1.0),
    st.data(),
)
def test_gaussian_kde_rkhs_sensitivity_bound(kind, h, data_strategy):
    """||f_D - f_D'||_H = c (2 - 2K(x, x'))^(1/2) <= sqrt(2) c = Delta, c = 1/(n (2pi)^(d/2)|H|^(1/2))."""
    dim, shape = kind
    bandwidth = {"iso": h, "diag": (h, 0.5 * h), "full": ((h**2, 0.3 * h**2), (0.3 * h**2, h**2))}[
        shape
    ]
    data, prime = data_strategy.draw(neighbours(dim))
    n = len(data)
    delta = gaussian_kde_sensitivity(n, bandwidth, dim)
    distance = gaussian_kde_rkhs_distance(data, prime, bandwidth, dim)
    matrix = bandwidth_matrix(bandwidth, dim)
    i = np.flatnonzero(np.any(data != prime, axis=1))
    k = gaussian_kernel_oracle(data[i[0]], prime[i[0]], matrix) if len(i) else 1.0
    c = 1 / (n * (2 * math.pi) ** (dim / 2) * math.sqrt(np.linalg.det(matrix)))
    assert distance**2 == pytest.approx(c * c * (2 - 2 * k), rel=1e-7, abs=1e-12 * c * c)
    assert distance <= delta * (1 + 1e-12)


def test_gaussian_kde_bound_is_attained_by_distant_records():
    """The bound is tight: records at opposite corners of [0,1] with h = 0.05 reach ratio 1 - 1e-87."""
    data = np.full((50, 1), 0.0)
    prime = data.copy()
    prime[7] = 1.0
    ratio = gaussian_kde_rkhs_distance(data, prime, 0.05) / gaussian_kde_sensitivity(50, 0.05)
    assert 1 - 1e-12 < ratio <= 1.0


@settings(max_examples=30)
@given(
    arrays(np.float64, st.integers(1, 6), elements=st.floats(0.0, 1.0)),
    arrays(np.float64, 6, elements=st.floats(-2.0, 2.0)),
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8, unique=True),
    st.floats(0.05, 0.5),
)
def test_finite_point_norm_is_at_most_rkhs_norm(centres, weights, points, lengthscale):
    """Oracle (docs/oracles.md#oracle-hrw) (HRW Prop. 3.4): ||K_t^{-1/2} f(t)||_2 <= ||f||_H for f = sum_i a_i K_{p_i}."""
    a = weights[: len(centres)]
    for kernel in (sobolev_kernel(lengthscale), gaussian_kde_kernel(lengthscale, 1)):
        k_pp = kernel_matrix(kernel, centres)
        k_tt = kernel_matrix(kernel, np.array(points))
        values = kernel_matrix(kernel, np.array(points), centres) @ a
        rkhs_sq = float(a @ k_pp @ a)
        # eigen-solve with a relative floor: K_t may be near-singular for smooth kernels
        lam, vec = np.linalg.eigh(k_tt)
        keep = lam > 1e-10 * lam[-1]
        grid_sq = float(np.sum((vec[:, keep].T @ values) ** 2 / lam[keep]))
        assert grid_sq <= rkhs_sq * (1 + 1e-6) + 1e-9


# -------------------------------------------------------------------- Sobolev KDE


def test_sobolev_norm_eq10_is_the_rkhs_norm_of_the_exponential_kernel():
    """HRW eq. (10) evaluated by quadrature on f = sum_i a_i exp(-gamma|t - x_i|) equals a^T K a."""
    gamma = 7.0
    x, a = np.array([0.0, 0.23, 0.61, 0.9]), np.array([1.0, -0.5, 2.0, 0.7])

    def f(t):
        return np.sum(a * np.exp(-gamma * np.abs(t - x)))

    def df(t):
        return np.sum(-a * gamma * np.sign(t - x) * np.exp(-gamma * np.abs(t - x)))

    integral = scipy.integrate.quad(
        lambda t: df(t) ** 2 + gamma**2 * f(t) ** 2, 0, 1, points=x[1:], epsabs=1e-13, limit=200
    )[0]
    eq10 = 0.5 * (f(0.0) ** 2 + f(1.0) ** 2) + integral / (2 * gamma)
    gram = kernel_matrix(sobolev_kernel(1 / gamma), x)
    assert eq10 == pytest.approx(float(a @ gram @ a), rel=1e-9)


@pytest.mark.parametrize(("mu", "nu", "h"), [(0.5, 0.5, 0.1), (0.1, 0.3, 0.1), (0.0, 1.0, 0.3)])
def test_gaussian_bump_inner_product_matches_quadrature(mu, nu, h):
    def phi(c, t):
        return scipy.stats.norm(c, h).pdf(t)

    def dphi(c, t):
        return -(t - c) / h**2 * phi(c, t)

    gamma = 1 / h
    integral = scipy.integrate.quad(
        lambda t: dphi(mu, t) * dphi(nu, t) + gamma**2 * phi(mu, t) * phi(nu, t),
        0,
        1,
        epsabs=1e-13,
        epsrel=1e-13,
        limit=200,
    )[0]
    expected = 0.5 * (phi(mu, 0) * phi(nu, 0) + phi(mu, 1) * phi(nu, 1)) + integral / (2 * gamma)
    assert float(gaussian_bump_sobolev_inner(mu, nu, h)) == pytest.approx(expected, rel=1e-9)


def test_sobolev_bump_norm_constant():
    """sup_mu ||phi_mu||_H^2 h^2 <= 1/(2 pi) + 1/(8 sqrt pi) + 1/(4 sqrt pi) ~ 0.371 <= 1/sqrt(2 pi)."""
    mu = np.linspace(0, 1, 2001)
    corrected = 1 / (2 * math.pi) + 1 / (8 * math.sqrt(math.pi)) + 1 / (4 * math.sqrt(math.pi))
    for h in (0.01, 0.05, 0.1, 0.3, 1.0):
        worst = float(np.max(gaussian_bump_sobolev_inner(mu, mu, h))) * h * h
        assert worst <= corrected <= 1 / math.sqrt(2 * math.pi)


@settings(max_examples=40)
@given(st.sampled_from([1, 2]), st.floats(0.02, 1.0), st.data())
def test_sobolev_kde_sensitivity_bound(dim, h, data_strategy):
    """Exact ||f_D - f_D'||_H (tensor H^1, gamma = 1/h) <= 2 / ((2 pi)^(d/4) n h^d)."""
    data, prime = data_strategy.draw(neighbours(dim))
    distance = sobolev_kde_rkhs_distance(data, prime, h, dim)
    assert distance <= sobolev_kde_sensitivity(len(data), h, dim) * (1 + 1e-12)


# ----------------------------------------------- grid-restricted form (docs/oracles.md#oracle-hrw)


# name -> (catalogue entry, build options, dimension); the exact RKHS distance uses the same
# bandwidth (the anisotropic entry's default is FULL_H).
KDE_CASES = {
    "gaussian-1d": ("hrw-gaussian-kde", {"bandwidth": 0.1, "grid_size": 10}, 1),
    "gaussian-2d": ("hrw-gaussian-kde", {"bandwidth": 0.15, "dim": 2, "grid_size": 4}, 2),
    "diagonal-H-2d": ("hrw-gaussian-kde-anisotropic", {"bandwidth": (0.1, 0.2), "grid_size": 4}, 2),
    "full-H-2d": ("hrw-gaussian-kde-anisotropic", {"grid_size": 4}, 2),
    "sobolev-1d": ("hrw-sobolev-kde", {"bandwidth": 0.1, "grid_size": 10}, 1),
    "sobolev-2d": ("hrw-sobolev-kde", {"bandwidth": 0.2, "dim": 2, "grid_size": 4}, 2),
}


@pytest.fixture(scope="module")
def kde_mechanisms():
    n = 8
    return {
        which: (
            dpaudit.build(entry, n=n, **options),
            functools.partial(
                sobolev_kde_rkhs_distance if "sobolev" in entry else gaussian_kde_rkhs_distance,
                bandwidth=options.get("bandwidth", FULL_H),
                dim=dim,
            ),
        )
        for which, (entry, options, dim) in KDE_CASES.items()
    }


@settings(max_examples=20)
@given(
    st.sampled_from(list(KDE_CASES)),
    st.data(),
)
def test_grid_norm_at_most_rkhs_norm_at_most_bound(kde_mechanisms, which, data_strategy):
    """Cameron–Martin norm of grid values in the grid KL basis <= RKHS norm <= claimed bound."""
    mech, exact = kde_mechanisms[which]
    if which == "diagonal-H-2d":  # sqrt(2) / (n (2 pi) h_1 h_2)
        assert mech.claim.sensitivity == pytest.approx(math.sqrt(2) / (8 * 2 * math.pi * 0.02))
    dim = mech.params["dim"]
    data, prime = data_strategy.draw(neighbours(dim, min_size=8, max_size=8))
    grid_norm = float(mech.distance(data, prime))
    rkhs = exact(data, prime)
    assert grid_norm <= rkhs * (1 + 1e-9) + 1e-12
    assert rkhs <= mech.claim.sensitivity * (1 + 1e-12)
    # and the Gaussian privacy loss at this pair is within the claim (Balle & Wang's exact delta)
    sigma = hrw_noise_multiplier(mech.claim.sensitivity, 1.0, mech.claim.delta)
    if grid_norm > 0:
        assert gaussian_delta(1.0, grid_norm / sigma) <= mech.claim.delta


# ------------------------------------------------------------------------ noise law


def _noise_law_checks(residuals, covariance):
    """Whitened residuals z = L^{-1} r must be i.i.d. N(0, 1): total and per-coordinate chi-squares.

    Returns the (two-sided) p-values; the caller compares them with
    TEST_FAILURE_RATE / (number of checks) (Bonferroni).
    """
    chol = scipy.linalg.cholesky(covariance, lower=True)
    z = scipy.linalg.solve_triangular(chol, residuals.T, lower=True).T
    n_draws, m = z.shape

    def two_sided(statistic, dof):
        return 2 * min(scipy.stats.chi2.cdf(statistic, dof), scipy.stats.chi2.sf(statistic, dof))

    pvalues = [two_sided(np.sum(z**2), n_draws * m)]
    pvalues += [two_sided(s, n_draws) for s in np.sum(z**2, axis=0)]
    return np.array(pvalues)


NOISE_LAW_CASES = {
    # name: (builder name, overrides, kernel matrix oracle on the grid, sensitivity oracle)
    "gaussian-1d": (
        "hrw-gaussian-kde",
        {"n": 20, "bandwidth": 0.1, "grid_size": 10},
        lambda g: gaussian_gram_oracle(g, np.eye(1) * 0.01),
        math.sqrt(2) / (20 * math.sqrt(2 * math.pi) * 0.1),
    ),
    "full-H-2d": (
        "hrw-gaussian-kde-anisotropic",
        {"n": 20, "grid_size": 4},
        lambda g: gaussian_gram_oracle(g, np.array(FULL_H)),
        math.sqrt(2) / (20 * 2 * math.pi * math.sqrt(np.linalg.det(FULL_H))),
    ),
    "sobolev-1d": (
        "hrw-sobolev-kde",
        {"n": 20, "bandwidth": 0.1, "grid_size": 10},
        lambda g: np.exp(-np.abs(g - g.T) / 0.1),
        2 / ((2 * math.pi) ** 0.25 * 20 * 0.1),
    ),
}


@pytest.mark.parametrize("case", sorted(NOISE_LAW_CASES))
def test_release_minus_summary_has_covariance_s_squared_k(case):
    """Acceptance (see docs/paper-errors.md#hrw-batch-covariance): release - summary ~ N(0, (c Delta/eps)^2 K) on the grid.

    Failure rate: TEST_FAILURE_RATE in total (Bonferroni over 1 + m chi-square checks).
    """
    name, overrides, kernel_oracle, delta_oracle = NOISE_LAW_CASES[case]
    mech = dpaudit.build(name, epsilon=0.8, delta=1e-3, **overrides)
    points = np.asarray(
        dpaudit.spaces.uniform_grid(overrides["grid_size"], mech.params["dim"]).points
    )
    assert mech.claim.sensitivity == pytest.approx(delta_oracle, rel=1e-12)
    s = c_classical(1e-3) * delta_oracle / 0.8
    gram = kernel_oracle(points) if case != "sobolev-1d" else kernel_oracle(points[:, :1])
    data = np.random.default_rng(5).uniform(size=(20, mech.params["dim"]))
    n_draws = 4000
    residuals = np.asarray(mech.sample(data, jax.random.key(7), n_draws) - mech.summary(data))
    pvalues = _noise_law_checks(residuals, s**2 * gram)
    assert pvalues.min() > TEST_FAILURE_RATE / len(pvalues)


def test_grid_release_covariance_and_density_are_the_exact_batch_law():
    """Full-rank grid: covariance s^2 Phi Lambda Phi^T = s^2 K, log-density differences = scipy's."""
    grid = dpaudit.spaces.uniform_grid(10)
    kernel = sobolev_kernel(0.1)
    s = 0.37
    release = grid_release(kernel, grid, s)
    assert release.basis.n_components == 10
    gram = kernel_matrix(kernel, grid.points)
    np.testing.assert_allclose(release.covariance(), s**2 * gram, rtol=1e-10, atol=1e-12)
    rng = np.random.default_rng(0)
    f, g = rng.normal(size=10), rng.normal(size=10)
    x = f + rng.normal(size=(4, 10)) * s  # full rank: every vector is in the support
    ours = release.distribution(f).log_prob(x) - release.distribution(g).log_prob(x)
    law = scipy.stats.multivariate_normal
    ref = law(f, s**2 * gram).logpdf(x) - law(g, s**2 * gram).logpdf(x)
    np.testing.assert_allclose(ours, ref, rtol=1e-8, atol=1e-8)
    # the grid RKHS norm is (h^T K^{-1} h)^(1/2)
    h = f - g
    assert float(release.grid_rkhs_norm(h)) == pytest.approx(
        math.sqrt(h @ np.linalg.solve(gram, h)), rel=1e-8
    )


def test_analytic_calibration_for_large_epsilon():
    with pytest.raises(ValueError, match='calibration="analytic"'):
        dpaudit.build("hrw-gaussian-kde", epsilon=2.0)
    mech = dpaudit.build("hrw-gaussian-kde", epsilon=2.0, calibration="analytic", grid_size=10)
    assert "Balle & Wang" in mech.claim.reference
    delta_kde = mech.claim.sensitivity
    s = analytic_gaussian_sigma(delta_kde, 2.0, 1e-3)
    assert hrw_noise_multiplier(delta_kde, 2.0, 1e-3, "analytic") == s
    assert gaussian_delta(2.0, delta_kde / s) <= 1e-3
    # analytic is never noisier than classical where both apply
    for eps in (0.1, 0.5, 1.0):
        analytic = hrw_noise_multiplier(1.0, eps, 1e-5, "analytic")
        assert analytic <= hrw_noise_multiplier(1.0, eps, 1e-5) == c_classical(1e-5) / eps


# -------------------------------------------------------------------- utility


def test_gaussian_kde_release_stays_close_to_the_non_private_kde():
    """n = 1000, h = 0.5 n^(-1/5), eps = 1, delta = 1e-3: ||release - KDE||_L2 below a tail bound.

    ||noise||^2_L2 = s^2 sum_k lambda_k Z_k^2 on the grid (quadrature), E = s^2 tr(K) (here
    tr = int K(x, x) dx = 1). Laurent–Massart: P(sum a_k (Z_k^2 - 1) >= 2|a|_2 sqrt(t) +
    2|a|_inf t) <= e^-t, with e^-t = TEST_FAILURE_RATE / 20 for 20 draws (Bonferroni).
    """
    n, draws = 1000, 20
    rng = np.random.default_rng(11)
    component = rng.uniform(size=n) < 0.4
    data = np.clip(np.where(component, rng.normal(0.3, 0.08, n), rng.normal(0.7, 0.1, n)), 0, 1)
    h = 0.5 * n ** (-1 / 5)
    mech = dpaudit.build("hrw-gaussian-kde", n=n, bandwidth=h, grid_size=64)
    grid = dpaudit.spaces.uniform_grid(64)
    kde = np.asarray(gaussian_kde(data, grid.points, h))
    s = c_classical(1e-3) * math.sqrt(2) / (n * math.sqrt(2 * math.pi) * h)
    lam = np.asarray(grid_release(gaussian_kde_kernel(h, 1), grid, s).basis.eigenvalues)
    t = math.log(draws / TEST_FAILURE_RATE)
    bound_sq = s**2 * (lam.sum() + 2 * np.linalg.norm(lam) * math.sqrt(t) + 2 * lam.max() * t)
    w = np.asarray(grid.weights)
    projection_error = math.sqrt(np.sum(w * (np.asarray(mech.summary(data)) - kde) ** 2))
    releases = np.asarray(mech.sample(data, jax.random.key(3), draws))
    errors = np.sqrt(np.sum(w * (releases - kde) ** 2, axis=1))
    assert lam.sum() == pytest.approx(1.0, rel=1e-6)  # tr of the unit-variance kernel
    assert projection_error < 1e-8
    assert np.all(errors <= math.sqrt(bound_sq) + projection_error)
    # which is small next to the density itself: under 10% in L2
    assert math.sqrt(bound_sq) < 0.1 * math.sqrt(np.sum(w * kde**2))


# ------------------------------------------------------------------------- ERM


@st.composite
def labelled_data(draw, loss, dim=1, max_n=14):
    n = draw(st.integers(2, max_n))
    x = draw(unit_points(dim, n, n))
    if loss == "square":
        y = draw(arrays(np.float64, n, elements=st.floats(-1.0, 1.0)))
    else:
        y = draw(arrays(np.float64, n, elements=st.sampled_from([-1.0, 1.0])))
    return x, y


def _objective(alpha, k, y, lam, loss):
    t = k @ alpha
    values = {
        "square": (t - y) ** 2,
        "logistic": np.logaddexp(0, -y * t),
        "hinge": np.maximum(0, 1 - y * t),
    }[loss]
    return np.mean(values) + lam * alpha @ k @ alpha


def test_kernel_ridge_equals_closed_form_and_scipy_minimum():
    rng = np.random.default_rng(4)
    x, y = rng.uniform(size=(30, 2)), rng.uniform(-1, 1, 30)
    kernel = erm_kernel("gaussian", 0.3)
    sol = kernel_ridge(x, y, kernel=kernel, regularization=0.01)
    k = kernel_matrix(kernel, x)
    np.testing.assert_allclose(sol.coefficients, np.linalg.solve(k + 0.3 * np.eye(30), y))
    best = scipy.optimize.minimize(
        _objective, np.zeros(30), args=(k, y, 0.01, "square"), method="BFGS", tol=1e-12
    )
    assert sol.objective() <= best.fun + 1e-10
    assert sol.optimality_residual() < 1e-6


@settings(max_examples=25)
@given(st.sampled_from(["square", "logistic", "hinge"]), st.data())
def test_erm_solutions_satisfy_optimality_conditions(loss, data_strategy):
    """Stationarity (square, logistic) / dual KKT natural residual (hinge) below 1e-6; hinge
    duality gap (a certificate from weak duality) below 1e-9; no scipy minimiser does better."""
    x, y = data_strategy.draw(labelled_data(loss))
    lam = data_strategy.draw(st.floats(1e-3, 3.0))
    kernel = erm_kernel(data_strategy.draw(st.sampled_from(["gaussian", "exponential"])), 0.2)
    sol = kernel_erm(x, y, loss=loss, kernel=kernel, regularization=lam)
    assert sol.optimality_residual() < 1e-6
    k = kernel_matrix(kernel, x)
    if loss == "hinge":
        assert -1e-12 <= sol.duality_gap() < 1e-9
    else:
        other = scipy.optimize.minimize(
            _objective, np.zeros(len(y)), args=(k, y, lam, loss), method="BFGS"
        )
        assert sol.objective() <= other.fun + 1e-10


@settings(max_examples=30)
@given(st.sampled_from(["square", "logistic", "hinge"]), st.data())
def test_erm_rkhs_sensitivity_bound(loss, data_strategy):
    """||f_D - f_D'||_H <= M sqrt(sup K) / (lambda n) on random and adversarial neighbours."""
    x, y = data_strategy.draw(labelled_data(loss, dim=data_strategy.draw(st.sampled_from([1, 2]))))
    n = x.shape[0]
    lam = data_strategy.draw(st.floats(1e-3, 3.0))
    kernel = erm_kernel(data_strategy.draw(st.sampled_from(["gaussian", "exponential"])), 0.2)
    i = data_strategy.draw(st.integers(0, n - 1))
    x_prime, y_prime = x.copy(), y.copy()
    move = data_strategy.draw(st.sampled_from(["flip-label", "far", "both"]))
    if move in ("far", "both"):
        x_prime[i] = 1.0 - np.round(x[i])
    if move in ("flip-label", "both"):
        y_prime[i] = -y[i] if loss != "square" else -np.sign(y[i] or 1.0)
    sol = kernel_erm(x, y, loss=loss, kernel=kernel, regularization=lam)
    sol_prime = kernel_erm(x_prime, y_prime, loss=loss, kernel=kernel, regularization=lam)
    if loss == "square":
        bound = kernel_ridge_sensitivity(n, lam, 1.0)
    else:
        bound = kernel_svm_sensitivity(n, lam)
    assert erm_rkhs_distance(sol, sol_prime) <= bound * (1 + 1e-7)


def test_hinge_sensitivity_bound_is_attained():
    """Every record a bounded support vector (large lambda): a label flip moves f_D by exactly 1/(lambda n)."""
    rng = np.random.default_rng(8)
    x, y = rng.uniform(size=10), np.where(rng.uniform(size=10) < 0.5, 1.0, -1.0)
    kernel = erm_kernel("gaussian", 0.1)
    flipped = y.copy()
    flipped[3] *= -1
    sol = kernel_svm(x, y, kernel=kernel, regularization=5.0)
    sol_prime = kernel_svm(x, flipped, kernel=kernel, regularization=5.0)
    ratio = erm_rkhs_distance(sol, sol_prime) / kernel_svm_sensitivity(10, 5.0)
    assert ratio == pytest.approx(1.0, abs=1e-9)
    logistic = kernel_logistic(x, y, kernel=kernel, regularization=5.0)
    logistic_prime = kernel_logistic(x, flipped, kernel=kernel, regularization=5.0)
    assert 0.4 < erm_rkhs_distance(logistic, logistic_prime) / kernel_svm_sensitivity(10, 5.0) < 1


@pytest.mark.parametrize("name", ["hrw-kernel-ridge", "hrw-kernel-logistic", "hrw-kernel-svm"])
def test_erm_grid_norm_at_most_rkhs_norm(name):
    mech = dpaudit.build(name, n=12, grid_size=10, regularization=0.02)
    rng = np.random.default_rng(9)
    for trial in range(3):
        x = rng.uniform(size=12)
        y = rng.uniform(-1, 1, 12) if name == "hrw-kernel-ridge" else np.sign(rng.normal(size=12))
        x_prime, y_prime = x.copy(), y.copy()
        x_prime[trial], y_prime[trial] = 1.0 - round(x[trial]), -y[trial]
        loss = {"hrw-kernel-ridge": "square", "hrw-kernel-logistic": "logistic"}.get(name, "hinge")
        fits = [
            kernel_erm(a, b, loss=loss, kernel=erm_kernel("gaussian", 0.2), regularization=0.02)
            for a, b in ((x, y), (x_prime, y_prime))
        ]
        rkhs = erm_rkhs_distance(*fits)
        assert float(mech.distance((x, y), (x_prime, y_prime))) <= rkhs * (1 + 1e-9) + 1e-12
        assert rkhs <= mech.claim.sensitivity


# --------------------------------------------------------------------- online OU


@settings(max_examples=40)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=2, max_size=12, unique=True),
    st.floats(0.05, 1.0),
)
def test_online_conditionals_equal_gaussian_conditioning_of_the_batch_law(points, lengthscale):
    """V^T C^{-1} and K(x,x) - V^T C^{-1} V from numpy equal the two-neighbour OU formulas to 1e-10."""
    points = np.array(points)
    assume(np.min(np.diff(np.sort(points))) > 1e-2)
    k = np.exp(-np.abs(points[:, None] - points[None, :]) / lengthscale)
    for i in range(1, len(points)):
        previous = points[:i]
        weights = np.linalg.solve(k[:i, :i], k[:i, i])
        variance = 1 - k[:i, i] @ weights
        order = np.argsort(previous)
        j = np.searchsorted(previous[order], points[i])
        left = previous[order][j - 1] if j > 0 else None
        right = previous[order][j] if j < i else None
        w_left, w_right, var = ou_conditional(points[i], left, right, lengthscale)
        expected = np.zeros(i)
        if left is not None:
            expected[order[j - 1]] = w_left
        if right is not None:
            expected[order[j]] = w_right
        np.testing.assert_allclose(weights, expected, atol=1e-10)
        assert var == pytest.approx(variance, abs=1e-10)


def test_online_release_has_the_batch_covariance():
    """Answers at 6 points queried in scrambled order ~ N(f_D, s^2 K): whitened draws are N(0, I).

    20000 independent paths; Bonferroni over 6 means, 6 variances and 15 correlations at a total
    failure rate TEST_FAILURE_RATE (normal approximations: sd 1/sqrt(N), sqrt(2/N), 1/sqrt(N)).
    """
    points = np.array([0.5, 0.1, 0.9, 0.3, 0.31, 0.75])
    lengthscale, sensitivity, n_paths = 0.2, 0.05, 20_000
    s = c_classical(0.01) * sensitivity / 0.5
    answers = online_exponential_release(
        jnp.sin,
        points,
        sensitivity=sensitivity,
        epsilon=0.5,
        delta=0.01,
        lengthscale=lengthscale,
        key=jax.random.key(4),
        sample_shape=(n_paths,),
    )
    k = np.exp(-np.abs(points[:, None] - points[None, :]) / lengthscale)
    chol = np.linalg.cholesky(s**2 * k)
    z = scipy.linalg.solve_triangular(chol, (answers - np.sin(points)).T, lower=True).T
    quantile = scipy.stats.norm.isf(TEST_FAILURE_RATE / (2 * 27))
    assert np.all(np.abs(z.mean(0)) < quantile / math.sqrt(n_paths))
    assert np.all(np.abs((z**2).mean(0) - 1) < quantile * math.sqrt(2 / n_paths))
    corr = (z.T @ z / n_paths)[np.triu_indices(6, 1)]
    assert np.all(np.abs(corr) < quantile / math.sqrt(n_paths))


def test_online_release_repeats_answers_and_validates():
    release = OnlineExponentialRelease(
        lambda x: 0 * x,
        sensitivity=0.1,
        epsilon=1.0,
        delta=0.1,
        lengthscale=0.1,
        key=jax.random.key(0),
    )
    first = release.query(0.4)
    release.query(0.2)
    assert release.query(0.4) == first and release.points == (0.2, 0.4)
    with pytest.raises(ValueError, match="outside"):
        release.query(1.5)
    with pytest.raises(ValueError, match='calibration="analytic"'):
        OnlineExponentialRelease(
            jnp.sin, sensitivity=1.0, epsilon=3.0, delta=0.1, lengthscale=0.1, key=jax.random.key(0)
        )


# ------------------------------------------------------------------- bad input


class TestBadInput:
    def test_kde_data_outside_the_unit_cube_or_wrong_n_is_rejected(self):
        mech = dpaudit.build("hrw-gaussian-kde", n=5, grid_size=10)
        with pytest.raises(ValueError, match=r"outside the domain \[0, 1\]"):
            mech.summary(np.array([0.1, 0.2, 0.3, 0.4, 1.2]))
        with pytest.raises(ValueError, match="built for n=5"):
            mech.summary(np.full(6, 0.5))
        with pytest.raises(ValueError, match="NaN"):
            mech.summary(np.array([0.1, np.nan, 0.3, 0.4, 0.5]))
        with pytest.raises(ValueError, match=r"shape \(n, 1\)"):
            mech.summary(np.zeros((5, 2)))

    def test_erm_labels_and_covariates_are_checked(self):
        svm = dpaudit.build("hrw-kernel-svm", n=4, grid_size=10)
        with pytest.raises(ValueError, match=r"labels in \{-1, \+1\}"):
            svm.summary((np.full(4, 0.5), np.array([0.0, 1.0, 1.0, -1.0])))
        with pytest.raises(ValueError, match="outside the domain"):
            svm.summary((np.array([0.1, 0.2, 0.3, -0.4]), np.ones(4)))
        with pytest.raises(TypeError, match=r"tuple \(X, y\)"):
            svm.summary(np.full(4, 0.5))
        ridge = dpaudit.build("hrw-kernel-ridge", n=4, grid_size=10, y_bound=2.0)
        with pytest.raises(ValueError, match="y_bound"):
            ridge.summary((np.full(4, 0.5), np.array([0.0, 2.5, 1.0, -1.0])))

    @pytest.mark.parametrize(
        ("name", "params", "error", "message"),
        [
            ("hrw-gaussian-kde", {"bandwidth": 0.0}, ValueError, "bandwidth must be"),
            ("hrw-gaussian-kde", {"bandwidth": -0.1}, ValueError, "bandwidth must be"),
            ("hrw-sobolev-kde", {"bandwidth": float("nan")}, ValueError, "bandwidth must be"),
            ("hrw-gaussian-kde", {"n": 0}, ValueError, "n must be an integer >= 1"),
            ("hrw-gaussian-kde", {"n": 2.5}, TypeError, "n must be an integer"),
            ("hrw-gaussian-kde", {"calibration": "exact"}, ValueError, "calibration must be"),
            ("hrw-gaussian-kde", {"delta": 0.0}, ValueError, "delta"),
            ("hrw-sobolev-kde", {"epsilon": 1.5}, ValueError, 'calibration="analytic"'),
            ("hrw-kernel-svm", {"epsilon": 4.0}, ValueError, 'calibration="analytic"'),
            (
                "hrw-gaussian-kde-anisotropic",
                {"bandwidth": ((0.01, 0.02), (0.02, 0.01))},
                ValueError,
                "positive definite",
            ),
            ("hrw-gaussian-kde-anisotropic", {"bandwidth": 0.1}, ValueError, "per-axis"),
            ("hrw-gaussian-kde-anisotropic", {"bandwidth": (0.1, 0.2, 0.3)}, ValueError, "shape"),
            ("hrw-kernel-ridge", {"regularization": 0.0}, ValueError, "regularization must be"),
            ("hrw-kernel-logistic", {"regularization": -1.0}, ValueError, "regularization"),
            ("hrw-kernel-svm", {"kernel": "laplace"}, ValueError, "kernel must be"),
            ("hrw-kernel-svm", {"lengthscale": 0.0}, ValueError, "lengthscale must be"),
            ("hrw-kernel-ridge", {"y_bound": -1.0}, ValueError, "y_bound must be"),
        ],
    )
    def test_builders_reject_bad_parameters(self, name, params, error, message):
        with pytest.raises(error, match=message):
            dpaudit.build(name, grid_size=8, **params)


def _krr_rkhs_distance(x, y, x2, y2, lam, lengthscale=0.3):
    """||f_D - f_D'||_H for square-loss KRR, fitted here from the first-order condition
    alpha = (K + lambda n I)^{-1} y (independent of mechanisms.hrw), Gaussian kernel, kappa = 1."""

    def gram(a, b):
        return np.exp(-((a[:, None] - b[None, :]) ** 2) / (2 * lengthscale**2))

    n = x.size
    alpha = np.linalg.solve(gram(x, x) + lam * n * np.eye(n), y)
    alpha2 = np.linalg.solve(gram(x2, x2) + lam * n * np.eye(n), y2)
    points, coef = np.concatenate([x, x2]), np.concatenate([alpha, -alpha2])
    return math.sqrt(max(0.0, coef @ gram(points, points) @ coef))


@pytest.mark.parametrize("lam", [0.05, 1.0, 100.0])
def test_krr_sensitivity_by_brute_force(lam):
    """Brute-force maximisation of ||f_D - f_D'||_H over replace-one neighbours (n = 2,
    |y| <= B = 1, x in [0, 1]; random search then Nelder-Mead from the best start): it never
    exceeds Delta = 2B (1 + sqrt(kappa/lambda)) sqrt(kappa) / (lambda n), and it approaches
    Delta / (1 + sqrt(kappa/lambda)) -- the derivation's only slack is the bound
    ||f_D||_inf <= B sqrt(kappa/lambda) on the fitted values -- as lambda grows."""
    from mechanisms.hrw.erm import kernel_ridge_sensitivity

    n, bound = 2, 1.0
    delta = kernel_ridge_sensitivity(n, lam, bound, 1.0)

    def distance(z):
        x, y = np.clip(z[:2], 0, 1), np.clip(z[2:4], -bound, bound)
        x2, y2 = x.copy(), y.copy()
        x2[0], y2[0] = np.clip(z[4], 0, 1), np.clip(z[5], -bound, bound)
        return _krr_rkhs_distance(x, y, x2, y2, lam)

    rng = np.random.default_rng(0)
    starts = np.column_stack(
        [
            rng.uniform(size=(400, 2)),
            rng.uniform(-1, 1, (400, 2)),
            rng.uniform(size=400),
            rng.uniform(-1, 1, 400),
        ]
    )
    values = np.array([distance(z) for z in starts])
    best = scipy.optimize.minimize(
        lambda z: -distance(z), starts[np.argmax(values)], method="Nelder-Mead"
    )
    worst = max(values.max(), -best.fun)
    assert worst <= delta * (1 + 1e-12)
    floor = 1.0 / (1.0 + math.sqrt(1.0 / lam))  # the limit of worst / delta as lambda grows
    if lam >= 100:
        assert worst / delta >= 0.97 * floor
