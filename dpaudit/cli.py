"""Command-line entry point ``dpaudit``.

Commands:

* ``dpaudit run SPEC_OR_DIR [--json FILE] [--report DIR] [--seed N] [--samples N] [--strict]``
  validates every spec first, then audits each and writes the JSON results and
  an HTML report.
* ``dpaudit list [--faulty | --all]`` shows the catalogue.
* ``dpaudit check FILE.py:CALLABLE --epsilon E [--delta D] (--data D.npy D2.npy |
  --generator NAME)`` audits a user's mechanism once, without a spec file.
* ``dpaudit info`` shows the version and the JAX configuration.

Exit codes: **0** when every audit's verdict is acceptable — no violation or
incompatibility except where the spec's ``expected`` says so, and every
``expected`` verdict met; **1** when an audit found an unexpected violation or
incompatibility, or missed its expected verdict (with ``--strict``, an
inconclusive verdict also counts); **2** on invalid input (a bad spec, a
missing file, datasets that are not neighbours), in which case nothing is
written.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import jax

import dpaudit
from dpaudit.spec import SpecError, find_specs, load_pair, load_spec, resolve_mechanism

EXIT_OK, EXIT_FOUND, EXIT_INVALID = 0, 1, 2
BAD_VERDICTS = ("violation", "incompatible")


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


def _prepare(paths, seed, samples):
    """Validate every spec, build every mechanism and dataset pair before auditing anything."""
    prepared = []
    for path in paths:
        spec = load_spec(path)
        if seed is not None:
            spec = dataclasses.replace(spec, seed=seed)
        if samples is not None:
            spec = dataclasses.replace(spec, samples=samples)
        mechanism = _with_claim(resolve_mechanism(spec), spec.claim)
        pair = load_pair(spec, mechanism)
        try:
            dpaudit.check_adjacent(pair[0], pair[1], spec.claim.adjacency)
        except ValueError as err:
            raise SpecError(f"{spec.path}: data: {err}") from None
        prepared.append((spec, mechanism, pair))
    names = [s.name for s, _, _ in prepared]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SpecError(f"two specs share the name {duplicates[0]!r}; names must be unique.")
    return prepared


def _summary_table(outcomes):
    from rich.table import Table

    table = Table(title="dpaudit results")
    for column in ("audit", "claim", "verdict", "expected", "ε lower (cert.)", "ε at δ", "s"):
        table.add_column(column)
    colours = {"pass": "green", "violation": "red", "incompatible": "red"}
    for o in outcomes:
        r = o.result
        colour = colours.get(r.verdict, "yellow")
        expected = "" if o.expected is None else ("✓ " if o.as_expected else "✗ ") + o.expected
        table.add_row(
            o.name,
            f"({r.claim.epsilon:g}, {r.claim.delta:g})",
            f"[{colour}]{r.verdict}[/{colour}]",
            expected,
            f"{r.epsilon_lower:.4g}",
            f"{_estimate(r):.4g}",
            f"{r.seconds:.1f}",
        )
    return table


def _estimate(result) -> float:
    value = result.epsilon_at_claimed_delta.get("estimate")
    return float("nan") if value is None else float(value)


def run(args) -> int:
    from dpaudit.audit import audit
    from dpaudit.report import AuditOutcome, _now, write_json, write_report

    console = _console()
    started = _now()
    prepared = _prepare(find_specs(args.target), args.seed, args.samples)
    console.print(f"dpaudit: {len(prepared)} audit(s) validated; running.")
    outcomes = []
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("auditing", total=len(prepared))
        for spec, mechanism, (data, data_prime) in prepared:
            progress.update(task, description=f"auditing {spec.name}")
            t0 = time.perf_counter()
            try:
                result = audit(
                    mechanism,
                    data,
                    data_prime,
                    samples=spec.samples,
                    seed=spec.seed,
                    confidence=spec.confidence,
                    progress=False,
                )
            except (TypeError, ValueError) as err:
                raise SpecError(f"{spec.path}: audit failed: {err}") from None
            except Exception as err:  # a crash is no verdict: stop, write nothing
                message = str(err).splitlines()[0] if str(err) else ""
                raise SpecError(
                    f"{spec.path}: audit crashed ({type(err).__name__}: {message}); no report "
                    "was written. Lower [budget].samples if memory ran out."
                ) from None
            outcome = AuditOutcome(
                name=spec.name,
                result=result,
                expected=spec.expected,
                spec=str(spec.path),
                mechanism=mechanism,
                data=(data, data_prime),
                description=spec.description,
            )
            outcomes.append(outcome)
            mark = "" if outcome.as_expected is None else (" ✓" if outcome.as_expected else " ✗")
            progress.console.print(
                f"  {spec.name}: {result.verdict}{mark} ({time.perf_counter() - t0:.1f} s)"
            )
            progress.advance(task)
    console.print(_summary_table(outcomes))
    if args.report:
        index = write_report(outcomes, args.report, started=started)
        console.print(f"report: {index}")
    if args.json:
        console.print(f"json: {write_json(outcomes, args.json, started=started)}")
    failed = [o.name for o in outcomes if _failed(o, args.strict)]
    if failed:
        console.print(f"[red]{len(failed)} audit(s) failed:[/red] {', '.join(failed)}")
        return EXIT_FOUND
    return EXIT_OK


def list_catalogue(args) -> int:
    from rich.console import Console
    from rich.table import Table

    from dpaudit.mechanism import entry

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


def check(args) -> int:
    """Audit one user mechanism without a spec file (builds a temporary spec in memory)."""
    from dpaudit.audit import audit
    from dpaudit.datasets import generate
    from dpaudit.spec import _load_array_file, _load_callable

    here = Path.cwd() / "command-line"
    target = _load_callable(here, args.callable)
    mechanism = target if isinstance(target, dpaudit.Mechanism) else None
    if mechanism is None:
        if not callable(target):
            raise SpecError(f"{args.callable} is not callable.")
        try:
            mechanism = target()
        except TypeError as err:
            raise SpecError(
                f"{args.callable}: cannot call it without parameters ({err})."
            ) from None
    if not isinstance(mechanism, dpaudit.Mechanism):
        raise SpecError(f"{args.callable} does not give a dpaudit.Mechanism.")
    claim = dpaudit.Claim(
        epsilon=args.epsilon, delta=args.delta, adjacency=args.adjacency
    )  # validates epsilon/delta
    mechanism = _with_claim(mechanism, claim)
    if args.data:
        pair = tuple(_load_array_file(here, Path(f)) for f in args.data)
    else:
        pair = generate(args.generator, mechanism, seed=args.seed)
    result = audit(
        mechanism, pair[0], pair[1], samples=args.samples, seed=args.seed, confidence=0.95
    )
    from dpaudit.report import AuditOutcome

    outcome = AuditOutcome(name=mechanism.name, result=result, mechanism=mechanism, data=pair)
    _console().print(_summary_table([outcome]))
    for note in result.notes:
        _console().print(f"  note: {note}")
    return EXIT_FOUND if _failed(outcome, args.strict) else EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dpaudit",
        description="Audit differential-privacy claims of mechanisms declared as numpyro models.",
        epilog="Exit codes: 0 all verdicts acceptable, 1 a violation (or a missed expected "
        "verdict), 2 invalid input.",
    )
    parser.add_argument("--version", action="version", version=dpaudit.__version__)
    sub = parser.add_subparsers(dest="command")
    run_p = sub.add_parser("run", help="run an audit spec or every spec in a folder")
    run_p.add_argument("target", help="a .toml spec or a folder of specs")
    run_p.add_argument("--json", help="write the JSON results to this file")
    run_p.add_argument("--report", help="write results.json and index.html into this folder")
    run_p.add_argument("--seed", type=int, help="override every spec's seed")
    run_p.add_argument("--samples", type=int, help="override every spec's sample budget")
    run_p.add_argument("--strict", action="store_true", help="fail on inconclusive verdicts too")
    list_p = sub.add_parser("list", help="show the catalogue of mechanisms")
    group = list_p.add_mutually_exclusive_group()
    group.add_argument("--faulty", action="store_true", help="only the known-faulty mechanisms")
    group.add_argument("--all", action="store_true", help="correct and faulty mechanisms")
    check_p = sub.add_parser("check", help="audit one mechanism from a file, without a spec")
    check_p.add_argument("callable", help="file.py:callable (a Mechanism or a builder)")
    check_p.add_argument("--epsilon", type=float, required=True)
    check_p.add_argument("--delta", type=float, default=0.0)
    check_p.add_argument("--adjacency", default="replace-one")
    source = check_p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", nargs=2, metavar=("D", "D_PRIME"), help="two .npy/.npz files")
    source.add_argument("--generator", help="a named generator (curves, points, ...)")
    check_p.add_argument("--samples", type=int, default=100_000)
    check_p.add_argument("--seed", type=int, default=0)
    check_p.add_argument("--strict", action="store_true")
    sub.add_parser("info", help="show the version and the JAX configuration")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "info":
        print(f"dpaudit {dpaudit.__version__}")
        print(
            f"jax {jax.__version__}, backend {jax.default_backend()}, "
            f"x64 {'on' if jax.config.jax_enable_x64 else 'off'}"
        )
        return EXIT_OK
    commands = {"run": run, "list": list_catalogue, "check": check}
    if args.command not in commands:
        parser.print_help()
        return EXIT_OK
    if getattr(args, "samples", None) is not None and args.samples < 1:
        print("dpaudit: --samples must be >= 1.", file=sys.stderr)
        return EXIT_INVALID
    try:
        return commands[args.command](args)
    except (SpecError, ValueError, TypeError) as err:
        print(f"dpaudit: {err}".splitlines()[0], file=sys.stderr)
        return EXIT_INVALID


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
