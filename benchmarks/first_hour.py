"""What a new user waits for: `dpaudit --help`, `import dpaudit`, and audits with a cold and a
warm JAX compilation cache, measured side by side in one run (results in BENCHMARKS.md,
section "The user's first hour").

Usage: python benchmarks/first_hour.py [-k EXPR]  (default: a subset of nine fast audits;
`-k ''` is the whole suite, which takes many minutes).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUBSET = "laplace-mean or gaussian-mean or iclp-qr-mean or bernstein-mean or frl-mean"


def _timed(args: list[str], repeat: int = 1) -> tuple[float, float]:
    """Best wall time and the CPU time (user + sys of the children) of ``repeat`` runs."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    best, cpu = float("inf"), 0.0
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, check=True, capture_output=True)
        best = min(best, time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return best, cpu


def main() -> None:
    """Print the timings and the load average."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", default=SUBSET, help="which audits (dpaudit -k); '' for all")
    k = parser.parse_args().k
    print(f"load average before: {os.getloadavg()}")
    for label, args in [
        ("import jax", ["-c", "import jax"]),
        ("import dpaudit", ["-c", "import dpaudit"]),
        ("import dpaudit; dpaudit.audit", ["-c", "import dpaudit; dpaudit.audit"]),
        ("dpaudit --help", ["-m", "dpaudit.cli.main", "--help"]),
    ]:
        wall, cpu = _timed(args, repeat=3)
        print(f"{label:32s} best wall {wall:6.2f} s  cpu {cpu:6.2f} s")
    audit = ["-m", "dpaudit.cli.main", "audit", str(ROOT / "audits"), "-q"] + (
        ["-k", k] if k else []
    )
    with tempfile.TemporaryDirectory() as cache:
        for label in ("cold cache", "warm cache"):
            wall, cpu = _timed([*audit, "--cache-dir", cache])
            print(f"audits ({label}){'':18s} wall {wall:6.2f} s  cpu {cpu:6.2f} s")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
