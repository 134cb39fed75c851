"""Per-call samplers: the plain loop against a process pool, and selection's share of wall time.

Part 1 (``per_call``): a library-style primitive ``f(data, seed) -> value`` that
costs tens of microseconds per call (a fresh numpy Generator and a Laplace draw,
as diffprivlib's ``randomise`` does per call) is wrapped with
:func:`dpaudit.blackbox.per_call` and drawn ``--calls`` times per dataset, with
``processes=1`` (a plain loop in this process) and ``processes=2`` (a spawned
pool; the pool start-up is timed separately). Wall and CPU times of this process
and its children, side by side in one run.

Part 2 (``selection share``): a full :func:`dpaudit.blackbox_audit` of a numpy
Laplace count (batch sampler, default statistic and features) at ``--samples``
certification releases (default 10^7, selection 10^6): the wall time of
selection (drawing the selection set, fitting the features and the classifier,
choosing the event) against certification (drawing and counting).

The audit runs twice in one process: cold (the first audit pays JAX's
compilations, which land in selection) and warm.

Run ``python benchmarks/blackbox_percall.py`` (a few minutes) or ``--quick``.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import time

import numpy as np

import dpaudit
from dpaudit.blackbox import blackbox_audit, numpy_generator, per_call


def library_laplace(data, seed):
    """One release per call, seeded per call (the cost profile of a library primitive)."""
    rng = np.random.default_rng(seed)
    return float(data) + rng.laplace(scale=1.0)


def numpy_laplace_count(data, n, key):
    return float(np.sum(data)) + numpy_generator(key).laplace(scale=1.0, size=n)


def _cpu():
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def _time_draws(sampler, calls: int, key) -> tuple[float, float, float]:
    cpu0, kids0 = _cpu()
    t0 = time.perf_counter()
    out = sampler(0.0, calls, key)
    wall = time.perf_counter() - t0
    cpu1, kids1 = _cpu()
    assert out.shape == (calls,)
    return wall, cpu1 - cpu0, kids1 - kids0


def per_call_speedup(calls: int) -> None:
    import jax

    key = jax.random.key(0)
    plain = per_call(library_laplace, seed="int")
    pooled = per_call(library_laplace, seed="int", processes=2)
    t0 = time.perf_counter()
    pooled(0.0, 8, key)  # start the pool (spawned workers import dpaudit)
    startup = time.perf_counter() - t0
    w1, c1, _ = _time_draws(plain, calls, key)
    kids0 = _cpu()[1]
    w2, c2, _ = _time_draws(pooled, calls, key)
    del pooled  # shuts the pool down (its finaliser joins the workers) so their CPU is counted
    gc.collect()
    k2 = _cpu()[1] - kids0
    print(
        f"per-call, {calls} calls: plain loop {w1:.2f} s wall ({c1:.2f} s CPU, "
        f"{1e6 * w1 / calls:.1f} us/call); pool of 2: {w2:.2f} s wall ({c2:.2f} s CPU here, "
        f"{k2:.2f} s in workers incl. their start-up); speed-up {w1 / w2:.2f}x; pool start-up {startup:.2f} s"
    )


def selection_share(samples: int, label: str) -> None:
    cpu0, _ = _cpu()
    res = blackbox_audit(
        numpy_laplace_count,
        np.zeros(10),
        np.eye(10)[0],
        dpaudit.Claim(0.5),
        samples=samples,
        seed=0,
        progress=False,
    )
    cpu = _cpu()[0] - cpu0
    sel, cert = res.timings.selection, res.timings.certification
    print(
        f"{label} audit at {samples} certification releases (selection {res.samples_select}): "
        f"selection {sel:.1f} s, certification {cert:.1f} s, selection share "
        f"{100 * sel / (sel + cert):.0f} % (CPU {cpu:.1f} s, wall {res.seconds:.1f} s); "
        f"verdict {res.verdict}, epsilon >= {res.epsilon_lower:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--samples", type=int, default=10_000_000)
    args = parser.parse_args()
    calls, samples = (20_000, 1_000_000) if args.quick else (args.calls, args.samples)
    print(f"load average before: {os.getloadavg()}")
    per_call_speedup(calls)
    # cold: the first audit of the process pays JAX's compilations (about 30 programs, in
    # selection); warm: the same audit again, as in a CI job auditing several mechanisms
    selection_share(samples, "cold")
    selection_share(samples, "warm")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
