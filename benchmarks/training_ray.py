"""Cost per training run, serial against Ray fan-out (Opacus 1.6 CPU, audits/training/opacus_dpsgd.py).

The Opacus Poisson target (22 steps, batch 2 of 20) audited with ``--runs`` runs serially,
then with ``vectorize=RayExecutor()`` on ``--workers`` local Ray workers; prints wall and
CPU (this process) per run, the load average, and whether the two bounds are identical.

Usage: ``python benchmarks/training_ray.py [--runs 40] [--workers 2]``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "audits" / "training"))

import opacus_dpsgd

from dpaudit.runtime import RayExecutor, connect_ray
from dpaudit.training import GradientCanary, training_audit


def timed(target, canary, runs, executor):
    """``(result, wall seconds, this process's CPU seconds)`` of one audit."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = training_audit(
        target.train, target.dataset, target.profile, canary, runs=runs, vectorize=executor
    )
    return result, time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    target = opacus_dpsgd.target(variant="poisson")
    canary = GradientCanary(dim=target.dim, coordinate=0, norm=1000.0, transform=target.llr)
    timed(target, canary, 8, False)  # imports and first-call costs out of the way
    serial, wall, cpu = timed(target, canary, args.runs, False)
    print(f"load {os.getloadavg()[0]:.1f}: serial {wall / args.runs * 1e3:.0f} ms wall, "
          f"{cpu / args.runs * 1e3:.0f} ms CPU per run")  # fmt: skip
    connect_ray(workers=args.workers)
    fanned, wall, cpu = timed(target, canary, args.runs, RayExecutor())
    print(f"load {os.getloadavg()[0]:.1f}: Ray, {args.workers} workers: "
          f"{wall / args.runs * 1e3:.0f} ms wall per run (driver CPU {cpu:.1f} s; the "
          "workers' first runs import torch and Opacus)")  # fmt: skip
    print("identical to serial:", fanned.bound == serial.bound)


if __name__ == "__main__":
    main()
