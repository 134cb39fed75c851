"""Peak memory and throughput of the 64-leaf BMR ECDF white-box audit (density route).

Runs ``dpaudit.audit`` on ``bmr_ecdf_mechanism(n_points=64)`` in a fresh subprocess
(so the peak resident set size is the audit's own, JAX runtime and compilations
included) and prints samples, wall and CPU time, releases per second (both directions,
compilation included) and the peak RSS against the stated 2 GB bound, plus the steady
``AncestorLaplace.log_prob`` throughput of one compiled batch.

Usage: ``PYTHONPATH=. python benchmarks/ecdf_memory.py [samples ...]`` (default 512).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOUND_BYTES = 2 * 10**9  # the stated bound (docs/memory.md)

_CHILD = textwrap.dedent(
    """
    import resource, sys, time
    import jax, jax.numpy as jnp
    import numpy as np
    import dpaudit
    from mechanisms.ecdf.tree import bmr_ecdf_mechanism
    from dpaudit.model.noise.linear_laplace import AncestorLaplace
    samples = int(sys.argv[1])
    mech = bmr_ecdf_mechanism(epsilon=1.0, n=100, n_points=64)
    data = np.random.default_rng(0).uniform(size=100)
    data_prime = data.copy()
    data_prime[0] = 0.999
    wall, cpu = time.perf_counter(), time.process_time()
    result = dpaudit.audit(mech, data, data_prime, samples=samples, seed=0, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    d = AncestorLaplace(jnp.zeros(64), 6, 7.0, 100.0)
    x = d.sample(jax.random.PRNGKey(0), (1024,))
    f = jax.jit(d.log_prob)
    f(x).block_until_ready()
    t = time.perf_counter()
    for _ in range(3):
        f(x).block_until_ready()
    steady = 3 * 1024 / (time.perf_counter() - t)
    print(result.verdict, wall, cpu, peak, steady)
    """
)


def measure(samples: int) -> str:
    """One audit in a subprocess; a line of figures."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(samples)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    verdict, wall, cpu, peak, steady = out.stdout.split()
    wall, cpu, peak, steady = float(wall), float(cpu), int(peak), float(steady)
    return (
        f"samples={samples} verdict={verdict} wall={wall:.1f}s cpu={cpu:.1f}s "
        f"releases/s={2 * samples / wall:.1f} (compilation included) "
        f"peak_rss={peak / 1e9:.2f}GB (bound {BOUND_BYTES / 1e9:.0f}GB) "
        f"log_prob steady={steady:.0f} releases/s"
    )


def main() -> None:
    """Measure at the sample counts given on the command line."""
    counts = [int(a) for a in sys.argv[1:]] or [512]
    print("load average before:", os.getloadavg())
    for samples in counts:
        print(measure(samples), "| load average:", os.getloadavg(), flush=True)


if __name__ == "__main__":
    main()
