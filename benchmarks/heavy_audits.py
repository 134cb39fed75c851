"""The heaviest shipped audits, each in a fresh process: wall, CPU, XLA compilations, peak memory.

Each spec runs as ``dpaudit run SPEC -q --no-cache`` in its own Python process (a cold
process and no persistent compilation cache: what a first ``make audit`` pays per spec,
imports included), once per source tree given with ``--tree``, alternating trees spec by
spec so that both see the same load. Printed per run: wall and CPU seconds (all threads of
the process), the number of XLA backend compilations, the peak resident memory of the
process (``ru_maxrss``, what ``/usr/bin/time -v`` reports as "Maximum resident set size")
and the 1-minute load average; the JSON results of the trees are compared (timings and
start stamps aside) so a speed-up that changes a result shows up.

Usage::

    python benchmarks/heavy_audits.py                              # this tree
    python benchmarks/heavy_audits.py --tree /tmp/base --tree .    # before/after, side by side
    python benchmarks/heavy_audits.py audits/catalogue/bmr-ecdf.toml
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

HEAVY = (
    "audits/catalogue/dpsgd-logistic-rdp.toml",
    "audits/catalogue/bmr-roc.toml",
    "audits/catalogue/composed-bmr-roc.toml",
    "audits/catalogue/bmr-federated-ecdf.toml",
    "audits/catalogue/bmr-ecdf.toml",
)

_CHILD = """
import json, os, resource, sys, time
import jax
compiles = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **_: compiles.append(duration)
    if event == "/jax/core/compile/backend_compile_duration" else None
)
from dpaudit.cli.main import main
t0, c0 = time.perf_counter(), time.process_time()
rc = main(["run", sys.argv[1], "-q", "--no-cache", "--json", sys.argv[2]])
print(json.dumps({
    "rc": rc,
    "wall": round(time.perf_counter() - t0, 1),
    "cpu": round(time.process_time() - c0, 1),
    "compiles": len(compiles),
    "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    "load": round(os.getloadavg()[0], 1),
}))
"""

#: Result keys that differ between identical runs.
_VOLATILE = ("time", "second", "wall", "duration", "elapsed", "started", "cpu")


def _stable(value):
    if isinstance(value, dict):
        return {
            k: _stable(v) for k, v in value.items() if not any(t in k.lower() for t in _VOLATILE)
        }
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def run_one(tree: Path, spec: str, json_path: Path) -> dict:
    """One spec in a fresh process importing ``tree``'s dpaudit; its figures."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, spec, str(json_path)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{spec} under {tree} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Run the specs under every tree and print one table row per (spec, tree)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=list(HEAVY))
    parser.add_argument("--tree", action="append", type=Path, help="a source tree (repeat)")
    args = parser.parse_args()
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    print("| spec | tree | wall | CPU | XLA compilations | peak RSS | load | same results |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.specs:
            results = []
            for i, tree in enumerate(trees):
                out = Path(tmp) / f"{i}.json"
                r = run_one(tree, spec, out)
                results.append(_stable(json.loads(out.read_text())))
                same = "" if i == 0 else ("yes" if results[i] == results[0] else "**no**")
                print(
                    f"| `{Path(spec).stem}` | {tree.name} | {r['wall']} s | {r['cpu']} s | "
                    f"{r['compiles']} | {r['peak_mb']} MB | {r['load']} | {same} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
