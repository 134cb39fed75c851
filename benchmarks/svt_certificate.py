"""What an SVT audit's certificate costs, first in a process and second (issue 29, s12-svtq).

For each SVT spec, a fresh process prepares and audits it twice (``prepare``,
``run_audit``, ``release_memory``, as the CLI does); the certificate step
(``dpaudit.whitebox.engine.find_certificate``) is wrapped to time it and count the JAX
programs traced, lowered and compiled and the persistent-cache hits inside it. Rows: the
whole audit and its certificate, first in the process and second.

Usage (fill the cache once, then measure with it warm)::

    PYTHONPATH=$PWD python benchmarks/svt_certificate.py --cache-dir .cache/jax   # fills
    PYTHONPATH=$PWD python benchmarks/svt_certificate.py --cache-dir .cache/jax

``--against DIR --against-cache C`` also runs each spec from another checkout ``DIR``
(e.g. ``git archive`` of the base commit, with this script copied in) with its own filled
cache ``C``, alternating spec by spec, so both columns share one load.

Counts do not depend on the load; times are printed with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SPECS = (
    "catalogue/svt",
    "catalogue/svt-dwork-roth",
    "catalogue/svt-program",
    "faulty/svt-lyu-alg3",
    "faulty/svt-lyu-alg4",
    "faulty/svt-lyu-alg5",
    "faulty/svt-lyu-alg6",
    "faulty/svt-program-unscaled-query-noise",
)
EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}
HIT = "/jax/compilation_cache/cache_hits"


def _one(spec: str, cache_dir: str | None) -> dict:
    """Audit ``spec`` twice in this process; the figures of both audits and certificates."""
    if cache_dir is None:
        os.environ["DPAUDIT_CACHE"] = "0"
    import jax

    from dpaudit.cli.main import prepare, run_audit
    from dpaudit.core.compilation_cache import enable_compilation_cache
    from dpaudit.core.memory import release_memory
    from dpaudit.whitebox import engine

    if cache_dir is not None:
        enable_compilation_cache(cache_dir)
    count: Counter = Counter()
    jax.monitoring.register_event_duration_secs_listener(
        lambda e, d, **k: count.update([EVENTS[e]]) if e in EVENTS else None
    )
    jax.monitoring.register_event_listener(
        lambda e, **k: count.update(["hit"]) if e == HIT else None
    )
    inner, cert = engine.find_certificate, {}

    def timed(*args, **kwargs):
        before, w, c = Counter(count), time.perf_counter(), time.process_time()
        out = inner(*args, **kwargs)
        cert.update(wall=time.perf_counter() - w, cpu=time.process_time() - c)
        cert.update({k: count[k] - before[k] for k in ("trace", "lower", "compile", "hit")})
        return out

    engine.find_certificate = timed
    rows = []
    for _ in range(2):
        (item,) = prepare([ROOT / "audits" / f"{spec}.toml"])
        before, w, c = Counter(count), time.perf_counter(), time.process_time()
        result = run_audit(item)
        release_memory()
        row = {"wall": time.perf_counter() - w, "cpu": time.process_time() - c}
        row.update({k: count[k] - before[k] for k in ("trace", "lower", "compile", "hit")})
        rows.append({"verdict": result.verdict, "audit": row, "certificate": dict(cert)})
    return {"spec": spec, "rows": rows}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", help="spec names under audits/ (default: the 8 SVT)")
    parser.add_argument("--cache-dir", default=None, help="persistent cache (default: none)")
    parser.add_argument("--against", default=None, help="another checkout, run alternately")
    parser.add_argument("--against-cache", default=None, help="its persistent cache")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(_one(args.one, args.cache_dir)))
        return
    print("load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(
        "| spec | verdict | audit 1 wall / CPU s | cert 1 wall / CPU s | cert 1 trace/lower/"
        "compile/hit | audit 2 wall / CPU s | cert 2 wall / CPU s | cert 2 trace/lower/compile |"
    )
    print("|---" * 8 + "|")
    trees = [(ROOT, args.cache_dir, "")]
    if args.against is not None:
        trees = [(Path(args.against).resolve(), args.against_cache, " (base)"), *trees]
    totals = {label: Counter() for _, _, label in trees}
    for spec in args.specs or SPECS:
        for tree, cache, label in trees:
            cmd = [sys.executable, str(tree / "benchmarks" / "svt_certificate.py"), "--one", spec]
            if cache is not None:
                cmd += ["--cache-dir", cache]
            env = {**os.environ, "PYTHONPATH": str(tree)}
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env, cwd=tree)
            rows = json.loads(out.stdout.strip().splitlines()[-1])["rows"]
            _print_row(spec + label, rows, totals[label])
    for label, total in totals.items():
        _print_total(total, label)
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


def _print_row(name, rows, totals) -> None:
    first, second = rows
    a1, c1, a2, c2 = first["audit"], first["certificate"], second["audit"], second["certificate"]
    for key, value in (("a1", a1), ("c1", c1), ("a2", a2), ("c2", c2)):
        totals[key + "w"] += value["wall"]
        totals[key + "c"] += value["cpu"]
    print(
        f"| {name} | {first['verdict']} | {a1['wall']:.2f} / {a1['cpu']:.2f} "
        f"| {c1['wall']:.2f} / {c1['cpu']:.2f} "
        f"| {c1['trace']}/{c1['lower']}/{c1['compile']}/{c1['hit']} "
        f"| {a2['wall']:.2f} / {a2['cpu']:.2f} | {c2['wall']:.2f} / {c2['cpu']:.2f} "
        f"| {c2['trace']}/{c2['lower']}/{c2['compile']} |",
        flush=True,
    )


def _print_total(t, label) -> None:
    print(
        f"| total{label} | | {t['a1w']:.2f} / {t['a1c']:.2f} | {t['c1w']:.2f} / "
        f"{t['c1c']:.2f} | | {t['a2w']:.2f} / {t['a2c']:.2f} | "
        f"{t['c2w']:.2f} / {t['c2c']:.2f} | |"
    )


if __name__ == "__main__":
    main()
