"""Float samplers and their fixes (issue 31): exact laws, and black-box audits as controls."""

import jax
import numpy as np
import pytest
from scipy import stats

import dpaudit
from dpaudit.blackbox import blackbox_audit
from mechanisms.implementations.samplers import (
    discrete_gaussian,
    discrete_gaussian_delta,
    discrete_laplace,
    naive_laplace,
    snapping_epsilon,
    snapping_laplace,
)

# Goodness-of-fit tests of the exact samplers: each fails by chance with this probability.
TEST_FAILURE_RATE = 2e-5
D, D_PRIME = np.zeros(4), np.array([1.0, 0.0, 0.0, 0.0])


def _chi_square_p(draws, log_pmf, support):
    """p-value of a chi-square test of integer draws against a pmf (tails pooled)."""
    wide = np.arange(-400, 401)
    pmf = np.exp(log_pmf(wide))
    pmf /= pmf.sum()
    inner = [pmf[wide == k][0] for k in support[1:-1]]
    tails = [pmf[wide <= support[0]].sum(), pmf[wide >= support[-1]].sum()]
    expected = draws.size * np.array([tails[0], *inner, tails[1]])
    counts = np.array([(draws == k).sum() for k in support[1:-1]])
    low, high = (draws <= support[0]).sum(), (draws >= support[-1]).sum()
    observed = np.concatenate([[low], counts, [high]])
    return stats.chisquare(observed, expected).pvalue


def test_discrete_laplace_matches_its_law():
    draws = discrete_laplace(np.zeros(3), 100_000, jax.random.key(1), epsilon=0.5)
    support = np.arange(-12, 13)
    p = _chi_square_p(draws, lambda k: -0.5 * np.abs(k), support)
    assert p > TEST_FAILURE_RATE


def test_discrete_gaussian_matches_its_law():
    draws = discrete_gaussian(np.zeros(3), 100_000, jax.random.key(2), sigma2=2.5)
    support = np.arange(-7, 8)
    p = _chi_square_p(draws, lambda k: -(k**2) / (2 * 2.5), support)
    assert p > TEST_FAILURE_RATE
    assert draws.dtype == np.int64


def test_snapping_releases_lie_on_the_lattice_inside_the_bound():
    x = snapping_laplace(np.zeros(3), 50_000, jax.random.key(3), epsilon=0.7, bound=16.0)
    lattice = 2.0  # the smallest power of two >= 1/0.7
    assert np.all(x / lattice == np.round(x / lattice)) and np.abs(x).max() <= 16.0
    with pytest.raises(ValueError, match="bound must be in"):
        snapping_laplace(np.zeros(3), 2, jax.random.key(3), epsilon=1.0, bound=0.5)


def test_discrete_gaussian_delta_matches_a_direct_sum():
    # delta(eps) = sum_z max(0, p(z) - e^eps p(z - 1)) for the pair 0 vs 1
    sigma2, eps = 2.0, 0.5
    z = np.arange(-60, 61)
    w = np.exp(-(z**2) / (2 * sigma2))
    w /= w.sum()
    w_shift = np.exp(-((z - 1.0) ** 2) / (2 * sigma2))
    w_shift /= w_shift.sum()
    direct = np.maximum(w - np.exp(eps) * w_shift, 0).sum()
    assert discrete_gaussian_delta(sigma2, eps) == pytest.approx(direct, rel=1e-6)


def _controls():
    return [
        ("snapping", snapping_laplace, dpaudit.Claim(epsilon=snapping_epsilon(1.0, 64.0))),
        ("discrete-laplace", discrete_laplace, dpaudit.Claim(epsilon=1.0)),
        (
            "discrete-gaussian",
            lambda d, n, k: discrete_gaussian(d, n, k, sigma2=2.0),
            dpaudit.Claim(epsilon=1.0, delta=discrete_gaussian_delta(2.0, 1.0)),
        ),
    ]


def _audit(sampler, claim, seed, samples, confidence=0.95):
    return blackbox_audit(
        sampler, D, D_PRIME, claim, samples=samples, seed=seed, confidence=confidence,
        progress=False,
    )  # fmt: skip


@pytest.mark.parametrize("name, sampler, claim", _controls())
@pytest.mark.parametrize("seed", [0, 1])
def test_fixed_samplers_show_no_violation(name, sampler, claim, seed):
    assert _audit(sampler, claim, seed, 20_000).verdict == "inconclusive"


@pytest.mark.slow
@pytest.mark.parametrize("name, sampler, claim", _controls())
def test_fixed_samplers_show_no_violation_over_twenty_seeds(name, sampler, claim):
    # The claims are exact (true epsilon = claim on this pair), so each 95 % certificate may
    # exceed them with probability up to 5 %: seed 1 of discrete Laplace certifies 1.0009 at
    # 95 %. Over 20 seeds the level is split (Bonferroni): a family-wise 5 %.
    confidence = 1 - 0.05 / 20
    verdicts = [_audit(sampler, claim, s, 100_000, confidence).verdict for s in range(20)]
    assert verdicts == ["inconclusive"] * 20


def test_naive_laplace_at_the_same_claim_is_a_violation():
    res = _audit(naive_laplace, dpaudit.Claim(epsilon=1.0), 0, 20_000)
    assert res.verdict == "violation" and res.statistic == "float"
