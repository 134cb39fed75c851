"""What collecting the default suite costs in each pytest-xdist worker, and where it goes.

Every xdist worker collects the whole default suite before running its share (2 workers:
twice). This runs ``pytest --collect-only`` in fresh processes from the repository root:

* as configured, and with ``--assert=plain`` (the difference is pytest's assertion
  rewriting of the test modules, redone in every process when no rewritten ``.pyc`` is
  cached, as on a fresh clone or with ``PYTHONDONTWRITEBYTECODE`` set);
* once more counting the XLA compilations made while collecting, by the test file that
  triggered them (module-level JAX work: a count, not a time)::

    PYTHONPATH=$PWD python benchmarks/collection_cost.py

Prints user+system CPU seconds per run (children included) and the compilation counts.
"""

import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time

PLUGIN = textwrap.dedent(
    """
    import atexit, collections, os, traceback
    import jax._src.compiler as compiler

    _original = compiler.compile_or_get_cached
    _counts = collections.Counter()

    def _counted(*args, **kwargs):
        for frame in traceback.extract_stack():
            if "/tests/" in frame.filename:
                _counts[os.path.relpath(frame.filename)] += 1
                break
        else:
            _counts["(not from a test module)"] += 1
        return _original(*args, **kwargs)

    compiler.compile_or_get_cached = _counted

    @atexit.register
    def _report():
        with open(os.environ["COLLECTION_COMPILES_OUT"], "w") as out:
            for name, count in _counts.most_common():
                out.write(f"{count:5d}  {name}\\n")
    """
)


def _collect(*options, env=None):
    """CPU seconds (user + system, children) of one ``pytest --collect-only`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *options,
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, time.perf_counter() - wall


def main():
    """Print the collection cost with and without assertion rewriting, and the compile counts."""
    print(f"load average {os.getloadavg()}")
    for label, options in (("as configured", ()), ("--assert=plain", ("--assert=plain",))):
        cpu, wall = _collect(*options)
        print(f"{label:16s} {cpu:6.1f} s CPU  {wall:6.1f} s wall")
    with tempfile.TemporaryDirectory() as folder:
        with open(os.path.join(folder, "count_compiles.py"), "w") as plugin:
            plugin.write(PLUGIN)
        out = os.path.join(folder, "compiles.txt")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([folder, os.environ.get("PYTHONPATH", "")]),
            "COLLECTION_COMPILES_OUT": out,
        }
        _collect("-p", "count_compiles", env=env)
        with open(out) as counts:
            lines = counts.read().splitlines()
    print(f"XLA compilations while collecting: {sum(int(x.split()[0]) for x in lines)}")
    print("\n".join(lines[:15]))


if __name__ == "__main__":
    main()
