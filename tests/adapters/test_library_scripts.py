"""The plumbing the library scripts of ``audits/libraries`` share (no library needed)."""

from types import SimpleNamespace

import numpy as np
import pytest

from dpaudit.adapters import library_arguments, run_library_audits, write_library_specs

AUDITS = [
    SimpleNamespace(name="right", expected="inconclusive"),
    SimpleNamespace(name="wrong", expected="violation"),
]


def _run(audit):
    return SimpleNamespace(verdict="inconclusive")


def _line(audit, result, seconds, cpu):
    return f"line {audit.name} {result.verdict}"


def test_exit_code_counts_unexpected_verdicts(capsys):
    args = library_arguments("x").parse_args([])
    assert run_library_audits(args, AUDITS, "lib", _run, _line) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["line right inconclusive", "line wrong inconclusive"]
    assert out[2].startswith("2 audits, 1 unexpected")


def test_k_picks_audits_by_name(capsys):
    args = library_arguments("x").parse_args(["-k", "right"])
    assert run_library_audits(args, AUDITS, "lib", _run, _line) == 0
    assert capsys.readouterr().out.startswith("line right inconclusive\n1 audits, 0 unexpected")
    with pytest.raises(ValueError, match="no lib audit 'nothing'"):
        run_library_audits(
            library_arguments("x").parse_args(["-k", "nothing"]), AUDITS, "lib", _run, _line
        )


def test_write_specs_runs_no_audit(tmp_path, capsys):
    def write(folder):
        return write_library_specs(
            folder, [("lib-a.toml", "name = 'a'\n", "a", (np.zeros(2), np.ones(2)))]
        )

    def never(audit):
        raise AssertionError("an audit ran")

    args = library_arguments("x").parse_args(["--write-specs", str(tmp_path)])
    assert run_library_audits(args, AUDITS, "lib", never, _line, write) == 0
    assert capsys.readouterr().out == f"3 files written to {tmp_path}\n"
    assert (tmp_path / "lib-a.toml").read_text() == "name = 'a'\n"
    np.testing.assert_array_equal(np.load(tmp_path / "data" / "a.D-prime.npy"), np.ones(2))
    assert "write_specs" not in vars(library_arguments("x", write_specs=False).parse_args([]))
