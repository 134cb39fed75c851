"""``dpaudit validate audits/`` in a fresh process: CPU, wall, peak memory, XLA programs.

Run: ``PYTHONPATH=$PWD python benchmarks/validate_cost.py [--other ROOT] [--specs audits/]``.
Each checkout (this one, and ``--other``, e.g. an unpacked older commit) validates the
specs in a fresh Python with no persistent compilation cache (``DPAUDIT_CACHE=0``); the
child reports the XLA programs compiled (``backend_compile_duration`` events, split into
numpyro's eager checks of constant distribution parameters and the rest) and the modules
loaded; the parent reads the child's CPU (user + system) from ``resource``, the child its own peak
resident memory. Counts do not depend on the machine's load; seconds do, so the checkouts run
one after the other in one invocation and the load average is printed.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, resource, sys, traceback
import jax
from dpaudit.cli.main import main
counts = {"programs": 0, "parameter checks": 0}
def listener(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        counts["programs"] += 1
        counts["parameter checks"] += any(
            f.name == "validate_args" for f in traceback.extract_stack())
jax.monitoring.register_event_duration_secs_listener(listener)
code = main(["validate", SPECS])
counts["modules"] = len(sys.modules)
counts["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("COUNTS " + json.dumps(counts), file=sys.stderr)
sys.exit(code)
"""


def _run(root: Path, specs: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "DPAUDIT_CACHE": "0"}
    code = CHILD.replace("SPECS", repr(specs))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    counts = json.loads(out.stderr.split("COUNTS ")[-1].splitlines()[0])
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-300:]
    return {
        "cpu": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "wall": wall,
        "exit": out.returncode,
        "summary": last,
        **counts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, help="another checkout to run first, e.g. the base")
    parser.add_argument("--specs", default="audits/")
    args = parser.parse_args()
    roots = ([args.other] if args.other else []) + [ROOT]
    print(f"load before {os.getloadavg()[0]:.1f}")
    print("| checkout | CPU | wall | peak | programs (of which parameter checks) | modules |")
    print("| --- | --- | --- | --- | --- | --- |")
    for root in roots:
        r = _run(root, args.specs)
        print(
            f"| {root.name} | {r['cpu']:.1f} s | {r['wall']:.1f} s | {r['peak_mb']:.0f} MB "
            f"| {r['programs']} ({r['parameter checks']}) | {r['modules']} |"
        )
        print(f"  exit {r['exit']}: {r['summary']}")
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
