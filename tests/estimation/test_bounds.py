"""The confidence levels of dpaudit.estimation.bounds, pinned exactly against scipy.

A certified bound uses a lower bound on ``P(S)`` and an upper bound on ``Q(S)`` at once,
so each one-sided Clopper–Pearson bound is taken at ``alpha / 2`` (union bound). Both
ends of scipy's two-sided exact interval at ``confidence_level = 1 - alpha`` are exactly
those one-sided bounds, so every bound here must equal scipy's to 1e-12.

Mutation checked: ``one_sided_pair`` at ``alpha`` instead of ``alpha / 2`` per side makes
every test of this file fail (the bounds move by far more than 1e-12).
"""

import math

import numpy as np
import pytest
import scipy.stats

from dpaudit.estimation.bounds import certified_delta, certified_epsilon, one_sided_pair

CASES = [  # (k_p, n_p, k_q, n_q, confidence)
    (5_000, 10_000, 1_000, 10_000, 0.95),
    (37, 200, 3, 200, 0.9),
    (999, 1_000, 0, 1_000, 0.99),
    (120_000, 500_000, 40_000, 500_000, 0.95),
]


def _scipy_interval(k: int, n: int, confidence: float):
    return scipy.stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="exact")


@pytest.mark.parametrize("k_p, n_p, k_q, n_q, confidence", CASES)
def test_one_sided_pair_is_scipys_exact_interval_at_alpha_over_two_per_side(
    k_p, n_p, k_q, n_q, confidence
):
    p_lower, q_upper = one_sided_pair(k_p, n_p, k_q, n_q, confidence)
    assert float(p_lower) == pytest.approx(_scipy_interval(k_p, n_p, confidence).low, abs=1e-12)
    assert float(q_upper) == pytest.approx(_scipy_interval(k_q, n_q, confidence).high, abs=1e-12)


@pytest.mark.parametrize("k_p, n_p, k_q, n_q, confidence", CASES)
def test_certified_bounds_use_scipys_exact_interval(k_p, n_p, k_q, n_q, confidence):
    p_lower = _scipy_interval(k_p, n_p, confidence).low
    q_upper = _scipy_interval(k_q, n_q, confidence).high
    delta = 0.01
    expected_eps = max(0.0, math.log((p_lower - delta) / q_upper)) if p_lower > delta else 0.0
    got_eps = float(certified_epsilon(k_p, n_p, k_q, n_q, delta=delta, confidence=confidence))
    # the endpoints agree to 1e-12 absolute; the log of their ratio, to 1e-12 / q_upper
    assert got_eps == pytest.approx(expected_eps, abs=1e-12 / q_upper + 1e-12)
    expected_delta = max(0.0, p_lower - math.e * q_upper)
    got_delta = float(certified_delta(k_p, n_p, k_q, n_q, epsilon=1.0, confidence=confidence))
    assert got_delta == pytest.approx(expected_delta, abs=(1 + math.e) * 1e-12)


def test_the_level_per_side_is_not_alpha():
    """The half-level bounds are strictly wider than bounds at the full alpha would be."""
    k, n, confidence = 37, 200, 0.9
    p_lower, q_upper = one_sided_pair(k, n, k, n, confidence)
    at_full_alpha = _scipy_interval(k, n, 1 - 2 * (1 - confidence))
    assert float(p_lower) < at_full_alpha.low - 1e-3
    assert float(q_upper) > at_full_alpha.high + 1e-3
    assert np.isclose(float(p_lower), _scipy_interval(k, n, confidence).low, rtol=0, atol=1e-12)


def test_clopper_pearson_is_scipys_beta_quantile_bit_for_bit():
    # the bounds call scipy's inverse incomplete beta directly (not through
    # scipy.stats.beta, a quarter of the cost): the same numbers, to the last bit, on
    # integer and planning (non-integer) counts, both ends, small and large n
    from dpaudit.estimation.bounds import clopper_pearson

    rng = np.random.default_rng(3)
    n = np.concatenate([rng.integers(1, 10**7, 3000).astype(float), [1.0, 2.0, 10.0, 1e6]])
    for k in (np.floor(rng.uniform(0, 1, n.size) * (n + 1)), rng.uniform(0, 1, n.size) * n):
        k = np.minimum(k, n)
        for alpha in (0.025, 0.0005, 0.05, 1e-9):
            lower, upper = clopper_pearson(k, n, alpha)
            with np.errstate(invalid="ignore", divide="ignore"):
                want_lower = np.where(k > 0, scipy.stats.beta.ppf(alpha, k, n - k + 1), 0.0)
                want_upper = np.where(k < n, scipy.stats.beta.ppf(1 - alpha, k + 1, n - k), 1.0)
            assert np.array_equal(lower, want_lower) and np.array_equal(upper, want_upper)
            small_lower, small_upper = clopper_pearson(k[:5], n[:5], alpha)  # no deduplication
            assert np.array_equal(small_lower, want_lower[:5])
            assert np.array_equal(small_upper, want_upper[:5])
