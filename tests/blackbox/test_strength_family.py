"""Audit strength that holds for the mechanism's own family (issue 27, item 8).

A Gaussian mechanism really (1.5, 1e-5)-DP audited against (1, 1e-5): the event-family
figure ("an epsilon >= 1.03 would have been certified") does not apply to it, because a
Gaussian's loss ratio on any event a budget can count is far below e^epsilon(delta). The
Gaussian-family strength is the figure that does: a Gaussian below it can stay unseen,
one above it is caught at the expected counts.

Mutation checks: ``gaussian_strength`` returning the event family's epsilon fails
``test_the_gaussian_strength_is_what_a_gaussian_needs``; dropping the Gaussian sentence
from ``strength_notes`` fails ``test_a_gaussian_at_1_5_is_not_promised_detection``.
"""

import math

import numpy as np
import pytest
import scipy.special

from dpaudit import Claim
from dpaudit.accounting.profiles import gaussian_epsilon
from dpaudit.blackbox.result import audit_strength, gaussian_strength, strength_in_notion
from dpaudit.estimation.bounds import CONDITIONAL_RATIO, PAIR, certified_epsilon_by
from dpaudit.model.claims import GDPClaim, ZCDPClaim

CLAIM = Claim(1.0, 1e-5)


def _mu_for_epsilon(epsilon: float, delta: float) -> float:
    lo, hi = 1e-3, 20.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if gaussian_epsilon(delta, mid) < epsilon else (lo, mid)
    return hi


def _detection_rate(mu: float, n: int, claim, runs: int, rng) -> float:
    """Poisson counts of the best threshold event of N(mu, 1) vs N(0, 1), certified."""
    method = CONDITIONAL_RATIO if claim.delta == 0 else PAIR
    t = mu / 2 + np.linspace(-4, 12, 161)
    p, q = scipy.special.ndtr(mu - t), scipy.special.ndtr(-t)
    expected = certified_epsilon_by(method, n * p, n, n * q, n, delta=claim.delta)
    best = int(np.nanargmax(expected))  # the event a good selection finds
    k_p = rng.poisson(n * p[best], runs)
    k_q = rng.poisson(n * q[best], runs)
    eps = certified_epsilon_by(method, k_p, n, k_q, n, delta=claim.delta)
    return float(np.mean(eps > claim.epsilon))


@pytest.mark.parametrize("n", [20_000, 100_000])
def test_the_gaussian_strength_is_what_a_gaussian_needs(n):
    rng = np.random.default_rng(0)
    strength = audit_strength(int(0.1 * n), n, CLAIM, 0.95)
    assert strength.gaussian_epsilon > strength.epsilon  # the event figure over-promises
    at = strength.gaussian_mu
    assert _detection_rate(1.15 * at, n, CLAIM, 400, rng) >= 0.5  # above: caught (median+)
    assert _detection_rate(0.85 * at, n, CLAIM, 400, rng) <= 0.5  # below: can stay unseen
    # a Gaussian at the event family's epsilon is mostly missed: that figure is not its own
    event_mu = _mu_for_epsilon(strength.epsilon, CLAIM.delta)
    assert _detection_rate(event_mu, n, CLAIM, 400, rng) < 0.2


def test_a_gaussian_at_1_5_is_not_promised_detection():
    """The issue's case: (1.5, 1e-5)-DP Gaussian, claim (1, 1e-5), 100000 releases."""
    from dpaudit.blackbox.result import strength_notes

    strength = audit_strength(10_000, 100_000, CLAIM, 0.95)
    mu = _mu_for_epsilon(1.5, 1e-5)
    assert strength.epsilon < 1.5 < strength.gaussian_epsilon
    assert mu < strength.gaussian_mu
    note = strength_notes(strength, CLAIM, 0.95, ("logistic",), "logistic", True)[0]
    assert f"epsilon >= {strength.gaussian_epsilon:.3g}" in note
    assert "Gaussian mechanism is detected only from" in note


def test_strength_in_the_claims_notion():
    strength = audit_strength(10_000, 100_000, CLAIM, 0.95)
    mu = strength.gaussian_mu
    assert strength.gaussian_rho == pytest.approx(mu * mu / 2)
    zcdp = ZCDPClaim(rho=0.1, sensitivity=1.0, sensitivity_norm="l2")
    assert strength_in_notion(strength, zcdp) == f"rho >= {mu * mu / 2:.3g}"
    gdp = GDPClaim(mu=0.5, sensitivity=1.0, sensitivity_norm="l2")
    assert strength_in_notion(strength, gdp) == f"mu >= {mu:.3g}"
    assert strength_in_notion(strength, Claim(1.0)) == f"mu >= {mu:.3g}"
    assert math.isinf(audit_strength(100, 1000, Claim(1.0), 0.95).gaussian_epsilon)


def test_gaussian_strength_grows_as_the_budget_shrinks():
    big = gaussian_strength(1_000_000, CLAIM, 0.95)
    small = gaussian_strength(10_000, CLAIM, 0.95)
    assert 0 < big < small < math.inf
