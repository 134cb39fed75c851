"""Passes state their scope: the pair's summary difference against the declared sensitivity.

The README's buggy mechanism (noise halved: true epsilon 2 against the claim 1) audited on
a pair that moves one record by 0.05 passes: that pair uses 5 % of the sensitivity the
claim declares. The pass carries a weak-pair warning (summary(), CLI table, JSON, JUnit,
HTML report), and ``dpaudit audit --pairs worst`` audits the neighbour whose summary moves
most instead, which turns the pass into the violation it is.
"""

import json

import numpy as np
import pytest

import dpaudit
from dpaudit.cli.main import EXIT_FOUND, EXIT_INVALID, EXIT_OK, main
from dpaudit.whitebox.scope import WEAK_PAIR_FRACTION, pair_scope

README_MECHANISM = """
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

import dpaudit


def build(n=100, epsilon=1.0, scale_factor=1.0, declare_sensitivity=True):
    def model(data):
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0))
        numpyro.sample("release", dist.Laplace(mean, scale_factor / (n * epsilon)))

    sensitivity = {"sensitivity": 1 / n, "sensitivity_norm": "l1"} if declare_sensitivity else {}
    return dpaudit.Mechanism(
        name="noisy-mean",
        model=model,
        claim=dpaudit.Claim(epsilon=epsilon, **sensitivity),
        summary=lambda data: jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0)),
        difference_norm=jnp.abs,
        params={"n": n},
    )
"""
SAMPLES = "4000"


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "first_audit.py").write_text(README_MECHANISM)
    data = np.zeros((100, 1))
    data[0] = 0.3
    moved = data.copy()
    moved[0] = 0.35  # one record moved by 0.05: 5 % of the sensitivity 1 / n
    np.save(tmp_path / "D.npy", data)
    np.save(tmp_path / "D_weak.npy", moved)
    return tmp_path


def _build(folder, **params):
    namespace = {}
    exec((folder / "first_audit.py").read_text(), namespace)
    return namespace["build"](**params)


def _buggy(folder):
    return _build(folder, scale_factor=0.5)


def test_a_weak_pair_pass_carries_its_warning(folder):
    mechanism = _buggy(folder)
    data, weak = np.load(folder / "D.npy"), np.load(folder / "D_weak.npy")
    result = dpaudit.audit(mechanism, data, weak, samples=4000, seed=0, progress=False)
    assert result.verdict == "pass"  # true on this pair: its epsilon is 0.1
    scope = result.diagnostics["pair"]
    assert scope["fraction"] == pytest.approx(0.05) and scope["weak"] is True
    assert any(
        n.startswith("weak pair: this pass holds for the audited pair only") for n in result.notes
    )
    text = result.summary()
    assert "  pair: summary difference 0.0005 = 5% of the declared sensitivity 0.01 (l1)" in text
    assert "  warning: weak pair: this pass holds for this pair only" in text


def test_a_pair_at_the_sensitivity_is_not_weak(folder):
    mechanism = _buggy(folder)
    data = np.load(folder / "D.npy")
    at_half = data.copy()
    at_half[0] = 0.8  # exactly half the sensitivity: not below it
    scope = pair_scope(mechanism, data, at_half)
    assert scope["fraction"] == pytest.approx(WEAK_PAIR_FRACTION)
    result = dpaudit.audit(_build(folder), data, at_half, samples=4000, seed=0, progress=False)
    assert result.verdict == "pass" and result.diagnostics["pair"]["weak"] is False
    assert "warning" not in result.summary()


def _cli(folder, *options):
    target = f"{folder / 'first_audit.py'}:build"
    data = ["--data", str(folder / "D.npy"), str(folder / "D_weak.npy")]
    return ["audit", target, "--param", "scale_factor=0.5", *data, "--samples", SAMPLES, *options]


def test_cli_weak_pair_warning_then_pairs_worst_finds_the_violation(folder, capsys):
    out, report, junit = folder / "out.json", folder / "report", folder / "junit.xml"
    files = ["--json", str(out), "--report", str(report), "--junitxml", str(junit)]
    assert main(_cli(folder, *files)) == EXIT_OK  # the weak pair passes ...
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith("first_audit.py:build "))
    assert "pass (weak pair: 5% of Δ)" in row
    (record,) = json.loads(out.read_text())["audits"]
    assert record["verdict"] == "pass" and record["details"]["diagnostics"]["pair"]["weak"]
    assert any(n.startswith("weak pair:") for n in record["notes"])
    assert "verdict pass (weak pair)" in junit.read_text()
    html = (report / "index.html").read_text()
    assert "<b>weak pair</b>: this pass holds for this pair only" in html
    # ... and the worst neighbour of the same first dataset is the violation it hides
    assert main(_cli(folder, "--pairs", "worst", "--domain", "0", "1")) == EXIT_FOUND
    printed = capsys.readouterr().out
    # of the corners (record 0 := 0, := 1, or 0 against 1) the pair 0 against 1 moves most
    assert "--pairs worst chose 'record 0: low vs high'" in printed
    assert "summary difference 0.01 = 100% of the declared sensitivity 0.01 (l1)" in printed
    row = next(line for line in printed.splitlines() if line.startswith("first_audit.py:build "))
    assert "violation" in row and "weak" not in row


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        (
            ["--param", "declare_sensitivity=false", "--pairs", "worst", "--domain", "0", "1"],
            "--pairs worst needs the sensitivity the mechanism declares",
        ),
        (["--pairs", "worst"], "--pairs worst needs the records' data bound: give --domain LO HI"),
        (["--pairs", "worst", "--blackbox"], "--pairs worst is for a white-box mechanism"),
    ],
)
def test_pairs_worst_bad_input(folder, capsys, options, sentence):
    out = folder / "out.json"
    assert main([*_cli(folder, *options), "--json", str(out)]) == EXIT_INVALID
    err = capsys.readouterr().err.strip()
    assert sentence in err and len(err.splitlines()) == 1
    assert not out.exists()
