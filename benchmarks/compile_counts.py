"""How many XLA programs a suite of catalogue audits compiles in one process.

Runs a representative subset of ``audits/catalogue`` (white-box specs of the Laplace,
Gaussian and ICLP families, several of each with other parameters or other release
shapes) in one process, exactly as ``dpaudit audit`` runs them (``dpaudit.cli.main.prepare``
then ``run_audit``), with no persistent compilation cache, and counts the XLA backend
compilations (the ``/jax/core/compile/backend_compile_duration`` event JAX reports once per
compiled program) per spec. With ``--names`` it also prints which jitted functions compiled
for each spec (``jax_log_compiles``), so a program that should have been reused stands out.

Usage::

    python benchmarks/compile_counts.py                 # the default subset
    python benchmarks/compile_counts.py --names         # and what compiled, per spec
    python benchmarks/compile_counts.py --samples 4000 audits/catalogue/laplace-mean.toml ...
    python benchmarks/compile_counts.py --suite audits/   # the whole CLI run, one process

``--suite`` runs ``dpaudit audit DIR --report TMP`` (the CLI itself, serially, no persistent
cache) in this process and prints its total compilations and the process's peak resident
memory (``getrusage``), the figures of ``make audit`` without a cache.

Counts do not depend on the load; wall and CPU time are printed beside them with the load
average.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's dpaudit, not an installed one
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"

#: Families with several members of one release shape, and one of another shape each.
DEFAULT_SPECS = (
    "laplace-mean",
    "laplace-mean-rdp",
    "geometric-count",
    "composed-laplace-queries",
    "gaussian-mean-classical",
    "gaussian-mean-analytic",
    "gaussian-mean-zcdp",
    "gaussian-mean-gdp",
    "composed-gaussian-queries",
    "iclp-qr-mean",
    "iclp-qr-kde",
    "iclp-ar-mean",
    "mrs-penalized-mean",
    "mrs-penalized-mean-coefficients",
)


def _memory() -> str:
    """Resident and peak resident memory of this process, in GB (Linux ``/proc``)."""
    fields = {}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1e6  # kB -> GB
    except OSError:
        return "- | -"
    return f"{fields.get('VmRSS', 0):.2f} | {fields.get('VmHWM', 0):.2f}"


class _Names(logging.Handler):
    """Collects the names of the jitted functions JAX reports compiling."""

    PATTERN = re.compile(r"Finished XLA compilation of (\S+)")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.names: Counter = Counter()

    def emit(self, record):
        match = self.PATTERN.search(record.getMessage())
        if match:
            self.names[match.group(1)] += 1


def _suite(folder: str) -> None:
    """The CLI's serial run of ``folder`` in this process: compilations and peak RSS."""
    import resource
    import tempfile

    import jax

    from dpaudit.cli.main import main as cli

    count = [0]

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    wall, cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as reports:
        code = cli(["audit", folder, "--report", reports])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6  # kB -> GB
    print(
        f"\nsuite {folder}: exit {code}; {count[0]} XLA compilations; peak RSS {peak:.2f} GB; "
        f"{time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU; "
        f"load average before {load}, after " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", help="spec files (default: a catalogue subset)")
    parser.add_argument("--samples", type=int, default=None, help="override every budget")
    parser.add_argument("--names", action="store_true", help="print what compiled per spec")
    parser.add_argument("--suite", default=None, help="run the CLI on this folder instead")
    parser.add_argument(
        "--release", action="store_true", help="release_memory() after each spec, as the CLI"
    )
    args = parser.parse_args(argv)
    if args.suite is not None:
        _suite(args.suite)
        return

    import jax

    from dpaudit.cli.main import prepare, run_audit

    if args.release:
        from dpaudit.core.memory import release_memory

    paths = [Path(p) for p in args.specs] or [
        ROOT / "audits" / "catalogue" / f"{name}.toml" for name in DEFAULT_SPECS
    ]
    count = [0]

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    handler = _Names()
    if args.names:
        jax.config.update("jax_log_compiles", True)
        for name in ("jax._src.interpreters.pxla", "jax._src.dispatch", "jax"):
            logging.getLogger(name).addHandler(handler)
            logging.getLogger(name).propagate = False
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    wall, cpu = time.perf_counter(), time.process_time()
    count[0] = 0
    prepared = prepare(paths, samples=args.samples)
    print(f"load average before: {load}; preparing {len(paths)} specs: {count[0]} compilations")
    print("\n| spec | verdict | compilations | cumulative | wall s | RSS GB | peak GB |")
    print("|---|---|---|---|---|---|---|")
    total = count[0]
    for item in prepared:
        before, start = count[0], time.perf_counter()
        handler.names.clear()
        result = run_audit(item)
        if args.release:
            release_memory()
        total = count[0]
        print(
            f"| {item.spec.name} | {result.verdict} | {count[0] - before} | {total} "
            f"| {time.perf_counter() - start:.1f} | {_memory()} |"
        )
        if args.names:
            print("|   | " + ", ".join(f"{n} x{c}" for n, c in sorted(handler.names.items())))
    print(
        f"\ntotal: {total} XLA compilations; {time.perf_counter() - wall:.1f} s wall, "
        f"{time.process_time() - cpu:.1f} s CPU; load average after: "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )


if __name__ == "__main__":
    main()
