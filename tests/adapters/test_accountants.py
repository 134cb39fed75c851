"""Claims from accountants: dp_accounting (real), Opacus and jax-privacy (fakes of their API).

The Opacus and jax-privacy tests use small fakes of the documented methods
(``get_epsilon(delta=...)``, ``compute_epsilon(...)``); the importorskip tests run the
real libraries when they are installed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.adapters import claim_from_accountant, profile_claim
from dpaudit.model.claims import Claim
from dpaudit.training import ProfileClaim

dp_accounting = pytest.importorskip("dp_accounting")


def _dpsgd_event(sigma=1.0, q=0.01, steps=100):
    gaussian = dp_accounting.GaussianDpEvent(sigma)
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, gaussian), steps
    )


def test_claim_from_a_dp_accounting_accountant_or_event():
    rdp = dp_accounting.rdp.RdpAccountant()
    rdp.compose(_dpsgd_event())
    claim = Claim.from_dp_accounting(rdp, delta=1e-5)
    assert claim.epsilon == pytest.approx(rdp.get_epsilon(1e-5))
    assert (claim.delta, claim.adjacency) == (1e-5, "add-remove")
    assert "RdpAccountant" in claim.reference
    from_event = Claim.from_dp_accounting(dp_accounting.GaussianDpEvent(1.0), delta=1e-5)
    pld = dp_accounting.pld.PLDAccountant()
    pld.compose(dp_accounting.GaussianDpEvent(1.0))
    assert from_event.epsilon == pytest.approx(pld.get_epsilon(1e-5))
    replace = dp_accounting.pld.PLDAccountant(dp_accounting.NeighboringRelation.REPLACE_ONE)
    replace.compose(dp_accounting.GaussianDpEvent(1.0))
    assert Claim.from_dp_accounting(replace, delta=1e-5).adjacency == "replace-one"
    assert claim_from_accountant(rdp, delta=1e-5) == claim


def test_the_profile_claim_is_the_accountants_curve():
    pld = dp_accounting.pld.PLDAccountant()
    pld.compose(dp_accounting.GaussianDpEvent(1.0))
    profile = profile_claim(pld, delta=1e-5)
    assert isinstance(profile, ProfileClaim) and profile.delta == 1e-5
    eps = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(profile.delta_of_epsilon(eps), [pld.get_delta(e) for e in eps])


class _Opacus:
    """Opacus's accountant interface: ``get_epsilon(delta)`` after its steps."""

    __module__ = "opacus.accountants.rdp"

    def __init__(self, epsilon):
        self.epsilon, self.asked = epsilon, []

    def get_epsilon(self, delta):
        self.asked.append(delta)
        return self.epsilon


class _JaxPrivacy:
    """jax-privacy's training accountant: ``compute_epsilon(num_updates, ...)``."""

    __module__ = "jax_privacy.accounting.analysis"

    def compute_epsilon(self, num_updates, delta):
        return 0.01 * num_updates + delta


def test_claims_from_opacus_and_jax_privacy_accountants():
    fake = _Opacus(2.5)
    claim = claim_from_accountant(fake, delta=1e-5)
    assert (claim.epsilon, claim.delta, claim.adjacency) == (2.5, 1e-5, "add-remove")
    assert fake.asked == [1e-5] and claim.reference.startswith("opacus _Opacus")
    jp = claim_from_accountant(_JaxPrivacy(), delta=1e-5, num_updates=100)
    assert jp.epsilon == pytest.approx(1.0 + 1e-5) and jp.reference.startswith("jax_privacy")


def test_bad_accountant_input_gets_one_sentence_each():
    with pytest.raises(ValueError, match=r"an accountant states epsilon at a delta: pass delta="):
        claim_from_accountant(_Opacus(1.0))
    with pytest.raises(ValueError, match=r"pass delta="):
        Claim.from_dp_accounting(dp_accounting.GaussianDpEvent(1.0))
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\), got 0"):
        profile_claim(dp_accounting.GaussianDpEvent(1.0), delta=0)
    with pytest.raises(TypeError, match=r"delta must be a number in \(0, 1\), got str"):
        claim_from_accountant(_Opacus(1.0), delta="1e-5")
    with pytest.raises(TypeError, match=r"expected a dp_accounting PrivacyAccountant .* got dict"):
        Claim.from_dp_accounting({}, delta=1e-5)
    with pytest.raises(ValueError, match=r"states epsilon = inf at delta = 1e-05"):
        claim_from_accountant(_Opacus(math.inf), delta=1e-5)
    with pytest.raises(TypeError, match=r"get_epsilon takes delta only"):
        claim_from_accountant(_Opacus(1.0), delta=1e-5, num_updates=3)


def test_a_real_opacus_accountant():
    opacus = pytest.importorskip("opacus.accountants")
    accountant = opacus.RDPAccountant()
    accountant.history = [(1.0, 0.01, 100)]  # (noise multiplier, sample rate, steps)
    claim = claim_from_accountant(accountant, delta=1e-5)
    assert claim.epsilon == pytest.approx(accountant.get_epsilon(delta=1e-5))


def test_a_real_jax_privacy_event_goes_through_dp_accounting():
    pytest.importorskip("jax_privacy")
    claim = claim_from_accountant(_dpsgd_event(), delta=1e-5)
    assert 0 < claim.epsilon < math.inf
