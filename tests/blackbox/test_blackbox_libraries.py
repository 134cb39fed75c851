"""The shipped audits of real DP libraries (audits/libraries/), skipped without the extra."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("opendp", reason="the 'libraries' extra is not installed")

_PATH = Path(__file__).resolve().parents[2] / "audits" / "libraries" / "opendp_primitives.py"


def _module():
    spec = importlib.util.spec_from_file_location("opendp_primitives", _PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("opendp_primitives", module)
    spec.loader.exec_module(module)
    return module


def test_epsilon_passed_as_a_scale_is_a_violation():
    """The cheapest library case (2000 releases; true epsilon 2 against the claimed 0.5)."""
    lib = _module()
    (audit,) = [a for a in lib.AUDITS if a.name == "laplace-epsilon-as-scale"]
    res = lib.run(audit, samples=2_000, select_samples=2_000)
    assert res.verdict == "violation" and not res.reproducible


@pytest.mark.slow
@pytest.mark.parametrize("name", [a.name for a in _module().AUDITS])
def test_every_library_audit_gives_its_expected_verdict(name):
    lib = _module()
    (audit,) = [a for a in lib.AUDITS if a.name == name]
    res = lib.run(audit, samples=200_000)
    assert res.verdict == audit.expected, res.notes
