"""The suite's false-alarm level on the command line: --suite-confidence, --confidence, Holm.

Mutation checks: ``_correct_suite`` skipped in ``audit_targets`` fails
``test_a_violation_at_the_resolution_is_demoted_by_the_suite_correction`` (exit 1, no
suite line); the range check of ``--suite-confidence`` removed fails
``test_out_of_range_levels_are_invalid_input``; the draw-helper check removed from
``_check_error_options`` fails ``test_a_bad_draw_helper_setting_is_invalid_input_before_any_audit``.
"""

import dataclasses
import json

import pytest
from spec_fixtures import WHITE_BOX_SPEC, write_correct_spec

import dpaudit.cli.main
from dpaudit.cli.main import EXIT_FOUND, EXIT_INVALID, EXIT_OK, main


@pytest.mark.parametrize(
    ("option", "value"),
    [("--suite-confidence", "1.5"), ("--suite-confidence", "0"), ("--confidence", "1"),
     ("--confidence", "nan")],
)  # fmt: skip
def test_out_of_range_levels_are_invalid_input(tmp_path, capsys, option, value):
    spec = write_correct_spec(tmp_path)
    reports = tmp_path / "reports"
    assert main(["audit", str(spec), option, value, "--report", str(reports)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert f"{option} must lie strictly between 0 and 1" in err
    assert not reports.exists()


@pytest.mark.parametrize("quiet", [[], ["-q"]])
def test_a_bad_draw_helper_setting_is_invalid_input_before_any_audit(
    tmp_path, capsys, monkeypatch, quiet
):
    # read by a library audit only (or never, for white-box specs): checked up front instead
    spec = write_correct_spec(tmp_path)
    reports = tmp_path / "reports"
    monkeypatch.setenv("DPAUDIT_DRAW_HELPER", "sometimes")
    monkeypatch.setattr(dpaudit.cli.main, "run_audit", lambda item: pytest.fail("audited"))
    assert main(["audit", str(spec), "--report", str(reports), *quiet]) == EXIT_INVALID
    assert "DPAUDIT_DRAW_HELPER must be one of auto, on, off" in capsys.readouterr().err
    assert not reports.exists()


def _flaky_suite(tmp_path, monkeypatch, p_value: float):
    """Two correct audits; the second's result is made a sampling violation with ``p_value``."""
    spec = write_correct_spec(tmp_path)
    flaky = spec.parent / "flaky.toml"
    flaky.write_text(WHITE_BOX_SPEC.format(expected="", scale=1.0))
    real = dpaudit.cli.main.run_audit
    seen = {}

    def run(item):
        result = real(item)
        seen[item.spec.name] = item.spec.confidence
        if item.spec.name == "flaky":
            return dataclasses.replace(result, verdict="violation", p_value=p_value)
        return result

    monkeypatch.setattr(dpaudit.cli.main, "run_audit", run)
    return spec.parent, seen


@pytest.mark.slow  # the default suite stays well under 15 minutes
def test_a_violation_at_the_resolution_is_demoted_by_the_suite_correction(
    tmp_path, capsys, monkeypatch
):
    folder, seen = _flaky_suite(tmp_path, monkeypatch, 0.03)
    out_json = tmp_path / "results.json"
    # Holm over 2 audits at 0.05: the smallest p must be <= 0.025; 0.03 is not kept
    assert main(["audit", str(folder), "--json", str(out_json), "--confidence", "0.97"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "suite: false-alarm level 0.05 over 2 audits (Holm's correction); 1 violation" in out
    assert "inconclusive (borderline p <= 0.03)" in out
    assert seen == {"correct": 0.97, "flaky": 0.97}
    record = next(a for a in json.loads(out_json.read_text())["audits"] if a["name"] == "flaky")
    assert record["verdict"] == "inconclusive"
    assert record["borderline"]["suite"] is True and record["borderline"]["p_value"] == 0.03
    assert record["details"]["diagnostics"]["borderline"]["suite"] is True
    # at a suite level of 0.1 (0.05 per audit) it stands, and the run fails as it should
    (tmp_path / "again").mkdir()
    folder2, _ = _flaky_suite(tmp_path / "again", monkeypatch, 0.03)
    assert main(["audit", str(folder2), "--suite-confidence", "0.9", "-q"]) == EXIT_FOUND
