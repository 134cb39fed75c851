"""The shipped audit suite: every spec is valid and states its verdict; a fast subset gets it."""

import json
import pathlib

import pytest

import dpaudit
from dpaudit.cli.main import main
from dpaudit.io.spec import find_specs, load_spec

AUDITS = pathlib.Path(__file__).resolve().parents[2] / "audits"
# Catalogue entries without a shipped spec, and why.
NOT_SHIPPED: dict[str, str] = {}  # catalogue names without a spec, with the reason
FAST = [
    "catalogue/iclp-qr-mean.toml",
    "catalogue/hrw-kernel-ridge.toml",
    "faulty/iclp-unscaled-sigma.toml",
    "faulty/gaussian-classical-large-epsilon.toml",
]
# Run through `dpaudit run` here: one expected pass and one expected violation. The two ICLP
# specs get their verdicts in the golden records of the default suite (tests/golden FAST,
# through the command line's own spec preparation), so running them here again cost ~15 s.
RUN = ["catalogue/hrw-kernel-ridge.toml", "faulty/gaussian-classical-large-epsilon.toml"]


def test_every_spec_is_valid_and_states_its_verdict():
    specs = [load_spec(p) for p in find_specs(AUDITS)]
    assert all(s.expected is not None for s in specs)
    by_mechanism = {s.mechanism: s for s in specs}
    for name in dpaudit.catalogue():
        assert name in by_mechanism or name in NOT_SHIPPED, f"no audit spec for {name}"
    for spec in specs:
        if spec.kind == "training":  # a training pipeline: its faults are named in the text
            faulty = "FAULT" in spec.description
            assert spec.expected == ("violation" if faulty else "inconclusive"), spec.name
            continue
        if spec.kind == "black-box" and ":" in spec.mechanism:  # a plain sampler file
            assert spec.expected in ("violation", "inconclusive"), spec.name
            continue
        faulty = dpaudit.model.registry.entry(spec.mechanism).faulty
        # faulty mechanisms must be caught; correct ones must never be called violations
        if faulty:
            assert spec.expected in ("violation", "incompatible"), spec.name
        else:
            assert spec.expected in ("pass", "inconclusive"), spec.name


def test_fast_subset_gets_the_expected_verdicts(tmp_path):
    out = tmp_path / "results.json"
    paths = [str(AUDITS / f) for f in RUN]
    for path in paths:
        assert main(["run", path, "--samples", "4000", "--json", str(out)]) == 0, path
        (audit,) = json.loads(out.read_text())["audits"]
        assert audit["as_expected"] is True, (path, audit["verdict"], audit["expected"])


@pytest.mark.parametrize("spec", FAST)
def test_fast_subset_exists(spec):
    assert (AUDITS / spec).is_file()


# One spec of each way a spec names what it audits (catalogue entry, faulty entry, a
# sampler file, a sampler file with a reference model): `check` builds and runs each once.
CHECKED = [
    "catalogue/laplace-mean.toml",
    "faulty/gaussian-pure-claim.toml",
    "blackbox/laplace-mean.toml",
    "blackbox/noisy-max-with-value.toml",
]


def test_dpaudit_check_accepts_one_spec_of_each_kind(capsys):
    # the whole suite (below, slow) costs over a minute; `make audit` runs the same
    # pre-audit checks on every spec before it audits any
    assert main(["check", *(str(AUDITS / f) for f in CHECKED)]) == 0
    assert "4 spec(s) valid (" in capsys.readouterr().out


@pytest.mark.slow
def test_dpaudit_check_accepts_every_shipped_spec(capsys):
    # builds every mechanism, sampler and pair and runs each model or sampler once:
    # the pre-audit checks must not refuse a shipped spec
    assert main(["check", str(AUDITS)]) == 0
    assert " spec(s) valid (" in capsys.readouterr().out
