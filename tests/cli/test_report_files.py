"""--report and --json: checked before any audit, never replacing what dpaudit did not write,
published atomically (the old report or the new one, never neither)."""

import json
import os

import pytest
from spec_fixtures import write_correct_spec

import dpaudit.cli.main
from dpaudit.cli.main import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, main
from dpaudit.io.report import REPORT_MARKER


@pytest.fixture
def spec(tmp_path):
    return write_correct_spec(tmp_path)


@pytest.fixture
def no_audit(monkeypatch):
    """Fail the test if an audit starts: the output paths must be refused before."""

    def must_not_run(item):
        raise AssertionError("an audit ran before the output path was refused")

    monkeypatch.setattr(dpaudit.cli.main, "run_audit", must_not_run)


def _run(spec, *options, seed=0):
    return main(["run", str(spec), "--samples", "300", "--seed", str(seed), *options])


def _refused(capsys, text):
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("dpaudit: --") and text in err, err


def test_report_over_a_user_file_is_refused(spec, tmp_path, capsys, no_audit):
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes")
    assert _run(spec, "--report", str(mine)) == EXIT_INVALID
    _refused(capsys, "is not a folder")
    assert mine.read_text() == "my notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audits", "notes.txt"]


def test_report_over_a_user_folder_is_refused(spec, tmp_path, capsys, no_audit):
    mine = tmp_path / "photos"
    mine.mkdir()
    (mine / "cat.jpg").write_text("meow")
    assert _run(spec, "--report", str(mine)) == EXIT_INVALID
    _refused(capsys, "not a previous dpaudit report")
    assert [p.name for p in mine.iterdir()] == ["cat.jpg"]


@pytest.mark.parametrize(
    ("option", "path", "text"),
    [
        ("--report", "file/reports", "which is a file"),
        ("--json", "file/r.json", "which is a file"),
        ("--json", "folder", "is a folder"),
    ],
)
def test_unusable_output_paths_are_exit_2_before_any_audit(
    spec, tmp_path, capsys, no_audit, option, path, text
):
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    assert _run(spec, option, str(tmp_path / path)) == EXIT_INVALID
    _refused(capsys, text)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_json_folder_is_exit_2(spec, tmp_path, capsys, no_audit):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert _run(spec, "--json", str(locked / "r.json")) == EXIT_INVALID
    _refused(capsys, "permission denied")


def test_a_report_carries_the_marker_and_replaces_only_reports(spec, tmp_path):
    reports = tmp_path / "reports"
    reports.mkdir()  # an empty folder may be used
    assert _run(spec, "--report", str(reports)) == EXIT_OK
    assert sorted(p.name for p in reports.iterdir()) == [
        REPORT_MARKER,
        "index.html",
        "results.json",
    ]
    assert _run(spec, "--report", str(reports), seed=1) == EXIT_OK
    assert json.loads((reports / "results.json").read_text())["audits"][0]["seed"] == 1
    (reports / REPORT_MARKER).unlink()  # a report written before the marker existed
    assert _run(spec, "--report", str(reports), seed=2) == EXIT_OK
    assert json.loads((reports / "results.json").read_text())["audits"][0]["seed"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audits", "reports"]


@pytest.mark.parametrize("failure", [OSError(5, "I/O error"), KeyboardInterrupt()])
# the calls: results.json into the staging folder (os.replace), the old report aside,
# the new one into place (the step whose interruption would leave neither)
@pytest.mark.parametrize("failing_call", [1, 2, 3])
def test_an_interrupted_swap_leaves_the_old_report(
    spec, tmp_path, capsys, monkeypatch, failure, failing_call
):
    reports = tmp_path / "reports"
    assert _run(spec, "--report", str(reports)) == EXIT_OK
    old = {p.name: p.read_text() for p in reports.iterdir()}
    calls, real_rename = [], os.rename

    def rename_failing_once(source, target):
        calls.append((source, target))
        if len(calls) == failing_call:
            raise failure
        real_rename(source, target)

    monkeypatch.setattr(os, "rename", rename_failing_once)
    monkeypatch.setattr(os, "replace", rename_failing_once)
    expected = EXIT_INTERRUPTED if isinstance(failure, KeyboardInterrupt) else EXIT_ERROR
    assert _run(spec, "--report", str(reports), seed=1) == expected
    assert {p.name: p.read_text() for p in reports.iterdir()} == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audits", "reports"]
    assert len(calls) >= failing_call


def test_a_failed_first_publication_leaves_nothing(spec, tmp_path, capsys, monkeypatch):
    def fails(source, target):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(os, "rename", fails)
    assert _run(spec, "--report", str(tmp_path / "reports")) == EXIT_ERROR
    assert [p.name for p in tmp_path.iterdir()] == ["audits"]
