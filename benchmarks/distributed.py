"""Sharded black-box certification on local Ray workers, and a per-core cost model.

Measured side by side in one run (the machine is shared: load average printed with
every figure; ratios are what to read, absolute seconds move with the load):

1. **Certification, 1 vs 2 workers.** ``blackbox_audit`` of a scalar Laplace sampler
   (a count claiming epsilon = 0.5, really epsilon = 1) with ``B`` certification releases
   per dataset: the plain single-process engine (``executor=None``), Ray with 1 CPU, Ray
   with 2 CPUs (4 shards per dataset). Only the certification stage is timed
   (``result.timings.certification``; the selection stage is identical in all three).
   Wall seconds, CPU seconds of the driver and of the Ray worker processes, and the check
   that the three results are identical.
2. **Cost model per core** (single process, one core busy): releases per second of
   certification for a scalar sampler and for a 100-point curve sampler (a Karhunen-Loeve
   Laplace process on 100 grid points, scored by the fitted logistic statistic), and of the
   white-box engine on an ICLP mean release (closed form, 64 coefficients). Projection: the
   cores needed to certify a 20 % violation of delta = 1e-6 on the curve sampler in
   10 minutes, from the releases per dataset that need (``--needed``, default 8e8 per
   dataset as measured for the issue).

3. **Selection fanned out per candidate pair (session 7).** ``blackbox_audit`` of a noisy
   6-bin histogram with ``pairs=AutoPairs(kind="histogram")`` under replace-one: 30
   candidate pairs, each with ``--select`` selection releases per dataset and its own
   logistic statistic. Serial (``executor=None``) vs a local Ray instance with 2 CPUs (one
   task per pair; certification kept small so that selection dominates). Wall seconds of
   the selection stage and of the whole audit, CPU seconds of the driver and of the Ray
   workers, load average before and after each run, and the check that the results are
   identical. ``--part selection`` runs this part alone (it writes
   ``benchmarks/results/distributed_selection.json``).

Run ``nice -n 10 python benchmarks/distributed.py [--budget 1e8] [--part all|certification|selection]``;
writes ``benchmarks/results/distributed.json`` and prints the markdown of ``BENCHMARKS.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import psutil

import dpaudit
from dpaudit.blackbox import blackbox_audit

RESULTS = Path(__file__).resolve().parent / "results" / "distributed.json"
D, D_PRIME = jnp.zeros(10), jnp.zeros(10).at[0].set(1.0)
GRID = 100
_LAM = np.arange(1, GRID + 1.0) ** -2.0
_T = np.linspace(0.0, 1.0, GRID)
_PHI = np.sqrt(2) * np.cos(np.pi * np.outer(np.arange(1, GRID + 1), _T))  # (K, T)


def scalar_sampler(data, n, key):
    """A Laplace count: sum(data) + Lap(1) (epsilon = 1 for a change of one count)."""
    return jnp.sum(data) + jax.random.laplace(key, (n, 1))


def curve_sampler(data, n, key):
    """A 100-point curve: sum(data) times a bump plus a Laplace Karhunen-Loeve process."""
    z = jax.random.laplace(key, (n, GRID)) * jnp.sqrt(jnp.asarray(_LAM))
    return jnp.sum(data) * jnp.sin(jnp.pi * jnp.asarray(_T)) + z @ jnp.asarray(_PHI)


def _worker_cpu() -> float:
    """CPU seconds of this process's Ray workers (descendants only: other users' Ray runs on
    the shared machine are not counted)."""
    total = 0.0
    for proc in psutil.Process().children(recursive=True):
        try:
            cmd = " ".join(proc.cmdline() or [])
        except psutil.Error:
            continue
        if "default_worker.py" in cmd or cmd.startswith("ray::"):
            try:
                t = proc.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
    return total


def _certify(sampler, budget, executor, select=10_000):
    cpu0, w0 = time.process_time(), _worker_cpu()
    res = blackbox_audit(
        sampler,
        D,
        D_PRIME,
        dpaudit.Claim(epsilon=0.5),
        samples=budget,
        select_samples=select,
        seed=1,
        progress=False,
        executor=executor,
    )
    return res, {
        "wall": res.timings.certification,
        "driver_cpu": time.process_time() - cpu0,
        "worker_cpu": _worker_cpu() - w0,
        "load": os.getloadavg()[0],
    }


def _key(res):
    return (res.epsilon_lower, res.event.counts.P, res.event.counts.Q)


def scaling(budget: int) -> dict:
    """Single process vs Ray with 1 CPU vs Ray with 2 CPUs, one budget."""
    import ray

    from dpaudit.runtime import RayExecutor, connect_ray

    _certify(scalar_sampler, 100_000, None)  # compile
    base, rows = None, {}
    res, rows["single process"] = _certify(scalar_sampler, budget, None)
    base = _key(res)
    for cpus in (1, 2):
        connect_ray(workers=cpus)
        executor = RayExecutor(shards=4)
        _certify(scalar_sampler, 100_000, executor)  # workers start and compile
        res, rows[f"ray, {cpus} worker(s)"] = _certify(scalar_sampler, budget, executor)
        rows[f"ray, {cpus} worker(s)"]["identical"] = _key(res) == base
        ray.shutdown()
    return rows


def rate(sampler, n: int) -> dict:
    """Certification releases (both datasets) per CPU second and per wall second, here."""
    n0 = 100_000
    _certify(sampler, n0, None)  # compile
    _, small = _certify(sampler, n0, None)
    _, row = _certify(sampler, n, None)
    # the driver's CPU time includes the selection stage (the same in both runs): the
    # difference of the two runs is the CPU time of 2 (n - n0) certification releases
    cpu = row["driver_cpu"] - small["driver_cpu"]
    return {"per_cpu_second": 2 * (n - n0) / cpu, "per_wall_second": 2 * n / row["wall"]}


def whitebox_rate(n: int) -> dict:
    """White-box releases (both directions) per CPU and per wall second, ICLP mean release."""
    from dpaudit.cli.main import prepare

    spec = Path(__file__).resolve().parents[1] / "audits" / "catalogue" / "iclp-qr-mean.toml"
    (item,) = prepare([spec])
    mech, (d, dp) = item.mechanism, item.pair
    dpaudit.audit(mech, d, dp, samples=min(n, 20_000), progress=False)
    cpu0 = time.process_time()
    res = dpaudit.audit(mech, d, dp, samples=n, progress=False, exact=False)
    cpu = time.process_time() - cpu0
    return {"per_cpu_second": 2 * n / cpu, "per_wall_second": 2 * n / res.seconds}


HISTOGRAM = np.array([3, 0, 5, 1, 2, 4])


def histogram_sampler(data, n, key):
    """A noisy histogram: counts plus Laplace(2) per bin (epsilon = 1 when a count moves)."""
    return jnp.asarray(data, dtype=jnp.float64) + 2.0 * jax.random.laplace(key, (n, data.shape[0]))


def _select_run(executor, select: int) -> tuple:
    import dpaudit.blackbox.engine as engine

    choose, spent = engine.select_event, []

    def timed(*args, **kwargs):  # the choice among all arms, in the calling process
        t = time.perf_counter()
        out = choose(*args, **kwargs)
        spent.append(time.perf_counter() - t)
        return out

    load0, cpu0, w0 = os.getloadavg()[0], time.process_time(), _worker_cpu()
    t0 = time.perf_counter()
    engine.select_event = timed
    try:
        res = _auto_histogram_audit(executor, select)
    finally:
        engine.select_event = choose
    row = {
        "selection_wall": res.timings.selection,
        "choice_wall": sum(spent),
        "audit_wall": time.perf_counter() - t0,
        "driver_cpu": time.process_time() - cpu0,
        "worker_cpu": _worker_cpu() - w0,
        "load_before": load0,
        "load_after": os.getloadavg()[0],
        "pairs": res.event.selection.pairs,
    }
    return res, row


def _auto_histogram_audit(executor, select: int):
    from dpaudit.blackbox import AutoPairs

    return blackbox_audit(
        histogram_sampler,
        HISTOGRAM,
        claim=dpaudit.Claim(epsilon=0.5),
        pairs=AutoPairs(kind="histogram"),
        samples=100_000,
        select_samples=select,
        seed=2,
        progress=False,
        executor=executor,
    )


def _selection_key(res):
    event = res.event
    return (res.epsilon_lower, event.pair, event.threshold, event.counts.P, event.counts.Q)


def selection(select: int, workers: int = 2) -> dict:
    """Selection over 30 candidate pairs: serial vs one Ray task per pair on ``workers`` CPUs."""
    import ray

    from dpaudit.runtime import RayExecutor, connect_ray

    name = f"ray, {workers} workers"
    _select_run(None, select)  # compile the statistic's fit here (the same shapes)
    rows: dict = {}
    serial, rows["serial"] = _select_run(None, select)
    connect_ray(workers=workers)
    executor = RayExecutor(shards=workers)
    _select_run(executor, select)  # workers start, import JAX and compile (the same shapes)
    fanned, rows[name] = _select_run(executor, select)
    ray.shutdown()
    rows["identical"] = _selection_key(fanned) == _selection_key(serial)
    rows["selection_speedup"] = rows["serial"]["selection_wall"] / rows[name]["selection_wall"]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=float, default=1e8)
    parser.add_argument("--rate-budget", type=float, default=2e6)
    parser.add_argument("--needed", type=float, default=8e8)
    parser.add_argument("--select", type=float, default=20_000)
    parser.add_argument("--part", choices=("all", "certification", "selection"), default="all")
    args = parser.parse_args()
    if args.part in ("all", "selection"):
        out = {"load_start": os.getloadavg(), "cores": os.cpu_count()}
        out["selection"] = selection(int(args.select))
        out["load_end"] = os.getloadavg()
        path = RESULTS.with_name("distributed_selection.json")
        RESULTS.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(out, indent=2, default=float))
        print(json.dumps(out, indent=2, default=float))
        if args.part == "selection":
            return
    out = {"load_start": os.getloadavg(), "cores": os.cpu_count()}
    out["scaling"] = scaling(int(args.budget))
    n = int(args.rate_budget)
    out["per_core"] = {
        "scalar sampler": rate(scalar_sampler, n),
        "100-point curve sampler": rate(curve_sampler, n // 10),
        "white-box ICLP release": whitebox_rate(n // 10),
    }
    curve = out["per_core"]["100-point curve sampler"]["per_cpu_second"]
    out["projection"] = {
        "releases": 2 * args.needed,
        "cores_for_10_min": 2 * args.needed / (curve * 600),
    }
    out["load_end"] = os.getloadavg()
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2, default=float))
    print(json.dumps(out, indent=2, default=float))


if __name__ == "__main__":
    main()
