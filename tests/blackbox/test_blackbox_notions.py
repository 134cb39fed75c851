"""Black-box audits of notion claims: the certified trade-off point against GDP and zCDP claims."""

import html
import json
import math

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest

import dpaudit
from dpaudit.accounting.conversions import gdp_tradeoff
from dpaudit.blackbox.tradeoff import binary_renyi, notion_bound
from dpaudit.io.report import AuditOutcome, write_report
from dpaudit.io.schemas import schema
from dpaudit.model.claims import GDPClaim, RDPClaim, TradeoffClaim, ZCDPClaim

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
    bound = result.notion_bound
    assert bound.parameter == "mu" and bound.exceeds_claim and 0.9 < bound.lower <= 1.0
    assert f"certified: mu >= {bound.lower:.4g} at confidence 0.95" in result.summary()


def test_true_gdp_claim_is_never_refuted_and_mu_stays_below_the_truth():
    result = _audit(GDPClaim(1.0), seed=9, samples=100_000)
    assert result.verdict == "inconclusive"
    mu = float(result.notes[-1].split("mu >= ")[1].split(" ")[0])
    assert mu <= 1.0
    assert result.notion_bound.lower == pytest.approx(mu, rel=1e-3)


def test_zcdp_audited_through_its_implied_profile():
    result = _audit(ZCDPClaim(0.5), seed=10, samples=100_000)
    assert result.verdict == "inconclusive"  # 1-GDP is 0.5-zCDP: nothing to refute
    rho = float(result.notes[-1].split("rho >= ")[1].rstrip("."))
    assert 0 < rho <= 0.5


def test_rdp_certified_by_data_processing_and_written_to_reports(tmp_path):
    # 1-GDP has D_alpha = alpha / 2. The certified binary divergences stay below it; a claim
    # at half of it is refuted by them (the implied (epsilon, delta) profile alone does not).
    orders = [2.0, 8.0]
    true = RDPClaim(orders, [1.0, 4.0])
    half = RDPClaim(orders, [0.5, 2.0])
    results = [_audit(c, seed=10, samples=100_000) for c in (true, half)]
    assert [r.verdict for r in results] == ["inconclusive", "violation"]
    lower = np.asarray(results[0].notion_bound.lower)
    assert np.all(lower <= np.asarray(orders) / 2) and lower[0] > 0.5  # D_2 = 1
    assert results[1].notion_bound.exceeds_claim and "D_2 >= " in results[1].notes[-1]
    # JSON: the field in to_dict, the record's "notion" (schema-valid) and the HTML row
    outcomes = [AuditOutcome(f"rdp-{i}", r) for i, r in enumerate(results)]
    folder = tmp_path / "report"
    write_report(outcomes, folder)
    document = json.loads((folder / "results.json").read_text())
    errors = list(jsonschema.Draft202012Validator(schema("results")).iter_errors(document))
    assert errors == []
    record = document["audits"][1]
    assert (
        record["notion"]["parameter"] == "epsilon(alpha)" and record["notion"]["orders"] == orders
    )
    assert record["details"]["notion_bound"]["lower"] == results[1].notion_bound.lower
    page = (folder / "index.html").read_text()
    assert "certified notion parameter" in page
    assert html.escape(half.describe()) in page


def test_binary_renyi_against_closed_forms_and_monotonicity():
    # alpha = 2: log(p^2 / q + (1-p)^2 / (1-q)); -> KL as alpha -> 1.
    p, q = 0.3, 0.1
    assert binary_renyi([2.0], p, q)[0] == pytest.approx(
        math.log(p * p / q + (1 - p) ** 2 / (1 - q))
    )
    kl = p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))
    assert binary_renyi([1.0 + 1e-7], p, q)[0] == pytest.approx(kl, rel=1e-5)
    assert binary_renyi([2.0], 0.1, 0.3)[0] == 0.0  # p <= q: nothing certified
    grid = np.linspace(0.01, p, 30)  # falls as q rises to p, rises with p beyond q
    assert np.all(np.diff([binary_renyi([3.0], p, x)[0] for x in grid]) < 0)
    assert np.all(
        np.diff([binary_renyi([3.0], x, 0.05)[0] for x in np.linspace(0.05, 0.99, 30)]) > 0
    )


def test_notion_bound_of_a_certified_point():
    # The point (type I 0.2, type II G_1(0.2)) lies on the 1-GDP curve: mu = 1 exactly.
    x = 0.2
    y = float(gdp_tradeoff(x, 1.0))
    bound = notion_bound(GDPClaim(0.9), 1 - x, y, 0.95)
    assert bound.lower == pytest.approx(1.0, rel=1e-9) and bound.exceeds_claim
    assert not notion_bound(GDPClaim(1.01), 1 - x, y, 0.95).exceeds_claim
    f_claim = TradeoffClaim.from_function(lambda t: gdp_tradeoff(t, 0.8))  # above G_1
    tab = notion_bound(f_claim, 1 - x, y, 0.95)
    assert tab.parameter == "gdp mu" and tab.exceeds_claim and tab.claimed is None
    z = notion_bound(ZCDPClaim(0.4), 1 - x, y, 0.95)
    # 1-GDP is 0.5-zCDP: what a point on G_1 certifies stays below 0.5 and refutes 0.4 only
    # if it exceeds it
    assert z.parameter == "rho" and z.lower <= 0.5
    assert z.exceeds_claim == (z.lower > 0.4)
