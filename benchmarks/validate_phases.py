"""Where ``dpaudit validate`` spends its CPU, by phase, in this process (session 13, issue 29).

Run: ``PYTHONPATH=$PWD python benchmarks/validate_phases.py [SPECS] [--cache-dir DIR]``
(default ``audits/``, the cache in ``.cache/jax``; run it twice: the second run is warm).
Each stage function of the spec reader is wrapped with a CPU timer (``time.process_time``,
all threads of this process), so the split adds up to the whole; the XLA programs
(compiled or read back from the persistent cache) and the modules loaded are counted, and
the heavy third-party stacks loaded are named. Seconds depend on the load average (printed);
counts do not. Use ``--bytecode``-like conditions (``PYTHONPYCACHEPREFIX``, no
``PYTHONDONTWRITEBYTECODE``) to time what a pip-installed package does.
"""

import argparse
import collections
import contextlib
import io
import os
import sys
import time

STAGES = ("load_spec", "resolve_mechanism", "load_pair", "check_model_traces", "resolve_blackbox",
          "blackbox_features", "check_sampler_traces", "check_sampler_runs", "resolve_training")  # fmt: skip
HEAVY = ("sklearn", "pandas", "scipy.stats", "scipy.optimize", "opendp", "diffprivlib",
         "jax_privacy", "torch", "arviz", "matplotlib")  # fmt: skip


def _timed(module, name: str, spent: collections.Counter) -> None:
    inner = getattr(module, name)

    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - start

    setattr(module, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="?", default="audits/")
    parser.add_argument("--cache-dir", default=".cache/jax")
    args = parser.parse_args()
    start = time.process_time()
    import jax

    import dpaudit.io.spec as reader
    from dpaudit.cli.main import main as cli

    imports = time.process_time() - start
    spent, programs = collections.Counter(), [0]
    for name in STAGES:
        _timed(reader, name, spent)

    def listener(event, duration, **kwargs):
        programs[0] += event == "/jax/core/compile/backend_compile_duration"

    jax.monitoring.register_event_duration_secs_listener(listener)
    print(f"load before {os.getloadavg()[0]:.1f}")
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli(["validate", args.specs, "--cache-dir", args.cache_dir])
    total = time.process_time() - start
    print(f"exit {code}; {total:.2f} s CPU in all; {programs[0]} XLA programs; "
          f"{len(sys.modules)} modules; load after {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"  importing jax, numpyro, dpaudit's spec reader and CLI: {imports:.2f} s")
    for name, seconds in spent.most_common():
        print(f"  {name}: {seconds:.2f} s")
    rest = total - imports - sum(spent.values())
    print(f"  the rest (adjacency, describing, releasing memory): {rest:.2f} s")
    print("  heavy stacks loaded:", [m for m in HEAVY if m in sys.modules])


if __name__ == "__main__":
    main()
