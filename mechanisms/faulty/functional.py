"""Faulty functional releases: ICLP with the wrong sigma or unnormalised grid eigenpairs,
HRW's batch GP with the unsquared covariance multiplier, and a rough mean with smooth noise."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

import dpaudit
from dpaudit.core.checks import check_delta, check_epsilon
from dpaudit.model.noise import GaussianProcessNoise, GridNoise, classical_gaussian_multiplier
from dpaudit.model.spaces import Gaussian, Matern, kl_basis, l2_norm, one_c_norm, uniform_grid
from mechanisms.common import iclp_release, summary_release
from mechanisms.faulty import register_pair
from mechanisms.faulty.calibration import gaussian_true_epsilon


def _curves(data, n, m):
    x = jnp.asarray(data, dtype=jnp.float64)
    if x.shape != (n, m):
        raise ValueError(f"expected {n} curves on {m} grid points, got shape {x.shape}.")
    return x


def _clip_to(coefficients, norm, tau):
    """Scale each record's coefficients down to norm <= tau (the claimed clipping step)."""
    factor = jnp.minimum(1.0, tau / jnp.maximum(norm, 1e-300))
    return coefficients * factor[:, None]


_FUNCTIONAL_EXAMPLE = {"epsilon": 1.0, "n": 5, "grid_size": 20, "n_components": 4}


@dpaudit.register("faulty/iclp-unscaled-sigma", example=_FUNCTIONAL_EXAMPLE, faulty=True)
def iclp_unscaled_sigma(
    epsilon: float = 1.0, n: int = 50, tau: float = 1.0, grid_size: int = 50, n_components: int = 8
):
    """ICLP mean release with sigma = Delta/epsilon instead of sqrt(2) Delta/epsilon (see docs/paper-errors.md#lr-iclp-sigma-constant).

    Args:
        epsilon: the claimed epsilon.
        n: the public number of curves.
        tau: the public bound on each record's ``1,C`` norm (records are clipped to it).
        grid_size: the number of grid points of a curve.
        n_components: the KL components kept.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    basis = kl_basis(Matern(1.5, 0.2), uniform_grid(grid_size), n_components=n_components)
    lam = basis.eigenvalues
    sensitivity = 2.0 * tau / n  # records clipped to ||x||_{1,C} <= tau
    sigma = sensitivity / epsilon

    def summary(data):
        c = basis.project(_curves(data, n, grid_size))
        return jnp.mean(_clip_to(c, one_c_norm(c, lam), tau), axis=0)

    return iclp_release(
        "faulty/iclp-unscaled-sigma",
        summary,
        lam,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference="Lin & Reimherr Thm 4 as printed (sigma = Delta/epsilon)",
        params={"epsilon": epsilon, "n": n, "tau": tau, "sigma": sigma, "eigenvalues": lam},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "with unit-variance Laplace components the privacy loss is sqrt(2) ||h||_{1,C} / "
                "sigma, so sigma = Delta/epsilon gives sqrt(2) epsilon (docs/paper-errors.md#lr-iclp-sigma-constant)."
            ),
            true_epsilon=math.sqrt(2.0) * epsilon,
            visible_on="records at +-tau sqrt(lambda_1) phi_1 (the 1,C bound is attained).",
        ),
    )


def _first_eigenfunction_pair(n, grid_size, n_components, amplitude):
    basis = kl_basis(Matern(1.5, 0.2), uniform_grid(grid_size), n_components=n_components)
    phi = np.asarray(basis.eigenfunctions[:, 0])
    d = np.zeros((n, grid_size))
    d[0] = amplitude(basis) * phi
    d_prime = d.copy()
    d_prime[0] = -d[0]
    return d, d_prime


@register_pair("faulty/iclp-unscaled-sigma")
def _iclp_pair():
    return _first_eigenfunction_pair(5, 20, 4, lambda b: math.sqrt(float(b.eigenvalues[0])))


@dpaudit.register("faulty/iclp-raw-eigenpairs", example=_FUNCTIONAL_EXAMPLE, faulty=True)
def iclp_raw_eigenpairs(
    epsilon: float = 1.0, n: int = 50, tau: float = 1.0, grid_size: int = 50, n_components: int = 8
):
    """ICLP with the Gram-matrix eigenpairs (mu_k, v_k) used as if L2-normalised (see docs/paper-errors.md#lr-discretization-scale).

    Records are curves with L2 norm <= tau (clipped). The tight 1,C bound of the
    projected mean is ``(2 tau / n) sqrt(sum_k 1/lambda_k)``; the builder
    computes it with the raw ``mu_k = m lambda_k`` and releases raw coefficients
    ``v_k' x = sqrt(m) <x, phi_k>`` with ICLP noise on ``mu_k``: the noise is
    ``sqrt(m)`` times too small relative to the data.

    Args:
        epsilon, n, grid_size, n_components: as :func:`iclp_unscaled_sigma`.
        tau: the public bound on each curve's L2 norm (records are clipped to it).

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    basis = kl_basis(Matern(1.5, 0.2), uniform_grid(grid_size), n_components=n_components)
    raw_eigenvalues = grid_size * basis.eigenvalues  # mu_k
    raw_vectors = basis.eigenfunctions / math.sqrt(grid_size)  # v_k, unit Euclidean norm
    wrong_sensitivity = 2.0 * tau / n * float(jnp.sqrt(jnp.sum(1.0 / raw_eigenvalues)))
    sigma = math.sqrt(2.0) * wrong_sensitivity / epsilon

    def summary(data):
        x = _curves(data, n, grid_size)
        coefficients = basis.project(x)  # L2 coefficients, for the clipping in L2
        clipped = _clip_to(coefficients, l2_norm(coefficients), tau)
        return jnp.mean(clipped, axis=0) * math.sqrt(grid_size)  # raw: v_k' x = sqrt(m) <x, phi_k>

    return iclp_release(
        "faulty/iclp-raw-eigenpairs",
        summary,
        raw_eigenvalues,
        sigma,
        epsilon=epsilon,
        sensitivity=wrong_sensitivity,
        reference="Lin & Reimherr Alg. 1 without the quadrature normalisation",
        params={
            "epsilon": epsilon,
            "n": n,
            "tau": tau,
            "grid_size": grid_size,
            "sigma": sigma,
            "raw_eigenvalues": raw_eigenvalues,
            "raw_eigenvectors": raw_vectors,
        },
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "tau bounds the L2 norm but the sensitivity uses the raw Gram eigenvalues "
                "mu_k = m lambda_k, which understates the 1,C sensitivity by sqrt(m); the true "
                f"epsilon is sqrt(m) epsilon with m = {grid_size} grid points (docs/paper-errors.md#lr-discretization-scale)."
            ),
            true_epsilon=math.sqrt(grid_size) * epsilon,
            visible_on="records at +-tau g with g's coefficients proportional to lambda_k^(-1/2).",
        ),
    )


@register_pair("faulty/iclp-raw-eigenpairs")
def _raw_pair():
    basis = kl_basis(Matern(1.5, 0.2), uniform_grid(20), n_components=4)
    weights = 1.0 / np.sqrt(np.asarray(basis.eigenvalues))
    g = np.asarray(basis.reconstruct(jnp.asarray(weights / np.linalg.norm(weights))))
    d = np.zeros((5, 20))
    d[0] = g  # L2 norm 1 = tau
    d_prime = d.copy()
    d_prime[0] = -g
    return d, d_prime


def _kde_parts(n, bandwidth, grid):
    def summary(data):
        x = jnp.clip(jnp.asarray(data, dtype=jnp.float64), 0.0, 1.0)
        if x.shape != (n,):
            raise ValueError(f"expected {n} scalar records, got shape {x.shape}.")
        bumps = jnp.exp(-((grid[:, None] - x[None, :]) ** 2) / (2 * bandwidth**2))
        return jnp.sum(bumps, axis=1) / (n * math.sqrt(2 * math.pi) * bandwidth)

    return summary


@dpaudit.register(
    "faulty/hrw-unsquared-covariance",
    example={"epsilon": 1.0, "delta": 0.1, "n": 2, "bandwidth": 0.05, "grid_size": 21},
    faulty=True,
)
def hrw_unsquared_covariance(
    epsilon: float = 1.0,
    delta: float = 0.1,
    n: int = 2,
    bandwidth: float = 0.05,
    grid_size: int = 21,
):
    """HRW batch release N(f_D, (c Delta/eps) K) with the multiplier not squared (see docs/paper-errors.md#hrw-batch-covariance).

    Args:
        epsilon, delta: the claim.
        n: the public number of scalar records (clipped to ``[0, 1]``).
        bandwidth: the Gaussian KDE bandwidth ``h``.
        grid_size: the number of grid points.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    check_delta(delta)
    if epsilon > 1:
        raise ValueError("HRW's claim needs epsilon <= 1.")
    grid = jnp.linspace(0.0, 1.0, grid_size)
    kernel = jnp.exp(-((grid[:, None] - grid[None, :]) ** 2) / (2 * bandwidth**2))
    sensitivity = math.sqrt(2.0) / (n * math.sqrt(2 * math.pi) * bandwidth)
    multiplier = classical_gaussian_multiplier(delta) * sensitivity / epsilon
    sigma = math.sqrt(multiplier)  # should be `multiplier`
    # records at two grid points a distance 1 apart: ||P(f_D - f_D')||_H = Delta (1 - e^-200)^(1/2)
    mu = sensitivity / sigma
    summary = _kde_parts(n, bandwidth, grid)
    covariance = sigma**2 * kernel + 1e-10 * jnp.eye(grid_size)

    return summary_release(
        "faulty/hrw-unsquared-covariance",
        summary,
        lambda loc: dist.MultivariateNormal(loc, covariance),
        epsilon=epsilon,
        sensitivity=sensitivity,
        sensitivity_norm="rkhs",
        reference="Hall, Rinaldo & Wasserman 2013, Sec. 5 as printed",
        delta=delta,
        difference_norm=lambda h: jnp.sqrt(
            h @ jnp.linalg.solve(kernel + 1e-10 * jnp.eye(grid_size), h)
        ),
        params={
            "epsilon": epsilon,
            "delta": delta,
            "n": n,
            "bandwidth": bandwidth,
            "sigma": sigma,
            "correct_sigma": multiplier,
            "mu": mu,
        },
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "the covariance multiplier c Delta/epsilon is not squared, so the noise standard "
                f"deviation is sqrt({multiplier:.3g}) instead of {multiplier:.3g}; the release is a "
                f"Gaussian mechanism with Delta/sigma = {mu:.3g} (docs/paper-errors.md#hrw-batch-covariance)."
            ),
            true_epsilon=gaussian_true_epsilon(mu, delta),
            true_delta=delta,
            visible_on="a record moved across the domain (0 -> 1): its two bumps do not overlap.",
        ),
    )


@register_pair("faulty/hrw-unsquared-covariance")
def _hrw_pair():
    return np.array([0.0, 0.5]), np.array([1.0, 0.5])


@dpaudit.register("faulty/rough-mean-smooth-noise", example=_FUNCTIONAL_EXAMPLE, faulty=True)
def rough_mean_smooth_noise(
    epsilon: float = 1.0,
    delta: float = 0.1,
    n: int = 50,
    tau: float = 1.0,
    grid_size: int = 50,
    n_components: int = 4,
):
    """Raw sample mean of rough curves released with RBF Gaussian-process noise (incompatible).

    Args:
        epsilon, delta: the claim.
        n: the public number of curves.
        tau: the public L2 bound of a curve.
        grid_size: the number of grid points of a curve.
        n_components: the KL components of the noise kept.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    check_delta(delta)
    if epsilon > 1:
        raise ValueError("the classical calibration needs epsilon <= 1.")
    grid = uniform_grid(grid_size)
    basis = kl_basis(Gaussian(0.2), grid, n_components=n_components)
    sensitivity = 2.0 * tau / n  # an L2 bound, used as if it were the Cameron-Martin norm
    sigma = classical_gaussian_multiplier(delta) * sensitivity / epsilon
    weights = grid.weights

    def summary(data):
        x = _curves(data, n, grid_size)
        norms = jnp.sqrt(jnp.sum(weights * x * x, axis=1))
        return jnp.mean(x * jnp.minimum(1.0, tau / jnp.maximum(norms, 1e-300))[:, None], axis=0)

    def model(data):
        noise = GaussianProcessNoise(basis.eigenvalues, sigma)
        numpyro.sample("release", GridNoise(noise, basis, loc=summary(data)))

    return dpaudit.Mechanism(
        name="faulty/rough-mean-smooth-noise",
        model=model,
        claim=dpaudit.Claim(
            epsilon=epsilon,
            delta=delta,
            sensitivity_norm="l2",
            sensitivity=sensitivity,
            reference="MRS Thm 3.3 misapplied (the summary is not compatible with the noise)",
        ),
        summary=summary,
        difference_norm=lambda h: jnp.sqrt(jnp.sum(weights * h * h, axis=-1)),
        params={"epsilon": epsilon, "delta": delta, "n": n, "tau": tau, "sigma": sigma},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "the raw mean of rough curves is not in the Cameron-Martin space of the RBF "
                "noise: neighbouring releases are mutually singular (MRS Thm 3.1), and on the "
                "grid the difference leaves the span of the noise, so no sigma works."
            ),
            true_epsilon=math.inf,
            true_delta=delta,
            visible_on="a record that is a rough curve (e.g. a step) replaced by zero.",
        ),
    )


@register_pair("faulty/rough-mean-smooth-noise")
def _rough_pair():
    d = np.zeros((5, 20))
    d[0, 10:] = 1.0  # a step: L2 norm sqrt(1/2) <= tau
    return d, np.zeros((5, 20))
