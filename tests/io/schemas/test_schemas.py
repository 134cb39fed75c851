"""The shipped JSON Schemas accept every shipped spec and a real results file, refuse broken
ones, and list the same choices as the code."""

import json
import pathlib
import tomllib

import jsonschema
import pytest
from spec_fixtures import BLACK_BOX_SPEC, SAMPLER, USER, WHITE_BOX_SPEC

from dpaudit.blackbox import METHODS, OBJECTIVES
from dpaudit.cli.main import main
from dpaudit.io.datasets import generators
from dpaudit.io.schemas import schema
from dpaudit.io.spec import CLASSIFIER_OPTIONS, FEATURES, SECTIONS, TOP_LEVEL, find_specs
from dpaudit.model.adjacency import ADJACENCIES
from dpaudit.model.audit_record import VERDICTS

AUDITS = pathlib.Path(__file__).resolve().parents[3] / "audits"
SPEC = schema("spec")
RESULTS = schema("results")


def _errors(document, against):
    validator = jsonschema.Draft202012Validator(against)
    return [e.message for e in validator.iter_errors(document)]


def test_the_schemas_are_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SPEC)
    jsonschema.Draft202012Validator.check_schema(RESULTS)
    with pytest.raises(ValueError, match="unknown schema"):
        schema("report")


def test_every_shipped_spec_matches_the_schema():
    specs = find_specs(AUDITS)
    assert len(specs) > 40
    for path in specs:
        assert _errors(tomllib.loads(path.read_text()), SPEC) == [], path


@pytest.mark.parametrize(
    ("table", "field", "value"),
    [
        ("claim", "epsilon", -1.0),
        ("claim", "colour", 1),
        ("data", "generator", "no-such-generator"),
        ("blackbox", "method", "svm"),
        ("budget", "samples", 0),
    ],
)
def test_a_broken_spec_fails_the_schema(table, field, value):
    document = tomllib.loads((AUDITS / "blackbox" / "laplace-mean.toml").read_text())
    document.setdefault(table, {})[field] = value
    assert _errors(document, SPEC)


def test_the_spec_schema_lists_what_the_loader_accepts():
    props = SPEC["properties"]
    assert set(props) == set(TOP_LEVEL)
    for table, fields in SECTIONS.items():
        assert set(props[table]["properties"]) == set(fields), table
    bb = props["blackbox"]["properties"]
    assert bb["method"]["enum"] == list(METHODS) and bb["objective"]["enum"] == list(OBJECTIVES)
    assert bb["features"]["enum"] == list(FEATURES)
    assert set(bb["classifier_options"]["properties"]) == set(CLASSIFIER_OPTIONS)
    assert props["claim"]["properties"]["adjacency"]["enum"] == list(ADJACENCIES)
    assert props["data"]["properties"]["generator"]["enum"] == generators()
    assert props["expected"]["enum"] == list(VERDICTS)


def test_a_real_results_file_matches_the_schema(tmp_path):
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "sampler.py").write_text(SAMPLER)
    spec = WHITE_BOX_SPEC.format(expected='expected = "violation"', scale=0.5)
    (tmp_path / "white.toml").write_text(spec)
    black = BLACK_BOX_SPEC.format(expected="", scale=1.0).replace(
        "samples = 20000", "samples = 4000"
    )
    (tmp_path / "black.toml").write_text(black)
    out = tmp_path / "results.json"
    assert main(["audit", str(tmp_path), "--json", str(out), "-q"]) == 0
    document = json.loads(out.read_text())
    assert {a["kind"] for a in document["audits"]} == {"white-box", "black-box"}
    assert _errors(document, RESULTS) == []
    broken = json.loads(out.read_text())
    broken["audits"][0]["verdict"] = "fine"
    broken["audits"][1]["epsilon_lower"] = "NaN"  # NaN is written as null
    errors = " ".join(_errors(broken, RESULTS))
    assert "'fine' is not one of" in errors and "'NaN' is not valid" in errors
