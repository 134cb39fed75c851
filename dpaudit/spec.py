"""Declarative audit specs (TOML): what to audit, against which claim, on which data.

A spec file (documented in ``audits/README.md``)::

    name = "iclp-qr-mean"            # optional; defaults to the file name
    expected = "pass"                # optional: pass | violation | inconclusive | incompatible

    [mechanism]
    name = "iclp-qr-mean"            # a catalogue name (``dpaudit list``) ...
    # path = "my_mech.py:build"      # ... or a user's file and callable
    params = { n = 50, epsilon = 1.0 }

    [claim]                          # the claim audited
    epsilon = 1.0
    delta = 0.0
    adjacency = "replace-one"

    [data]                           # exactly one of: generator, files
    generator = "example"            # a named generator (see dpaudit.datasets)
    # files = ["D.npy", "D_prime.npy"]
    params = {}

    [budget]
    samples = 200000
    confidence = 0.95
    seed = 0

:func:`load_spec` validates everything before anything runs and raises
:class:`SpecError` (a ``ValueError``) with one line naming the file, the field
and the allowed values.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import math
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.mechanism import ADJACENCIES, Claim, Mechanism, entry

__all__ = ["VERDICTS", "AuditSpec", "SpecError", "find_specs", "load_spec", "resolve_mechanism"]

VERDICTS = ("pass", "violation", "inconclusive", "incompatible")
_TOP = {"name", "expected", "description", "mechanism", "claim", "data", "budget"}
_SECTIONS = {
    "mechanism": {"name", "path", "params"},
    "claim": {"epsilon", "delta", "adjacency"},
    "data": {"generator", "files", "params"},
    "budget": {"samples", "confidence", "seed"},
}
DEFAULT_SAMPLES = 200_000
DEFAULT_CONFIDENCE = 0.95


class SpecError(ValueError):
    """An invalid audit spec; the message names the file and the field."""


@dataclasses.dataclass(frozen=True)
class AuditSpec:
    """A validated audit spec.

    Attributes:
        name: the audit's name.
        path: the spec file.
        mechanism: a catalogue name or ``"file.py:callable"``.
        params: parameters for the mechanism's builder.
        claim: the claim audited.
        generator: a named dataset generator, or ``None`` when ``files`` is given.
        files: two ``.npy``/``.npz`` files holding ``D`` and ``D'``, or ``None``.
        data_params: parameters of the generator.
        samples: releases drawn per direction.
        confidence: confidence of the certified bounds.
        seed: the random seed.
        expected: the verdict the spec expects, or ``None``.
        description: free text.
    """

    name: str
    path: Path
    mechanism: str
    params: Mapping[str, Any]
    claim: Claim
    generator: str | None
    files: tuple[Path, Path] | None
    data_params: Mapping[str, Any]
    samples: int
    confidence: float
    seed: int
    expected: str | None = None
    description: str = ""


def _fail(path: Path, field: str, message: str) -> SpecError:
    return SpecError(f"{path}: {field}: {message}")


def _table(path: Path, raw: Mapping, key: str, *, required: bool) -> dict:
    value = raw.get(key)
    if value is None:
        if required:
            raise _fail(path, key, f"missing [{key}] table.")
        return {}
    if not isinstance(value, dict):
        raise _fail(path, key, f"must be a table ([{key}]), got {type(value).__name__}.")
    unknown = set(value) - _SECTIONS[key]
    if unknown:
        raise _fail(
            path,
            f"{key}.{sorted(unknown)[0]}",
            f"unknown field; allowed fields are {sorted(_SECTIONS[key])}.",
        )
    return value


def _number(path, field, value, *, integer=False) -> float:
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an integer" if integer else "a number"
        raise _fail(path, field, f"must be {kind}, got {value!r}.")
    return value


def load_spec(path: str | Path) -> AuditSpec:
    """Read and validate one spec file.

    Raises:
        SpecError: for a missing file, bad TOML, an unknown field, a missing
            claim, epsilon <= 0, an unknown mechanism or generator, a missing
            data file, or a callable that does not exist.
    """
    path = Path(path)
    if not path.is_file():
        raise SpecError(f"{path}: no such spec file.")
    try:
        raw = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SpecError(f"{path}: not valid TOML ({err}).") from None
    unknown = set(raw) - _TOP
    if unknown:
        raise _fail(path, sorted(unknown)[0], f"unknown field; allowed are {sorted(_TOP)}.")

    mech = _table(path, raw, "mechanism", required=True)
    if ("name" in mech) == ("path" in mech):
        raise _fail(
            path,
            "mechanism",
            "give exactly one of name (a catalogue name) or path ('file.py:callable').",
        )
    params = mech.get("params", {})
    if not isinstance(params, dict):
        raise _fail(path, "mechanism.params", "must be a table of parameters.")
    if "name" in mech:
        mechanism = mech["name"]
        try:
            entry(mechanism)
        except ValueError as err:
            raise _fail(path, "mechanism.name", str(err)) from None
    else:
        mechanism = _check_callable_path(path, mech["path"])

    claim_raw = _table(path, raw, "claim", required=True)
    if "epsilon" not in claim_raw:
        raise _fail(path, "claim.epsilon", "missing; the claim needs an epsilon > 0.")
    epsilon = _number(path, "claim.epsilon", claim_raw["epsilon"])
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise _fail(path, "claim.epsilon", f"must be a finite number > 0, got {epsilon!r}.")
    delta = _number(path, "claim.delta", claim_raw.get("delta", 0.0))
    if not 0 <= delta < 1:
        raise _fail(path, "claim.delta", f"must satisfy 0 <= delta < 1, got {delta!r}.")
    adjacency = claim_raw.get("adjacency", "replace-one")
    if adjacency not in ADJACENCIES:
        raise _fail(path, "claim.adjacency", f"must be one of {ADJACENCIES}, got {adjacency!r}.")
    claim = Claim(epsilon=epsilon, delta=delta, adjacency=adjacency)

    data = _table(path, raw, "data", required=True)
    if ("generator" in data) == ("files" in data):
        raise _fail(path, "data", "give exactly one of generator (a name) or files ([D, D']).")
    data_params = data.get("params", {})
    if not isinstance(data_params, dict):
        raise _fail(path, "data.params", "must be a table of parameters.")
    generator, files = None, None
    if "generator" in data:
        from dpaudit.datasets import generators

        generator = data["generator"]
        if generator not in generators():
            raise _fail(
                path, "data.generator", f"unknown generator {generator!r}; one of {generators()}."
            )
    else:
        raw_files = data["files"]
        if not (isinstance(raw_files, list) and len(raw_files) == 2):
            raise _fail(path, "data.files", "must be a list of two files: [D, D_prime].")
        resolved = tuple((path.parent / f).resolve() for f in raw_files)
        for f in resolved:
            if f.suffix not in (".npy", ".npz"):
                raise _fail(path, "data.files", f"{f.name} must be a .npy or .npz file.")
            if not f.is_file():
                raise _fail(path, "data.files", f"{f} does not exist.")
        files = resolved

    budget = _table(path, raw, "budget", required=False)
    samples = _number(path, "budget.samples", budget.get("samples", DEFAULT_SAMPLES), integer=True)
    if samples < 1:
        raise _fail(path, "budget.samples", f"must be >= 1, got {samples}.")
    confidence = _number(path, "budget.confidence", budget.get("confidence", DEFAULT_CONFIDENCE))
    if not 0 < confidence < 1:
        raise _fail(path, "budget.confidence", f"must lie in (0, 1), got {confidence!r}.")
    seed = _number(path, "budget.seed", budget.get("seed", 0), integer=True)

    expected = raw.get("expected")
    if expected is not None and expected not in VERDICTS:
        raise _fail(path, "expected", f"must be one of {VERDICTS}, got {expected!r}.")
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise _fail(path, "name", "must be a non-empty string.")
    return AuditSpec(
        name=name,
        path=path,
        mechanism=mechanism,
        params=params,
        claim=claim,
        generator=generator,
        files=files,
        data_params=data_params,
        samples=int(samples),
        confidence=float(confidence),
        seed=int(seed),
        expected=expected,
        description=str(raw.get("description", "")),
    )


def find_specs(target: str | Path) -> list[Path]:
    """The spec files of ``target``: the file itself, or every ``*.toml`` under a folder."""
    target = Path(target)
    if target.is_file():
        return [target]
    if target.is_dir():
        specs = sorted(target.rglob("*.toml"))
        if not specs:
            raise SpecError(f"{target}: no *.toml audit specs in this folder.")
        return specs
    raise SpecError(f"{target}: no such file or folder.")


# ------------------------------------------------------------------ mechanisms


def _split_callable_path(spec_path: Path, ref: str) -> tuple[Path, str]:
    if not isinstance(ref, str) or ":" not in ref:
        raise _fail(spec_path, "mechanism.path", f"must look like 'file.py:callable', got {ref!r}.")
    file, _, attr = ref.rpartition(":")
    file_path = (spec_path.parent / file).resolve()
    return file_path, attr


def _check_callable_path(spec_path: Path, ref: str) -> str:
    file_path, attr = _split_callable_path(spec_path, ref)
    if file_path.suffix != ".py" or not file_path.is_file():
        raise _fail(spec_path, "mechanism.path", f"{file_path} is not an existing .py file.")
    if not attr.isidentifier():
        raise _fail(spec_path, "mechanism.path", f"{attr!r} is not a Python name.")
    return f"{file_path}:{attr}"


def _load_callable(spec_path: Path, ref: str):
    file_path, attr = _split_callable_path(spec_path, ref)
    module_name = f"_dpaudit_user_{abs(hash(str(file_path)))}"
    module = sys.modules.get(module_name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(module_name, file_path)
        module = importlib.util.module_from_spec(loader_spec)
        try:
            loader_spec.loader.exec_module(module)
        except Exception as err:
            raise _fail(
                spec_path, "mechanism.path", f"importing {file_path.name} failed: {err!r}."
            ) from None
        sys.modules[module_name] = module
    if not hasattr(module, attr):
        raise _fail(spec_path, "mechanism.path", f"{file_path.name} defines no {attr!r}.")
    return getattr(module, attr)


def resolve_mechanism(spec: AuditSpec) -> Mechanism:
    """Build the spec's mechanism (catalogue builder or the user's callable).

    A user's callable may be a :class:`Mechanism`, or a builder called with
    ``params`` that returns one.

    Raises:
        SpecError: when the callable's signature does not accept ``params`` or
            it does not produce a Mechanism.
    """
    params = dict(spec.params)
    if ":" not in spec.mechanism:
        registered = entry(spec.mechanism)
        builder = registered.builder
        params = {**registered.example, **params}
    else:
        builder = _load_callable(spec.path, spec.mechanism)
        if isinstance(builder, Mechanism):
            if spec.params:
                raise _fail(spec.path, "mechanism.params", "a Mechanism object takes no params.")
            return builder
        if not callable(builder):
            raise _fail(spec.path, "mechanism.path", f"{spec.mechanism} is not callable.")
    try:
        inspect.signature(builder).bind(**params)
    except TypeError as err:
        raise _fail(
            spec.path, "mechanism.params", f"the builder does not accept these parameters ({err})."
        ) from None
    except ValueError:  # builtins without a signature: let the call decide
        pass
    try:
        mechanism = builder(**params)
    except (TypeError, ValueError) as err:
        raise _fail(spec.path, "mechanism.params", str(err)) from None
    if not isinstance(mechanism, Mechanism):
        raise _fail(
            spec.path,
            "mechanism",
            f"the builder returned {type(mechanism).__name__}, not a dpaudit.Mechanism.",
        )
    return mechanism


def load_pair(spec: AuditSpec, mechanism: Mechanism):
    """The neighbouring datasets ``(D, D')`` of a spec."""
    if spec.files is not None:
        return tuple(_load_array_file(spec.path, f) for f in spec.files)
    from dpaudit.datasets import generate

    try:
        return generate(spec.generator, mechanism, seed=spec.seed, **spec.data_params)
    except (TypeError, ValueError) as err:
        raise _fail(spec.path, "data", str(err)) from None


def _load_array_file(spec_path: Path, file: Path):
    try:
        loaded = np.load(file, allow_pickle=False)
    except (OSError, ValueError) as err:
        raise _fail(spec_path, "data.files", f"cannot read {file}: {err}.") from None
    if isinstance(loaded, np.ndarray):
        return loaded
    with loaded:
        arrays = [loaded[k] for k in loaded.files]
    return arrays[0] if len(arrays) == 1 else tuple(arrays)
