"""DP-SGD: does the white-box audit reproduce the exact epsilon(delta) within its Monte Carlo band?

The catalogue's ``dpsgd-logistic`` (T steps of Poisson-subsampled, clipped, Gaussian-noised
gradient sums of a logistic regression on scikit-learn's breast-cancer data) is audited
white-box on its worst-case pair (the data and the data plus the canary,
``mechanisms.dpsgd.example_pair``) with ``--samples`` Monte Carlo releases per direction.
The exact epsilon at ``delta`` is the numerically conservative accounting of ``T``
subsampled Gaussian steps (``mechanisms.dpsgd.dpsgd_accounting``; the trajectory law
declares it for this pair). The acceptance check: at ``epsilon* = epsilon(delta)`` the
Monte Carlo band of the hockey-stick divergence ``[lower, upper]`` (confidence 0.95,
Bernstein bounds, both directions) contains ``delta``, and the Monte Carlo estimate of
``epsilon(delta)`` is printed beside the exact one.

Run ``python benchmarks/dpsgd_band.py`` (1e6 samples: tens of minutes of CPU under load);
prints the figures, the load average and CPU time beside wall time.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import dpaudit
from mechanisms.dpsgd import example_pair


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    wall, cpu = time.perf_counter(), time.process_time()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    mechanism = dpaudit.build("dpsgd-logistic", steps=20, q=0.1, n=100)
    data, data_prime = example_pair("dpsgd-logistic")
    delta = mechanism.claim.delta
    result = dpaudit.audit(
        mechanism, data, data_prime, samples=args.samples, seed=args.seed, progress=False
    )
    record = result.to_dict()
    curves = record["curves"]
    index = curves["claim_index"]
    exact_epsilon = record["epsilon_at_claimed_delta"]["exact"]
    print(f"samples per direction: {args.samples}, seed {args.seed}, verdict {result.verdict}")
    print(f"claimed epsilon = exact epsilon(delta = {delta:g}): {mechanism.claim.epsilon!r}")
    print(f"epsilon_at_claimed_delta: {record['epsilon_at_claimed_delta']}")
    print(f"grid epsilon at the claim: {curves['epsilons'][index]!r}")
    inside = True
    for direction in ("D->D'", "D'->D"):
        c = curves[direction]
        lo, est, hi = c["lower"][index], c["estimate"][index], c["upper"][index]
        exact_hi = curves["exact_upper"][index] if curves.get("exact_upper") else None
        print(
            f"{direction}: delta(eps*) Monte Carlo estimate {est:.3e}, band [{lo:.3e}, "
            f"{hi:.3e}]; exact {exact_hi}"
        )
        inside = inside and lo <= delta
    worst_hi = max(curves[d]["upper"][index] for d in ("D->D'", "D'->D"))
    inside = inside and worst_hi >= delta
    print(f"delta = {delta:g} inside the Monte Carlo band at epsilon* = {exact_epsilon}: {inside}")
    mc = record["epsilon_at_claimed_delta"].get("monte_carlo_estimate")
    if mc is not None and np.isfinite(float(mc)):
        print(f"Monte Carlo epsilon(delta) estimate {float(mc):.4f} vs exact {exact_epsilon:.4f}")
    print(
        f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"wall {time.perf_counter() - wall:.1f} s, process CPU {time.process_time() - cpu:.1f} s"
    )


if __name__ == "__main__":
    main()
