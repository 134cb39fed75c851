"""Per-audit fixed costs of white-box audits run in sequence in one process (as ``make audit``).

For each spec (prepared with ``dpaudit.cli.main.prepare``, then ``run_audit``, then
``release_memory`` as the CLI does between audits) this prints the wall and CPU time of the
audit and what JAX reported doing inside it: jaxpr traces, lowerings to StableHLO, XLA
backend compilations, persistent-cache hits, and the seconds spent in each (the
``jax.monitoring`` events ``/jax/core/compile/jaxpr_trace_duration``,
``.../jaxpr_to_mlir_module_duration``, ``.../backend_compile_duration`` and
``/jax/compilation_cache/cache_hits``). Run it twice with the same ``--cache-dir`` to see the
warm figures of ``make audit`` (the first run fills the persistent cache). ``--passes 2``
runs the list twice in the same process: the second pass is the floor with every program in
memory (no trace, no lowering), i.e. what the audit costs beyond JAX's program building, unless
``release_memory`` dropped JAX's caches (resident memory above its budget; the last column).

``--profile NAME`` runs cProfile over that spec's audit (in its pass) and prints the top
functions by cumulative time.

Usage::

    PYTHONPATH=$PWD python benchmarks/audit_fixed_costs.py --cache-dir /tmp/c   # fills
    PYTHONPATH=$PWD python benchmarks/audit_fixed_costs.py --cache-dir /tmp/c --passes 2

Counts do not depend on the load; times are printed with the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
HIT = "/jax/compilation_cache/cache_hits"

#: A spread of families (scalar, vector, functional, structured) and the heaviest specs.
DEFAULT_SPECS = (
    "catalogue/laplace-mean",
    "catalogue/laplace-mean-rdp",
    "catalogue/geometric-count",
    "catalogue/gaussian-mean-classical",
    "catalogue/gaussian-mean-analytic",
    "catalogue/gaussian-mean-zcdp",
    "catalogue/iclp-qr-mean",
    "catalogue/iclp-qr-kde",
    "catalogue/svt",
    "catalogue/svt-dwork-roth",
    "faulty/svt-lyu-alg3",
    "faulty/svt-lyu-alg4",
    "faulty/svt-lyu-alg6",
    "faulty/svt-program-unscaled-query-noise",
    "catalogue/dpsgd-logistic",
    "faulty/dpsgd-ignores-steps",
    "faulty/dpsgd-noise-batch",
    "catalogue/dpsgd-logistic-rdp",
    "catalogue/bmr-ecdf",
    "catalogue/hrw-gaussian-kde",
)


class Events:
    """Counts and seconds of JAX's program-building events."""

    def __init__(self):
        self.count: Counter = Counter()
        self.seconds: Counter = Counter()

    def on_duration(self, event, duration, **kwargs):
        kind = EVENTS.get(event)
        if kind is not None:
            self.count[kind] += 1
            self.seconds[kind] += duration

    def on_event(self, event, **kwargs):
        if event == HIT:
            self.count["hit"] += 1

    def snapshot(self):
        return Counter(self.count), Counter(self.seconds)


def _resident_gb() -> float:
    """This process's resident memory in GB (Linux ``/proc``; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1e6
    except OSError:
        pass
    return 0.0


def _row(name, verdict, wall, cpu, events, before) -> str:
    count0, sec0 = before
    count, sec = events.snapshot()
    d = {k: count[k] - count0[k] for k in ("trace", "lower", "compile", "hit")}
    s = {k: sec[k] - sec0[k] for k in ("trace", "lower", "compile")}
    return (
        f"| {name} | {verdict} | {wall:.2f} | {cpu:.2f} | {d['trace']} / {s['trace']:.2f} "
        f"| {d['lower']} / {s['lower']:.2f} | {d['compile']} / {s['compile']:.2f} | {d['hit']} |"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", help="spec names under audits/ (default: a spread)")
    parser.add_argument("--cache-dir", default=None, help="persistent cache (default: none)")
    parser.add_argument("--passes", type=int, default=1, help="run the list this many times")
    parser.add_argument("--profile", default=None, help="cProfile this spec's audit")
    args = parser.parse_args(argv)
    if args.cache_dir is None:
        os.environ["DPAUDIT_CACHE"] = "0"

    import jax

    from dpaudit.cli.main import prepare, run_audit
    from dpaudit.core.compilation_cache import enable_compilation_cache
    from dpaudit.core.memory import release_memory

    if args.cache_dir is not None:
        enable_compilation_cache(args.cache_dir)
    events = Events()
    jax.monitoring.register_event_duration_secs_listener(events.on_duration)
    jax.monitoring.register_event_listener(events.on_event)
    names = args.specs or DEFAULT_SPECS
    paths = [ROOT / "audits" / f"{n}.toml" for n in names]
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    wall0, cpu0 = time.perf_counter(), time.process_time()
    print(f"load average before: {load}")
    header = (
        "| spec | verdict | wall s | CPU s | traces / s | lowerings / s | compiles / s | hits "
        "| RSS GB | caches dropped |"
    )
    for n in range(args.passes):
        print(f"\npass {n + 1}\n\n{header}\n" + "|---" * 10 + "|")
        totals = [0.0, 0.0]
        for name, path in zip(names, paths, strict=True):
            before, w, c = events.snapshot(), time.perf_counter(), time.process_time()
            (item,) = prepare([path])
            build = _row(
                f"{name} (build)",
                "",
                time.perf_counter() - w,
                time.process_time() - c,
                events,
                before,
            )
            print(f"{build} | |")
            before, w, c = events.snapshot(), time.perf_counter(), time.process_time()
            if args.profile == name:
                import cProfile
                import pstats

                profiler = cProfile.Profile()
                result = profiler.runcall(run_audit, item)
            else:
                result = run_audit(item)
            cleared = release_memory()
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            totals[0] += wall
            totals[1] += cpu
            row = _row(name, result.verdict, wall, cpu, events, before)
            print(f"{row} {_resident_gb():.2f} | {'yes' if cleared else ''} |", flush=True)
            if args.profile == name:
                pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
        print(f"\npass {n + 1} audits: {totals[0]:.1f} s wall, {totals[1]:.1f} s CPU")
    print(
        f"\ntotal {time.perf_counter() - wall0:.1f} s wall, {time.process_time() - cpu0:.1f} s "
        "CPU; load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )


if __name__ == "__main__":
    main()
