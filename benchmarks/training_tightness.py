"""How close the many-run training bounds come to the exact epsilon, against the number of runs.

The catalogue DP-SGD (mechanisms/dpsgd/training.py, model-free white-box training:
T = 100, q = 0.5, noise multiplier 3, C = 2; exact epsilon(1e-5) = 8.39 from dpaudit's
subsampled-Gaussian accounting), a Dirac gradient canary of norm 4C on coordinate 0,
every iterate observed, the summed per-step log-likelihood ratio as the score, 95 %:
per number of runs (half with the canary) and seed, the ratio to the exact epsilon of

* ``rank``: :func:`dpaudit.training.rank.rank_bound` (van der Waerden rank test of all
  runs, Monte Carlo p-values; certified if the score's ROC curve is Gaussian);
* ``gdp-shape``: :attr:`ManyRunBound.epsilon_gdp_shape` (threshold chosen for mu on a
  25 % selection split, one Clopper-Pearson point; if the trade-off curve is Gaussian);
* ``free``: :attr:`ManyRunBound.epsilon` (threshold chosen for epsilon on the split, one
  point, no shape assumption; capped near ``log(n_out / 3.7)`` by the runs).

``--calibration K`` draws ``K`` data sets of the largest ``--runs`` (numpy, seeds apart from
the table's) and counts how often the rank bound's epsilon exceeds the exact one (the
assumption is approximate here; the share should stay near or below ``1 - confidence``).
``--ceiling N`` first simulates ``N`` runs per group (numpy, chunked) and prints the score
ROC curve's local GDP parameter ``Phi^{-1}(1 - a) - Phi^{-1}(beta(a))`` at a few type I
errors ``a``, with the GDP epsilon each gives: what the rank bound tends to with many runs.

The seeds (default 0-19) are the scores' and the bounds' seeds; none was used to choose
anything (the rank statistic and ``B = 999`` were fixed on other draws). Prints one row per
(runs, seed), then per runs the median, the smallest ratio and how many seeds reach 0.8.

Usage: ``PYTHONPATH=$PWD python benchmarks/training_tightness.py [--runs 250 500 1000]
[--seeds 20] [--first-seed 0] [--ceiling 2000000] [--calibration 200]``.
"""

from __future__ import annotations

import argparse
import functools
import os
import resource
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax
import numpy as np
import scipy.special

from dpaudit.accounting.conversions import gdp_epsilon
from dpaudit.training import GradientCanary, many_run_bound, subsampled_gaussian_loss
from dpaudit.training.rank import rank_bound
from mechanisms.dpsgd.training import DPSGDConfig, exact_epsilon, simulated_train

DELTA, CONFIDENCE = 1e-5, 0.95


@functools.lru_cache(maxsize=1)
def _training():
    """The vmapped catalogue training (compiled once per number of runs) and the canary."""
    config = DPSGDConfig(dim=4)
    loss = subsampled_gaussian_loss(config.q, config.noise_multiplier * config.clip, config.clip)
    canary = GradientCanary(dim=4, coordinate=0, norm=4 * config.clip, transform=loss)
    return jax.jit(jax.vmap(simulated_train(config), in_axes=(None, 0, None))), canary


def scores(runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores of ``runs / 2`` trainings with the canary and as many without."""
    train, canary = _training()
    keys = jax.random.split(jax.random.PRNGKey(seed), runs)
    s_in = canary.score_array(train(None, keys[: runs // 2], canary.gradient(True)))
    s_out = canary.score_array(train(None, keys[runs // 2 :], canary.gradient(False)))
    return np.asarray(s_in), np.asarray(s_out)


def ratios(runs: int, seed: int, exact: float) -> dict:
    """The three bounds' ratios to the exact epsilon, and the rank bound's CPU seconds."""
    s_in, s_out = scores(runs, seed)
    point = many_run_bound(s_in, s_out, delta=DELTA, confidence=CONFIDENCE, seed=seed, target="mu")
    free = many_run_bound(s_in, s_out, delta=DELTA, confidence=CONFIDENCE, seed=seed)
    cpu = time.process_time()
    rank = rank_bound(s_in, s_out, delta=DELTA, confidence=CONFIDENCE, seed=seed)
    cpu = time.process_time() - cpu
    return {
        "rank": rank.epsilon / exact,
        "gdp-shape": point.epsilon_gdp_shape / exact,
        "free": free.epsilon / exact,
        "rank mu": rank.mu,
        "rank cpu s": cpu,
    }


def ceiling(runs: int, exact: float, chunk: int = 100_000) -> None:
    """Print the local GDP parameter of the score's ROC curve from ``runs`` runs per group."""
    config = DPSGDConfig(dim=4)
    s, c, q = config.noise_multiplier * config.clip, config.clip, config.q
    loss = subsampled_gaussian_loss(q, s, c)
    rng = np.random.default_rng(12345)

    def group(present: bool) -> np.ndarray:
        out = []
        for _ in range(max(runs // chunk, 1)):
            x = rng.normal(0.0, s, (chunk, config.steps))
            x += present * c * (rng.random((chunk, config.steps)) < q)
            out.append(np.asarray(loss(x)).sum(axis=1))
        return np.concatenate(out)

    s_in, s_out = group(True), group(False)
    for a in (0.5, 0.2, 0.05, 0.01, 0.001):
        beta = np.mean(s_in <= np.quantile(s_out, 1 - a))
        mu = scipy.special.ndtri(1 - a) - scipy.special.ndtri(beta)
        eps = gdp_epsilon(DELTA, mu)
        print(
            f"ceiling: a = {a:g}: beta {beta:.4f}, mu {mu:.4f}, GDP epsilon {eps:.3f} "
            f"({eps / exact:.3f} of exact)"
        )


def exceedances(data_sets: int, runs: int, exact: float, chunk: int = 50) -> None:
    """How often the rank bound's epsilon exceeds the exact one (numpy-simulated runs)."""
    config = DPSGDConfig(dim=4)
    s, c, q = config.noise_multiplier * config.clip, config.clip, config.q
    loss = subsampled_gaussian_loss(q, s, c)
    rng = np.random.default_rng(54321)
    eps = []
    for i in range(data_sets):
        x = rng.normal(0.0, s, (runs, config.steps))
        x[: runs // 2] += c * (rng.random((runs // 2, config.steps)) < q)
        score = np.asarray(loss(x)).sum(axis=1)
        bound = rank_bound(score[: runs // 2], score[runs // 2 :], delta=DELTA, seed=10_000 + i)
        eps.append(bound.epsilon / exact)
    eps = np.array(eps)
    print(
        f"calibration: {data_sets} data sets of {runs} runs: rank epsilon > exact in "
        f"{int(np.sum(eps > 1))} ({np.mean(eps > 1):.3f}; allowed 1 - confidence = "
        f"{1 - CONFIDENCE:g}); ratio median {np.median(eps):.3f}, 5 % quantile "
        f"{np.quantile(eps, 0.05):.3f}, largest {eps.max():.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[250, 500, 1000])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--ceiling", type=int, default=0)
    parser.add_argument("--calibration", type=int, default=0)
    args = parser.parse_args()
    exact = exact_epsilon(DPSGDConfig(dim=4))
    print(f"exact epsilon({DELTA:g}) = {exact:.4f}; load average {os.getloadavg()[0]:.1f}")
    if args.ceiling:
        ceiling(args.ceiling, exact)
    if args.calibration:
        exceedances(args.calibration, max(args.runs), exact)
    summary = {}
    for runs in args.runs:
        rows = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            r = ratios(runs, seed, exact)
            rows.append(r)
            print(
                f"runs {runs} seed {seed}: rank {r['rank']:.3f} (mu {r['rank mu']:.3f}, "
                f"{r['rank cpu s']:.2f} s CPU), gdp-shape {r['gdp-shape']:.3f}, free {r['free']:.3f}",
                flush=True,
            )
        summary[runs] = rows
    print("\n| runs | bound | median | smallest | largest | seeds >= 0.8 |")
    print("|---|---|---|---|---|---|")
    for runs, rows in summary.items():
        if not rows:
            continue
        for name in ("rank", "gdp-shape", "free"):
            v = np.array([r[name] for r in rows])
            print(
                f"| {runs} | {name} | {np.median(v):.3f} | {v.min():.3f} | {v.max():.3f} | "
                f"{int(np.sum(v >= 0.8))} / {v.size} |"
            )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"CPU {usage.ru_utime + usage.ru_stime:.1f} s; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
