"""Releases whose sites are noises of different families: routed to exact composed accounting.

Oracles: dp_accounting's composition of the sites' PLDs (``from_laplace_mechanism`` and
``from_gaussian_mechanism`` at the same discretisation), and the closed-form supremum of
independent Laplace and linear-Laplace sites (the sum of the sites' ``||d||_1 / b``).
"""

import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from dp_accounting.pld import privacy_loss_distribution as dp_pld

import dpaudit
from dpaudit.accounting.composition import BoundedComposition
from dpaudit.model.noise.linear_laplace import LinearLaplace
from dpaudit.whitebox.plan import site_accounting

N = 10
D, D_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)
LAPLACE_SCALE, GAUSS_SIGMA = 2.0, 3.0


def _laplace_and_gaussian(sigma):
    def model(data):
        total = jnp.sum(data)
        numpyro.sample("lap", dist.Laplace(total, LAPLACE_SCALE))
        numpyro.sample("gauss", dist.Normal(jnp.stack([total, 2 * total]), sigma).to_event(1))

    return model


def _mechanism(model, claim, sites=("lap", "gauss")):
    return dpaudit.Mechanism("mixed", model, claim, release_site=sites)


def _dp_reference(sigma):
    # the Gaussian site's sensitivity is ||(1, 2)||_2 = sqrt(5) on the noise scale sigma
    grid = 1e-4
    return dp_pld.from_laplace_mechanism(
        LAPLACE_SCALE, sensitivity=1.0, value_discretization_interval=grid
    ).compose(
        dp_pld.from_gaussian_mechanism(
            sigma, sensitivity=math.sqrt(5.0), value_discretization_interval=grid
        )
    )


def test_laplace_plus_gaussian_sites_match_dp_accounting_composition():
    claim = dpaudit.Claim(epsilon=2.6, delta=1e-3, sensitivity=1.0, sensitivity_norm="l1")
    mech = _mechanism(_laplace_and_gaussian(GAUSS_SIGMA), claim)
    acc = site_accounting(mech.release_distribution(D), mech.release_distribution(D_PRIME))
    assert acc.family == "composed" and acc.sup_loss == math.inf
    ref = _dp_reference(GAUSS_SIGMA)
    eps = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0])
    theirs = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    upper, lower = acc.delta_upper(eps), acc.delta_lower(eps)
    # dp_accounting's pessimistic curve is itself an upper bound on the same grid: ours is
    # never below it (beyond float noise) and within its discretisation of it
    assert np.all(upper >= theirs * (1 - 1e-9))
    np.testing.assert_allclose(upper, theirs, rtol=1e-5)
    assert np.all(lower <= theirs) and np.all(lower >= theirs * (1 - 1e-3))
    for delta in (1e-3, 1e-5):
        assert acc.epsilon_upper(delta) == pytest.approx(ref.get_epsilon_for_delta(delta), abs=1e-4)
        assert acc.epsilon_lower(delta) <= acc.epsilon_upper(delta)

    # the audit of the correct release at a claim above the composed epsilon: exact pass
    result = dpaudit.audit(mech, D, D_PRIME, samples=1000, seed=0)
    assert result.verdict == "pass" and result.route == "density"
    assert result.exact.family == "composed"
    assert result.delta_at_claimed_epsilon.exact_upper == pytest.approx(
        ref.get_delta_for_epsilon(claim.epsilon), rel=1e-5
    )
    assert result.epsilon_at_claimed_delta.exact == pytest.approx(acc.epsilon_upper(1e-3))


def test_a_site_with_the_wrong_noise_multiplier_is_a_violation_at_the_accounting_bound():
    correct = site_accounting(
        *(
            _mechanism(_laplace_and_gaussian(GAUSS_SIGMA), dpaudit.Claim(1.0)).release_distribution(
                x
            )
            for x in (D, D_PRIME)
        )
    )
    delta = 1e-3
    claim_eps = correct.epsilon_upper(delta) * 1.01  # what the correct composition satisfies
    claim = dpaudit.Claim(epsilon=claim_eps, delta=delta, sensitivity=1.0, sensitivity_norm="l1")
    # the combiner used half the Gaussian site's sigma
    faulty = _mechanism(_laplace_and_gaussian(GAUSS_SIGMA / 2), claim)
    result = dpaudit.audit(faulty, D, D_PRIME, samples=1000, seed=1)
    true_eps = _dp_reference(GAUSS_SIGMA / 2).get_epsilon_for_delta(delta)
    assert result.verdict == "violation"
    assert result.delta_at_claimed_epsilon.exact_lower > delta
    assert 0.9 * true_eps <= result.epsilon_lower <= true_eps + 1e-3


def _laplace_and_linear_laplace(tree_scale):
    matrix = jnp.array([[1.0, 0.0], [1.0, 1.0]])

    def model(data):
        total = jnp.sum(data)
        numpyro.sample("lap", dist.Laplace(total, LAPLACE_SCALE))
        numpyro.sample("tree", LinearLaplace(total * jnp.ones(2), matrix, scale=tree_scale))

    return model


@pytest.mark.parametrize(
    ("tree_scale", "verdict", "sup"),
    [(2.0, "pass", 1.0), pytest.param(1.0, "violation", 1.5, marks=pytest.mark.slow)],
)
def test_laplace_with_linear_laplace_sites_is_judged_on_the_summed_supremum(
    tree_scale, verdict, sup
):
    # sup L = 1/2 (Laplace site, scale 2) + min{||d||_1 : A d = (1, 1)} / b = 1 / b
    claim = dpaudit.Claim(epsilon=1.0, sensitivity=1.0, sensitivity_norm="l1")
    mech = _mechanism(_laplace_and_linear_laplace(tree_scale), claim, ("lap", "tree"))
    acc = site_accounting(mech.release_distribution(D), mech.release_distribution(D_PRIME))
    assert isinstance(acc, BoundedComposition)
    assert acc.sup_loss_lower <= sup <= acc.sup_loss
    assert acc.sup_loss == pytest.approx(sup, rel=1e-9)
    result = dpaudit.audit(mech, D, D_PRIME, samples=500, seed=2)
    assert result.verdict == verdict
    if verdict == "violation":
        assert result.epsilon_lower == pytest.approx(sup, rel=1e-9)
        assert result.epsilon_lower <= sup
