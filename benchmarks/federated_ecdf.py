"""White-box audits of BMR's federated ECDF (issue 33 item 2): verdicts, certified bounds, cost.

Runs ``dpaudit.audit`` on the shipped specs' pairs (the exact worst move, record 0 of
party 0) for ``bmr-federated-ecdf`` (claimed epsilon 1, true epsilon 1) and
``faulty/bmr-federated-ecdf-aggregate-uncounted`` (claimed 1, true 2), side by side in one
process, and prints the verdict, the certified lower bound, its distance to the true
epsilon, the process CPU time beside the wall time, and the load average before and after.
Run ``python benchmarks/federated_ecdf.py [--samples 100]``.
"""

from __future__ import annotations

import argparse
import os
import time

import dpaudit
import mechanisms  # noqa: F401  (fills the catalogue)
from mechanisms.ecdf.federated import example_pair

CASES = (
    ("bmr-federated-ecdf", 1.0),
    ("faulty/bmr-federated-ecdf-aggregate-uncounted", 2.0),
    ("faulty/bmr-federated-ecdf-noise-split", 2.0),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=100)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    print("| mechanism | verdict | certified lower | true epsilon | rel. gap | CPU s | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name, true_epsilon in CASES:
        mech = dpaudit.build(name)
        d, d_prime = example_pair(name)
        cpu, wall = time.process_time(), time.perf_counter()
        result = dpaudit.audit(mech, d, d_prime, samples=args.samples, seed=0, progress=False)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        gap = abs(result.epsilon_lower - true_epsilon) / true_epsilon
        print(
            f"| `{name}` | {result.verdict} | {result.epsilon_lower:.6f} | {true_epsilon:g} | "
            f"{gap:.1e} | {cpu:.1f} | {wall:.1f} |"
        )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
