"""Borderline violations and the suite's error: p-values that are valid, and Holm's correction.

The simulations count the event of an exactly tight, correct pure-epsilon mechanism
(``P(S) = e^epsilon Q(S)``: randomized response at its claim) with Poisson counts, as a
black-box certification does, and apply the audit's own bound and p-value
(:func:`dpaudit.blackbox.result.violation_p_value`).

Mutation checks: ``BORDERLINE_P = 1e-2`` fails
``test_tight_claim_violations_are_borderline_at_the_stated_rate`` (the stated rate);
``p_value`` returning ``alpha / 100`` fails ``test_p_value_is_the_smallest_certifying_level``
and the tight-claim simulation; ``holm`` comparing with ``alpha`` instead of
``alpha / (m - rank)`` fails ``test_holm_controls_the_family_wise_error``.
"""

import math

import numpy as np
import pytest

from dpaudit import Claim
from dpaudit.blackbox.result import CertifiedCounts, violation_p_value
from dpaudit.estimation.bounds import CONDITIONAL_RATIO, certified_epsilon_by
from dpaudit.estimation.significance import BORDERLINE_P, borderline_record, holm, p_value

EPSILON = 1.0
CLAIM = Claim(epsilon=EPSILON)


def _counts(k_p: int, k_q: int, n: int = 10_000) -> CertifiedCounts:
    empty = np.zeros(0)
    return CertifiedCounts(k_p, k_q, empty, empty, n, n, CONDITIONAL_RATIO)


def test_p_value_is_the_smallest_certifying_level():
    counts = _counts(3000, 1000)
    p = violation_p_value(counts, CLAIM, 0.95, 0.95)

    def eps_at(a):
        return float(certified_epsilon_by(CONDITIONAL_RATIO, 3000, 1, 1000, 1, confidence=1 - a))

    assert eps_at(p * 1.001) > EPSILON >= eps_at(p / 1.01)
    assert p_value(lambda a: a > 0.01, 0.05) == pytest.approx(0.01, rel=1e-9)
    with pytest.raises(ValueError, match="alpha must lie strictly between 0 and 1"):
        p_value(lambda a: True, 1.0)


def test_a_sequential_look_scales_its_p_value_to_the_audit_level():
    counts = _counts(3000, 1000)
    at_look = violation_p_value(counts, CLAIM, 0.99, 0.99)
    scaled = violation_p_value(counts, CLAIM, 0.99, 0.95)  # the look spent 0.01 of 0.05
    assert scaled == pytest.approx(at_look * 5, rel=1e-9)


def _tight_p_values(seeds: int, rng) -> np.ndarray:
    """p-values (1 where no violation) of exactly tight correct claims over ``seeds`` runs."""
    n = 20_000
    q = rng.uniform(0.02, 0.2, seeds)  # the certified event's frequency under Q varies
    k_p = rng.poisson(n * math.exp(EPSILON) * q)
    k_q = rng.poisson(n * q)
    eps = certified_epsilon_by(CONDITIONAL_RATIO, k_p, n, k_q, n, confidence=0.95)
    out = np.ones(seeds)
    for i in np.flatnonzero(eps > EPSILON):
        out[i] = violation_p_value(_counts(int(k_p[i]), int(k_q[i]), n), CLAIM, 0.95, 0.95)
    return out


def test_tight_claim_violations_are_borderline_at_the_stated_rate():
    """4000 tight correct audits: ~2.5-5 % violations at 0.95, all but <= 1e-3 borderline.

    P(p <= x) <= x for every x; with 4000 audits the number of p-values below
    BORDERLINE_P is Binomial(4000, <= 1e-3) (mean <= 4): 16 or more has probability < 1e-5.
    """
    p = _tight_p_values(4000, np.random.default_rng(0))
    violations = p < 1.0
    firm = [borderline_record(x) is None for x in p[violations]]
    assert 0.01 < violations.mean() <= 0.06
    assert sum(firm) < 16
    for x in (0.01, 0.02, 0.05):  # the p-values are valid at every level
        assert np.mean(p <= x) <= x + 3 * math.sqrt(x / p.size)


@pytest.mark.slow
def test_two_hundred_seeds_of_a_tight_pure_claim_through_the_black_box_engine():
    """200 seeds of randomized response audited at its exact epsilon (the real engine)."""
    import jax
    import jax.numpy as jnp

    from dpaudit.blackbox import blackbox_audit

    e = math.exp(EPSILON)

    def sampler(data, n, key):  # randomized response of a bit: truthful with e / (1 + e)
        truth = jnp.asarray(data)[0, 0]
        keep = jax.random.uniform(key, (n,)) < e / (1 + e)
        return jnp.where(keep, truth, 1.0 - truth)[:, None]

    d, d_prime = np.zeros((1, 1)), np.ones((1, 1))
    firm = violations = 0
    for seed in range(200):
        res = blackbox_audit(
            sampler, d, d_prime, CLAIM, statistic="logistic", samples=4000, seed=seed,
            progress=False,
        )  # fmt: skip
        violations += res.verdict == "violation"
        firm += res.verdict == "violation" and res.borderline is None
    print(f"tight randomized response: {violations}/200 violations, {firm} not borderline")
    assert firm <= 1  # P(Binomial(200, 1e-3) >= 2) = 0.018


def test_holm_controls_the_family_wise_error():
    rng = np.random.default_rng(1)
    alpha, m, runs = 0.05, 50, 4000
    any_false = 0
    for _ in range(runs):
        p = rng.uniform(size=m)  # all hypotheses true: uniform p-values
        any_false += any(holm(p.tolist(), alpha))
    assert any_false / runs <= alpha + 3 * math.sqrt(alpha / runs)
    assert holm([0.001, 0.04, 0.03], 0.05) == [True, False, False]
    assert holm([0.001, 0.04, 0.02], 0.05) == [True, True, True]
    assert holm([0.001, 0.02, 0.03], 0.1) == [True, True, True]
    with pytest.raises(ValueError, match="alpha must lie strictly between"):
        holm([0.5], 0.0)


def test_borderline_record_only_above_the_threshold():
    assert borderline_record(BORDERLINE_P) is None
    assert borderline_record(0.01) == {"p_value": 0.01, "threshold": BORDERLINE_P}


def test_the_closed_form_p_value_is_the_bisection_one():
    for k_p, k_q in ((3000, 1000), (40, 5), (700, 230)):
        counts = _counts(k_p, k_q)
        closed = violation_p_value(counts, CLAIM, 0.95, 0.95)

        def certifies_at(a, k_p=k_p, k_q=k_q):
            eps = certified_epsilon_by(CONDITIONAL_RATIO, k_p, 1, k_q, 1, confidence=1 - a)
            return float(eps) > EPSILON

        if closed < 0.05:
            assert closed == pytest.approx(p_value(certifies_at, 0.05), rel=1e-6)


def test_a_suite_of_tight_audits_raises_a_false_alarm_at_most_at_its_level():
    """300 suites of 40 exactly tight correct audits at 0.95 each: without correction most
    suites go red (1 - 0.97^40 ~ 70 %); with Holm at suite confidence 0.95, at most 5 %."""
    import dataclasses

    from dpaudit.estimation.significance import correct_suite

    @dataclasses.dataclass(frozen=True)
    class Result:
        verdict: str
        confidence: float
        p_value: float | None
        notes: tuple = ()
        borderline: dict | None = None

    rng = np.random.default_rng(3)
    suites, m = 300, 40
    p = _tight_p_values(suites * m, rng).reshape(suites, m)
    raw_red = corrected_red = 0
    for row in p:
        results = [Result("violation" if x < 1 else "inconclusive", 0.95, x if x < 1 else None)
                   for x in row]  # fmt: skip
        raw_red += any(r.verdict == "violation" for r in results)
        corrected = correct_suite(results, 0.95)
        corrected_red += any(r.verdict == "violation" for r in corrected)
        for before, after in zip(results, corrected, strict=True):
            if before.verdict == "violation" and after.verdict != "violation":
                assert after.borderline["suite"] is True and "borderline" in after.notes[0]
    assert raw_red / suites > 0.3
    assert corrected_red / suites <= 0.05 + 3 * math.sqrt(0.05 / suites)
