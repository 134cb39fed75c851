"""Loading the audit engine against ``import jax``: fresh processes, side by side.

Run: ``python benchmarks/import_engine.py [--runs 5]``. Each run starts a fresh Python for
``import jax`` and one for what ``dpaudit audit`` loads before its first audit (the white-box
and black-box engines, the spec reader, the command), alternately; the wall and CPU seconds
(user + system of the child, from ``resource``) are the medians over the runs, with the
load average. Issue 29's target: the engine <= 1.3 x ``import jax``. ``python -X importtime``
on the engine line shows where the rest goes.
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINES = {
    "import jax": "import jax",
    "audit engine": "import dpaudit.whitebox.engine, dpaudit.blackbox.engine, dpaudit.io.spec, "
    "dpaudit.cli.main",
    "accounting": "import dpaudit.accounting",
}


def _timed(code: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"load before {os.getloadavg()[0]:.1f}, {args.runs} fresh processes each")
    times = {name: [] for name in LINES}
    for _ in range(args.runs):
        for name, code in LINES.items():
            times[name].append(_timed(code))
    base_wall = statistics.median(w for w, _ in times["import jax"])
    base_cpu = statistics.median(c for _, c in times["import jax"])
    print("| import | wall (median) | CPU (median) | / import jax (wall, CPU) |")
    print("| --- | --- | --- | --- |")
    for name, rows in times.items():
        wall, cpu = statistics.median(w for w, _ in rows), statistics.median(c for _, c in rows)
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {wall / base_wall:.2f}x, "
              f"{cpu / base_cpu:.2f}x |")  # fmt: skip
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
