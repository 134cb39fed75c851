"""A pytest plugin: per-test CPU time (all threads of the test process) beside wall time.

Under a shared machine's load (15-30 on 2 cores) a test's wall time stretches 5-7x while
its CPU time moves little, so before/after comparisons of a test's cost use this plugin::

    CPUDUR_OUT=cpu.txt PYTHONPATH=$PWD/benchmarks python -m pytest tests/x.py -p cpu_durations

Each line: CPU seconds, wall seconds, phase (setup/call/teardown), test id; the slowest
first, phases under 0.3 s CPU left out, then the totals. Without ``CPUDUR_OUT`` the table
is printed. Work in other processes (Ray workers, subprocesses) is not counted.
With ``CPUDUR_ALL=rows.tsv`` every phase of every test is appended, as it ends, as one tab-separated
line (test id, phase, CPU s, wall s, xdist worker, start as Unix time; under xdist each
worker appends its own lines), which
``benchmarks/suite_files.py`` sums per test file.
"""

import os
import time

import pytest

_ROWS = []


def _timed(phase):
    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        cpu, wall, start = time.process_time(), time.perf_counter(), time.time()
        yield
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        _ROWS.append((item.nodeid, phase, cpu, wall, start))
        every = os.environ.get("CPUDUR_ALL")
        if every:  # written as the run goes: a stopped run keeps what it measured
            worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
            with open(every, "a") as f:
                f.write(f"{item.nodeid}\t{phase}\t{cpu:.4f}\t{wall:.4f}\t{worker}\t{start:.3f}\n")

    return hook


pytest_runtest_setup = _timed("setup")
pytest_runtest_call = _timed("call")
pytest_runtest_teardown = _timed("teardown")


def pytest_sessionfinish(session):
    """Write (or print) the table of CPU and wall durations."""
    rows = sorted(_ROWS, key=lambda row: -row[2])
    lines = [f"{c:8.2f} cpu {w:8.2f} wall {p:8s} {n}" for n, p, c, w, _ in rows if c > 0.3]
    cpu, wall = sum(row[2] for row in rows), sum(row[3] for row in rows)
    lines.append(f"TOTAL cpu {cpu:.1f} wall {wall:.1f} process_time {time.process_time():.1f}")
    out = os.environ.get("CPUDUR_OUT")
    if out:
        with open(out, "a") as f:
            f.write("\n".join(lines) + "\n")
    else:
        print("\n" + "\n".join(lines))
