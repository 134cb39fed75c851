"""Resident memory of building every spec of a suite in one process (what ``dpaudit audit``
holds before its first audit), with and without releasing compiled programs between builds.

Usage::

    PYTHONPATH=$PWD python benchmarks/suite_build_memory.py --budget-mb 0      # no release
    PYTHONPATH=$PWD python benchmarks/suite_build_memory.py --budget-mb 1200   # as the CLI
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import time

from dpaudit.cli.main import prepare
from dpaudit.core.memory import release_memory, resident_bytes
from dpaudit.io.spec import find_specs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="audits/")
    parser.add_argument("--budget-mb", type=int, default=1200, help="0: never release")
    args = parser.parse_args()
    load, t0, c0 = os.getloadavg(), time.perf_counter(), time.process_time()
    print(f"after import: {resident_bytes() >> 20} MB", flush=True)
    prepared, drops = [], 0
    for path in find_specs(args.target):
        prepared += prepare([path])
        if args.budget_mb:
            drops += release_memory(args.budget_mb << 20)
    print(
        f"built {len(prepared)} specs: {resident_bytes() >> 20} MB, programs dropped {drops} "
        f"times, {time.perf_counter() - t0:.0f} s wall, {time.process_time() - c0:.0f} s CPU"
    )
    gc.collect()
    release_memory(1)
    print(f"built specs kept, compiled programs dropped: {resident_bytes() >> 20} MB")
    print(f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10} MB")
    print(f"load average before {load}, after {os.getloadavg()}")


if __name__ == "__main__":
    main()
