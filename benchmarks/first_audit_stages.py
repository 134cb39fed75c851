"""Where a first white-box audit's time goes in a fresh process: CPU seconds and programs per stage.

Run: ``PYTHONPATH=$PWD python benchmarks/first_audit_stages.py SPEC.toml`` (one spec, one fresh
process; set ``DPAUDIT_CACHE_DIR`` to an empty folder, then run again for a filled cache).
The spec is prepared as ``dpaudit audit`` does, then audited twice (first, warm). The stages
of the engine (``dpaudit.whitebox.engine``: the plan with its model traces, the pilot run
placing the grid, the main run with the release regeneration, the certificate, the pair's
scope) are wrapped to count CPU seconds and XLA compilations (persistent-cache hits
included). Counts do not depend on the load; seconds do (the load average is printed).
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections import Counter

STAGES = {
    "plan_audit": "plan (model traces)",
    "epsilon_grid": "pilot (grid)",
    "run_directions": "main run (+ release)",
    "find_certificate": "certificate",
    "with_pair_scope": "pair scope",
}


def main() -> None:
    start = time.process_time()
    import jax

    import dpaudit.whitebox.engine as engine
    from dpaudit.cli.main import prepare, run_audit
    from dpaudit.core.compilation_cache import ensure_compilation_cache

    imported = time.process_time() - start
    ensure_compilation_cache()
    programs = [0]

    def on_duration(event, duration, **kwargs):
        programs[0] += event == "/jax/core/compile/backend_compile_duration"

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    seconds, counts = Counter(), Counter()

    def wrap(name, label):
        original = getattr(engine, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            cpu, before = time.process_time(), programs[0]
            try:
                return original(*args, **kwargs)
            finally:
                seconds[label] += time.process_time() - cpu
                counts[label] += programs[0] - before

        setattr(engine, name, timed)

    for name, label in STAGES.items():
        wrap(name, label)
    row = {"load": os.getloadavg()[0], "import CPU": round(imported, 2)}
    cpu = time.process_time()
    (item,) = prepare([sys.argv[1]], samples=20_000)
    row["prepare CPU, programs"] = [round(time.process_time() - cpu, 2), programs[0]]
    for run in ("first", "warm"):
        seconds.clear()
        counts.clear()
        cpu, before = time.process_time(), programs[0]
        verdict = str(run_audit(item).verdict)
        row[f"{run} CPU, programs"] = [round(time.process_time() - cpu, 2), programs[0] - before]
        row[f"{run} stages"] = {k: [round(v, 3), counts[k]] for k, v in seconds.items()}
    row["verdict"] = verdict
    print(json.dumps(row, indent=1))


if __name__ == "__main__":
    main()
