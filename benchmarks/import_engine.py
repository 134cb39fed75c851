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

``--bytecode DIR``: the children read and write Python bytecode under ``DIR``
(``PYTHONPYCACHEPREFIX``, one discarded round first), as a pip-installed package has it.
Without it, under ``PYTHONDONTWRITEBYTECODE=1`` (this machine's environment), every engine
line compiles dpaudit's ~100 modules from source while jax and numpyro read their installed
bytecode: about 0.4 x ``import jax`` of the engine's ratio was that compilation (session 12).
``import jax, numpyro`` is the floor: numpyro's ``__init__`` imports all of numpyro
(``infer``, ``diagnostics``, ``optim``, ``distributions``), so importing one submodule
(``numpyro.distributions``) costs the same.
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
    "import jax, numpyro": "import jax, numpyro",
    "import jax, scipy.special, scipy.linalg, scipy.fft": "import jax, scipy.special, "
    "scipy.linalg, scipy.fft",
    "engine and catalogue": "import dpaudit.whitebox.engine, dpaudit.blackbox.engine, "
    "dpaudit.io.spec, dpaudit.cli.main, mechanisms",
    "accounting (every module)": "import importlib, pkgutil, dpaudit.accounting as a\n"
    "for m in pkgutil.iter_modules(a.__path__): importlib.import_module(f'{a.__name__}.{m.name}')",
}


def _timed(code: str, root: Path = ROOT, bytecode: Path | None = None) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(root)}
    if bytecode is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(bytecode / root.name)
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
    parser.add_argument("--bytecode", type=Path, help="children keep their bytecode under DIR")
    args = parser.parse_args()
    print(f"load before {os.getloadavg()[0]:.1f}, {args.runs} fresh processes each")
    lines = {name: (code, ROOT) for name, code in LINES.items()}
    if args.other:
        lines[f"audit engine ({args.other.name})"] = (LINES["audit engine"], args.other)
    times = {name: [] for name in lines}
    if args.bytecode is not None:  # one discarded round writes every line's bytecode
        for code, root in lines.values():
            _timed(code, root, args.bytecode)
    for _ in range(args.runs):
        for name, (code, root) in lines.items():
            times[name].append(_timed(code, root, args.bytecode))
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
