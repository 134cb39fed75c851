"""The CLI: exit codes, JSON schema, atomic reports, user mechanisms from a separate file."""

import json
import subprocess
import sys
import textwrap

import pytest
from spec_fixtures import USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

import dpaudit
from dpaudit.cli.main import PreparedAudit, main, prepare, run_audit
from dpaudit.io.report import now
from dpaudit.io.spec import SpecError, find_specs


@pytest.fixture
def suite(tmp_path):
    folder = tmp_path / "audits"
    folder.mkdir()
    (folder / "user.py").write_text(USER)
    (folder / "correct.toml").write_text(SPEC.format(expected='expected = "pass"', scale=1.0))
    (folder / "faulty.toml").write_text(SPEC.format(expected='expected = "violation"', scale=0.5))
    return folder


def test_run_writes_report_and_json_with_the_schema(suite, tmp_path, capsys):
    reports = tmp_path / "reports"
    assert (
        main(["run", str(suite), "--report", str(reports), "--json", str(tmp_path / "r.json")]) == 0
    )
    document = json.loads((reports / "results.json").read_text())
    assert document == json.loads((tmp_path / "r.json").read_text()) | {
        "started": document["started"]
    }
    assert document["schema"] == "dpaudit.results/1"
    assert {a["kind"] for a in document["audits"]} == {"white-box"}
    by_name = {a["name"]: a for a in document["audits"]}
    assert by_name["correct"]["verdict"] == "pass"
    faulty = by_name["faulty"]
    assert faulty["verdict"] == "violation" and faulty["as_expected"] is True
    # Laplace scale halved: the true epsilon is exactly 2 x claimed, certified by a release.
    assert faulty["epsilon_lower"] == pytest.approx(2.0, rel=1e-9)
    assert faulty["certificate"]["loss"] > 1.0
    for field in ("mechanism", "claim", "confidence", "epsilon_at_claimed_delta", "samples",
                  "seconds", "delta_at_claimed_epsilon"):  # fmt: skip
        assert field in faulty
    assert set(faulty["claim"]) >= {"epsilon", "delta", "adjacency"}
    assert set(faulty["delta_at_claimed_epsilon"]) == {"estimate", "lower", "upper"}
    page = (reports / "index.html").read_text()
    assert page.count("<svg xmlns=") >= 4 and "violation" in page  # inline figures


def test_unexpected_violation_exits_1_and_strict_inconclusive(suite, capsys):
    (suite / "faulty.toml").write_text(SPEC.format(expected="", scale=0.5))
    assert main(["run", str(suite)]) == 1
    assert "1 audit(s) failed" in capsys.readouterr().err
    (suite / "faulty.toml").write_text(SPEC.format(expected='expected = "pass"', scale=0.5))
    assert main(["run", str(suite / "faulty.toml")]) == 1  # missed expectation


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("epsilon = 1.0", "epsilon = -1.0"),
        ('path = "user.py:build"', 'path = "missing.py:build"'),
        ('path = "user.py:build"', 'name = "no-such-mechanism"'),
        ("[claim]\nepsilon = 1.0", ""),
        ("scale_factor = 0.5", "colour = 1"),
    ],
)
def test_invalid_input_exits_2_with_one_line_and_writes_nothing(suite, tmp_path, capsys, old, new):
    path = suite / "faulty.toml"
    path.write_text(path.read_text().replace(old, new))
    reports = tmp_path / "reports"
    assert main(["run", str(suite), "--report", str(reports)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpaudit: ") and "\n" not in err and "faulty.toml" in err
    assert not reports.exists()


def test_non_neighbouring_files_exit_2(suite, tmp_path, capsys):
    import numpy as np

    np.save(suite / "d.npy", np.zeros((20, 1)))
    np.save(suite / "d2.npy", np.ones((20, 1)))
    path = suite / "correct.toml"
    path.write_text(path.read_text().replace('generator = "points"', 'files = ["d.npy", "d2.npy"]'))
    assert main(["run", str(path)]) == 2
    assert "differ in 20 records" in capsys.readouterr().err


def test_check_a_user_file(suite, capsys):
    target = f"{suite / 'user.py'}:MECHANISM"
    assert (
        main(["check", target, "--epsilon", "1", "--generator", "points", "--samples", "2000"]) == 0
    )
    assert main(["check", target, "--epsilon", "0.5", "--generator", "points"]) == 1
    assert main(["check", target, "--epsilon", "0", "--generator", "points"]) == 2


def test_list_shows_the_catalogue(capsys, monkeypatch):
    # `list --all` asks for the correct and the faulty catalogue (faulty=None) and shows a row
    # per name; building all 80 examples cost 10 s here, so the rows are two real entries.
    asked = []
    real = dpaudit.catalogue

    def two_entries(*, faulty):
        asked.append(faulty)
        names = set(real(faulty=faulty))
        return [
            n for n in ("laplace-mean", "faulty/gaussian-classical-large-epsilon") if n in names
        ]

    monkeypatch.setattr(dpaudit, "catalogue", two_entries)
    assert main(["list", "--all"]) == 0
    out = capsys.readouterr().out
    assert asked == [None]
    assert "dpaudit catalogue" in out
    assert "laplace-mean" in out and "faulty/gaussian-classical-large-epsilon" in out
    assert "replace-one" in out and "does not build" not in out


def test_info_reports_x64(capsys):
    assert main(["info"]) == 0
    assert "x64 on" in capsys.readouterr().out


def test_console_script_module_entry():
    out = subprocess.run(
        [sys.executable, "-m", "dpaudit.cli.main", "--version"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip()


def test_spec_file_in_a_temporary_directory_is_self_contained(tmp_path):
    # A user's own mechanism in a separate file, audited without touching dpaudit's code.
    (tmp_path / "mine.py").write_text(textwrap.dedent(USER))
    (tmp_path / "mine.toml").write_text(
        SPEC.format(expected='expected = "pass"', scale=1.0).replace("user.py", "mine.py")
    )
    assert main(["run", str(tmp_path / "mine.toml")]) == 0


def test_prepare_and_run_audit_are_the_run_command_in_parts(suite):
    items = prepare(find_specs(suite), seed=3, samples=500)
    assert [item.spec.name for item in items] == ["correct", "faulty"]
    for item in items:
        assert isinstance(item, PreparedAudit) and item.target is None
        assert item.spec.seed == 3 and item.spec.samples == 500 and len(item.pair) == 2
    result = run_audit(items[0])
    assert result.samples == 500 and result.seed == 3
    with pytest.raises(SpecError, match="two specs share the name 'correct'"):
        prepare([suite / "correct.toml", suite / "correct.toml"])


def test_now_is_an_iso_time_to_the_second():
    import datetime

    started = datetime.datetime.fromisoformat(now())
    assert started.tzinfo is not None and started.microsecond == 0
