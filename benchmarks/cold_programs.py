"""Which XLA programs a cold ``dpaudit audit`` compiles, per spec and per program, and its memory.

Runs the CLI itself in this process (``dpaudit audit SPECS --cache-dir DIR --report TMP``,
serially, as ``make audit`` on two cores) with a persistent compilation cache folder that
should be empty for a cold run (``--cache-dir``; the default is a fresh temporary folder),
and records through ``jax.monitoring``:

* every XLA backend compilation (``/jax/core/compile/backend_compile_duration``) with its
  jitted function's name and seconds, split into real compilations and persistent-cache
  loads (a ``/jax/compilation_cache/cache_hits`` event inside it);
* the seconds of tracing (``jaxpr_trace_duration``) and lowering
  (``jaxpr_to_mlir_module_duration``), which no cache saves;
* the resident memory after each audit and the process's peak (``VmHWM``).

Each event is charged to the audit running at the time (the CLI's per-audit call is
wrapped), or to ``(prepare)`` before the first audit. It prints a table per spec, the
programs compiled most often or longest over the run (same name compiled again = a
program that differs only in constants or shapes), and the totals.

Usage::

    PYTHONPATH=$PWD python benchmarks/cold_programs.py audits/catalogue audits/faulty
    PYTHONPATH=$PWD python benchmarks/cold_programs.py --json out.json -k "laplace" audits/

Counts do not depend on the load; seconds are printed with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's dpaudit, not an installed one

EVENTS = {
    "/jax/core/compile/backend_compile_duration": "compile",
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
}
CACHE_HIT = "/jax/compilation_cache/cache_hits"


def _status() -> tuple[float, float]:
    """Resident and peak resident memory of this process in GB (Linux ``/proc``)."""
    fields = {"VmRSS": 0.0, "VmHWM": 0.0}
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in fields:
                fields[key] = int(value.split()[0]) / 1e6
    except OSError:
        pass
    return fields["VmRSS"], fields["VmHWM"]


class Recorder:
    """Collects compilation events per audit (the current one is ``self.spec``)."""

    def __init__(self):
        self.spec = "(prepare)"
        self.hit = False
        self.rows: list[tuple[str, str, str, float]] = []  # spec, kind, name, seconds
        self.memory: dict[str, tuple[float, float, float]] = {}

    def event(self, event, **kwargs):
        if event == CACHE_HIT:
            self.hit = True

    def duration(self, event, seconds, **kwargs):
        kind = EVENTS.get(event)
        if kind is None:
            return
        if kind == "compile":
            kind = "load" if self.hit else "compile"
            self.hit = False
        self.rows.append((self.spec, kind, str(kwargs.get("fun_name", "?")), seconds))


def _install(recorder: Recorder):
    import jax

    import dpaudit.cli.main as cli

    jax.monitoring.register_event_listener(recorder.event)
    jax.monitoring.register_event_duration_secs_listener(recorder.duration)
    inner = cli.run_audit  # looked up as a module global by the CLI's per-audit call

    def wrapped(item):
        recorder.spec = item.spec.name
        start = time.perf_counter()
        try:
            return inner(item)
        finally:
            rss, peak = _status()
            recorder.memory[item.spec.name] = (time.perf_counter() - start, rss, peak)

    cli.run_audit = wrapped
    return cli


def _report(recorder: Recorder, top: int) -> dict:
    per_spec = defaultdict(Counter)
    per_name = defaultdict(Counter)
    for spec, kind, name, seconds in recorder.rows:
        per_spec[spec][kind] += 1
        per_spec[spec][kind + "_s"] += seconds
        per_name[name][kind] += 1
        per_name[name][kind + "_s"] += seconds
    print(
        "\n| spec | compiled | compile s | cache loads | traces | trace+lower s | RSS GB | peak GB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for spec, c in per_spec.items():
        _, rss, peak = recorder.memory.get(spec, (0, 0, 0))
        print(
            f"| {spec} | {c['compile']} | {c['compile_s']:.1f} | {c['load']} | {c['trace']} "
            f"| {c['trace_s'] + c['lower_s']:.1f} | {rss:.2f} | {peak:.2f} |"
        )
    print(f"\n| program (top {top} by compile s) | compiled | compile s | loads | traces |")
    print("|---|---|---|---|---|")
    ranked = sorted(per_name.items(), key=lambda kv: -kv[1]["compile_s"])
    for name, c in ranked[:top]:
        print(f"| {name} | {c['compile']} | {c['compile_s']:.1f} | {c['load']} | {c['trace']} |")
    total = Counter()
    for c in per_spec.values():
        total.update(c)
    print(
        f"\ntotal: {total['compile']} compiled ({total['compile_s']:.1f} s), "
        f"{total['load']} loaded from the cache ({total['load_s']:.1f} s), {total['trace']} traces, "
        f"trace+lower {total['trace_s'] + total['lower_s']:.1f} s; peak RSS {_status()[1]:.2f} GB"
    )
    return {
        "per_spec": {k: dict(v) for k, v in per_spec.items()},
        "per_name": {k: dict(v) for k, v in per_name.items()},
        "memory": recorder.memory,
        "rows": recorder.rows,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", help="spec files or folders")
    parser.add_argument("-k", default=None, help="the CLI's -k filter")
    parser.add_argument("--samples", default=None, help="the CLI's --samples (counts only)")
    parser.add_argument("--cache-dir", default=None, help="compilation cache (default: empty)")
    parser.add_argument("--json", default=None, help="write every event here")
    parser.add_argument("--top", type=int, default=40, help="programs listed")
    args = parser.parse_args(argv)
    recorder = Recorder()
    cli = _install(recorder)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    wall, cpu = time.perf_counter(), time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache_dir or os.path.join(tmp, "jax")
        extra = ["-k", args.k] if args.k else []
        extra += ["--samples", args.samples] if args.samples else []
        code = cli.main(
            ["audit", *args.targets, *extra, "-q", "--report", tmp + "/r", "--cache-dir", cache]
        )
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    data = _report(recorder, args.top)
    print(
        f"exit {code}; {wall:.0f} s wall, {cpu:.0f} s CPU; load average before {load}, after "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
    )
    if args.json:
        data.update(wall=wall, cpu=cpu, load_before=load, exit=code)
        Path(args.json).write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()
