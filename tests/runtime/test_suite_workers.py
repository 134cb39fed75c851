"""`--workers` when the local Ray instance cannot start: the same audits, run serially."""

import json

import dpaudit.runtime
from dpaudit.cli.main import main


def test_a_local_ray_that_does_not_start_runs_the_suite_serially(tmp_path, monkeypatch, capsys):
    from spec_fixtures import USER
    from spec_fixtures import WHITE_BOX_SPEC as SPEC

    def no_ray(workers=None, address=None):
        raise RuntimeError("a local Ray instance did not start (2 tries).")

    monkeypatch.setattr(dpaudit.runtime, "start_suite", no_ray)
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "faulty.toml").write_text(SPEC.format(expected='expected = "violation"', scale=0.5))
    out = tmp_path / "out.json"
    args = ["audit", str(tmp_path / "faulty.toml"), "--samples", "1000", "--json", str(out)]
    assert main([*args, "--workers", "2"]) == 0
    captured = capsys.readouterr()
    assert "did not start (2 tries). Running the audits serially." in captured.err
    assert "faulty: violation ✓" in captured.out
    assert [a["verdict"] for a in json.loads(out.read_text())["audits"]] == ["violation"]
