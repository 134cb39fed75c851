"""The preparation phase of ``dpaudit audit audits/`` in a fresh process: CPU, XLA programs.

Run: ``PYTHONPATH=$PWD python benchmarks/prepare_cost.py [--other ROOT] [--specs audits/]
[--cache DIR]``.
``dpaudit audit`` validates and builds every spec (and draws once from each model) before
the first audit starts (``dpaudit.cli.main.prepare``); this child does exactly that and
stops, with no persistent compilation cache (``DPAUDIT_CACHE=0``), or with ``--cache DIR``
a persistent cache in ``DIR`` filled by one discarded run per checkout first (warm). It
reports its own CPU time (user + system, from interpreter start), wall time, the XLA
programs compiled (``backend_compile_duration`` events; in brackets numpyro's eager
parameter checks), the programs lowered (compiled or found in the cache) and the modules
loaded. Counts do not depend on the machine's load; seconds do: run the checkouts
in one invocation and state the load average printed.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, resource, sys, time, traceback
import jax
from dpaudit.cli.main import prepare
from dpaudit.io.spec import find_specs
counts = {"programs": 0, "parameter checks": 0, "lowered": 0}
if CACHE:
    from dpaudit.core.compilation_cache import enable_compilation_cache
    enable_compilation_cache(CACHE)
def listener(event, duration, **kwargs):
    counts["lowered"] += event == "/jax/core/compile/jaxpr_to_mlir_module_duration"
    if event == "/jax/core/compile/backend_compile_duration":
        counts["programs"] += 1
        counts["parameter checks"] += any(
            f.name == "validate_args" for f in traceback.extract_stack())
jax.monitoring.register_event_duration_secs_listener(listener)
start = time.perf_counter()
items = prepare(find_specs(SPECS))
usage = resource.getrusage(resource.RUSAGE_SELF)
counts.update(specs=len(items), cpu=usage.ru_utime + usage.ru_stime, modules=len(sys.modules),
              wall=time.perf_counter() - start)
print("COUNTS " + json.dumps(counts))
"""


def _run(root: Path, specs: str, cache: str | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "DPAUDIT_CACHE": "1" if cache else "0"}
    code = CHILD.replace("SPECS", repr(specs)).replace("CACHE", repr(cache))
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root, env=env, capture_output=True, text=True,
    )  # fmt: skip
    lines = [line for line in out.stdout.splitlines() if line.startswith("COUNTS ")]
    if not lines:
        raise SystemExit(f"{root}: preparation failed: {out.stderr[-500:]}")
    return json.loads(lines[-1][len("COUNTS ") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, help="another checkout to run first, e.g. the base")
    parser.add_argument("--specs", default="audits/")
    parser.add_argument("--cache", help="a persistent cache folder, filled first (warm runs)")
    args = parser.parse_args()
    print(f"load before {os.getloadavg()[0]:.1f}")
    print(
        "| checkout | cache | specs | CPU | wall (after imports) | programs (parameter checks) "
        "| lowered | modules |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for root in ([args.other] if args.other else []) + [ROOT]:
        cache = None
        if args.cache:
            cache = str(Path(args.cache).resolve() / root.name)
            _run(root, args.specs, cache)  # fill this checkout's own cache folder
        r = _run(root, args.specs, cache)
        print(
            f"| {root.name} | {'warm' if cache else 'off'} | {r['specs']} | {r['cpu']:.1f} s "
            f"| {r['wall']:.1f} s | {r['programs']} ({r['parameter checks']}) | {r['lowered']} "
            f"| {r['modules']} |"
        )
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
