r"""A functional release of a mean curve (ICLP) and a covariance (Gaussian process) together.

Each record is a pair of curves ``(X_i, Y_i)`` on a public grid of ``m`` points
(two functional variables of one subject), given as one row of ``2 m`` grid
values: ``X_i`` first, then ``Y_i``. Both are read in the first ``K``
Karhunen–Loève coefficients of LR's Matérn covariance ``C`` (eigenvalues
``lambda_1 >= ... >= lambda_K``, :func:`mechanisms.iclp.mean.default_basis`):

* **mean curve, site ``"mean"``** — the scores ``<X_i, phi_j>`` are clipped to
  ``[-tau, tau]`` (score clipping), averaged, and the mean curve
  ``sum_j bar x_j phi_j`` is released on the grid with ICLP noise
  (:class:`~dpaudit.model.noise.ICLPNoise`, ``sigma_1 = sqrt(2) Delta_1 / epsilon_1``):
  pure ``epsilon_1``-DP with the ``1,C`` sensitivity
  ``Delta_1 = (2 tau / n) sum_j lambda_j^{-1/2}``, attained when record 0's scores go
  from the corner ``(tau, ..., tau)`` to ``(-tau, ..., -tau)``.
* **covariance, site ``"covariance"``** — the coefficient vectors ``y_i`` of the
  ``Y_i`` are scaled down to norm ``tau`` when longer, and the covariance operator of
  these centred curves, ``(1/n) sum_i y_i y_i^T`` (``K x K``, flattened row-major), is
  released with Gaussian-process noise of covariance ``C (x) C`` (eigenvalues
  ``lambda_j lambda_l``; :class:`~dpaudit.model.noise.GaussianProcessNoise`), ``sigma_2``
  the analytic calibration of ``(epsilon_2, delta)`` for the Cameron–Martin
  sensitivity ``Delta_2 = tau^2 sqrt(lambda_K^{-2} + lambda_{K-1}^{-2}) / n``
  (:func:`covariance_sensitivity`, which proves it and names the pair attaining it).

The claim is their (basic) composition, ``(epsilon_1 + epsilon_2, delta)``. Because
the two sites read different curves of the record, the worst pair of each site can
be taken at once, and every privacy curve is monotone in each Laplace parameter and
in the Gaussian ``mu``: the worst case of the joint release is the composition of the
two worst cases (Laplace parameters ``a_j = 2 sqrt 2 tau / (n sigma_1 sqrt(lambda_j))``,
summing to ``epsilon_1``, and ``mu = Delta_2 / sigma_2``), computed by
:func:`dpaudit.accounting.composition.compose_accounting`.

* ``composed-functional-pair`` — the correct release.
* ``faulty/composed-functional-pair-half-covariance`` — the covariance noise is
  calibrated to half its sensitivity (``mu`` doubles). True epsilon at ``delta``: the
  composed profile of the worst case (:func:`true_epsilon`).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro

import dpaudit
from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, compose_accounting
from dpaudit.core.checks import check_count, check_delta, check_epsilon, check_number
from dpaudit.model.noise import (
    GaussianProcessNoise,
    GridNoise,
    ICLPNoise,
    analytic_gaussian_sigma,
    iclp_sigma,
)
from mechanisms.faulty import register_pair
from mechanisms.iclp.mean import default_basis

__all__ = [
    "covariance_sensitivity",
    "example_pair",
    "functional_pair",
    "mean_sensitivity",
    "pair_summaries",
    "true_epsilon",
]

_SITES = ("mean", "covariance")
_EXAMPLE = {
    "epsilon_mean": 0.5,
    "epsilon_covariance": 0.5,
    "delta": 1e-5,
    "n": 50,
    "grid_size": 20,
    "n_components": 4,
}
# The true epsilon of the faulty variant is the composed profile's upper curve on a grid
# of this spacing (the audit's default): it exceeds the exact value by about the grid
# spacing at most (tests: against the lower curve and dp_accounting), far inside the 10 %
# the audit is held to.
_TRUE_DISCRETIZATION = 1e-4


def mean_sensitivity(eigenvalues, *, n: int, tau: float) -> float:
    """``1,C`` sensitivity of the mean of score-clipped coefficients: ``(2 tau / n) sum_j lambda_j^{-1/2}``.

    Replacing one record moves the mean's coefficient ``j`` by ``(x_j - x'_j) / n`` with
    ``x_j, x'_j`` in ``[-tau, tau]``, so ``sum_j |Delta_j| / sqrt(lambda_j)`` is at most the
    bound, with equality at opposite corners of the box.

    Args:
        eigenvalues: the ``K`` eigenvalues ``lambda_j``.
        n: the number of records.
        tau: the score clipping bound.

    Returns:
        ``Delta_1``.
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    return 2.0 * tau * float(np.sum(lam**-0.5)) / n


def covariance_sensitivity(eigenvalues, *, n: int, tau: float) -> float:
    r"""Cameron–Martin sensitivity of ``(1/n) sum_i y_i y_i^T`` under ``C (x) C`` noise.

    Replacing ``a`` by ``b`` (``||a||, ||b|| <= tau``) moves the release by
    ``(a a^T - b b^T)/n``, whose squared CM norm is ``||u u^T - v v^T||_F^2 / n^2`` with
    ``u = Lambda^{-1/2} a``, ``v = Lambda^{-1/2} b``. The symmetric matrix
    ``u u^T - v v^T`` has rank at most 2: eigenvalues ``alpha >= 0 >= -beta`` with
    orthonormal eigenvectors ``w_1, w_2``, and ``alpha <= (w_1 . u)^2 <= tau^2
    |Lambda^{-1/2} w_1|^2``, ``beta <= tau^2 |Lambda^{-1/2} w_2|^2``. With ``p = w_1^2``,
    ``q = w_2^2`` (componentwise), ``alpha^2 + beta^2 <= tau^4 ((sum_j p_j /
    lambda_j)^2 + (sum_j q_j / lambda_j)^2)``, a convex function on the polytope
    ``{p, q >= 0, sum p = sum q = 1, p + q <= 1}``, whose vertices are integral (a
    bipartite, totally unimodular system): ``p = e_i``, ``q = e_k``, ``i != k``. The
    maximum is ``tau^4 (lambda_K^{-2} + lambda_{K-1}^{-2})``, attained by
    ``a = tau e_K``, ``b = tau e_{K-1}``.

    Args:
        eigenvalues: the ``K >= 2`` eigenvalues, in decreasing order.
        n: the number of records.
        tau: the bound on each coefficient vector's norm.

    Returns:
        ``Delta_2``.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=np.float64))
    return tau**2 * math.sqrt(lam[0] ** -2 + lam[1] ** -2) / n


def pair_summaries(data, basis, n: int, tau: float):
    """The two summaries: mean-curve grid values and flattened covariance coefficients.

    Args:
        data: ``(n, 2 m)`` records, ``X_i`` grid values then ``Y_i`` grid values.
        basis: the Karhunen–Loève basis of the grid (``m`` points, ``K`` components).
        n: the public number of records.
        tau: the clipping bound (scores of ``X``, coefficient norms of ``Y``).

    Returns:
        ``(mean_values (m,), covariance (K * K,))``.

    Raises:
        ValueError: for data of another shape.
    """
    m = basis.grid_size
    x = jnp.asarray(data, dtype=jnp.float64)
    if x.shape != (n, 2 * m):
        raise ValueError(
            f"the mechanism was built for {n} records of 2 x {m} grid values (X then Y), "
            f"got shape {x.shape}."
        )
    weights, phi = basis.grid.weights, basis.eigenfunctions
    scores = jnp.clip((x[:, :m] * weights) @ phi, -tau, tau)
    coefficients = (x[:, m:] * weights) @ phi
    norms = jnp.sqrt(jnp.sum(coefficients**2, axis=1, keepdims=True))
    coefficients = coefficients * jnp.minimum(1.0, tau / jnp.maximum(norms, 1e-300))
    mean_values = phi @ jnp.mean(scores, axis=0)
    return mean_values, (coefficients.T @ coefficients / n).reshape(-1)


def true_epsilon(eigenvalues, sigma_mean: float, mu: float, *, n: int, tau: float, delta: float):
    """Epsilon at ``delta`` of the joint worst case: the worst mean move composed with ``mu``.

    Args:
        eigenvalues: the ``K`` eigenvalues.
        sigma_mean: the mean site's ICLP ``sigma``.
        mu: the covariance site's worst-case Gaussian ``mu = Delta_2 / sigma_2``.
        n: the number of records.
        tau: the clipping bound.
        delta: the delta.

    Returns:
        An upper bound on the true epsilon, within the curves' discretisation of it.
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    a = math.sqrt(2.0) * (2.0 * tau / n) / (sigma_mean * np.sqrt(lam))
    parts = [LaplaceComponent(float(x)) for x in a] + [GaussianComponent(float(mu))]
    acc = compose_accounting(parts, discretization=_TRUE_DISCRETIZATION, lower=False)
    return acc.epsilon_upper(delta)


def functional_pair(
    name: str,
    *,
    epsilon_mean: float,
    epsilon_covariance: float,
    delta: float,
    n: int,
    tau: float,
    grid_size: int,
    n_components: int,
    covariance_sensitivity_factor: float = 1.0,
    known_flaw=None,
) -> dpaudit.Mechanism:
    """The mean curve and the covariance of the records at two sites (module docstring).

    Args:
        name: the catalogue name.
        epsilon_mean: the mean site's pure epsilon.
        epsilon_covariance: the covariance site's epsilon.
        delta: the covariance site's (and the claim's) delta.
        n: the public number of records.
        tau: the public clipping bound.
        grid_size: grid points ``m`` of each curve.
        n_components: Karhunen–Loève components ``K >= 2``.
        covariance_sensitivity_factor: the covariance noise is calibrated to this multiple
            of its sensitivity (1 for the correct release).
        known_flaw: the true guarantee of a faulty variant.

    Returns:
        The :class:`~dpaudit.Mechanism`.
    """
    basis = default_basis(grid_size, n_components)
    lam = np.asarray(basis.eigenvalues)
    delta_1 = mean_sensitivity(lam, n=n, tau=tau)
    delta_2 = covariance_sensitivity(lam, n=n, tau=tau)
    sigma_1 = iclp_sigma(delta_1, epsilon_mean)
    sigma_2 = analytic_gaussian_sigma(
        covariance_sensitivity_factor * delta_2, epsilon_covariance, delta
    )
    mean_noise = ICLPNoise(basis.eigenvalues, sigma_1)
    lam2 = jnp.outer(basis.eigenvalues, basis.eigenvalues).reshape(-1)

    def model(data):
        mean_values, covariance = pair_summaries(data, basis, n, tau)
        numpyro.sample("mean", GridNoise(mean_noise, basis, loc=mean_values))
        numpyro.sample("covariance", GaussianProcessNoise(lam2, sigma_2, loc=covariance))

    claim = dpaudit.Claim(
        epsilon=epsilon_mean + epsilon_covariance,
        delta=delta,
        reference="Lin & Reimherr Thm 2 (ICLP, pure) for the mean, Balle & Wang 2018 "
        "(analytic Gaussian, Cameron-Martin sensitivity) for the covariance, basic "
        "composition (Dwork & Roth 2014, Thm 3.16)",
    )
    params = {
        "epsilon_mean": epsilon_mean,
        "epsilon_covariance": epsilon_covariance,
        "delta": delta,
        "n": n,
        "tau": tau,
        "grid_size": grid_size,
        "n_components": n_components,
        "sigma_mean": sigma_1,
        "sigma_covariance": sigma_2,
        "sensitivity_mean": delta_1,
        "sensitivity_covariance": delta_2,
    }
    return dpaudit.Mechanism(
        name=name,
        model=model,
        claim=claim,
        params=params,
        release_site=_SITES,
        description=f"Mean curve (ICLP, sigma {sigma_1:.4g}) and covariance (GP noise, sigma "
        f"{sigma_2:.4g}) of n = {n} curve pairs, K = {n_components}, at two sites.",
        known_flaw=known_flaw,
    )


def _checked(epsilon_mean, epsilon_covariance, delta, n, tau, grid_size, n_components):
    check_epsilon(epsilon_mean)
    check_epsilon(epsilon_covariance)
    check_delta(delta)
    tau = check_number("tau", tau, hint=" (the public clipping bound)")
    n_components = check_count("n_components", n_components)
    grid_size = check_count("grid_size", grid_size)
    if not 2 <= n_components <= grid_size:
        raise ValueError(
            f"n_components must lie in [2, grid_size = {grid_size}], got {n_components}: the "
            "covariance sensitivity needs two components."
        )
    return {
        "epsilon_mean": float(epsilon_mean),
        "epsilon_covariance": float(epsilon_covariance),
        "delta": float(delta),
        "n": check_count("n", n),
        "tau": tau,
        "grid_size": grid_size,
        "n_components": n_components,
    }


@dpaudit.register("composed-functional-pair", example=_EXAMPLE)
def composed_functional_pair(
    epsilon_mean: float = 0.5,
    epsilon_covariance: float = 0.5,
    delta: float = 1e-5,
    n: int = 50,
    tau: float = 1.0,
    grid_size: int = 20,
    n_components: int = 4,
) -> dpaudit.Mechanism:
    """Mean curve (ICLP) and covariance (GP noise) released together, claimed by composition.

    Args:
        epsilon_mean: the mean site's pure epsilon.
        epsilon_covariance: the covariance site's epsilon.
        delta: the covariance site's delta.
        n: the public number of records (curve pairs).
        tau: the public clipping bound.
        grid_size: grid points of each curve.
        n_components: Karhunen–Loève components (at least 2).

    Returns:
        The :class:`~dpaudit.Mechanism` claiming ``(epsilon_mean + epsilon_covariance, delta)``.

    Raises:
        ValueError: one sentence naming the bad argument.
    """
    kw = _checked(epsilon_mean, epsilon_covariance, delta, n, tau, grid_size, n_components)
    return functional_pair("composed-functional-pair", **kw)


@dpaudit.register("faulty/composed-functional-pair-half-covariance", example=_EXAMPLE, faulty=True)
def composed_functional_pair_half_covariance(
    epsilon_mean: float = 0.5,
    epsilon_covariance: float = 0.5,
    delta: float = 1e-5,
    n: int = 50,
    tau: float = 1.0,
    grid_size: int = 20,
    n_components: int = 4,
) -> dpaudit.Mechanism:
    """The functional pair with the covariance noise calibrated to half its sensitivity.

    Args:
        epsilon_mean, epsilon_covariance, delta, n, tau, grid_size, n_components: as
            :func:`composed_functional_pair`.

    Returns:
        The :class:`~dpaudit.Mechanism`; ``known_flaw.true_epsilon`` is the epsilon at
        ``delta`` of the joint worst case (:func:`true_epsilon`).
    """
    kw = _checked(epsilon_mean, epsilon_covariance, delta, n, tau, grid_size, n_components)
    lam = np.asarray(default_basis(kw["grid_size"], kw["n_components"]).eigenvalues)
    delta_2 = covariance_sensitivity(lam, n=kw["n"], tau=kw["tau"])
    sigma_2 = analytic_gaussian_sigma(delta_2 / 2.0, kw["epsilon_covariance"], kw["delta"])
    sigma_1 = iclp_sigma(mean_sensitivity(lam, n=kw["n"], tau=kw["tau"]), kw["epsilon_mean"])
    truth = true_epsilon(
        lam, sigma_1, delta_2 / sigma_2, n=kw["n"], tau=kw["tau"], delta=kw["delta"]
    )
    flaw = dpaudit.KnownFlaw(
        reason="the covariance's Gaussian noise is calibrated to half its Cameron-Martin "
        "sensitivity, so its mu is twice the calibrated one and the composition exceeds "
        "the claimed (epsilon, delta).",
        true_epsilon=truth,
        true_delta=kw["delta"],
        visible_on="record 0's X scores from one corner of the clipping box to the other and "
        "its Y from tau phi_K to tau phi_{K-1} (the worst case of both sites)",
    )
    return functional_pair(
        "faulty/composed-functional-pair-half-covariance",
        covariance_sensitivity_factor=0.5,
        known_flaw=flaw,
        **kw,
    )


def _worst_pair(n: int, grid_size: int, n_components: int, tau: float, seed: int = 0):
    """Random curve pairs; record 0 at the joint worst move of the two sites."""
    basis = default_basis(grid_size, n_components)
    phi = np.asarray(basis.eigenfunctions)
    rng = np.random.default_rng(seed)
    # other records: scores well inside the box and coefficient norms below tau
    coefficients = rng.uniform(-0.3, 0.3, size=(n, 2, n_components)) * tau / n_components
    data = np.concatenate([coefficients[:, 0] @ phi.T, coefficients[:, 1] @ phi.T], axis=1)
    data_prime = data.copy()
    corner = 2.0 * tau * phi.sum(axis=1)  # every score 2 tau, clipped to tau
    data[0, :grid_size], data_prime[0, :grid_size] = corner, -corner
    data[0, grid_size:] = tau * phi[:, -1]
    data_prime[0, grid_size:] = tau * phi[:, -2]
    return data, data_prime


def example_pair(name: str, seed: int = 0):
    """The worst neighbouring pair of both functional-pair entries (example parameters).

    Args:
        name: ``"composed-functional-pair"`` or its faulty variant.
        seed: seed of the other records.

    Returns:
        ``(D, D')``, arrays ``(n, 2 grid_size)``.

    Raises:
        ValueError: for another name.
    """
    if name not in ("composed-functional-pair", "faulty/composed-functional-pair-half-covariance"):
        raise ValueError(f"mechanisms.composed.functional_pair documents no pair for {name!r}.")
    ex = _EXAMPLE
    return _worst_pair(ex["n"], ex["grid_size"], ex["n_components"], 1.0, seed)


@register_pair("faulty/composed-functional-pair-half-covariance")
def _faulty_pair():
    return example_pair("faulty/composed-functional-pair-half-covariance")
