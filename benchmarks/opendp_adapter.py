"""OpenDP through dpaudit.adapters.from_opendp: the cost of a release, and the ten shipped audits.

Part 1 measures, side by side in one process, the CPU per release of a scalar
Laplace drawn three ways: one OpenDP call per release, one call of
``make_composition([m] * 1000)`` per 1000 releases (the adapter's batching), and the
vector-valued twin (``make_laplace`` on a ``VectorDomain``, which the adapter cannot
build from a measurement). Part 2 runs the ten audits of
``audits/libraries/opendp_audits.py`` at their shipped budgets and reports wall and CPU
time with the load average. Run: ``python benchmarks/opendp_adapter.py``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]


def _cpu_per_release(draw, releases: int) -> float:
    start = time.process_time()
    draw()
    return 1e6 * (time.process_time() - start) / releases


def release_costs(n: int = 5000) -> dict:
    """CPU microseconds per release of a scalar Laplace, three ways (one process, one run)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    scalar = dp.m.make_laplace(
        dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), 1.0
    )
    batch = dp.c.make_composition([scalar] * 1000)
    vector = dp.m.make_laplace(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float), 1.0
    )
    return {
        "per call": _cpu_per_release(lambda: [scalar(0.0) for _ in range(n)], n),
        "composition of 1000": _cpu_per_release(lambda: [batch(0.0) for _ in range(n // 1000)], n),
        "vector twin": _cpu_per_release(lambda: vector([0.0] * n), n),
    }


def ten_audits() -> list[tuple[str, str, str, float, float]]:
    """(name, verdict, expected, wall s, CPU s) of each shipped OpenDP audit."""
    path = _ROOT / "audits" / "libraries" / "opendp_audits.py"
    spec = importlib.util.spec_from_file_location("opendp_audits", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["opendp_audits"] = module
    spec.loader.exec_module(module)
    rows = []
    for audit in module.AUDITS:
        t0, c0 = time.perf_counter(), time.process_time()
        res = module.run(audit)
        rows.append(
            (audit.name, res.verdict, audit.expected, time.perf_counter() - t0,
             time.process_time() - c0)
        )  # fmt: skip
    return rows


def main() -> None:
    """Print both parts, with the load average before and after."""
    print(f"load average before: {os.getloadavg()}")
    for how, micro in release_costs().items():
        print(f"{how:22s} {micro:7.1f} CPU microseconds per release")
    rows = ten_audits()
    for name, verdict, expected, wall, cpu in rows:
        print(f"{name:28s} {verdict:12s} (expected {expected:12s}) {wall:6.1f} s, CPU {cpu:5.1f} s")
    print(
        f"ten audits: wall {sum(r[3] for r in rows):.1f} s, CPU {sum(r[4] for r in rows):.1f} s; "
        f"{sum(r[1] != r[2] for r in rows)} unexpected"
    )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
