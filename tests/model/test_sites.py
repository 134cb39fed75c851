"""Every random site is accounted for: a second random site is refused, never silently ignored.

Two independent epsilon-DP Laplace draws of the same sum are 2 epsilon-DP
together. Audited through one of the two sites the model used to pass an
epsilon claim exactly (a false pass); now the model is refused with one
sentence naming the other site, and the same two draws declared as one
release are a violation.
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro import handlers

import dpaudit
from dpaudit.blackbox import as_sampler
from dpaudit.model.sites import model_trace

N, EPSILON = 10, 1.0
D, D_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)
CLAIM = dpaudit.Claim(epsilon=EPSILON, sensitivity=1.0, sensitivity_norm="l1")


def _two_sites(data):
    total = jnp.sum(data)
    numpyro.sample("release", dist.Laplace(total, 1.0 / EPSILON))
    numpyro.sample("second", dist.Laplace(total, 1.0 / EPSILON))


def _one_release_of_both(data):
    total = jnp.sum(data)
    numpyro.sample("release", dist.Laplace(jnp.stack([total, total]), 1.0 / EPSILON).to_event(1))


def test_a_second_random_site_is_refused_by_every_entry_point():
    mech = dpaudit.Mechanism("two-sites", _two_sites, CLAIM)
    for run in (
        lambda: dpaudit.audit(mech, D, D_PRIME, samples=2000),
        lambda: dpaudit.privacy_loss(mech, D, D_PRIME, jnp.zeros((3,)), route="density"),
        lambda: dpaudit.privacy_loss(mech, D, D_PRIME, jnp.zeros((3,)), route="model"),
        lambda: as_sampler(mech)(D, 10, jax.random.key(0)),
    ):
        with pytest.raises(ValueError, match=r"random site 'second' besides its release site"):
            run()


def test_the_two_draws_as_one_release_are_a_violation_not_a_pass():
    mech = dpaudit.Mechanism("both-released", _one_release_of_both, CLAIM)
    result = dpaudit.audit(mech, D, D_PRIME, samples=4000, seed=0)
    assert result.verdict == "violation"
    assert result.epsilon_lower == pytest.approx(2 * EPSILON, rel=1e-9)  # exact: sup L = 2 epsilon


def test_observed_sites_are_data_and_stay_allowed():
    def model(data):
        numpyro.sample("records", dist.Normal(0.0, 1.0), obs=data)
        numpyro.sample("release", dist.Laplace(jnp.sum(data), 1.0 / EPSILON))

    mech = dpaudit.Mechanism("observed-data", model, CLAIM)
    assert dpaudit.audit(mech, D, D_PRIME, samples=2000, seed=0).verdict == "pass"


def _three_sites(data):
    x = numpyro.sample("a", dist.Laplace(jnp.mean(data), 1.0))
    with numpyro.plate("p", 3):
        numpyro.sample("b", dist.Normal(x, 2.0))
    numpyro.sample("c", dist.Bernoulli(0.3), infer={"dpaudit": "latent"})


@pytest.mark.parametrize("seed", [0, 12345, 2**33 + 1, "key"])
def test_model_trace_is_numpyros_seeded_trace_bit_for_bit(seed):
    """model_trace makes its keys on the host and splits them in one program: numpyro's
    seeded trace, the same sites and the same draws to the last bit."""
    rng_seed = jax.random.key(7) if seed == "key" else seed
    data = jnp.arange(5.0)
    expected = handlers.trace(handlers.seed(_three_sites, rng_seed=rng_seed)).get_trace(data)
    got = model_trace(_three_sites, data, rng_seed)
    assert list(got) == list(expected)
    for name, site in expected.items():
        if site["type"] == "sample":
            a, b = np.asarray(site["value"]), np.asarray(got[name]["value"])
            assert a.dtype == b.dtype and np.array_equal(a, b), name


def test_model_trace_refuses_a_constant_parameter_as_numpyro_does():
    def model(data):
        numpyro.sample("release", dist.Laplace(jnp.mean(data), -1.0, validate_args=True))

    with pytest.raises(ValueError, match="Laplace distribution got invalid scale parameter"):
        model_trace(model, jnp.zeros(3))
