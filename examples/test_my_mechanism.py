"""Regression tests for your own DP mechanism with dpaudit.testing — copy this file and adapt it.

The mechanism under test is an ICLP-QR mean of curves (Lin & Reimherr, Sec. 4.2): the
sample mean of curves with ``||X_i||_{L2} <= tau`` (larger curves are rescaled onto the
ball: a documented, claimed step), shrunk coefficient-wise by
``s_j = lambda_j^eta / (lambda_j^eta + psi)`` in the Karhunen–Loève basis of a Matérn
kernel, plus ICLP noise with ``sigma = sqrt(2) Delta / epsilon``. Its 1,C sensitivity is
``Delta = (2 tau / n) (sum_j s_j^2 / lambda_j)^(1/2)`` (Cauchy–Schwarz; tight).

The tests check the sensitivity claim by worst-case search and on hypothesis-drawn
neighbours, the compatibility of the summary with the noise, and epsilon-DP with the
audit engine — and show that a wrong constant is caught.

Run: ``pytest examples/test_my_mechanism.py`` (about 20 s on a laptop).
"""

import jax.numpy as jnp
import numpyro
import pytest
from hypothesis import settings

import dpaudit
from dpaudit.model.noise import GridNoise, ICLPNoise, iclp_sigma
from dpaudit.model.spaces import Matern, kl_basis, one_c_norm, uniform_grid
from dpaudit.testing import (
    L2Ball,
    SearchBudget,
    SensitivityViolation,
    assert_compatible,
    assert_dp,
    assert_sensitivity_bound,
    worst_neighbours,
)
from dpaudit.testing.strategies import neighbouring_pairs

# ------------------------------------------------------------ the mechanism under test

N, TAU, EPSILON, ETA, PSI = 16, 1.0, 1.0, 1.5, 1e-3
GRID = uniform_grid(32)
BASIS = kl_basis(Matern(nu=1.5, lengthscale=0.2), GRID)  # all 32 components
LAMBDA = BASIS.eigenvalues
SHRINK = LAMBDA**ETA / (LAMBDA**ETA + PSI)
RECORDS = L2Ball(TAU, GRID)  # the data bound the claim is about


def qr_mean(curves):
    """Grid values of the shrunk mean; curves above the bound are rescaled onto the ball."""
    norms = jnp.sqrt(jnp.sum(GRID.weights * curves * curves, axis=-1, keepdims=True))
    curves = curves * jnp.minimum(1.0, TAU / jnp.maximum(norms, 1e-300))
    return BASIS.reconstruct(SHRINK * BASIS.project(jnp.mean(curves, axis=0)))


def qr_mean_sensitivity(n, factor=2.0):
    """``(factor tau / n) ||s / sqrt(lambda)||_2`` — the correct factor is 2."""
    return factor * TAU / n * float(jnp.sqrt(jnp.sum(SHRINK**2 / LAMBDA)))


def one_c(h):
    return one_c_norm(BASIS.project(h), LAMBDA)


def build(n=N, epsilon=EPSILON, factor=2.0):
    sensitivity = qr_mean_sensitivity(n, factor)
    sigma = iclp_sigma(sensitivity, epsilon)

    def model(curves):
        noise = GridNoise(ICLPNoise(LAMBDA, sigma), BASIS, loc=qr_mean(curves))
        numpyro.sample("release", noise)

    # the privacy claim the audit tests: epsilon-DP for a 1,C-sensitivity bound
    claim = dpaudit.Claim(
        epsilon=epsilon,
        sensitivity_norm="one-c",
        sensitivity=sensitivity,
        reference="Lin & Reimherr, Thm 4/8 and Sec. 4.2",
    )
    return dpaudit.Mechanism(
        name="my-qr-mean",
        model=model,
        claim=claim,
        summary=qr_mean,
        difference_norm=one_c,
        params={"n": n, "record_space": RECORDS},  # record_space tells the search the bound
    )


# ----------------------------------------------------------------------------- tests

BUDGET = SearchBudget(restarts=8, steps=60)


def test_sensitivity_claim_holds_and_is_tight():
    """Worst-case search over the ball: never above the claim, and within 1% of it."""
    worst = assert_sensitivity_bound(build(), n=N, budget=BUDGET)
    assert worst.ratio > 0.99, worst.describe()


def test_sensitivity_claim_on_random_neighbours():
    """hypothesis draws neighbouring datasets (smooth and rough curves, boundary norms)."""
    assert_sensitivity_bound(
        build(),
        datasets=neighbouring_pairs(RECORDS, n=N),
        hypothesis_settings=settings(max_examples=20, deadline=None, derandomize=True),
    )


def test_a_wrong_constant_is_caught():
    """Forgetting the 2 in 2 tau / n understates the sensitivity: the search finds a pair."""
    with pytest.raises(SensitivityViolation) as caught:
        assert_sensitivity_bound(build(factor=1.0), n=N, budget=BUDGET)
    assert caught.value.ratio > 1.9  # the counterexample is printed in the message


def test_summary_is_compatible_with_the_noise():
    """The shrunk mean's differences have converging 1,C norms (pure epsilon-DP possible)."""
    pair = worst_neighbours(build(), n=N, budget=BUDGET)
    assert_compatible(build(), datasets=[(pair.data, pair.data_prime)])


def test_epsilon_dp_on_the_worst_pair():
    """The audit engine's exact ICLP accounting on the worst pair the search finds."""
    result = assert_dp(build(), n=N, samples=2_000)
    assert result.verdict == "pass"
