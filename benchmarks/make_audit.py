"""How long ``make audit`` takes: the whole shipped suite, cold and warm compilation cache.

Two measurements:

* ``suite`` (default): ``dpaudit audit audits/`` as a subprocess, serial and with
  ``--workers N``, each first with an empty compilation cache (cold) and then again with
  the cache the cold run filled (warm). Wall time, CPU time of the subprocess and all its
  reaped descendants (Ray's workers included once Ray has shut down), and the load average
  before and after are printed as one table.
* ``profile``: every spec of the suite in this one process, in suite order, with its wall
  time, CPU time (all threads of the process: XLA compiles and runs on several) and the
  number and duration of XLA compilations, so the expensive specs stand out.

Run on a quiet machine; the load average is printed beside every figure because a busy
machine stretches wall time and inflates CPU time (cache misses, contention).

Usage::

    python benchmarks/make_audit.py                     # suite: serial and --workers 2
    python benchmarks/make_audit.py suite --workers 2 --modes workers
    python benchmarks/make_audit.py profile --cache /tmp/jaxcache --top 15
    python benchmarks/make_audit.py compare --modes base-serial,base-pool2,pool2 \\
        --baseline /tmp/before --k-file subset.txt --label NAME   # before/after, side by side
    python benchmarks/make_audit.py compiles --modes base-pool2,pool2 --baseline /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_suite(cache: Path, workers: int | None, json_path: Path, target: str) -> dict:
    """One ``dpaudit audit TARGET`` subprocess; its wall and CPU seconds and its exit code."""
    program = "import sys; from dpaudit.cli.main import main; sys.exit(main(sys.argv[1:]))"
    command = [sys.executable, "-c", program, "audit", target, "-q", "--json", str(json_path)]
    command += ["--cache-dir", str(cache)]
    if workers is not None:
        command += ["--workers", str(workers)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    load_before, cpu_before, t0 = _load(), _children_cpu(), time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cpu = _children_cpu() - cpu_before
    closing = [line for line in done.stdout.splitlines() if line.strip()][-1:] or [""]
    return {
        "workers": workers,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "exit": done.returncode,
        "load_before": load_before,
        "load_after": _load(),
        "closing": closing[0] if done.returncode in (0, 1) else done.stderr[-500:],
    }


def _tree_rss(root: int) -> tuple[int, int]:
    """Resident bytes of process ``root`` and all its descendants (Linux ``/proc``), summed
    and of the largest process among them."""
    parents, rss = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            parents[int(entry.name)] = int(fields[1])
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier += children
    sizes = [rss.get(pid, 0) for pid in tree]
    return sum(sizes), max(sizes)


def run_sampled(command: list, env: dict, root: Path = ROOT) -> dict:
    """Run ``command`` in ``root``; wall, CPU (it and its reaped children), peak RSS of its
    process tree (summed) and of its largest process, sampled every 0.5 s."""
    load_before, cpu_before, t0 = _load(), _children_cpu(), time.perf_counter()
    process = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, text=True)
    peak = largest = 0
    while process.poll() is None:
        tree, one = _tree_rss(process.pid)
        peak, largest = max(peak, tree), max(largest, one)
        time.sleep(0.5)
    out = process.stdout.read()
    return {
        "wall_s": round(time.perf_counter() - t0, 1),
        "cpu_s": round(_children_cpu() - cpu_before, 1),
        "peak_tree_rss_mb": round(peak / 2**20),
        "peak_largest_rss_mb": round(largest / 2**20),
        "exit": process.returncode,
        "load_before": load_before,
        "load_after": _load(),
        "closing": ([line for line in out.splitlines() if line.strip()][-1:] or [""])[0],
    }


#: ``compare`` modes: extra command-line options and XLA flags of each.
SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
MODES = {
    "serial": ([], ""),
    "serial-st": ([], SINGLE_THREAD_XLA),
    "pool2": (["--workers", "2"], ""),
    "pool2-st": (["--workers", "2"], SINGLE_THREAD_XLA),
    # the same options on the tree given by --baseline (a checkout of the code before a change)
    "base-serial": ([], ""),
    "base-pool2": (["--workers", "2"], ""),
}
#: environment of a mode (s14: the driver's own library audits with the draw helper beside a
#: worker, against the default of none)
MODE_ENV = {"pool2-helper": {"DPAUDIT_DRAW_HELPER": "on"}}
MODES["pool2-helper"] = MODES["pool2"]


def compare(args) -> None:
    """Modes side by side on one selection: each cold (its own empty cache) then warm, in
    turn; wall, CPU, peak RSS of the whole process tree (driver and workers) and the JSON
    results (equal across modes, timings aside)."""
    program = "import sys; from dpaudit.cli.main import main; sys.exit(main(sys.argv[1:]))"
    modes, rows, folder = args.modes.split(","), [], Path(tempfile.mkdtemp(prefix="dpaudit-cmp-"))
    for state in ("cold", "warm"):
        for mode in modes:
            options, flags = MODES[mode]
            root = Path(args.baseline) if mode.startswith("base-") else ROOT
            # a folder per mode: the parallel runs keep their audit times beside the cache
            cache, out = folder / mode / "jax", folder / f"{mode}-{state}.json"
            command = [sys.executable, "-c", program, "audit", args.target, "-q"]
            command += ["--json", str(out), "--cache-dir", str(cache), *options]
            command += ["-k", args.k] if args.k else []
            env = dict(os.environ, PYTHONPATH=str(root))
            env.pop("XLA_FLAGS", None)
            env.pop("DPAUDIT_DRAW_HELPER", None)
            env.update({"XLA_FLAGS": flags} if flags else {})
            env.update(MODE_ENV.get(mode, {}))
            row = {"mode": mode, "cache": state, **run_sampled(command, env, root)}
            row["results"] = _stripped(out)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "results"}), flush=True)
    reference = rows[0]["results"]
    for r in rows:  # which audits differ from the first run's (by name), for the file
        mine = (r["results"] or {}).get("audits", [])
        pairs = zip((reference or {}).get("audits", []), mine, strict=False)
        r["differs"] = [a["name"] for a, b in pairs if json.dumps(a) != json.dumps(b)]
    print()
    print(
        "| mode | cache | wall | CPU | CPU / wall | peak RSS (tree / largest) | JSON differs from "
        "the first row | load |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['cache']} | {r['wall_s']:.0f} s | {r['cpu_s']:.0f} s | "
            f"{r['cpu_s'] / r['wall_s']:.2f} | {r['peak_tree_rss_mb']} / "
            f"{r['peak_largest_rss_mb']} MB | {', '.join(r['differs']) or 'none'} | "
            f"{r['load_before']} / {r['load_after']} |"
        )
    RESULTS.mkdir(exist_ok=True)
    slim = [{k: v for k, v in r.items() if k != "results"} for r in rows]
    (RESULTS / f"make_audit_compare_{args.label}.json").write_text(json.dumps(slim, indent=1))
    shutil.rmtree(folder, ignore_errors=True)


_MISS = re.compile(r"PERSISTENT COMPILATION CACHE MISS for '[^']*' with key '([^']+)'")
_HIT = re.compile(r"Persistent compilation cache hit for '[^']*' with key '([^']+)'")
_COMPILED = re.compile(r"Finished XLA compilation of ")


def compiles(args) -> None:
    """Each mode once on an empty cache with ``JAX_LOG_COMPILES=1`` and
    ``JAX_EXPLAIN_CACHE_MISSES=1``: persistent-cache misses summed over the driver and its
    workers, distinct programs among them, how many were compiled twice or more (the same
    key missed by two processes, or by one after dropping its programs), and every XLA
    compilation (cached or not). Counts, not seconds."""
    program = "import sys; from dpaudit.cli.main import main; sys.exit(main(sys.argv[1:]))"
    folder, rows = Path(tempfile.mkdtemp(prefix="dpaudit-compiles-")), []
    for mode in args.modes.split(","):
        options, flags = MODES[mode]
        root = Path(args.baseline) if mode.startswith("base-") else ROOT
        command = [sys.executable, "-c", program, "audit", args.target, "-q"]
        command += ["--json", str(folder / f"{mode}.json"), "--cache-dir", str(folder / mode)]
        command += [*options, *(["-k", args.k] if args.k else [])]
        env = dict(os.environ, PYTHONPATH=str(root), JAX_LOG_COMPILES="1")
        env["JAX_EXPLAIN_CACHE_MISSES"] = "1"  # logs each persistent-cache miss with its key
        env.pop("XLA_FLAGS", None)
        env.update({"XLA_FLAGS": flags} if flags else {})
        load_before, t0 = _load(), time.perf_counter()
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        misses = _MISS.findall(done.stderr)
        counts: dict = {}
        for key in misses:
            counts[key] = counts.get(key, 0) + 1
        rows.append(
            {
                "mode": mode,
                "exit": done.returncode,
                "wall_s": round(time.perf_counter() - t0, 1),
                "compilations": len(misses),
                "distinct_programs": len(counts),
                "compiled_more_than_once": sum(1 for n in counts.values() if n > 1),
                "extra_compilations": len(misses) - len(counts),
                "cache_hits": len(_HIT.findall(done.stderr)),
                "xla_compilations": len(_COMPILED.findall(done.stderr)),
                "load_before": load_before,
                "load_after": _load(),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    print()
    print(
        "| mode | compilations | distinct programs | compiled twice or more | cache hits | load |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['compilations']} | {r['distinct_programs']} | "
            f"{r['compiled_more_than_once']} (+{r['extra_compilations']}) | {r['cache_hits']} | "
            f"{r['xla_compilations']} | {r['load_before']} / {r['load_after']} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"make_audit_compiles_{args.label}.json").write_text(json.dumps(rows, indent=1))
    shutil.rmtree(folder, ignore_errors=True)


def _stripped(path: Path):
    """The run's JSON without timings (``None`` when the run wrote none)."""

    def strip(obj):
        if isinstance(obj, dict):
            drop = ("seconds", "timings", "started", "finished", "created")
            return {k: strip(v) for k, v in obj.items() if k not in drop}
        return [strip(v) for v in obj] if isinstance(obj, list) else obj

    return strip(json.loads(path.read_text())) if path.exists() else None


def suite(args) -> None:
    """Cold then warm, for each mode; prints the table and writes it as JSON."""
    rows = []
    for mode in args.modes.split(","):
        workers = None if mode == "serial" else args.workers
        cache = Path(tempfile.mkdtemp(prefix="dpaudit-jax-"))
        try:
            for state in ("cold", "warm"):
                out = Path(tempfile.mkdtemp()) / "results.json"
                row = run_suite(cache, workers, out, args.target)
                row.update(mode=mode if workers is None else f"--workers {workers}", cache=state)
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    print()
    print("| run | cache | wall | CPU | load before / after |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['mode']} | {r['cache']} | {r['wall_s']:.0f} s | {r['cpu_s']:.0f} s | "
            f"{r['load_before']} / {r['load_after']} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "make_audit_suite.json").write_text(json.dumps(rows, indent=1) + "\n")


def _compile_listener(log: list):
    def listen(event: str, duration: float, **_kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            log.append(duration)

    return listen


def profile(args) -> None:
    """Each spec in this process, in suite order: wall, CPU, XLA compilations."""
    import jax

    sys.path.insert(0, str(ROOT))
    from dpaudit.core.compilation_cache import disable_compilation_cache, enable_compilation_cache

    if args.cache != "none":
        enable_compilation_cache(args.cache)  # as the command: every program cached
    else:
        disable_compilation_cache()
    from dpaudit.cli.main import matches, prepare, run_audit
    from dpaudit.core.memory import release_memory, resident_bytes
    from dpaudit.io.spec import find_specs

    compiles: list[float] = []
    jax.monitoring.register_event_duration_secs_listener(_compile_listener(compiles))
    paths = [p for p in find_specs(args.target) if args.k is None or matches(args.k, [p])]
    rows = []
    load0, wall0, cpu0 = _load(), time.perf_counter(), time.process_time()
    for path in paths:
        t0, c0, n0 = time.perf_counter(), time.process_time(), len(compiles)
        (item,) = prepare([path])
        result = run_audit(item)
        del item
        if args.release:
            release_memory()
        rows.append(
            {
                "spec": str(path),
                "verdict": str(result.verdict),
                "wall_s": round(time.perf_counter() - t0, 2),
                "cpu_s": round(time.process_time() - c0, 2),
                "compiles": len(compiles) - n0,
                "compile_s": round(sum(compiles[n0:]), 2),
                "rss_after_mb": round((resident_bytes() or 0) / 2**20),
                "live_arrays": len(jax.live_arrays()),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    total = {
        "wall_s": round(time.perf_counter() - wall0, 1),
        "cpu_s": round(time.process_time() - cpu0, 1),
        "compiles": len(compiles),
        "compile_s": round(sum(compiles), 1),
        "load_before": load0,
        "load_after": _load(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
    print()
    print("| spec | verdict | wall | CPU | compilations (s) |")
    print("|---|---|---|---|---|")
    for r in sorted(rows, key=lambda r: -r["cpu_s"])[: args.top]:
        print(
            f"| {r['spec']} | {r['verdict']} | {r['wall_s']:.1f} s | {r['cpu_s']:.1f} s | "
            f"{r['compiles']} ({r['compile_s']:.1f} s) |"
        )
    print(
        f"| all {len(rows)} | | {total['wall_s']:.0f} s | {total['cpu_s']:.0f} s | "
        f"{total['compiles']} ({total['compile_s']:.0f} s) |"
    )
    print(f"load average before {total['load_before']}, after {total['load_after']}")
    RESULTS.mkdir(exist_ok=True)
    name = f"make_audit_profile_{args.label}.json"
    (RESULTS / name).write_text(json.dumps({"total": total, "specs": rows}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "what", nargs="?", default="suite", choices=("suite", "profile", "compare", "compiles")
    )
    parser.add_argument("--target", default="audits/", help="the specs (default: audits/)")
    parser.add_argument("--workers", type=int, default=2, help="workers of the parallel runs")
    parser.add_argument(
        "--modes",
        default=None,
        help="suite: serial, workers or both (comma); compare: of " + ", ".join(MODES),
    )
    parser.add_argument("--cache", default="none", help="profile: the compilation cache folder")
    parser.add_argument("-k", default=None, help="profile, compare: only the specs this selects")
    parser.add_argument(
        "--k-file", default=None, help="compare: read -k from this file (a long selection)"
    )
    parser.add_argument(
        "--baseline", default=None, help="compare: the tree the base-* modes run (a checkout)"
    )
    parser.add_argument(
        "--release", action="store_true", help="profile: release_memory() after each spec"
    )
    parser.add_argument("--label", default="run", help="profile: suffix of the results file")
    parser.add_argument("--top", type=int, default=15, help="profile: rows of the table")
    args = parser.parse_args()
    if args.k_file:
        args.k = Path(args.k_file).read_text().strip()
    if args.modes is None:
        args.modes = "serial,workers" if args.what == "suite" else ",".join(MODES)
    {"suite": suite, "profile": profile, "compare": compare, "compiles": compiles}[args.what](args)


if __name__ == "__main__":
    main()
