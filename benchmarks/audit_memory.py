"""What ``make audit`` holds in memory: per audit, and for the whole process tree.

``dpaudit audit TARGET --report DIR --cache-dir CACHE`` runs as a child process (the command
``make audit`` runs, in its order: every spec prepared, then audited, ``release_memory``
between audits). The child is this script in ``child`` mode: it calls the CLI's ``main``
with ``release_memory`` wrapped (the CLI calls it after each build and each audit) so that
each audit records

* resident memory before, after (once ``release_memory`` ran) and the peak while it ran
  (``VmHWM``, reset before each audit through ``/proc/self/clear_refs``);
* what is held after it: live XLA executables (count), live
  device arrays (count and bytes), the pre-audit draw programs kept per family,
  matplotlib figures left open, XLA compilations during the audit;

one JSON line per audit. The parent samples the resident memory of every process of the
tree every 0.1 s (the library draw helper sits beside the main process) and prints the
peak of the largest process and of the tree's sum.

Usage (from the worktree root, ``PYTHONPATH=$PWD``)::

    python benchmarks/audit_memory.py --cache .cache/mem-cold --out benchmarks/results/x.jsonl
    python benchmarks/audit_memory.py -k svt --cache .cache/jax   # a stretch of the suite
    python benchmarks/audit_memory.py -k svt --workers 2          # peaks of the worker tree
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _status(pid: int | str, field: str) -> int:
    """A ``/proc/PID/status`` memory field in bytes (0 when the process is gone)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) << 10
    except OSError:
        return 0
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def _held() -> dict:
    """What the process holds now: executables, device arrays, draw programs, figures."""
    import jax

    from dpaudit.io.spec import resolve

    client = jax.devices()[0].client
    executables = client.live_executables()  # (their code size reads 0 on the CPU backend)
    arrays = jax.live_arrays()
    figures = 0
    if "matplotlib.pyplot" in sys.modules:
        figures = len(sys.modules["matplotlib.pyplot"].get_fignums())
    return {
        "executables": len(executables),
        "arrays": len(arrays),
        "array_mb": round(sum(a.nbytes for a in arrays) / 2**20, 1),
        "draw_programs": len(getattr(resolve, "_DRAW_PROGRAMS", ())),
        "figures": figures,
    }


def child(args) -> int:
    """The CLI's ``audit`` in this process, each audit measured (one JSON line each).

    The CLI calls ``release_memory`` after each spec it builds and after each audit; the
    wrapper measures at each call after the last build (the specs' order is the CLI's).
    """
    import jax

    from dpaudit.cli import main as cli
    from dpaudit.io.spec import find_specs

    compiles: list[float] = []

    def listen(event: str, duration: float, **_: object) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    paths = [p for p in find_specs(args.target) if args.k is None or cli.matches(args.k, [p])]
    out = open(args.out, "a", encoding="utf-8")
    release = cli.release_memory
    state = {"calls": 0, "compiles": 0, "before": 0}

    def reset() -> None:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")  # resets VmHWM to the current RSS
        state["before"], state["compiles"] = _status("self", "VmRSS"), len(compiles)

    def measured(*a, **k):
        state["calls"] += 1
        audit = state["calls"] - len(paths)  # 0: the last build; then one call per audit
        end, peak = _status("self", "VmRSS"), _status("self", "VmHWM")
        dropped = release(*a, **k)
        if audit == 0:
            row = {"spec": "(prepared)", "rss_mb": _status("self", "VmRSS") >> 20, **_held()}
            print(json.dumps(row), file=out, flush=True)
        elif 0 < audit <= len(paths):
            row = {
                "spec": str(paths[audit - 1]),
                "rss_before_mb": state["before"] >> 20,
                "rss_peak_mb": peak >> 20,
                "rss_end_mb": end >> 20,
                "rss_after_mb": _status("self", "VmRSS") >> 20,
                "dropped": dropped,
                "compiles": len(compiles) - state["compiles"],
                **_held(),
            }
            print(json.dumps(row), file=out, flush=True)
        reset()
        return dropped

    cli.release_memory = measured
    argv = ["audit", args.target, "-q", "--report", args.report, "--cache-dir", args.cache]
    argv += ["--json", str(Path(args.report) / "results.json")]
    if args.k:
        argv += ["-k", args.k]
    if args.workers:  # the workers' audits are not measured one by one: the tree's peak is
        argv += ["--workers", str(args.workers)]
    code = cli.main(argv)
    print(json.dumps({"spec": "(total)", "compiles": len(compiles)}), file=out, flush=True)
    return code


def parent(args) -> int:
    """The child under a 0.1 s sampler of the process tree's resident memory."""
    report = Path(tempfile.mkdtemp(prefix="audit-memory-"))
    Path(args.out).write_text("", encoding="utf-8")
    command = [sys.executable, __file__, "child", "--target", args.target, "--cache", args.cache]
    command += ["--report", str(report), "--out", args.out] + (["-k", args.k] if args.k else [])
    command += ["--workers", str(args.workers)] if args.workers else []
    load0, wall0 = _load(), time.perf_counter()
    proc = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(ROOT)})
    largest, total = 0, 0
    while proc.poll() is None:
        sizes = [_status(p, "VmRSS") for p in _tree(proc.pid)]
        largest, total = max(largest, max(sizes)), max(total, sum(sizes))
        time.sleep(0.1)
    rows = [json.loads(line) for line in Path(args.out).read_text().splitlines()]
    audits = [r for r in rows if "rss_peak_mb" in r]
    summary = {
        "target": args.target,
        "k": args.k,
        "exit": proc.returncode,
        "wall_s": round(time.perf_counter() - wall0, 1),
        "load_before": load0,
        "load_after": _load(),
        "peak_largest_mb": largest >> 20,
        "peak_tree_mb": total >> 20,
        "workers": args.workers,
        "audits": len(audits),
        "compiles": rows[-1].get("compiles") if rows else None,
        "held_max_mb": max((r["rss_after_mb"] for r in audits), default=None),
    }
    top = sorted(audits, key=lambda r: -r["rss_peak_mb"])[: args.top]
    for row in top:
        print(
            f"{row['spec']:45s} before {row['rss_before_mb']:5d} peak {row['rss_peak_mb']:5d} "
            f"after {row['rss_after_mb']:5d} MB  exe {row['executables']:5d} "
            f"draw {row['draw_programs']:3d}  compiles "
            f"{row['compiles']}"
        )
    print(json.dumps(summary))
    with open(args.out, "a", encoding="utf-8") as f:
        print(json.dumps({"spec": "(summary)", **summary}), file=f)
    shutil.rmtree(report, ignore_errors=True)
    return proc.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", nargs="?", default="parent", choices=["parent", "child"])
    parser.add_argument("--target", default="audits/")
    parser.add_argument("-k", default=None, help="the CLI's -k selection")
    parser.add_argument("--cache", default=str(ROOT / ".cache" / "jax"))
    parser.add_argument("--cold", action="store_true", help="empty --cache first")
    parser.add_argument("--report", default=None)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "memory.jsonl"))
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--workers", type=int, default=None, help="the CLI's --workers")
    args = parser.parse_args()
    if args.mode == "child":
        return child(args)
    if args.cold:
        shutil.rmtree(args.cache, ignore_errors=True)
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
