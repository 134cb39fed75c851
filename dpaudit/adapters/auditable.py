"""What a library adapter hands to the black-box engine: sampler, claim, data and neighbours.

An adapter (:mod:`~dpaudit.adapters.opendp`, :mod:`~dpaudit.adapters.diffprivlib`)
translates a library object into the four things :func:`~dpaudit.blackbox_audit`
needs, with the translation written down in :attr:`Auditable.notes`:

* a batch sampler ``sampler(data, n, key) -> releases``;
* the claim (a :class:`~dpaudit.Claim` or a notion claim such as
  :class:`~dpaudit.model.claims.ZCDPClaim`) with its adjacency;
* a base dataset ``data`` from the library's input domain;
* the neighbours: an explicit list of pairs, or an
  :class:`~dpaudit.blackbox.AutoPairs` generating them around ``data`` under the
  claim's adjacency.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from dpaudit.blackbox import AutoPairs, BlackBoxResult, blackbox_audit

__all__ = [
    "Auditable",
    "find_named",
    "library_arguments",
    "run_library_audits",
    "write_library_specs",
]


@dataclasses.dataclass(frozen=True)
class Auditable:
    """A library mechanism made auditable: what :func:`~dpaudit.blackbox_audit` takes.

    Attributes:
        name: the mechanism's name in reports.
        sampler: ``sampler(data, n, key) -> releases`` (``n`` releases stacked on axis 0).
        claim: the claim audited: the library's own statement, or the one a caller gave.
        data: the base dataset (records, labelled records ``(X, y)`` or query answers).
        pairs: the neighbours: a list of ``(D, D')`` pairs, or an
            :class:`~dpaudit.blackbox.AutoPairs` built around ``data``.
        library_claim: what the library itself states (e.g. OpenDP's privacy map at
            ``d_in``), which :attr:`claim` replaces when a caller states another.
        reproducible: whether the sampler replays its key (OpenDP's randomness cannot be
            seeded: ``False``; the engine checks it again and says so in the result).
        notes: one sentence per translation step (measure, metric, domain, batching).
    """

    name: str
    sampler: Callable
    claim: Any
    data: Any
    pairs: Any
    library_claim: Any = None
    reproducible: bool = True
    notes: tuple[str, ...] = ()

    def audit(self, **options) -> BlackBoxResult:
        """Run :func:`~dpaudit.blackbox_audit` on this mechanism.

        Args:
            **options: keyword arguments of :func:`~dpaudit.blackbox_audit` (``samples``,
                ``select_samples``, ``seed``, ``statistic``, ``progress``, ...); ``pairs``
                and ``name`` default to this record's.

        Returns:
            The :class:`~dpaudit.BlackBoxResult`, with this record's notes appended.
        """
        options.setdefault("name", self.name)
        pairs = options.pop("pairs", self.pairs)
        if isinstance(pairs, AutoPairs | str):
            result = blackbox_audit(
                self.sampler, self.data, None, self.claim, pairs=pairs, **options
            )
        else:
            result = blackbox_audit(self.sampler, None, None, self.claim, pairs=pairs, **options)
        return dataclasses.replace(result, notes=(*result.notes, *self.notes))


def find_named(items, name: str, library: str):
    """The item of ``items`` whose ``name`` is ``name`` (a shipped library audit, by name).

    Args:
        items: records with a ``name`` field (the audits of a library script).
        name: the name looked up.
        library: the library's name, for the message.

    Returns:
        The item.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    for item in items:
        if item.name == name:
            return item
    raise ValueError(f"no {library} audit {name!r}; one of {[i.name for i in items]}.")


def library_arguments(description: str, write_specs: bool = True) -> argparse.ArgumentParser:
    """The command line shared by the library scripts of ``audits/libraries``.

    Args:
        description: the script's one-line description.
        write_specs: also offer ``--write-specs DIR`` (the scripts that ship specs).

    Returns:
        A parser with ``--samples``, ``--seed``, ``-k NAME`` (``names``) and, when asked,
        ``--write-specs``; a script adds its own options to it.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--samples", type=int, default=None, help="default: each audit's budget")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("-k", dest="names", action="append", help="run only these audits")
    if write_specs:
        parser.add_argument(
            "--write-specs",
            metavar="DIR",
            help="write the TOML specs and data files into DIR, run none",
        )
    return parser


def write_library_specs(folder, entries: Iterable[tuple]) -> list[Path]:
    """Write library audits' specs and their two dataset files (a script's ``--write-specs``).

    Args:
        folder: the target folder (``audits/libraries``); its ``data/`` folder is created.
        entries: one ``(spec_name, text, data_stem, (D, D'))`` per audit: the spec's file
            name, its TOML text, and the datasets written to ``data/<data_stem>.D.npy`` and
            ``data/<data_stem>.D-prime.npy``.

    Returns:
        The paths written, each spec followed by its two data files.
    """
    folder = Path(folder)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    written = []
    for spec_name, text, stem, pair in entries:
        spec = folder / spec_name
        spec.write_text(text)
        written.append(spec)
        for suffix, data in zip(("D", "D-prime"), pair, strict=True):
            path = folder / "data" / f"{stem}.{suffix}.npy"
            np.save(path, np.asarray(data))
            written.append(path)
    return written


def run_library_audits(args, audits, library: str, run: Callable, line: Callable, write_specs=None):
    """A library script's main: write its specs, or run its audits and print a line each.

    Args:
        args: the parsed command line of :func:`library_arguments` (``names``, and
            ``write_specs`` when the script ships specs).
        audits: the script's audits, records with ``name`` and ``expected`` (the expected
            verdict); ``-k NAME`` picks some by :func:`find_named`.
        library: the library's name, for an unknown name's message.
        run: ``run(audit) -> result``, a result with a ``verdict``.
        line: ``line(audit, result, seconds, cpu) -> str``, the audit's line, given the
            audit's wall and CPU seconds.
        write_specs: ``write_specs(folder) -> paths``, called instead of any audit when
            ``--write-specs DIR`` was given.

    Returns:
        The exit code: 1 if a verdict differs from its expectation, else 0.

    Raises:
        ValueError: for an unknown name after ``-k``.
    """
    if write_specs is not None and args.write_specs:
        print(f"{len(write_specs(args.write_specs))} files written to {args.write_specs}")
        return 0
    chosen = [find_named(audits, n, library) for n in args.names] if args.names else list(audits)
    failures = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    for audit in chosen:
        t0, c0 = time.perf_counter(), time.process_time()
        result = run(audit)
        failures += result.verdict != audit.expected
        print(line(audit, result, time.perf_counter() - t0, time.process_time() - c0), flush=True)
    print(
        f"{len(chosen)} audits, {failures} unexpected, {time.perf_counter() - start:.1f} s "
        f"(CPU {time.process_time() - cpu_start:.1f} s)"
    )
    return 1 if failures else 0
