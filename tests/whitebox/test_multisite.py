"""Whole-trace audits: releases of several sample sites, latent and shared randomness.

Oracles: scipy's Laplace/Normal densities for the joint loss of independent sites,
the Gaussian privacy curve ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``
with ``mu = sqrt(sum mu_i^2)`` for composed Gaussian sites, hand-written mixtures for
enumerated latent sites, and the sequential density of an adaptive pair.
"""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.stats

import dpaudit
from dpaudit.model.shift import joint_noise_shift
from dpaudit.model.sites import MAX_ENUMERATION, JointRelease

N, EPSILON = 10, 1.0
D, D_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)
CLAIM = dpaudit.Claim(epsilon=EPSILON, sensitivity=1.0, sensitivity_norm="l1")


def _two_laplace(data):
    total = jnp.sum(data)
    numpyro.sample("first", dist.Laplace(total, 1.0 / EPSILON))
    numpyro.sample("second", dist.Laplace(total, 1.0 / EPSILON))


def test_the_two_site_false_pass_is_a_violation_or_an_error_never_a_pass():
    both = dpaudit.Mechanism("both", _two_laplace, CLAIM, release_site=("first", "second"))
    assert both.release_sites == ("first", "second")
    result = dpaudit.audit(both, D, D_PRIME, samples=4000, seed=3)
    assert result.verdict == "violation"
    # exact: the pair is 2 epsilon-DP, sup L = 2 epsilon, certified by a release
    assert result.epsilon_lower == pytest.approx(2 * EPSILON, rel=1e-9)
    assert result.route == "closed-form" and result.exact is not None
    assert set(result.certificate.sites) == {"first", "second"}
    flat = np.concatenate([np.ravel(v) for v in result.certificate.sites.values()])
    np.testing.assert_array_equal(flat, result.certificate.release)
    record = json.loads(json.dumps(result.to_dict()))
    assert set(record["certificate"]["sites"]) == {"first", "second"}

    one = dpaudit.Mechanism("one", _two_laplace, CLAIM, release_site="first")
    with pytest.raises(ValueError, match=r"random site 'second'.*release_site tuple.*latent"):
        dpaudit.audit(one, D, D_PRIME, samples=2000)


@pytest.mark.slow
def test_the_density_route_finds_the_two_site_violation_too():
    both = dpaudit.Mechanism("both", _two_laplace, CLAIM, release_site=("first", "second"))
    result = dpaudit.audit(both, D, D_PRIME, samples=4000, seed=5, route="density")
    assert result.verdict == "violation"
    assert result.epsilon_lower == pytest.approx(2 * EPSILON, rel=1e-6)


def _laplace_and_normal(data):
    total = jnp.sum(data)
    numpyro.sample("lap", dist.Laplace(total, 2.0))
    numpyro.sample("gauss", dist.Normal(jnp.stack([total, 2 * total]), 3.0).to_event(1))


@pytest.mark.parametrize("route", ["density", "model"])
def test_joint_loss_of_independent_sites_is_the_sum_of_scipy_site_losses(route):
    mech = dpaudit.Mechanism("mixed", _laplace_and_normal, CLAIM, release_site=("lap", "gauss"))
    x = np.random.default_rng(0).normal(size=(7, 3)) * 3
    loss = np.asarray(dpaudit.privacy_loss(mech, D, D_PRIME, x, route=route))

    def log_p(total):
        return scipy.stats.laplace.logpdf(x[:, 0], total, 2.0) + np.sum(
            scipy.stats.norm.logpdf(x[:, 1:], [total, 2 * total], 3.0), axis=1
        )

    np.testing.assert_allclose(loss, log_p(0.0) - log_p(1.0), rtol=1e-12, atol=1e-12)
    draws = mech.sample(D, jax.random.key(0), 5)
    assert draws.shape == (5, 3)


@pytest.mark.slow
def test_mixed_families_go_by_the_density_route_with_composed_accounting():
    claim = dpaudit.Claim(epsilon=3.0, delta=0.05, sensitivity=1.0, sensitivity_norm="l1")
    mech = dpaudit.Mechanism("mixed", _laplace_and_normal, claim, release_site=("lap", "gauss"))
    result = dpaudit.audit(mech, D, D_PRIME, samples=2000, seed=0)
    # tests/whitebox/test_mixed_sites.py checks the composed curve against dp_accounting
    assert result.route == "density" and result.exact.family == "composed"
    assert result.verdict == "pass"


def _k_gaussians(data, k=3, sigma=(1.0, 2.0, 0.5)):
    total = jnp.sum(data)
    for i in range(k):
        numpyro.sample(f"q{i}", dist.Normal(total, sigma[i]))


def test_gaussian_sites_compose_exactly_into_one_gaussian():
    claim = dpaudit.Claim(epsilon=1.0, delta=1e-5, sensitivity=1.0, sensitivity_norm="l2")
    mech = dpaudit.Mechanism("k-gauss", _k_gaussians, claim, release_site=("q0", "q1", "q2"))
    result = dpaudit.audit(mech, D, D_PRIME, samples=2000, seed=0)
    assert result.route == "closed-form"
    mu = math.sqrt(1 + 0.25 + 4.0)
    eps = claim.epsilon
    analytic = scipy.stats.norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * scipy.stats.norm.cdf(
        -eps / mu - mu / 2
    )
    assert result.delta_at_claimed_epsilon.exact_upper == pytest.approx(analytic, rel=1e-9)
    assert result.verdict == "violation"  # mu ~ 2.29: delta(1) ~ 0.49 >> 1e-5


def _adaptive(data):
    total = jnp.sum(data)
    a = numpyro.sample("a", dist.Laplace(total, 2.0))
    numpyro.sample("b", dist.Laplace(total + jnp.where(a > 0, 5.0, 0.0), 2.0))


def test_adaptive_sites_use_the_sequential_joint_density():
    mech = dpaudit.Mechanism("adaptive", _adaptive, CLAIM, release_site=("a", "b"))
    law_d, law_dp = mech.release_distribution(D), mech.release_distribution(D_PRIME)
    assert isinstance(law_d, JointRelease) and law_d.adaptive()
    x = np.array([[0.7, 4.0], [-0.3, 1.0]])

    def log_p(total):
        shift = np.where(x[:, 0] > 0, 5.0, 0.0)
        return scipy.stats.laplace.logpdf(x[:, 0], total, 2.0) + scipy.stats.laplace.logpdf(
            x[:, 1], total + shift, 2.0
        )

    np.testing.assert_allclose(law_d.log_prob(x), log_p(0.0), rtol=1e-12)
    np.testing.assert_allclose(law_dp.log_prob(x), log_p(1.0), rtol=1e-12)
    assert joint_noise_shift(law_d, law_dp) is None  # never the closed form of independent sites
    independent = dpaudit.Mechanism("k", _two_laplace, CLAIM, release_site=("first", "second"))
    assert not independent.release_distribution(D).adaptive()


def _coin(data):
    total = jnp.sum(data)
    c = numpyro.sample("c", dist.Bernoulli(0.3), infer={"dpaudit": "latent"})
    numpyro.sample("release", dist.Laplace(total * c, 1.0))


def test_a_discrete_latent_site_is_summed_out_exactly():
    mech = dpaudit.Mechanism("coin", _coin, CLAIM)
    x = np.array([[0.3], [-2.0], [1.5]])
    for data, total in ((D, 0.0), (D_PRIME, 1.0)):
        expected = np.log(
            0.7 * scipy.stats.laplace.pdf(x[:, 0], 0.0, 1.0)
            + 0.3 * scipy.stats.laplace.pdf(x[:, 0], total, 1.0)
        )
        np.testing.assert_allclose(mech.release_distribution(data).log_prob(x), expected, 1e-12)


def test_enumeration_above_the_limit_and_continuous_latent_sites_are_refused():
    def many(data):
        c = numpyro.sample("c", dist.Bernoulli(0.5 * jnp.ones(13)), infer={"dpaudit": "latent"})
        numpyro.sample("release", dist.Laplace(jnp.sum(data) + jnp.sum(c), 1.0))

    assert 2**13 > MAX_ENUMERATION
    with pytest.raises(ValueError, match=r"8192 joint values, more than the enumeration limit"):
        dpaudit.Mechanism("many", many, CLAIM).release_distribution(D)

    def continuous(data):
        u = numpyro.sample("u", dist.Normal(0.0, 1.0), infer={"dpaudit": "latent"})
        numpyro.sample("release", dist.Laplace(jnp.sum(data) + u, 1.0))

    with pytest.raises(
        ValueError,
        match=r"latent site 'u' \(Normal\) is continuous and its distribution provides no marginal density",
    ):
        dpaudit.audit(dpaudit.Mechanism("cont", continuous, CLAIM), D, D_PRIME, samples=100)


def _shared_offset(data):
    u = numpyro.sample("u", dist.Normal(0.0, 1.0), infer={"dpaudit": "shared"})
    numpyro.sample("release", dist.Laplace(jnp.sum(data) + u, 1.0 / EPSILON))


def test_a_violation_conditional_on_shared_randomness_is_not_certified():
    claim = dpaudit.Claim(epsilon=0.5, sensitivity=1.0, sensitivity_norm="l1")
    result = dpaudit.audit(
        dpaudit.Mechanism("shared", _shared_offset, claim), D, D_PRIME, samples=2000, seed=0
    )
    assert result.verdict == "inconclusive" and result.certificate is None
    assert result.epsilon_lower == 0.0
    assert result.diagnostics["conditional_epsilon_lower"] == pytest.approx(1.0, rel=1e-6)
    assert any("conditional on the shared randomness" in note for note in result.notes)


@pytest.mark.slow
def test_a_pass_conditional_on_shared_randomness_stays_a_pass():
    def model(data):
        u = numpyro.sample("u", dist.Normal(0.0, 1.0), infer={"dpaudit": "shared"})
        numpyro.sample("release", dist.Normal(jnp.sum(data) + u, 4.0))

    claim = dpaudit.Claim(epsilon=1.0, delta=0.05, sensitivity=1.0, sensitivity_norm="l2")
    result = dpaudit.audit(
        dpaudit.Mechanism("shared-pass", model, claim), D, D_PRIME, samples=5000, seed=0
    )
    assert result.verdict == "pass"  # true delta(1) of N(., 4) at shift 1: ~1e-4
    assert any("shared randomness" in note for note in result.notes)


@pytest.mark.parametrize(
    ("release_site", "error", "match"),
    [
        ((), ValueError, "at least one site"),
        (("a", "a"), ValueError, "'a' is named twice"),
        (("a", 3), TypeError, "non-empty strings"),
        (7, TypeError, "a site name or a tuple"),
    ],
)
def test_bad_release_sites_are_refused_in_one_sentence(release_site, error, match):
    with pytest.raises(error, match=match):
        dpaudit.Mechanism("bad", _two_laplace, CLAIM, release_site=release_site)


def test_missing_doubly_declared_and_unknown_declarations_are_refused():
    missing = dpaudit.Mechanism("m", _two_laplace, CLAIM, release_site=("first", "third"))
    with pytest.raises(ValueError, match=r"no sample site named 'third'"):
        missing.release_distribution(D)

    def both_ways(data):
        numpyro.sample("release", dist.Laplace(0.0, 1.0), infer={"dpaudit": "latent"})

    with pytest.raises(ValueError, match=r"release site and also declared 'latent'"):
        dpaudit.Mechanism("b", both_ways, CLAIM).release_distribution(D)

    def unknown(data):
        numpyro.sample("x", dist.Bernoulli(0.5), infer={"dpaudit": "hidden"})
        numpyro.sample("release", dist.Laplace(0.0, 1.0))

    with pytest.raises(ValueError, match=r"the known declarations are \('latent', 'shared'\)"):
        dpaudit.Mechanism("u", unknown, CLAIM).release_distribution(D)
