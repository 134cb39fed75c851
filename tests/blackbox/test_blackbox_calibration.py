"""Calibration of the certified bound on a tight correct mechanism, with the level pinned.

The mechanism is binary randomized response with epsilon = 1: its only non-trivial
events are ``{x = 1}`` and ``{x = 0}``, both with probabilities ``(e/(1+e), 1/(1+e))``,
so the certified bound is distributed exactly as ``certified_epsilon(Bin(n, p1),
Bin(n, p0))`` whatever event selection picks — computed here by exact binomial
enumeration (the oracle). At confidence 0.95 and n = 2000 the bound exceeds the
truth (epsilon = 1) with probability 0.0053 (<= 0.05, the stated rate; Clopper-Pearson
with a union bound is conservative) and has mean 0.9010 (sd 0.0379); at 0.90 the
mean would be 0.9167.

* The slow test runs 200 seeds of the whole pipeline: exceedances <= 5 (P = 0.0005
  under the stated level), and the mean bound within 3 standard errors of 0.9010 —
  a 2x level error (0.90) moves the mean by 5.8 standard errors (power 0.997).
* The fast tests pin the level exactly (the bound of one audit equals the scipy
  Beta oracle at alpha/2 per side of its own counts: any change of level fails),
  and run 12 seeds, whose mean test has power 0.06 against a 2x level error (stated,
  not relied upon: the exact pin is what fails).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
import scipy.stats

import dpaudit
from dpaudit.blackbox import blackbox_audit

EPSILON = 1.0
P1 = math.exp(EPSILON) / (1 + math.exp(EPSILON))
N = 2000


def randomized_response(data, n, key):
    u = jax.random.uniform(key, (n,))
    return (u < (P1 if float(data[0]) else 1 - P1)).astype(float)


def _oracle_bound(k_p, k_q, n, confidence):
    """log(p_lo / q_hi) with one-sided Clopper-Pearson bounds at alpha/2 each (scipy Beta)."""
    a = (1 - confidence) / 2
    p_lo = scipy.stats.beta.ppf(a, k_p, n - k_p + 1) if k_p > 0 else 0.0
    q_hi = scipy.stats.beta.ppf(1 - a, k_q + 1, n - k_q) if k_q < n else 1.0
    return max(math.log(p_lo / q_hi), 0.0) if p_lo > 0 else 0.0


def _exact_distribution(confidence):
    """Exceedance probability, mean and sd of the certified bound (exact enumeration)."""
    from dpaudit.blackbox import certified_epsilon

    sd = math.sqrt(N * P1 * (1 - P1))
    kp = np.arange(int(N * P1 - 9 * sd), int(N * P1 + 9 * sd) + 1)
    kq = np.arange(int(N * (1 - P1) - 9 * sd), int(N * (1 - P1) + 9 * sd) + 1)
    bound = certified_epsilon(kp[:, None], N, kq[None, :], N, confidence=confidence)
    w = scipy.stats.binom.pmf(kp, N, P1)[:, None] * scipy.stats.binom.pmf(kq, N, 1 - P1)[None, :]
    mean = float(np.sum(w * bound))
    return float(np.sum(w * (bound > EPSILON))), mean, math.sqrt(np.sum(w * bound**2) - mean**2)


def _audits(seeds):
    return [
        blackbox_audit(
            randomized_response,
            np.zeros(1),
            np.ones(1),
            dpaudit.Claim(EPSILON),
            samples=N,
            select_samples=2000,
            seed=s,
            progress=False,
        )
        for s in seeds
    ]


def test_the_exact_rate_is_below_the_stated_level_and_moves_with_it():
    rate95, mean95, _ = _exact_distribution(0.95)
    rate90, mean90, _ = _exact_distribution(0.90)
    assert rate95 == pytest.approx(0.005347, abs=2e-6) and rate95 <= 0.05
    assert mean95 == pytest.approx(0.901014, abs=2e-6)
    assert rate90 > 2.5 * rate95 and mean90 - mean95 > 0.015


def test_the_certified_bound_is_the_oracle_at_the_pinned_level():
    (res,) = _audits([0])
    k_p, k_q = res.event.counts["P"], res.event.counts["Q"]
    assert res.epsilon_lower == pytest.approx(_oracle_bound(k_p, k_q, N, 0.95), rel=1e-12)
    assert res.epsilon_lower != pytest.approx(_oracle_bound(k_p, k_q, N, 0.90), rel=1e-6)


def _check(results, sigmas: float, max_over: int):
    _, mean, sd = _exact_distribution(0.95)
    bounds = np.array([r.epsilon_lower for r in results])
    assert int(np.sum(bounds > EPSILON)) <= max_over
    assert abs(bounds.mean() - mean) < sigmas * sd / math.sqrt(bounds.size), bounds.mean()


def test_calibration_over_a_few_seeds():
    _check(_audits(range(100, 112)), 3.0, 2)


@pytest.mark.slow
def test_calibration_over_200_seeds():
    _check(_audits(range(1000, 1200)), 3.0, 5)
