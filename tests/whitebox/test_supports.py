"""Supports respected: a release impossible under D' is an infinite loss on every route.

numpyro's ``tree_unflatten`` drops the class-default argument validation, so inside
``jit`` with the distribution passed as an argument ``log_prob`` used to score
releases outside the support as finite (``Uniform(0, 1).log_prob(1.02) == 0``). The
faulty catalogue's data-dependent-support mechanisms then passed on the density route.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest
from numpyro.distributions.transforms import AffineTransform

import dpaudit
from dpaudit.model.densities import site_log_prob
from dpaudit.model.sites import supported_log_prob
from mechanisms.faulty import example_pair
from mechanisms.faulty.support import truncated_laplace_moved_mass

SUPPORT_FLAWS = [
    "faulty/uniform-data-dependent-support",
    "faulty/shifted-exponential-support",
    "faulty/discrete-uniform-support",
    "faulty/truncated-laplace-support",
]

# (law, a value outside its support, a value inside)
LAWS = [
    (dist.Uniform(0.0, 1.0), 1.02, 0.5),
    (dist.Exponential(2.0), -0.1, 0.3),
    (dist.TransformedDistribution(dist.Exponential(2.0), AffineTransform(0.5, 1.0)), 0.4, 0.6),
    (dist.DiscreteUniform(3, 12), 2.0, 5.0),
    (dist.TruncatedNormal(0.0, 1.0, low=-0.5, high=0.5), 0.7, 0.1),
    (dist.TruncatedDistribution(dist.Laplace(0.0, 1.0), low=-0.5, high=0.5), -0.6, 0.2),
    (dist.Poisson(3.0), -1.0, 2.0),
    (dist.Beta(2.0, 2.0), 1.5, 0.5),
    (dist.Uniform(jnp.zeros(3), 1.0).to_event(1), jnp.array([0.5, 1.2, 0.5]), jnp.full(3, 0.5)),
    (dist.Delta(1.0), 1.5, 1.0),
]


@pytest.mark.parametrize("law, outside, inside", LAWS, ids=lambda v: type(v).__name__)
def test_log_prob_is_minus_inf_outside_the_support_jitted_and_not(law, outside, inside):
    x = jnp.stack([jnp.asarray(outside, dtype=jnp.float64), jnp.asarray(inside, jnp.float64)])
    jitted = jax.jit(site_log_prob)(law, x)
    eager = site_log_prob(law, x)
    for values in (jitted, eager):
        assert float(values[0]) == -math.inf
        assert np.isfinite(float(values[1]))
    # numpyro alone, jitted with the law as an argument, does not (the defect being fixed);
    # if numpyro ever fixes it this check tells us the workaround may go
    raw = jax.jit(lambda d, v: d.log_prob(v))(law, x[0])
    assert np.all(np.isfinite(np.asarray(raw))) or np.any(np.asarray(raw) == -math.inf)


def test_supported_log_prob_leaves_values_inside_the_support_unchanged():
    law = dist.Normal(0.0, 1.0)
    x = jnp.linspace(-3, 3, 7)
    np.testing.assert_array_equal(jax.jit(supported_log_prob)(law, x), law.log_prob(x))


def test_a_data_dependent_support_is_an_infinite_loss_in_the_loss_kernel():
    mech = dpaudit.build("faulty/uniform-data-dependent-support")
    d, d_prime = example_pair("faulty/uniform-data-dependent-support")
    x = jnp.array([[0.01], [0.5]])  # 0.01 is impossible under D' (support [0.05, 1.05])
    loss = dpaudit.privacy_loss(mech, d, d_prime, x, route="density")
    assert float(loss[0]) == math.inf and abs(float(loss[1])) < 1e-12


def test_truncated_laplace_moved_mass_matches_quadrature():
    from scipy import integrate

    b, c, n = 0.1, 0.3, 20
    z = 2 * b * (1 - math.exp(-c / b))
    mass, _ = integrate.quad(lambda x: math.exp(-abs(x) / b) / z, -c, -c + 1 / n)
    assert truncated_laplace_moved_mass(n, b, c) == pytest.approx(mass, rel=1e-10)


# The density route jits the laws as arguments (where the support was lost); the model route
# builds them inside the trace, so one law of each kind in the default suite, the rest slow.
ROUTE_CASES = [(name, "density") for name in SUPPORT_FLAWS] + [
    (name, "model")
    if name == SUPPORT_FLAWS[0]
    else pytest.param(name, "model", marks=pytest.mark.slow)
    for name in SUPPORT_FLAWS
]


@pytest.mark.parametrize(("name", "route"), ROUTE_CASES)
def test_data_dependent_supports_are_violations_with_their_true_delta(name, route):
    mech = dpaudit.build(name)
    d, d_prime = example_pair(name)
    result = dpaudit.audit(mech, d, d_prime, samples=3000, seed=11, route=route)
    true_delta = mech.params["true_delta_at_claimed_epsilon"]
    assert result.verdict == "violation"
    delta = result.delta_at_claimed_epsilon
    # certified at 95 %: below the truth, and within a factor 3 of it at 3000 draws
    assert delta.lower <= true_delta <= delta.upper
    assert delta.lower > max(mech.claim.delta, 0.3 * true_delta)


def test_the_default_route_and_the_blackbox_reference_statistic_agree():
    """``route="auto"`` and the black-box statistic built on the model's densities (they jit
    the release laws as arguments) both see the infinite losses."""
    from dpaudit.blackbox import as_sampler

    name = "faulty/shifted-exponential-support"
    mech = dpaudit.build(name)
    d, d_prime = example_pair(name)
    assert dpaudit.audit(mech, d, d_prime, samples=3000, seed=5).verdict == "violation"
    result = dpaudit.blackbox_audit(
        as_sampler(mech), d, d_prime, mech.claim, statistic="model", reference=mech,
        samples=5000, seed=3, progress=False,
    )  # fmt: skip
    assert result.verdict == "violation"
