"""Calibration of many-run bounds where the exact answer is known: dpaudit beside jax-privacy.

Each seed draws fresh canary scores from a pair whose ``epsilon(delta)`` is known in
closed form, computes four 95 % lower bounds on the same scores, and counts how often a
bound *exceeds the truth* (a valid bound does so with probability ``<= 0.05``):

* ``gauss``: out-scores ``N(0, 1)``, in-scores ``N(mu, 1)`` (mu-GDP: ``epsilon(delta)`` of
  ``G_mu``, :func:`dpaudit.accounting.conversions.gdp_epsilon`);
* ``rr``: pure ``eps``-DP randomized response as a continuous score (out ``U(0, 1)``, in
  with density ``e^eps`` below ``1 / (1 + e^eps)`` and ``e^-eps`` above; score ``-u``):
  ``epsilon(0) = eps`` and *every* threshold lies on one of the two tight lines, so a
  threshold whose empirical rates fluctuate outwards is a real over-estimate. This is
  the hard case for a correction spent only on the thresholds of the empirical ROC hull.

Bounds (two-sided: both ``(epsilon, delta)`` lines): dpaudit ``many_run_bound`` with a
25 % selection split and with ``select_fraction = 0`` (Bonferroni over every threshold);
jax-privacy ``CanaryScoreAuditor.epsilon_clopper_pearson`` with its default
``Bonferroni()`` (alpha divided by the number of vertices of the empirical ROC hull,
computed from the same scores) and with ``Split(0.25)``.

Besides the exceedance of epsilon (which has slack: the two Clopper–Pearson bounds must
err together), the script counts how often the *coverage* each method's confidence
promises fails: jax-privacy Bonferroni, "some hull threshold has a Clopper–Pearson bound
at ``alpha / (2 M)`` on the wrong side of the true rate" (M = hull size); dpaudit split,
"the certified pair at the selected threshold misses a true rate"; dpaudit Bonferroni,
"some threshold's pair misses". Rates are printed with two-sided 95 % Clopper–Pearson
intervals.

Usage: ``PYTHONPATH=$PWD python benchmarks/many_run_calibration.py [--seeds 1000]
[--json benchmarks/results/many_run_calibration.json]``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import scipy.special
import scipy.stats
from jax_privacy import auditing

from dpaudit.accounting.conversions import gdp_epsilon
from dpaudit.estimation.bounds import clopper_pearson, one_sided_pair
from dpaudit.training import many_run_bound

CONFIDENCE = 0.95
ALPHA = 1.0 - CONFIDENCE
METHODS = ("dpaudit split 0.25", "dpaudit Bonferroni", "jax-privacy Bonferroni (hull)",
           "jax-privacy Split 0.25")  # fmt: skip
#: (family, parameter, delta, scores per group)
CASES = (
    ("gauss", 1.0, 0.1, 500),
    ("gauss", 2.0, 1e-3, 500),
    ("rr", 2.0, 0.0, 500),
    ("rr", 4.0, 0.0, 500),
    ("rr", 2.0, 0.0, 5000),
    ("rr", 4.0, 0.0, 5000),
)


def draw(family: str, param: float, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``(in-scores, out-scores)``, ``n`` each; higher means "in"."""
    if family == "gauss":
        return rng.normal(param, 1.0, n), rng.normal(0.0, 1.0, n)
    c = 1.0 / (1.0 + np.exp(param))
    low = rng.uniform(0.0, 1.0, n) < np.exp(param) * c
    u_in = np.where(low, rng.uniform(0.0, c, n), rng.uniform(c, 1.0, n))
    return -u_in, -rng.uniform(0.0, 1.0, n)


def true_rates(family: str, param: float, t) -> tuple[np.ndarray, np.ndarray]:
    """Exact ``(P(score >= t), Q(score >= t))`` (continuous scores: ``>=`` and ``>`` agree)."""
    t = np.asarray(t, dtype=float)
    if family == "gauss":
        return scipy.special.ndtr(param - t), scipy.special.ndtr(-t)
    x = np.clip(-t, 0.0, 1.0)
    c = 1.0 / (1.0 + np.exp(param))
    tpr = np.where(x <= c, np.exp(param) * x, np.exp(param) * c + np.exp(-param) * (x - c))
    return tpr, x


def truth(family: str, param: float, delta: float) -> float:
    """The exact ``epsilon(delta)`` of the pair."""
    if family == "gauss":
        return gdp_epsilon(delta, param)
    c = 1.0 / (1.0 + np.exp(param))
    return float(np.log(np.exp(param) - delta / c))


def hull_miss(auditor, family: str, param: float) -> bool:
    """Whether some hull threshold's bound at ``alpha / (2 M)`` is on the wrong side.

    Reads the hull jax-privacy's ``Bonferroni()`` spends alpha over (the auditor's
    thresholds and counts, private attributes of jax-privacy 2.0.0).
    """
    thresholds, fn, tn = auditor._thresholds, auditor._fn_counts, auditor._tn_counts
    n_in, n_out = fn[-1], tn[-1]
    level = ALPHA / thresholds.size / 2
    _, fnr_hi = clopper_pearson(fn, n_in, level)
    _, fpr_hi = clopper_pearson(n_out - tn, n_out, level)
    tpr, fpr = true_rates(family, param, thresholds)
    return bool(np.any((fnr_hi < 1.0 - tpr) | (fpr_hi < fpr)))


def pair_miss(s_in, s_out, thresholds, level: float, family: str, param: float) -> bool:
    """Whether the certified pair misses a true rate at one of ``thresholds``."""
    k_in = s_in.size - np.searchsorted(np.sort(s_in), thresholds, side="right")
    k_out = s_out.size - np.searchsorted(np.sort(s_out), thresholds, side="right")
    p_lo, q_hi = one_sided_pair(k_in, s_in.size, k_out, s_out.size, level)
    tpr, fpr = true_rates(family, param, thresholds)
    return bool(np.any((p_lo > tpr) | (q_hi < fpr)))


def one_seed(family: str, param: float, delta: float, n: int, seed: int) -> tuple:
    """The four bounds and three coverage misses of one seed."""
    rng = np.random.default_rng(seed)
    s_in, s_out = draw(family, param, n, rng)
    split = many_run_bound(s_in, s_out, delta=delta, confidence=CONFIDENCE, seed=seed)
    bonf = many_run_bound(s_in, s_out, delta=delta, confidence=CONFIDENCE, select_fraction=0.0)
    auditor = auditing.CanaryScoreAuditor(s_in, s_out)
    jp_bonf = auditor.epsilon_clopper_pearson(ALPHA, delta, one_sided=False)
    jp_split = auditor.epsilon_clopper_pearson(
        ALPHA, delta, one_sided=False, threshold_strategy=auditing.Split(0.25, seed=seed)
    )
    p_lo, q_hi = split.tpr_lower, split.fpr_upper
    tpr, fpr = true_rates(family, param, split.threshold)
    split_miss = bool(p_lo > tpr or q_hi < fpr)
    every = np.concatenate([[-np.inf], np.unique(np.concatenate([s_in, s_out]))])
    bonf_miss = pair_miss(s_in, s_out, every, 1 - ALPHA / every.size, family, param)
    misses = (split_miss, bonf_miss, hull_miss(auditor, family, param), None)
    return (split.epsilon, bonf.epsilon, jp_bonf, jp_split), misses


def rate(count: int, seeds: int) -> dict:
    """A rate with its two-sided 95 % Clopper–Pearson interval."""
    lo, _ = clopper_pearson(count, seeds, 0.025)
    _, hi = clopper_pearson(count, seeds, 0.025)
    return {"count": count, "rate": count / seeds, "ci": [float(lo), float(hi)]}


def run_case(case: tuple, seeds: int) -> dict:
    """Exceedance and coverage-miss rates of one case over ``seeds`` seeds."""
    family, param, delta, n = case
    eps_true = truth(family, param, delta)
    exceed, miss, mean = np.zeros(4, int), np.zeros(4, int), np.zeros(4)
    for seed in range(seeds):
        bounds, misses = one_seed(family, param, delta, n, seed)
        exceed += np.asarray(bounds) > eps_true + 1e-9
        miss += [bool(m) for m in misses]
        mean += bounds
    out = {"case": list(case), "truth": eps_true, "seeds": seeds}
    for i, name in enumerate(METHODS):
        out[name] = {"exceed": rate(int(exceed[i]), seeds), "mean": mean[i] / seeds}
        if i < 3:
            out[name]["coverage_miss"] = rate(int(miss[i]), seeds)
    return out


def show(row: dict) -> None:
    """Print one case."""
    family, param, delta, n = row["case"]
    print(f"{family} {param:g}, delta {delta:g}, {n} per group: truth {row['truth']:.4f}")
    for name in METHODS:
        r = row[name]
        e = r["exceed"]
        text = f"  {name:32s} mean {r['mean']:.3f}  exceeds {e['count']:4d} = {e['rate']:.4f}"
        text += f" [{e['ci'][0]:.4f}, {e['ci'][1]:.4f}]"
        if "coverage_miss" in r:
            m = r["coverage_miss"]
            text += f"  coverage misses {m['rate']:.4f} [{m['ci'][0]:.4f}, {m['ci'][1]:.4f}]"
        print(text, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for case in CASES:
        wall, cpu = time.perf_counter(), time.process_time()
        rows.append(run_case(case, args.seeds))
        show(rows[-1])
        print(f"  ({time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU)")
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
