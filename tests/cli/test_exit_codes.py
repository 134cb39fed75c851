"""Exit codes 0-3: crashes, interrupts and a user's sys.exit are exit 3 with one sentence on stderr.

Exit 1 means "an unexpected verdict"; a crash must never read as one, and a
user's ``sys.exit(0)`` must never read as "all audits passed".
"""

import pytest
from spec_fixtures import USER, write_correct_spec

import dpaudit.cli.main
import dpaudit.io.report
import dpaudit.runtime
from dpaudit.cli.main import (
    EXIT_ERROR,
    EXIT_FOUND,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    main,
)
from dpaudit.core.errors import WorkerDied


@pytest.fixture
def spec(tmp_path):
    return write_correct_spec(tmp_path)


def _one_sentence(capsys) -> str:
    """The error line: the last on stderr (after any progress lines), with no traceback."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err, err
    *progress, line = err.splitlines()
    assert line.startswith("dpaudit: ") and line.endswith("."), err
    assert all("Error" not in earlier for earlier in progress), err
    return line


def test_the_codes_are_0_1_2_3_and_documented(capsys):
    assert (EXIT_OK, EXIT_FOUND, EXIT_INVALID, EXIT_ERROR) == (0, 1, 2, 3)
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for text in ("0 every audit finished", "1 an unexpected verdict", "2 invalid input", "3 an"):
        assert text in help_text
    assert "**3**" in dpaudit.cli.main.__doc__


@pytest.mark.parametrize(
    "where",
    [
        "import sys\nsys.exit(0)\n",  # at import
        "\ndef build(**kw):\n    import sys\n    sys.exit(0)\n",  # while building
    ],
)
def test_a_user_sys_exit_is_exit_3_never_0(spec, tmp_path, capsys, where):
    user = spec.parent / "user.py"
    user.write_text(user.read_text() + where if "def build" in where else where + USER)
    reports = tmp_path / "reports"
    assert main(["run", str(spec), "--report", str(reports)]) == EXIT_ERROR
    assert "sys.exit(0)" in _one_sentence(capsys)
    assert not reports.exists()


def test_a_user_sys_exit_while_auditing_is_exit_3(spec, capsys, monkeypatch):
    def exits(item):
        raise SystemExit(0)

    monkeypatch.setattr(dpaudit.cli.main, "run_audit", exits)
    assert main(["run", str(spec)]) == EXIT_ERROR
    assert "sys.exit(0)" in _one_sentence(capsys)


def test_a_dead_worker_is_exit_3_with_its_own_sentence_not_an_internal_error(
    spec, capsys, monkeypatch
):
    class DyingSuite:  # a local suite whose worker process was killed mid-run
        def __init__(self, *args):
            pass

        def wait(self, on_result):
            raise WorkerDied("x.toml: the worker process auditing it died (exit code -9).")

    monkeypatch.setattr(dpaudit.runtime, "LocalSuite", DyingSuite)
    assert main(["audit", str(spec), "--workers", "2"]) == EXIT_ERROR
    line = _one_sentence(capsys)
    assert "the worker process auditing it died" in line and "internal error" not in line


@pytest.mark.parametrize("error", ["RuntimeError('boom')", "KeyError('boom')"])
def test_a_crashing_builder_is_exit_3_with_the_traceback_only_under_verbose(spec, capsys, error):
    user = spec.parent / "user.py"
    user.write_text(user.read_text() + f"\ndef build(**kw):\n    raise {error}\n")
    assert main(["run", str(spec)]) == EXIT_ERROR
    err = _one_sentence(capsys)
    assert "correct.toml" in err and "boom" in err and error.partition("(")[0] in err
    assert main(["run", str(spec), "-v"]) == EXIT_ERROR
    assert "Traceback" in capsys.readouterr().err
    assert main(["--verbose", "run", str(spec)]) == EXIT_ERROR
    assert "Traceback" in capsys.readouterr().err


def test_an_interrupted_run_is_exit_130_and_publishes_nothing(spec, tmp_path, capsys, monkeypatch):
    def interrupted(item):
        raise KeyboardInterrupt

    monkeypatch.setattr(dpaudit.cli.main, "run_audit", interrupted)
    reports, results = tmp_path / "reports", tmp_path / "r.json"
    code = main(["run", str(spec), "--report", str(reports), "--json", str(results)])
    assert code == EXIT_INTERRUPTED == 130
    assert "interrupted" in _one_sentence(capsys)
    assert not reports.exists() and not results.exists()


def test_an_audit_crash_is_exit_3(spec, capsys, monkeypatch):
    def crashes(item):
        raise RuntimeError("XLA fell over")

    monkeypatch.setattr(dpaudit.cli.main, "run_audit", crashes)
    assert main(["run", str(spec)]) == EXIT_ERROR
    assert "XLA fell over" in _one_sentence(capsys)


def test_a_report_that_cannot_be_drawn_is_exit_3(spec, tmp_path, capsys, monkeypatch):
    def raises(outcome):
        raise RuntimeError("model raised while drawn")

    monkeypatch.setattr(dpaudit.io.report, "result_record", raises)
    reports = tmp_path / "reports"
    assert main(["run", str(spec), "--samples", "500", "--report", str(reports)]) == EXIT_ERROR
    assert "drawing the report failed" in _one_sentence(capsys)
    assert not reports.exists() and [p.name for p in tmp_path.iterdir()] == ["audits"]


def test_a_full_disk_is_exit_3_and_leaves_the_old_report(spec, tmp_path, capsys, monkeypatch):
    reports = tmp_path / "reports"
    assert main(["run", str(spec), "--samples", "500", "--report", str(reports)]) == EXIT_OK
    before = (reports / "results.json").read_text()
    capsys.readouterr()

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device", "index.html")

    monkeypatch.setattr(dpaudit.io.report.Path, "write_text", full)
    assert main(["run", str(spec), "--samples", "500", "--report", str(reports)]) == EXIT_ERROR
    assert "disk is full" in _one_sentence(capsys)
    assert (reports / "results.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["audits", "reports"]


def test_check_of_a_user_file_maps_crashes_and_seeds(spec, capsys):
    user = spec.parent / "user.py"
    target = f"{user}:build"
    base = ["check", target, "--epsilon", "1", "--generator", "points", "--samples", "300"]
    assert main([*base, "--seed", "-1"]) == EXIT_INVALID
    assert "--seed" in _one_sentence(capsys)
    user.write_text(user.read_text() + "\ndef build(**kw):\n    raise RuntimeError('boom')\n")
    assert main(base) == EXIT_ERROR
    assert "building the mechanism crashed" in _one_sentence(capsys)
