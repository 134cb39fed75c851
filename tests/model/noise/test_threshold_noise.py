"""SVT answers and the threshold noise that marginalises itself (dpaudit.model.noise.sparse_vector).

Oracles: mpmath quadrature at 30 digits of ``int p_rho(r) prod_i P(a_i | r) dr`` written
from the law (split at the kinks), the catalogue's ``SparseVector`` (the same run as one
distribution), and Monte Carlo frequencies of the conditional answers.
"""

import itertools
import math

import jax
import jax.numpy as jnp
import mpmath
import numpy as np
import numpyro.distributions as dist
import pytest

import mechanisms.classic
from dpaudit.model.noise import NoisyComparison, SparseVector, ThresholdNoise

mpmath.mp.dps = 30


def _mp_marginal(gaps, codes, b_rho, b_nu) -> mpmath.mpf:
    """``P(answers)`` by quadrature, from the law: positive iff ``gap + nu >= r``."""

    def cdf(x):  # standard Laplace CDF
        return mpmath.exp(x) / 2 if x < 0 else 1 - mpmath.exp(-x) / 2

    def integrand(r):
        value = mpmath.exp(-abs(r) / b_rho) / (2 * b_rho)
        for gap, code in zip(gaps, codes, strict=True):
            if b_nu == 0:
                positive = 1 if gap >= r else 0
            else:
                positive = 1 - cdf((r - mpmath.mpf(gap)) / b_nu)
            value *= positive if code == 1 else 1 - positive
        return value

    edges = [-mpmath.inf, *sorted({0.0, *map(float, gaps)}), mpmath.inf]
    return mpmath.fsum(mpmath.quad(integrand, [a, b]) for a, b in itertools.pairwise(edges))


def _pairs(gaps, codes, b_nu, active=None):
    active = [True] * len(gaps) if active is None else active
    return [
        (NoisyComparison(g, 0.37, b_nu, a), c) for g, c, a in zip(gaps, codes, active, strict=True)
    ]


@pytest.mark.parametrize("seed", range(5))
def test_marginal_is_the_integral_within_its_certified_error(seed):
    """The quadrature marginal is within its declared error of the 30-digit integral, and the
    closed-form bracket contains the integral (narrower than 1e-9 relative)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 6))
    gaps = rng.normal(0, 3, k).round(3)
    codes = rng.integers(0, 2, k).astype(float)
    b_rho, b_nu = float(rng.uniform(0.5, 4)), float(rng.choice([0.0, rng.uniform(0.5, 6)]))
    rho = ThresholdNoise(b_rho)
    pairs = _pairs(gaps, codes, b_nu)
    truth = _mp_marginal(gaps, codes, b_rho, b_nu)
    if truth == 0:
        assert float(rho.marginal_log_prob(pairs)) == -math.inf
        return
    log_truth = float(mpmath.log(truth))
    lower, upper = rho.certified_marginal_log_prob(pairs)
    assert lower <= log_truth <= upper
    assert upper - lower < 1e-9 * max(1.0, abs(log_truth))
    computed = float(rho.marginal_log_prob(pairs))
    assert abs(computed - log_truth) <= rho.marginal_log_prob_error(pairs)


def test_marginal_equals_the_sparse_vector_law_on_every_pattern():
    """With every query active the marginal is SparseVector's pattern law (no cutoff), to the
    last bits (same rule), and the patterns' masses sum to 1."""
    gaps = np.array([1.0, -2.0, 0.5, 3.0])
    law = SparseVector(jnp.asarray(gaps), 0.0, 2.0, 4.0, cutoff=None)
    rho = ThresholdNoise(2.0)
    total = 0.0
    for codes in itertools.product((0.0, 1.0), repeat=4):
        mine = float(rho.marginal_log_prob(_pairs(gaps, codes, 4.0)))
        theirs = float(law.log_prob(jnp.asarray(codes)))
        assert mine == pytest.approx(theirs, abs=1e-12)
        total += math.exp(rho.certified_marginal_log_prob(_pairs(gaps, codes, 4.0))[0])
    assert total == pytest.approx(1.0, abs=1e-9)


def test_inactive_answers_are_minus_one_with_probability_one():
    rho = ThresholdNoise(1.0)
    gaps, active = [0.5, 0.5], [True, False]
    assert float(rho.marginal_log_prob(_pairs(gaps, [1.0, -1.0], 1.0, active))) == pytest.approx(
        float(rho.marginal_log_prob(_pairs(gaps[:1], [1.0], 1.0)))
    )
    for codes in ([1.0, 0.0], [-1.0, -1.0], [1.0, 1.0]):
        assert float(rho.marginal_log_prob(_pairs(gaps, codes, 1.0, active))) == -math.inf
        assert rho.certified_marginal_log_prob(_pairs(gaps, codes, 1.0, active))[1] == -math.inf


def test_conditional_answers_match_their_frequencies():
    """P(1 | rho) = 1 - F_nu(rho - gap): 40 000 draws, 5 standard errors."""
    law = NoisyComparison(0.3, 1.1, 2.0)
    draws = np.asarray(law.sample(jax.random.key(3), (40_000,)))
    p = float(jnp.exp(law.log_prob(1.0)))
    assert p + float(jnp.exp(law.log_prob(0.0))) == pytest.approx(1.0, abs=1e-14)
    assert abs(np.mean(draws == 1.0) - p) < 5 * math.sqrt(p * (1 - p) / draws.size)
    assert p == pytest.approx(0.5 * math.exp(-(1.1 - 0.3) / 2.0), abs=1e-14)  # P(nu >= 0.8)
    off = NoisyComparison(0.3, 1.1, 2.0, False)
    assert set(np.asarray(off.sample(jax.random.key(0), (50,))).tolist()) == {-1.0}


def test_bad_answers_are_refused_in_one_sentence():
    rho = ThresholdNoise(1.0)
    with pytest.raises(TypeError, match="marginalises only NoisyComparison answers"):
        rho.marginal_log_prob([(dist.Normal(0.0, 1.0), 0.0)])
    with pytest.raises(ValueError, match="share one query_scale"):
        rho.marginal_log_prob(_pairs([0.0], [1.0], 1.0) + _pairs([0.0], [1.0], 2.0))
    with pytest.raises(ValueError, match="query_scale must be finite and >= 0"):
        NoisyComparison(0.0, 0.0, -1.0)
    with pytest.raises(ValueError, match="gap must be a scalar"):
        NoisyComparison(jnp.zeros(2), 0.0, 1.0)


def test_the_catalogue_reads_the_sparse_vector_from_dpaudit_noise():
    assert mechanisms.classic.SparseVector is SparseVector


def test_the_quadrature_error_charges_its_own_round_off_for_any_evaluation():
    """The certified error is the distance from the quadrature value to the bracket's far end
    plus twice the round-off bound, so eager, jitted and batched evaluations (which differ in
    their last bits) all lie within it of the truth; the charge is positive and small."""
    from dpaudit.model.noise.sparse_vector import interval_roundoff, quadrature_roundoff

    queries = jnp.array([9.0, 11.0, 10.0])
    noisy = SparseVector(queries, 10.0, 2.0, 4.0, cutoff=None, resample=True)
    plain = SparseVector(queries, 10.0, 2.0, 0.0, cutoff=2)
    batched = jax.jit(lambda law, v: law.log_prob(v))  # as log_prob_error evaluates it
    for law in (noisy, plain):
        patterns = law.patterns()
        together = np.asarray(batched(law, jnp.asarray(patterns)))
        for row, fused in zip(patterns, together, strict=True):
            lower, upper = law.certified_log_prob(row)
            if upper == -math.inf:
                continue
            eager = float(law.log_prob(jnp.asarray(row)))
            bound = law.log_prob_error(row)
            for value in (eager, float(fused)):
                assert upper - value <= bound and value - lower <= bound
            alone = float(batched(law, jnp.asarray(row)))
            distance = max(alone - lower, upper - alone)
            if law is noisy:
                charge = quadrature_roundoff(
                    queries - 10.0, 2.0, 4.0, margin=40.0, n_grid=2049, n_segments=4
                )
            else:
                charge = interval_roundoff(queries - 10.0, 2.0, lower, n_segments=3)
            assert 0 < charge < 1e-8
            assert bound >= distance + 2 * charge  # the charge is in (mutation: left out)
