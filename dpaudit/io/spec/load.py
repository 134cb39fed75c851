"""Reading a spec file: TOML parsed and validated, table by table, into an :class:`AuditSpec`.

Everything is checked before anything runs: :func:`load_spec` raises
:class:`SpecError` with one line naming the file, the field and the allowed
values. User code is not executed here (see :mod:`dpaudit.io.spec.resolve`);
a ``file.py:callable`` is only checked to name an existing file and a Python name.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from dpaudit.blackbox import METHODS, OBJECTIVES, AutoPairs
from dpaudit.blackbox.options import STOPPING_RULES
from dpaudit.blackbox.statistics import classifier_option_problem
from dpaudit.io.datasets import generators
from dpaudit.io.spec.schema import (
    BLACKBOX_VERDICTS,
    CLASSIFIER_OPTIONS,
    DEFAULT_CONFIDENCE,
    DEFAULT_SAMPLES,
    FEATURES,
    NOTION_FIELDS,
    SECTIONS,
    TOP_LEVEL,
    TRAINING_CLAIMS,
    TRAINING_MODES,
    TRAINING_SCORES,
    TRAINING_VERDICTS,
    VERDICTS,
    AuditSpec,
    BlackBoxSpec,
    SpecError,
    TrainingSpec,
    field_error,
)
from dpaudit.model.adjacency import ADJACENCIES
from dpaudit.model.claims import Claim, GDPClaim, make_claim
from dpaudit.model.registry import entry

__all__ = [
    "SEED_LIMIT",
    "check_callable_path",
    "check_samples",
    "check_seed",
    "find_specs",
    "load_spec",
    "split_callable_path",
    "with_overrides",
]


# ------------------------------------------------------------------ field checks


def _table(path: Path, raw: Mapping, key: str, *, required: bool) -> dict:
    value = raw.get(key)
    if value is None:
        if required:
            raise field_error(path, key, f"missing [{key}] table.")
        return {}
    if not isinstance(value, dict):
        raise field_error(path, key, f"must be a table ([{key}]), got {type(value).__name__}.")
    unknown = set(value) - SECTIONS[key]
    if unknown:
        raise field_error(
            path,
            f"{key}.{sorted(unknown)[0]}",
            f"unknown field; allowed fields are {sorted(SECTIONS[key])}.",
        )
    return value


def _number(path, field, value, *, integer=False) -> float:
    # bool is an int in Python, but `samples = true` is a mistake, not the number 1
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        kind = "an integer" if integer else "a number"
        raise field_error(path, field, f"must be {kind}, got {value!r}.")
    return value


def _params(path: Path, field: str, value) -> dict:
    if not isinstance(value, dict):
        raise field_error(path, field, "must be a table of parameters.")
    return value


def _choice(path: Path, field: str, value, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise field_error(path, field, f"must be one of {allowed}, got {value!r}.")
    return value


def _catalogue_name(path: Path, field: str, value) -> str:
    if not isinstance(value, str):
        raise field_error(path, field, f"must be a catalogue name (a string), got {value!r}.")
    try:
        entry(value)
    except ValueError as err:
        raise field_error(path, field, str(err)) from None
    return value


def split_callable_path(spec_path: Path, ref: str, field: str) -> tuple[Path, str]:
    """Split ``"file.py:callable"`` into the file (relative to the spec's folder) and the name.

    Args:
        spec_path: the spec file; a relative file is read from its folder.
        ref: ``"file.py:callable"``.
        field: the spec field holding ``ref``, for the error message.

    Returns:
        ``(absolute file path, callable name)``.

    Raises:
        SpecError: when ``ref`` is not a string with a ``:``.
    """
    if not isinstance(ref, str) or ":" not in ref:
        raise field_error(spec_path, field, f"must look like 'file.py:callable', got {ref!r}.")
    file, _, attr = ref.rpartition(":")
    file_path = (spec_path.parent / file).resolve()
    return file_path, attr


def check_callable_path(spec_path: Path, ref: str, field: str = "mechanism.path") -> str:
    """Check that ``"file.py:callable"`` names an existing ``.py`` file and a Python name.

    The file is not imported (that happens in :func:`dpaudit.io.spec.load_callable`).

    Args:
        spec_path: the spec file; a relative file is read from its folder.
        ref: ``"file.py:callable"``.
        field: the spec field holding ``ref``, for the error message.

    Returns:
        ``"/absolute/file.py:callable"``.

    Raises:
        SpecError: when the file does not exist, is not ``.py``, or the name is
            not a Python identifier.
    """
    file_path, attr = split_callable_path(spec_path, ref, field)
    if file_path.suffix != ".py" or not file_path.is_file():
        raise field_error(spec_path, field, f"{file_path} is not an existing .py file.")
    if not attr.isidentifier():
        raise field_error(spec_path, field, f"{attr!r} is not a Python name.")
    return f"{file_path}:{attr}"


# ------------------------------------------------------------------ sections


def _read_toml(path: Path) -> dict:
    if not path.is_file():
        raise SpecError(f"{path}: no such spec file.")
    try:
        raw = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SpecError(f"{path}: not valid TOML ({err}).") from None
    unknown = set(raw) - TOP_LEVEL
    if unknown:
        raise field_error(
            path, sorted(unknown)[0], f"unknown field; allowed are {sorted(TOP_LEVEL)}."
        )
    return raw


class _Audited(NamedTuple):
    # the field names are those of AuditSpec, which takes the record as keywords
    mechanism: str | None
    params: dict


def _load_mechanism(path: Path, raw: Mapping, *, blackbox: bool) -> _Audited:
    """The ``[mechanism]`` table: (catalogue name or checked callable path, params).

    Required for a white-box spec; ``(None, {})`` for a black-box spec without one.
    """
    table = _table(path, raw, "mechanism", required=not blackbox)
    if "mechanism" not in raw and blackbox:
        return _Audited(None, {})
    if ("name" in table) == ("path" in table):
        raise field_error(
            path,
            "mechanism",
            "give exactly one of name (a catalogue name) or path ('file.py:callable').",
        )
    params = _params(path, "mechanism.params", table.get("params", {}))
    if "name" in table:
        return _Audited(_catalogue_name(path, "mechanism.name", table["name"]), params)
    return _Audited(check_callable_path(path, table["path"]), params)


_NOTION_NUMBERS = ("zcdp_rho", "gdp_mu", "anchor_delta")


def _load_notion_claim(path: Path, table: Mapping):
    """A zCDP / RDP / GDP claim (``dpaudit.model.claims``), one field error per bad value."""
    for key in _NOTION_NUMBERS:
        if key in table:
            _number(path, f"claim.{key}", table[key])
    for key in ("rdp_orders", "rdp_epsilons", "tradeoff_points", "tradeoff_values"):
        if key in table:
            values = table[key]
            values = values if isinstance(values, list) else [values]
            for v in values:
                _number(path, f"claim.{key}", v)
    try:
        return make_claim(**table)
    except (TypeError, ValueError) as err:
        field = next((k for k in table if k in str(err)), "claim")
        field = "claim" if field == "claim" else f"claim.{field}"
        raise field_error(path, field, str(err)) from None


def _load_claim(path: Path, raw: Mapping):
    table = _table(path, raw, "claim", required=True)
    if any(key in table for key in NOTION_FIELDS):
        return _load_notion_claim(path, table)
    if "epsilon" not in table:
        raise field_error(
            path,
            "claim.epsilon",
            "missing; the claim needs an epsilon > 0 (or zcdp_rho, gdp_mu, or rdp_orders "
            "with rdp_epsilons).",
        )
    epsilon = _number(path, "claim.epsilon", table["epsilon"])
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise field_error(path, "claim.epsilon", f"must be a finite number >= 0, got {epsilon!r}.")
    delta = _number(path, "claim.delta", table.get("delta", 0.0))
    if not 0 <= delta < 1:
        raise field_error(path, "claim.delta", f"must satisfy 0 <= delta < 1, got {delta!r}.")
    if epsilon == 0 and delta == 0:
        raise field_error(
            path, "claim.epsilon", "epsilon = 0 needs a delta > 0 (pure-delta claim)."
        )
    adjacency = table.get("adjacency", "replace-one")
    if adjacency not in ADJACENCIES:
        raise field_error(
            path, "claim.adjacency", f"must be one of {ADJACENCIES}, got {adjacency!r}."
        )
    return Claim(epsilon=epsilon, delta=delta, adjacency=adjacency)


class _Data(NamedTuple):
    # the field names are those of AuditSpec, which takes the record as keywords
    generator: str | None
    files: tuple[Path, ...] | None
    data_params: dict


def _load_data(path: Path, raw: Mapping) -> _Data:
    table = _table(path, raw, "data", required=True)
    if ("generator" in table) == ("files" in table):
        raise field_error(
            path, "data", "give exactly one of generator (a name) or files ([D, D'])."
        )
    params = _params(path, "data.params", table.get("params", {}))
    if "generator" in table:
        generator = table["generator"]
        if generator not in generators():
            raise field_error(
                path, "data.generator", f"unknown generator {generator!r}; one of {generators()}."
            )
        return _Data(generator, None, params)
    raw_files = table["files"]
    if not (isinstance(raw_files, list) and len(raw_files) == 2):
        raise field_error(path, "data.files", "must be a list of two files: [D, D_prime].")
    files = tuple((path.parent / f).resolve() for f in raw_files)
    for file in files:
        if file.suffix not in (".npy", ".npz"):
            raise field_error(path, "data.files", f"{file.name} must be a .npy or .npz file.")
        if not file.is_file():
            raise field_error(path, "data.files", f"{file} does not exist.")
    return _Data(None, files, params)


class _Budget(NamedTuple):
    # the field names are those of AuditSpec, which takes the record as keywords
    samples: int
    select_samples: int | None
    confidence: float
    seed: int


def _load_select_samples(path: Path, budget: Mapping, blackbox: BlackBoxSpec | None) -> int | None:
    if "select_samples" not in budget:
        return None
    if blackbox is None:
        raise field_error(
            path,
            "budget.select_samples",
            "only black-box specs (with a [blackbox] table) take select_samples.",
        )
    select_samples = _number(path, "budget.select_samples", budget["select_samples"], integer=True)
    # a classifier trains on one half of the selection releases and thresholds on the
    # other, so each half needs at least two; the model method uses them all at once
    least = 1 if blackbox.method == "model" else 4
    if select_samples < least:
        raise field_error(
            path,
            "budget.select_samples",
            f"must be >= {least} (a classifier trains on half and thresholds on the other "
            f"half), got {select_samples}.",
        )
    return int(select_samples)


#: Seeds are unsigned 63-bit integers: numpy and JAX convert a seed to a C long on
#: the way, so 2**63 and above overflow inside the audit instead of being refused here.
SEED_LIMIT = 2**63


def check_seed(path: Path, field: str, seed) -> int:
    """A seed: an integer in ``[0, 2**63)``.

    Args:
        path: the spec file (or the command line), for the message.
        field: the field at fault (``"budget.seed"`` or ``"--seed"``).
        seed: the value given.

    Returns:
        ``seed`` as an ``int``.

    Raises:
        SpecError: when ``seed`` is not an integer in ``[0, 2**63)``.
    """
    seed = _number(path, field, seed, integer=True)
    if not 0 <= seed < SEED_LIMIT:
        raise field_error(path, field, f"must be an integer in [0, 2**63), got {seed}.")
    return int(seed)


def check_samples(path: Path, field: str, samples, *, blackbox: bool) -> int:
    """A sample budget: an integer >= 2 (white-box) or >= 1 (black-box).

    Args:
        path: the spec file (or the command line), for the message.
        field: the field at fault (``"budget.samples"`` or ``"--samples"``).
        samples: the value given.
        blackbox: whether the spec is black-box.

    Returns:
        ``samples`` as an ``int``.

    Raises:
        SpecError: when ``samples`` is not an integer or is below the least allowed.
    """
    samples = _number(path, field, samples, integer=True)
    # the white-box engine estimates from at least two releases per direction
    # (a variance needs two); a black-box certification can count one
    least = 1 if blackbox else 2
    if samples < least:
        raise field_error(path, field, f"must be >= {least}, got {samples}.")
    return int(samples)


def _load_budget(path: Path, raw: Mapping, blackbox: BlackBoxSpec | None) -> _Budget:
    budget = _table(path, raw, "budget", required=False)
    samples = check_samples(
        path,
        "budget.samples",
        budget.get("samples", DEFAULT_SAMPLES),
        blackbox=blackbox is not None,
    )
    select_samples = _load_select_samples(path, budget, blackbox)
    confidence = _number(path, "budget.confidence", budget.get("confidence", DEFAULT_CONFIDENCE))
    if not 0 < confidence < 1:
        raise field_error(path, "budget.confidence", f"must lie in (0, 1), got {confidence!r}.")
    seed = check_seed(path, "budget.seed", budget.get("seed", 0))
    return _Budget(samples, select_samples, float(confidence), seed)


def _load_expected(path: Path, raw: Mapping, blackbox: BlackBoxSpec | None) -> str | None:
    expected = raw.get("expected")
    allowed = VERDICTS if blackbox is None else BLACKBOX_VERDICTS
    if expected is not None and expected not in allowed:
        why = "" if blackbox is None else " (a black-box audit never certifies a pass)"
        raise field_error(path, "expected", f"must be one of {allowed}{why}, got {expected!r}.")
    return expected


def _load_name(path: Path, raw: Mapping) -> str:
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise field_error(path, "name", "must be a non-empty string.")
    return name


# ------------------------------------------------------------------ [blackbox]


def _blackbox_target(path: Path, table: Mapping) -> tuple[str | None, str | None, dict]:
    """What is sampled: ``(sampler, catalogue mechanism, params)``, exactly one of the two set."""
    if ("sampler" in table) == ("mechanism" in table):
        raise field_error(
            path,
            "blackbox",
            "give exactly one of sampler ('file.py:callable', a plain sampler (data, n, key) -> "
            "releases) or mechanism (a catalogue name sampled as a black box).",
        )
    params = _params(path, "blackbox.params", table.get("params", {}))
    if "sampler" in table:
        return check_callable_path(path, table["sampler"], "blackbox.sampler"), None, params
    return None, _catalogue_name(path, "blackbox.mechanism", table["mechanism"]), params


def _blackbox_reference(
    path: Path, table: Mapping, declared: str | None, declared_params: Mapping
) -> tuple[str | None, Mapping]:
    """The reference model: ``blackbox.reference``, else the ``[mechanism]`` table, else none."""
    if "reference_params" in table and "reference" not in table:
        raise field_error(path, "blackbox.reference_params", "given without blackbox.reference.")
    if "reference" not in table:
        return (declared, declared_params) if declared is not None else (None, {})
    if declared is not None:
        raise field_error(
            path,
            "blackbox.reference",
            "the [mechanism] table already declares the reference model; give only one.",
        )
    ref = table["reference"]
    if isinstance(ref, str) and ":" in ref:
        reference = check_callable_path(path, ref, "blackbox.reference")
    else:
        reference = _catalogue_name(path, "blackbox.reference", ref)
    return reference, _params(path, "blackbox.reference_params", table.get("reference_params", {}))


def _blackbox_method(path: Path, table: Mapping, reference: str | None) -> str:
    method = _choice(path, "blackbox.method", table.get("method", "auto"), METHODS)
    if method == "auto":
        method = "model" if reference is not None else "logistic"
    if method == "model" and reference is None:
        raise field_error(
            path,
            "blackbox.method",
            "'model' needs a reference model: give blackbox.reference (a catalogue name or "
            "'file.py:callable') or a [mechanism] table.",
        )
    return method


def _blackbox_features(
    path: Path, table: Mapping, *, classifier: bool, has_basis: bool
) -> tuple[str, int | None]:
    """``(features, components)``; ``has_basis``: a reference or catalogue model gives a KL basis."""
    features = _choice(path, "blackbox.features", table.get("features", "values"), FEATURES)
    if "features" in table and not classifier:
        raise field_error(
            path,
            "blackbox.features",
            "features are for the classifier methods (set method = 'logistic' or 'mlp'); "
            "method 'model' thresholds the reference's privacy loss.",
        )
    if features == "kl" and not has_basis:
        raise field_error(
            path,
            "blackbox.features",
            "'kl' needs a Karhunen–Loève basis, read from the reference or the black-box "
            "mechanism; give blackbox.reference (a model of the release) or use 'values'.",
        )
    components = table.get("components")
    if components is None:
        return features, None
    if features != "kl":
        raise field_error(path, "blackbox.components", "only used with features = 'kl'.")
    components = _number(path, "blackbox.components", components, integer=True)
    if components < 1:
        raise field_error(path, "blackbox.components", f"must be >= 1, got {components}.")
    return features, int(components)


def _check_classifier_option(path: Path, key: str, value) -> None:
    field = f"blackbox.classifier_options.{key}"
    if key not in CLASSIFIER_OPTIONS:
        raise field_error(path, field, f"unknown option; known are {list(CLASSIFIER_OPTIONS)}.")
    # the same check as the Python API's ClassifierOptions (one rule, one reason)
    problem = classifier_option_problem(key, value)
    if problem is not None:
        raise field_error(path, field, problem)


def _blackbox_classifier_options(path: Path, table: Mapping, *, classifier: bool) -> dict:
    options = _params(path, "blackbox.classifier_options", table.get("classifier_options", {}))
    if options and not classifier:
        raise field_error(
            path, "blackbox.classifier_options", "only used with method = 'logistic' or 'mlp'."
        )
    for key, value in options.items():
        _check_classifier_option(path, key, value)
    return options


#: The keys of an inline ``pairs = { ... }`` table (the fields of ``AutoPairs``).
_PAIRS_KEYS = ("kind", "domain", "labels", "index")


def _blackbox_pairs(path: Path, table: Mapping) -> dict | None:
    """``pairs = "auto"`` -> ``{}``; an inline table -> checked ``AutoPairs`` keyword arguments."""
    if "pairs" not in table:
        return None
    value = table["pairs"]
    if value == "auto":
        return {}
    if not isinstance(value, Mapping):
        raise field_error(
            path,
            "blackbox.pairs",
            f"must be 'auto' or a table {{ kind = ..., domain = [lo, hi] }}, got {value!r}.",
        )
    unknown = sorted(set(value) - set(_PAIRS_KEYS))
    if unknown:
        raise field_error(
            path, f"blackbox.pairs.{unknown[0]}", f"unknown key; allowed are {list(_PAIRS_KEYS)}."
        )
    options = dict(value)
    for key in ("domain", "labels"):
        if isinstance(options.get(key), list):
            options[key] = tuple(options[key])
    try:
        AutoPairs(**options)
    except (TypeError, ValueError) as err:
        raise field_error(path, "blackbox.pairs", str(err)) from None
    return options


def _load_blackbox(
    path: Path, table: Mapping, declared: str | None, declared_params: Mapping
) -> BlackBoxSpec:
    """Validate a ``[blackbox]`` table; ``declared`` is the ``[mechanism]`` (the reference)."""
    sampler, mechanism, params = _blackbox_target(path, table)
    reference, reference_params = _blackbox_reference(path, table, declared, declared_params)
    method = _blackbox_method(path, table, reference)
    classifier = method in ("logistic", "mlp", "bits")
    features, components = _blackbox_features(
        path,
        table,
        classifier=classifier,
        has_basis=reference is not None or mechanism is not None,
    )
    objective = _choice(path, "blackbox.objective", table.get("objective", "auto"), OBJECTIVES)
    options = _blackbox_classifier_options(path, table, classifier=classifier)
    stopping = _choice(path, "blackbox.stopping", table.get("stopping", "fixed"), STOPPING_RULES)
    return BlackBoxSpec(
        sampler=sampler,
        mechanism=mechanism,
        params=params,
        method=method,
        reference=reference,
        reference_params=reference_params,
        features=features,
        components=components,
        objective=objective,
        stopping=stopping,
        classifier_options=options,
        reference_in_mechanism=reference is not None and "reference" not in table,
        pairs=_blackbox_pairs(path, table),
        offers_float=table.get("method", "auto") == "auto" and reference is None,
    )


# ------------------------------------------------------------------ [training]


def _load_training(path: Path, raw: Mapping) -> TrainingSpec:
    """The ``[training]`` table; a training spec has neither ``[mechanism]`` nor ``[blackbox]``,
    nor ``[data]`` (its target brings the data), nor ``budget.samples`` (``training.runs``)."""
    table = _table(path, raw, "training", required=True)
    for other in ("mechanism", "blackbox", "data"):
        if other in raw:
            raise field_error(path, other, "a [training] spec takes no such table; remove it.")
    if "samples" in _table(path, raw, "budget", required=False):
        raise field_error(path, "budget.samples", "a training spec counts training.runs instead.")
    if "train" not in table:
        raise field_error(path, "training.train", "missing; give 'file.py:callable'.")
    runs = _number(path, "training.runs", table.get("runs", 200), integer=True)
    if runs < 8 or runs % 2:
        raise field_error(path, "training.runs", f"must be an even integer >= 8, got {runs}.")
    coordinate = _number(path, "training.coordinate", table.get("coordinate", 0), integer=True)
    if coordinate < 0:
        raise field_error(path, "training.coordinate", f"must be >= 0, got {coordinate}.")
    norm = _number(path, "training.norm", table.get("norm", 1.0))
    if not (math.isfinite(norm) and norm > 0):
        raise field_error(path, "training.norm", f"must be a finite number > 0, got {norm!r}.")
    fraction = _number(path, "training.select_fraction", table.get("select_fraction", 0.25))
    if not 0 <= fraction < 1:
        raise field_error(
            path,
            "training.select_fraction",
            f"must lie in [0, 1) (0: Bonferroni over all thresholds), got {fraction}.",
        )
    return TrainingSpec(
        train=check_callable_path(path, table["train"], "training.train"),
        params=_params(path, "training.params", table.get("params", {})),
        coordinate=coordinate,
        norm=float(norm),
        score=_choice(path, "training.score", table.get("score", "sum"), TRAINING_SCORES),
        runs=runs,
        select_fraction=float(fraction),
        claim=_choice(path, "training.claim", table.get("claim", "point"), TRAINING_CLAIMS),
        **_one_run_fields(path, table),
    )


def _one_run_fields(path: Path, table: Mapping) -> dict:
    """``mode`` and, for ``mode = "one-run"``, the canary count and the guesses (checked)."""
    mode = _choice(path, "training.mode", table.get("mode", "many-run"), TRAINING_MODES)
    one_run = ("canaries", "guesses_in", "guesses_out")
    if mode == "many-run":
        for key in one_run:
            if key in table:
                raise field_error(path, f"training.{key}", "is for mode = 'one-run'; remove it.")
        return {"mode": mode}
    for key in ("runs", "select_fraction", "coordinate"):
        if key in table:
            raise field_error(path, f"training.{key}", "a one-run audit trains once; remove it.")
    if table.get("score") == "last":
        raise field_error(path, "training.score", "a one-run audit sums: use 'sum' or 'llr'.")
    if "canaries" not in table:
        raise field_error(path, "training.canaries", "missing; a one-run audit needs it.")
    m = _number(path, "training.canaries", table["canaries"], integer=True)
    if m < 1:
        raise field_error(path, "training.canaries", f"must be an integer >= 1, got {m}.")
    k_in = _number(path, "training.guesses_in", table.get("guesses_in", m // 10), integer=True)
    k_out = _number(path, "training.guesses_out", table.get("guesses_out", k_in), integer=True)
    if min(k_in, k_out) < 0 or not 1 <= k_in + k_out <= m:
        raise field_error(
            path,
            "training.guesses_in",
            f"guesses_in + guesses_out must lie in [1, canaries = {m}], got {k_in + k_out}.",
        )
    return {"mode": mode, "canaries": m, "guesses_in": k_in, "guesses_out": k_out}


def _load_training_spec(path: Path, raw: Mapping) -> AuditSpec:
    """A spec with a ``[training]`` table (:func:`load_spec`)."""
    training = _load_training(path, raw)
    claim = _load_claim(path, raw)
    if not isinstance(claim, Claim | GDPClaim):
        raise field_error(path, "claim", "a training audit takes (epsilon, delta) or gdp_mu.")
    if training.mode == "one-run" and not isinstance(claim, Claim):
        raise field_error(path, "claim", "a one-run training audit takes (epsilon, delta).")
    runs = 1 if training.mode == "one-run" else training.runs
    budget = _load_budget(path, raw, None)._replace(samples=runs)
    expected = raw.get("expected")
    if expected is not None and expected not in TRAINING_VERDICTS:
        raise field_error(
            path,
            "expected",
            f"must be one of {TRAINING_VERDICTS} (a training audit never certifies a pass), "
            f"got {expected!r}.",
        )
    return AuditSpec(
        name=_load_name(path, raw),
        path=path,
        description=str(raw.get("description", "")),
        claim=claim,
        expected=expected,
        mechanism=training.train,
        params=training.params,
        generator=None,
        files=None,
        data_params={},
        training=training,
        **budget._asdict(),  # samples (the runs), select_samples, confidence, seed
    )


# ------------------------------------------------------------------ the spec


def load_spec(path: str | Path) -> AuditSpec:
    """Read and validate one spec file (white-box, or black-box with a ``[blackbox]`` table).

    Args:
        path: the ``.toml`` spec file (format in ``audits/README.md``).

    Returns:
        The validated :class:`AuditSpec`; relative files in it are resolved
        against the spec's folder.

    Raises:
        SpecError: for a missing file, bad TOML, an unknown field, a missing
            claim, epsilon <= 0, an unknown mechanism or generator, a missing
            data file, a callable that does not exist, or a black-box field
            outside its allowed values (see ``audits/README.md``).
    """
    path = Path(path)
    raw = _read_toml(path)
    if "training" in raw:
        return _load_training_spec(path, raw)
    # the tables are checked in the order of the file format; the first error is reported
    blackbox_raw = _table(path, raw, "blackbox", required=False) if "blackbox" in raw else None
    audited = _load_mechanism(path, raw, blackbox=blackbox_raw is not None)
    claim = _load_claim(path, raw)
    data = _load_data(path, raw)
    blackbox = None
    if blackbox_raw is not None:
        blackbox = _load_blackbox(path, blackbox_raw, *audited)
        if audited.mechanism is None:  # no [mechanism] table: the spec audits what it samples
            audited = _Audited(blackbox.sampler or blackbox.mechanism, blackbox.params)
    if blackbox is None and getattr(claim, "epsilon", None) == 0:
        raise field_error(
            path, "claim.epsilon", "epsilon = 0 (a pure-delta claim) is audited black-box only: "
            "add a [blackbox] table.",
        )  # fmt: skip
    budget = _load_budget(path, raw, blackbox)
    expected = _load_expected(path, raw, blackbox)
    return AuditSpec(
        name=_load_name(path, raw),
        path=path,
        description=str(raw.get("description", "")),
        claim=claim,
        expected=expected,
        blackbox=blackbox,
        **audited._asdict(),  # mechanism, params
        **data._asdict(),  # generator, files, data_params
        **budget._asdict(),  # samples, select_samples, confidence, seed
    )


def with_overrides(spec: AuditSpec, seed=None, samples=None) -> AuditSpec:
    """The spec with the command line's ``--seed`` / ``--samples`` applied, validated.

    Args:
        spec: a validated spec.
        seed: the new seed, or ``None`` to keep the spec's.
        samples: the new sample budget, or ``None`` to keep the spec's.

    Returns:
        The updated spec.

    Raises:
        SpecError: naming ``--seed`` or ``--samples`` when the value is out of range.
    """
    changes = {}
    if seed is not None:
        changes["seed"] = check_seed(spec.path, "--seed", seed)
    if samples is not None and spec.training is not None:
        if not (isinstance(samples, int) and samples >= 8 and samples % 2 == 0):
            raise SpecError(
                f"--samples: a training spec's runs must be even and >= 8, got {samples}."
            )
        changes["samples"] = samples
    elif samples is not None:
        changes["samples"] = check_samples(
            spec.path, "--samples", samples, blackbox=spec.blackbox is not None
        )
    return dataclasses.replace(spec, **changes)


def find_specs(target: str | Path) -> list[Path]:
    """The spec files of ``target``: the file itself, or every ``*.toml`` under a folder.

    Args:
        target: a spec file or a folder (searched recursively, sorted).

    Returns:
        The spec paths.

    Raises:
        SpecError: when ``target`` does not exist, or a folder holds no ``*.toml``.
    """
    target = Path(target)
    if target.is_file():
        return [target]
    if target.is_dir():
        specs = sorted(target.rglob("*.toml"))
        if not specs:
            raise SpecError(f"{target}: no *.toml audit specs in this folder.")
        return specs
    raise SpecError(f"{target}: no such file or folder.")
