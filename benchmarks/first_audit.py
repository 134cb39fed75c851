"""The first audit in a fresh process: empty compilation cache, filled cache, warm process.

Run: ``python benchmarks/first_audit.py [--samples 20000] [SPEC ...]`` (default: the
catalogue's ICLP mean and scalar Laplace mean, ``audits/catalogue/iclp-qr-mean.toml`` and
``laplace-mean.toml``). For each spec, a fresh Python process (``--child``) imports dpaudit,
prepares the spec as ``dpaudit audit`` does, runs the audit (the *first* audit), then runs it
again in the same process (*warm*). The process runs three times per spec: with an empty
persistent cache (a new temporary folder), again with the cache the first run filled, and
with the cache off (``DPAUDIT_CACHE=0``). Each row gives wall and CPU seconds (CPU: all
threads of the process) of the import, the preparation, the first and the warm audit, and
the XLA backend compilations and persistent-cache hits counted by ``jax.monitoring``
during the first audit (preparation included), so the ratios are side by side in one run.
The cache is set up as ``dpaudit audit`` does, before the spec is prepared.
The acceptance of issue 29: first <= 2 x warm + 1 s with a filled cache, <= 5 x warm + 2 s
with an empty one. The load average is printed before and after; a loaded machine
stretches wall time and inflates CPU time.

``--baseline DIR`` runs every child a second time on another checkout of the repository
(e.g. ``git worktree add /tmp/base BASE`` or ``git archive BASE | tar -x -C /tmp/base``),
alternating with this one, so the two trees are measured side by side at the same load.
The second table splits the first audit: preparation (reading the spec, building the
mechanism, the spec checks; most of it imports) and the audit itself, each with its
compilations and its CPU seconds.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPECS = ["audits/catalogue/iclp-qr-mean.toml", "audits/catalogue/laplace-mean.toml"]
COMPILE = "/jax/core/compile/backend_compile_duration"
HIT = "/jax/compilation_cache/cache_hits"


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> tuple[float, float]:
    wall, cpu = _clock()
    return round(wall - start[0], 2), round(cpu - start[1], 2)


def child(spec: str, samples: int) -> None:
    """One fresh process: import, prepare, first audit, warm audit; one JSON line."""
    start = _clock()
    import jax

    from dpaudit.cli.main import prepare, run_audit
    from dpaudit.core.compilation_cache import ensure_compilation_cache

    row = {"import": _since(start)}
    ensure_compilation_cache()  # as `dpaudit audit` does before it prepares the specs
    events = {"compiles": 0, "hits": 0}

    def on_duration(event, duration, **kwargs):
        events["compiles"] += event == COMPILE

    def on_event(event, **kwargs):
        events["hits"] += event == HIT

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    start = _clock()
    (item,) = prepare([ROOT / spec], samples=samples)
    row["prepare"] = _since(start)
    row["prepare_compiles"] = events["compiles"]
    start = _clock()
    verdict = str(run_audit(item).verdict)
    row["first"] = _since(start)
    row.update(first_compiles=events["compiles"], first_hits=events["hits"], verdict=verdict)
    start, before = _clock(), events["compiles"]
    run_audit(item)
    row["warm"] = _since(start)
    row["warm_compiles"] = events["compiles"] - before
    print(json.dumps(row))


def _run(spec: str, samples: int, env: dict, tree: Path = ROOT) -> dict:
    command = [sys.executable, __file__, "--child", spec, "--samples", str(samples)]
    env = {**env, "PYTHONPATH": str(tree)}
    out = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cache_states(spec: str, samples: int, tree: Path) -> list[tuple[str, dict]]:
    """The three fresh processes of one spec on one tree: empty cache, filled, off."""
    folder = tempfile.mkdtemp(prefix="dpaudit-first-")
    env = {**os.environ, "DPAUDIT_CACHE_DIR": folder}
    env.pop("DPAUDIT_CACHE", None)
    try:
        runs = [("empty", _run(spec, samples, env, tree))]
        runs.append(("filled", _run(spec, samples, env, tree)))
        runs.append(("off", _run(spec, samples, {**env, "DPAUDIT_CACHE": "0"}, tree)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return runs


def _split_rows(spec: str, tree: str, runs) -> list[str]:
    """Preparation and audit, separately: CPU seconds and compilations (hits)."""
    rows = []
    for state, r in runs:
        audit = r["first_compiles"] - r["prepare_compiles"]
        rows.append(
            f"| {Path(spec).stem} | {tree} | {state} | {r['prepare'][1]} s "
            f"({r['prepare_compiles']}) | {r['first'][1]} s ({audit}) | {r['warm'][1]} s | "
            f"{r['first'][1] / (2 * r['warm'][1] + 1):.2f} | "
            f"{r['first'][1] / (5 * r['warm'][1] + 2):.2f} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=SPECS)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--baseline", type=Path, help="another checkout, run side by side")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args.child, args.samples)
    trees = [("this", ROOT)] + ([("baseline", args.baseline)] if args.baseline else [])
    print(f"load before {os.getloadavg()[0]:.1f}, {args.samples} samples per direction")
    print("| spec | cache | import | prepare + first audit (compiles, hits) | warm audit | "
          "first / (2 warm + 1 s) | first / (5 warm + 2 s) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    split = []
    for spec in args.specs:
        for name, tree in trees:
            runs = _cache_states(spec, args.samples, tree)
            split += _split_rows(spec, name, runs)
            for state, r in runs:
                first = r["prepare"][0] + r["first"][0]
                first_cpu = r["prepare"][1] + r["first"][1]
                warm = r["warm"][0]
                print(
                    f"| {Path(spec).stem} ({name}) | {state} | {r['import'][0]} s / "
                    f"{r['import'][1]} s CPU | "
                    f"{first:.2f} s / {first_cpu:.2f} s CPU ({r['first_compiles']}, "
                    f"{r['first_hits']}) | {warm} s / {r['warm'][1]} s CPU "
                    f"({r['warm_compiles']} compiles) | {first / (2 * warm + 1):.2f} "
                    f"(CPU {first_cpu / (2 * r['warm'][1] + 1):.2f}) | "
                    f"{first / (5 * warm + 2):.2f} (CPU {first_cpu / (5 * r['warm'][1] + 2):.2f}) |",
                    flush=True,
                )
    print(
        "\n| spec | tree | cache | prepare CPU (compiles) | audit CPU (compiles) | warm CPU | "
        "audit / (2 warm + 1 s) | audit / (5 warm + 2 s) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(split))
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
