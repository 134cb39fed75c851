"""``dpaudit validate audits/`` in a fresh process: CPU, wall, peak memory, XLA programs.

Run: ``PYTHONPATH=$PWD python benchmarks/validate_cost.py [--other ROOT] [--specs audits/]``.
Each checkout (this one, and ``--other``, e.g. an unpacked older commit) validates the
specs in a fresh Python with no persistent compilation cache (``DPAUDIT_CACHE=0``); the
child reports the XLA programs compiled (``backend_compile_duration`` events, split into
numpyro's eager checks of constant distribution parameters and the rest) and the modules
loaded; the parent reads the child's CPU (user + system) from ``resource``, the child its own peak
resident memory. Counts do not depend on the machine's load; seconds do, so the checkouts run
one after the other in one invocation and the load average is printed.

``--cache DIR``: each checkout validates twice with a persistent compilation cache in its own
folder under ``DIR`` (emptied first), cold then warm; a checkout whose ``validate`` has no
``--cache-dir`` option runs uncached (its warm line equals a cold one). ``--bytecode DIR``:
the children read and write Python bytecode under ``DIR`` (``PYTHONPYCACHEPREFIX``; one
discarded import first), as a pip-installed package has it; without it they run as the
environment says (under ``PYTHONDONTWRITEBYTECODE=1`` every import of dpaudit and the
catalogue compiles their sources again, about 1 s CPU).

``--rounds N`` (with ``--cache``): after the cold and warm runs, ``N`` more warm runs of
each checkout, alternating (base, this, base, this, ...), so a load that drifts falls on
both alike; the medians of all warm runs are printed last (session 13).
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, resource, sys, traceback
import jax
from dpaudit.cli.main import main
counts = {"programs": 0, "parameter checks": 0, "cache hits": 0}
def hits(event, **kwargs):
    counts["cache hits"] += event == "/jax/compilation_cache/cache_hits"
jax.monitoring.register_event_listener(hits)
def listener(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        counts["programs"] += 1
        counts["parameter checks"] += any(
            f.name == "validate_args" for f in traceback.extract_stack())
jax.monitoring.register_event_duration_secs_listener(listener)
code = main(["validate", SPECS, *EXTRA])
counts["modules"] = len(sys.modules)
counts["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("COUNTS " + json.dumps(counts), file=sys.stderr)
sys.exit(code)
"""


def _has_cache_option(root: Path) -> bool:
    return "_add_cache_options(p)\n    list_p" in (root / "dpaudit/cli/main.py").read_text()


def _env(root: Path, cache: Path | None, bytecode: Path | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "DPAUDIT_CACHE": "1" if cache else "0"}
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode / root.name)
    return env


def _run(root: Path, specs: str, cache: Path | None = None, bytecode: Path | None = None) -> dict:
    env = _env(root, cache, bytecode)
    extra = ["--cache-dir", str(cache)] if cache else []
    code = CHILD.replace("SPECS", repr(specs)).replace("EXTRA", repr(extra))
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
    parser.add_argument("--cache", type=Path, help="cold and warm runs with a cache under DIR")
    parser.add_argument("--bytecode", type=Path, help="children keep their bytecode under DIR")
    parser.add_argument("--rounds", type=int, default=0, help="alternating warm runs (--cache)")
    args = parser.parse_args()
    roots = ([args.other] if args.other else []) + [ROOT]
    warm = {}
    print(f"load before {os.getloadavg()}")
    print(
        "| checkout | run | CPU | wall | peak | programs (parameter checks) | cache hits | modules |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for root in roots:
        if args.bytecode is not None:  # one discarded import writes the bytecode
            probe = "import dpaudit.cli.main, dpaudit.io.spec, mechanisms, dpaudit.training"
            subprocess.run([sys.executable, "-c", probe], cwd=root, env=_env(root, None, args.bytecode), check=True)  # fmt: skip
        runs = [("cold", None)]
        warm[root] = []
        if args.cache is not None and _has_cache_option(root):
            folder = args.cache / root.name
            shutil.rmtree(folder, ignore_errors=True)
            runs = [("cold cache", folder), ("warm cache", folder)]
        for label, cache in runs:
            r = _run(root, args.specs, cache, args.bytecode)
            print(
                f"| {root.name} | {label} | {r['cpu']:.1f} s | {r['wall']:.1f} s "
                f"| {r['peak_mb']:.0f} MB | {r['programs']} ({r['parameter checks']}) "
                f"| {r['cache hits']} | {r['modules']} |"
            )
            print(f"  exit {r['exit']}: {r['summary']}; load {os.getloadavg()[0]:.1f}")
            if label == "warm cache":
                warm[root].append(r["cpu"])
    _alternate(args, roots, warm)
    print(f"load after {os.getloadavg()}")


def _alternate(args, roots: list, warm: dict) -> None:
    """``--rounds`` more warm runs per checkout, alternating; the medians of every warm run."""
    if args.cache is None or not args.rounds:
        return
    for _ in range(args.rounds):
        for root in roots:
            if warm[root]:
                r = _run(root, args.specs, args.cache / root.name, args.bytecode)
                warm[root].append(r["cpu"])
                print(f"  warm {root.name}: {r['cpu']:.1f} s CPU, load {os.getloadavg()[0]:.1f}")
    for root in roots:
        if warm[root]:
            cpus = ", ".join(f"{c:.1f}" for c in warm[root])
            print(f"| {root.name} | warm median of {len(warm[root])} | "
                  f"{statistics.median(warm[root]):.1f} s CPU ({cpus}) |")  # fmt: skip


if __name__ == "__main__":
    main()
