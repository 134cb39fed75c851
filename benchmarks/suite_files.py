"""Per-test-file CPU and wall seconds of the default suite, from ``cpu_durations`` rows.

Run a chunk of the suite with every row written (one folder at a time on a shared machine)::

    CPUDUR_ALL=rows.tsv PYTHONPATH=$PWD/benchmarks python -m pytest tests/whitebox \\
        -n 2 --dist loadfile -p cpu_durations

then ``python benchmarks/suite_files.py rows.tsv [other.tsv]``: one line per test file (CPU
and wall seconds summed over its tests' setup, call and teardown), the heaviest first; with
two files, before and after side by side. Collection is not in these rows
(``benchmarks/collection_cost.py``). ``--schedule rows.tsv`` replays the files' CPU seconds on
two workers taking one file at a time, in xdist's most-tests-first order and in
tests/conftest.py's heaviest-first order (HEAVY_FILES, then collection order), and prints
each order's finish time (the busier worker) against the ideal (total / 2).
``--timeline rows.tsv`` prints what each worker of an xdist run ran and when (rows with the
worker and start-time columns), and when each worker's last test ended.
"""

import ast
import collections
import heapq
import math
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def per_file(path):
    """Sum CPU and wall seconds per test file.

    Args:
        path: a tab-separated file of (test id, phase, CPU s, wall s) lines.

    Returns:
        dict from test file to [CPU s, wall s, number of tests].
    """
    files = collections.defaultdict(lambda: [0.0, 0.0, 0])
    with open(path) as f:
        for line in f:
            nodeid, phase, cpu, wall = line.rstrip("\n").split("\t")[:4]
            row = files[nodeid.split("::")[0]]
            row[0] += float(cpu)
            row[1] += float(wall)
            row[2] += phase == "call"
    return files


def heavy_files() -> tuple[str, ...]:
    """HEAVY_FILES of tests/conftest.py, read without importing it."""
    for node in ast.parse((ROOT / "tests" / "conftest.py").read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "HEAVY_FILES":
            return ast.literal_eval(node.value)
    raise ValueError("tests/conftest.py defines no HEAVY_FILES.")


def makespan(order, files, workers=2) -> float:
    """Finish time of the busier worker when each free worker takes the next file.

    Args:
        order: test files in the order they are handed out.
        files: per_file's table (CPU seconds first).
        workers: how many workers.

    Returns:
        Seconds until the last worker finishes.
    """
    free = [0.0] * workers
    for name in order:
        heapq.heapreplace(free, free[0] + files[name][0])
    return max(free)


def schedule(path):
    """Print the finish times of xdist's order and the heaviest-first order."""
    files = per_file(path)
    collected = sorted(files)  # pytest collects a folder's files in name order
    by_count = sorted(collected, key=lambda n: -files[n][2])
    rank = {name: i for i, name in enumerate(heavy_files())}
    heavy_first = sorted(collected, key=lambda n: rank.get(n, len(rank)))
    ideal = sum(row[0] for row in files.values()) / 2
    for label, order in (("most tests first", by_count), ("HEAVY_FILES first", heavy_first)):
        print(f"{label:18s} {makespan(order, files):7.1f} s (ideal {ideal:.1f} s)")


def timeline(path):
    """Print each xdist worker's files in the order it ran them, and when each worker stopped.

    Needs the worker and start-time columns of ``cpu_durations`` rows. The gap between the
    workers' last ends is the time one worker sat idle while the other finished its files.
    """
    spans = collections.defaultdict(lambda: [math.inf, 0.0, 0.0])  # (worker, file) -> span
    with open(path) as f:
        for line in f:
            nodeid, _, cpu, wall, worker, start = line.rstrip("\n").split("\t")
            span = spans[worker, nodeid.split("::")[0]]
            span[0] = min(span[0], float(start))
            span[1] = max(span[1], float(start) + float(wall))
            span[2] += float(cpu)
    origin = min(span[0] for span in spans.values())
    ends = {}
    for (worker, name), (first, last, cpu) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        print(f"{worker} {first - origin:8.1f} {last - origin:8.1f} wall {cpu:7.1f} cpu {name}")
        ends[worker] = max(ends.get(worker, 0.0), last - origin)
    for worker, end in sorted(ends.items()):
        print(f"{worker} last test ends at {end:.1f} s after the first test started")


def main(argv):
    """Print the per-file table of one run, or of two runs side by side."""
    runs = [per_file(path) for path in argv]
    names = sorted(set().union(*runs), key=lambda n: -max(r.get(n, [0])[0] for r in runs))
    for name in names:
        cells = []
        for run in runs:
            cpu, wall, tests = run.get(name, [0.0, 0.0, 0])
            cells.append(f"{cpu:7.1f} cpu {wall:7.1f} wall {tests:4d}")
        print(" | ".join(cells), name)
    for run in runs:
        print(
            f"TOTAL cpu {sum(r[0] for r in run.values()):.1f} "
            f"wall {sum(r[1] for r in run.values()):.1f} tests {sum(r[2] for r in run.values())}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--schedule"]:
        schedule(sys.argv[2])
    elif sys.argv[1:2] == ["--timeline"]:
        timeline(sys.argv[2])
    else:
        main(sys.argv[1:])
