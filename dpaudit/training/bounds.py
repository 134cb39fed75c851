r"""Certified lower bounds from canary scores: many training runs, or one.

**Many runs** (Jagielski et al. 2020; Nasr et al. 2021, 2023). Runs *with* the canary
give scores drawn from ``P``, runs *without* it scores from ``Q``; the test
"guess *in* when the score exceeds ``t``" has true-positive rate ``TPR = P(s > t)`` and
false-positive rate ``FPR = Q(s > t)``. The runs are split once, at random, into a
*selection* part and a *certification* part: ``t`` (and which of the two
(epsilon, delta) lines it is read on) is chosen on the selection part only, and the
certification part gives one-sided Clopper–Pearson bounds ``TPR >= p_lo`` and
``FPR <= q_hi`` that hold together with probability ``>= confidence`` (``alpha / 2``
each). Never the best of many thresholds on the certification scores. Then

* ``(epsilon, delta)``-DP requires ``TPR <= e^epsilon FPR + delta`` and
  ``1 - FPR <= e^epsilon (1 - TPR) + delta``, so
  ``epsilon >= max(log((p_lo - delta) / q_hi), log((1 - q_hi - delta) / (1 - p_lo)))``;
* mu-GDP requires ``1 - TPR >= G_mu(FPR)``, so ``mu >= Phi^{-1}(p_lo) - Phi^{-1}(q_hi)``
  (:func:`dpaudit.accounting.conversions.gdp_mu_for_point`);
* *under the assumption* that the mechanism's trade-off curve is a Gaussian one
  (``G_mu`` for some ``mu``: exact for full-batch DP-SGD with a gradient canary, the
  approximation of Nasr et al. 2023 otherwise), the certified ``mu`` implies
  ``epsilon(delta) >= epsilon_mu(delta)``; that figure is reported separately and
  labelled with its assumption, and never decides a verdict.

**One run** (Steinke, Nasr & Jagielski 2023, "Privacy auditing with one (1) training
run", Thm 3.1 / Prop 5.2). ``m`` canaries are each included independently with
probability 1/2; after training, the auditor guesses *in* for the ``k_plus`` highest
scores and *out* for the ``k_minus`` lowest (both counts fixed before the scores are
seen) and abstains on the rest. If the training is ``(epsilon, delta)``-DP, the number
``W`` of correct guesses among ``r = k_plus + k_minus`` satisfies
``P(W >= v) <= beta + 2 m delta alpha_v`` with ``beta = P(Bin(r, e^eps/(1+e^eps)) >= v)``
and ``alpha_v = max_{1<=i<=v} (P(Bin(r, .) >= v - i) - beta) / i``. The certified
epsilon is the largest epsilon whose p-value is still ``<= 1 - confidence``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.special

from dpaudit.accounting.conversions import gdp_epsilon, gdp_mu_for_point
from dpaudit.estimation.bounds import clopper_pearson, one_sided_pair

__all__ = [
    "MANY_RUN_ASSUMPTIONS",
    "ONE_RUN_ASSUMPTIONS",
    "ManyRunBound",
    "OneRunBound",
    "check_scores",
    "many_run_bound",
    "many_run_p_value",
    "one_run_bound",
    "one_run_epsilon",
    "one_run_mu",
    "one_run_p_value",
    "profile_excess",
]

#: What a many-run bound assumes (stated in every :class:`ManyRunBound`).
MANY_RUN_ASSUMPTIONS = (
    "the training runs are independent, each with or without the canary as labelled",
    "the score of a run depends on its released state only (post-processing)",
    "the threshold and its side were chosen on the selection runs only",
)
#: The third many-run assumption with ``select_fraction = 0`` (no selection runs).
BONFERRONI_ASSUMPTION = (
    "every threshold and side was tried on all runs, the confidence shared among them (Bonferroni)"
)
#: The extra assumption of :attr:`ManyRunBound.epsilon_gdp_shape`.
GDP_SHAPE_ASSUMPTION = (
    "epsilon_gdp_shape assumes the trade-off curve of the audited pair is Gaussian "
    "(G_mu for some mu); it is not a certified bound otherwise and decides no verdict"
)
#: What a one-run bound assumes (stated in every :class:`OneRunBound`).
ONE_RUN_ASSUMPTIONS = (
    "each canary was included independently with probability 1/2 (the inclusion draw "
    "is independent of everything else)",
    "the scores depend on the released state only (post-processing)",
    "k_plus and k_minus were fixed before the scores were seen",
)
# Searches over epsilon stop here (e^60: no audit with fewer than 1e26 canaries resolves more).
_MAX_EPSILON = 60.0
# Searches over the GDP mu stop here.
_MAX_MU = 64.0
# The smallest p-value reported (Clopper-Pearson quantiles lose accuracy far below it).
_P_FLOOR = 1e-30
# Epsilons at which a certified point is compared with a claimed privacy profile.
_PROFILE_POINTS = 256


def _check_confidence(confidence) -> float:
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}.")
    return float(confidence)


def _check_delta(delta) -> float:
    if not (isinstance(delta, float | int) and 0 <= delta < 1):
        raise ValueError(f"delta must be in [0, 1), got {delta!r}.")
    return float(delta)


def check_scores(name: str, scores) -> np.ndarray:
    """``scores`` as a flat float array: at least 2 of them, all finite (else one sentence)."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size < 2:
        raise ValueError(f"{name} needs at least 2 scores, got {s.size}.")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{name} holds non-finite scores; make the score function finite.")
    return s


@dataclasses.dataclass(frozen=True)
class ManyRunBound:
    """A certified lower bound from runs with and without a canary (frozen, JSON-able).

    Attributes:
        epsilon: certified lower bound on ``epsilon(delta)`` (``>= 0``).
        delta: the ``delta`` of :attr:`epsilon`.
        mu: certified lower bound on the GDP ``mu`` (``>= 0``).
        epsilon_gdp_shape: ``epsilon_mu(delta)`` at ``mu`` (valid under
            :data:`GDP_SHAPE_ASSUMPTION` only).
        confidence: all three certified figures hold together with this probability.
        threshold: the score threshold chosen on the selection runs.
        side: ``"tpr"`` (read on ``TPR <= e^eps FPR + delta``) or ``"tnr"`` (the other line).
        tpr_lower: the Clopper–Pearson lower bound on ``P(score > threshold)``.
        fpr_upper: the Clopper–Pearson upper bound on ``Q(score > threshold)``.
        counts: ``(k_in, n_in, k_out, n_out)`` of the certification runs.
        selection_runs: ``(n_in, n_out)`` runs used to choose the threshold (``(0, 0)``
            with ``select_fraction = 0``: every run certifies, Bonferroni over thresholds).
        thresholds_tested: how many thresholds the confidence was shared among (Bonferroni;
            ``1`` with a selection split).
        profile_excess: with a claimed privacy profile ``delta(epsilon)``, the largest
            certified ``delta`` in excess of it over an epsilon grid (``> 0``: the profile
            is violated); ``None`` without one.
        assumptions: what the bounds assume.
    """

    epsilon: float
    delta: float
    mu: float
    epsilon_gdp_shape: float
    confidence: float
    threshold: float
    side: str
    tpr_lower: float
    fpr_upper: float
    counts: tuple[int, int, int, int]
    selection_runs: tuple[int, int]
    thresholds_tested: int = 1
    profile_excess: float | None = None
    assumptions: tuple[str, ...] = (*MANY_RUN_ASSUMPTIONS, GDP_SHAPE_ASSUMPTION)

    @property
    def brief(self) -> str:
        """The assumptions in a few words (the CLI's line; :attr:`assumptions` in full)."""
        how = (
            "threshold chosen on the selection runs"
            if self.thresholds_tested == 1
            else "Bonferroni over all thresholds"
        )
        return f"independent runs, scores read only the released state, {how}"

    def to_dict(self) -> dict:
        """The record as JSON-able builtins."""
        out = dataclasses.asdict(self)
        out["counts"], out["selection_runs"] = list(self.counts), list(self.selection_runs)
        out["assumptions"] = list(self.assumptions)
        return out


def _lines(p_lo, q_hi, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The epsilon certified on each (epsilon, delta) line (0 where nothing is)."""
    p_lo, q_hi = np.asarray(p_lo, dtype=float), np.asarray(q_hi, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = np.log(np.maximum(p_lo - delta, 1e-300)) - np.log(q_hi)
        tnr = np.log(np.maximum(1.0 - q_hi - delta, 1e-300)) - np.log(1.0 - p_lo)
    tpr = np.where((p_lo > delta) & (q_hi > 0), tpr, np.where(p_lo > delta, np.inf, 0.0))
    tnr = np.where((1.0 - q_hi > delta) & (p_lo < 1), tnr, np.where(1 - q_hi > delta, np.inf, 0.0))
    return np.maximum(tpr, 0.0), np.maximum(tnr, 0.0)


def profile_excess(p_lo, q_hi, profile) -> np.ndarray:
    """The largest certified delta above a claimed profile, per point ``(p_lo, q_hi)``.

    ``max_e max(p_lo - e^e q_hi, 1 - q_hi - e^e (1 - p_lo)) - profile(e)`` over ``e`` on a
    grid from 0 to the largest log ratio the point supports (both lines of the profile).

    Args:
        p_lo: lower bound(s) on the true-positive rate.
        q_hi: upper bound(s) on the false-positive rate.
        profile: the claimed ``delta(epsilon)`` (vectorised; an upper curve).

    Returns:
        The excess per point (``> 0``: the claimed profile is violated).
    """
    p_lo, q_hi = np.broadcast_arrays(np.asarray(p_lo, float), np.asarray(q_hi, float))
    tpr, tnr = _lines(p_lo, q_hi, 0.0)
    top = np.minimum(np.maximum(np.max(np.maximum(tpr, tnr), initial=0.0), 1e-6), _MAX_EPSILON)
    grid = np.linspace(0.0, top, _PROFILE_POINTS)
    claimed = np.asarray(profile(grid), dtype=float)
    e = np.exp(grid)[:, None]
    first = p_lo.ravel()[None] - e * q_hi.ravel()[None]
    second = 1.0 - q_hi.ravel()[None] - e * (1.0 - p_lo.ravel()[None])
    excess = np.maximum(first, second) - claimed[:, None]
    return np.max(excess, axis=0).reshape(p_lo.shape)


def _objective(p_lo, q_hi, delta: float, target: str, profile=None):
    """Per threshold: the selection objective and the side (0 = tpr, 1 = tnr)."""
    tpr, tnr = _lines(p_lo, q_hi, delta)
    if target == "profile":
        return profile_excess(p_lo, q_hi, profile), (tnr > tpr).astype(int)
    if target == "mu":
        mu = gdp_mu_for_point(q_hi, 1.0 - p_lo)
        return np.where(np.isfinite(mu), mu, 1e300), (tnr > tpr).astype(int)
    both = np.stack([tpr, tnr])
    return np.minimum(both.max(axis=0), 1e300), both.argmax(axis=0)


def _split(scores: np.ndarray, fraction: float, rng) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(scores.size)
    cut = min(max(round(fraction * scores.size), 1), scores.size - 1)
    return scores[order[:cut]], scores[order[cut:]]


def _select(sel_in, sel_out, sizes, delta, confidence, target, profile) -> tuple[float, int]:
    """The threshold (a selection score, or -inf) and side that maximise the objective.

    The objective is the bound the certification runs (``sizes``) would give if their
    rates were the selection rates (Clopper–Pearson on expected counts: planning only).
    """
    thresholds = np.concatenate([[-np.inf], np.unique(np.concatenate([sel_in, sel_out]))])
    k_in = sel_in.size - np.searchsorted(np.sort(sel_in), thresholds, side="right")
    k_out = sel_out.size - np.searchsorted(np.sort(sel_out), thresholds, side="right")
    n_in, n_out = sizes
    p_lo, q_hi = one_sided_pair(
        k_in * n_in / sel_in.size, n_in, k_out * n_out / sel_out.size, n_out, confidence
    )
    value, side = _objective(p_lo, q_hi, delta, target, profile)
    best = int(np.argmax(value))
    return float(thresholds[best]), int(side[best])


def _bonferroni(s_in, s_out, delta, confidence, target, profile) -> tuple[float, int, int]:
    """The best threshold and side over every threshold, each at ``alpha / (thresholds)``."""
    thresholds = np.concatenate([[-np.inf], np.unique(np.concatenate([s_in, s_out]))])
    k_in = s_in.size - np.searchsorted(np.sort(s_in), thresholds, side="right")
    k_out = s_out.size - np.searchsorted(np.sort(s_out), thresholds, side="right")
    level = 1.0 - (1.0 - confidence) / thresholds.size
    p_lo, q_hi = one_sided_pair(k_in, s_in.size, k_out, s_out.size, level)
    value, side = _objective(p_lo, q_hi, delta, target, profile)
    best = int(np.argmax(value))
    return float(thresholds[best]), int(side[best]), int(thresholds.size)


# fmt: off
def many_run_bound(
    scores_in, scores_out, *, delta: float, confidence: float = 0.95,
    select_fraction: float = 0.25, target: str = "epsilon", seed: int = 0, profile=None,
) -> ManyRunBound:
    """Certified lower bounds on epsilon(delta) and mu from runs with and without a canary.

    Higher scores must mean "the canary was in". The runs of each group are split once
    at random (``seed``): ``select_fraction`` of them choose the threshold, the rest
    certify it.

    Args:
        scores_in: one score per run trained with the canary.
        scores_out: one score per run trained without it.
        delta: the delta of the epsilon bound, in ``[0, 1)``.
        confidence: joint confidence of the certified figures, in ``(0, 1)``.
        select_fraction: fraction of each group used to choose the threshold, in ``[0, 1)``;
            ``0``: no split, every threshold is tried on all runs with the confidence shared
            among them (Bonferroni, as jax-privacy's ``CanaryScoreAuditor`` does by default).
        target: what the threshold maximises: ``"epsilon"`` (at ``delta``), ``"mu"``, or
            ``"profile"`` (the excess over ``profile``).
        seed: seed of the selection/certification split.
        profile: a claimed privacy profile ``delta(epsilon)`` (vectorised upper curve); its
            certified excess is reported (required for ``target="profile"``).

    Returns:
        A :class:`ManyRunBound`.

    Raises:
        ValueError: for fewer than 2 scores per group, non-finite scores, or an argument
            outside its range.
    """
    # fmt: on
    s_in, s_out = check_scores("scores_in", scores_in), check_scores("scores_out", scores_out)
    delta, confidence = _check_delta(delta), _check_confidence(confidence)
    if not 0 <= select_fraction < 1:
        raise ValueError(f"select_fraction must be in [0, 1), got {select_fraction!r}.")
    if target not in ("epsilon", "mu", "profile"):
        raise ValueError(f"target must be 'epsilon', 'mu' or 'profile', got {target!r}.")
    if target == "profile" and not callable(profile):
        raise ValueError("target='profile' needs profile, a callable delta(epsilon).")
    if select_fraction == 0:
        cert_in, cert_out, selection = s_in, s_out, (0, 0)
        threshold, side, tested = _bonferroni(s_in, s_out, delta, confidence, target, profile)
        assumptions = (*MANY_RUN_ASSUMPTIONS[:2], BONFERRONI_ASSUMPTION, GDP_SHAPE_ASSUMPTION)
    else:
        rng = np.random.default_rng(seed)
        sel_in, cert_in = _split(s_in, select_fraction, rng)
        sel_out, cert_out = _split(s_out, select_fraction, rng)
        sizes = (cert_in.size, cert_out.size)
        threshold, side = _select(sel_in, sel_out, sizes, delta, confidence, target, profile)
        selection, tested = (int(sel_in.size), int(sel_out.size)), 1
        assumptions = (*MANY_RUN_ASSUMPTIONS, GDP_SHAPE_ASSUMPTION)
    k_in, k_out = int(np.sum(cert_in > threshold)), int(np.sum(cert_out > threshold))
    level = 1.0 - (1.0 - confidence) / tested
    p_lo, q_hi = one_sided_pair(k_in, cert_in.size, k_out, cert_out.size, level)
    p_lo, q_hi = float(p_lo), float(q_hi)
    tpr, tnr = _lines(p_lo, q_hi, delta)
    epsilon = float(tnr if side else tpr)
    mu = float(gdp_mu_for_point(q_hi, 1.0 - p_lo))
    return ManyRunBound(
        epsilon=epsilon,
        delta=delta,
        mu=mu,
        epsilon_gdp_shape=gdp_epsilon(delta, mu) if 0 < mu < math.inf and delta > 0 else 0.0,
        confidence=confidence,
        threshold=threshold,
        side=("tpr", "tnr")[side],
        tpr_lower=p_lo,
        fpr_upper=q_hi,
        counts=(k_in, int(cert_in.size), k_out, int(cert_out.size)),
        selection_runs=selection,
        thresholds_tested=tested,
        profile_excess=None if profile is None else float(profile_excess(p_lo, q_hi, profile)),
        assumptions=assumptions,
    )


def many_run_p_value(counts, rejects, significance: float) -> float:
    """The smallest level at which the certification counts still refute a claim.

    The threshold and its side were fixed on the selection runs, so only the
    Clopper–Pearson level varies: ``rejects(p_lo, q_hi)`` is monotone in the level, and
    the p-value is the smallest ``alpha`` (to a factor ``1.001``, rounded up) at which the
    pair of bounds at ``alpha / 2`` each still rejects.

    Args:
        counts: ``(k_in, n_in, k_out, n_out)`` of the certification runs.
        rejects: ``rejects(p_lo, q_hi) -> bool``, whether the pair refutes the claim.
        significance: the audit's ``1 - confidence`` (at which it rejects).

    Returns:
        The p-value (``significance`` when the claim is not rejected even there).
    """
    k_in, n_in, k_out, n_out = counts

    def rejected(alpha: float) -> bool:
        p_lo, _ = clopper_pearson(k_in, n_in, alpha / 2)
        _, q_hi = clopper_pearson(k_out, n_out, alpha / 2)
        return bool(rejects(float(p_lo), float(q_hi)))

    if not rejected(significance):
        return float(significance)
    lo, hi = math.log(_P_FLOOR), math.log(significance)  # rejected at e^hi, maybe not at e^lo
    if rejected(_P_FLOOR):
        return _P_FLOOR
    while hi - lo > 1e-3:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if rejected(math.exp(mid)) else (mid, hi)
    return float(math.exp(hi))


def epsilon_on_side(p_lo: float, q_hi: float, delta: float, side: str) -> float:
    """The epsilon a pair of rate bounds certifies on one ``(epsilon, delta)`` line.

    Args:
        p_lo: lower bound on the true-positive rate.
        q_hi: upper bound on the false-positive rate.
        delta: the delta.
        side: ``"tpr"`` or ``"tnr"`` (:attr:`ManyRunBound.side`).

    Returns:
        The certified epsilon (``>= 0``).
    """
    tpr, tnr = _lines(p_lo, q_hi, delta)
    return float(tnr if side == "tnr" else tpr)


def one_run_p_value(m: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """Upper bound on ``P(W >= correct)`` under ``(epsilon, delta)``-DP (one-run audit).

    Args:
        m: the number of canaries (each included with probability 1/2).
        guesses: ``r``, the number of canaries guessed (the others abstained on).
        correct: ``v``, how many guesses were right.
        epsilon: the null hypothesis' epsilon (``>= 0``).
        delta: the null hypothesis' delta.

    Returns:
        ``min(1, beta + 2 m delta alpha_v)`` (Steinke, Nasr & Jagielski 2023, Thm 3.1).
    """
    import scipy.stats

    p = scipy.special.expit(epsilon)
    beta = float(scipy.stats.binom.sf(correct - 1, guesses, p))
    if delta == 0 or correct <= 0:
        return min(beta, 1.0)
    i = np.arange(1, correct + 1)
    tails = scipy.stats.binom.sf(correct - i - 1, guesses, p) - beta
    alpha = float(np.max(tails / i, initial=0.0))
    return min(beta + 2.0 * m * delta * alpha, 1.0)


def one_run_epsilon(m: int, guesses: int, correct: int, *, delta: float, confidence: float) -> float:
    """The largest epsilon an observed one-run guess count rejects at ``confidence``.

    Args:
        m: the number of canaries.
        guesses: the number of guesses ``r`` (``<= m``).
        correct: correct guesses ``v`` (``<= r``).
        delta: the delta of the bound, in ``[0, 1)``.
        confidence: ``1 - significance``, in ``(0, 1)``.

    Returns:
        The certified lower bound on epsilon (``0`` when even ``epsilon = 0`` is not rejected).

    Raises:
        ValueError: for counts that are not ``0 <= correct <= guesses <= m`` or an argument
            outside its range.
    """
    import scipy.optimize

    delta, confidence = _check_delta(delta), _check_confidence(confidence)
    if not (0 <= correct <= guesses <= m):
        raise ValueError("one_run_epsilon needs 0 <= correct <= guesses <= m.")
    significance = 1.0 - confidence

    def rejected(eps: float) -> float:
        return significance - one_run_p_value(m, guesses, correct, eps, delta)

    if rejected(0.0) <= 0:
        return 0.0
    if rejected(_MAX_EPSILON) > 0:
        return _MAX_EPSILON
    root = scipy.optimize.brentq(rejected, 0.0, _MAX_EPSILON, xtol=1e-9)
    while rejected(root) <= 0 and root > 0:  # return an epsilon that is really rejected
        root = max(root - 1e-9, 0.0)
    return float(root)


@dataclasses.dataclass(frozen=True)
class OneRunBound:
    """A certified lower bound from one training run with randomly included canaries.

    Attributes:
        epsilon: certified lower bound on ``epsilon(delta)``.
        delta: the delta of the bound.
        confidence: the bound holds with this probability.
        canaries: ``m``.
        guesses: ``r = k_plus + k_minus``.
        correct: ``v``.
        k_plus: guesses *in* (the highest scores).
        k_minus: guesses *out* (the lowest scores).
        mu: certified lower bound on the GDP ``mu`` from the same guesses
            (:func:`one_run_mu`; both hold at ``confidence`` each).
        assumptions: what the bound assumes.
    """

    epsilon: float
    delta: float
    confidence: float
    canaries: int
    guesses: int
    correct: int
    k_plus: int
    k_minus: int
    mu: float = 0.0
    assumptions: tuple[str, ...] = ONE_RUN_ASSUMPTIONS

    @property
    def brief(self) -> str:
        """The assumptions in a few words (the CLI's line; :attr:`assumptions` in full)."""
        return (
            "fair independent inclusion coins, scores read only the released state, "
            "guess counts fixed in advance"
        )

    def to_dict(self) -> dict:
        """The record as JSON-able builtins."""
        out = dataclasses.asdict(self)
        out["assumptions"] = list(self.assumptions)
        return out


# fmt: off
def one_run_bound(
    scores, included, *, k_plus: int, k_minus: int = 0, delta: float, confidence: float = 0.95,
) -> OneRunBound:
    """The one-run audit (Steinke, Nasr & Jagielski 2023) of canary scores from one training.

    Args:
        scores: one score per canary (higher = more likely included).
        included: the canaries' inclusion draws (booleans, each a fair coin).
        k_plus: how many of the highest scores are guessed *in*.
        k_minus: how many of the lowest scores are guessed *out*.
        delta: the delta of the bound, in ``[0, 1)``.
        confidence: the confidence of the bound, in ``(0, 1)``.

    Returns:
        A :class:`OneRunBound`.

    Raises:
        ValueError: for non-finite scores, mismatched lengths, or ``k_plus + k_minus``
            not in ``[1, m]``.
    """
    # fmt: on
    s = check_scores("scores", scores)
    inc = np.asarray(included).ravel()
    if inc.shape != s.shape or inc.dtype != bool:
        raise ValueError("included must be booleans, one per score.")
    k_plus, k_minus = int(k_plus), int(k_minus)
    if k_plus < 0 or k_minus < 0 or not 1 <= k_plus + k_minus <= s.size:
        raise ValueError(f"k_plus + k_minus must lie in [1, {s.size}], got {k_plus + k_minus}.")
    order = np.argsort(s, kind="stable")
    right = int(np.sum(inc[order[s.size - k_plus :]])) if k_plus else 0
    right += int(np.sum(~inc[order[:k_minus]]))
    guesses = k_plus + k_minus
    eps = one_run_epsilon(s.size, guesses, right, delta=delta, confidence=confidence)
    mu = one_run_mu(s.size, guesses, right, confidence=confidence)
    return OneRunBound(
        eps, float(delta), float(confidence), s.size, guesses, right, k_plus, k_minus, mu
    )


def _gdp_one_run_rejects(mu: float, m: int, guesses: int, correct: int, significance: float) -> bool:
    """Whether ``correct`` right out of ``guesses`` rejects mu-GDP (Mahloujifar et al. 2024).

    The recursion bounds, under a trade-off function ``f = G_mu``, the largest expected
    mass of right and wrong guesses an adversary can reach while the probability of
    ``correct`` right guesses stays ``>= significance``; the claim is rejected when even
    that falls short of the ``guesses / m`` guessing rate. ``G_mu``'s inverse blow-up is
    ``x -> Phi(Phi^{-1}(x) - mu)``.
    """
    right = significance * correct / m
    wrong = significance * (guesses - correct) / m
    for i in range(correct - 1, -1, -1):
        wrong_next = max(wrong, float(scipy.special.ndtr(scipy.special.ndtri(right) - mu)))
        if wrong_next == wrong:
            break
        right = min(right + i / (guesses - i) * (wrong_next - wrong), 1.0)
        wrong = wrong_next
    return right + wrong - guesses / m > 0


def one_run_mu(m: int, guesses: int, correct: int, *, confidence: float) -> float:
    """Certified lower bound on the GDP ``mu`` from one run (the f-DP one-run audit).

    Mahloujifar, Melis & Chaudhuri (2024), "Auditing f-differential privacy in one run",
    with ``f = G_mu``: the largest ``mu`` (to ``1e-6``) whose claim the guess counts reject
    at ``1 - confidence``; same assumptions as :func:`one_run_bound`.

    Args:
        m: the number of canaries.
        guesses: the number of guesses ``r``.
        correct: correct guesses ``v``.
        confidence: the confidence, in ``(0, 1)``.

    Returns:
        The certified ``mu`` (``0`` when nothing is rejected).

    Raises:
        ValueError: for counts that are not ``0 <= correct <= guesses <= m`` (``guesses >= 1``)
            or a confidence outside ``(0, 1)``.
    """
    confidence = _check_confidence(confidence)
    if not (0 <= correct <= guesses <= m and guesses >= 1):
        raise ValueError("one_run_mu needs 0 <= correct <= guesses <= m and guesses >= 1.")
    significance = 1.0 - confidence
    if not _gdp_one_run_rejects(0.0, m, guesses, correct, significance):
        return 0.0
    lo, hi = 0.0, 1.0
    while _gdp_one_run_rejects(hi, m, guesses, correct, significance) and hi < _MAX_MU:
        lo, hi = hi, 2.0 * hi
    while hi - lo > 1e-6:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _gdp_one_run_rejects(mid, m, guesses, correct, significance) else (lo, mid)
    return lo
