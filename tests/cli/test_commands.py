"""The commands 'audit' and 'validate': targets, a callable's own claim, -k, -q, --json -,
--junitxml, plain piped output, the closing counts line, help on every option, lazy imports."""

import json
import subprocess
import sys
import types
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from spec_fixtures import SAMPLER, USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

from dpaudit.cli.main import (
    EXIT_FOUND,
    EXIT_INVALID,
    EXIT_OK,
    build_parser,
    closing_line,
    main,
    matches,
)

# A correct (1, 1e-3) Gaussian mean: the former `check --epsilon 1` read --delta as 0 and
# called it a violation with epsilon = inf.
GAUSS = """
import jax.numpy as jnp, numpyro, numpyro.distributions as dist
from dpaudit import Claim, Mechanism
from dpaudit.model.noise import analytic_gaussian_sigma

def build(n=20, epsilon=1.0, delta=1e-3):
    sigma = analytic_gaussian_sigma(1.0 / n, epsilon, delta)
    def model(data):
        numpyro.sample("release", dist.Normal(jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0)), sigma))
    return Mechanism("gauss-mean", model,
                     Claim(epsilon=epsilon, delta=delta, sensitivity=1 / n, sensitivity_norm="l2"),
                     summary=lambda d: jnp.mean(jnp.clip(d[:, 0], 0.0, 1.0)),
                     difference_norm=jnp.abs, params={"n": n})
"""


@pytest.fixture
def suite(tmp_path):
    folder = tmp_path / "audits"
    folder.mkdir()
    (folder / "user.py").write_text(USER)
    (folder / "gauss.py").write_text(GAUSS)
    (folder / "correct.toml").write_text(SPEC.format(expected='expected = "pass"', scale=1.0))
    (folder / "faulty.toml").write_text(SPEC.format(expected='expected = "violation"', scale=0.5))
    return folder


def test_a_callable_is_audited_against_its_own_claim(suite, capsys):
    target = f"{suite / 'gauss.py'}:build"
    base = ["audit", target, "--generator", "points", "--samples", "2000"]
    assert main(base) == EXIT_OK
    out = capsys.readouterr().out
    assert "audited claim: (1, 0.001)-DP, replace-one, as the mechanism declares." in out
    assert out.rstrip().splitlines()[-1].startswith("1 as expected in ")
    assert main([*base, "--epsilon", "1"]) == EXIT_OK  # delta stays the declared 1e-3
    out = capsys.readouterr().out
    assert "(1, 0.001)-DP, replace-one, from --epsilon; the mechanism declares (1, 0.001)" in out
    assert main([*base, "--delta", "0"]) == EXIT_FOUND  # a Gaussian is no pure-epsilon mechanism
    out = capsys.readouterr().out
    assert "(1, 0)-DP, replace-one, from --delta" in out and "1 unexpected (1 unexpected " in out


def test_k_selects_and_json_goes_to_stdout(suite, capsys):
    assert main(["audit", str(suite), "-k", "faulty and not correct", "--json", "-"]) == EXIT_OK
    captured = capsys.readouterr()
    document = json.loads(captured.out)  # stdout holds the JSON document only
    assert [a["name"] for a in document["audits"]] == ["faulty"]
    assert "1 as expected in" in captured.err and "faulty: violation ✓" in captured.err
    assert main(["audit", str(suite), "-k", "nothing-matches"]) == EXIT_INVALID
    assert "selects none of the audits" in capsys.readouterr().err
    assert main(["audit", str(suite), "-k", "faulty and ("]) == EXIT_INVALID
    assert "not a valid expression" in capsys.readouterr().err


def test_quiet_prints_the_closing_line_only(suite, capsys):
    assert main(["audit", str(suite / "faulty.toml"), "-q"]) == EXIT_OK
    captured = capsys.readouterr()
    assert captured.out.strip().startswith("1 as expected in ") and captured.err == ""


def test_piped_output_is_plain_and_untruncated(suite, capsys):
    name = "a-very-long-audit-name-" * 5
    (suite / "faulty.toml").write_text(
        f'name = "{name}"\n' + SPEC.format(expected='expected = "violation"', scale=0.5)
    )
    assert main(["audit", str(suite / "faulty.toml"), str(suite / "correct.toml")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "\x1b[" not in out and "…" not in out  # no colour codes, nothing cut at 80 columns
    row = next(line for line in out.splitlines() if line.startswith(name + " "))
    assert "violation" in row and "✓ violation" in row and len(row) > 120
    assert out.rstrip().splitlines()[-1].startswith("2 as expected in ")


def test_junitxml_has_one_case_per_audit_and_fails_the_unexpected(suite, tmp_path, capsys):
    (suite / "faulty.toml").write_text(SPEC.format(expected='expected = "pass"', scale=0.5))
    path = tmp_path / "ci" / "audits.xml"
    assert main(["audit", str(suite), "--junitxml", str(path)]) == EXIT_FOUND
    suite_xml = ET.parse(path).getroot().find("testsuite")
    cases = {c.get("name"): c for c in suite_xml.findall("testcase")}
    assert sorted(cases) == ["correct", "faulty"]
    assert suite_xml.get("tests") == "2" and suite_xml.get("failures") == "1"
    assert cases["correct"].find("failure") is None
    failure = cases["faulty"].find("failure")
    assert failure.get("type") == "violation" and "expected pass" in failure.get("message")
    out = capsys.readouterr().out
    assert "1 as expected, 1 unexpected (1 false alarm) in " in out
    assert main(["audit", str(suite), "--junitxml", str(tmp_path)]) == EXIT_INVALID


def test_a_missing_path_is_no_such_file(suite, capsys):
    assert main(["audit", "missing.py:build", "--generator", "points"]) == EXIT_INVALID
    assert capsys.readouterr().err.strip() == "dpaudit: missing.py: no such file."
    assert main(["audit", str(suite / "missing.toml")]) == EXIT_INVALID
    assert "missing.toml: no such file or folder." in capsys.readouterr().err
    assert main(["audit", str(suite / "user.py")]) == EXIT_INVALID
    assert "user.py:NAME" in capsys.readouterr().err
    assert main(["audit", str(suite), "--epsilon", "1"]) == EXIT_INVALID
    assert "--epsilon is for a FILE.py:CALLABLE target" in capsys.readouterr().err


def test_validate_takes_several_targets(suite, capsys):
    target = f"{suite / 'gauss.py'}:build"
    args = ["validate", str(suite / "correct.toml"), target, "--generator", "points"]
    assert main(args) == EXIT_OK
    out = capsys.readouterr().out
    assert "gauss.py:build: white-box" in out and "as the mechanism declares" in out
    assert "2 spec(s) valid (2 white-box, 0 black-box)." in out


def test_black_box_options_on_the_command_line(tmp_path, capsys):
    (tmp_path / "sampler.py").write_text(SAMPLER)
    d = np.zeros((20, 1))
    d_prime = d.copy()
    d_prime[0] = 1.0
    np.save(tmp_path / "d.npy", d)
    np.save(tmp_path / "d2.npy", d_prime)
    target = f"{tmp_path / 'sampler.py'}:laplace_mean"
    data = ["--data", str(tmp_path / "d.npy"), str(tmp_path / "d2.npy")]
    args = ["audit", target, "--blackbox", "--epsilon", "1", *data, "--samples", "20000",
            "--select-samples", "4000", "--method", "logistic", "--features", "values",
            "--objective", "epsilon", "--param", "scale_factor=0.5"]  # fmt: skip
    assert main(args) == EXIT_FOUND  # half the noise: epsilon 2, certified above 1
    out = capsys.readouterr().out
    assert "from --epsilon (a plain sampler declares none)" in out and "violation" in out
    assert main([*args[:-1], "colour=1"]) == EXIT_INVALID
    assert ": --param: " in capsys.readouterr().err
    assert main([*args[:3], *data]) == EXIT_INVALID  # no claim anywhere
    assert "declares no claim; give --epsilon" in capsys.readouterr().err


def test_every_option_has_help():
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in [("dpaudit", parser), *subparsers.items()]:
        for action in sub._actions:
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"


def test_help_and_version_do_not_import_jax():
    code = (
        "import sys, dpaudit.cli.main\n"
        "try:\n    dpaudit.cli.main.main(['--version'])\nexcept SystemExit:\n    pass\n"
        "dpaudit.cli.main.build_parser().format_help()\nprint('jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False" and out.stdout.startswith("dpaudit ")


def _outcome(verdict, expected):
    result = types.SimpleNamespace(verdict=verdict)
    return types.SimpleNamespace(result=result, expected=expected)


def test_closing_line_counts_like_pytest():
    outcomes = [_outcome("pass", "pass")] * 45 + [
        _outcome("violation", "violation"),
        _outcome("inconclusive", None),
        _outcome("inconclusive", "violation"),
        _outcome("violation", "pass"),
    ]
    line = closing_line(outcomes, 192.4)
    assert line == "47 as expected, 2 unexpected (1 missed violation, 1 false alarm) in 3m12s"
    assert (
        closing_line(outcomes[-2:-1], 1.25)
        == "0 as expected, 1 unexpected (1 missed violation) in 1.2s"
    )
    assert closing_line([_outcome("inconclusive", None)], 1, strict=True).startswith(
        "0 as expected, 1 unexpected (1 inconclusive)"
    )


@pytest.mark.parametrize(
    ("expression", "selected"),
    [("faulty", True), ("FAULTY", True), ("not faulty", False), ("ecdf or laplace", True),
     ("faulty and (ecdf or tree)", False), ("catalogue", False)],
)  # fmt: skip
def test_k_expressions(expression, selected):
    assert matches(expression, ["laplace-half-scale", "audits/faulty/laplace.toml"]) is selected


# A Laplace mean calibrated to pure epsilon = 4.7 (so about 11-zCDP) that declares 0.5-zCDP:
# the command line used to rebuild a plain (epsilon, delta) claim from the zCDP claim's anchor
# (4.73, 1e-5), which this mechanism meets, and print "pass" where the API says violation.
LAPLACE_ZCDP = """
import jax.numpy as jnp, numpyro, numpyro.distributions as dist
from dpaudit import Mechanism
from dpaudit.model.claims import ZCDPClaim

def build(n=10, rho=0.5):
    scale = (1.0 / n) / 4.7
    def model(data):
        m = jnp.mean(jnp.clip(jnp.asarray(data, dtype=jnp.float64)[:, 0], 0.0, 1.0))
        numpyro.sample("release", dist.Laplace(m, scale).expand([1]).to_event(1))
    return Mechanism("laplace-zcdp", model,
                     ZCDPClaim(rho=rho, sensitivity=1.0 / n, sensitivity_norm="l1"))
"""


def test_a_callable_keeps_its_notion_claim(tmp_path, capsys):
    (tmp_path / "lap.py").write_text(LAPLACE_ZCDP)
    base = ["audit", f"{tmp_path / 'lap.py'}:build", "--generator", "points", "--samples", "3000"]
    assert main([*base, "--data-param", "n=10"]) == EXIT_FOUND
    out = capsys.readouterr().out
    assert "audited claim: 0.5-zCDP, replace-one, as the mechanism declares." in out
    row = next(line for line in out.splitlines() if line.startswith("lap.py:build "))
    assert "0.5-zCDP" in row and "violation" in row
    # the same mechanism at the rho its pure epsilon implies (eps^2 / 2 = 11.05) is no violation
    assert main([*base, "--data-param", "n=10", "--param", "rho=11.1"]) == EXIT_OK
    capsys.readouterr()
    # an (epsilon, delta) override replaces the notion claim and says so
    assert main([*base, "--data-param", "n=10", "--epsilon", "4.8"]) == EXIT_OK
    out = capsys.readouterr().out
    assert (
        "audited claim: (4.8, 1e-05)-DP, replace-one, from --epsilon; it replaces the "
        "mechanism's declared 0.5-zCDP, replace-one." in out
    )
