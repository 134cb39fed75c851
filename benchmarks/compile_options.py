"""XLA CPU compile options on the real programs of a cold ``dpaudit audit``: CPU and code.

Two phases in one process:

1. **Capture**: runs the CLI (``dpaudit audit SPECS --no-cache``, serially, as ``make audit``)
   and keeps every module XLA compiles (the StableHLO handed to the backend, its compile
   options and devices), by wrapping ``jax._src.compiler.backend_compile_and_load``.
2. **Recompile**: compiles every captured module again under each option set, the sets
   interleaved per module (so load drifts hit them alike), and records the process CPU
   seconds of each compile. Whether an option keeps results bit-identical is not seen
   here (a serialized executable differs between two compiles with the same options):
   ``tests/golden/golden_cases.py --check`` under ``XLA_FLAGS`` decides that.

Usage::

    PYTHONPATH=$PWD python benchmarks/compile_options.py audits/catalogue/svt.toml ...
    PYTHONPATH=$PWD python benchmarks/compile_options.py --samples 2000 -k laplace audits/

Option sets (``--sets``, default all): ``base`` (as captured), ``noexp``
(``xla_llvm_disable_expensive_passes``), ``o0`` (``xla_backend_optimization_level=0``),
``o1`` (level 1), ``split1`` (``xla_cpu_parallel_codegen_split_count=1``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's dpaudit, not an installed one

SETS = {
    "base": {},
    "noexp": {"xla_llvm_disable_expensive_passes": True},
    "o0": {"xla_backend_optimization_level": 0},
    "o1": {"xla_backend_optimization_level": 1},
    "split1": {"xla_cpu_parallel_codegen_split_count": 1},
    "effort": {"exec_time_optimization_effort": -1.0},  # a build option, not a debug one
}
BUILD_OPTIONS = ("exec_time_optimization_effort", "optimization_level")


def capture(targets, k, samples) -> list:
    """Run the CLI once and return ``[(name, bytecode, options, devices, backend, level0)]``.

    ``level0``: whether dpaudit compiled the module at ``xla_backend_optimization_level=0``.
    """
    from jax._src import compiler
    from jax._src.interpreters import mlir

    import dpaudit.cli.main as cli

    kept = []
    inner = compiler.backend_compile_and_load

    def recording(backend, module, executable_devices, options, host_callbacks):
        name = str(module.operation.attributes["sym_name"]).strip('"')
        if not host_callbacks:
            level0 = ("xla_backend_optimization_level", 0) in list(options.env_option_overrides)
            kept.append(
                (
                    name,
                    mlir.module_to_bytecode(module),
                    options,
                    executable_devices,
                    backend,
                    level0,
                )
            )
        return inner(backend, module, executable_devices, options, host_callbacks)

    compiler.backend_compile_and_load = recording
    try:
        with tempfile.TemporaryDirectory() as tmp:
            extra = ["-k", k] if k else []
            extra += ["--samples", samples] if samples else []
            cli.main(["audit", *targets, *extra, "-q", "--report", tmp + "/r", "--no-cache"])
    finally:
        compiler.backend_compile_and_load = inner
    return kept


def _known(name: str) -> bool:
    return any(name in options for options in SETS.values())


def _options(base, overrides: dict):
    """A copy of the captured compile options with ``overrides`` as XLA debug options."""
    from jax._src.lib import xla_client as xc

    options = xc.CompileOptions.ParseFromString(base.SerializeAsString())
    # a program dpaudit itself compiles with options (the run-once programs at level 0)
    # is measured without them: ``base`` is XLA's default for every module
    options.env_option_overrides = [
        (k, v) for k, v in options.env_option_overrides if not _known(k)
    ]
    overrides = dict(overrides)
    for name in BUILD_OPTIONS:
        if name in overrides:
            setattr(options.executable_build_options, name, overrides.pop(name))
    if overrides:
        options.env_option_overrides = list(options.env_option_overrides) + list(overrides.items())
    return options


def recompile(kept, sets) -> dict:
    """``{set: [(name, cpu seconds, level0)]}``, the sets interleaved per module."""
    out = defaultdict(list)
    for i, (name, code, options, devices, backend, level0) in enumerate(kept):
        order = sets if i % 2 == 0 else list(reversed(sets))
        for label in order:
            opts = _options(options, SETS[label])
            start = time.process_time()
            executable = backend.compile_and_load(code, devices, opts)
            cpu = time.process_time() - start
            del executable
            out[label].append((name, cpu, level0))
    return out


def report(out, sets) -> None:
    """Compile CPU per option set, for the modules dpaudit compiles at level 0, per program."""
    base = out.get("base")
    print("\n| option set | compile CPU s | ratio to base | modules |")
    print("|---|---|---|---|")
    for label in sets:
        rows = out[label]
        cpu = sum(r[1] for r in rows)
        ratio = cpu / sum(r[1] for r in base) if base else float("nan")
        print(f"| {label} | {cpu:.1f} | {ratio:.2f} | {len(rows)} |")
    if base and "o0" in out:
        mine = [(a[1], b[1]) for a, b in zip(base, out["o0"], strict=True) if a[2]]
        print(
            f"\nmodules dpaudit compiles at level 0 ({len(mine)}): default "
            f"{sum(a for a, _ in mine):.1f} s CPU, level 0 {sum(b for _, b in mine):.1f} s CPU"
        )
    per_name = defaultdict(lambda: defaultdict(float))
    for label in sets:
        for name, cpu, _ in out[label]:
            per_name[name][label] += cpu
    print("\n| program (top 15 by base CPU) | " + " | ".join(sets) + " |")
    print("|---" * (len(sets) + 1) + "|")
    ranked = sorted(per_name.items(), key=lambda kv: -kv[1].get(sets[0], 0.0))
    for name, row in ranked[:15]:
        print(f"| {name} | " + " | ".join(f"{row[s]:.2f}" for s in sets) + " |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="+", help="spec files or folders")
    parser.add_argument("-k", default=None, help="the CLI's -k filter")
    parser.add_argument("--samples", default=None, help="the CLI's --samples")
    parser.add_argument("--sets", default=",".join(SETS), help="option sets, comma-separated")
    args = parser.parse_args(argv)
    sets = args.sets.split(",")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    start = time.process_time()
    kept = capture(args.targets, args.k, args.samples)
    print(f"captured {len(kept)} compiled modules ({time.process_time() - start:.0f} s CPU)")
    out = recompile(kept, sets)
    report(out, sets)
    print(f"load average before {load}, after " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
