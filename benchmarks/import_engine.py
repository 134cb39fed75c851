"""Loading the audit engine against ``import jax``: fresh processes, side by side.

Run: ``python benchmarks/import_engine.py [--runs 5]``. Each run starts a fresh Python for
``import jax`` and one for what ``dpaudit audit`` loads before its first audit (the white-box
and black-box engines, the spec reader, the command), alternately; the wall and CPU seconds
(user + system of the child, from ``resource``) are the medians over the runs, with the
load average, and the modules each line loads (``len(sys.modules)``, load-independent).
``--other ROOT`` times another checkout's engine line in the same rounds (e.g. an unpacked
older commit), for a before/after side by side. Issue 29's target: the engine <= 1.3 x
``import jax``. ``python -X importtime`` on the engine line shows where the rest goes; the
``import jax, numpyro.distributions`` line is the floor while the engine's models are
numpyro models.
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
    "import jax, numpyro.distributions": "import jax, numpyro.distributions",
    "accounting (every module)": "import importlib, pkgutil, dpaudit.accounting as a\n"
    "for m in pkgutil.iter_modules(a.__path__): importlib.import_module(f'{a.__name__}.{m.name}')",
}


def _timed(code: str, root: Path = ROOT) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(root)}
    probe = f"{code}\nimport sys\nprint(len(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, env=env, cwd=root, capture_output=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--other", type=Path, help="another checkout whose engine line is timed")
    args = parser.parse_args()
    print(f"load before {os.getloadavg()[0]:.1f}, {args.runs} fresh processes each")
    lines = {name: (code, ROOT) for name, code in LINES.items()}
    if args.other:
        lines[f"audit engine ({args.other.name})"] = (LINES["audit engine"], args.other)
    times = {name: [] for name in lines}
    for _ in range(args.runs):
        for name, (code, root) in lines.items():
            times[name].append(_timed(code, root))
    base_wall = statistics.median(w for w, _, _ in times["import jax"])
    base_cpu = statistics.median(c for _, c, _ in times["import jax"])
    print("| import | wall (median) | CPU (median) | / import jax (wall, CPU) | modules |")
    print("| --- | --- | --- | --- | --- |")
    for name, rows in times.items():
        wall = statistics.median(w for w, _, _ in rows)
        cpu = statistics.median(c for _, c, _ in rows)
        print(f"| {name} | {wall:.2f} s | {cpu:.2f} s | {wall / base_wall:.2f}x, "
              f"{cpu / base_cpu:.2f}x | {rows[0][2]} |")  # fmt: skip
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
