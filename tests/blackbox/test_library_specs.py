"""The shipped diffprivlib specs (audits/libraries/*.toml) are what the audit module writes.

Needs no library: the module imports diffprivlib only when a primitive is built,
and a spec names its sampler without importing it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from dpaudit.io.spec import load_spec

_FOLDER = Path(__file__).resolve().parents[2] / "audits" / "libraries"


def _module():
    spec = importlib.util.spec_from_file_location(
        "diffprivlib_primitives", _FOLDER / "diffprivlib_primitives.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("diffprivlib_primitives", module)
    spec.loader.exec_module(module)
    return module


LIB = _module()


def test_every_audit_has_its_spec_and_no_spec_is_left_over():
    shipped = {p.stem for p in _FOLDER.glob("diffprivlib-*.toml")}
    assert shipped == {f"diffprivlib-{a.name}" for a in LIB.AUDITS}


@pytest.mark.parametrize("name", [a.name for a in LIB.AUDITS])
def test_the_shipped_spec_and_data_are_the_modules(name):
    audit = LIB.audit_named(name)
    path = _FOLDER / f"diffprivlib-{name}.toml"
    assert path.read_text() == LIB.spec_text(audit), "rerun --write-specs audits/libraries"
    spec = load_spec(path)
    assert spec.expected == audit.expected and spec.kind == "black-box"
    assert (spec.claim.epsilon, spec.claim.delta) == audit.claim[:2]
    for suffix, data in zip(("D", "D-prime"), audit.inputs, strict=True):
        stored = np.load(_FOLDER / "data" / f"{name}.{suffix}.npy")
        expected = np.asarray(data)
        assert stored.dtype == expected.dtype and np.array_equal(stored, expected)


@pytest.mark.parametrize("library", ["diffprivlib", "opendp"])
def test_the_library_specs_samplers_are_prefix_stable(library):
    # the spec's sampler says so (resolve passes the declaration on), so the audit draws
    # exactly the releases it counts: one library call per release used
    from dpaudit.io.spec import resolve_blackbox

    path = sorted(_FOLDER.glob(f"{library}-*.toml"))[0]
    assert resolve_blackbox(load_spec(path)).sampler.prefix_stable is True
    mechanism = Path(__file__).resolve().parents[2] / "audits" / "blackbox" / "laplace-mean.toml"
    assert resolve_blackbox(load_spec(mechanism)).sampler.prefix_stable is False
