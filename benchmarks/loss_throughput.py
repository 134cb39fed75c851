"""Privacy-loss throughput of the audit engine, in releases x components per second.

For ICLP and Gaussian-process noise with K components this script times, side by side
in one process (each a jitted, warmed-up function; median of ``--repeats`` interleaved
runs over ``--releases`` releases):

* ``roofline``: merely drawing the same number of Laplace (ICLP) or normal (GP)
  variates with ``jax.random`` and summing them (so XLA cannot skip the draw): the
  cost no Monte Carlo loss evaluation can beat.
* ``closed-form``: ``dpaudit.model.loss.loss_chunk`` with the shift structure: draw the
  noise coordinates and sum the 1,C (ICLP) or Cameron–Martin (GP) terms.
* ``density``: ``dpaudit.model.loss.loss_chunk`` without structure: draw coefficient
  releases from ``ICLPNoise``/``GaussianProcessNoise`` and evaluate both ``log_prob``.
* ``audit step``: the engine's full chunk step (closed form + the streaming
  hockey-stick moments on a 66-point epsilon grid + the running maximum).
* ``density step``: the engine's full chunk step on the density route (the two laws'
  per-coordinate log-density differences summed once, folded into the same state).
* ``density step, two sums``: the same step computing the loss as before, as the
  difference of the two laws' whole log-densities (two reductions per release), for
  the side-by-side comparison.
* ``density step, no kept draw`` (experiment, session 14): the density step's losses and
  fold without returning the largest-loss draw, so XLA need not write the ``(n, K)`` draws.
* ``density step, reciprocal`` (experiment, ICLP only, not adopted: see BENCHMARKS.md): the
  per-coordinate difference as ``|x - m_q| (1/b_q) - |x - m_p| (1/b_p) + log(b_q / b_p)``.

Run ``python benchmarks/loss_throughput.py`` (one to two minutes; ``--releases`` and
``--repeats`` trade time for precision; ``--clock cpu`` times by the process's CPU time,
which a loaded machine inflates far less than wall time). Markdown on stdout.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's dpaudit

import jax
import jax.numpy as jnp

import dpaudit  # noqa: F401  (64-bit floats)
from dpaudit.estimation.pld import init_hockey_stick
from dpaudit.model.densities import combine_log_probs, site_log_prob
from dpaudit.model.loss import loss_at_releases, loss_chunk, noise_shift
from dpaudit.model.noise import GaussianProcessNoise, ICLPNoise
from dpaudit.whitebox.kernels import fold_chunk, loss_kernel


def _setup(family: str, k: int):
    lam = jnp.arange(1, k + 1.0) ** -2.0
    h = 0.1 * jnp.arange(1, k + 1.0) ** -2.5
    cls = ICLPNoise if family == "laplace" else GaussianProcessNoise
    p, q = cls(lam, 1.0, loc=h), cls(lam, 1.0)
    return p, q, noise_shift(p, q)


def _timers(family: str, k: int, n: int):
    p, q, shift = _setup(family, k)
    draw = jax.random.laplace if family == "laplace" else jax.random.normal

    @jax.jit
    def roofline(key):
        return jnp.sum(draw(key, (n, k)), axis=-1)

    grid = jnp.linspace(0.0, 2.0, 66)
    state = init_hockey_stick(66)

    kernel = loss_kernel("closed-form", None, None, None, p, q, shift)
    density = loss_kernel("density", None, None, None, p, q, None)

    def audit_step(key):  # the engine's jitted closed-form step, as audit() runs it
        return kernel.step(state, key, grid, n, n)[1]

    def density_step(key):  # the engine's jitted density step, as audit() runs it
        return density.step(state, key, grid, n, n)[1]

    @jax.jit
    def two_sums(key):  # the density step as it was: two whole log-densities per release
        x = p.sample(key, (n,))
        loss = combine_log_probs(site_log_prob(p, x), site_log_prob(q, x))
        return fold_chunk(state, loss, grid, n)[1]

    @jax.jit
    def no_kept_draw(key):  # the density step's losses and fold, no draw returned
        x = p.sample(key, (n,))
        return fold_chunk(state, loss_at_releases(p, q, x), grid, n)[1]

    @jax.jit
    def reciprocal(key):  # one multiplication per law and coordinate instead of a division
        x = p.sample(key, (n,))
        bp, bq = p.laplace_scale, q.laplace_scale
        terms = jnp.abs(x - q.loc) * (1.0 / bq) - jnp.abs(x - p.loc) * (1.0 / bp)
        terms = jnp.where(jnp.isfinite(x), terms + jnp.log(bq / bp), jnp.nan)
        return fold_chunk(state, jnp.sum(terms, axis=-1), grid, n)[1]

    timers = {
        "roofline": roofline,
        "closed-form": lambda key: loss_chunk(key, p, q, n, shift=shift, return_draws=False)[0],
        "density": lambda key: loss_chunk(key, p, q, n, return_draws=False)[0],
        "audit step": audit_step,
        "density step": density_step,
        "density step, two sums": two_sums,
        "density step, no kept draw": no_kept_draw,
    }
    if family == "laplace":
        timers["density step, reciprocal"] = reciprocal
    return timers


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--releases", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args(argv)

    wall, cpu = time.perf_counter(), time.process_time()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"# Privacy-loss throughput ({time.strftime('%Y-%m-%d %H:%M')})\n")
    print(
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
        f"jax {jax.__version__} on {jax.default_backend()}; load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    print(f"Clock: {args.clock}.\n")
    print("| noise | K | method | median s | 1e6 coordinate-losses/s | vs roofline |")
    print("|---|---|---|---|---|---|")
    for family in ("laplace", "gaussian"):
        for k in args.sizes:
            n = max(1000, args.releases * 100 // k)  # about the same work per K
            timers = _timers(family, k, n)
            times = {name: [] for name in timers}
            key = jax.random.key(0)
            for fn in timers.values():
                jax.block_until_ready(fn(key))  # compile
            for r in range(args.repeats):
                names = list(timers)
                names = names[r % len(names) :] + names[: r % len(names)]  # rotate the order
                for name in names:
                    k_r = jax.random.fold_in(key, r)
                    t = clock()
                    jax.block_until_ready(timers[name](k_r))
                    times[name].append(clock() - t)
            roof = statistics.median(times["roofline"])
            label = "ICLP" if family == "laplace" else "GP"
            for name, ts in times.items():
                med = statistics.median(ts)
                rate = n * k / med / 1e6
                print(f"| {label} | {k} | {name} | {med:.4f} | {rate:.1f} | {roof / med:.2f} |")
    print(
        f"\nprocess CPU {time.process_time() - cpu:.1f} s, wall {time.perf_counter() - wall:.1f} s"
    )
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
