"""The default suite's files with and without one compilation cache per test run.

Each group of test files runs in its own pytest process, one after the other (two groups: the
two xdist workers of ``make test``, the second reading what the first wrote: the best case of
two concurrent workers), first with ``DPAUDIT_TEST_CACHE=0``, then with one empty run cache
(tests/conftest.py). Per process: its CPU seconds and its waited-for children's (the
``dpaudit`` subprocesses), the XLA compilations, their seconds, the cache hits
(benchmarks/compile_tally.py)::

    PYTHONPATH=$PWD python benchmarks/suite_cache.py "tests/a.py tests/b.py" "tests/c.py" ...

Prints one line per (setting, group) and the totals; each setting's exit codes too.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(groups, cache_on):
    """Run the groups in turn; return the tally lines and exit codes."""
    out = pathlib.Path(tempfile.mkdtemp()) / "tally.tsv"
    folder = tempfile.mkdtemp(prefix="suite-cache-")
    env = {**os.environ, "TALLY_OUT": str(out), "PYTHONPATH": f"{ROOT}/benchmarks"}
    env.pop("DPAUDIT_TEST_CACHE_DIR", None)
    env["DPAUDIT_TEST_CACHE"] = "1" if cache_on else "0"
    if cache_on:
        env["DPAUDIT_TEST_CACHE_DIR"] = folder  # shared by the groups, as by xdist's workers
    codes = []
    for group in groups:
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                   "-p", "compile_tally", *group.split()]  # fmt: skip
        codes.append(subprocess.run(command, cwd=ROOT, env=env, capture_output=True).returncode)
    shutil.rmtree(folder, ignore_errors=True)
    return out.read_text().splitlines(), codes


def main(groups):
    """Print per-process and total CPU, compilations and hits for cache off and on."""
    for cache_on in (False, True):
        lines, codes = run(groups, cache_on)
        totals = [0.0, 0.0, 0, 0.0, 0]
        for line in lines:
            cpu, children, n, secs, hits, _, files = line.split("\t")
            row = [float(cpu), float(children), int(n), float(secs), int(hits)]
            totals = [a + b for a, b in zip(totals, row, strict=True)]
            print(f"cache {'on ' if cache_on else 'off'} cpu {row[0]:7.1f} children {row[1]:6.1f} "
                  f"compilations {row[2]:5d} ({row[3]:6.1f} s) hits {row[4]:5d}  {files}")  # fmt: skip
        print(f"cache {'on ' if cache_on else 'off'} TOTAL cpu {totals[0] + totals[1]:.1f} "
              f"compilations {totals[2]} ({totals[3]:.1f} s) hits {totals[4]} exit {codes}")  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])
