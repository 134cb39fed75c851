"""Privacy-loss throughput of multi-site (whole-trace) releases against the random-number roofline.

A mechanism releasing ``k`` sample sites of ``K / k`` coordinates each (``K`` noise
coordinates in all) is planned exactly as :func:`dpaudit.audit` plans it
(``dpaudit.whitebox.plan.plan_audit``) and the engine's jitted chunk step is timed side by
side, in one process, with (median of ``--repeats`` interleaved runs, each warmed up):

* ``roofline``: drawing the same ``n x K`` Laplace (or normal) variates with
  ``jax.random`` and summing them — no Monte Carlo loss evaluation can be faster;
* ``single site``: the same ``K`` coordinates released at *one* site (the engine's
  single-site path, for reference);
* ``k sites``: the multi-site mechanism. Sites of one family that do not depend on each
  other compose into one shifted noise (``joint_noise_shift``), so the engine runs its
  closed-form step; a release of mixed families (half the sites Laplace, half Gaussian)
  goes by the joint density (``JointRelease.log_prob``: the model run with every site
  substituted), shown as ``k sites (mixed, density)`` against the mean of the two
  rooflines;
* ``single site (density)`` and ``k sites (Laplace, density)``: the density route forced
  on the single-site and the ``k``-site Laplace releases, to separate the cost of the
  density route from the cost of the joint (whole-trace) density.

Each step includes the streaming hockey-stick moments on a 66-point epsilon grid and the
running maximum (the whole audit step). Prints a Markdown table, the load average before
and after, and the process CPU time beside the wall time. Run
``python benchmarks/multisite.py`` (a few minutes under load).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

import dpaudit
from dpaudit.estimation.pld import init_hockey_stick
from dpaudit.whitebox.kernels import loss_kernel
from dpaudit.whitebox.options import AuditOptions
from dpaudit.whitebox.plan import plan_audit


def _mechanism(k: int, width: int, families):
    """``k`` sites of ``width`` coordinates; site ``i`` adds noise of ``families[i]``."""

    def model(data):
        total = jnp.sum(data)
        loc = total * jnp.linspace(0.5, 1.0, width)
        for i in range(k):
            noise = dist.Laplace if families[i] == "laplace" else dist.Normal
            numpyro.sample(f"s{i}", noise(loc, 1.0).to_event(1))

    sites = tuple(f"s{i}" for i in range(k)) if k > 1 else "s0"
    claim = dpaudit.Claim(epsilon=1.0, delta=1e-5 if "gaussian" in families else 0.0)
    return dpaudit.Mechanism(f"bench-{k}", model, claim, release_site=sites)


def _step(mechanism, n: int, route: str = "auto"):
    data, data_prime = np.zeros(4), np.array([0.0, 0.0, 0.0, 0.2])
    options = AuditOptions(route=route, exact=False, compatibility=False, check_adjacency=False)
    plan = plan_audit(mechanism, data, data_prime, options)
    kernel = loss_kernel(
        plan.route, mechanism, data, data_prime, plan.dist_d, plan.dist_dp, plan.shift
    )
    grid, state = jnp.linspace(0.0, 2.0, 66), init_hockey_stick(66)
    return plan.route, lambda key: kernel.step(state, key, grid, n, n)[1]


def _timers(k: int, size: int, n: int):
    width = size // k

    def roof(draw):
        return jax.jit(lambda key: jnp.sum(draw(key, (n, k * width)), axis=-1))

    mixed = ["laplace" if i % 2 == 0 else "gaussian" for i in range(k)]
    single_route, single = _step(_mechanism(1, k * width, ["laplace"]), n)
    multi_route, multi = _step(_mechanism(k, width, ["laplace"] * k), n)
    mixed_route, mixed_step = _step(_mechanism(k, width, mixed), n)
    dens_route, dens = _step(_mechanism(1, k * width, ["laplace"]), n, "density")
    multi_dens_route, multi_dens = _step(_mechanism(k, width, ["laplace"] * k), n, "density")
    return {
        "roofline (Laplace)": ("-", roof(jax.random.laplace)),
        "roofline (normal)": ("-", roof(jax.random.normal)),
        "single site": (single_route, single),
        "k sites (Laplace)": (multi_route, multi),
        "k sites (mixed, density)": (mixed_route, mixed_step),
        "single site (density)": (dens_route, dens),
        "k sites (Laplace, density)": (multi_dens_route, multi_dens),
    }


def _run(timers, repeats: int) -> dict:
    key = jax.random.key(0)
    for _, fn in timers.values():
        jax.block_until_ready(fn(key))  # compile
    times = {name: [] for name in timers}
    for r in range(repeats):
        names = list(timers)
        names = names[r % len(names) :] + names[: r % len(names)]  # rotate the order
        for name in names:
            k_r = jax.random.fold_in(key, r)
            t = time.perf_counter()
            jax.block_until_ready(timers[name][1](k_r))
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, nargs="+", default=[4, 20])
    parser.add_argument("--size", type=int, default=100, help="noise coordinates K in all")
    parser.add_argument("--releases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    wall, cpu = time.perf_counter(), time.process_time()
    print(f"# Multi-site loss throughput ({time.strftime('%Y-%m-%d %H:%M')})\n")
    print(
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"jax {jax.__version__} on {jax.default_backend()}; load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    print("| k sites | K | step | route | median s | 1e6 coordinate-losses/s | vs roofline |")
    print("|---|---|---|---|---|---|---|")
    for k in args.sites:
        n = args.releases
        timers = _timers(k, args.size, n)
        medians = _run(timers, args.repeats)
        laplace_roof = medians["roofline (Laplace)"]
        mixed_roof = 0.5 * (laplace_roof + medians["roofline (normal)"])
        for name, med in medians.items():
            roof = mixed_roof if "mixed" in name else laplace_roof
            if name == "roofline (normal)":
                roof = med
            rate = n * (args.size // k) * k / med / 1e6
            route = timers[name][0]
            print(
                f"| {k} | {args.size} | {name} | {route} | {med:.4f} | {rate:.1f} "
                f"| {roof / med:.2f} |"
            )
    print(
        f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"wall {time.perf_counter() - wall:.1f} s, process CPU {time.process_time() - cpu:.1f} s"
    )


if __name__ == "__main__":
    main()
