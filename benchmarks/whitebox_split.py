"""Where the warm time of a white-box audit goes: stages of ``run_audit`` by cProfile.

Each spec is prepared and audited in one process as ``make audit`` does (``prepare``,
``run_audit``, ``release_memory``), with a persistent compilation cache (``--cache-dir``;
run once to fill it, then again: the second process is the warm figure). ``--passes 2``
audits the list twice in the process; the last pass is profiled. Printed per audit: wall
and CPU seconds, then the cumulative seconds of each stage (cProfile's clock, so wall
seconds inflated by the load like the rest; read the shares):

* ``plan``: tracing the model, release laws, route and the exact accounting (``plan_audit``);
* ``pilot``: the pilot run placing the epsilon grid (``epsilon_grid``);
* ``monte carlo``: both directions' chunks (``run_directions``: draws, losses, the fold);
* ``certificate``: re-evaluating the best releases exactly (``find_certificate``);
* ``summaries``: the verdict, curves and accounting read-outs (``_conclude``);
* ``jax build``: tracing and lowering programs (JAX's monitoring events), inside the above;
* ``accounting``: ``DiscretePLD`` / ``ExactAccounting`` calls, inside the above.

Usage::

    PYTHONPATH=$PWD python benchmarks/whitebox_split.py --cache-dir .cache/jax SPEC...

Counts do not depend on the load; times are printed with the load average.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STAGES = {
    "plan": ("plan.py", "plan_audit"),
    "pilot": ("run.py", "epsilon_grid"),
    "monte carlo": ("run.py", "run_directions"),
    "certificate": ("certificate.py", "find_certificate"),
    "summaries": ("engine.py", "_conclude"),
}
ACCOUNTING = ("profiles.py", "suprema.py", "composition.py", "subsampling.py")
BUILD_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


def _stage_seconds(stats: pstats.Stats) -> dict[str, float]:
    """Cumulative seconds of each stage's entry function (and of accounting entry points)."""
    out = dict.fromkeys((*STAGES, "accounting"), 0.0)
    for (filename, _, function), (_, _, _, cumulative, callers) in stats.stats.items():
        for stage, (file_end, name) in STAGES.items():
            if function == name and filename.endswith(file_end):
                out[stage] += cumulative
        if filename.endswith(ACCOUNTING) and "/accounting/" in filename:
            # count only entries from outside the accounting package (no double counting)
            outside = any(
                not (c[0].endswith(ACCOUNTING) and "/accounting/" in c[0]) for c in callers
            )
            if outside and not function.startswith("<"):
                out["accounting"] += sum(
                    v[3]
                    for c, v in callers.items()
                    if not (c[0].endswith(ACCOUNTING) and "/accounting/" in c[0])
                )
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", help="spec names under audits/")
    parser.add_argument("--cache-dir", default=None, help="persistent cache (default: none)")
    parser.add_argument("--passes", type=int, default=1, help="audit the list this many times")
    parser.add_argument("--top", type=int, default=0, help="print the top N functions (tottime)")
    args = parser.parse_args(argv)
    if args.cache_dir is None:
        os.environ["DPAUDIT_CACHE"] = "0"

    import jax

    from dpaudit.cli.main import prepare, run_audit
    from dpaudit.core.compilation_cache import enable_compilation_cache
    from dpaudit.core.memory import release_memory

    if args.cache_dir is not None:
        enable_compilation_cache(args.cache_dir)
    build = {"n": 0, "s": 0.0, "compiles": 0}

    def on_duration(event, duration, **kwargs):
        if event in BUILD_EVENTS:
            build["n"] += 1
            build["s"] += duration
            build["compiles"] += event == BUILD_EVENTS[2]

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    cols = ("wall", "CPU", *STAGES, "accounting", "jax build", "compiles")
    print("\n| spec | verdict | " + " | ".join(cols) + " |\n" + "|---" * (len(cols) + 2) + "|")
    total = [0.0, 0.0]
    for p in range(args.passes):
        last = p == args.passes - 1
        for name in args.specs:
            (item,) = prepare([ROOT / "audits" / f"{name}.toml"])
            b0 = dict(build)
            w, c = time.perf_counter(), time.process_time()
            profiler = cProfile.Profile() if last else None
            result = profiler.runcall(run_audit, item) if last else run_audit(item)
            release_memory()
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            if not last:
                continue
            total[0] += wall
            total[1] += cpu
            stats = pstats.Stats(profiler)
            seconds = _stage_seconds(stats)
            cells = [f"{wall:.2f}", f"{cpu:.2f}", *(f"{seconds[s]:.2f}" for s in seconds)]
            cells += [f"{build['s'] - b0['s']:.2f}", str(build["compiles"] - b0["compiles"])]
            print(f"| {name} | {result.verdict} | " + " | ".join(cells) + " |", flush=True)
            if args.top:
                stats.sort_stats("tottime").print_stats(args.top)
    print(f"\naudits: {total[0]:.1f} s wall, {total[1]:.1f} s CPU")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
