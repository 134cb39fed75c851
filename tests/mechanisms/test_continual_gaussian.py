"""BMR continual counter, Gaussian zCDP version: explanation norms, release law, claims, audits."""

import math

import jax
import numpy as np
import pytest
import scipy.stats

import dpaudit
from dpaudit.model.noise import gaussian_delta
from dpaudit.model.noise.linear_laplace import ancestor_matrix
from mechanisms.continual.counter import suffix_shifts
from mechanisms.continual.gaussian import (
    FLAW_DELTA,
    continual_gaussian_worst_case,
    example_pair,
    explanation_norms,
)
from mechanisms.ecdf.tree import tree_depth


@pytest.mark.parametrize("n_steps", [2, 5, 8, 13, 16])
def test_explanation_norms_are_least_norm_solutions(n_steps):
    """||h||_{AA^T} = the Euclidean norm of numpy's least-squares minimum-norm explanation."""
    a = ancestor_matrix(tree_depth(n_steps), n_steps)
    shifts = suffix_shifts(n_steps)
    for h, norm in zip(shifts, explanation_norms(n_steps, shifts), strict=True):
        nu = np.linalg.lstsq(a, h, rcond=None)[0]
        np.testing.assert_allclose(a @ nu, h, atol=1e-12)
        assert norm == pytest.approx(np.linalg.norm(nu), rel=1e-10)


@pytest.mark.parametrize("depth", range(1, 7))
def test_worst_suffix_is_within_bmr_signed_explanation(depth):
    """BMR explain a suffix by ceil((L+1)/2) signed nodes: the least l2 norm is at most that."""
    worst, t0 = continual_gaussian_worst_case(2**depth)
    assert worst <= math.ceil((depth + 1) / 2) + 1e-12
    assert worst == pytest.approx(
        float(explanation_norms(2**depth, suffix_shifts(2**depth)[t0]) ** 2)
    )


def test_release_covariance_is_the_ancestor_sum_of_node_noise():
    mech = dpaudit.build("continual-counter-gaussian", rho=0.5, n_steps=8)
    a = ancestor_matrix(3, 8)
    z = 1.0 / math.sqrt(2 * 0.5)
    data = np.zeros(8)
    dist = mech.release_distribution(data)
    np.testing.assert_allclose(
        np.asarray(dist.covariance_matrix), 2 * z**2 * a @ a.T, rtol=1e-12, atol=1e-12
    )
    x = np.asarray(mech.sample(data, jax.random.key(3), 20000))
    # sample covariance of 20000 draws: entries within 6 standard errors (|c| <= 8 here)
    emp = np.cov(x.T)
    se = np.sqrt((np.diag(emp)[:, None] * np.diag(emp)[None, :] + emp**2) / 20000)
    assert np.all(np.abs(emp - 2 * z**2 * a @ a.T) < 6 * se)


@pytest.mark.parametrize(
    "name", ["continual-counter-gaussian", "faulty/continual-gaussian-one-level"]
)
def test_loss_matches_scipy_and_rho(name):
    """The privacy loss of the example pair is scipy's log-density ratio; its mu gives rho."""
    mech = dpaudit.build(name)
    d, d_prime = example_pair(name)
    x = mech.sample(d, jax.random.key(1), 200)
    loss = np.asarray(mech.release_log_prob(d, x) - mech.release_log_prob(d_prime, x))
    p, q = mech.release_distribution(d), mech.release_distribution(d_prime)
    if hasattr(p, "covariance_matrix"):
        cov = np.asarray(p.covariance_matrix)
    else:  # independent node noise
        cov = np.diag(np.asarray(p.variance))
    oracle = scipy.stats.multivariate_normal(np.asarray(p.mean), cov).logpdf(
        np.asarray(x)
    ) - scipy.stats.multivariate_normal(np.asarray(q.mean), cov).logpdf(np.asarray(x))
    np.testing.assert_allclose(loss, oracle, rtol=1e-8, atol=1e-8)
    shift = np.asarray(p.mean - q.mean)
    rho_pair = 0.5 * float(shift @ np.linalg.solve(cov, shift))
    depth = mech.params["depth"]
    if mech.known_flaw is None:
        worst, _ = continual_gaussian_worst_case(mech.params["n_steps"])
        assert rho_pair == pytest.approx(worst * mech.claim.rho / math.ceil((depth + 1) / 2))
        assert rho_pair <= mech.claim.rho
    else:
        assert rho_pair == pytest.approx((depth + 1) * mech.claim.rho, rel=1e-12)


def test_faulty_true_epsilon_is_the_gaussian_epsilon_of_the_true_rho():
    mech = dpaudit.build("faulty/continual-gaussian-one-level", rho=0.5, n_steps=8)
    mu = math.sqrt(2 * 4 * 0.5)  # L + 1 = 4 levels
    eps = mech.known_flaw.true_epsilon
    assert mech.known_flaw.true_delta == FLAW_DELTA
    assert float(gaussian_delta(eps, mu)) == pytest.approx(FLAW_DELTA, rel=1e-8)
    assert float(gaussian_delta(eps * (1 - 1e-6), mu)) > FLAW_DELTA


def test_bad_inputs():
    with pytest.raises(ValueError, match="rho"):
        dpaudit.build("continual-counter-gaussian", rho=0.0)
    mech = dpaudit.build("continual-counter-gaussian", n_steps=8)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mech.sample(np.full(8, 2.0), jax.random.key(0), 2)
    with pytest.raises(ValueError, match="shape"):
        mech.sample(np.zeros(5), jax.random.key(0), 2)


@pytest.mark.slow
def test_audits_pass_and_find_the_true_epsilon():
    for name, verdict in [
        ("continual-counter-gaussian", "pass"),
        ("faulty/continual-gaussian-one-level", "violation"),
    ]:
        mech = dpaudit.build(name)
        d, d_prime = example_pair(name)
        result = dpaudit.audit(mech, d, d_prime, samples=2000, seed=5)
        assert result.verdict == verdict
        if mech.known_flaw is not None:
            assert result.epsilon_lower == pytest.approx(mech.known_flaw.true_epsilon, rel=0.1)
            assert result.epsilon_lower <= mech.known_flaw.true_epsilon * (1 + 1e-9)
