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

A *black-box* spec audits an implementation from its samples alone
(:func:`dpaudit.blackbox_audit`): it has a ``[blackbox]`` table instead of (or
in addition to) ``[mechanism]``::

    expected = "violation"           # black-box verdicts: violation | inconclusive

    [blackbox]
    sampler = "impl.py:noisy_hist"   # a plain sampler (data, n, key, **params) -> releases ...
    # mechanism = "faulty/svt-lyu-alg5"   # ... or a catalogue model sampled as a black box
    params = { epsilon = 0.5 }       # keyword arguments of the sampler (or the builder)
    method = "auto"                  # auto | model | logistic | mlp
    reference = "laplace-mean"       # the intended mechanism, for method = "model"
    reference_params = {}
    features = "values"              # values | kl (classifier features)
    objective = "epsilon"            # epsilon | delta

    [budget]
    samples = 200000                 # certification releases per dataset
    select_samples = 20000           # selection releases per dataset

With both tables, ``[mechanism]`` declares the reference model. :func:`load_spec`
validates everything before anything runs and raises :class:`SpecError` (a
``ValueError``) with one line naming the file, the field and the allowed
values; :func:`resolve_blackbox` builds the sampler and the reference.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import math
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.adjacency import ADJACENCIES
from dpaudit.blackbox import METHODS, OBJECTIVES
from dpaudit.mechanism import Claim, Mechanism
from dpaudit.registry import entry

__all__ = [
    "BLACKBOX_VERDICTS",
    "FEATURES",
    "VERDICTS",
    "AuditSpec",
    "BlackBoxSpec",
    "BlackBoxTarget",
    "SpecError",
    "blackbox_features",
    "find_specs",
    "load_spec",
    "resolve_blackbox",
    "resolve_mechanism",
]

VERDICTS = ("pass", "violation", "inconclusive", "incompatible")
#: A black-box audit can refute a claim from samples, never prove it.
BLACKBOX_VERDICTS = ("violation", "inconclusive")
#: Classifier features of a black-box spec: the release values, or Karhunen–Loève coefficients.
FEATURES = ("values", "kl")
_TOP = {"name", "expected", "description", "mechanism", "blackbox", "claim", "data", "budget"}
_SECTIONS = {
    "mechanism": {"name", "path", "params"},
    "blackbox": {
        "sampler",
        "mechanism",
        "params",
        "method",
        "reference",
        "reference_params",
        "features",
        "components",
        "objective",
        "classifier_options",
    },
    "claim": {"epsilon", "delta", "adjacency"},
    "data": {"generator", "files", "params"},
    "budget": {"samples", "select_samples", "confidence", "seed"},
}
_CLASSIFIER_OPTIONS = ("batch", "hidden", "l2", "learning_rate", "steps")
DEFAULT_SAMPLES = 200_000
DEFAULT_CONFIDENCE = 0.95


class SpecError(ValueError):
    """An invalid audit spec; the message names the file and the field."""


@dataclasses.dataclass(frozen=True)
class BlackBoxSpec:
    """The validated ``[blackbox]`` table of a spec (see :func:`dpaudit.blackbox_audit`).

    Attributes:
        sampler: ``"/abs/file.py:callable"`` of a plain sampler, or ``None``.
        mechanism: a catalogue name sampled as a black box, or ``None``
            (exactly one of ``sampler`` / ``mechanism`` is set).
        params: keyword arguments of the sampler (or of the catalogue builder).
        method: ``"model"``, ``"logistic"`` or ``"mlp"`` (``"auto"`` resolved:
            ``"model"`` when there is a reference, else ``"logistic"``).
        reference: the reference model (the intended mechanism), a catalogue
            name or ``"/abs/file.py:callable"``, or ``None``; a ``[mechanism]``
            table in the same spec is the reference.
        reference_params: parameters of the reference's builder.
        features: ``"values"`` or ``"kl"`` (classifier features).
        components: number of KL coefficients for ``features = "kl"``, or
            ``None`` for all of the basis.
        objective: ``"epsilon"`` or ``"delta"``.
        classifier_options: passed to :func:`dpaudit.blackbox_audit`.
        reference_in_mechanism: the reference is the spec's ``[mechanism]`` table.
    """

    sampler: str | None
    mechanism: str | None
    params: Mapping[str, Any]
    method: str
    reference: str | None
    reference_params: Mapping[str, Any]
    features: str = "values"
    components: int | None = None
    objective: str = "epsilon"
    classifier_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    reference_in_mechanism: bool = False


@dataclasses.dataclass(frozen=True)
class AuditSpec:
    """A validated audit spec.

    Attributes:
        name: the audit's name.
        path: the spec file.
        mechanism: a catalogue name or ``"file.py:callable"``: the mechanism
            whose claim is audited. For a black-box spec, the ``[mechanism]``
            table when there is one (the model the implementation declares it
            computes, also the reference), else what is sampled
            (``blackbox.mechanism`` or ``blackbox.sampler``).
        params: parameters for the mechanism's builder (black-box without
            ``[mechanism]``: ``blackbox.params``).
        claim: the claim audited.
        generator: a named dataset generator, or ``None`` when ``files`` is given.
        files: two ``.npy``/``.npz`` files holding ``D`` and ``D'``, or ``None``.
        data_params: parameters of the generator.
        samples: releases drawn per direction (black-box: certification
            releases per dataset).
        confidence: confidence of the certified bounds.
        seed: the random seed.
        expected: the verdict the spec expects, or ``None``.
        description: free text.
        blackbox: the ``[blackbox]`` table, or ``None`` for a white-box spec.
        select_samples: black-box selection releases per dataset (``None``:
            the engine's default).
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
    blackbox: BlackBoxSpec | None = None
    select_samples: int | None = None

    @property
    def kind(self) -> str:
        """``"black-box"`` for a spec with a ``[blackbox]`` table, else ``"white-box"``."""
        return "white-box" if self.blackbox is None else "black-box"


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


def _params(path: Path, field: str, value) -> dict:
    if not isinstance(value, dict):
        raise _fail(path, field, "must be a table of parameters.")
    return value


def _choice(path: Path, field: str, value, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise _fail(path, field, f"must be one of {allowed}, got {value!r}.")
    return value


def _catalogue_name(path: Path, field: str, value) -> str:
    if not isinstance(value, str):
        raise _fail(path, field, f"must be a catalogue name (a string), got {value!r}.")
    try:
        entry(value)
    except ValueError as err:
        raise _fail(path, field, str(err)) from None
    return value


def load_spec(path: str | Path) -> AuditSpec:
    """Read and validate one spec file (white-box, or black-box with a ``[blackbox]`` table).

    Raises:
        SpecError: for a missing file, bad TOML, an unknown field, a missing
            claim, epsilon <= 0, an unknown mechanism or generator, a missing
            data file, a callable that does not exist, or a black-box field
            outside its allowed values (see ``audits/README.md``).
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

    blackbox_raw = _table(path, raw, "blackbox", required=False) if "blackbox" in raw else None
    mech = _table(path, raw, "mechanism", required=blackbox_raw is None)
    mechanism, params = None, {}
    if "mechanism" in raw or blackbox_raw is None:
        if ("name" in mech) == ("path" in mech):
            raise _fail(
                path,
                "mechanism",
                "give exactly one of name (a catalogue name) or path ('file.py:callable').",
            )
        params = _params(path, "mechanism.params", mech.get("params", {}))
        if "name" in mech:
            mechanism = _catalogue_name(path, "mechanism.name", mech["name"])
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
    data_params = _params(path, "data.params", data.get("params", {}))
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

    blackbox = None
    if blackbox_raw is not None:
        blackbox = _load_blackbox(path, blackbox_raw, mechanism, params)
        if mechanism is None:  # no [mechanism] table: the spec audits what it samples
            mechanism = blackbox.sampler or blackbox.mechanism
            params = blackbox.params

    budget = _table(path, raw, "budget", required=False)
    samples = _number(path, "budget.samples", budget.get("samples", DEFAULT_SAMPLES), integer=True)
    if samples < 1:
        raise _fail(path, "budget.samples", f"must be >= 1, got {samples}.")
    select_samples = None
    if "select_samples" in budget:
        if blackbox is None:
            raise _fail(
                path,
                "budget.select_samples",
                "only black-box specs (with a [blackbox] table) take select_samples.",
            )
        select_samples = _number(
            path, "budget.select_samples", budget["select_samples"], integer=True
        )
        least = 1 if blackbox.method == "model" else 4
        if select_samples < least:
            raise _fail(
                path,
                "budget.select_samples",
                f"must be >= {least} (a classifier trains on half and thresholds on the other "
                f"half), got {select_samples}.",
            )
    confidence = _number(path, "budget.confidence", budget.get("confidence", DEFAULT_CONFIDENCE))
    if not 0 < confidence < 1:
        raise _fail(path, "budget.confidence", f"must lie in (0, 1), got {confidence!r}.")
    seed = _number(path, "budget.seed", budget.get("seed", 0), integer=True)

    expected = raw.get("expected")
    allowed = VERDICTS if blackbox is None else BLACKBOX_VERDICTS
    if expected is not None and expected not in allowed:
        why = "" if blackbox is None else " (a black-box audit never certifies a pass)"
        raise _fail(path, "expected", f"must be one of {allowed}{why}, got {expected!r}.")
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
        blackbox=blackbox,
        select_samples=None if select_samples is None else int(select_samples),
    )


def _load_blackbox(path: Path, table: dict, declared: str | None, declared_params) -> BlackBoxSpec:
    """Validate a ``[blackbox]`` table; ``declared`` is the ``[mechanism]`` (the reference)."""
    if ("sampler" in table) == ("mechanism" in table):
        raise _fail(
            path,
            "blackbox",
            "give exactly one of sampler ('file.py:callable', a plain sampler (data, n, key) -> "
            "releases) or mechanism (a catalogue name sampled as a black box).",
        )
    params = _params(path, "blackbox.params", table.get("params", {}))
    sampler, mechanism = None, None
    if "sampler" in table:
        sampler = _check_callable_path(path, table["sampler"], "blackbox.sampler")
    else:
        mechanism = _catalogue_name(path, "blackbox.mechanism", table["mechanism"])

    if "reference_params" in table and "reference" not in table:
        raise _fail(path, "blackbox.reference_params", "given without blackbox.reference.")
    reference, reference_params = None, {}
    if "reference" in table:
        if declared is not None:
            raise _fail(
                path,
                "blackbox.reference",
                "the [mechanism] table already declares the reference model; give only one.",
            )
        ref = table["reference"]
        if isinstance(ref, str) and ":" in ref:
            reference = _check_callable_path(path, ref, "blackbox.reference")
        else:
            reference = _catalogue_name(path, "blackbox.reference", ref)
        reference_params = _params(
            path, "blackbox.reference_params", table.get("reference_params", {})
        )
    elif declared is not None:
        reference, reference_params = declared, declared_params

    method = _choice(path, "blackbox.method", table.get("method", "auto"), METHODS)
    if method == "auto":
        method = "model" if reference is not None else "logistic"
    if method == "model" and reference is None:
        raise _fail(
            path,
            "blackbox.method",
            "'model' needs a reference model: give blackbox.reference (a catalogue name or "
            "'file.py:callable') or a [mechanism] table.",
        )
    classifier = method in ("logistic", "mlp")

    features = _choice(path, "blackbox.features", table.get("features", "values"), FEATURES)
    if "features" in table and not classifier:
        raise _fail(
            path,
            "blackbox.features",
            "features are for the classifier methods (set method = 'logistic' or 'mlp'); "
            "method 'model' thresholds the reference's privacy loss.",
        )
    if features == "kl" and reference is None and mechanism is None:
        raise _fail(
            path,
            "blackbox.features",
            "'kl' needs a Karhunen–Loève basis, read from the reference or the black-box "
            "mechanism; give blackbox.reference (a model of the release) or use 'values'.",
        )
    components = table.get("components")
    if components is not None:
        if features != "kl":
            raise _fail(path, "blackbox.components", "only used with features = 'kl'.")
        components = _number(path, "blackbox.components", components, integer=True)
        if components < 1:
            raise _fail(path, "blackbox.components", f"must be >= 1, got {components}.")

    objective = _choice(path, "blackbox.objective", table.get("objective", "epsilon"), OBJECTIVES)
    options = _params(path, "blackbox.classifier_options", table.get("classifier_options", {}))
    if options and not classifier:
        raise _fail(
            path, "blackbox.classifier_options", "only used with method = 'logistic' or 'mlp'."
        )
    _check_classifier_options(path, options)
    return BlackBoxSpec(
        sampler=sampler,
        mechanism=mechanism,
        params=params,
        method=method,
        reference=reference,
        reference_params=reference_params,
        features=features,
        components=None if components is None else int(components),
        objective=objective,
        classifier_options=options,
        reference_in_mechanism=reference is not None and "reference" not in table,
    )


def _check_classifier_options(path: Path, options: dict) -> None:
    for key, value in options.items():
        field = f"blackbox.classifier_options.{key}"
        if key not in _CLASSIFIER_OPTIONS:
            raise _fail(path, field, f"unknown option; known are {list(_CLASSIFIER_OPTIONS)}.")
        if key == "hidden":
            if not (
                isinstance(value, list)
                and value
                and all(isinstance(h, int) and not isinstance(h, bool) and h > 0 for h in value)
            ):
                raise _fail(path, field, f"must be a list of layer widths >= 1, got {value!r}.")
        elif key in ("steps", "batch"):
            if _number(path, field, value, integer=True) < 1:
                raise _fail(path, field, f"must be >= 1, got {value!r}.")
        elif key == "l2":
            if _number(path, field, value) < 0:
                raise _fail(path, field, f"must be >= 0, got {value!r}.")
        elif _number(path, field, value) <= 0:  # learning_rate
            raise _fail(path, field, f"must be > 0, got {value!r}.")


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


def _split_callable_path(spec_path: Path, ref: str, field: str) -> tuple[Path, str]:
    if not isinstance(ref, str) or ":" not in ref:
        raise _fail(spec_path, field, f"must look like 'file.py:callable', got {ref!r}.")
    file, _, attr = ref.rpartition(":")
    file_path = (spec_path.parent / file).resolve()
    return file_path, attr


def _check_callable_path(spec_path: Path, ref: str, field: str = "mechanism.path") -> str:
    file_path, attr = _split_callable_path(spec_path, ref, field)
    if file_path.suffix != ".py" or not file_path.is_file():
        raise _fail(spec_path, field, f"{file_path} is not an existing .py file.")
    if not attr.isidentifier():
        raise _fail(spec_path, field, f"{attr!r} is not a Python name.")
    return f"{file_path}:{attr}"


def _load_callable(spec_path: Path, ref: str, field: str = "mechanism.path"):
    file_path, attr = _split_callable_path(spec_path, ref, field)
    module_name = f"_dpaudit_user_{abs(hash(str(file_path)))}"
    module = sys.modules.get(module_name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(module_name, file_path)
        module = importlib.util.module_from_spec(loader_spec)
        try:
            loader_spec.loader.exec_module(module)
        except Exception as err:
            raise _fail(spec_path, field, f"importing {file_path.name} failed: {err!r}.") from None
        sys.modules[module_name] = module
    if not hasattr(module, attr):
        raise _fail(spec_path, field, f"{file_path.name} defines no {attr!r}.")
    return getattr(module, attr)


def _build(spec_path: Path, ref: str, params: Mapping, field: str, params_field: str) -> Mechanism:
    """A catalogue builder (``ref`` a name) or a user's ``file.py:callable``, built with ``params``."""
    params = dict(params)
    if ":" not in ref:
        registered = entry(ref)
        builder = registered.builder
        params = {**registered.example, **params}
    else:
        builder = _load_callable(spec_path, ref, field)
        if isinstance(builder, Mechanism):
            if params:
                raise _fail(spec_path, params_field, "a Mechanism object takes no params.")
            return builder
        if not callable(builder):
            raise _fail(spec_path, field, f"{ref} is not callable.")
    try:
        inspect.signature(builder).bind(**params)
    except TypeError as err:
        raise _fail(
            spec_path, params_field, f"the builder does not accept these parameters ({err})."
        ) from None
    except ValueError:  # builtins without a signature: let the call decide
        pass
    try:
        mechanism = builder(**params)
    except (TypeError, ValueError) as err:
        raise _fail(spec_path, params_field, str(err)) from None
    if not isinstance(mechanism, Mechanism):
        raise _fail(
            spec_path,
            field.rpartition(".")[0] if field.endswith(".path") else field,
            f"the builder returned {type(mechanism).__name__}, not a dpaudit.Mechanism.",
        )
    return mechanism


def resolve_mechanism(spec: AuditSpec) -> Mechanism:
    """Build the spec's mechanism (catalogue builder or the user's callable).

    A user's callable may be a :class:`Mechanism`, or a builder called with
    ``params`` that returns one. For a black-box spec this is the
    ``[mechanism]`` table's model, else the catalogue mechanism sampled
    (``blackbox.mechanism``).

    Raises:
        SpecError: when the callable's signature does not accept ``params``,
            it does not produce a Mechanism, or the spec is a black-box spec of
            a plain sampler without a ``[mechanism]`` (use :func:`resolve_blackbox`).
    """
    bb = spec.blackbox
    if bb is None or bb.reference_in_mechanism:
        return _build(spec.path, spec.mechanism, spec.params, "mechanism.path", "mechanism.params")
    if bb.mechanism is None:
        raise _fail(
            spec.path,
            "blackbox.sampler",
            "a plain sampler is not a dpaudit.Mechanism; use resolve_blackbox for black-box specs.",
        )
    return _build(spec.path, bb.mechanism, bb.params, "blackbox.mechanism", "blackbox.params")


@dataclasses.dataclass(frozen=True)
class _PublicParameters:
    """What dataset generators read for a plain sampler: a name and public parameters."""

    name: str
    params: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class BlackBoxTarget:
    """A black-box spec made runnable by :func:`resolve_blackbox`.

    Attributes:
        name: the implementation's name in reports.
        sampler: ``sampler(data, n, key) -> releases`` (``blackbox.params`` bound).
        mechanism: the catalogue :class:`~dpaudit.Mechanism` sampled, or ``None``
            for a plain sampler.
        reference: the reference :class:`~dpaudit.Mechanism`, or ``None``.
        public: what dataset generators read ``n``, ``tau``, ... from: the
            sampled mechanism, else the reference (with ``blackbox.params`` on
            top), else ``blackbox.params``.
    """

    name: str
    sampler: Callable
    mechanism: Mechanism | None
    reference: Mechanism | None
    public: Any


def _bind_sampler(spec: AuditSpec, fn, params: Mapping, name: str) -> Callable:
    if not callable(fn):
        raise _fail(spec.path, "blackbox.sampler", f"{name} is not callable.")
    try:
        inspect.signature(fn).bind(None, 1, None, **params)
    except TypeError as err:
        field = "blackbox.params" if params else "blackbox.sampler"
        raise _fail(
            spec.path,
            field,
            f"the sampler must accept (data, n, key{', **params' if params else ''}) ({err}).",
        ) from None
    except ValueError:  # builtins without a signature: let the call decide
        pass
    params = dict(params)

    def sampler(data, n, key):
        return fn(data, n, key, **params)

    sampler.__name__ = name
    return sampler


def resolve_blackbox(spec: AuditSpec) -> BlackBoxTarget:
    """Build a black-box spec's sampler, the catalogue mechanism it samples, and its reference.

    Raises:
        SpecError: for a white-box spec, a sampler that does not accept
            ``(data, n, key, **params)``, or a builder that rejects its parameters.
    """
    from dpaudit.blackbox import as_sampler

    bb = spec.blackbox
    if bb is None:
        raise _fail(spec.path, "blackbox", "not a black-box spec (no [blackbox] table).")
    reference = None
    if bb.reference is not None:
        table = "mechanism" if bb.reference_in_mechanism else "blackbox"
        reference = _build(
            spec.path,
            bb.reference,
            bb.reference_params,
            "mechanism.path" if bb.reference_in_mechanism else "blackbox.reference",
            f"{table}.{'params' if bb.reference_in_mechanism else 'reference_params'}",
        )
    if bb.mechanism is not None:
        mechanism = _build(
            spec.path, bb.mechanism, bb.params, "blackbox.mechanism", "blackbox.params"
        )
        return BlackBoxTarget(bb.mechanism, as_sampler(mechanism), mechanism, reference, mechanism)
    file_path, attr = _split_callable_path(spec.path, bb.sampler, "blackbox.sampler")
    name = f"{file_path.name}:{attr}"
    sampler = _bind_sampler(
        spec, _load_callable(spec.path, bb.sampler, "blackbox.sampler"), bb.params, name
    )
    if reference is not None:
        public = _PublicParameters(reference.name, {**reference.params, **bb.params})
    else:
        public = _PublicParameters(name, dict(bb.params))
    return BlackBoxTarget(name, sampler, None, reference, public)


def _coefficient_features(eigenvalues, n_components: int | None) -> Callable:
    """Whitened KL coefficients ``x_k / sqrt(lambda_k)`` of a release given in KL coordinates."""
    import jax.numpy as jnp

    lam = jnp.asarray(eigenvalues)
    k = lam.shape[-1] if n_components is None else min(int(n_components), lam.shape[-1])
    scale = jnp.sqrt(lam[:k])
    width = int(lam.shape[-1])

    def features(x):
        x = jnp.reshape(x, (x.shape[0], -1))
        if x.shape[1] != width:
            raise ValueError(
                f"kl features: releases have {x.shape[1]} coordinates but the reference has "
                f"{width} KL coefficients; give a reference of the same release."
            )
        return x[:, :k] / scale

    features.description = f"KL coefficients (K = {k}, whitened)"
    return features


def blackbox_features(spec: AuditSpec, target: BlackBoxTarget, data) -> Callable | None:
    """The classifier features of a black-box spec (``None``: the release values).

    ``features = "kl"`` reads the Karhunen–Loève basis of the release from the
    reference (else the sampled catalogue mechanism) at ``data``: releases on a
    grid (:class:`~dpaudit.noise.GridNoise`) get :func:`dpaudit.blackbox.kl_features`,
    releases of KL coefficients (Gaussian-process / ICLP noise) are divided by
    ``sqrt(lambda_k)``; ``components`` keeps the first ``K``.

    Raises:
        SpecError: when the release has no Karhunen–Loève basis.
    """
    bb = spec.blackbox
    if bb is None or bb.features == "values":
        return None
    from dpaudit.blackbox import kl_features

    source = target.reference if target.reference is not None else target.mechanism
    try:
        release = source.release_distribution(data)
    except (TypeError, ValueError) as err:
        raise _fail(spec.path, "blackbox.features", f"cannot read the basis ({err}).") from None
    basis = getattr(release, "basis", None)
    if basis is not None and hasattr(basis, "eigenfunctions"):
        return kl_features(basis, bb.components)
    eigenvalues = getattr(release, "eigenvalues", None)
    if eigenvalues is not None:
        return _coefficient_features(eigenvalues, bb.components)
    raise _fail(
        spec.path,
        "blackbox.features",
        f"'kl' needs a functional release, but {source.name!r} releases "
        f"{type(release).__name__} (no Karhunen–Loève basis); use features = 'values'.",
    )


def load_pair(spec: AuditSpec, mechanism):
    """The neighbouring datasets ``(D, D')`` of a spec.

    ``mechanism`` is what a generator reads public parameters from: the
    :class:`~dpaudit.Mechanism`, or :attr:`BlackBoxTarget.public` of a black-box spec.
    """
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
