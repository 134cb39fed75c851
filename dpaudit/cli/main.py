"""Command-line entry point ``dpaudit``.

Commands:

* ``dpaudit audit TARGET... [-k EXPR] [-q] [-v] [--json FILE|-] [--report DIR]
  [--junitxml FILE] [--write-regression-test FILE] [--seed N] [--samples N]
  [--confidence C] [--suite-confidence C] [--strict]`` validates every target
  first, then audits each; under each unexpected verdict it prints its one-line
  reason, and ``--write-regression-test`` writes a pytest per unexpected verdict
  (:mod:`dpaudit.cli.regression`, :func:`assert_fixed`). The run's false-alarm level is ``1 - --suite-confidence``
  (default 0.05): Holm's correction over its audits reports a violation it does
  not keep as borderline (inconclusive), and a line says so. A target is a ``.toml`` spec, a folder of
  specs (searched recursively), or ``FILE.py:CALLABLE``: a user's mechanism
  (a :class:`~dpaudit.Mechanism` or a builder returning one) audited against
  its own claim unless ``--epsilon``/``--delta``/``--adjacency`` replace part of
  it (the output then says which claim was audited), or with ``--blackbox`` a
  plain sampler ``(data, n, key) -> releases`` audited from its samples.
* ``dpaudit validate TARGET...`` builds every mechanism, sampler and dataset
  pair and runs each model once, without auditing.
* ``dpaudit list [--faulty | --all]`` shows the catalogue.
* ``dpaudit info [TARGET]`` shows the version and the JAX configuration, and
  with specs their kind (white-box / black-box), what they audit and how.
* ``dpaudit run`` and ``dpaudit check`` are the former names of ``audit`` and
  ``validate`` (``check FILE.py:CALLABLE`` audits the callable), kept for one
  release with their former output: everything on stderr.

Output: results (one line per audit, the table, the closing counts line
``"3 as expected, 1 unexpected (1 missed violation) in 12.1s"``) go to stdout;
progress and log lines to stderr. Output that is not a terminal is plain text,
never truncated. A reader that closes the pipe early (``| head -1``) costs nothing:
the rest of the output is dropped (:class:`ClosedPipeSafe`) and every file is written. ``--json -`` writes the JSON document to stdout (the table
then goes to stderr).

Exit codes:

* **0** — every audit finished and every verdict is acceptable: no violation
  or incompatibility except where the spec's ``expected`` says so, and every
  ``expected`` verdict met.
* **1** — every audit finished, and one found an unexpected violation or
  incompatibility, or missed its expected verdict (with ``--strict``, an
  inconclusive verdict also counts).
* **2** — invalid input (a bad spec, a missing file, a missing or malformed
  data file, datasets that are not neighbours, a ``--report`` path that is not
  a previous dpaudit report, a ``--json`` path that cannot be written, ``-k``
  selecting nothing); found before any audit runs where possible, and nothing
  is written.
* **3** — an internal error: a builder, sampler or audit
  that crashed (a sampler or model raising any exception mid-audit, even a
  ``ValueError``, is a crash in the mechanism, named with the audit), a user's
  ``sys.exit`` inside a mechanism or sampler file, a full disk, a report that
  could not be drawn. No verdict is reported and nothing partial is published.
* **130** — interrupted (Ctrl-C, ``SIGINT``): no verdict, nothing partial is
  published, the report's staging folder is removed; run as the ``dpaudit``
  program, the process then ends without the interpreter's shutdown (which has
  crashed natively with XLA's threads mid-computation: exit 139).

Errors are one sentence on stderr; ``-v``/``--verbose`` adds the traceback.
A black-box audit's verdict is ``violation`` or ``inconclusive``.

JAX compilation cache (:mod:`dpaudit.core.compilation_cache`): ``audit``, ``run``,
``check`` and ``validate`` keep compiled XLA programs in ``--cache-dir`` (default
``$DPAUDIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/dpaudit/jax`` or
``~/.cache/dpaudit/jax``), so a second run skips most compilation; ``--no-cache``,
``--cache-dir none`` or ``DPAUDIT_CACHE=0`` turn it off. A folder that cannot be
written gives one warning line and the run continues uncached. Nothing here
imports JAX before a command needs it, so ``--help`` and ``--version`` answer at once.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import dataclasses
import errno
import json
import os
import re
import sys
import tempfile
import threading
import time
import tomllib
import traceback
import warnings
from pathlib import Path

import dpaudit
from dpaudit.core import compilation_cache
from dpaudit.core.errors import UserCodeError, WorkerDied
from dpaudit.core.memory import release_memory

__all__ = [
    "BAD_VERDICTS",
    "EXIT_ERROR",
    "EXIT_FOUND",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "AuditCrash",
    "ClosedPipeSafe",
    "PreparedAudit",
    "assert_fixed",
    "audit_targets",
    "build_parser",
    "check",
    "closing_line",
    "info",
    "list_catalogue",
    "main",
    "matches",
    "prepare",
    "run",
    "run_audit",
    "validate",
]

EXIT_OK, EXIT_FOUND, EXIT_INVALID, EXIT_ERROR = 0, 1, 2, 3
#: Exit code of an interrupted run (128 + SIGINT, as shells report Ctrl-C).
EXIT_INTERRUPTED = 130
#: Default ``--suite-confidence``: a run of correct, exactly tight mechanisms shows a
#: violation with probability at most 5 % (Holm's correction, :mod:`dpaudit.estimation.significance`).
SUITE_CONFIDENCE = 0.95
#: Verdicts that fail a run unless the spec expects them.
BAD_VERDICTS = ("violation", "incompatible")
#: Releases per direction of a ``FILE.py:CALLABLE`` audit without ``--samples``
#: (a spec's default is larger; a one-off audit from the command line answers sooner).
CALLABLE_SAMPLES = 100_000


class AuditCrash(RuntimeError):
    """An audit, builder or report that crashed: no verdict (exit :data:`EXIT_ERROR`).

    The message is one sentence naming the spec and the error; the original
    exception is chained (``__cause__``) and shown with ``--verbose``.
    """


def _first_line(err: BaseException) -> str:
    """``TypeName: first line of the message`` of an exception."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def _spec_error(message: str):
    from dpaudit.io.spec import SpecError

    return SpecError(message)


def _with_claim(mechanism, claim):
    """The mechanism with the spec's claim: its notion, parameters and adjacency (sensitivity kept)."""
    from dpaudit.model.claims import is_notion_claim

    base = mechanism.claim
    if is_notion_claim(claim) or is_notion_claim(base):  # dpaudit.model.claims: rebuild the claim
        merged = dataclasses.replace(
            claim, sensitivity_norm=base.sensitivity_norm, sensitivity=base.sensitivity
        )
        return dataclasses.replace(mechanism, claim=merged)
    merged = dataclasses.replace(
        mechanism.claim, epsilon=claim.epsilon, delta=claim.delta, adjacency=claim.adjacency
    )
    return dataclasses.replace(mechanism, claim=merged)


def _worst_pair(spec, mechanism, pair, domain, claim_note: str):
    """``--pairs worst``: the worst neighbour of the pair's first dataset, and a note saying so."""
    from dpaudit.testing.worst_pair import worst_pair
    from dpaudit.whitebox.scope import scope_text

    try:
        chosen, name, scope = worst_pair(mechanism, pair[0], pair[1], domain)
    except ValueError as err:
        raise _spec_error(f"{spec.path}: {err}") from None
    note = (
        f"pair: --pairs worst chose {name!r} around the given first dataset "
        f"(records in [{domain[0]:g}, {domain[1]:g}]): {scope_text(scope)}."
    )
    return chosen, " ".join(t for t in (claim_note, note) if t)


def _worst_domain(ref: str, args, mechanism):
    """The data bound of ``--pairs worst``: ``--domain``, else the mechanism's record space."""
    from dpaudit.testing.record_spaces import Box, record_space_of

    if getattr(args, "pairs", None) != "worst":
        return None
    if mechanism.claim.sensitivity is None:
        raise _spec_error(
            f"{ref}: --pairs worst needs the sensitivity the mechanism declares (its claim's "
            f"sensitivity and sensitivity_norm); {mechanism.name!r} declares none: give the "
            "pair with --data or --generator instead."
        )
    if args.domain is not None:
        return tuple(args.domain)
    space = record_space_of(mechanism)
    if isinstance(space, Box):
        return (space.low, space.high)
    raise _spec_error(
        f"{ref}: --pairs worst needs the records' data bound: give --domain LO HI, or declare "
        "it in the mechanism (params={'record_space': dpaudit.testing.Box(low, high)})."
    )


def _failed(outcome, strict: bool) -> bool:
    verdict = outcome.result.verdict
    if outcome.expected is not None:
        return verdict != outcome.expected
    return verdict in BAD_VERDICTS or (strict and verdict == "inconclusive")


# ------------------------------------------------------------------ preparing and running


@dataclasses.dataclass(frozen=True)
class PreparedAudit:
    """A validated spec with everything built: mechanism or black-box target, and (D, D').

    Attributes:
        spec: the validated spec (``--seed`` / ``--samples`` applied).
        mechanism: white-box: the :class:`~dpaudit.Mechanism` with the spec's
            claim applied; black-box: ``None``.
        target: black-box: the :class:`~dpaudit.io.spec.BlackBoxTarget`; white-box: ``None``.
        features: black-box: the classifier features, or ``None`` for the release values.
        pair: the neighbouring datasets ``(D, D')``.
        claim_note: for a ``FILE.py:CALLABLE`` target, which claim is audited
            and where it comes from; empty for a spec.
        force: run even beyond the estimated-cost limits (``--force``).
    """

    spec: object
    mechanism: object = None
    target: object = None
    features: object = None
    pair: tuple = ()
    claim_note: str = ""
    force: bool = False


def _prepare_one(path, seed: int | None, samples: int | None, draw: bool = True) -> PreparedAudit:
    """One spec prepared; a builder, sampler or generator that crashes is an :class:`AuditCrash`.

    ``draw=False`` (``dpaudit validate``): the model is traced, not run (no XLA program).
    Constant distribution parameters are checked in numpy (:mod:`dpaudit.model.parameter_checks`).
    """
    from dpaudit.io.spec import load_spec, with_overrides
    from dpaudit.model.parameter_checks import host_parameter_checks

    with host_parameter_checks():
        return _guarded(
            path, lambda: _build_spec(with_overrides(load_spec(path), seed, samples), draw=draw)
        )


def _guarded(where, build, what: str = "the audit"):
    """``build()``; invalid input passes through, any other failure is an :class:`AuditCrash`."""
    try:
        return build()
    except (ValueError, TypeError):  # invalid input (SpecError included), already one sentence
        raise
    except Exception as err:  # RuntimeError, KeyError, ... in user code: not the input's fault
        raise AuditCrash(f"{where}: building {what} crashed ({_first_line(err)}).") from err


def _build_spec(
    spec, mechanism=None, claim_note: str = "", worst=None, draw: bool = True
) -> PreparedAudit:
    """Build a loaded spec's mechanism or target and its datasets, and run each once.

    ``mechanism``: the white-box mechanism when the caller built it already. ``worst``:
    ``(lo, hi)`` of ``--pairs worst``, which replaces the pair by the neighbour of its
    first dataset whose summary moves most (:func:`dpaudit.testing.worst_pair.worst_pair`).
    ``draw=False``: a white-box model, or a catalogue mechanism sampled as a black box, is
    traced abstractly instead of run (``validate``).
    """
    from dpaudit.io.spec import (
        blackbox_features,
        check_model_runs,
        check_model_traces,
        check_pair_differs,
        check_sampler_runs,
        check_sampler_traces,
        load_pair,
        resolve_blackbox,
        resolve_mechanism,
    )
    from dpaudit.model.adjacency import check_adjacent

    if spec.training is not None:  # a training pipeline: its target brings the data
        from dpaudit.io.spec import resolve_training

        return PreparedAudit(spec, target=resolve_training(spec))
    if spec.blackbox is None:
        built = mechanism if mechanism is not None else resolve_mechanism(spec)
        mechanism, target = _with_claim(built, spec.claim), None
        pair = load_pair(spec, mechanism)
        if worst is not None:
            pair, claim_note = _worst_pair(spec, mechanism, pair, worst, claim_note)
    else:
        mechanism, target = None, resolve_blackbox(spec)
        pair = load_pair(spec, target.public)
    check_pair_differs(spec, pair)
    try:
        check_adjacent(pair[0], pair[1], spec.claim.adjacency)
    except ValueError as err:
        raise _spec_error(f"{spec.path}: data: {err}") from None
    if mechanism is not None:
        (check_model_runs if draw else check_model_traces)(spec.path, mechanism, pair)
    features = None if target is None else blackbox_features(spec, target, pair[0], not draw)
    if target is not None and target.mechanism is not None and not draw:
        check_sampler_traces(spec, target.mechanism, features, pair)  # validate: no program
    elif target is not None:
        check_sampler_runs(spec, target.sampler, features, pair)
    return PreparedAudit(spec, mechanism, target, features, tuple(pair), claim_note)


def prepare(paths, seed: int | None = None, samples: int | None = None) -> list[PreparedAudit]:
    """Validate every spec, build every mechanism, sampler and dataset pair before auditing.

    Args:
        paths: spec files (see :func:`dpaudit.io.spec.find_specs`).
        seed: overrides every spec's seed, or ``None``.
        samples: overrides every spec's sample budget, or ``None``.

    Returns:
        One :class:`PreparedAudit` per spec, in order.

    Raises:
        SpecError: for an invalid spec, datasets that are not neighbours, or
            two specs with the same name.
    """
    prepared = [_prepare_one(path, seed, samples) for path in paths]
    _check_unique(prepared)
    return prepared


def _check_unique(prepared) -> None:
    names = [p.spec.name for p in prepared]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise _spec_error(f"two specs share the name {duplicates[0]!r}; names must be unique.")


def run_audit(item: PreparedAudit):
    """Run one prepared audit (white-box engine, or black-box from samples).

    Args:
        item: a spec prepared by :func:`prepare`.

    Returns:
        The :class:`~dpaudit.AuditResult` (white-box) or
        :class:`~dpaudit.BlackBoxResult` (black-box).
    """
    if item.spec.training is not None:
        from dpaudit.io.spec import run_training

        return run_training(item.spec, item.target)
    spec, (data, data_prime) = item.spec, item.pair
    # the spec's budget, the same for both routes; a CLI run draws no progress bar
    budget = {
        "samples": spec.samples,
        "seed": spec.seed,
        "confidence": spec.confidence,
        "progress": False,
        "force": item.force,
    }
    if item.target is None:
        return dpaudit.audit(item.mechanism, data, data_prime, **budget)
    bb = spec.blackbox
    pairs = None if bb.pairs is None else dpaudit.blackbox.AutoPairs(**bb.pairs)
    return dpaudit.blackbox_audit(
        item.target.sampler,
        data,
        None if pairs is not None else data_prime,  # auto: candidates around D
        spec.claim,
        pairs=pairs,
        reference=item.target.reference,
        statistic="auto" if bb.offers_float else bb.method,  # auto: float arm if it fits
        features=item.features,
        select_samples=spec.select_samples,
        objective=bb.objective,
        stopping=bb.stopping,
        classifier_options=dict(bb.classifier_options) or None,
        name=item.target.name,
        **budget,
    )


def _run_checked(item: PreparedAudit):
    """:func:`run_audit`, any failure turned into a :class:`SpecError` (no verdict, no report)."""
    try:
        return run_audit(item)
    except UserCodeError as err:  # a sampler or model raised mid-audit: a crash, not bad input
        raise AuditCrash(
            f"{item.spec.path}: the audit crashed in the mechanism ({_first_line(err)}); no "
            "report was written."
        ) from err
    except (TypeError, ValueError) as err:
        raise _spec_error(f"{item.spec.path}: audit failed: {err}") from None
    except MemoryError as err:
        raise AuditCrash(
            f"{item.spec.path}: the audit ran out of memory; no report was written. Lower "
            "[budget].samples."
        ) from err
    except Exception as err:  # a crash is no verdict: stop, write nothing
        raise AuditCrash(
            f"{item.spec.path}: the audit crashed ({_first_line(err)}); no report was written."
        ) from err


def _outcome(item: PreparedAudit, result):
    from dpaudit.io.report import AuditOutcome

    spec = item.spec
    description = " ".join(t for t in (spec.description, item.claim_note) if t)
    return AuditOutcome(
        name=spec.name,
        result=result,
        expected=spec.expected,
        spec=str(spec.path),
        mechanism=item.mechanism
        if item.target is None
        else getattr(item.target, "mechanism", None),
        data=item.pair,
        description=description,
    )


# ------------------------------------------------------------------ FILE.py:CALLABLE targets


def _is_callable_ref(target: str) -> bool:
    """``FILE.py:CALLABLE`` (a spec or a folder has no ``.py:`` in it)."""
    file, sep, _ = target.rpartition(":")
    return bool(sep) and file.endswith(".py")


def _check_target(target: str) -> None:
    """A missing file or a malformed target is "no such file", never read as a callable."""
    if _is_callable_ref(target):
        file, _, attr = target.rpartition(":")
        if not Path(file).is_file():
            raise _spec_error(f"{file}: no such file.")
        if not attr.isidentifier():
            raise _spec_error(f"{target}: {attr!r} after the ':' is not a Python name.")
    elif target.endswith(".py"):
        raise _spec_error(
            f"{target}: name the callable to audit as {target}:NAME (a Mechanism, a builder "
            "returning one, or with --blackbox a sampler)."
        )
    elif not Path(target).exists():
        raise _spec_error(f"{target}: no such file or folder.")


def _value(text: str):
    """A ``KEY=VALUE`` option's value: a TOML value (``3``, ``0.5``, ``true``, ``[1, 2]``), else a string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _pairs(option: str, items) -> dict:
    """``["n=20", "tau=0.5"]`` as ``{"n": 20, "tau": 0.5}``."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip().isidentifier():
            raise _spec_error(f"{option} {item!r}: write KEY=VALUE, for example {option} n=20.")
        out[key.strip()] = _value(value.strip())
    return out


def _toml(value) -> str:
    """``value`` (str, bool, number, list, dict) as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int | float):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"


def _toml_document(tables: dict) -> str:
    lines = []
    for name, table in tables.items():
        if isinstance(table, dict):
            lines.append(f"[{name}]")
            lines += [f"{key} = {_toml(v)}" for key, v in table.items() if v is not None]
        else:
            lines.insert(0, f"{name} = {_toml(table)}")
    return "\n".join(lines) + "\n"


#: Spec fields of a command-line audit and the options that set them (for error messages).
# The audit durations of the last parallel run (beside the compilation cache): the next
# run starts the longest audits first.
_SECONDS_FILE = "audit-seconds.json"
_OPTION_OF_FIELD = {
    "claim.epsilon": "--epsilon",
    "claim.delta": "--delta",
    "claim.adjacency": "--adjacency",
    "mechanism.params": "--param",
    "blackbox.params": "--param",
    "blackbox.method": "--statistic",
    "blackbox.reference_params": "--reference-param",
    "blackbox.reference": "--reference",
    "blackbox.features": "--features",
    "blackbox.components": "--components",
    "blackbox.objective": "--objective",
    "blackbox.stopping": "--stopping",
    "blackbox.pairs": "--pairs",
    "budget.select_samples": "--select-samples",
    "budget.samples": "--samples",
    "budget.seed": "--seed",
    "data.params": "--data-param",
    "data.generator": "--generator",
    "data.files": "--data",
}


def _command_line_tables(args, ref: str) -> dict:
    """The spec a ``FILE.py:CALLABLE`` audit stands for, as TOML tables."""
    file, _, attr = ref.rpartition(":")
    absolute = f"{Path(file).resolve()}:{attr}"
    claim = {
        "epsilon": 1.0 if args.epsilon is None else args.epsilon,
        "delta": args.delta,
        "adjacency": args.adjacency,
    }
    data = {"params": _pairs("--data-param", args.data_param) or None}
    if args.data:
        data["files"] = [str(Path(f).resolve()) for f in args.data]
    else:
        data["generator"] = args.generator
    budget = {
        "samples": args.samples or CALLABLE_SAMPLES,
        "seed": 0 if args.seed is None else args.seed,
        "select_samples": args.select_samples,
    }
    tables = {"name": f"{Path(file).name}:{attr}"}
    params = _pairs("--param", args.param) or None
    if not args.blackbox:
        return tables | {"mechanism": {"path": absolute, "params": params}, "claim": claim,
                         "data": data, "budget": budget}  # fmt: skip
    reference = args.reference
    if reference is not None and _is_callable_ref(reference):
        _check_target(reference)
        reference = f"{Path(reference.rpartition(':')[0]).resolve()}:{reference.rpartition(':')[2]}"
    blackbox = {
        "sampler": absolute,
        "params": params,
        "method": args.method,
        "reference": reference,
        "reference_params": _pairs("--reference-param", args.reference_param) or None,
        "features": args.features,
        "components": args.components,
        "objective": args.objective,
        "stopping": args.stopping,
        "pairs": _pairs_option(args),
    }
    return tables | {"blackbox": blackbox, "claim": claim, "data": data, "budget": budget}


def _pairs_option(args):
    """``--pairs KIND`` / ``--domain LO HI`` as the spec's ``blackbox.pairs`` (None: the data pair)."""
    if args.pairs is None:
        if args.domain is not None:
            raise _spec_error(
                "--domain is for --pairs auto/records/labelled (automatic neighbours)."
            )
        return None
    if args.pairs == "auto" and args.domain is None:
        return "auto"
    if args.domain is None:
        return {"kind": args.pairs}
    return {"kind": args.pairs, "domain": list(args.domain)}


def _load_command_line_spec(args, ref: str):
    """Write the command line's spec to a temporary file and load it (the spec loader validates
    every field); errors name the option, not the temporary file."""
    from dpaudit.io.spec import SpecError, load_spec

    text = _toml_document(_command_line_tables(args, ref))
    with tempfile.TemporaryDirectory(prefix="dpaudit-") as folder:
        path = Path(folder) / "command-line.toml"
        path.write_text(text)
        try:
            spec = load_spec(path)
        except SpecError as err:
            raise SpecError(str(err).replace(f"{path}: ", f"{ref}: ")) from None
    # every file in the spec is absolute: the display path only names the target in messages
    return dataclasses.replace(spec, path=Path(ref))


def _check_callable_options(args) -> None:
    _check_notion_options(args)
    blackbox_only = ("method", "reference", "reference_param", "features", "components",
                     "objective", "stopping", "select_samples", "pairs", "domain")  # fmt: skip
    given = [o for o in blackbox_only if getattr(args, o, None) is not None]
    if getattr(args, "pairs", None) == "worst":
        if args.blackbox:
            raise _spec_error(
                "--pairs worst is for a white-box mechanism (it reads the mechanism's summary "
                "and sensitivity); a black-box audit searches neighbours with --pairs auto."
            )
        given = [o for o in given if o not in ("pairs", "domain")]
    if given and not args.blackbox:
        option = "--" + {"method": "statistic"}.get(given[0], given[0]).replace("_", "-")
        raise _spec_error(f"{option} is for black-box audits of a sampler (add --blackbox).")
    if not args.data and not args.generator:
        raise _spec_error(
            f"{args.targets[0] if args.targets else 'FILE.py:CALLABLE'} needs its datasets: "
            "--data D.npy D_PRIME.npy or --generator NAME (see dpaudit info)."
        )


def _claim_note(ref: str, args, declared, audited) -> str:
    """Which claim a callable's audit checks, in its own notion, and where it comes from."""
    from dpaudit.model.claims import claim_label

    text = f"{claim_label(audited)}, {audited.adjacency}"
    given = [f"--{o}" for o in _CLAIM_OPTIONS if getattr(args, o, None) is not None]
    if not given:
        return f"audited claim: {text}, as the {declared[1]} declares."
    if declared[0] is None:
        return f"audited claim: {text}, from {', '.join(given)} (a plain sampler declares none)."
    d = declared[0]
    if type(audited) is not type(d):
        return (
            f"audited claim: {text}, from {', '.join(given)}; it replaces the {declared[1]}'s "
            f"declared {claim_label(d)}, {d.adjacency}."
        )
    return (
        f"audited claim: {text}, from {', '.join(given)}; the {declared[1]} declares "
        f"{claim_label(d)}, {d.adjacency}."
    )


#: The options of a ``FILE.py:CALLABLE`` audit that state or change its claim.
_CLAIM_OPTIONS = ("epsilon", "rho", "mu", "renyi", "delta", "adjacency")
#: The options stating a claim in another notion, and the notion each states.
_NOTION_OPTIONS = {"rho": "zCDP", "mu": "GDP", "renyi": "RDP"}


def _renyi_pair(text: str) -> tuple[float, float]:
    """``"ORDER,EPS"`` of ``--renyi`` as two numbers (one sentence when malformed)."""
    parts = text.split(",")
    try:
        order, epsilon = (float(v) for v in parts)
    except ValueError:
        raise _spec_error(
            f"--renyi {text!r}: write ORDER,EPS with two numbers, for example --renyi 2,0.5."
        ) from None
    if not (order > 1 and order < float("inf")):
        raise _spec_error(
            f"--renyi {text!r}: the order must be a finite number > 1 (Renyi DP is defined "
            "for orders alpha > 1), for example --renyi 2,0.5."
        )
    if not (epsilon > 0 and epsilon < float("inf")):
        raise _spec_error(
            f"--renyi {text!r}: the bound EPS must be a finite number > 0, for example "
            "--renyi 2,0.5."
        )
    return order, epsilon


def _positive_option(option: str, value: float) -> float:
    """A ``--rho`` / ``--mu`` value: finite and > 0, else one sentence naming the option."""
    if not (value > 0 and value < float("inf")):
        raise _spec_error(f"{option} must be a finite number > 0, got {value!r}.")
    return value


def _check_notion_options(args) -> None:
    """One notion per command line, every value in range (before anything is built)."""
    given = [o for o in _NOTION_OPTIONS if getattr(args, o, None) is not None]
    if getattr(args, "epsilon", None) is not None:
        given.insert(0, "epsilon")
    if len(given) > 1:
        raise _spec_error(
            f"--{given[0]} and --{given[1]} state claims in two notions; give one of "
            "--epsilon, --rho, --mu or --renyi."
        )
    delta = getattr(args, "delta", None)
    if given and given[0] != "epsilon" and delta is not None and not 0 < delta < 1:
        raise _spec_error(
            f"--delta with --{given[0]} is the claim's anchor delta and must lie in (0, 1), "
            f"got {delta!r}."
        )
    if getattr(args, "rho", None) is not None:
        _positive_option("--rho", args.rho)
    if getattr(args, "mu", None) is not None:
        _positive_option("--mu", args.mu)
    pairs = [_renyi_pair(t) for t in getattr(args, "renyi", None) or ()]
    orders = [a for a, _ in pairs]
    if len(set(orders)) != len(orders):
        raise _spec_error("--renyi states one order twice; give each order once.")


def _notion_option_claim(args, declared):
    """The claim ``--rho`` / ``--mu`` / ``--renyi`` state, or ``None`` when none is given.

    Adjacency, sensitivity and reference come from the declared claim (if any); ``--delta``
    is the claim's anchor delta; ``--adjacency`` replaces the adjacency.
    """
    from dpaudit.model.claims import GDPClaim, RDPClaim, ZCDPClaim

    _check_notion_options(args)
    common = {}
    if declared is not None:
        common = {
            "adjacency": declared.adjacency,
            "sensitivity_norm": declared.sensitivity_norm,
            "sensitivity": declared.sensitivity,
            "reference": declared.reference,
        }
    if args.adjacency is not None:
        common["adjacency"] = args.adjacency
    if args.delta is not None:
        common["anchor_delta"] = args.delta
    if getattr(args, "rho", None) is not None:
        return ZCDPClaim(rho=args.rho, **common)
    if getattr(args, "mu", None) is not None:
        return GDPClaim(mu=args.mu, **common)
    if getattr(args, "renyi", None):
        pairs = [_renyi_pair(t) for t in args.renyi]
        return RDPClaim(orders=[a for a, _ in pairs], epsilons=[e for _, e in pairs], **common)
    return None


def _merged_claim(args, declared):
    """The command line's epsilon / delta / adjacency over the declared claim (if any).

    A declared claim in another notion (zCDP, RDP, GDP, f-DP) is kept as it is unless
    ``--epsilon`` or ``--delta`` replaces it by an ``(epsilon, delta)`` claim: rebuilding
    it from its ``(epsilon, delta)`` anchor would audit a weaker claim than the one declared.
    ``--rho``, ``--mu`` or ``--renyi`` state a claim in that notion instead (``--delta`` is
    then its anchor delta).
    """
    from dpaudit.model.claims import Claim, is_notion_claim

    notion = _notion_option_claim(args, declared)
    if notion is not None:
        return notion
    if declared is not None and args.epsilon is None and args.delta is None:
        if args.adjacency is None:
            return declared
        return dataclasses.replace(declared, adjacency=args.adjacency)
    pick = {o: getattr(args, o) for o in ("epsilon", "delta", "adjacency")}
    if declared is None:
        return Claim(epsilon=pick["epsilon"], delta=pick["delta"] or 0.0,
                     adjacency=pick["adjacency"] or "replace-one")  # fmt: skip
    delta = declared.delta if pick["delta"] is None else pick["delta"]
    epsilon = pick["epsilon"]
    if epsilon is None:  # --delta alone: the epsilon the declared claim implies there
        epsilon = declared.epsilon_implied(delta) if is_notion_claim(declared) else declared.epsilon
    return Claim(
        epsilon=epsilon,
        delta=delta,
        adjacency=pick["adjacency"] or declared.adjacency,
        sensitivity_norm=declared.sensitivity_norm,
        sensitivity=declared.sensitivity,
        reference=declared.reference,
    )


def prepare_callable(ref: str, args) -> PreparedAudit:
    """Validate and build a ``FILE.py:CALLABLE`` audit from the command line's options.

    Args:
        ref: ``FILE.py:CALLABLE``.
        args: the parsed command line (its claim, data and black-box options).

    Returns:
        The :class:`PreparedAudit` (a parallel suite's worker rebuilds callables with it).

    Raises:
        SpecError: for a bad option, named as on the command line.
    """
    return _prepare_callable(ref, args)


def _prepare_callable(ref: str, args) -> PreparedAudit:
    """Validate and build a ``FILE.py:CALLABLE`` audit: its own claim unless options replace it.

    Errors name the command-line option where the spec loader names a spec field.
    """
    from dpaudit.io.spec import SpecError

    try:
        return _prepare_callable_spec(ref, args)
    except SpecError as err:
        message = str(err)
        for field, option in _OPTION_OF_FIELD.items():
            message = message.replace(f": {field}:", f": {option}:")
        raise SpecError(message) from None


def _prepare_callable_spec(ref: str, args) -> PreparedAudit:
    from dpaudit.io.spec import resolve_blackbox, resolve_mechanism

    _check_callable_options(args)
    spec = _load_command_line_spec(args, ref)
    if spec.blackbox is None:
        mechanism = _guarded(ref, lambda: resolve_mechanism(spec), "the mechanism")
        declared = (mechanism.claim, "mechanism")
    else:
        mechanism, reference = None, _guarded(ref, lambda: resolve_blackbox(spec)).reference
        declared = (None if reference is None else reference.claim, "reference model")
        stated = [getattr(args, o, None) for o in ("epsilon", *_NOTION_OPTIONS)]
        if declared[0] is None and all(v is None for v in stated):
            raise _spec_error(
                f"{ref}: a plain sampler declares no claim; give --epsilon (and --delta), "
                "--rho, --mu or --renyi, or --reference MODEL to audit the reference model's "
                "claim."
            )
    claim = _merged_claim(args, declared[0])
    spec = dataclasses.replace(spec, claim=claim)
    note = _claim_note(ref, args, declared, claim)
    worst = None if mechanism is None else _worst_domain(ref, args, _with_claim(mechanism, claim))
    return _guarded(ref, lambda: _build_spec(spec, mechanism, note, worst))


# ------------------------------------------------------------------ selecting with -k


def matches(expression: str, names) -> bool:
    """Whether ``-k expression`` selects an audit known by ``names`` (pytest's ``-k`` rules).

    The expression is words joined by ``and``, ``or``, ``not`` and parentheses;
    a word matches when it is a substring (case-insensitive) of one of the names.

    Args:
        expression: for example ``"faulty and not ecdf"``.
        names: the audit's name, its spec path, ...

    Returns:
        True when the audit is selected.

    Raises:
        SpecError: when the expression is not well formed.
    """
    haystack = [str(n).lower() for n in names]
    tokens = re.findall(r"\(|\)|[^\s()]+", expression)
    python = []
    for token in tokens:
        if token in ("and", "or", "not", "(", ")"):
            python.append(token)
        else:
            python.append(str(any(token.lower() in h for h in haystack)))
    try:
        return bool(eval(" ".join(python) or "True", {"__builtins__": {}}, {}))
    except SyntaxError:
        raise _spec_error(
            f"-k {expression!r} is not a valid expression; use words joined by and, or, not "
            "and parentheses."
        ) from None


def _select_paths(paths, expression: str | None):
    """The spec paths whose spec name or path ``-k`` selects (specs are loaded, not built)."""
    if expression is None:
        return paths
    from dpaudit.io.spec import load_spec

    matches(expression, [])  # a malformed expression is reported before any spec is read
    return [p for p in paths if matches(expression, [load_spec(p).name, p])]


# ------------------------------------------------------------------ output


def _plain(stream) -> bool:
    """Plain text (no colour, no table borders, never truncated) when not on a terminal."""
    return not (hasattr(stream, "isatty") and stream.isatty())


class ClosedPipeSafe:
    """A text stream whose reader may leave early (``dpaudit audit ... | head -1``).

    Once the reader has closed the pipe, writes are dropped and the stream's descriptor is
    pointed at ``os.devnull`` (so the interpreter's final flush is quiet too): the run goes
    on, writes every requested file, and exits as if its output had been read.

    Args:
        stream: the stream to write to (``sys.stdout`` or ``sys.stderr``).
    """

    def __init__(self, stream):
        self.stream = stream
        self.closed_pipe = False

    def write(self, text: str) -> int:
        """Write ``text`` unless the reader has gone.

        Args:
            text: the text.

        Returns:
            The number of characters taken (all of them, read or not).
        """
        if not self.closed_pipe:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        """Flush, unless the reader has gone."""
        if not self.closed_pipe:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def isatty(self) -> bool:
        """Whether the stream is a terminal.

        Returns:
            The underlying stream's answer.
        """
        return hasattr(self.stream, "isatty") and self.stream.isatty()

    def __getattr__(self, name: str):
        """Anything else (``encoding``, ``fileno`` ...) is the underlying stream's."""
        return getattr(self.stream, name)

    def _reader_gone(self) -> None:
        self.closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # not a file descriptor (a test's buffer)
            pass


def closing_line(outcomes, seconds: float, strict: bool = False) -> str:
    """The run's closing counts line, in the manner of pytest (:func:`dpaudit.io.report.counts_line`).

    Args:
        outcomes: the run's :class:`~dpaudit.io.report.AuditOutcome` list.
        seconds: the run's wall time.
        strict: whether an inconclusive verdict without expectation fails.

    Returns:
        For example ``"47 as expected, 2 unexpected (1 missed violation, 1 false
        alarm) in 3m12s"``.
    """
    from dpaudit.io.report import counts_line

    return counts_line(outcomes, seconds, strict)


def _number(value) -> str:
    if value is None:
        return "–"
    value = float(value)
    return "∞" if value == float("inf") else f"{value:.4g}"


def _claim_cell(claim) -> str:
    """``(epsilon, delta)``, or a notion claim as stated (``1-GDP``, ``0.5-zCDP``); a training
    result's claim is its description already."""
    from dpaudit.model.claims import claim_label, is_notion_claim

    if isinstance(claim, str):
        return claim
    if is_notion_claim(claim):
        return claim_label(claim)
    return f"({claim.epsilon:g}, {claim.delta:g})"


def _strength_cell(r) -> str:
    """For an inconclusive black-box audit: the smallest violations its budget detects, for a
    one-event violation and for a Gaussian mechanism (in the claim's notion); else empty."""
    strength = getattr(r, "strength", None)
    if r.verdict != "inconclusive" or strength is None:
        return ""
    if getattr(r, "kind", "") == "training":  # the largest epsilon these runs could certify
        unit = "guesses" if getattr(r, "mode", "") == "one-run" else "runs"
        return f"ε ≥ {_number(strength)} ({unit})"
    from dpaudit.blackbox.result import strength_in_notion

    event = f"ε ≥ {_number(strength.epsilon_any_event)} (event)"
    gaussian = strength_in_notion(strength, r.claim).replace("epsilon", "ε")
    return f"{event}, {gaussian.replace('rho', 'ρ').replace('mu', 'μ')} (Gaussian)"


def _row(o) -> list[str]:
    from dpaudit.model.claims import certified_lower_text

    r = o.result
    expected = "" if o.expected is None else ("✓ " if o.as_expected else "✗ ") + o.expected
    estimate = getattr(r, "epsilon_at_claimed_delta", {}).get("estimate")
    return [o.name, o.kind, _claim_cell(r.claim), _verdict_cell(r), expected,
            certified_lower_text(r, _number), _number(estimate), _strength_cell(r),
            f"{r.seconds:.1f}"]  # fmt: skip


def _verdict_cell(r) -> str:
    """The verdict, marked ``(borderline p <= x)`` at the statistical resolution; a pass on a
    pair that uses under half the declared sensitivity says so."""
    borderline = getattr(r, "borderline", None)
    if borderline is not None:
        return f"{r.verdict} (borderline p <= {borderline['p_value']:.2g})"
    scope = (getattr(r, "diagnostics", None) or {}).get("pair") or {}
    if scope.get("weak"):
        return f"{r.verdict} (weak pair: {100 * scope['fraction']:.3g}% of Δ)"
    return r.verdict


_COLUMNS = ("audit", "kind", "claim", "verdict", "expected", "certified lower", "ε at δ",
            "would detect", "s")  # fmt: skip


def _verdict_colour(o) -> str:
    """Red only for what fails the run; an expected violation is not alarming."""
    if _unexpected(o):
        return "red"
    return {"pass": "green", "inconclusive": "yellow"}.get(o.result.verdict, "cyan")


def _summary_table(outcomes):
    from rich.table import Table

    table = Table(title="dpaudit results")
    for column in _COLUMNS:
        table.add_column(column, overflow="fold")
    for o in outcomes:
        row = _row(o)
        colour = _verdict_colour(o)
        row[3] = f"[{colour}]{row[3]}[/{colour}]"
        table.add_row(*row)
    return table


def _plain_table(outcomes) -> str:
    """The results as aligned plain text, nothing truncated."""
    rows = [list(_COLUMNS), *(_row(o) for o in outcomes)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_COLUMNS))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                     for r in rows)  # fmt: skip


def _print_table(outcomes, stream) -> None:
    if _plain(stream):
        print(_plain_table(outcomes), file=stream, flush=True)
    else:
        from rich.console import Console

        Console(file=stream, highlight=False).print(_summary_table(outcomes))


def _print_assumptions(outcomes, stream) -> None:
    """Under the table, one line per training audit: what its certified bound assumes."""
    for o in outcomes:
        brief = getattr(getattr(o.result, "bound", None), "brief", None)
        if getattr(o.result, "kind", "") == "training" and brief:
            print(f"{o.name}: the bound assumes {brief}.", file=stream, flush=True)


def _unexpected(o) -> bool:
    """A verdict that fails the run (before ``--strict``): a missed expectation, or a violation
    or incompatibility nobody expected."""
    return o.as_expected is False or (o.expected is None and o.result.verdict in BAD_VERDICTS)


def _audit_line(o, seconds: float) -> str:
    """The audit's result line; under an unexpected verdict, its one-line reason."""
    mark = "" if o.as_expected is None else (" ✓" if o.as_expected else f" ✗ expected {o.expected}")
    line = f"{o.name}: {o.result.verdict}{mark} ({seconds:.1f} s)"
    return f"{line}\n  why: {_reason_line(o)}" if _unexpected(o) else line


def _reason_line(o) -> str:
    """An unexpected verdict's reason: for a violation, expected against measured, the pair and
    the certificate or event (:func:`dpaudit.testing.assertions.violation_sentence`)."""
    from dpaudit.testing.assertions import violation_sentence

    reason = getattr(o.result, "reason", o.result.verdict)
    data = tuple(o.data or ())
    if o.result.verdict != "violation" or len(data) != 2 or data[1] is None:
        return reason  # a missed expectation, or candidate pairs generated around D
    try:
        return violation_sentence(o.result, *data)
    except (ValueError, TypeError, IndexError):  # a pair of another shape: the reason alone
        return reason


# ------------------------------------------------------------------ auditing


def _audit_all(prepared: list[PreparedAudit], out, quiet: bool = False) -> list:
    """Audit every prepared target in turn, one result line per verdict on ``out``.

    A suite-level bar (rich's own, not :mod:`dpaudit.core.progress`: it changes its
    label per audit) is drawn on stderr when stderr is a terminal; on a terminal
    the result lines are printed above it.
    """
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    show_bar = not quiet and sys.stderr.isatty()
    outcomes = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=Console(stderr=True, highlight=False),
        transient=True,
        disable=not show_bar,
        redirect_stdout=False,
        redirect_stderr=False,
    ) as progress:
        task = progress.add_task("auditing", total=len(prepared))
        # the draw helper of host-Python samplers imports while the first audits run
        from dpaudit.blackbox.drawhelper import start_for
        from dpaudit.io.spec import clear_draw_programs

        clear_draw_programs()  # every spec is drawn from: audits never use these programs

        start_for(getattr(item.target, "sampler", None) for item in prepared)
        for item in prepared:
            progress.update(task, description=f"auditing {item.spec.name}")
            if item.claim_note:
                print(f"{item.spec.name}: {item.claim_note}", file=out, flush=True)
            t0 = time.perf_counter()
            outcome = _outcome(item, _run_checked(item))
            outcomes.append(outcome)
            if len(prepared) > 1:  # a suite: what the audit left behind (docs/memory.md)
                release_memory()
            if not quiet:
                line = _audit_line(outcome, time.perf_counter() - t0)
                if show_bar and not _plain(out):  # the same terminal: print above the bar
                    progress.console.print(line, markup=False, highlight=False)
                else:
                    print(line, file=out, flush=True)
            progress.advance(task)
    return outcomes


def _start_workers(args) -> bool:
    """The parallel options checked (and a Ray cluster reached) before any audit; whether to use
    them. ``--workers N`` alone runs the audits on N local processes (no Ray needed);
    ``--ray ADDRESS`` on a Ray cluster."""
    workers, ray = getattr(args, "workers", None), getattr(args, "ray", None)
    if workers is None and not ray:
        return False
    if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
        raise _spec_error(f"--workers must be >= 1 (worker processes), got {workers!r}.")
    if ray:
        from dpaudit.runtime import start_suite

        start_suite(workers, ray)
    return True


def _suite_target(item: PreparedAudit, args, seconds: dict):
    """What a worker needs to rebuild ``item``: its spec path, or a callable and its options."""
    from dpaudit.runtime import SuiteTarget

    path = str(item.spec.path)
    cost = float(seconds.get(path, 0.0))
    if not _is_callable_ref(path):
        return SuiteTarget(path, cost=cost, group=audit_family(item.spec))
    # the parsed command line minus the subcommand's handler: plain values, picklable
    options = {k: v for k, v in vars(args).items() if not callable(v)}
    return SuiteTarget(path, options, cost, audit_family(item.spec))


def audit_family(spec) -> str:
    """The family of an audit, read from its spec (nothing built): audits of one family
    share compiled programs, so a local suite runs them on one worker.

    Args:
        spec: a loaded spec (:class:`~dpaudit.io.spec.AuditSpec`).

    Returns:
        ``"training:FILE"`` for a training target, ``"black-box:FILE:METHOD"`` for a sampler
        (``catalogue`` for a catalogue mechanism sampled as a black box), ``"white-box:MODULE"``
        for a catalogue mechanism (its builder's module: one family of mechanisms), else
        ``"white-box:FILE"`` of a mechanism defined in a file.
    """
    from dpaudit.model.registry import lookup

    if spec.training is not None:
        return f"training:{Path(str(spec.training.train).rsplit(':', 1)[0]).name}"
    bb = spec.blackbox
    if bb is not None:
        source = Path(str(bb.sampler).rsplit(":", 1)[0]).name if bb.sampler else "catalogue"
        return f"black-box:{source}:{bb.method}"
    entry = lookup(str(spec.mechanism))
    if entry is not None:
        return f"white-box:{entry.builder.__module__}"
    return f"white-box:{Path(str(spec.mechanism).rsplit(':', 1)[0]).name}"


def _seconds_file() -> Path | None:
    """Where the last parallel run's audit durations are kept: beside the compilation cache."""
    import jax

    folder = jax.config.jax_compilation_cache_dir
    return Path(folder).parent / _SECONDS_FILE if folder else None


def _print_finished(item: PreparedAudit, outcome, seconds: float, args, out) -> None:
    """A finished audit's lines: its claim note (always, as the serial run), its result line."""
    if item.claim_note:  # as the serial run prints it, before the audit's line
        print(f"{item.spec.name}: {item.claim_note}", file=out, flush=True)
    if not args.quiet:
        print(_audit_line(outcome, seconds), file=out, flush=True)


def _suite_prepare(options: tuple, paths, seed, samples) -> list:
    """:func:`prepare` on a worker, with the command line's ``(confidence, force)``."""
    confidence, force = options
    prepared = _with_confidence(prepare(paths, seed, samples), confidence)
    return [dataclasses.replace(p, force=True) for p in prepared] if force else prepared


def _suite_prepare_callable(options: tuple, ref: str, args) -> PreparedAudit:
    """:func:`prepare_callable` on a worker, with the command line's ``(confidence, force)``."""
    confidence, force = options
    (item,) = _with_confidence([prepare_callable(ref, args)], confidence)
    return dataclasses.replace(item, force=True) if force else item


def report_view(item: PreparedAudit, figures: bool = True) -> PreparedAudit:
    """What a local worker sends back of an audit it prepared, for the driver's report.

    A prepared audit holds models and samplers that do not pickle; its view keeps the spec,
    the pair and the claim note, and in place of the mechanism a
    :class:`~dpaudit.io.plot.whitebox.ReleaseSketch` (its known flaw, and the releases the
    report plots, drawn now as the report would draw them).

    Args:
        item: the prepared audit.
        figures: draw the releases the report plots (``False``: no report is written).

    Returns:
        A picklable :class:`PreparedAudit` whose ``mechanism`` is the sketch (``None`` for a
        training target) and whose ``target`` and ``features`` are ``None``.
    """
    from dpaudit.io.plot.whitebox import ReleaseSketch, sketch_releases

    built = item.mechanism if item.target is None else getattr(item.target, "mechanism", None)
    data = item.pair[0] if item.pair else None
    if built is None:
        sketch = None
    elif figures and item.target is None:  # the report plots a white-box audit's releases
        sketch = sketch_releases(built, data)
    else:
        sketch = ReleaseSketch(getattr(built, "known_flaw", None))
    return PreparedAudit(
        item.spec, sketch, None, None, tuple(item.pair), item.claim_note, item.force
    )


def suite_runner(args):
    """What a suite's worker runs: the CLI's preparation and audit.

    Args:
        args: the parsed command line; its ``confidence`` and ``force`` are applied to
            every audit the workers prepare, as the serial run applies them; with
            ``report``, a local worker's report view draws the report's figures.

    Returns:
        A :class:`~dpaudit.runtime.SuiteRunner` of module-level functions (picklable).
    """
    from functools import partial

    from dpaudit.runtime import SuiteRunner

    options = (getattr(args, "confidence", None), bool(getattr(args, "force", False)))
    view = partial(report_view, figures=bool(getattr(args, "report", None)))
    return SuiteRunner(
        partial(_suite_prepare, options), partial(_suite_prepare_callable, options), run_audit, view
    )


def _known_seconds() -> tuple:
    """Where the audits' times of the last parallel run are kept, and those times."""
    record = _seconds_file()
    try:
        known = json.loads(record.read_text()) if record is not None else {}
    except (OSError, ValueError):  # no previous run, or an unreadable file: no ordering
        known = {}
    return record, known


def _keep_seconds(record, known: dict, targets, seconds) -> None:
    """This run's audit times, kept to order the next run."""
    if record is None:
        return
    known.update((t.path, round(s, 2)) for t, s in zip(targets, seconds, strict=True))
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps(known, indent=0, sort_keys=True) + "\n")
    except OSError:  # a read-only cache only loses the ordering of the next run
        pass


def _audit_parallel(prepared: list[PreparedAudit], args, out) -> list:
    """Every audit as a Ray task (``--ray``), longest first (last run's times)."""
    from dpaudit.runtime import run_suite_parallel

    record, known = _known_seconds()
    targets = [_suite_target(item, args, known) for item in prepared]
    seconds: list = []
    results = run_suite_parallel(targets, args.seed, args.samples, runner=suite_runner(args),
                                 workers=args.workers, address=args.ray, seconds=seconds)  # fmt: skip
    outcomes = [_outcome(item, r) for item, r in zip(prepared, results, strict=True)]
    for item, o, s in zip(prepared, outcomes, seconds, strict=True):
        _print_finished(item, o, s, args, out)
    _keep_seconds(record, known, targets, seconds)
    return outcomes


def _local_targets(args, found, known: dict) -> list:
    """The suite's targets for local workers, read from the spec files alone (nothing built):
    path, last run's seconds and family (:func:`audit_family`).

    Every spec file is loaded (:func:`dpaudit.io.spec.load_spec`: its TOML, its fields, its
    claim) and the names checked unique before any audit starts: a malformed spec exits 2
    before anything runs. Building happens once, in the process that audits it.
    """
    from dpaudit.io.spec import load_spec, with_overrides
    from dpaudit.runtime import SuiteTarget

    paths, refs = found
    targets, names = [], []
    for path in paths:
        spec = with_overrides(load_spec(path), args.seed, args.samples)
        key = str(spec.path)
        names.append(spec.name)
        targets.append(SuiteTarget(key, cost=float(known.get(key, 0.0)), group=audit_family(spec)))
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise _spec_error(f"two specs share the name {duplicates[0]!r}; names must be unique.")
    # the parsed command line minus the subcommand's handler: plain values, picklable
    options = {k: v for k, v in vars(args).items() if not callable(v)}
    for ref in refs:
        group = f"callable:{ref.rsplit(':', 1)[0]}"
        targets.append(SuiteTarget(ref, options, float(known.get(ref, 0.0)), group))
    if not targets:
        raise _spec_error(f"-k {args.k!r} selects none of the audits of {' '.join(args.targets)}.")
    return targets


def _audit_local(args, out) -> tuple[list, list]:
    """Every audit on ``--workers`` local processes, this one included, family-affine.

    Every spec file is read first (:func:`_local_targets`); each audit is then prepared
    once, by the process that audits it; a worker sends back its result and the audit's
    :func:`report_view`.

    Returns:
        ``(prepared, outcomes)``, both in the order of the targets.
    """
    from dpaudit.runtime import LocalSuite

    found = _target_paths(args)
    record, known = _known_seconds()
    targets = _local_targets(args, found, known)
    _log(args, f"dpaudit: {len(targets)} audit(s) read; running on "
               f"{min(args.workers, len(targets))} process(es).")  # fmt: skip
    suite = LocalSuite(targets, (args.seed, args.samples), suite_runner(args), args.workers)

    def finished(index: int, result, took: float, item) -> None:  # as each audit ends
        _print_finished(item, _outcome(item, result), took, args, out)

    done = suite.wait(finished)  # stops the workers itself on any failure
    prepared = [item for _, _, item in done]
    outcomes = [_outcome(item, r) for item, (r, _, _) in zip(prepared, done, strict=True)]
    _keep_seconds(record, known, targets, [took for _, took, _ in done])
    return prepared, outcomes


def _log(args, message: str) -> None:
    """A progress or log line on stderr (not under ``-q``)."""
    if not getattr(args, "quiet", False):
        print(message, file=sys.stderr, flush=True)


def _target_paths(args) -> tuple[list, list]:
    """The targets checked: spec files (``-k`` applied) and ``FILE.py:CALLABLE`` references."""
    from dpaudit.io.spec import find_specs

    for target in args.targets:
        _check_target(target)
    refs = [t for t in args.targets if _is_callable_ref(t)]
    if not refs:
        given = [o for o in ("epsilon", "delta", "rho", "mu", "renyi", "data", "generator",
                             "param") if getattr(args, o, None)]  # fmt: skip
        if given or args.blackbox:
            option = "--" + (given or ["blackbox"])[0]
            raise _spec_error(
                f"{option} is for a FILE.py:CALLABLE target; a spec states its claim and data "
                "itself."
            )
    paths = [p for t in args.targets if t not in refs for p in find_specs(t)]
    paths = _select_paths(list(dict.fromkeys(Path(p) for p in paths)), args.k)
    return paths, [ref for ref in refs if args.k is None or matches(args.k, [ref])]


def _prepare_targets(args, draw: bool = True, found=None) -> list[PreparedAudit]:
    """Every target validated and built (specs first, then callables), ``-k`` applied.

    ``draw=False`` (``validate``): spec models are traced, not run (see :func:`_prepare_one`).
    ``found``: what :func:`_target_paths` returned, when the caller has it already.
    """
    paths, refs = found if found is not None else _target_paths(args)
    prepared = []
    for path in paths:
        prepared.append(_prepare_one(path, args.seed, args.samples, draw))
        if len(paths) > 1:
            release_memory()  # building compiles eager programs too (docs/memory.md)
    prepared += [_prepare_callable(ref, args) for ref in refs]
    if not prepared:
        raise _spec_error(f"-k {args.k!r} selects none of the audits of {' '.join(args.targets)}.")
    _check_unique(prepared)
    if getattr(args, "force", False):
        prepared = [dataclasses.replace(p, force=True) for p in prepared]
    return prepared


def _check_outputs(args) -> None:
    """The output paths, checked first: a run is never spent on output it cannot keep."""
    from dpaudit.io.report import check_json_path, check_output_file, check_report_folder

    if args.report:
        check_report_folder(args.report)
    if args.json and args.json != "-":
        check_json_path(args.json)
    if args.junitxml:
        check_output_file(args.junitxml, "--junitxml")
    if getattr(args, "write_regression_test", None):
        from dpaudit.cli.regression import check_regression_path

        check_regression_path(args.write_regression_test, Path(dpaudit.__file__).parent)
        check_output_file(args.write_regression_test, "--write-regression-test", "test_dp.py")


def audit_targets(args, legacy: bool = False) -> int:
    """``dpaudit audit``: validate every target, audit each, print the results, write the files.

    Args:
        args: the parsed command line (``targets``, ``k``, ``quiet``, ``json``,
            ``report``, ``junitxml``, ``seed``, ``samples``, ``strict``, ``workers``,
            ``ray``, and the options of a ``FILE.py:CALLABLE`` target).
        legacy: the output of the former ``run`` / ``check`` commands (everything on stderr).

    Returns:
        :data:`EXIT_OK`, or :data:`EXIT_FOUND` when an audit failed (see the module docstring).

    Raises:
        SpecError: for an invalid target or an audit that failed (nothing is written then).
        AuditCrash: for a builder, audit or report that crashed.
    """
    from dpaudit.io.report import now

    clock, started = time.perf_counter(), now()
    out = ClosedPipeSafe(sys.stderr if legacy or args.json == "-" else sys.stdout)
    _check_outputs(args)
    _check_error_options(args)
    parallel = _start_workers(args)
    # Ray: each task prepares its spec again (runtime/suite.py); the driver validates every
    # spec first as `validate` does, without drawing. Local workers: every spec file is
    # read first, each audit prepared once by the process that audits it (runtime/pool.py)
    if parallel and not args.ray:
        prepared, outcomes = _audit_local(args, out)
    else:
        prepared = _prepare_targets(args, draw=not parallel)
        prepared = _with_confidence(prepared, getattr(args, "confidence", None))
        kinds = [p.spec.kind for p in prepared]
        _log(args, f"dpaudit: {len(prepared)} audit(s) validated ({_kind_counts(kinds)}); "
                   "running.")  # fmt: skip
        if parallel:  # every audit as a parallel Ray task: the serial results
            outcomes = _audit_parallel(prepared, args, out)
        else:
            outcomes = _audit_all(prepared, out, args.quiet)
    outcomes = _correct_suite(outcomes, args, out)
    if not args.quiet:
        _print_table(outcomes, out)
    if not args.quiet:
        _print_assumptions(outcomes, out)
    for item, o in zip(prepared, outcomes, strict=True):
        if (args.verbose or item.claim_note) and o.result.notes:  # a one-off audit's explanation
            print(f"{o.name}:", file=out)
            for note in o.result.notes:
                print(f"  note: {note}", file=out)
    seconds = time.perf_counter() - clock
    _write_outputs(outcomes, args, started, seconds)
    _write_regression_tests(prepared, outcomes, args)
    failed = [o.name for o in outcomes if _failed(o, args.strict)]
    if failed:
        print(f"{len(failed)} audit(s) failed: {', '.join(failed)}", file=sys.stderr, flush=True)
    print(closing_line(outcomes, time.perf_counter() - clock, args.strict), file=out, flush=True)
    return EXIT_FOUND if failed else EXIT_OK


def _write_outputs(outcomes, args, started: str, seconds: float) -> None:
    """Write the report, the JSON and the JUnit XML; a failure other than the file system's is
    an AuditCrash."""
    from dpaudit.io.report import (
        ReportPathError,
        json_document,
        write_json,
        write_junit,
        write_report,
    )

    try:
        if args.report:
            page = write_report(
                outcomes, args.report, started=started, seconds=seconds, strict=args.strict
            )
            _log(args, f"report: {page}")
        if args.json == "-":
            stdout = ClosedPipeSafe(sys.stdout)
            json.dump(json_document(outcomes, started), stdout, indent=1, allow_nan=False)
            print(file=stdout, flush=True)
        elif args.json:
            _log(args, f"json: {write_json(outcomes, args.json, started=started)}")
        if args.junitxml:
            path = write_junit(outcomes, args.junitxml, strict=args.strict, started=started)
            _log(args, f"junitxml: {path}")
    except (OSError, ReportPathError):  # disk full, permissions: reported by main
        raise
    except Exception as err:  # e.g. a model raising while its sample paths are drawn
        raise AuditCrash(
            f"drawing the report failed ({_first_line(err)}); the audits finished but "
            "nothing was published."
        ) from err


def _write_regression_tests(prepared, outcomes, args) -> None:
    """``--write-regression-test``: a pytest per unexpected verdict (none: nothing written)."""
    path = getattr(args, "write_regression_test", None)
    if not path:
        return
    from dpaudit.cli.regression import (
        RegressionCase,
        absolute_target,
        callable_options,
        write_regression_tests,
    )

    cases = [
        RegressionCase(
            name=o.name,
            target=absolute_target(str(item.spec.path)),
            options=tuple(callable_options(args) if _is_callable_ref(str(item.spec.path)) else ()),
            seed=item.spec.seed,
            samples=item.spec.samples,
            claim=o.result.claim,
            pair=tuple(item.pair),
            reason=_reason_line(o),
        )
        for item, o in zip(prepared, outcomes, strict=True)
        if _failed(o, args.strict)
    ]
    if not cases:
        _log(args, f"regression tests: no unexpected verdict; {path} not written.")
        return
    command = "dpaudit audit " + " ".join(args.targets)
    _log(args, f"regression tests: {write_regression_tests(path, cases, command)}")


def assert_fixed(target: str, *, options=(), seed: int, samples: int, claim=None, pair=None):
    """Re-audit a verdict that failed a run; fail (as a pytest assertion) while it still fails.

    What ``dpaudit audit ... --write-regression-test FILE`` writes calls this: the target
    is prepared as the command prepared it, then audited on the pinned pair with the
    pinned seed, budget and claim.

    Args:
        target: a spec path or ``FILE.py:CALLABLE``.
        options: the command-line options of a ``FILE.py:CALLABLE`` target.
        seed: the audit's seed.
        samples: releases per dataset.
        claim: the claim to audit (default: the target's).
        pair: ``(D, D')`` to audit (default: the target's).

    Returns:
        The audit result, when its verdict no longer fails the run.

    Raises:
        AssertionError: with the verdict and its one-line reason, while it still fails.
    """
    __tracebackhide__ = True  # pytest shows the test's line and the reason, not dpaudit's frames
    from dpaudit.model.adjacency import check_adjacent

    if _is_callable_ref(target):
        argv = ["audit", target, *options, "--seed", str(seed), "--samples", str(samples)]
        item = prepare_callable(target, build_parser().parse_args(argv))
    else:
        item = _prepare_one(Path(target), seed, samples)
    if claim is not None:
        mechanism = None if item.mechanism is None else _with_claim(item.mechanism, claim)
        item = dataclasses.replace(item, spec=dataclasses.replace(item.spec, claim=claim))
        item = dataclasses.replace(item, mechanism=mechanism)
    if pair is not None:
        check_adjacent(pair[0], pair[1], item.spec.claim.adjacency)
        item = dataclasses.replace(item, pair=tuple(pair))
    outcome = _outcome(item, run_audit(item))
    if _failed(outcome, strict=False):
        raise AssertionError(
            f"{outcome.name}: {outcome.result.verdict} (seed {seed}, {samples} samples): "
            f"{_reason_line(outcome)}"
        )
    return outcome.result


def run(args) -> int:
    """``dpaudit run`` (deprecated name of ``dpaudit audit``, kept for one release).

    Args:
        args: the parsed command line (as for ``audit``).

    Returns:
        The exit code of :func:`audit_targets`; the output is the former one (all on stderr).
    """
    _deprecated("run", "audit")
    return audit_targets(args, legacy=True)


def _deprecated(old: str, new: str) -> None:
    # on a terminal only: scripts and CI logs that parse stderr keep their former output
    if sys.stderr.isatty():
        print(f"dpaudit: '{old}' is deprecated; use 'dpaudit {new}'.", file=sys.stderr)


def _describe(spec) -> str:
    """One line: the spec's kind, what it audits and how, its claim and expectation."""
    stated = f"{_claim_cell(spec.claim)} {spec.claim.adjacency}"
    claim = f"claim {stated}"
    expected = f"expected {spec.expected}" if spec.expected else "no expected verdict"
    bb = spec.blackbox
    if spec.training is not None:
        t = spec.training
        what = f"target {Path(t.train).name}"
        how = f"gradient canary on coordinate {t.coordinate}, score {t.score}, {spec.samples} runs"
        if t.claim == "profile":  # the [claim] is the profile's point; the whole curve is audited
            claim = f"claim the target's accountant profile (its point {stated})"
        if t.mode == "one-run":
            how = f"one run, {t.canaries} Dirac canaries, {t.guesses_in} + {t.guesses_out} guesses"
    elif bb is None:
        what = f"mechanism {Path(spec.mechanism).name if ':' in spec.mechanism else spec.mechanism}"
        how = f"{spec.samples} samples per direction"
    else:
        what = (
            f"catalogue model {bb.mechanism} sampled as a black box"
            if bb.mechanism
            else f"sampler {Path(bb.sampler).name}"
        )
        ref = bb.reference and (Path(bb.reference).name if ":" in bb.reference else bb.reference)
        how = f"method {bb.method}" + (
            f" (reference {ref})" if bb.method == "model" else f" on {bb.features}"
        )
        how += f", {spec.samples} certification samples per dataset"
    return f"{spec.name}: {spec.kind} — {what}; {how}; {claim}; {expected}"


def _kind_counts(kinds) -> str:
    """``"3 white-box, 2 black-box"`` (``", 1 training"`` when there are training specs)."""
    text = f"{kinds.count('white-box')} white-box, {kinds.count('black-box')} black-box"
    return text + (f", {kinds.count('training')} training" if "training" in kinds else "")


def validate(args) -> int:
    """``dpaudit validate``: build every target's mechanism, sampler and datasets; no audit.

    Args:
        args: the parsed command line (``targets``, ``k``, and the options of a
            ``FILE.py:CALLABLE`` target).

    Returns:
        :data:`EXIT_OK` (an invalid target raises).

    Raises:
        SpecError: for an invalid target.
    """
    prepared = _prepare_targets(args, draw=False)
    for item in prepared:
        print(_describe(item.spec) + (f" ({item.claim_note})" if item.claim_note else ""))
    kinds = [p.spec.kind for p in prepared]
    print(f"{len(prepared)} spec(s) valid ({_kind_counts(kinds)}).")
    return EXIT_OK


def check(args) -> int:
    """``dpaudit check`` (deprecated): ``validate`` for specs, ``audit`` for a ``FILE.py:CALLABLE``.

    Args:
        args: the parsed command line (as for ``audit``).

    Returns:
        :data:`EXIT_OK`, or :data:`EXIT_FOUND` when the callable's audit failed.

    Raises:
        SpecError: for invalid specs, a missing data source, or a callable that
            gives no Mechanism (sampler).
    """
    if all(_is_callable_ref(t) for t in args.targets):
        _deprecated("check FILE.py:CALLABLE", "audit FILE.py:CALLABLE")
        return audit_targets(args, legacy=True)
    given = [f for f in ("epsilon", "data", "generator") if getattr(args, f) is not None]
    if given or args.blackbox:
        raise _spec_error(
            f"dpaudit check {' '.join(args.targets)} validates specs; "
            f"--{(given or ['blackbox'])[0]} is for a FILE.py:CALLABLE."
        )
    _deprecated("check", "validate")
    return validate(args)


def list_catalogue(args) -> int:
    """``dpaudit list``: the catalogue's names, claims and summaries as a table.

    Args:
        args: the parsed command line (``faulty``, ``all``).

    Returns:
        :data:`EXIT_OK`.
    """
    from dpaudit.model.registry import entry

    faulty = True if args.faulty else (None if args.all else False)
    title = "dpaudit catalogue" + (" (faulty)" if faulty else "")
    rows = []
    for name in dpaudit.catalogue(faulty=faulty):
        try:
            claim = dpaudit.build(name).claim
            text = f"{_claim_cell(claim)} {claim.adjacency}"
        except Exception as err:  # an entry that cannot build its example is shown, not hidden
            text = f"example does not build: {err}"
        rows.append((name, text, entry(name).summary[:100]))
    if _plain(sys.stdout):
        print(title)
        for row in rows:
            print("  ".join(row))
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in ("name", "claim", "summary"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    Console().print(table)
    return EXIT_OK


def info(args) -> int:
    """``dpaudit info``: the version and JAX configuration; with specs, what each audits.

    Args:
        args: the parsed command line (``target``: a spec, a folder, or ``None``).

    Returns:
        :data:`EXIT_OK`.

    Raises:
        SpecError: for an invalid spec.
    """
    import jax

    from dpaudit.io.datasets import generators
    from dpaudit.io.spec import find_specs, load_spec

    print(f"dpaudit {dpaudit.__version__}")
    print(
        f"jax {jax.__version__}, backend {jax.default_backend()}, "
        f"x64 {'on' if jax.config.jax_enable_x64 else 'off'}, "
        f"compilation cache {jax.config.jax_compilation_cache_dir or 'off'}"
    )
    print(f"dataset generators: {', '.join(generators())}")
    if args.target:
        for path in find_specs(args.target):
            print(_describe(load_spec(path)))
    return EXIT_OK


# ------------------------------------------------------------------ the command line


def _configure_cache(args: argparse.Namespace) -> None:
    """This run's compilation cache: off, ``--cache-dir``, or the per-user default.

    A folder that cannot be written is one ``dpaudit:`` line on stderr; the run goes on
    without the cache.
    """
    folder = getattr(args, "cache_dir", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", compilation_cache.CompilationCacheWarning)
        if getattr(args, "no_cache", False) or (folder or "").lower() in ("none", "off"):
            compilation_cache.disable_compilation_cache()
        elif folder:
            compilation_cache.enable_compilation_cache(folder)
        else:
            compilation_cache.ensure_compilation_cache()
    for warning in caught:
        if issubclass(warning.category, compilation_cache.CompilationCacheWarning):
            print(str(warning.message).splitlines()[0], file=sys.stderr)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )


def _add_target_options(p: argparse.ArgumentParser) -> None:
    """Targets, ``-k``, and the options of a ``FILE.py:CALLABLE`` target (audit, validate)."""
    p.add_argument(
        "targets",
        nargs="+",
        metavar="TARGET",
        help="a .toml spec, a folder of specs (searched recursively), or FILE.py:CALLABLE: a "
        "Mechanism or a builder returning one (with --blackbox: a sampler (data, n, key) -> "
        "releases)",
    )
    p.add_argument("-k", metavar="EXPR", help="only audits whose name or spec path matches EXPR: "
                   "words joined by and/or/not, as in pytest (e.g. -k 'faulty and not ecdf')")  # fmt: skip
    p.add_argument("--seed", type=int, help="override every spec's seed (FILE.py:CALLABLE: 0)")
    p.add_argument("--samples", type=int, help="override every spec's sample budget (a "
                   f"training spec's runs; FILE.py:CALLABLE: {CALLABLE_SAMPLES})")  # fmt: skip
    c = p.add_argument_group(
        "a FILE.py:CALLABLE target",
        "Audited against the claim its mechanism declares; --epsilon, --delta and --adjacency "
        "replace that part of it, --rho, --mu or --renyi state a claim in that notion instead "
        "(the output says which claim was audited and what it replaced).",
    )
    c.add_argument("--epsilon", type=float, help="the epsilon audited instead of the declared one")
    c.add_argument("--delta", type=float, help="the delta audited instead of the declared one")
    c.add_argument("--rho", type=float,
                   help="audit the claim rho-zCDP instead of the declared one")  # fmt: skip
    c.add_argument("--mu", type=float,
                   help="audit the claim mu-GDP instead of the declared one")  # fmt: skip
    c.add_argument("--renyi", action="append", metavar="ORDER,EPS",
                   help="audit the Renyi-DP claim epsilon(ORDER) <= EPS instead of the "
                   "declared one, repeatable (one per order); with --rho, --mu or --renyi, "
                   "--delta is the claim's anchor delta")  # fmt: skip
    c.add_argument("--adjacency", choices=("replace-one", "add-remove"),
                   help="the neighbour relation instead of the declared one")  # fmt: skip
    c.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a keyword argument of the builder (or sampler), repeatable; VALUE is a "
                   "TOML value (20, 0.5, true, [1, 2]) or else a string")  # fmt: skip
    source = c.add_mutually_exclusive_group()
    source.add_argument("--data", nargs=2, metavar=("D", "D_PRIME"),
                        help="the neighbouring datasets as two .npy/.npz files")  # fmt: skip
    source.add_argument("--generator", help="a named dataset generator (dpaudit info lists them)")
    c.add_argument("--data-param", action="append", metavar="KEY=VALUE",
                   help="a parameter of the generator, repeatable")  # fmt: skip
    b = p.add_argument_group("black-box audit of a sampler (with --blackbox)")
    b.add_argument("--blackbox", action="store_true",
                   help="the callable is a plain sampler (data, n, key) -> releases: audit it "
                   "from its samples (verdict violation or inconclusive)")  # fmt: skip
    b.add_argument("--statistic", "--method", dest="method", action=_StatisticOption,
                   choices=("auto", "model", "logistic", "mlp", "float", "bits"),
                   help="the test statistic (the API's statistic=; --method is its former, "
                   "deprecated name): the reference's privacy loss (model), a "
                   "classifier (logistic, mlp), reachability of float releases (float) or the "
                   "MLP on their bits (bits); auto: model when --reference is given, and float "
                   "when its fit is found")  # fmt: skip
    b.add_argument("--reference", metavar="MODEL",
                   help="a model of the intended release: a catalogue name or FILE.py:CALLABLE; "
                   "its claim is audited unless --epsilon is given")  # fmt: skip
    b.add_argument("--reference-param", action="append", metavar="KEY=VALUE",
                   help="a parameter of the reference's builder, repeatable")  # fmt: skip
    b.add_argument("--features", choices=("values", "kl"),
                   help="classifier features: the release values, or Karhunen–Loève "
                   "coefficients of the reference's basis")  # fmt: skip
    b.add_argument("--components", type=int, help="number of KL coefficients (--features kl)")
    b.add_argument("--objective", choices=("auto", "epsilon", "delta"),
                   help="what the chosen event maximises (default auto: for an (epsilon, "
                   "delta) claim, whichever of the two bounds certifies the larger margin "
                   "on the selection set)")  # fmt: skip
    b.add_argument("--stopping", choices=("fixed", "sequential"),
                   help="fixed: count all --samples; sequential: stop at the first of a few "
                   "pre-registered looks that certifies a violation (level spent over the "
                   "looks, confidence kept)")  # fmt: skip
    b.add_argument("--pairs",
                   choices=("auto", "answers", "histogram", "records", "labelled", "worst"),
                   help="generate candidate neighbours of the first dataset (auto: infer the "
                   "kind; see docs/blackbox.md) instead of auditing the one pair; worst (a "
                   "white-box mechanism, no --blackbox): audit the neighbour of the first "
                   "dataset whose summary moves most, the changed record at the corners of "
                   "the data bound (--domain, or the mechanism's record_space)")  # fmt: skip
    b.add_argument("--domain", nargs=2, type=float, metavar=("LO", "HI"),
                   help="the records' value range for --pairs auto/records/labelled/worst")  # fmt: skip
    b.add_argument("--select-samples", type=int,
                   help="selection releases per dataset (default: the engine's)")  # fmt: skip


class _StatisticOption(argparse.Action):
    """``--statistic``; its former name ``--method`` still works, with a line on stderr."""

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string == "--method":
            print("dpaudit: --method is deprecated; use --statistic (the API's statistic=).",
                  file=sys.stderr)  # fmt: skip
        setattr(namespace, self.dest, values)


def _add_error_options(p: argparse.ArgumentParser) -> None:
    """``--confidence`` (each audit) and ``--suite-confidence`` (the whole run)."""
    e = p.add_argument_group("statistical error (docs/cli.md, 'False alarms in a suite')")
    e.add_argument("--confidence", type=float, metavar="C",
                   help="confidence of every audit's certified bounds, in (0, 1), instead of "
                   "each spec's own (default: the spec's, 0.95 for FILE.py:CALLABLE)")  # fmt: skip
    e.add_argument("--suite-confidence", type=float, metavar="C", default=SUITE_CONFIDENCE,
                   help="1 - the run's false-alarm level: the probability that correct, exactly "
                   "tight mechanisms show any violation in the run is at most 1 - C (Holm's "
                   f"correction over the run's audits; default {SUITE_CONFIDENCE})")  # fmt: skip
    e.add_argument("--force", action="store_true",
                   help="run audits whose estimated time or memory is beyond the limits (a day, "
                   "2 GiB); without it they are refused with their estimate")  # fmt: skip


def _check_error_options(args) -> None:
    """``--confidence`` and ``--suite-confidence`` in ``(0, 1)`` and the draw helper's setting,
    checked before any audit (a bad ``DPAUDIT_DRAW_HELPER`` would otherwise be read only by a
    library audit, or not at all)."""
    from dpaudit.blackbox.drawhelper import helper_setting

    try:
        helper_setting()
    except ValueError as err:
        raise _spec_error(str(err)) from None
    for option, value in (("--confidence", getattr(args, "confidence", None)),
                          ("--suite-confidence", getattr(args, "suite_confidence", None))):  # fmt: skip
        if value is not None and not 0 < value < 1:
            raise _spec_error(
                f"{option} must lie strictly between 0 and 1, got {value!r}: it is 1 - the "
                "false-alarm probability (for example 0.95)."
            )


def _with_confidence(prepared: list[PreparedAudit], confidence: float | None) -> list:
    """Every prepared audit at ``--confidence`` (unchanged when it is not given)."""
    if confidence is None:
        return prepared
    return [
        dataclasses.replace(p, spec=dataclasses.replace(p.spec, confidence=float(confidence)))
        for p in prepared
    ]


def _correct_suite(outcomes, args, out) -> list:
    """Holm's correction over the run (:func:`dpaudit.estimation.significance.correct_suite`), stated."""
    from dpaudit.estimation.significance import correct_suite

    level = getattr(args, "suite_confidence", None) or SUITE_CONFIDENCE
    corrected = correct_suite([o.result for o in outcomes], level)
    demoted = sum(a.result is not b for a, b in zip(outcomes, corrected, strict=True))
    if len(outcomes) > 1 and not args.quiet:
        print(
            f"suite: false-alarm level {1 - level:.3g} over {len(outcomes)} audits (Holm's "
            f"correction); {demoted} violation(s) at the statistical resolution reported as "
            "borderline (inconclusive).",
            file=out,
            flush=True,
        )
    return [
        o if r is o.result else dataclasses.replace(o, result=r)
        for o, r in zip(outcomes, corrected, strict=True)
    ]


def _add_output_options(p: argparse.ArgumentParser) -> None:
    """Output files, verbosity, strictness, the compilation cache and workers (audit, run, check)."""
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only the closing counts line (and the failures)")  # fmt: skip
    p.add_argument("--json", metavar="FILE", help="write the JSON results to FILE ('-': stdout)")
    p.add_argument("--report", metavar="DIR",
                   help="write results.json and index.html (plots embedded) into DIR")  # fmt: skip
    p.add_argument("--junitxml", metavar="FILE",
                   help="write a JUnit XML file: one test case per audit, a failure for each "
                   "unexpected verdict (for CI systems)")  # fmt: skip
    p.add_argument("--write-regression-test", metavar="FILE",
                   help="write a pytest per unexpected verdict to FILE (e.g. "
                   "tests/test_dp_regressions.py): each pins the pair, seed, budget and claim "
                   "and fails until the mechanism is fixed")  # fmt: skip
    p.add_argument("--strict", action="store_true",
                   help="an inconclusive verdict without an expected one fails the run")  # fmt: skip
    _add_cache_options(p)
    p.add_argument("--workers", type=int,
                   help="run the specs in parallel on N local processes: this one and N-1 "
                   "workers (with --ray: CPUs of a local Ray instance, ignored for a "
                   "cluster)")  # fmt: skip
    p.add_argument("--ray", metavar="ADDRESS", help="run the specs on the Ray cluster at ADDRESS")


def _add_cache_options(p: argparse.ArgumentParser) -> None:
    """The compilation cache (audit, run, check, validate: building compiles programs too)."""
    p.add_argument("--cache-dir", metavar="DIR",
                   help="JAX compilation cache (default $DPAUDIT_CACHE_DIR, else "
                   "$XDG_CACHE_HOME/dpaudit/jax or ~/.cache/dpaudit/jax; 'none' turns it off)")  # fmt: skip
    p.add_argument("--no-cache", action="store_true",
                   help="compile without the JAX compilation cache (as DPAUDIT_CACHE=0)")  # fmt: skip


def _verbose_parent() -> argparse.ArgumentParser:
    # -v also after the command (dpaudit audit SPEC -v); SUPPRESS keeps the top-level value
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                         help="show the traceback of an error, and every audit's notes")  # fmt: skip
    return verbose


_EPILOG = (
    "Exit codes: 0 every audit finished and every verdict is acceptable; 1 an unexpected "
    "verdict (a violation, or a missed expected verdict); 2 invalid input (nothing written); 3 "
    "an internal error (a crash, a user's sys.exit, a full disk; no verdict, nothing "
    "published); 130 interrupted (Ctrl-C; no verdict, nothing published). Results go to "
    "stdout, progress and logs to stderr. Errors are one sentence on stderr; -v adds the "
    "traceback."
)


def build_parser() -> argparse.ArgumentParser:
    """The ``dpaudit`` argument parser (built without importing JAX).

    Returns:
        The parser, with one sub-parser per command.
    """
    parser = argparse.ArgumentParser(
        prog="dpaudit",
        description="Audit differential-privacy claims of mechanisms declared as numpyro models, "
        "or of implementations from their samples.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"dpaudit {dpaudit.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="show the traceback of an error, and every audit's notes")  # fmt: skip
    parents = [_verbose_parent()]
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", help="one of:")
    for name, text in (
        ("audit", "audit specs, folders of specs, or FILE.py:CALLABLE targets"),
        ("run", "deprecated name of 'audit' (former output: everything on stderr)"),
        ("check", "deprecated: 'validate' for specs, 'audit' for a FILE.py:CALLABLE"),
    ):
        p = sub.add_parser(name, help=text, description=text, parents=parents, epilog=_EPILOG)
        _add_target_options(p)
        _add_error_options(p)
        _add_output_options(p)
    text = (
        "build every target's mechanism, sampler and datasets and check them without auditing "
        "(models traced where they can be, user samplers run once)"
    )
    p = sub.add_parser("validate", help=text, description=text, parents=parents)
    _add_target_options(p)
    _add_cache_options(p)
    list_p = sub.add_parser("list", help="show the catalogue of mechanisms", parents=parents)
    group = list_p.add_mutually_exclusive_group()
    group.add_argument("--faulty", action="store_true", help="only the known-faulty mechanisms")
    group.add_argument("--all", action="store_true", help="correct and faulty mechanisms")
    info_p = sub.add_parser(
        "info",
        help="show the version, the JAX configuration and the dataset generators, and what each "
        "spec audits",
        parents=parents,
    )
    info_p.add_argument("target", nargs="?", help="a .toml spec or a folder of specs")
    return parser


def _error_sentence(err: BaseException) -> tuple[str, int]:
    """The one-sentence message and the exit code of an error that stopped a command."""
    if isinstance(err, ValueError | TypeError):  # SpecError and ReportPathError included
        return str(err), EXIT_INVALID
    if isinstance(err, KeyboardInterrupt):
        return "interrupted; no verdict, nothing was published.", EXIT_INTERRUPTED
    if isinstance(err, SystemExit):
        return (
            f"user code called sys.exit({err.code!r}) while the audits were loaded or run; "
            "no verdict, nothing was published.",
            EXIT_ERROR,
        )
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
        where = f" writing {err.filename}" if err.filename else ""
        return f"the disk is full{where}; nothing partial was published.", EXIT_ERROR
    if isinstance(err, OSError):
        return f"{_first_line(err)}; nothing partial was published.", EXIT_ERROR
    if isinstance(err, AuditCrash | WorkerDied):
        return str(err), EXIT_ERROR
    return f"internal error ({_first_line(err)}); please report it with -v.", EXIT_ERROR


_COMMANDS = {
    "audit": audit_targets,
    "validate": validate,
    "run": run,
    "check": check,
    "list": list_catalogue,
    "info": info,
}


def main(argv: list[str] | None = None) -> int:
    """Run the ``dpaudit`` command line.

    Args:
        argv: the arguments (without the program name); ``None`` reads
            ``sys.argv``. ``audit``, ``run``, ``check`` and ``validate`` turn the compilation
            cache on unless told otherwise (:mod:`dpaudit.core.compilation_cache`).

    Returns:
        The exit code (see the module docstring): :data:`EXIT_OK`,
        :data:`EXIT_FOUND`, :data:`EXIT_INVALID`, :data:`EXIT_ERROR` or
        :data:`EXIT_INTERRUPTED` (run as the program, Ctrl-C ends the process). An
        error is one sentence on stderr, with the traceback under ``--verbose``.
    """
    if argv is None:
        _keep_interrupts()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command not in _COMMANDS:
        parser.print_help()
        return EXIT_OK
    for option in ("samples", "select_samples", "components"):
        if (getattr(args, option, None) or 1) < 1:
            print(f"dpaudit: --{option.replace('_', '-')} must be >= 1.", file=sys.stderr)
            return EXIT_INVALID
    try:
        if hasattr(args, "cache_dir"):
            _configure_cache(args)
        return _COMMANDS[args.command](args)
    except (Exception, KeyboardInterrupt, SystemExit) as err:
        message, code = _error_sentence(err)
        if args.verbose:
            traceback.print_exc()
        print(f"dpaudit: {message}".splitlines()[0], file=sys.stderr)
        if code == EXIT_INTERRUPTED and argv is None:
            _end_interrupted()
        return code


def _keep_interrupts() -> None:
    """Make a Ctrl-C that lands inside a garbage-collector callback interrupt the run.

    Python raises ``KeyboardInterrupt`` in whatever Python code runs when ``SIGINT``
    arrives; inside a ``gc`` callback (JAX registers one that frees XLA buffers) the
    exception is "ignored" - printed and dropped - and the audit went on. The program's
    unraisable-exception hook now interrupts the main thread again, from a timer thread
    10 ms later, for a dropped ``KeyboardInterrupt`` (other exceptions go to the previous
    hook unchanged).
    """
    previous = sys.unraisablehook
    if getattr(previous, "_dpaudit_keeps_interrupts", False):
        return

    def hook(unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # not from here: the main thread would raise it at once, inside this hook (ignored
            # again); a moment later it is back in the audit (if not, this runs again)
            threading.Timer(0.01, _thread.interrupt_main).start()
            return
        previous(unraisable)

    hook._dpaudit_keeps_interrupts = True
    sys.unraisablehook = hook


def _end_interrupted() -> None:
    """End the ``dpaudit`` program after Ctrl-C, once its files are cleaned up.

    The interpreter's shutdown, with XLA's worker threads still inside an interrupted
    computation, has ended in a segmentation fault (exit 139). Every staging file is removed
    by the ``finally`` blocks that ran before this point; the process flushes its streams
    and leaves at once with :data:`EXIT_INTERRUPTED`.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
