"""The conditional ratio bound of pure-epsilon claims: exactness, level, Poissonisation.

A pure-epsilon claim is certified by one Clopper–Pearson lower bound at the full
``alpha`` on ``theta = P(S) / (P(S) + Q(S))`` given ``k_P + k_Q``, on Poissonised release
counts (``docs/blackbox.md``, "The conditional ratio bound"). Checked here:

* the bound is scipy's one-sided exact interval at ``alpha`` (not ``alpha / 2``), to 1e-12;
* exact enumeration: on Poisson counts its exceedance rate is at most ``alpha`` and, CP
  being only mildly conservative once mixed over the Poisson sum, above ``0.6 alpha`` —
  a bound at ``alpha / 2`` (rate below ``alpha / 2``) fails this;
* on *fixed* counts the conditional law is noncentral hypergeometric in the odds ratio
  and the conditional guarantee fails (why the counts are Poisson);
* in the pipeline: the method is recorded, the release counts are Poisson draws around
  ``samples`` (dispersion over seeds: a fixed count fails), the bound equals the oracle
  from the result's own counts at ``alpha``, and sharded certification counts the same
  releases as the serial run even when the two datasets need different numbers of chunks.

Mutation checks (each makes a test of this file fail): ``alpha / 2`` in
``conditional_ratio_lower``; the release counts fixed at ``samples`` (no Poisson draw);
a sharded run over the first dataset's chunk grid instead of the larger one.
"""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest
import scipy.stats

import dpaudit
from dpaudit.blackbox import blackbox_audit
from dpaudit.blackbox.certification import count_event, poisson_releases
from dpaudit.blackbox.result import SelectedEvent
from dpaudit.blackbox.samplers import ReleaseSource
from dpaudit.estimation.bounds import (
    CONDITIONAL_RATIO,
    PAIR,
    bound_method,
    certified_epsilon_by,
    conditional_ratio_lower,
)
from dpaudit.runtime import LocalExecutor

EPSILON = 1.0
P1 = math.exp(EPSILON) / (1 + math.exp(EPSILON))
D0, D1 = np.zeros(1), np.ones(1)


def randomized_response(data, n, key):
    u = jax.random.uniform(key, (n,))
    return (u < (P1 if float(data[0]) else 1 - P1)).astype(float)


CASES = [(5_000, 1_000, 0.95), (37, 3, 0.9), (999, 0, 0.99), (120_000, 119_000, 0.9)]


@pytest.mark.parametrize("k_p, k_q, confidence", CASES)
def test_the_ratio_bound_is_scipys_one_sided_exact_bound_at_the_full_alpha(k_p, k_q, confidence):
    ratio, theta = conditional_ratio_lower(k_p, k_q, confidence)
    ci = scipy.stats.binomtest(k_p, k_p + k_q, alternative="greater").proportion_ci(
        confidence_level=confidence, method="exact"
    )
    assert float(theta) == pytest.approx(ci.low, abs=1e-12)
    assert float(ratio) == pytest.approx(ci.low / (1 - ci.low), rel=1e-10)
    half = scipy.stats.binomtest(k_p, k_p + k_q, alternative="greater").proportion_ci(
        confidence_level=1 - (1 - confidence) / 2, method="exact"
    )
    assert float(theta) > half.low + 1e-6  # the level is alpha, not alpha / 2
    eps = certified_epsilon_by(CONDITIONAL_RATIO, k_p, 0, k_q, 0, confidence=confidence)
    assert float(eps) == pytest.approx(max(0.0, math.log(ci.low / (1 - ci.low))), abs=1e-10)


def test_the_method_is_fixed_by_the_claim_and_refuses_approximate_claims():
    assert bound_method(0.0) == CONDITIONAL_RATIO and bound_method(1e-6) == PAIR
    with pytest.raises(ValueError, match="delta = 0"):
        certified_epsilon_by(CONDITIONAL_RATIO, 10, 100, 1, 100, delta=0.01)
    with pytest.raises(ValueError, match="method"):
        certified_epsilon_by("best-of-two", 10, 100, 1, 100)
    # zero counts: nothing certified; no Q count: a finite bound
    assert float(certified_epsilon_by(CONDITIONAL_RATIO, 0, 0, 0, 0)) == 0.0
    assert 0 < float(certified_epsilon_by(CONDITIONAL_RATIO, 50, 0, 0, 0)) < math.inf


def _poisson_exceedance(mean_sum: float, theta: float, confidence: float) -> float:
    """P(theta_lo > theta) for k_P | S ~ Bin(S, theta), S ~ Poisson(mean_sum), exactly."""
    sd = math.sqrt(mean_sum)
    s = np.arange(max(0, int(mean_sum - 10 * sd)), int(mean_sum + 10 * sd) + 1)
    k = np.arange(s[-1] + 1)
    kk, ss = np.meshgrid(k, s)
    valid = kk <= ss
    _, theta_lo = conditional_ratio_lower(
        np.where(valid, kk, 0), np.where(valid, ss - kk, 0), confidence
    )
    exceed = valid & (theta_lo > theta)
    w = scipy.stats.binom.pmf(kk, ss, theta) * exceed
    return float(np.sum(scipy.stats.poisson.pmf(s, mean_sum) * w.sum(axis=1)))


@pytest.mark.parametrize(
    "p, q, n, confidence",
    [(0.03, 0.03 * math.exp(-0.25), 8_000, 0.9), (P1, 1 - P1, 300, 0.95), (0.2, 0.02, 2000, 0.9)],
)
def test_on_poisson_counts_the_rate_is_at_most_alpha_and_near_it(p, q, n, confidence):
    rate = _poisson_exceedance(n * (p + q), p / (p + q), confidence)
    alpha = 1 - confidence
    assert 0.6 * alpha < rate <= alpha, rate


def test_on_fixed_counts_the_conditional_guarantee_fails():
    """Why the counts are Poisson: with fixed n, k_P | S is Fisher's noncentral
    hypergeometric law in the odds ratio p(1-q)/(q(1-p)) = 9, not Bin(S, p/(p+q)), and the
    bound's conditional exceedance given S is far above alpha for some S (0.197 at S = 80).
    (Unconditionally it is 0.0625 <= 0.1 here — smaller S are compensated by larger ones —
    but no proof covers that; Poisson counts make every S exact.)"""
    n, p, q, confidence = 200, 0.5, 0.1, 0.9
    odds, theta, s = p * (1 - q) / (q * (1 - p)), p / (p + q), 80
    k = np.arange(s + 1)
    direct = scipy.stats.binom.pmf(k, n, p) * scipy.stats.binom.pmf(s - k, n, q)
    law = scipy.stats.nchypergeom_fisher.pmf(k, 2 * n, n, s, odds)
    np.testing.assert_allclose(law, direct / direct.sum(), atol=1e-12)
    _, theta_lo = conditional_ratio_lower(k, s - k, confidence)
    assert float(np.sum(law * (theta_lo > theta))) > 1.5 * (1 - confidence)
    binomial = scipy.stats.binom.pmf(k, s, theta)  # the Poisson model's conditional law
    assert float(np.sum(binomial * (theta_lo > theta))) <= 1 - confidence


def _audit(seed: int, **kwargs):
    kw = dict(samples=2000, select_samples=2000, seed=seed, progress=False) | kwargs
    return blackbox_audit(
        randomized_response, np.zeros(1), np.ones(1), dpaudit.Claim(EPSILON), **kw
    )


def test_a_pure_claim_is_certified_by_the_ratio_bound_at_the_pinned_level():
    res = _audit(0, confidence=0.9)
    assert res.bound_method == CONDITIONAL_RATIO == res.to_dict()["bound_method"]
    assert "conditional-ratio bound" in res.summary()
    k_p, k_q = res.event.counts.P, res.event.counts.Q
    oracle = scipy.stats.beta.ppf(0.1, k_p, k_q + 1)
    assert res.event.bound.theta_lower == pytest.approx(oracle, abs=1e-12)
    assert res.epsilon_lower == pytest.approx(math.log(oracle / (1 - oracle)), rel=1e-10)
    half = scipy.stats.beta.ppf(0.05, k_p, k_q + 1)  # alpha / 2: a wrong level
    assert res.epsilon_lower != pytest.approx(math.log(half / (1 - half)), rel=1e-6)
    # the delta bound stays the pair on the releases counted
    n_p, n_q = res.event.releases.P, res.event.releases.Q
    p_lo = scipy.stats.beta.ppf(0.05, k_p, n_p - k_p + 1)
    q_hi = scipy.stats.beta.ppf(0.95, k_q + 1, n_q - k_q)
    assert res.event.p_lower == pytest.approx(p_lo, abs=1e-12)
    assert res.delta_lower == pytest.approx(max(0.0, p_lo - math.e * q_hi), abs=1e-12)
    json.dumps(res.to_dict())


def test_the_release_counts_are_poisson_around_the_budget():
    """Over 16 seeds, the 32 counts have the Poisson variance (a fixed count has none)."""
    n = 2000
    counts = np.array([list(_audit(s, samples=n).event.releases) for s in range(16)])
    counts = counts.ravel()
    assert abs(counts.mean() - n) < 4 * math.sqrt(n / counts.size)
    # dispersion statistic sum (x - n)^2 / n ~ chi2(32) under Poisson(n)
    stat = float(np.sum((counts - n) ** 2) / n)
    lo, hi = scipy.stats.chi2.ppf([1e-4, 1 - 1e-4], counts.size)
    assert lo < stat < hi, stat
    # an approximate claim keeps the fixed count
    res = blackbox_audit(randomized_response, np.zeros(1), np.ones(1), dpaudit.Claim(EPSILON, 1e-3),
                         samples=n, select_samples=1000, seed=0, progress=False)  # fmt: skip
    assert res.event.releases == (n, n) and res.bound_method == PAIR


def _record(res) -> str:
    d = res.to_dict()
    for key in ("seconds", "timings"):
        d.pop(key)
    scores = {
        k: np.asarray(v).tobytes().hex() for k, v in res.certification_scores.to_dict().items()
    }
    return json.dumps([d, scores], sort_keys=True, default=repr)


@pytest.mark.parametrize(("seed", "larger"), [(4, "Q"), (5, "P")])
def test_shards_count_the_same_poisson_releases_as_the_serial_run(seed, larger):
    """Chunks of 100: the two datasets' Poisson counts need different numbers of chunks
    (seed 4: Q's more, seed 5: P's more); the shards cover the larger grid."""
    kw = dict(samples=20_000, select_samples=2000, chunk_size=100, seed=seed)
    serial = _audit(**kw)
    chunks = {k: -(-n // 100) for k, n in serial.event.releases.to_dict().items()}
    assert chunks[larger] > chunks["P" if larger == "Q" else "Q"]
    for shards in (1, 2, 4) if larger == "Q" else (4,):
        assert _record(_audit(**kw, executor=LocalExecutor(shards))) == _record(serial), shards


def _counting_sampler(data, n, key):
    """Releases 0, 1, ..., n - 1 (plus 1000 for D'): the counts are the releases counted."""
    return np.arange(n, dtype=float)[:, None] + 1000 * float(np.sum(data))


def test_certification_counts_exactly_the_poisson_number_of_releases():
    sources = tuple(ReleaseSource(_counting_sampler, d, "count", 40) for d in (D0, D1))
    keys = jax.random.split(jax.random.key(3), 3)
    n_d, n_dp = poisson_releases(keys[2], (100,))[:, -1]
    assert (n_d, n_dp) != (100, 100)
    everything = SelectedEvent(0.0, 0, 1, -1e9, 0.0, 0.5, 0.5)  # {-s > -1e9}, P = P_D'
    counts = count_event(
        everything, lambda x: x[:, 0], sources, 100, keys, method=CONDITIONAL_RATIO
    )
    assert (counts.n_p, counts.n_q) == (counts.k_p, counts.k_q) == (n_dp, n_d)
    assert counts.bound == CONDITIONAL_RATIO
    # one chunk grid: chunks of 40 whatever the counts (the sampler shape does not vary)
    assert counts.scores_p.size == n_dp and counts.scores_q.size == n_d
    # the looks of a sequential run: Poisson process increments, monotone, means as planned
    looks = poisson_releases(jax.random.key(4), (1000, 2000, 4000))
    assert looks.shape == (2, 3) and np.all(np.diff(looks, axis=1) >= 0)
    many = poisson_releases(jax.random.key(5), np.full(1, 10**6))
    assert abs(int(many[0, 0]) - 10**6) < 6 * 1000 and many[0, 0] != many[1, 0]
