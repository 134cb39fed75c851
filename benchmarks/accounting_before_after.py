"""Session 14 (s14-acct): the audit path's Laplace composition and DP-SGD's epsilon, before and after.

Side by side in one process, alternated, with dp_accounting's best path in the same loop (CPU
time by ``time.process_time``, minimum and median over ``--repeats``; load average printed):

* ``laplace_pld`` of the ICLP parameters (``benchmarks/accounting_ratios.py``) at each K, from
  this tree and from ``profiles.py`` of an older tree (``--old``, e.g. a ``git archive`` of the
  parent commit unpacked into a folder), against dp_accounting's tree of ``compose``;
* DP-SGD (``q = 0.01, sigma = 1, T = 1000``): ``subsampled_accounting`` plus ``epsilon_upper(1e-5)``
  with the old and the new ``ExactAccounting._epsilon_bound``, against ``PLDAccountant``.

Run: ``PYTHONPATH=$PWD python benchmarks/accounting_before_after.py --old /path/to/old/tree``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time

import numpy as np
from accounting_ratios import D, _dp_tree, iclp
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant

from dpaudit.accounting import profiles
from dpaudit.accounting.composition import GaussianComponent
from dpaudit.accounting.subsampling import subsampled_accounting


def _old_profiles(tree: str):
    spec = importlib.util.spec_from_file_location(
        "old_profiles", os.path.join(tree, "dpaudit", "accounting", "profiles.py")
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_profiles"] = module
    spec.loader.exec_module(module)
    return module


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _alternate(cases: dict, repeats: int) -> dict:
    times = {name: [] for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            times[name].append(_cpu(fn))
    return {n: (min(t), statistics.median(t)) for n, t in times.items()}


def _print(title: str, times: dict, reference: str) -> None:
    ref = times[reference][0]
    print(title, f"(load {os.getloadavg()[0]:.1f})")
    for name, (low, mid) in times.items():
        print(
            f"  {name:28s} min {low * 1e3:8.2f} ms  median {mid * 1e3:8.2f} ms  {ref / low:6.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True, help="folder holding an older dpaudit tree")
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    args = parser.parse_args()
    old = _old_profiles(args.old)
    print("load average before", os.getloadavg())
    for k in args.sizes:
        a = iclp(k)
        reps = args.repeats if k <= 1000 else max(3, args.repeats // 10)
        cases = {
            "old laplace_pld": lambda a=a: old.laplace_pld(a, D),
            "new laplace_pld": lambda a=a: profiles.laplace_pld(a, D),
            "dp_accounting tree": lambda a=a: _dp_tree(a),
        }
        if k > 100:  # dp_accounting's tree takes seconds there: a third of the repeats
            cases.pop("dp_accounting tree")
            dp = _alternate({"dp_accounting tree": lambda a=a: _dp_tree(a)}, max(2, reps // 3))
            times = _alternate(cases, reps) | dp
        else:
            times = _alternate(cases, reps)
        margins = old.laplace_pld(a, D).margin, profiles.laplace_pld(a, D).margin
        _print(
            f"iclp K={k} (margin {margins[0]:.3e} -> {margins[1]:.3e})", times, "dp_accounting tree"
        )

    def accounting():
        return subsampled_accounting(GaussianComponent(1.0), 0.01, 1000, lower=False)

    def pld_accountant():
        accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=D)
        event = dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1.0))
        accountant.compose(event, 1000)
        return accountant.get_epsilon(1e-5)

    old_bound, new_bound = (
        old.ExactAccounting._epsilon_bound,
        profiles.ExactAccounting._epsilon_bound,
    )
    times = _alternate(
        {
            "old accounting + epsilon": lambda: old_bound(accounting(), 1e-5, upper=True),
            "new accounting + epsilon": lambda: new_bound(accounting(), 1e-5, upper=True),
            "dp_accounting PLDAccountant": pld_accountant,
        },
        max(5, args.repeats // 3),
    )
    acc = accounting()
    answers = old_bound(acc, 1e-5, upper=True), new_bound(acc, 1e-5, upper=True)
    _print(f"dpsgd (epsilon {answers[0]!r} / {answers[1]!r})", times, "dp_accounting PLDAccountant")
    print("load average after", os.getloadavg(), "numpy", np.__version__)


if __name__ == "__main__":
    main()
