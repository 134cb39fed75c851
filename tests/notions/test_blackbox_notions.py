"""Black-box audits of notion claims: the certified trade-off point against GDP and zCDP claims."""

import jax
import jax.numpy as jnp
import pytest

import dpaudit
from dpaudit.notions import GDPClaim, ZCDPClaim

D, D_PRIME = jnp.zeros(5), jnp.zeros(5).at[0].set(1.0)


def gaussian_count(data, n, key):
    """A count plus N(0, 1): neighbouring counts differ by 1, so the pair is exactly 1-GDP."""
    return (jnp.sum(data) + jax.random.normal(key, (n,)))[:, None]


def _audit(claim, seed, samples=200_000):
    return dpaudit.blackbox_audit(
        gaussian_count, D, D_PRIME, claim, samples=samples, seed=seed, progress=False
    )


@pytest.mark.parametrize("seed", [7, pytest.param(8, marks=pytest.mark.slow)])
def test_gdp_violation_certified_from_samples(seed):
    # Budget: 200000 certification releases per dataset (20000 selection releases).
    result = _audit(GDPClaim(0.9), seed)
    assert result.verdict == "violation"
    assert result.claim.notion == "gdp"
    assert "mu >= 0.9" in result.notes[-1]


def test_true_gdp_claim_is_never_refuted_and_mu_stays_below_the_truth():
    result = _audit(GDPClaim(1.0), seed=9, samples=100_000)
    assert result.verdict == "inconclusive"
    mu = float(result.notes[-1].split("mu >= ")[1].split(" ")[0])
    assert mu <= 1.0


def test_zcdp_audited_through_its_implied_profile():
    result = _audit(ZCDPClaim(0.5), seed=10, samples=100_000)
    assert result.verdict == "inconclusive"  # 1-GDP is 0.5-zCDP: nothing to refute
    rho = float(result.notes[-1].split("rho >= ")[1].rstrip("."))
    assert 0 < rho <= 0.5
