"""Command-line entry point ``dpaudit``.

Commands:

* ``dpaudit run SPEC_OR_DIR [--json FILE] [--report DIR] [--seed N] [--samples N] [--strict]``
  validates every spec first — white-box specs (``[mechanism]``, audited with
  :func:`dpaudit.audit`) and black-box specs (``[blackbox]``, audited from
  samples with :func:`dpaudit.blackbox_audit`) alike — then audits each and
  writes the JSON results and an HTML report.
* ``dpaudit list [--faulty | --all]`` shows the catalogue.
* ``dpaudit check SPEC_OR_DIR`` validates specs (builds every mechanism,
  sampler and dataset pair) without auditing; ``dpaudit check FILE.py:CALLABLE
  --epsilon E [--delta D] (--data D.npy D2.npy | --generator NAME)`` audits a
  user's mechanism once, without a spec file (``--blackbox``: the callable is a
  plain sampler ``(data, n, key) -> releases``, audited from its samples).
* ``dpaudit info [SPEC_OR_DIR]`` shows the version and the JAX configuration,
  and with specs their kind (white-box / black-box), what they audit and how.

Exit codes:

* **0** — every audit finished and every verdict is acceptable: no violation
  or incompatibility except where the spec's ``expected`` says so, and every
  ``expected`` verdict met.
* **1** — every audit finished, and one found an unexpected violation or
  incompatibility, or missed its expected verdict (with ``--strict``, an
  inconclusive verdict also counts).
* **2** — invalid input (a bad spec, a missing or malformed data file,
  datasets that are not neighbours, a ``--report`` path that is not a previous
  dpaudit report, a ``--json`` path that cannot be written); found before any
  audit runs where possible, and nothing is written.
* **3** — an internal error or an interrupted run: a builder, sampler or audit
  that crashed, a user's ``sys.exit`` inside a mechanism or sampler file,
  Ctrl-C, a full disk, a report that could not be drawn. No verdict is
  reported and nothing partial is published.

Errors are one sentence on stderr; ``-v``/``--verbose`` adds the traceback.
A black-box audit's verdict is ``violation`` or ``inconclusive``.
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import sys
import time
import traceback
from pathlib import Path

import jax

import dpaudit
from dpaudit import audit
from dpaudit.blackbox import blackbox_audit
from dpaudit.datasets import generate
from dpaudit.registry import entry
from dpaudit.report import (
    AuditOutcome,
    ReportPathError,
    check_json_path,
    check_report_folder,
    now,
    write_json,
    write_report,
)
from dpaudit.spec import (
    AuditSpec,
    BlackBoxTarget,
    PublicParameters,
    SpecError,
    blackbox_features,
    check_model_runs,
    check_sampler_runs,
    check_seed,
    find_specs,
    load_array_file,
    load_callable,
    load_pair,
    load_spec,
    resolve_blackbox,
    resolve_mechanism,
    with_overrides,
)

__all__ = [
    "BAD_VERDICTS",
    "EXIT_ERROR",
    "EXIT_FOUND",
    "EXIT_INVALID",
    "EXIT_OK",
    "AuditCrash",
    "PreparedAudit",
    "check",
    "info",
    "list_catalogue",
    "main",
    "prepare",
    "run",
    "run_audit",
]

EXIT_OK, EXIT_FOUND, EXIT_INVALID, EXIT_ERROR = 0, 1, 2, 3
#: Verdicts that fail a run unless the spec expects them.
BAD_VERDICTS = ("violation", "incompatible")


class AuditCrash(RuntimeError):
    """An audit, builder or report that crashed: no verdict (exit :data:`EXIT_ERROR`).

    The message is one sentence naming the spec and the error; the original
    exception is chained (``__cause__``) and shown with ``--verbose``.
    """


def _first_line(err: BaseException) -> str:
    """``TypeName: first line of the message`` of an exception."""
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0]}" if text else type(err).__name__


def _console():
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _with_claim(mechanism, claim):
    """The mechanism with the spec's epsilon, delta and adjacency (sensitivity kept)."""
    merged = dataclasses.replace(
        mechanism.claim, epsilon=claim.epsilon, delta=claim.delta, adjacency=claim.adjacency
    )
    return dataclasses.replace(mechanism, claim=merged)


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
        target: black-box: the :class:`~dpaudit.spec.BlackBoxTarget`; white-box: ``None``.
        features: black-box: the classifier features, or ``None`` for the release values.
        pair: the neighbouring datasets ``(D, D')``.
    """

    spec: AuditSpec
    mechanism: dpaudit.Mechanism | None = None
    target: BlackBoxTarget | None = None
    features: object = None
    pair: tuple = ()


def _prepare_one(path, seed: int | None, samples: int | None) -> PreparedAudit:
    """One spec prepared; a builder, sampler or generator that crashes is an :class:`AuditCrash`."""
    try:
        return _build_one(path, seed, samples)
    except (SpecError, ValueError, TypeError):  # invalid input, already one sentence
        raise
    except Exception as err:  # RuntimeError, KeyError, ... in user code: not the input's fault
        raise AuditCrash(f"{path}: building the audit crashed ({_first_line(err)}).") from err


def _build_one(path, seed: int | None, samples: int | None) -> PreparedAudit:
    """Load one spec, apply the overrides, build its mechanism or target and its datasets."""
    spec = with_overrides(load_spec(path), seed, samples)
    if spec.blackbox is None:
        mechanism, target = _with_claim(resolve_mechanism(spec), spec.claim), None
        pair = load_pair(spec, mechanism)
    else:
        mechanism, target = None, resolve_blackbox(spec)
        pair = load_pair(spec, target.public)
    try:
        dpaudit.check_adjacent(pair[0], pair[1], spec.claim.adjacency)
    except ValueError as err:
        raise SpecError(f"{spec.path}: data: {err}") from None
    if mechanism is not None:
        check_model_runs(spec.path, mechanism, pair)
    features = None if target is None else blackbox_features(spec, target, pair[0])
    if target is not None:
        check_sampler_runs(spec, target.sampler, features, pair)
    return PreparedAudit(spec, mechanism, target, features, tuple(pair))


def prepare(paths, seed: int | None = None, samples: int | None = None) -> list[PreparedAudit]:
    """Validate every spec, build every mechanism, sampler and dataset pair before auditing.

    Args:
        paths: spec files (see :func:`dpaudit.spec.find_specs`).
        seed: overrides every spec's seed, or ``None``.
        samples: overrides every spec's sample budget, or ``None``.

    Returns:
        One :class:`PreparedAudit` per spec, in order.

    Raises:
        SpecError: for an invalid spec, datasets that are not neighbours, or
            two specs with the same name.
    """
    prepared = [_prepare_one(path, seed, samples) for path in paths]
    names = [p.spec.name for p in prepared]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"two specs share the name {duplicates[0]!r}; names must be unique.")
    return prepared


def run_audit(item: PreparedAudit):
    """Run one prepared audit (white-box engine, or black-box from samples).

    Args:
        item: a spec prepared by :func:`prepare`.

    Returns:
        The :class:`~dpaudit.AuditResult` (white-box) or
        :class:`~dpaudit.BlackBoxResult` (black-box).
    """
    spec, (data, data_prime) = item.spec, item.pair
    # the spec's budget, the same for both routes; a CLI run draws no progress bar
    budget = {
        "samples": spec.samples,
        "seed": spec.seed,
        "confidence": spec.confidence,
        "progress": False,
    }
    if item.target is None:
        return audit(item.mechanism, data, data_prime, **budget)
    bb = spec.blackbox
    return blackbox_audit(
        item.target.sampler,
        data,
        data_prime,
        spec.claim,
        reference=item.target.reference,
        statistic=bb.method,
        features=item.features,
        select_samples=spec.select_samples,
        objective=bb.objective,
        classifier_options=dict(bb.classifier_options) or None,
        name=item.target.name,
        **budget,
    )


def _run_checked(item: PreparedAudit):
    """:func:`run_audit`, any failure turned into a :class:`SpecError` (no verdict, no report)."""
    try:
        return run_audit(item)
    except (TypeError, ValueError) as err:
        raise SpecError(f"{item.spec.path}: audit failed: {err}") from None
    except MemoryError as err:
        raise AuditCrash(
            f"{item.spec.path}: the audit ran out of memory; no report was written. Lower "
            "[budget].samples."
        ) from err
    except Exception as err:  # a crash is no verdict: stop, write nothing
        raise AuditCrash(
            f"{item.spec.path}: the audit crashed ({_first_line(err)}); no report was written."
        ) from err


def _outcome(item: PreparedAudit, result) -> AuditOutcome:
    spec = item.spec
    return AuditOutcome(
        name=spec.name,
        result=result,
        expected=spec.expected,
        spec=str(spec.path),
        mechanism=item.mechanism if item.target is None else item.target.mechanism,
        data=item.pair,
        description=spec.description,
    )


def _audit_all(prepared: list[PreparedAudit], console) -> list[AuditOutcome]:
    """Audit every prepared spec in turn, one line per verdict under a suite-level bar.

    The bar is rich's own (not :mod:`dpaudit.progress`): it changes its label per
    audit and prints the verdict lines above itself on the run's stderr console.
    """
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    outcomes = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("auditing", total=len(prepared))
        for item in prepared:
            progress.update(task, description=f"auditing {item.spec.name}")
            t0 = time.perf_counter()
            outcome = _outcome(item, _run_checked(item))
            outcomes.append(outcome)
            mark = "" if outcome.as_expected is None else (" ✓" if outcome.as_expected else " ✗")
            progress.console.print(
                f"  {item.spec.name}: {outcome.result.verdict}{mark} "
                f"({time.perf_counter() - t0:.1f} s)"
            )
            progress.advance(task)
    return outcomes


# ------------------------------------------------------------------ output


def _summary_table(outcomes):
    from rich.table import Table

    table = Table(title="dpaudit results")
    for column in (
        "audit",
        "kind",
        "claim",
        "verdict",
        "expected",
        "ε lower (cert.)",
        "ε at δ",
        "s",
    ):
        table.add_column(column)
    colours = {"pass": "green", "violation": "red", "incompatible": "red"}
    for o in outcomes:
        r = o.result
        colour = colours.get(r.verdict, "yellow")
        expected = "" if o.expected is None else ("✓ " if o.as_expected else "✗ ") + o.expected
        table.add_row(
            o.name,
            o.kind,
            f"({r.claim.epsilon:g}, {r.claim.delta:g})",
            f"[{colour}]{r.verdict}[/{colour}]",
            expected,
            f"{r.epsilon_lower:.4g}",
            _estimate(r),
            f"{r.seconds:.1f}",
        )
    return table


def _estimate(result) -> str:
    """The Monte Carlo epsilon at the claimed delta (white-box), or '–' (black-box: none)."""
    value = getattr(result, "epsilon_at_claimed_delta", {}).get("estimate")
    return "–" if value is None else f"{float(value):.4g}"


# ------------------------------------------------------------------ commands


def run(args) -> int:
    """``dpaudit run``: validate every spec, audit each, print the table, write JSON and report.

    Args:
        args: the parsed command line (``target``, ``json``, ``report``,
            ``seed``, ``samples``, ``strict``, ``workers``, ``ray``).

    Returns:
        :data:`EXIT_OK`, or :data:`EXIT_FOUND` when an audit failed (see the module docstring).

    Raises:
        SpecError: for an invalid spec or an audit that failed or crashed
            (nothing is written then).
    """
    console = _console()
    started = now()
    # the output paths are checked first: a run is never spent on output it cannot keep
    if args.report:
        check_report_folder(args.report)
    if args.json:
        check_json_path(args.json)
    if args.workers is not None or args.ray:  # Ray checked and started before any audit
        from dpaudit.distributed import run_suite_parallel, start_suite

        start_suite(args.workers, args.ray)
    prepared = prepare(find_specs(args.target), args.seed, args.samples)
    kinds = [p.spec.kind for p in prepared]
    console.print(
        f"dpaudit: {len(prepared)} audit(s) validated ({kinds.count('white-box')} white-box, "
        f"{kinds.count('black-box')} black-box); running."
    )
    if args.workers is not None or args.ray:  # specs as parallel Ray tasks, same results
        paths = [p.spec.path for p in prepared]
        results = run_suite_parallel(
            paths, args.seed, args.samples, workers=args.workers, address=args.ray
        )
        outcomes = [_outcome(item, r) for item, r in zip(prepared, results, strict=True)]
    else:
        outcomes = _audit_all(prepared, console)
    console.print(_summary_table(outcomes))
    _write_outputs(outcomes, args, started, console)
    failed = [o.name for o in outcomes if _failed(o, args.strict)]
    if failed:
        console.print(f"[red]{len(failed)} audit(s) failed:[/red] {', '.join(failed)}")
        return EXIT_FOUND
    return EXIT_OK


def _write_outputs(outcomes, args, started: str, console) -> None:
    """Write the report and the JSON; a failure other than the file system's is an AuditCrash."""
    try:
        if args.report:
            console.print(f"report: {write_report(outcomes, args.report, started=started)}")
        if args.json:
            console.print(f"json: {write_json(outcomes, args.json, started=started)}")
    except (OSError, ReportPathError):  # disk full, permissions: reported by main
        raise
    except Exception as err:  # e.g. a model raising while its sample paths are drawn
        raise AuditCrash(
            f"drawing the report failed ({_first_line(err)}); the audits finished but "
            "nothing was published."
        ) from err


def list_catalogue(args) -> int:
    """``dpaudit list``: the catalogue's names, claims and summaries as a table.

    Args:
        args: the parsed command line (``faulty``, ``all``).

    Returns:
        :data:`EXIT_OK`.
    """
    from rich.console import Console
    from rich.table import Table

    faulty = True if args.faulty else (None if args.all else False)
    table = Table(title="dpaudit catalogue" + (" (faulty)" if faulty else ""))
    table.add_column("name")
    table.add_column("claim")
    table.add_column("summary")
    for name in dpaudit.catalogue(faulty=faulty):
        e = entry(name)
        try:
            claim = dpaudit.build(name).claim
            text = f"({claim.epsilon:g}, {claim.delta:g}) {claim.adjacency}"
        except Exception as err:  # an entry that cannot build its example is shown, not hidden
            text = f"example does not build: {err}"
        table.add_row(name, text, e.summary[:100])
    Console().print(table)
    return EXIT_OK


def _describe(spec: AuditSpec) -> str:
    """One line: the spec's kind, what it audits and how, its claim and expectation."""
    claim = f"claim ({spec.claim.epsilon:g}, {spec.claim.delta:g}) {spec.claim.adjacency}"
    expected = f"expected {spec.expected}" if spec.expected else "no expected verdict"
    bb = spec.blackbox
    if bb is None:
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


def _check_specs(args) -> int:
    """Validate specs completely (mechanisms, samplers, datasets built) without auditing."""
    given = [f for f in ("epsilon", "data", "generator") if getattr(args, f) is not None]
    if given or args.blackbox:
        raise SpecError(
            f"dpaudit check {args.target} validates specs; --{(given or ['blackbox'])[0]} is "
            "for a FILE.py:CALLABLE."
        )
    prepared = prepare(find_specs(args.target))
    for item in prepared:
        print(_describe(item.spec))
    kinds = [p.spec.kind for p in prepared]
    print(
        f"{len(prepared)} spec(s) valid ({kinds.count('white-box')} white-box, "
        f"{kinds.count('black-box')} black-box)."
    )
    return EXIT_OK


def _user_mechanism(ref: str, here: Path) -> dpaudit.Mechanism:
    """``FILE.py:CALLABLE`` on the command line: a Mechanism, or a builder called without params."""
    target = load_callable(here, ref)
    mechanism = target if isinstance(target, dpaudit.Mechanism) else None
    if mechanism is None:
        if not callable(target):
            raise SpecError(f"{ref} is not callable.")
        try:
            mechanism = target()
        except TypeError as err:
            raise SpecError(f"{ref}: cannot call it without parameters ({err}).") from None
        except ValueError:
            raise
        except Exception as err:  # the user's builder crashed: no verdict
            raise AuditCrash(
                f"{ref}: building the mechanism crashed ({_first_line(err)})."
            ) from err
    if not isinstance(mechanism, dpaudit.Mechanism):
        raise SpecError(f"{ref} does not give a dpaudit.Mechanism.")
    return mechanism


def _command_line_pair(args, here: Path, public) -> tuple:
    """``(D, D')`` from ``--data`` files, else from ``--generator`` reading ``public``'s params."""
    if args.data:
        return tuple(load_array_file(here, Path(f)) for f in args.data)
    return generate(args.generator, public, seed=args.seed)


def _print_single(outcome: AuditOutcome, strict: bool) -> int:
    """Print one command-line audit's table and notes; its exit code."""
    _console().print(_summary_table([outcome]))
    for note in outcome.result.notes:
        _console().print(f"  note: {note}")
    return EXIT_FOUND if _failed(outcome, strict) else EXIT_OK


def check(args) -> int:
    """``dpaudit check``: validate specs, or audit one user callable without a spec file.

    Args:
        args: the parsed command line: ``target`` (a ``.toml``, a folder, or
            ``FILE.py:CALLABLE``) and, for a callable, ``epsilon``, ``delta``,
            ``adjacency``, ``data`` or ``generator``, ``samples``, ``seed``,
            ``strict``, ``blackbox``, ``method``, ``reference``.

    Returns:
        :data:`EXIT_OK`, or :data:`EXIT_FOUND` when the callable's audit failed.

    Raises:
        SpecError: for invalid specs, a missing ``--epsilon`` or data source,
            or a callable that gives no Mechanism (sampler).
    """
    if args.target.endswith(".toml") or Path(args.target).is_dir():
        return _check_specs(args)
    if args.epsilon is None:
        raise SpecError(f"dpaudit check {args.target} needs --epsilon (the claim audited).")
    if not args.data and not args.generator:
        raise SpecError(
            f"dpaudit check {args.target} needs --data D.npy D_PRIME.npy or --generator NAME."
        )
    here = Path.cwd() / "command-line"
    claim = dpaudit.Claim(
        epsilon=args.epsilon, delta=args.delta, adjacency=args.adjacency
    )  # validates epsilon/delta
    if args.blackbox:
        return _check_sampler(args, claim, here)
    if args.method is not None or args.reference is not None:
        raise SpecError("--method and --reference are for black-box checks (add --blackbox).")
    check_seed(here, "--seed", args.seed)
    mechanism = _with_claim(_user_mechanism(args.target, here), claim)
    pair = _command_line_pair(args, here, mechanism)
    check_model_runs(here, mechanism, pair)
    try:
        result = audit(
            mechanism, pair[0], pair[1], samples=args.samples, seed=args.seed, confidence=0.95
        )
    except (TypeError, ValueError):  # the engine's own input checks: invalid input
        raise
    except Exception as err:
        raise AuditCrash(f"{args.target}: the audit crashed ({_first_line(err)}).") from err
    outcome = AuditOutcome(name=mechanism.name, result=result, mechanism=mechanism, data=pair)
    return _print_single(outcome, args.strict)


def _check_sampler(args, claim, here: Path) -> int:
    """``dpaudit check FILE.py:SAMPLER --blackbox``: audit a plain sampler from its samples."""
    sampler = load_callable(here, args.target, "sampler")
    if not callable(sampler):
        raise SpecError(f"{args.target} is not callable.")
    name = f"{Path(args.target.rpartition(':')[0]).name}:{args.target.rpartition(':')[2]}"
    reference = None if args.reference is None else dpaudit.build(args.reference)
    public = reference if reference is not None else PublicParameters(name, {})
    pair = _command_line_pair(args, here, public)
    result = blackbox_audit(
        sampler,
        pair[0],
        pair[1],
        claim,
        reference=reference,
        statistic=args.method or "auto",
        samples=args.samples,
        seed=args.seed,
        name=name,
        progress=False,
    )
    return _print_single(AuditOutcome(name=name, result=result, data=pair), args.strict)


def info(args) -> int:
    """``dpaudit info``: the version and JAX configuration; with specs, what each audits.

    Args:
        args: the parsed command line (``target``: a spec, a folder, or ``None``).

    Returns:
        :data:`EXIT_OK`.

    Raises:
        SpecError: for an invalid spec.
    """
    print(f"dpaudit {dpaudit.__version__}")
    print(
        f"jax {jax.__version__}, backend {jax.default_backend()}, "
        f"x64 {'on' if jax.config.jax_enable_x64 else 'off'}"
    )
    if args.target:
        for path in find_specs(args.target):
            print(_describe(load_spec(path)))
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpaudit",
        description="Audit differential-privacy claims of mechanisms declared as numpyro models.",
        epilog="Exit codes: 0 every audit finished and every verdict is acceptable; 1 an "
        "unexpected verdict (a violation, or a missed expected verdict); 2 invalid input "
        "(nothing written); 3 an internal error or an interrupted run (a crash, a user's "
        "sys.exit, Ctrl-C, a full disk; no verdict, nothing published). Errors are one "
        "sentence on stderr; -v adds the traceback.",
    )
    parser.add_argument("--version", action="version", version=dpaudit.__version__)
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the traceback of an error"
    )
    # -v also after the command (dpaudit run SPEC -v); SUPPRESS keeps the top-level value
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show the traceback of an error",
    )
    sub = parser.add_subparsers(dest="command")
    run_p = sub.add_parser(
        "run", help="run an audit spec or every spec in a folder", parents=[verbose]
    )
    run_p.add_argument("target", help="a .toml spec or a folder of specs")
    run_p.add_argument("--json", help="write the JSON results to this file")
    run_p.add_argument("--report", help="write results.json and index.html into this folder")
    run_p.add_argument("--seed", type=int, help="override every spec's seed")
    run_p.add_argument("--samples", type=int, help="override every spec's sample budget")
    run_p.add_argument("--strict", action="store_true", help="fail on inconclusive verdicts too")
    run_p.add_argument("--workers", type=int, help="run specs in parallel on N local Ray workers")
    run_p.add_argument("--ray", metavar="ADDRESS", help="run specs on the Ray cluster at ADDRESS")
    list_p = sub.add_parser("list", help="show the catalogue of mechanisms", parents=[verbose])
    group = list_p.add_mutually_exclusive_group()
    group.add_argument("--faulty", action="store_true", help="only the known-faulty mechanisms")
    group.add_argument("--all", action="store_true", help="correct and faulty mechanisms")
    check_p = sub.add_parser(
        "check",
        help="validate specs (a .toml or a folder), or audit one mechanism or sampler from a "
        "file without a spec",
        parents=[verbose],
    )
    check_p.add_argument(
        "target",
        help="a .toml spec or a folder of specs (validated, not run), or file.py:callable "
        "(a Mechanism or a builder; with --blackbox a sampler (data, n, key) -> releases)",
    )
    check_p.add_argument("--epsilon", type=float)
    check_p.add_argument("--delta", type=float, default=0.0)
    check_p.add_argument("--adjacency", default="replace-one")
    source = check_p.add_mutually_exclusive_group()
    source.add_argument("--data", nargs=2, metavar=("D", "D_PRIME"), help="two .npy/.npz files")
    source.add_argument("--generator", help="a named generator (curves, points, ...)")
    check_p.add_argument("--samples", type=int, default=100_000)
    check_p.add_argument("--seed", type=int, default=0)
    check_p.add_argument("--strict", action="store_true")
    check_p.add_argument(
        "--blackbox", action="store_true", help="the callable is a plain sampler: audit its samples"
    )
    check_p.add_argument(
        "--method", choices=("auto", "model", "logistic", "mlp"), help="black-box statistic"
    )
    check_p.add_argument("--reference", help="black-box: a catalogue model of the intended release")
    info_p = sub.add_parser(
        "info",
        help="show the version and the JAX configuration, and the kind of specs",
        parents=[verbose],
    )
    info_p.add_argument("target", nargs="?", help="a .toml spec or a folder of specs")
    return parser


def _error_sentence(err: BaseException) -> tuple[str, int]:
    """The one-sentence message and the exit code of an error that stopped a command."""
    if isinstance(err, (SpecError, ValueError, TypeError)):  # ReportPathError included
        return str(err), EXIT_INVALID
    if isinstance(err, KeyboardInterrupt):
        return "interrupted; no verdict, nothing was published.", EXIT_ERROR
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
    if isinstance(err, AuditCrash):
        return str(err), EXIT_ERROR
    return f"internal error ({_first_line(err)}); please report it with -v.", EXIT_ERROR


def main(argv: list[str] | None = None) -> int:
    """Run the ``dpaudit`` command line.

    Args:
        argv: the arguments (without the program name); ``None`` reads ``sys.argv``.

    Returns:
        The exit code (see the module docstring): :data:`EXIT_OK`,
        :data:`EXIT_FOUND`, :data:`EXIT_INVALID` or :data:`EXIT_ERROR`. An
        error is one sentence on stderr, with the traceback under ``--verbose``.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    commands = {"run": run, "list": list_catalogue, "check": check, "info": info}
    if args.command not in commands:
        parser.print_help()
        return EXIT_OK
    if getattr(args, "samples", None) is not None and args.samples < 1:
        print("dpaudit: --samples must be >= 1.", file=sys.stderr)
        return EXIT_INVALID
    try:
        return commands[args.command](args)
    except (Exception, KeyboardInterrupt, SystemExit) as err:
        message, code = _error_sentence(err)
        if args.verbose:
            traceback.print_exc()
        print(f"dpaudit: {message}".splitlines()[0], file=sys.stderr)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
