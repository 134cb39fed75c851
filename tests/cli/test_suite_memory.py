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


def test_a_suite_drops_the_family_draw_programs_before_its_first_audit(tmp_path, monkeypatch):
    """The pre-audit draw programs are compiled executables used only while specs are
    prepared (the randomness check): a suite holds none of them while it audits."""
    import dpaudit.io.spec.resolve as resolve

    (tmp_path / "user.py").write_text(USER)
    for name in ("a", "b"):
        (tmp_path / f"{name}.toml").write_text(SPEC.format(expected="", scale=1.0))
    run_checked, built, held = cli._run_checked, [], []
    prepare_one = cli._prepare_one

    def prepared(*args, **kwargs):
        item = prepare_one(*args, **kwargs)
        built.append(len(resolve._DRAW_PROGRAMS))
        return item

    def audited(item):
        held.append(len(resolve._DRAW_PROGRAMS))
        return run_checked(item)

    monkeypatch.setattr(cli, "_prepare_one", prepared)
    monkeypatch.setattr(cli, "_run_checked", audited)
    assert main(["audit", str(tmp_path), "-q", "--samples", "300"]) == 0
    assert built[-1] >= 1  # the family's draw program was built while preparing
    assert held == [0, 0]
