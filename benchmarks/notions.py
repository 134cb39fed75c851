"""Notion claims: cost of judging a claim in its notion, and black-box budgets for GDP.

Measures, side by side in one run (wall and CPU seconds, with the load average):

1. the white-box audit of the Gaussian mean with sigma for mu = 1 (``gaussian-mean-gdp``,
   n = 10, 20000 releases per direction) against the (epsilon, delta) point its claim
   implies (a plain ``Claim``) and against the 1-GDP / 0.5-zCDP claims themselves: the
   extra cost of :func:`dpaudit.whitebox.notions.evaluate_notion`;
2. the same for the Laplace mean (numerical PLD accounting, the grid profile bracket);
3. the black-box audit of a Gaussian count (exactly 1-GDP) against 0.9-GDP at budgets
   ``2e4, 5e4, 1e5, 2e5`` certification releases, seeds 0..4: how often the violation is
   certified and the certified mu;
4. with ``opendp`` installed (extra ``libraries``): OpenDP's Gaussian measurement against
   its native zCDP claim and against rho read as epsilon;
5. the Rényi profile of the Poisson-subsampled Gaussian at the 13 profile orders
   (:func:`dpaudit.accounting.renyi.subsampled_gaussian_renyi`, remove and add) beside
   ``dp_accounting``'s ``RdpAccountant`` on the same orders, and the zCDP bracket of
   DP-SGD's composed accounting (T = 20 steps).

Run ``python benchmarks/notions.py subsampled`` for part 5 alone.

Run ``nice -n 10 python benchmarks/notions.py``; prints a markdown table per part.
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import dpaudit
from dpaudit.model.claims import GDPClaim, ZCDPClaim


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def _with(mech, claim):
    return dpaudit.Mechanism(mech.name, mech.model, claim, mech.summary, mech.difference_norm)


def whitebox_costs() -> None:
    """Part 1 and 2: the notion verdict's cost beside the (epsilon, delta) audit."""
    print("| mechanism | claim | verdict | wall s | CPU s |\n|---|---|---|---|---|")
    for name, claims in (
        ("gaussian-mean-gdp", (GDPClaim(1.0), ZCDPClaim(0.5))),
        ("laplace-mean", (GDPClaim(1.1), ZCDPClaim(0.4))),
    ):
        mech = dpaudit.build(name, n=10, **({"dim": 1} if name == "laplace-mean" else {}))
        d = np.zeros((10, 1)) if name == "laplace-mean" else np.zeros(10)
        dp = d.copy()
        dp[0] = 1.0
        dpaudit.audit(mech, d, dp, samples=20_000)  # compile once
        for claim in (claims[0].as_dp(), *claims):
            res, wall, cpu = _timed(
                lambda c=claim, m=mech, a=d, b=dp: dpaudit.audit(_with(m, c), a, b, samples=20_000)
            )
            label = (
                claim.describe()
                if hasattr(claim, "notion")
                else f"({claim.epsilon:.4g}, {claim.delta:g})"
            )
            print(f"| {name} | {label} | {res.verdict} | {wall:.2f} | {cpu:.2f} |")


def _gaussian_count(data, n, key):
    return (jnp.sum(data) + jax.random.normal(key, (n,)))[:, None]


def blackbox_budgets(seeds=range(5)) -> None:
    """Part 3: black-box detection of 0.9-GDP on an exactly 1-GDP count."""
    d, dp = jnp.zeros(5), jnp.zeros(5).at[0].set(1.0)
    print("\n| budget | flagged | certified mu (median) | wall s / audit |\n|---|---|---|---|")
    for budget in (20_000, 50_000, 100_000, 200_000):
        flags, mus, walls = 0, [], []
        for seed in seeds:
            res, wall, _ = _timed(
                lambda s=seed, b=budget: dpaudit.blackbox_audit(
                    _gaussian_count, d, dp, GDPClaim(0.9), samples=b, seed=s, progress=False
                )
            )
            flags += res.verdict == "violation"
            mus.append(float(res.notes[-1].split("mu >= ")[1].split(" ")[0]))
            walls.append(wall)
        print(f"| {budget} | {flags}/{len(seeds)} | {np.median(mus):.4f} | {np.mean(walls):.1f} |")


def opendp_gaussian() -> None:
    """Part 4: OpenDP's Gaussian measurement, native zCDP claim and rho read as epsilon."""
    try:
        import opendp.prelude as odp
    except ImportError:
        print("\nopendp not installed (pip install dpaudit[libraries]): part 4 skipped.")
        return
    odp.enable_features("contrib")
    space = odp.vector_domain(odp.atom_domain(T=float, nan=False)), odp.l2_distance(T=float)
    meas = space >> odp.m.then_gaussian(scale=1.0)
    rho = meas.map(1.0)

    def sampler(data, n, key):
        return np.asarray(meas([float(np.sum(data))] * int(n)), dtype=float)[:, None]

    d, dp = np.zeros(5), np.zeros(5)
    dp[0] = 1.0
    print("\n| OpenDP Gaussian (scale 1) | verdict | certified | wall s |\n|---|---|---|---|")
    for label, claim in (
        (f"{rho:g}-zCDP (native)", ZCDPClaim(rho)),
        (f"({rho:g}, 1e-5)-DP (rho read as epsilon)", dpaudit.Claim(rho, 1e-5)),
    ):
        res, wall, _ = _timed(
            lambda c=claim: dpaudit.blackbox_audit(
                sampler, d, dp, c, samples=200_000, progress=False
            )
        )
        print(f"| {label} | {res.verdict} | eps >= {res.epsilon_lower:.3f} | {wall:.1f} |")


def subsampled_profiles(repeats: int = 5) -> None:
    """Part 5: subsampled-Gaussian Renyi profiles beside dp_accounting (same orders)."""
    import logging

    import dp_accounting
    from dp_accounting.rdp import RdpAccountant

    from dpaudit.accounting.composition import GaussianComponent
    from dpaudit.accounting.renyi import PROFILE_ORDERS, subsampled_gaussian_renyi
    from dpaudit.accounting.subsampling import subsampled_accounting
    from dpaudit.whitebox.notions import zcdp_rho_bracket

    logging.disable(logging.WARNING)  # dp_accounting warns on orders it cannot converge
    orders = list(PROFILE_ORDERS)

    def theirs():
        acc = RdpAccountant(orders)
        acc.compose(dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0)))
        return acc._rdp

    rows = [
        ("dpaudit remove (13 orders)", lambda: subsampled_gaussian_renyi(orders, 1.0, 0.01)),
        (
            "dpaudit add (13 orders)",
            lambda: subsampled_gaussian_renyi(orders, 1.0, 0.01, direction="add"),
        ),
        ("dp_accounting RdpAccountant (13 orders)", theirs),
    ]
    print("| computation | wall s | CPU s |\n|---|---|---|")
    for label, fn in rows:
        _, wall, cpu = _timed(lambda fn=fn: [fn() for _ in range(repeats)])
        print(f"| {label} | {wall / repeats:.3f} | {cpu / repeats:.3f} |")
    acc = subsampled_accounting(GaussianComponent(1.0), 0.1, 20, discretization=1e-3)
    bracket, wall, cpu = _timed(lambda: zcdp_rho_bracket(acc))
    print(f"| zCDP bracket of DP-SGD (T = 20, q = 0.1): {bracket} | {wall:.3f} | {cpu:.3f} |")


if __name__ == "__main__":
    import sys

    print(f"load average {os.getloadavg()}")
    if sys.argv[1:] == ["subsampled"]:
        subsampled_profiles()
        print(f"load average {os.getloadavg()}")
        raise SystemExit(0)
    subsampled_profiles()
    whitebox_costs()
    blackbox_budgets()
    opendp_gaussian()
    print(f"load average {os.getloadavg()}")
