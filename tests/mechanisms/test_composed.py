"""The composed catalogue: k queries at k sites, correct and faulty budget splits.

Oracles: the advanced composition formula evaluated directly, the Gaussian
delta formula (scipy) for the composed Gaussian, and ``k epsilon`` for Laplace
queries that each spend the whole budget.
"""

import math

import jax
import numpy as np
import pytest
import scipy.stats

import dpaudit
from mechanisms.composed.queries import advanced_composition_epsilon
from mechanisms.faulty import example_pair


def test_advanced_composition_epsilon_solves_the_theorem():
    e0 = advanced_composition_epsilon(1.0, 1e-5, 3)
    total = math.sqrt(6 * math.log(1e5)) * e0 + 3 * e0 * math.expm1(e0)
    assert total <= 1.0 and total == pytest.approx(1.0, rel=1e-12)


def test_faulty_gaussian_true_epsilon_is_the_composed_gaussian_epsilon():
    mech = dpaudit.build("faulty/composed-gaussian-one-budget")
    k, n, sigma = mech.params["k"], mech.params["n"], mech.params["sigma"]
    mu = math.sqrt(k) / (n * sigma)
    eps = mech.known_flaw.true_epsilon
    delta = scipy.stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * scipy.stats.norm.cdf(
        -mu / 2 - eps / mu
    )
    assert delta == pytest.approx(mech.claim.delta, rel=1e-6)


def test_faulty_laplace_reaches_k_epsilon_on_its_pair():
    mech = dpaudit.build("faulty/composed-laplace-one-budget")
    d, d_prime = example_pair("faulty/composed-laplace-one-budget")
    x = mech.sample(d, jax.random.key(0), 500)
    assert x.shape == (500, mech.params["k"])
    result = dpaudit.audit(mech, d, d_prime, samples=2000, seed=1)
    assert result.verdict == "violation"
    assert result.epsilon_lower == pytest.approx(mech.known_flaw.true_epsilon, rel=1e-9)
    assert sorted(result.certificate.sites) == ["q0", "q1", "q2"]
    np.testing.assert_allclose(
        result.certificate.release, np.stack([result.certificate.sites[f"q{i}"] for i in range(3)])
    )


def test_two_site_roc_supremum_is_the_sum_of_the_two_ecdf_suprema():
    """Sequential composition holds on the worst pair; the parallel variant reaches 4/3 epsilon."""
    name = "faulty/composed-bmr-roc-parallel"
    d, d_prime = example_pair(name)
    faulty, correct = dpaudit.build(name), dpaudit.build("composed-bmr-roc")
    sup = faulty.release_distribution(d).exact_sup_loss(faulty.release_distribution(d_prime))
    assert sup.sup_loss_lower <= faulty.known_flaw.true_epsilon <= sup.sup_loss
    assert faulty.known_flaw.true_epsilon == pytest.approx(4 / 3)
    ok = correct.release_distribution(d).exact_sup_loss(correct.release_distribution(d_prime))
    assert ok.sup_loss <= correct.claim.epsilon
    assert ok.sup_loss == pytest.approx(sup.sup_loss / 2, rel=1e-12)
