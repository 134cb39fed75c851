"""The black-box audits' own overhead around the libraries, before/after, side by side.

Two parts, each alternating the source trees given with ``--tree`` (e.g. the base commit
exported with ``git archive`` and this tree), every measurement in a fresh process:

* **per release** (``--releases``): CPU microseconds per OpenDP release read by
  :func:`dpaudit.adapters.opendp_output.invoke_reader` (OpenDP's Rust call and dpaudit's
  reading of its output) beside the Rust call alone (the output freed unread: the floor),
  for a composition of three queries, a Laplace release and a histogram, each drawn as one
  ``make_composition`` of 1000 copies; the reader's share is the difference;
* **statistics** (``--statistics``): CPU of each tree's float reachability statistic
  (``numpy_laplace_reachable``) on 2e5 releases of ``0 + Z`` (all reachable) and of
  ``1 + Z`` (mostly not), and of 300 Clopper-Pearson bounds one by one (what an audit's
  planning and strength asks), each tree's module loaded from its file, interleaved;
* **per audit** (spec paths): each spec run twice in one process with one persistent
  compilation cache; the second (warm) run's CPU and wall seconds, its verdict, its
  certified bound and the library calls (releases drawn) are printed with the load average.

Usage::

    git archive BASE | tar -x -C /tmp/base
    PYTHONPATH=$PWD python benchmarks/blackbox_overhead.py --tree /tmp/base --tree . --releases
    PYTHONPATH=$PWD python benchmarks/blackbox_overhead.py --tree /tmp/base --tree . SPEC ...
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_RELEASES = """
import importlib.util, sys, time
sys.path.insert(0, "audits/libraries")
import opendp_audits as lib
from opendp import _convert, _lib
from opendp.combinators import make_composition
from opendp.core import measurement_input_carrier_type
from opendp.mod import Measurement

trees, rounds = sys.argv[1:-1], int(sys.argv[-1])
readers = {}
for i, tree in enumerate(trees):  # each tree's reader module, loaded from its file
    spec = importlib.util.spec_from_file_location(
        f"reader{i}", f"{tree}/dpaudit/adapters/opendp_output.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    readers[tree] = module.invoke_reader()
invoke = _lib.lib["opendp_core__measurement_invoke"]
invoke.argtypes, invoke.restype = [Measurement, _lib.AnyObjectPtr], _lib.FfiResult

def rust_only(m, arg):
    c_arg = _convert.py_to_c(arg, c_type=_lib.AnyObjectPtr, type_name=measurement_input_carrier_type(m))
    _lib.unwrap(invoke(m, c_arg), _lib.AnyObjectPtr)  # freed unread

def per_release(f, m, arg):
    start = time.process_time()
    f(m, arg)
    return (time.process_time() - start) / 1000 * 1e6

cases = {"composition": [0.1 * i for i in range(10)], "laplace": 1.0, "histogram": [0, 1, 2, 3, 1]}
for name, arg in cases.items():
    batch = make_composition([lib.audit_named(name).build()] * 1000)
    best = {}
    for r in range(rounds):  # interleaved: the floor and every tree's reader, round by round
        for label, f in [("rust", rust_only), *readers.items()]:
            t = per_release(f, batch, arg)
            best[label] = min(best.get(label, t), t)
    print(name, *(f"{label}={t:.2f}" for label, t in best.items()))
"""


_STATISTICS = """
import importlib.util, sys, time
import numpy as np

trees, rounds = sys.argv[1:-1], int(sys.argv[-1])

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

floats = {t: load(f"{t}/dpaudit/blackbox/statistics/floats.py", f"floats{i}") for i, t in enumerate(trees)}
bounds = {t: load(f"{t}/dpaudit/estimation/bounds.py", f"bounds{i}") for i, t in enumerate(trees)}
rng = np.random.default_rng(0)
z = rng.laplace(0.0, 1.0, 200_000)
ks = rng.integers(0, 10_000, 300)
cases = {
    "reachable 2e5": lambda t: floats[t].numpy_laplace_reachable(z, 0.0, 1.0),
    "shifted 2e5": lambda t: floats[t].numpy_laplace_reachable(1.0 + z, 0.0, 1.0),
    "300 bounds": lambda t: [bounds[t].clopper_pearson(k, 10_000, 0.025) for k in ks],
}
for name, f in cases.items():
    best = {}
    for r in range(rounds):
        for t in trees:
            start = time.process_time()
            f(t)
            took = time.process_time() - start
            best[t] = min(best.get(t, took), took)
    print(name.replace(" ", "_"), *(f"{t}={v * 1e3:.2f}" for t, v in best.items()))
"""


_AUDIT = """
import json, sys, time
from dpaudit.blackbox import samplers
from dpaudit.cli.main import main
spec, cache, out = sys.argv[1:4]
drawn = [0]
original = samplers.ReleaseSource._call
def counted(self, n, key):
    drawn[0] += n
    return original(self, n, key)
samplers.ReleaseSource._call = counted
for run in range(2):
    drawn[0] = 0
    c, w = time.process_time(), time.perf_counter()
    main(["audit", spec, "-q", "--cache-dir", cache, "--json", out])
    cpu, wall = time.process_time() - c, time.perf_counter() - w
print(json.dumps({"cpu": cpu, "wall": wall, "drawn": drawn[0], "result": json.load(open(out))}))
"""


def _run(tree: Path, code: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )


def releases(trees: list[Path], rounds: int) -> None:
    """Per-release CPU (least over interleaved rounds) of each tree's reader and the floor."""
    proc = _run(trees[-1], _RELEASES, *map(str, trees), str(rounds))
    if proc.returncode:
        print(f"failed: {proc.stderr[-600:]}")
        return
    for line in proc.stdout.split("\n"):
        if not line.strip():
            continue
        name, *cells = line.split()
        times = dict(cell.split("=") for cell in cells)
        floor = float(times.pop("rust"))
        row = "  ".join(
            f"[{Path(t).name}] {float(v):6.1f} us (reader {float(v) - floor:5.1f})"
            for t, v in times.items()
        )
        print(f"{name:12s} Rust alone {floor:6.1f} us  {row}  load {os.getloadavg()[0]:.1f}")


def statistics(trees: list[Path], rounds: int) -> None:
    """CPU milliseconds (least over interleaved rounds) of each tree's statistics and bounds."""
    proc = _run(trees[-1], _STATISTICS, *map(str, trees), str(max(3, rounds // 5)))
    if proc.returncode:
        print(f"failed: {proc.stderr[-600:]}")
        return
    for line in proc.stdout.split("\n"):
        if line.strip():
            name, *cells = line.split()
            row = "  ".join(
                f"[{Path(t).name}] {float(v):7.1f} ms" for t, v in (c.split("=") for c in cells)
            )
            print(f"{name:14s} {row}  load {os.getloadavg()[0]:.1f}")


def audits(trees: list[Path], specs: list[str]) -> None:
    """Each spec warm in a fresh process per tree, trees alternating; CPU, wall, result."""
    cache = tempfile.mkdtemp(prefix="dpaudit-blackbox-overhead-cache-")
    for spec in specs:
        for tree in trees:
            out = Path(tempfile.mkdtemp()) / "r.json"
            proc = _run(tree, _AUDIT, str(tree / spec), cache, str(out))
            if proc.returncode not in (0, 1):
                print(f"{spec} [{tree}] failed: {proc.stderr[-400:]}")
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            audit = row["result"]["audits"][0]
            print(
                f"{Path(spec).stem:40s} [{tree.name}] CPU {row['cpu']:5.2f} s  wall "
                f"{row['wall']:5.2f} s  drawn {row['drawn']}  {audit.get('verdict')}  "
                f"eps >= {audit.get('epsilon_lower', float('nan')):.4f}  "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )


def main(argv=None) -> None:
    """Parse the command line and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[], help="a source tree to compare")
    parser.add_argument("--releases", action="store_true", help="per-release reading costs")
    parser.add_argument("--rounds", type=int, default=30, help="rounds of --releases")
    parser.add_argument("--statistics", action="store_true", help="statistics and bounds")
    parser.add_argument("specs", nargs="*", default=[])
    args = parser.parse_args(argv)
    trees = [Path(t).resolve() for t in args.tree] or [Path(__file__).resolve().parent.parent]
    print(f"load average {os.getloadavg()}")
    if args.releases:
        releases(trees, args.rounds)
    if args.statistics:
        statistics(trees, args.rounds)
    if args.specs:
        audits(trees, args.specs)


if __name__ == "__main__":
    main()
