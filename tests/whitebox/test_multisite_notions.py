"""Notion claims on multi-site releases: k Gaussian queries audited as one whole trace."""

import dataclasses
import math

import numpy as np
import pytest

import dpaudit
from dpaudit.model.claims import GDPClaim, RDPClaim, ZCDPClaim

N, K = 20, 3


def _queries(claim):
    """composed-gaussian-queries (k = 3 clipped means at 3 sites) under ``claim``."""
    mech = dpaudit.build("composed-gaussian-queries", n=N, k=K)
    assert len(mech.release_sites) == K
    return dataclasses.replace(mech, claim=claim)


def _corner_pair():
    """Record 0 from corner to corner: every query mean moves by its sensitivity 1/n."""
    d = np.zeros((N, K))
    d_prime = d.copy()
    d_prime[0] = 1.0
    return d, d_prime


def _mu():
    sigma = dpaudit.build("composed-gaussian-queries", n=N, k=K).params["sigma"]
    return math.sqrt(K) / (N * sigma)  # mu_1 = (1/n) / sigma per query, composed: sqrt(k) mu_1


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda mu: GDPClaim(mu), "pass"),
        (lambda mu: GDPClaim(mu * (1 - 1e-6)), "violation"),
        (lambda mu: ZCDPClaim(mu * mu / 2), "pass"),
        (lambda mu: ZCDPClaim(mu * mu / 2 * (1 - 1e-6)), "violation"),
        (lambda mu: RDPClaim([2.0, 16.0], [mu * mu, 8 * mu * mu]), "pass"),
        (lambda mu: RDPClaim([2.0, 16.0], [mu * mu, 8 * mu * mu * (1 - 1e-6)]), "violation"),
    ],
)
def test_k_gaussian_queries_in_each_notion(make, expected):
    mu = _mu()
    claim = make(mu)
    mech = _queries(claim)
    d, d_prime = _corner_pair()
    result = dpaudit.audit(mech, d, d_prime, samples=1000)
    assert result.verdict == expected
    notion = result.diagnostics["notion"]
    tight = notion["tightest"]
    if isinstance(claim, GDPClaim):  # the whole trace's mu, exactly sqrt(k) mu_1
        assert tight["lower"] == pytest.approx(mu, rel=1e-12) == tight["upper"]
    elif isinstance(claim, ZCDPClaim):
        assert tight["upper"] == pytest.approx(mu * mu / 2, rel=1e-12)
    else:
        np.testing.assert_allclose(tight["upper"], [mu * mu, 8 * mu * mu], rtol=1e-12)


@pytest.mark.parametrize(("scale", "expected"), [(1.0, "pass"), (1 - 1e-6, "violation")])
def test_k_laplace_queries_rdp_against_dp_accounting(scale, expected):
    # k Laplace queries with epsilon / k each: D_alpha = k x Mironov's Laplace value, here
    # from dp_accounting's RdpAccountant (LaplaceDpEvent composed k times).
    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    orders = [1.5, 2.0, 8.0]
    accountant = RdpAccountant(orders)
    accountant.compose(dp_accounting.LaplaceDpEvent(K / 1.0), K)  # b / Delta = k / epsilon
    claimed = np.asarray(accountant._rdp) * scale  # the accountant has no public RDP getter
    mech = dpaudit.build("composed-laplace-queries", epsilon=1.0, n=N, k=K)
    mech = dataclasses.replace(mech, claim=RDPClaim(orders, claimed.tolist()))
    d, d_prime = _corner_pair()
    result = dpaudit.audit(mech, d, d_prime, samples=1000)
    assert result.verdict == expected
    tight = result.diagnostics["notion"]["tightest"]
    np.testing.assert_allclose(tight["upper"], claimed / scale, rtol=1e-9)
