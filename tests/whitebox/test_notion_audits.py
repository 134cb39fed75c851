"""White-box audits of notion claims: the acceptance cases, specs and the CLI record."""

import html
import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pytest

import dpaudit
from dpaudit.accounting.conversions import gdp_tradeoff
from dpaudit.cli.main import main
from dpaudit.io.schemas import schema
from dpaudit.io.spec import SpecError, load_spec
from dpaudit.model.claims import GDPClaim, RDPClaim, TradeoffClaim, ZCDPClaim

ROOT = Path(__file__).resolve().parents[2]


def _gaussian_pair(claim):
    """The Gaussian mean with sigma for mu = 1 (n = 10, records in [0, 1]), claiming ``claim``."""
    mech = dpaudit.build("gaussian-mean-gdp", mu=1.0, n=10)
    mech = dpaudit.Mechanism(
        mech.name, mech.model, claim, mech.summary, mech.difference_norm, mech.params
    )
    d = np.zeros(10)
    d_prime = d.copy()
    d_prime[0] = 1.0
    return mech, d, d_prime


@pytest.mark.parametrize(
    ("claim", "expected"),
    [
        (GDPClaim(1.0), "pass"),
        (GDPClaim(0.9), "violation"),
        (ZCDPClaim(0.5), "pass"),
        (ZCDPClaim(0.49), "violation"),
        (RDPClaim([2.0, 8.0], [1.0, 4.0]), "pass"),
        (RDPClaim([2.0, 8.0], [1.0, 3.99]), "violation"),
        (TradeoffClaim.from_function(lambda x: gdp_tradeoff(x, 0.9)), "violation"),
        (TradeoffClaim.from_function(lambda x: gdp_tradeoff(x, 0.999)), "violation"),
        # A tabulated f with f(0) = 1 is only known up to its chord near 0, where every
        # Gaussian trade-off (infinite slope at 0) dips below the chord: never a pass.
        (TradeoffClaim.from_function(lambda x: gdp_tradeoff(x, 1.01)), "inconclusive"),
    ],
)
def test_gaussian_mu_one_acceptance(claim, expected):
    mech, d, d_prime = _gaussian_pair(claim)
    result = dpaudit.audit(mech, d, d_prime, samples=4000)
    assert result.verdict == expected
    notion = result.diagnostics["notion"]
    assert result.claim is claim and notion["notion"] == claim.notion
    if isinstance(claim, GDPClaim):
        assert notion["tightest"] == {"lower": 1.0, "upper": 1.0}
    if isinstance(claim, ZCDPClaim):
        assert notion["tightest"]["upper"] == pytest.approx(0.5, rel=1e-12)
    json.dumps(result.to_dict())  # the record stays JSON-able


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_gdp_violation_certified_by_monte_carlo_alone(seed):
    # Budget: 20000 releases per direction; exact accounting off, so only the simultaneous
    # Monte Carlo bounds of the hockey-stick curve decide (seeds not used for tuning).
    mech, d, d_prime = _gaussian_pair(GDPClaim(0.9))
    result = dpaudit.audit(mech, d, d_prime, samples=20_000, seed=seed, exact=False)
    assert result.verdict == "violation"
    certified = result.diagnostics["notion"]["certified"]
    assert 0.9 < certified <= 1.0  # mu >= certified at 95 %, and never above the truth


@pytest.mark.parametrize("seed", [21, 22])
def test_true_gdp_claim_is_not_refuted_by_monte_carlo(seed):
    mech, d, d_prime = _gaussian_pair(GDPClaim(1.0))
    result = dpaudit.audit(mech, d, d_prime, samples=20_000, seed=seed, exact=False)
    assert result.verdict == "inconclusive"
    assert result.diagnostics["notion"]["certified"] <= 1.0


def test_laplace_zcdp_claim_at_its_kl_divergence_is_not_passed_on_the_grid():
    # One Laplace pair (a = 1) has sup D_alpha / alpha = KL = e^-1, approached as alpha -> 1
    # only: the conservative bracket's upper end lies just above it, so a claim at exactly
    # e^-1 stays inconclusive (a pass read off the bracket's lower end would be unsound).
    mech = dpaudit.build("laplace-mean", epsilon=1.0, n=10, dim=1)
    d = np.zeros((10, 1))
    d_prime = d.copy()
    d_prime[0] = 1.0
    m = dpaudit.Mechanism(mech.name, mech.model, ZCDPClaim(math.exp(-1.0)), mech.summary)
    result = dpaudit.audit(m, d, d_prime, samples=2000)
    bracket = result.diagnostics["notion"]["tightest"]
    assert bracket["lower"] <= math.exp(-1.0) < bracket["upper"]
    assert result.verdict == "inconclusive"


@pytest.mark.parametrize("seed", [31, 32])
def test_zcdp_violation_certified_by_monte_carlo_renyi_alone(seed):
    # Exact accounting off: only the certified Monte Carlo Renyi lower bounds (kept losses,
    # Bonferroni over 13 orders and both directions) can refute the claim. True rho = 0.5.
    mech, d, d_prime = _gaussian_pair(ZCDPClaim(0.35))
    result = dpaudit.audit(mech, d, d_prime, samples=20_000, seed=seed, exact=False)
    assert result.verdict == "violation"
    assert 0.35 < result.diagnostics["notion"]["certified"] <= 0.5


def test_monte_carlo_never_passes_a_notion_claim():
    mech, d, d_prime = _gaussian_pair(ZCDPClaim(0.5))
    result = dpaudit.audit(mech, d, d_prime, samples=4000, exact=False)
    assert result.verdict == "inconclusive"
    assert result.diagnostics["notion"]["certified"] <= 0.5


def test_laplace_tradeoff_pass_and_violation():
    mech = dpaudit.build("laplace-mean", epsilon=1.0, n=10, dim=1)
    d = np.zeros((10, 1))
    d_prime = d.copy()
    d_prime[0] = 1.0
    # A pure e-DP pair has trade-off >= f_e = max(0, 1 - e^e x, e^-e (1 - x)) (Kairouz et
    # al.); Laplace(1) touches f_1 (a tight claim stays inconclusive on the grid), so
    # claim f_1.05.
    k = math.exp(1.05)
    fdp = TradeoffClaim.from_function(
        lambda x: np.maximum.reduce([0 * x, 1 - k * x, (1 - x) / k]), name="f_1,0"
    )
    results = {}
    for claim in (fdp, GDPClaim(1.2), GDPClaim(1.0)):
        m = dpaudit.Mechanism(mech.name, mech.model, claim, mech.summary, mech.difference_norm)
        results[claim.describe()] = dpaudit.audit(m, d, d_prime, samples=4000)
    assert results["f_1,0-DP"].verdict == "pass"
    assert results["1.2-GDP"].verdict == "pass"
    assert results["1-GDP"].verdict == "violation"  # Laplace(1) is about 1.03-GDP
    bracket = results["1-GDP"].diagnostics["notion"]["tightest"]
    assert 1.0 < bracket["lower"] <= bracket["upper"] < 1.05


SPECS = {
    "audits/catalogue/gaussian-mean-gdp.toml": "pass",
    "audits/catalogue/gaussian-mean-zcdp.toml": "pass",
    "audits/catalogue/laplace-mean-rdp.toml": "pass",
    "audits/faulty/gaussian-gdp-linf-sensitivity.toml": "violation",
    "audits/faulty/gaussian-zcdp-unsquared.toml": "violation",
    "audits/faulty/laplace-histogram-rdp-add-remove.toml": "violation",
}


@pytest.mark.parametrize("spec", sorted(SPECS))
def test_notion_specs_reach_their_expected_verdict(spec, tmp_path, capsys):
    out = tmp_path / "r.json"
    loaded = load_spec(ROOT / spec)
    assert loaded.expected == SPECS[spec]
    assert main(["run", str(ROOT / spec), "--json", str(out), "--report", str(tmp_path)]) == 0
    document = json.loads(out.read_text())
    validator = jsonschema.Draft202012Validator(schema("results"))
    assert list(validator.iter_errors(document)) == []
    record = document["audits"][0]
    assert record["verdict"] == SPECS[spec]
    assert record["claim"]["notion"] in ("gdp", "zcdp", "rdp")
    notion = record["details"]["diagnostics"]["notion"]
    assert "certified" in notion and notion["tightest"] and notion["parameter"]
    # the record's own summary: the claim's notion, the tightest parameter, the certified one
    summary = record["notion"]
    assert summary["notion"] == record["claim"]["notion"]
    assert summary["tightest"] == notion["tightest"] and summary["lower"] == notion["certified"]
    assert "tightest " in (tmp_path / "index.html").read_text()
    # The claim users stated is what the table and the report show, not its (eps, delta) anchor.
    stated = loaded.claim.describe()
    assert record["claim"]["stated"] == stated
    captured = capsys.readouterr()
    table = captured.out + captured.err  # "run" is the legacy spelling: table on stderr
    assert stated in table and f"({loaded.claim.epsilon:g}, " not in table
    page = (tmp_path / "index.html").read_text()
    assert f"<td>{html.escape(stated)}</td>" in page
    assert f"<td>{html.escape(stated)} (as (epsilon, delta): " in page


@pytest.mark.parametrize(
    ("claim_table", "message"),
    [
        ("epsilon = 1.0\nzcdp_rho = 0.5", "mixes notions"),
        ("zcdp_rho = -0.5", "rho must be a finite number > 0"),
        ("gdp_mu = 0", "mu must be a finite number > 0"),
        ("rdp_orders = [1.0]\nrdp_epsilons = [1.0]", "orders must be > 1"),
        ('gdp_mu = "one"', "must be a number"),
    ],
)
def test_bad_notion_specs_are_one_line_errors(tmp_path, claim_table, message):
    spec = tmp_path / "s.toml"
    spec.write_text(
        f'[mechanism]\nname = "gaussian-mean-gdp"\n\n[claim]\n{claim_table}\n\n'
        '[data]\ngenerator = "points"\n'
    )
    with pytest.raises(SpecError, match=message) as err:
        load_spec(spec)
    assert "\n" not in str(err.value)
