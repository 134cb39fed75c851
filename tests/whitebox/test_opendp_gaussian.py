"""OpenDP's Gaussian measurement audited against its native zCDP claim (skipped without opendp)."""

import numpy as np
import pytest

import dpaudit
from dpaudit.model.claims import ZCDPClaim

dp = pytest.importorskip("opendp.prelude")


def _opendp_gaussian(scale: float):
    """OpenDP's Gaussian on a vector (each coordinate one release of the same count), its rho."""
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l2_distance(T=float)
    meas = space >> dp.m.then_gaussian(scale=scale)
    rho = meas.map(1.0)  # the native claim: zCDP for neighbouring counts (d_in = 1)

    def sampler(data, n, key):
        count = float(np.sum(np.asarray(data)))
        return np.asarray(meas([count] * int(n)), dtype=float)[:, None]

    return sampler, rho


@pytest.mark.slow  # 2 black-box audits of 100000 releases (minutes on a loaded machine)
def test_opendp_native_zcdp_claim_and_rho_read_as_epsilon():
    sampler, rho = _opendp_gaussian(scale=1.0)
    assert rho == pytest.approx(0.5)
    d, d_prime = np.zeros(5), np.zeros(5)
    d_prime[0] = 1.0
    kwargs = {"samples": 100_000, "seed": 0, "progress": False}
    native = dpaudit.blackbox_audit(sampler, d, d_prime, ZCDPClaim(rho), **kwargs)
    assert native.verdict == "inconclusive"  # the native claim is right
    misread = dpaudit.blackbox_audit(
        sampler, d, d_prime, dpaudit.Claim(epsilon=rho, delta=1e-5), **kwargs
    )
    assert misread.verdict == "violation"  # rho read as epsilon: the true epsilon is 4.4
    assert misread.epsilon_lower > 1.0
