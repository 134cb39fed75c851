"""Issue 29 item 4: every accounting ratio against dp_accounting, side by side in one run.

Workloads (discretisation 1e-4, pessimistic curves on both sides, CPU time by
``time.process_time`` and wall time, medians over ``--repeats``, the methods of one workload
interleaved with their order rotated; load average before and after each workload):

1. ``iclp K``: a calibrated ICLP (``lambda_j = j^-2``, ``h_j = j^-2.5``, ``sum_j a_j = 1``:
   ``benchmarks/iclp_accounting.py``) at K = 100, 1000, 10000 heterogeneous Laplace
   components. dpaudit's audit path (``exact_accounting``'s upper curve,
   :func:`dpaudit.accounting.composition.laplace_group_pld`) and its composition API
   (``compose_accounting`` of K ``LaplaceComponent``, upper curve) against dp_accounting's best
   path (sequential ``compose`` or a balanced tree of ``compose``; sequential skipped at K =
   10000, where the tree is 2x faster), PLD constructors included. The composition API is
   timed with one vectorised part (``LaplaceBatch(a)``) and, for comparison, with one
   ``LaplaceComponent`` per part.
2. ``equal``: 10 000 equal Laplace parts (``a = 0.05``): the audit path (grouped, power
   path), the composition API, against ``from_laplace_mechanism(...).self_compose(10000)``.
3. ``dpsgd``: Poisson-subsampled Gaussian, ``q = 0.01``, ``sigma = 1``, ``T = 1000``,
   accounting *and* ``epsilon(1e-5)``: ``subsampled_accounting(lower=False)`` against
   ``PLDAccountant`` + ``get_epsilon``.

Lengths (``iclp K``): the composed pmf's length against the exact support of the sum
(``sum_j size_j - K + 1``); session 13 cut every batched-tree product to its exact support.

Curves: ``delta`` at 6 epsilons and ``epsilon`` at 3 deltas for each workload, and the
smallest ``dpaudit - dp_accounting`` delta difference (never below dp_accounting's curve
beyond dpaudit's round-off margin). Epsilon passes: curve evaluations of one ``epsilon(1e-5)``
call (the old bisection made about 90).

Run: ``python benchmarks/accounting_ratios.py [--repeats 3] [--sizes 100 1000 10000]``;
prints a markdown table and writes ``benchmarks/results/accounting_ratios.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import statistics
import time
from unittest import mock

import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as dp_pld

from dpaudit.accounting.composition import (
    GaussianComponent,
    LaplaceBatch,
    LaplaceComponent,
    compose_accounting,
    laplace_group_pld,
)
from dpaudit.accounting.profiles import DiscretePLD, laplace_components, laplace_parameters
from dpaudit.accounting.subsampling import subsampled_accounting

D = 1e-4
EPSILONS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0)
DELTAS = (1e-3, 1e-5, 1e-8)


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, time.perf_counter() - wall, time.process_time() - cpu


def _run(cases: dict, repeats: int):
    times = {name: {"wall": [], "cpu": []} for name in cases}
    values, names = {}, list(cases)
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            values[name], wall, cpu = _timed(cases[name])
            times[name]["wall"].append(wall)
            times[name]["cpu"].append(cpu)
    return {n: {k: statistics.median(v) for k, v in t.items()} for n, t in times.items()}, values


def iclp(k: int):
    j = np.arange(1, k + 1.0)
    lam, h = j**-2.0, j**-2.5
    sigma = math.sqrt(2.0) * float(np.sum(h / np.sqrt(lam)))
    return laplace_parameters(h, lam, sigma)


def _dp_plds(a):
    return [
        dp_pld.from_laplace_mechanism(1.0, sensitivity=float(x), value_discretization_interval=D)
        for x in a
    ]


def _dp_tree(a):
    plds = _dp_plds(a)
    while len(plds) > 1:
        pairs = [plds[i].compose(plds[i + 1]) for i in range(0, len(plds) - 1, 2)]
        plds = pairs + ([plds[-1]] if len(plds) % 2 else [])
    return plds[0]


def _dp_sequential(a):
    plds = _dp_plds(a)
    out = plds[0]
    for p in plds[1:]:
        out = out.compose(p)
    return out


def _curves(ours: DiscretePLD, theirs):
    eps = np.array(EPSILONS)
    mine = ours.delta(eps)
    other = np.array([theirs.get_delta_for_epsilon(e) for e in eps])
    return {
        "delta": {"dpaudit": mine.tolist(), "dp_accounting": other.tolist()},
        "min_difference": float(np.min(mine - other)),
        "margin": ours.margin,
        "epsilon": {str(d): [ours.epsilon(d), theirs.get_epsilon_for_delta(d)] for d in DELTAS},
    }


def heterogeneous(k: int, repeats: int) -> dict:
    a = iclp(k)
    cases = {
        "audit path": lambda: laplace_group_pld(a, D, upper=True),
        "composition API": lambda: (
            compose_accounting([LaplaceBatch(a)], discretization=D, lower=False).upper_pld
        ),
        "composition API, one object per part": lambda: (
            compose_accounting(
                [LaplaceComponent(float(x)) for x in a], discretization=D, lower=False
            ).upper_pld
        ),
        "dp_accounting tree": lambda: _dp_tree(a),
    }
    if k <= 1000:
        cases["dp_accounting sequential"] = lambda: _dp_sequential(a)
    times, values = _run(cases, repeats)
    best = min((n for n in cases if n.startswith("dp_")), key=lambda n: times[n]["cpu"])
    pmfs, _ = laplace_components(a, D, "pessimistic")
    support = sum(p.size for _, p in pmfs) - len(pmfs) + 1  # the exact composed support
    lengths = {"composed": int(values["audit path"].probs.size), "exact support": support}
    out = {"times": times, "best": best, "lengths": lengths}
    return out | _curves(values["audit path"], values[best])


def equal(repeats: int, a: float = 0.05, count: int = 10_000) -> dict:
    times, values = _run(
        {
            "audit path": lambda: laplace_group_pld(np.full(count, a), D, upper=True),
            "composition API": lambda: (
                compose_accounting(
                    [LaplaceComponent(a)], [count], discretization=D, lower=False
                ).upper_pld
            ),
            "dp_accounting self_compose": lambda: dp_pld.from_laplace_mechanism(
                1.0, sensitivity=a, value_discretization_interval=D
            ).self_compose(count),
        },
        repeats,
    )
    out = {"times": times, "best": "dp_accounting self_compose"}
    return out | _curves(values["audit path"], values["dp_accounting self_compose"])


def dpsgd(repeats: int, q: float = 0.01, sigma: float = 1.0, steps: int = 1000) -> dict:
    def ours():
        acc = subsampled_accounting(GaussianComponent(1.0 / sigma), q, steps, lower=False)
        return acc.epsilon_upper(1e-5)

    def theirs():
        accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=D)
        accountant.compose(
            dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps
        )
        return accountant.get_epsilon(1e-5)

    times, values = _run({"audit path": ours, "dp_accounting PLDAccountant": theirs}, repeats)
    acc = subsampled_accounting(GaussianComponent(1.0 / sigma), q, steps, lower=False)
    with mock.patch.object(DiscretePLD, "delta", autospec=True, side_effect=DiscretePLD.delta) as m:
        acc.epsilon_upper(1e-5)
    return {
        "times": times,
        "best": "dp_accounting PLDAccountant",
        "epsilon": {"1e-05": [values["audit path"], values["dp_accounting PLDAccountant"]]},
        "curve_evaluations_per_epsilon": m.call_count,
    }


def _row(name: str, result: dict) -> str:
    times, best = result["times"], result["best"]
    ref = times[best]
    cells = []
    for case in ("audit path", "composition API"):
        if case in times:
            t = times[case]
            cells.append(
                f"{t['cpu'] * 1e3:.1f} ms ({t['wall'] * 1e3:.1f}) **{ref['cpu'] / t['cpu']:.1f}x**"
                f" ({ref['wall'] / t['wall']:.1f}x)"
            )
        else:
            cells.append("—")
    eps = result["epsilon"]["1e-05"]
    return (
        f"| {name} | {cells[0]} | {cells[1]} | {best} {ref['cpu']:.3f} s ({ref['wall']:.3f} s) "
        f"| {eps[0]:.8f} / {eps[1]:.8f} | {result['load_after'][0]:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    args = parser.parse_args()
    report = {"load_before": os.getloadavg(), "discretization": D}
    jobs = [(f"iclp K={k}", lambda k=k: heterogeneous(k, args.repeats)) for k in args.sizes]
    jobs += [("equal 1e4", lambda: equal(args.repeats)), ("dpsgd", lambda: dpsgd(args.repeats))]
    print(
        "| workload | audit path CPU (wall), ratio | composition API CPU (wall), ratio "
        "| dp_accounting best CPU (wall) | epsilon(1e-5) dpaudit / dp | load after |"
    )
    print("|---|---|---|---|---|---|")
    for name, job in jobs:
        report[name] = job() | {"load_after": os.getloadavg()}
        print(_row(name, report[name]), flush=True)
    print()
    for name in report:
        if isinstance(report[name], dict) and "min_difference" in report[name]:
            r = report[name]
            print(
                f"{name}: min(dpaudit - dp_accounting) over delta{EPSILONS} = "
                f"{r['min_difference']:.3e} (margin {r['margin']:.3e}); epsilon(1e-3, 1e-5, 1e-8) "
                + ", ".join(f"{e[0]:.8f}/{e[1]:.8f}" for e in r["epsilon"].values())
            )
    for name in report:
        if isinstance(report[name], dict) and "lengths" in report[name]:
            print(f"{name}: composed pmf length (exact support)", report[name]["lengths"])
    for name in report:
        times = report[name].get("times", {}) if isinstance(report[name], dict) else {}
        if "composition API, one object per part" in times:
            base = times["audit path"]["cpu"]
            print(
                f"{name}: composition API / audit path CPU = "
                f"{times['composition API']['cpu'] / base:.2f} (LaplaceBatch), "
                f"{times['composition API, one object per part']['cpu'] / base:.2f} "
                "(one LaplaceComponent per part)"
            )
    print(
        "dpsgd: curve evaluations in one epsilon(1e-5):",
        report["dpsgd"]["curve_evaluations_per_epsilon"],
    )
    report["load_after"] = os.getloadavg()
    print("load average before", report["load_before"], "after", report["load_after"])
    out = pathlib.Path(__file__).parent / "results" / "accounting_ratios.json"
    out.write_text(json.dumps(report, indent=1, default=float))


if __name__ == "__main__":
    main()
