"""The library audits (OpenDP, diffprivlib): cost per release and per audit, before/after.

Two parts, both side by side in one run:

* **per release** (this tree; CPU microseconds per release): OpenDP releases drawn as one
  ``make_composition`` of 1000 copies and read by OpenDP's own conversion
  (``measurement(arg)``) or bare (:func:`dpaudit.adapters.opendp_output.invoke_reader`),
  beside the Rust call alone (the output freed unread: the floor); diffprivlib releases
  through ``per_call`` as the shipped audits drew them before (the query answer computed
  and a 0-d array made per call) and now;
* **per audit** (``--tree`` given, e.g. the base commit exported with ``git archive``):
  each spec in a fresh process per tree, alternating trees spec by spec, run twice in that
  process with one persistent compilation cache (``--cache-dir``); the second run is the
  warm audit whose CPU and wall seconds are printed, with the verdict and certified bound.

Usage::

    PYTHONPATH=$PWD python benchmarks/library_audits.py --releases
    PYTHONPATH=$PWD python benchmarks/library_audits.py --tree /tmp/base --tree . [SPEC ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
LIBRARIES = ROOT / "audits" / "libraries"

SPECS = (
    "audits/libraries/opendp-composition.toml",
    "audits/libraries/opendp-histogram.toml",
    "audits/libraries/opendp-laplace-wrong-sensitivity.toml",
    "audits/libraries/diffprivlib-gaussian-analytic.toml",
    "audits/libraries/diffprivlib-laplace.toml",
    "audits/libraries/diffprivlib-histogram.toml",
)

_CHILD = """
import json, sys, time
sys.argv = ["dpaudit"]
from dpaudit.cli.main import main
spec, cache, out = sys.argv_spec
for run in range(2):
    c, w = time.process_time(), time.perf_counter()
    main(["audit", spec, "-q", "--cache-dir", cache, "--json", out])
    cpu, wall = time.process_time() - c, time.perf_counter() - w
result = json.load(open(out))
print(json.dumps({"cpu": cpu, "wall": wall, "result": result}))
"""


def _per_release(f, args: tuple, rounds: int, releases: int) -> float:
    """CPU microseconds per release of ``rounds`` calls ``f(*args)`` giving ``releases``."""
    start = time.process_time()
    for _ in range(rounds):
        f(*args)
    return (time.process_time() - start) / releases * 1e6


def opendp_releases() -> None:
    """Per-release CPU of three OpenDP measurements: own conversion, bare reading, Rust alone."""
    sys.path.insert(0, str(LIBRARIES))
    import opendp_audits as lib
    from opendp import _convert, _lib
    from opendp.combinators import make_composition
    from opendp.core import measurement_input_carrier_type
    from opendp.mod import Measurement

    from dpaudit.adapters.opendp_output import invoke_reader

    bare = invoke_reader()
    cases = {"composition": [0.1 * i for i in range(10)], "laplace": 1.0}
    cases["histogram"] = [0, 1, 2, 3, 1]

    def rust_only(m, arg):
        invoke = _lib.lib.opendp_core__measurement_invoke
        invoke.argtypes, invoke.restype = [Measurement, _lib.AnyObjectPtr], _lib.FfiResult
        c_arg = _convert.py_to_c(
            arg, c_type=_lib.AnyObjectPtr, type_name=measurement_input_carrier_type(m)
        )
        _lib.unwrap(invoke(m, c_arg), _lib.AnyObjectPtr)  # freed unread

    for name, arg in cases.items():
        batch = make_composition([lib.audit_named(name).build()] * 1000)
        rounds = 5
        own = _per_release(batch, (arg,), rounds, 1000 * rounds)
        read = _per_release(bare, (batch, arg), rounds, 1000 * rounds)
        floor = _per_release(rust_only, (batch, arg), rounds, 1000 * rounds)
        print(
            f"opendp/{name:12s} own conversion {own:6.1f} us  bare {read:6.1f} us  "
            f"(Rust alone {floor:5.1f}): {own / read:.2f}x"
        )


def diffprivlib_releases() -> None:
    """Per-release CPU through per_call: the answer per call and 0-d arrays (before), and now."""
    sys.path.insert(0, str(LIBRARIES))
    import diffprivlib_primitives as lib
    import jax

    from dpaudit.blackbox import per_call

    key = jax.random.key(0)
    mechanisms = lib._dpl().mechanisms
    cases = {
        "laplace": (mechanisms.Laplace, {"epsilon": 1.0, "sensitivity": 1.0}, float),
        "gaussian-analytic": (
            mechanisms.GaussianAnalytic,
            {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0},
            float,
        ),
        "geometric": (mechanisms.Geometric, {"epsilon": 1.0, "sensitivity": 1}, int),
    }
    for name, (cls, params, answer) in cases.items():
        audit = lib.audit_named(name)

        def make(state, cls=cls, params=params, answer=answer):
            mech = cls(random_state=state, **params)
            # before: the answer per call, a 0-d array per release (what np.stack stacked)
            return lambda d: np.asarray(mech.randomise(answer(np.sum(d))))

        old = per_call(lib.Seeded(make), seed="generator")
        new = lib.sampler_of(audit)
        data, n = audit.inputs[0], 20_000
        same = np.array_equal(old(data, n, key), new(data, n, key))
        t_old = _per_release(old, (data, n, key), 1, n)
        t_new = _per_release(new, (data, n, key), 1, n)
        print(
            f"diffprivlib/{name:18s} before {t_old:6.1f} us  now {t_new:6.1f} us: "
            f"{t_old / t_new:.2f}x (same releases: {same})"
        )


def audits(trees: list[str], specs: list[str]) -> None:
    """Each spec warm in a fresh process per tree, trees alternating; CPU, wall, result."""
    cache = tempfile.mkdtemp(prefix="dpaudit-libaudits-cache-")
    for spec in specs:
        for tree in trees:
            tree_root = Path(tree).resolve()
            out = Path(tempfile.mkdtemp()) / "r.json"
            code = _CHILD.replace("sys.argv_spec", repr([str(tree_root / spec), cache, str(out)]))
            env = {**os.environ, "PYTHONPATH": str(tree_root)}
            proc = subprocess.run(
                [sys.executable, "-c", code],
                env=env,
                cwd=tree_root,
                capture_output=True,
                text=True,
                check=False,
            )
            if proc.returncode not in (0, 1):
                print(f"{spec} [{tree}] failed: {proc.stderr[-400:]}")
                continue
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            audit = row["result"]["audits"][0] if "audits" in row["result"] else row["result"]
            print(
                f"{Path(spec).stem:36s} [{tree}] CPU {row['cpu']:5.1f} s  wall {row['wall']:5.1f}"
                f" s  {audit.get('verdict')}  eps >= {audit.get('epsilon_lower', float('nan')):.4f}"
                f"  load {os.getloadavg()[0]:.1f}",
                flush=True,
            )


def main(argv=None) -> None:
    """Parse the command line and print the measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", action="store_true", help="per-release costs only")
    parser.add_argument("--tree", action="append", default=[], help="a source tree to compare")
    parser.add_argument("specs", nargs="*", default=list(SPECS))
    args = parser.parse_args(argv)
    print(f"load average {os.getloadavg()}")
    if args.releases or not args.tree:
        opendp_releases()
        diffprivlib_releases()
    if args.tree:
        audits(args.tree, args.specs)


if __name__ == "__main__":
    main()
