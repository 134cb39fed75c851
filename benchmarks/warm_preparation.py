"""Where a warm white-box ``dpaudit audit`` spends its time outside the Monte Carlo, by stage.

Run twice (the first run fills the cache, the second is the warm run measured)::

    PYTHONPATH=$PWD python benchmarks/warm_preparation.py OUT [--specs FILE] [--profile]

One process prepares every spec (``dpaudit.cli.main.prepare``: building, the pre-audit draw)
and then audits each (``run_audit``), as ``make audit`` does, with the persistent
compilation cache in ``.cache/jax`` of the checkout it runs from. Reported per stage: CPU
(``time.process_time``) and wall seconds, and the jaxpr traces, lowerings and XLA
compilations JAX reports (a persistent-cache hit counts as a compilation event without
compiling). Stages: ``pre-audit draw`` (``check_model_runs``), ``prepare (all)``, ``plan``
(``plan_audit``: release laws, noise structure, accounting), ``run_audit (all)`` and the
total. ``--profile`` writes ``OUT.prof`` (cProfile). To compare two commits side by side,
unpack the older one (``git archive C | tar -x -C DIR``) and run this file from both roots
at the same time; compare CPU, the load average makes wall seconds meaningless.
"""

import argparse
import collections
import cProfile
import json
import sys
import time
from pathlib import Path

ROOT = Path.cwd()
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from compile_counts import count_programs  # noqa: E402

#: 29 white-box specs of make audit's: families with faulty variants (Laplace, Gaussian,
#: ICLP, composed, HRW, BMR Hosmer-Lemeshow, continual counters), in make audit's order.
SUBSET = Path(__file__).resolve().parent / "results" / "warm_preparation_specs.txt"


def _timed(stages, name, fn):
    def inner(*args, **kwargs):
        cpu, wall = time.process_time(), time.perf_counter()
        with count_programs() as counts:
            try:
                return fn(*args, **kwargs)
            finally:
                stage = stages[name]
                stage["cpu"] += time.process_time() - cpu
                stage["wall"] += time.perf_counter() - wall
                stage.update(counts)

    return inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--specs", default=str(SUBSET))
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    from dpaudit.core.compilation_cache import enable_compilation_cache

    enable_compilation_cache(ROOT / ".cache" / "jax")
    import dpaudit.cli.main as cli
    import dpaudit.io.spec as spec_package
    import dpaudit.io.spec.resolve as resolve
    import dpaudit.whitebox.engine as engine

    stages = collections.defaultdict(collections.Counter)
    resolve.check_model_runs = _timed(stages, "pre-audit draw", resolve.check_model_runs)
    spec_package.check_model_runs = resolve.check_model_runs
    engine.plan_audit = _timed(stages, "plan", engine.plan_audit)
    paths = [line.strip() for line in open(args.specs) if line.strip()]
    profile = cProfile.Profile() if args.profile else None
    if profile:
        profile.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    items = _timed(stages, "prepare (all)", cli.prepare)(paths)
    verdicts = {item.spec.name: _timed(stages, "run_audit (all)", cli.run_audit)(item).verdict
                for item in items}  # fmt: skip
    stages["total"].update(cpu=time.process_time() - cpu, wall=time.perf_counter() - wall)
    if profile:
        profile.disable()
        profile.dump_stats(args.out + ".prof")
    out = {k: {f: round(v, 2) for f, v in c.items()} for k, c in stages.items()}
    print(json.dumps(out, indent=1))
    Path(args.out + ".json").write_text(json.dumps({"stages": out, "verdicts": verdicts}, indent=1))


if __name__ == "__main__":
    main()
