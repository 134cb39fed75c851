"""DP-SGD white-box and training audits, before / after, side by side: CPU, wall, programs.

Run: ``PYTHONPATH=$PWD python benchmarks/dpsgd_costs.py --other ROOT [--specs ...]``.
``ROOT`` is another checkout (e.g. ``git archive <commit> | tar -x -C /tmp/before``). For
each checkout, in a fresh Python each time (as ``make audit`` runs): the specs audited
cold (an empty persistent compilation cache of its own), then warm (``--phases``: the same
cache, each warm run a new process, so a new string-hash seed: a program whose cache key follows
numpyro's set order of a law's fields misses in each), then ``dpaudit validate`` of the
training specs (does it import torch?). The child prints, per audit, CPU and wall seconds,
XLA backend compilations and persistent-cache hits (``jax.monitoring`` events; a hit is
counted as a compilation event too, so misses = compilations - hits). Counts do not depend
on the load; seconds do, so the checkouts alternate within one invocation and the load
average is printed at each step.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = (
    "audits/catalogue/dpsgd-logistic.toml",
    "audits/catalogue/dpsgd-logistic-rdp.toml",
    "audits/faulty/dpsgd-ignores-steps.toml",
    "audits/faulty/dpsgd-noise-batch.toml",
    "audits/training/opacus-poisson.toml",
    "audits/training/opacus-fixed-batches.toml",
)
AUDIT_CHILD = """
import json, sys, time
from pathlib import Path
import jax
from dpaudit.cli.main import prepare, run_audit
from dpaudit.core.compilation_cache import enable_compilation_cache
from dpaudit.core.memory import release_memory
enable_compilation_cache(sys.argv[1])
n = {"compile": 0, "hit": 0}
def on_duration(event, duration, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        n["compile"] += 1
def on_event(event, **kw):
    if event == "/jax/compilation_cache/cache_hits":
        n["hit"] += 1
jax.monitoring.register_event_duration_secs_listener(on_duration)
jax.monitoring.register_event_listener(on_event)
rows = []
for spec in sys.argv[2:]:
    n0, w, c = dict(n), time.perf_counter(), time.process_time()
    (item,) = prepare([Path(spec)])
    result = run_audit(item)
    release_memory()
    rows.append({"spec": spec, "verdict": result.verdict, "wall": time.perf_counter() - w,
                 "cpu": time.process_time() - c, "compiles": n["compile"] - n0["compile"],
                 "hits": n["hit"] - n0["hit"]})
print("ROWS " + json.dumps(rows))
"""
VALIDATE_CHILD = """
import sys
from dpaudit.cli.main import main
try:
    main(["validate", *sys.argv[1:]])
except SystemExit:
    pass
print("TORCH " + str("torch" in sys.modules))
"""


def _child(root: Path, code: str, args: list[str]) -> tuple[str, float, float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("PYTHONHASHSEED", None)  # a new string-hash seed in every process, as in use
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=root, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return out.stdout, cpu, wall


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", required=True, help="the checkout to compare with")
    parser.add_argument("--specs", nargs="*", default=list(SPECS))
    parser.add_argument("--json", default=None, help="write the measurements here")
    parser.add_argument(
        "--phases", nargs="*", default=["cold", "warm 1", "warm 2"], help="cold, then warm runs"
    )
    args = parser.parse_args()
    trees = {"before": Path(args.other).resolve(), "after": ROOT}
    caches = {k: tempfile.mkdtemp(prefix=f"dpsgd-{k}-") for k in trees}
    results: dict = {k: {} for k in trees}
    for phase in args.phases:
        for name, root in trees.items():
            load = _load()
            out, cpu, wall = _child(root, AUDIT_CHILD, [caches[name], *args.specs])
            rows = json.loads(out.split("ROWS ")[-1])
            results[name][phase] = {"process_cpu": cpu, "process_wall": wall, "load": load,
                                    "rows": rows}  # fmt: skip
            print(f"\n{name} {phase} (load {load}): process {cpu:.1f} s CPU, {wall:.1f} s wall")
            for r in rows:
                print(f"  {r['spec']:45s} {r['verdict']:12s} {r['cpu']:6.1f} s CPU "
                      f"{r['wall']:6.1f} s wall  {r['compiles']:3d} programs, "
                      f"{r['compiles'] - r['hits']:3d} compiled (not from the cache)")  # fmt: skip
    for name, root in trees.items():
        load = _load()
        out, cpu, wall = _child(root, VALIDATE_CHILD, ["audits/training/"])
        torch = out.split("TORCH ")[-1].strip()
        results[name]["validate training"] = {"cpu": cpu, "wall": wall, "torch": torch}
        print(f"\n{name} validate audits/training/ (load {load}): {cpu:.1f} s CPU, "
              f"{wall:.1f} s wall, torch imported: {torch}")  # fmt: skip
    print(f"\nload average after: {_load()}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
