"""A suite's building releases compiled programs above the memory budget (docs/memory.md)."""

from spec_fixtures import USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

import dpaudit.cli.main as cli
from dpaudit.cli.main import main


def test_building_a_suite_releases_memory_after_each_spec(tmp_path, monkeypatch):
    """Building the shipped specs left 2.7 GB of compiled programs behind before the first
    audit: each build of a suite is followed by a release (which does nothing below the
    budget, tests/core/test_memory.py)."""
    (tmp_path / "user.py").write_text(USER)
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.toml").write_text(SPEC.format(expected="", scale=1.0))
    calls = []
    monkeypatch.setattr(cli, "release_memory", lambda: calls.append(1))
    assert main(["validate", str(tmp_path)]) == 0
    assert len(calls) == 3
