"""A suite's building releases compiled programs above the memory budget (docs/memory.md)."""

from spec_fixtures import USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

import dpaudit.cli.main as cli
from dpaudit.cli.main import main
from dpaudit.core.memory import release_memory, resident_bytes


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
    prepared (the randomness check): a suite empties them before auditing, and the release
    step drops them with JAX's programs (jax.clear_caches does not reach them)."""
    import dpaudit.io.spec as spec

    (tmp_path / "user.py").write_text(USER)
    for name in ("a", "b"):
        (tmp_path / f"{name}.toml").write_text(SPEC.format(expected="", scale=1.0))
    cli.prepare([tmp_path / "a.toml"])
    assert spec.draw_program_count() >= 1  # the family's draw program, built while preparing
    assert release_memory(1) is (resident_bytes() is not None)
    assert spec.draw_program_count() == 0 or resident_bytes() is None
    calls = []
    clear = spec.clear_draw_programs
    monkeypatch.setattr(spec, "clear_draw_programs", lambda: calls.append("clear") or clear())
    monkeypatch.setattr(cli, "release_memory", lambda: calls.append("release"))
    assert main(["audit", str(tmp_path), "-q", "--samples", "300"]) == 0
    # a release after each build, the draw programs emptied, a release after each audit
    assert calls == ["release", "release", "clear", "release", "release"]
