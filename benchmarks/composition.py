"""Composed and subsampled accounting: dpaudit against dp_accounting, side by side.

Three workloads, each timed for both libraries in one process, interleaved, order
rotated between repeats; wall time and CPU time (process_time) are reported with the
load average before and after:

1. ``heterogeneous``: 900 Laplace components (``a ~ U[0.005, 0.05]``) and 100 Gaussian
   components (``mu ~ U[0.01, 0.05]``), discretisation 1e-4, pessimistic curves.
   dp_accounting: its best path of two, sequential ``compose`` or a balanced tree of
   ``compose`` (both with the PLD constructors included). The curves are compared at
   seven epsilons and at delta = 1e-5, 1e-6, 1e-8, with and without dpaudit's round-off
   margin (dp_accounting adds none); the CPU and wall ratios against the faster
   dp_accounting path are printed.
2. ``dpsgd``: Poisson-subsampled Gaussian, ``q = 0.01``, ``sigma = 1``, ``T = 1000``:
   dpaudit's ``subsampled_accounting`` (upper curve only, and both curves) against
   dp_accounting's ``PLDAccountant`` (``PoissonSampledDpEvent`` composed ``T`` times);
   both report ``epsilon(1e-5)``.
3. ``power``: 10 000 equal Laplace components (``a = 0.05``): dpaudit's power path
   against ``from_laplace_mechanism(...).self_compose(10000)``.

Run: ``python benchmarks/composition.py [--repeats 3]``; writes
``benchmarks/results/composition.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import statistics
import time

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as dp_pld

from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, compose_accounting
from dpaudit.accounting.subsampling import subsampled_accounting

DISCRETIZATION = 1e-4
DELTA = 1e-5


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def _heterogeneous_workload(seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.005, 0.05, 900), rng.uniform(0.01, 0.05, 100)


def _dp_plds(a, mus):
    return [
        dp_pld.from_laplace_mechanism(
            1.0, sensitivity=float(x), value_discretization_interval=DISCRETIZATION
        )
        for x in a
    ] + [
        dp_pld.from_gaussian_mechanism(
            1.0, sensitivity=float(m), value_discretization_interval=DISCRETIZATION
        )
        for m in mus
    ]


def _dp_sequential(a, mus):
    plds = _dp_plds(a, mus)
    out = plds[0]
    for p in plds[1:]:
        out = out.compose(p)
    return out


def _dp_tree(a, mus):
    plds = _dp_plds(a, mus)
    while len(plds) > 1:
        nxt = [plds[i].compose(plds[i + 1]) for i in range(0, len(plds) - 1, 2)]
        if len(plds) % 2:
            nxt.append(plds[-1])
        plds = nxt
    return plds[0]


def _ours_heterogeneous(a, mus):
    parts = [LaplaceComponent(float(x)) for x in a] + [GaussianComponent(float(m)) for m in mus]
    return compose_accounting(parts, discretization=DISCRETIZATION, lower=False)


def _dp_dpsgd(q, sigma, steps):
    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=DISCRETIZATION)
    event = dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma))
    accountant.compose(event, steps)
    return accountant


def _run(cases, repeats):
    """``cases``: name -> thunk. Returns name -> {wall, cpu} medians and the last values."""
    times = {name: {"wall": [], "cpu": []} for name in cases}
    values = {}
    names = list(cases)
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            value, wall, cpu = _timed(cases[name])
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
            values[name] = value
    medians = {
        n: {k: statistics.median(v) for k, v in t.items()} | {"runs": t} for n, t in times.items()
    }
    return medians, values


HET_EPSILONS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
HET_DELTAS = (1e-5, 1e-6, 1e-8)


def heterogeneous(repeats, sequential=True):
    a, mus = _heterogeneous_workload()
    cases = {
        "dpaudit": lambda: _ours_heterogeneous(a, mus),
        "dp_accounting tree": lambda: _dp_tree(a, mus),
    }
    if sequential:
        cases["dp_accounting sequential"] = lambda: _dp_sequential(a, mus)
    medians, values = _run(cases, repeats)
    eps = np.array(HET_EPSILONS)
    ours = values["dpaudit"]
    out = {"times": medians, "epsilon": {}, "delta": {}, "epsilons": list(HET_EPSILONS)}
    out["epsilon"]["dpaudit"] = {str(d): ours.epsilon_upper(d) for d in HET_DELTAS}
    out["delta"]["dpaudit"] = ours.delta_upper(eps).tolist()
    # like for like with dp_accounting, which adds no round-off allowance
    bare = dataclasses.replace(ours.upper_pld, margin=0.0)
    out["epsilon"]["dpaudit without margin"] = {str(d): bare.epsilon(d) for d in HET_DELTAS}
    out["delta"]["dpaudit without margin"] = bare.delta(eps).tolist()
    out["margin"] = ours.upper_pld.margin
    for name in [n for n in cases if n.startswith("dp_accounting")]:
        out["epsilon"][name] = {str(d): values[name].get_epsilon_for_delta(d) for d in HET_DELTAS}
        out["delta"][name] = [values[name].get_delta_for_epsilon(e) for e in eps]
    out["epsilon(1e-5)"] = {n: e[str(DELTA)] for n, e in out["epsilon"].items()}
    best = min((n for n in cases if n != "dpaudit"), key=lambda n: medians[n]["cpu"])
    out["ratio"] = {
        "against": best,
        "cpu": medians[best]["cpu"] / medians["dpaudit"]["cpu"],
        "wall": medians[best]["wall"] / medians["dpaudit"]["wall"],
    }
    return out


def dpsgd(repeats, q=0.01, sigma=1.0, steps=1000):
    base = GaussianComponent(1.0 / sigma)
    medians, values = _run(
        {
            "dpaudit upper": lambda: subsampled_accounting(base, q, steps, lower=False),
            "dpaudit upper+lower": lambda: subsampled_accounting(base, q, steps),
            "dp_accounting PLDAccountant": lambda: _dp_dpsgd(q, sigma, steps),
        },
        repeats,
    )
    both = values["dpaudit upper+lower"]
    return {
        "times": medians,
        "epsilon(1e-5)": {
            "dpaudit upper": values["dpaudit upper"].epsilon_upper(DELTA),
            "dpaudit lower": both.epsilon_lower(DELTA),
            "dp_accounting PLDAccountant": values["dp_accounting PLDAccountant"].get_epsilon(DELTA),
        },
    }


def power(repeats, a=0.05, count=10_000):
    medians, values = _run(
        {
            "dpaudit power": lambda: compose_accounting(
                [LaplaceComponent(a)], [count], discretization=DISCRETIZATION, lower=False
            ),
            "dp_accounting self_compose": lambda: dp_pld.from_laplace_mechanism(
                1.0, sensitivity=a, value_discretization_interval=DISCRETIZATION
            ).self_compose(count),
        },
        repeats,
    )
    return {
        "times": medians,
        "epsilon(1e-5)": {
            "dpaudit power": values["dpaudit power"].epsilon_upper(DELTA),
            "dp_accounting self_compose": values[
                "dp_accounting self_compose"
            ].get_epsilon_for_delta(DELTA),
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["heterogeneous", "dpsgd", "power"], default=None)
    parser.add_argument(
        "--no-sequential", action="store_true", help="skip dp_accounting's sequential path"
    )
    args = parser.parse_args()
    report = {"load_before": os.getloadavg()}
    workloads = (
        ("heterogeneous", lambda r: heterogeneous(r, sequential=not args.no_sequential)),
        ("dpsgd", dpsgd),
        ("power", power),
    )
    for name, fn in workloads:
        if args.only in (None, name):
            report[name] = fn(args.repeats)
            report[name]["load_after"] = os.getloadavg()
            _print(name, report[name])
    report["load_after"] = os.getloadavg()
    out = pathlib.Path(__file__).parent / "results" / "composition.json"
    out.write_text(json.dumps(report, indent=1, default=float))
    print("load average before", report["load_before"], "after", report["load_after"])


def _print(name, result):
    print(f"== {name} (load after: {result['load_after']})")
    times = result["times"]
    ours = min((n for n in times if n.startswith("dpaudit")), key=lambda n: times[n]["cpu"])
    for case, t in times.items():
        ratio = ""
        if not case.startswith("dpaudit"):
            cpu, wall = t["cpu"] / times[ours]["cpu"], t["wall"] / times[ours]["wall"]
            ratio = f"  = {cpu:.1f}x cpu, {wall:.1f}x wall of {ours!r}"
        print(f"  {case:32s} wall {t['wall']:.4f} s  cpu {t['cpu']:.4f} s{ratio}")
    for case, e in result["epsilon(1e-5)"].items():
        print(f"  epsilon(1e-5) {case:32s} {e:.8f}")
    for case, e in result.get("epsilon", {}).items():
        print(f"  epsilon(1e-6, 1e-8) {case:28s} {e['1e-06']:.8f} {e['1e-08']:.8f}")
    for case, d in result.get("delta", {}).items():
        print(f"  delta{tuple(result['epsilons'])} {case:28s} {[f'{x:.10e}' for x in d]}")


if __name__ == "__main__":
    main()
