"""The bit-level statistic on diffprivlib's and OpenDP's shipped noise primitives (slow).

What docs/implementations.md records: diffprivlib 0.6.6's Laplace (a textbook float
sampler) is a certified violation when read by its releases' bits, OpenDP's Laplace
(exact sampling on a lattice) is not. Skipped without the ``libraries`` extra.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

_FOLDER = Path(__file__).resolve().parents[2] / "audits" / "libraries"


def _module(name):
    spec = importlib.util.spec_from_file_location(name, _FOLDER / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_diffprivlib_laplace_read_by_its_bits_is_a_violation():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip("diffprivlib", exc_type=ImportError)
    lib = _module("diffprivlib_primitives")
    res = lib.run(lib.audit_named("laplace"), statistic="bits")
    assert res.verdict == "violation" and res.epsilon_lower > 3


@pytest.mark.slow
def test_opendp_laplace_read_by_its_bits_is_not():
    pytest.importorskip("opendp")
    lib = _module("opendp_primitives")
    (audit,) = [a for a in lib.AUDITS if a.name == "laplace"]
    res = lib.run(audit, samples=50_000, statistic="bits")
    assert res.verdict == "inconclusive"
