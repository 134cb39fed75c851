"""Per-test-file CPU and wall seconds of the default suite, from ``cpu_durations`` rows.

Run a chunk of the suite with every row written (one folder at a time on a shared machine)::

    CPUDUR_ALL=rows.tsv PYTHONPATH=$PWD/benchmarks python -m pytest tests/whitebox \\
        -n 2 --dist loadfile -p cpu_durations

then ``python benchmarks/suite_files.py rows.tsv [other.tsv]``: one line per test file (CPU
and wall seconds summed over its tests' setup, call and teardown), the heaviest first; with
two files, before and after side by side. Collection is not in these rows
(``benchmarks/collection_cost.py``).
"""

import collections
import sys


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
            nodeid, phase, cpu, wall = line.rstrip("\n").split("\t")
            row = files[nodeid.split("::")[0]]
            row[0] += float(cpu)
            row[1] += float(wall)
            row[2] += phase == "call"
    return files


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
    main(sys.argv[1:])
