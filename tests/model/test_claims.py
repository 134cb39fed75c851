"""Notion claims: validation (one sentence per bad input), conversions against outside oracles."""

import math

import numpy as np
import pytest
import scipy.stats
from dp_accounting.rdp import rdp_privacy_accountant as rdp

import dpaudit
from dpaudit.accounting.conversions import (
    gdp_delta,
    gdp_mu_for_point,
    gdp_tradeoff,
    rdp_delta,
    rdp_epsilon,
    zcdp_delta,
    zcdp_epsilon,
)
from dpaudit.model.claims import (
    GDPClaim,
    RDPClaim,
    TradeoffClaim,
    ZCDPClaim,
    make_claim,
    notion_fields,
)

# dp_accounting's RDP accountant works on a finite grid of orders: a fine one, so its
# minimum is within 1e-4 of the continuous minimum dpaudit takes.
FINE_ORDERS = np.concatenate([np.linspace(1.001, 20, 20000), np.linspace(20, 400, 4000)])


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"epsilon": 1.0, "zcdp_rho": 0.5}, "mixes notions"),
        ({"gdp_mu": 1.0, "zcdp_rho": 0.5}, "mixes notions"),
        ({"zcdp_rho": 0.0}, "rho must be a finite number > 0"),
        ({"zcdp_rho": -1.0}, "rho must be a finite number > 0"),
        ({"gdp_mu": 0.0}, "mu must be a finite number > 0"),
        ({"gdp_mu": -2.0}, "mu must be a finite number > 0"),
        ({"rdp_orders": [1.0], "rdp_epsilons": [1.0]}, "orders must be > 1"),
        ({"rdp_orders": [0.5, 2.0], "rdp_epsilons": [1.0, 1.0]}, "orders must be > 1"),
        ({"rdp_orders": [2.0, 3.0], "rdp_epsilons": [1.0]}, "one epsilon per order"),
        ({"rdp_orders": [2.0]}, "needs both rdp_orders and rdp_epsilons"),
        ({"adjacency": "replace-one"}, "states no privacy parameter"),
    ],
)
def test_bad_claims_get_one_sentence(fields, message):
    with pytest.raises(ValueError, match=message) as err:
        make_claim(**fields)
    assert str(err.value).count(". ") == 0  # one sentence


@pytest.mark.parametrize(
    ("f", "message"),
    [
        (lambda x: 1.0 - x**2, "below 1 - x"),  # concave and above 1 - x
        (lambda x: np.where(x < 0.5, 0.4 - 0.4 * x, 0.5 * (1 - x)), "non-increasing"),
        (lambda x: np.maximum(0.0, 0.9 - 0.9 * x) * (1 - 0.5 * x * (1 - x)), "convex"),
        (lambda x: np.full_like(x, 1.5), "values in \\[0, 1\\]"),
    ],
)
def test_bad_tradeoff_functions_are_refused(f, message):
    with pytest.raises(ValueError, match=message) as err:
        TradeoffClaim.from_function(f)
    assert str(err.value).count(". ") == 0  # one sentence


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: ZCDPClaim(0.0), ValueError, "rho must be a finite number > 0, got 0.0"),
        (lambda: ZCDPClaim(-0.5), ValueError, "rho must be a finite number > 0, got -0.5"),
        (lambda: ZCDPClaim(math.nan), ValueError, "rho must be a finite number > 0, got nan"),
        (lambda: ZCDPClaim("0.5"), TypeError, "rho must be a number, got str"),
        (lambda: ZCDPClaim(True), TypeError, "rho must be a number, got bool"),
        (lambda: GDPClaim(0.0), ValueError, "mu must be a finite number > 0, got 0.0"),
        (lambda: GDPClaim(-1.0), ValueError, "mu must be a finite number > 0, got -1.0"),
        (lambda: GDPClaim(math.inf), ValueError, "mu must be a finite number > 0, got inf"),
        (lambda: RDPClaim([1.0], [1.0]), ValueError, "orders must be > 1 .* got 1.0"),
        (lambda: RDPClaim([2.0, 0.9], [1.0, 1.0]), ValueError, "orders must be > 1 .* got 0.9"),
        (lambda: RDPClaim([2.0, 2.0], [1.0, 1.0]), ValueError, "orders must be distinct"),
        (lambda: TradeoffClaim([0, 0.5, 1], [1, 0.6, 0]), ValueError, "below 1 - x"),
        (lambda: TradeoffClaim([0, 0.5, 1], [0.4, 0.45, 0]), ValueError, "non-increasing"),
        (lambda: TradeoffClaim([0, 0.5, 1], [0.8, 0.45, 0]), ValueError, "convex"),
        (lambda: TradeoffClaim([0, 0.5], [0.5, 0]), ValueError, "from 0 to 1"),
    ],
)
def test_bad_claims_built_directly_get_one_sentence(build, error, message):
    with pytest.raises(error, match=message) as err:
        build()
    assert str(err.value).count(". ") == 0 and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "claim_table",
    [
        "epsilon = 1.0\nzcdp_rho = 0.5",
        "zcdp_rho = 0.0",
        "gdp_mu = -1.0",
        "rdp_orders = [1.0, 2.0]\nrdp_epsilons = [0.5, 1.0]",
    ],
)
def test_bad_notion_claims_in_a_spec_exit_2_with_one_line(tmp_path, capsys, claim_table):
    from dpaudit.cli.main import main

    spec = tmp_path / "bad.toml"
    spec.write_text(
        f'[mechanism]\nname = "gaussian-mean-gdp"\n\n[claim]\n{claim_table}\n\n'
        '[data]\ngenerator = "points"\n'
    )
    assert main(["audit", str(spec)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0] and "claim" in err[0]


def test_claims_are_frozen_and_read_as_their_anchor():
    claim = ZCDPClaim(0.5, sensitivity_norm="l2", sensitivity=0.1)
    with pytest.raises(AttributeError):
        claim.rho = 1.0
    dp = claim.as_dp()
    assert isinstance(dp, dpaudit.Claim) and dp.delta == 1e-5 and not claim.pure
    assert dp.epsilon == claim.epsilon == zcdp_epsilon(1e-5, 0.5)
    assert notion_fields(claim)["rho"] == 0.5 and notion_fields(dp) == {}
    mech = dpaudit.Mechanism("m", lambda d: None, GDPClaim(1.0))
    assert mech.claim.describe() == "1-GDP"
    with pytest.raises(TypeError, match="zCDP, RDP, GDP, f-DP"):
        dpaudit.Mechanism("m", lambda d: None, object())


def test_gdp_conversion_is_the_gaussian_closed_form():
    mu, eps = 1.3, np.array([0.0, 0.5, 1.0, 3.0])
    phi = scipy.stats.norm.cdf
    closed = phi(-eps / mu + mu / 2) - np.exp(eps) * phi(-eps / mu - mu / 2)
    np.testing.assert_allclose(gdp_delta(eps, mu), closed, rtol=1e-12, atol=1e-15)
    x = np.array([0.01, 0.1, 0.5, 0.9])
    np.testing.assert_allclose(
        gdp_tradeoff(x, mu), phi(scipy.stats.norm.ppf(1 - x) - mu), rtol=1e-12
    )
    np.testing.assert_allclose(gdp_mu_for_point(x, gdp_tradeoff(x, mu)), mu, rtol=1e-9)
    # Dong-Roth-Su: delta_mu(epsilon) is exactly the duality of G_mu; the tabulated claim
    # brackets it.
    low, high = TradeoffClaim.from_function(lambda t: gdp_tradeoff(t, mu)).delta_bracket(eps)
    assert np.all(low <= gdp_delta(eps, mu) + 1e-12) and np.all(gdp_delta(eps, mu) <= high)
    assert np.all(high - low < 1e-3)


@pytest.mark.parametrize("rho", [0.05, 0.5, 2.0])
def test_zcdp_conversion_matches_dp_accounting(rho):
    for delta in (1e-3, 1e-6):
        ours = zcdp_epsilon(delta, rho)
        theirs = rdp.compute_epsilon(FINE_ORDERS, rho * FINE_ORDERS, delta)[0]
        assert ours <= theirs + 1e-9 and ours == pytest.approx(theirs, rel=1e-4)
        # Bun & Steinke 2016 Prop. 1.3 (published, looser): rho + 2 sqrt(rho log(1/delta))
        assert ours < rho + 2 * math.sqrt(rho * math.log(1 / delta))
    for eps in (0.5, 2.0):
        ours = float(zcdp_delta(eps, rho))
        theirs = rdp.compute_delta(FINE_ORDERS, rho * FINE_ORDERS, eps)[0]
        assert ours == pytest.approx(theirs, rel=1e-4)


def test_zcdp_conversion_published_value():
    # Canonne, Kamath & Steinke 2020 Prop. 12 at rho = 0.5, delta = 1e-5 (their conversion,
    # as dp_accounting's RDP accountant computes it): epsilon = 4.7284; the Gaussian with
    # the same rho (1-GDP) has the exact 4.3772.
    assert zcdp_epsilon(1e-5, 0.5) == pytest.approx(4.72839, abs=2e-5)
    assert GDPClaim(1.0).epsilon == pytest.approx(4.37718, abs=2e-5)
    assert GDPClaim(1.0).epsilon < ZCDPClaim(0.5).epsilon  # GDP is the stronger claim


def test_rdp_conversion_matches_dp_accounting():
    orders, eps = [1.5, 2.0, 4.0, 8.0, 32.0], [0.3, 0.5, 0.9, 1.4, 3.0]
    claim = RDPClaim(orders, eps)
    for delta in (1e-3, 1e-6):
        theirs = rdp.compute_epsilon(orders, eps, delta)[0]
        assert rdp_epsilon(delta, orders, eps) == pytest.approx(theirs, rel=1e-12)
    for e in (0.5, 1.0, 3.0):
        theirs = rdp.compute_delta(orders, eps, e)[0]
        assert float(rdp_delta(e, orders, eps)) == pytest.approx(theirs, rel=1e-12)
        assert float(claim.delta_implied(e)) == pytest.approx(theirs, rel=1e-12)
