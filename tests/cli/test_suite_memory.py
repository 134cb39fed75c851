"""A suite's building releases compiled programs above the memory budget (docs/memory.md)."""

import pytest
from spec_fixtures import USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

import dpaudit.cli.main as cli
from dpaudit.cli.main import main


@pytest.mark.parametrize(("resident", "releases"), [(1 << 40, 3), (1 << 20, 0)])
def test_building_a_suite_releases_memory_after_each_spec_only_above_the_budget(
    resident, releases, tmp_path, monkeypatch
):
    """Building the shipped specs left 2.7 GB of compiled programs behind before the first
    audit; above the budget each build is followed by a release, below it nothing is done
    (no garbage collection per spec)."""
    (tmp_path / "user.py").write_text(USER)
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.toml").write_text(SPEC.format(expected="", scale=1.0))
    calls = []
    monkeypatch.setattr(cli, "resident_bytes", lambda: resident)
    monkeypatch.setattr(cli, "release_memory", lambda: calls.append(1))
    assert main(["validate", str(tmp_path)]) == 0
    assert len(calls) == releases
