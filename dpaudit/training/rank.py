r"""A many-run bound through the whole ROC curve: a rank test under a Gaussian ROC.

A threshold test certifies one point of the canary score's ROC curve, and at the
1000 runs of a typical audit its two Clopper–Pearson intervals cost most of the
distance to the true curve. If the score's ROC curve *is* a Gaussian one (binormal
with equal variances: some increasing map ``h`` sends the scores without the canary to
``N(0, 1)`` and those with it to ``N(mu_s, 1)``), every run speaks about the one
parameter ``mu_s``, and a rank test uses them all:

* the statistic is the van der Waerden sum ``S = sum_{i in} Phi^{-1}(R_i / (N + 1))`` of
  the pooled ranks ``R_i`` of the runs with the canary (fixed in advance: nothing is
  chosen on the scores). Ranks do not see ``h``, so under ``mu_s = m`` the law of ``S`` is
  that of ``n`` draws of ``N(0, 1)`` against ``k`` draws of ``N(m, 1)``;
* ``B`` such simulated data sets, drawn once (common random numbers, seeded), give the
  Monte Carlo p-value ``(1 + #{S_b(m) >= S}) / (B + 1)``, exactly valid at each ``m``
  (the observed and simulated statistics are exchangeable when ``mu_s = m``); each
  ``S_b(m)`` is non-decreasing in ``m``, so the p-value is too;
* the certified ``mu`` is the largest ``m`` (bisection, to ``1e-4``) still rejected at
  ``1 - confidence``: it exceeds ``mu_s`` only if ``mu_s`` itself was rejected, which
  has probability ``<= 1 - confidence``.

What it certifies: the mechanism's trade-off curve lies below the score's ROC curve
``G_{mu_s}`` (any score is a test), so below ``G_mu``; the mechanism is not mu'-GDP for
any ``mu' < mu`` and not ``(epsilon, delta)``-DP for ``epsilon < epsilon_mu(delta)``
at any delta, with no tail to resolve. The price is the assumption, stated in the
record: it is exact for Gaussian scores, close for the summed log-likelihood ratio of
many DP-SGD steps (a sum of many independent terms), and wrong for scores whose ROC
curve bends otherwise, where the figure is not certified.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.special

from dpaudit.accounting.conversions import gdp_epsilon
from dpaudit.training.bounds import check_scores

__all__ = ["RANK_ASSUMPTIONS", "RankBound", "rank_bound"]

#: What a rank bound assumes (stated in every :class:`RankBound`).
RANK_ASSUMPTIONS = (
    "the training runs are independent, each with or without the canary as labelled",
    "the score of a run depends on its released state only (post-processing)",
    "the canary score's ROC curve is a Gaussian one (binormal with equal variances: an "
    "increasing map sends the scores without the canary to N(0, 1) and with it to "
    "N(mu_s, 1)); with ties or another ROC shape the figures are not certified",
)
# Searches over mu stop here.
_MAX_MU = 64.0
# Bisection tolerance on mu (the reported mu is the lower end: rejected).
_MU_TOLERANCE = 1e-4
# Gap between simulated rows laid end to end: standard normal draws (|z| < 40 in float64)
# shifted by at most _MAX_MU stay inside their row's span.
_ROW_GAP = 4.0 * (40.0 + _MAX_MU)


@dataclasses.dataclass(frozen=True)
class RankBound:
    """A lower bound on mu and epsilon(delta) from a rank test of all runs (frozen).

    Attributes:
        mu: certified lower bound on the GDP ``mu`` (under :attr:`assumptions`).
        epsilon: ``epsilon_mu(delta)``: the mechanism is not ``(epsilon', delta)``-DP for
            any smaller ``epsilon'`` (under the same assumptions).
        delta: the delta of :attr:`epsilon`.
        confidence: the bound holds with this probability.
        statistic: the observed van der Waerden statistic.
        simulations: ``B``, the Monte Carlo data sets of the p-values.
        runs: ``(with canary, without)``.
        assumptions: what the bound assumes.
    """

    mu: float
    epsilon: float
    delta: float
    confidence: float
    statistic: float
    simulations: int
    runs: tuple[int, int]
    assumptions: tuple[str, ...] = RANK_ASSUMPTIONS

    def to_dict(self) -> dict:
        """The record as JSON-able builtins."""
        out = dataclasses.asdict(self)
        out["runs"], out["assumptions"] = list(self.runs), list(self.assumptions)
        return out


class _Simulations:
    """``B`` simulated data sets (common random numbers): ``N(0, 1)`` out-runs, in-runs shifted.

    An in-run's pooled rank is its rank among the in-runs (shift-free: both groups are
    kept sorted, the statistic is a sum) plus the out-runs below it: one ``searchsorted``
    of sorted queries over the rows laid end to end (each row offset by :data:`_ROW_GAP`
    so that the flat arrays stay sorted).
    """

    def __init__(self, rng, simulations: int, n: int, k: int):
        z_out = np.sort(rng.standard_normal((simulations, n)), axis=1)
        self._z_in = np.sort(rng.standard_normal((simulations, k)), axis=1)
        self._own = np.arange(1, k + 1)
        self._offset = _ROW_GAP * np.arange(simulations)[:, None]
        self._flat = (z_out + self._offset).ravel()
        self._below_offset = n * np.arange(simulations)[:, None]
        self._scores = scipy.special.ndtri(np.arange(n + k + 1) / (n + k + 1.0))  # by rank

    def statistics(self, shift: float) -> np.ndarray:
        """The van der Waerden statistic of each simulated data set at ``mu_s = shift``."""
        shifted = np.minimum(self._z_in + shift, 0.5 * _ROW_GAP) + self._offset
        below = np.searchsorted(self._flat, shifted.ravel()).reshape(shifted.shape)
        ranks = self._own + below - self._below_offset
        return np.sum(self._scores[ranks], axis=1)


# fmt: off
def rank_bound(
    scores_in, scores_out, *, delta: float, confidence: float = 0.95,
    simulations: int = 999, seed: int = 0,
) -> RankBound:
    """Certified lower bounds on mu and epsilon(delta) under a Gaussian ROC (module docstring).

    Args:
        scores_in: one score per run trained with the canary (higher: canary in).
        scores_out: one score per run trained without it.
        delta: the delta of the epsilon bound, in ``[0, 1)`` (at ``0`` any ``mu > 0``
            certifies ``epsilon = inf``).
        confidence: the confidence, in ``(0, 1)``; ``simulations + 1`` must be at least
            ``1 / (1 - confidence)`` for anything to be rejected.
        simulations: ``B``, the simulated data sets of the Monte Carlo p-values (``>= 19``).
        seed: seed of the simulated data sets.

    Returns:
        A :class:`RankBound` (``mu = 0`` and ``epsilon = 0`` when even ``mu_s = 0`` is not
        rejected).

    Raises:
        ValueError: for fewer than 2 scores per group, non-finite scores, or an argument
            outside its range.
    """
    # fmt: on
    s_in, s_out = check_scores("scores_in", scores_in), check_scores("scores_out", scores_out)
    if not (isinstance(delta, float | int) and 0 <= delta < 1):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    if not (isinstance(simulations, int) and simulations >= 19):
        raise ValueError(f"simulations must be an integer >= 19, got {simulations!r}.")
    n, k = s_out.size, s_in.size
    import scipy.stats  # on use: loading the training engine does not need it (0.5 s CPU)

    ranks = scipy.stats.rankdata(np.concatenate([s_out, s_in]))[n:]
    observed = float(np.sum(scipy.special.ndtri(ranks / (n + k + 1.0))))
    simulated = _Simulations(np.random.default_rng(seed), simulations, n, k)
    significance = 1.0 - float(confidence)

    def rejected(shift: float) -> bool:
        exceed = int(np.sum(simulated.statistics(shift) >= observed))
        return (1 + exceed) / (simulations + 1) <= significance

    mu = _largest_rejected(rejected)
    epsilon = 0.0 if mu == 0 else math.inf if delta == 0 else gdp_epsilon(float(delta), mu)
    return RankBound(
        mu, epsilon, float(delta), float(confidence), observed, simulations, (k, n)
    )


def _largest_rejected(rejected) -> float:
    """The largest ``mu`` (to :data:`_MU_TOLERANCE`, rejected itself) of a monotone test."""
    if not rejected(0.0):
        return 0.0
    lo, hi = 0.0, 1.0
    while rejected(hi):
        if hi >= _MAX_MU:
            return _MAX_MU
        lo, hi = hi, 2.0 * hi
    while hi - lo > _MU_TOLERANCE:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if rejected(mid) else (lo, mid)
    return lo if math.isfinite(lo) else 0.0
