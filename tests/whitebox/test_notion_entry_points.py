"""The notion x entry-point matrix: every entry point audits a claim in the notion it is stated in.

{zCDP, RDP, GDP, f-DP} x {API, TOML spec, ``dpaudit audit FILE.py:CALLABLE``, pytest helper,
suite on 2 Ray workers}: a Gaussian mean that violates its notion claim by a wide, exactly
accounted margin is a violation in every cell; the same mechanism under a correct claim never
is (tests/notions/notion_matrix_support.py). The (epsilon, delta) anchors of the violated
claims are met by the mechanism at their delta or not, but that never decides a cell: the
command line once rebuilt a plain claim from the anchor and passed a violated zCDP claim.
"""

import json
import re
from pathlib import Path

import pytest
from notion_matrix_support import NOTIONS, build, claim_for

import dpaudit
from dpaudit.cli.main import EXIT_FOUND, main
from dpaudit.io.datasets import generate
from dpaudit.testing import DPViolation, assert_dp

SUPPORT = Path(__file__).with_name("notion_matrix_support.py")
CELLS = [(notion, correct) for notion in NOTIONS for correct in (False, True)]
SAMPLES = 2000


def _name(notion: str, correct: bool) -> str:
    return f"{notion.replace('-', '')}_{'correct' if correct else 'violated'}"


def _pair(mechanism):
    return generate("points", mechanism)


def _expect(verdict: str, correct: bool) -> None:
    if correct:
        assert verdict != "violation"
    else:
        assert verdict == "violation"


@pytest.mark.parametrize(("notion", "correct"), CELLS)
def test_api(notion, correct):
    mechanism = build(notion, correct)
    result = dpaudit.audit(mechanism, *_pair(mechanism), samples=SAMPLES, seed=0, progress=False)
    assert result.claim == mechanism.claim  # audited as stated, not as its anchor
    _expect(result.verdict, correct)
    lines = result.summary().splitlines()
    if result.verdict == "violation":  # the decisive reason leads
        why = lines.pop(1)
        assert why.startswith("  why: ")
        if notion == "rdp":  # refuted in its own notion, not through a delta it never exceeds
            assert "epsilon(2) >= " in why and "> delta" not in why, why
    assert lines[1] == f"  claim: {mechanism.claim.describe()}, replace-one"
    parameter = {"zcdp": "rho >= ", "rdp": "epsilon(2) >= ", "gdp": "mu >= "}.get(notion, "")
    assert lines[2].startswith(f"  certified: {parameter}")
    assert lines[3].startswith(f"  anchor: ({mechanism.claim.epsilon:g}, 1e-05)-DP: epsilon(")


@pytest.mark.parametrize(("notion", "correct"), CELLS)
def test_pytest_helper(notion, correct):
    mechanism = build(notion, correct)
    if correct:
        assert_dp(mechanism, *_pair(mechanism), samples=SAMPLES)
    else:
        with pytest.raises(
            DPViolation, match=re.escape(f"fails its claim ({mechanism.claim.describe()}")
        ) as caught:
            assert_dp(mechanism, *_pair(mechanism), samples=SAMPLES)
        head = str(caught.value).splitlines()[0]  # expected against measured, in the notion
        assert head.startswith(f"expected {mechanism.claim.describe()}, got ") and "record" in head


def test_pytest_helper_audits_a_notion_claim_given_as_claim():
    mechanism = build("zcdp", True)  # correct as declared; the claim given instead is violated
    with pytest.raises(DPViolation, match=re.escape("(0.3-GDP, replace-one)")):
        assert_dp(mechanism, *_pair(mechanism), claim=claim_for("gdp", False), samples=SAMPLES)


def _claim_table(claim) -> str:
    if claim.notion == "zcdp":
        return f"zcdp_rho = {claim.rho!r}"
    if claim.notion == "gdp":
        return f"gdp_mu = {claim.mu!r}"
    if claim.notion == "rdp":
        return f"rdp_orders = {list(claim.orders)}\nrdp_epsilons = {list(claim.epsilons)}"
    return (
        f"tradeoff_points = {list(claim.points)}\ntradeoff_values = {list(claim.values)}\n"
        f'tradeoff_name = "{claim.name}"'
    )


def write_specs(folder: Path) -> None:
    """One spec per cell, stating the cell's claim in its notion (f-DP by its table)."""
    for notion, correct in CELLS:
        (folder / f"{_name(notion, correct)}.toml").write_text(
            f'name = "{_name(notion, correct)}"\n'
            f'[mechanism]\npath = "{SUPPORT}:build"\n'
            f'params = {{ notion = "{notion}", correct = {str(correct).lower()} }}\n'
            f"[claim]\n{_claim_table(claim_for(notion, correct))}\n"
            f'[data]\ngenerator = "points"\n[budget]\nsamples = {SAMPLES}\n'
        )


def _verdicts(path: Path) -> dict:
    return {a["name"]: a for a in json.loads(path.read_text())["audits"]}


def _check_records(records: dict, key) -> None:
    for notion, correct in CELLS:
        record = records[key(notion, correct)]
        _expect(record["verdict"], correct)
        assert record["claim"]["notion"] == notion


def test_spec(tmp_path):
    write_specs(tmp_path)
    out = tmp_path / "out.json"
    assert main(["audit", str(tmp_path), "-q", "--json", str(out)]) == EXIT_FOUND
    _check_records(_verdicts(out), _name)


CALLABLES = [f"{SUPPORT}:{_name(n, c)}" for n, c in CELLS]


def test_cli_callable(tmp_path, capsys):
    out = tmp_path / "out.json"
    args = ["audit", *CALLABLES, "--generator", "points", "--samples", str(SAMPLES)]
    assert main([*args, "--json", str(out)]) == EXIT_FOUND
    printed = capsys.readouterr().out
    _check_records(_verdicts(out), lambda n, c: f"{SUPPORT.name}:{_name(n, c)}")
    row = next(
        line for line in printed.splitlines() if line.startswith(f"{SUPPORT.name}:zcdp_violated ")
    )
    assert "0.05-zCDP" in row and "rho >= 0.5; ε ≥" in row  # the notion first, the anchor second


@pytest.mark.slow
def test_suite_on_two_workers(tmp_path):
    pytest.importorskip("ray")
    write_specs(tmp_path)
    out = tmp_path / "out.json"
    args = ["audit", str(tmp_path), *CALLABLES, "--generator", "points"]
    assert main([*args, "--samples", str(SAMPLES), "-q", "--workers", "2", "--json", str(out)]) == 1
    records = _verdicts(out)
    _check_records(records, _name)
    _check_records(records, lambda n, c: f"{SUPPORT.name}:{_name(n, c)}")


@pytest.mark.parametrize(
    ("callable_", "options", "stated"),
    [
        ("zcdp_correct", ["--rho", "0.05"], "0.05-zCDP"),
        ("gdp_correct", ["--mu", "0.3"], "0.3-GDP"),
        ("rdp_correct", ["--renyi", "2,0.1"], "RDP (2, 0.1)"),
    ],
)
def test_cli_notion_options_state_the_audited_claim(tmp_path, capsys, callable_, options, stated):
    out = tmp_path / "out.json"
    args = ["audit", f"{SUPPORT}:{callable_}", "--generator", "points", "--samples", str(SAMPLES)]
    assert main([*args, *options, "--json", str(out)]) == EXIT_FOUND
    printed = capsys.readouterr().out
    declared = build(callable_.split("_")[0].replace("fdp", "f-dp"), True).claim.describe()
    assert f"audited claim: {stated}, replace-one, from {options[0]}; " in printed
    assert f"declares {declared}, replace-one" in printed or f"declared {declared}" in printed
    (record,) = json.loads(out.read_text())["audits"]
    assert record["verdict"] == "violation" and record["claim"]["stated"] == stated
