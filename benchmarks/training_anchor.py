"""dpaudit's training-audit bounds beside jax-privacy's ``auditing.CanaryScoreAuditor``, same scores.

The catalogue DP-SGD (mechanisms/dpsgd/training.py, T = 100, q = 0.5, noise multiplier 3,
C = 2: exact epsilon(1e-5) = 8.39), white-box Dirac gradient canaries, every iterate,
the summed per-step log-likelihood ratio as the score, confidence 95 % (significance 0.05):

* many runs (``--runs``, half with the canary): dpaudit's ``many_run_bound`` (threshold on
  a 25 % selection split, Clopper–Pearson on the rest; or ``select_fraction = 0``: every
  threshold on all runs, Bonferroni) against jax-privacy's
  ``epsilon_clopper_pearson`` with its default ``Bonferroni()`` over all thresholds and with
  ``Split(0.25)``, both two-sided; and the GDP readings (dpaudit's certified mu's epsilon,
  jax-privacy's ``epsilon_from_gdp``);
* one run with ``--canaries`` Dirac canaries (each in with probability 1/2): dpaudit's
  ``one_run_bound`` (``k_plus = k_minus = --guesses``, fixed in advance) against
  jax-privacy's ``epsilon_one_run`` and ``epsilon_one_run_fdp`` (in-guesses above a
  threshold, Bonferroni over the thresholds); the in/out scores handed to jax-privacy are
  the canaries' scores split by their inclusion draw.

Usage: ``python benchmarks/training_anchor.py [--runs 1000] [--canaries 1000] [--seed 0]``.
"""

from __future__ import annotations

import argparse

import jax
import numpy as np
from jax_privacy import auditing

from dpaudit.accounting.conversions import gdp_epsilon
from dpaudit.training import (
    DiracCanaries,
    GradientCanary,
    many_run_bound,
    one_run_bound,
    subsampled_gaussian_loss,
)
from mechanisms.dpsgd.training import DPSGDConfig, exact_epsilon, simulated_train

DELTA, CONFIDENCE = 1e-5, 0.95


def many_run_scores(runs: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores of ``runs / 2`` trainings with the canary and as many without."""
    config = DPSGDConfig(dim=4)
    loss = subsampled_gaussian_loss(config.q, config.noise_multiplier * config.clip, config.clip)
    canary = GradientCanary(dim=4, coordinate=0, norm=4 * config.clip, transform=loss)
    train = jax.jit(jax.vmap(simulated_train(config), in_axes=(None, 0, None)))
    keys = jax.random.split(jax.random.PRNGKey(seed), runs)
    s_in = canary.score_array(train(None, keys[: runs // 2], canary.gradient(True)))
    s_out = canary.score_array(train(None, keys[runs // 2 :], canary.gradient(False)))
    return np.asarray(s_in), np.asarray(s_out)


def many_run_side_by_side(s_in, s_out, seed: int) -> dict:
    """Both tools' many-run bounds on the same scores."""
    ours = many_run_bound(s_in, s_out, delta=DELTA, confidence=CONFIDENCE, seed=seed)
    ours_mu = many_run_bound(
        s_in, s_out, delta=DELTA, confidence=CONFIDENCE, seed=seed, target="mu"
    )
    ours_bonferroni = many_run_bound(
        s_in, s_out, delta=DELTA, confidence=CONFIDENCE, select_fraction=0.0
    )
    theirs = auditing.CanaryScoreAuditor(s_in, s_out)
    alpha = 1 - CONFIDENCE
    return {
        "dpaudit epsilon (Split 0.25)": ours.epsilon,
        "dpaudit epsilon (Bonferroni)": ours_bonferroni.epsilon,
        "jax-privacy epsilon (Bonferroni)": theirs.epsilon_clopper_pearson(
            alpha, DELTA, one_sided=False
        ),
        "jax-privacy epsilon (Split 0.25)": theirs.epsilon_clopper_pearson(
            alpha,
            DELTA,
            one_sided=False,
            threshold_strategy=auditing.Split(threshold_estimation_frac=0.25, seed=seed),
        ),
        "dpaudit GDP-shape epsilon (threshold for epsilon)": ours.epsilon_gdp_shape,
        "dpaudit GDP-shape epsilon (threshold for mu)": ours_mu.epsilon_gdp_shape,
        "jax-privacy epsilon_from_gdp": theirs.epsilon_from_gdp(alpha, DELTA),
    }


def one_run_scores(m: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One training with ``m`` Dirac canaries: their scores and inclusion draws."""
    config = DPSGDConfig(dim=m)
    loss = subsampled_gaussian_loss(config.q, config.noise_multiplier * config.clip, config.clip)
    canaries = DiracCanaries(m=m, dim=m, norm=4 * config.clip, transform=loss)
    coins, key = jax.random.split(jax.random.PRNGKey(seed))
    included = np.asarray(jax.random.bernoulli(coins, 0.5, (m,)))
    updates = simulated_train(config)(None, key, canaries.gradients(included))
    return canaries.scores(updates), included


def one_run_side_by_side(scores, included, guesses: int) -> dict:
    """Both tools' one-run bounds on the same scores."""
    ours = one_run_bound(
        scores, included, k_plus=guesses, k_minus=guesses, delta=DELTA, confidence=CONFIDENCE
    )
    theirs = auditing.CanaryScoreAuditor(scores[included], scores[~included])
    alpha = 1 - CONFIDENCE
    return {
        "dpaudit one-run epsilon": ours.epsilon,
        "jax-privacy epsilon_one_run (Bonferroni)": theirs.epsilon_one_run(alpha, DELTA),
        "jax-privacy epsilon_one_run_fdp (Bonferroni)": theirs.epsilon_one_run_fdp(alpha, DELTA),
        "dpaudit one-run mu": ours.mu,
        "dpaudit one-run GDP-shape epsilon": gdp_epsilon(DELTA, ours.mu) if ours.mu > 0 else 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--canaries", type=int, default=1000)
    parser.add_argument("--guesses", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(f"exact epsilon({DELTA:g}) = {exact_epsilon(DPSGDConfig(dim=4)):.4g}")
    s_in, s_out = many_run_scores(args.runs, args.seed)
    for name, value in many_run_side_by_side(s_in, s_out, args.seed).items():
        print(f"many runs ({args.runs}): {name}: {value:.4g}")
    scores, included = one_run_scores(args.canaries, args.seed)
    for name, value in one_run_side_by_side(scores, included, args.guesses).items():
        print(f"one run ({args.canaries} canaries): {name}: {value:.4g}")


if __name__ == "__main__":
    main()
