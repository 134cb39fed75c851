"""Choosing the event on the selection releases: candidates, the planning bound, the choice.

Events are ``S = {s > t}`` plus, at an atom of the statistic, the releases
with ``s = t`` kept with probability ``gamma`` (randomised ties: needed for
discrete releases such as sparse-vector outputs). Both directions are tried
(``s`` for ``D -> D'``, ``-s`` for ``D' -> D``), and each candidate is scored by
the bound it would certify with the certification sample size, from
pessimistic selection estimates. Selection only affects power: the chosen
event is certified on fresh releases, never on these.

Example:
    >>> import numpy as np
    >>> from dpaudit import Claim
    >>> s_d, s_dp = np.repeat([0.0, 1.0], [900, 100]), np.repeat([0.0, 1.0], [990, 10])
    >>> best = select_event([(s_d, s_dp)], 1000, 10_000, Claim(1.0), "epsilon", 0.05)
    >>> best.direction, best.threshold, best.gamma
    (0, 0.0, 0.0)
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from dpaudit.blackbox.result import SelectedEvent
from dpaudit.estimation.bounds import (
    CONDITIONAL_RATIO,
    PAIR,
    bound_method,
    clopper_pearson,
    conditional_ratio_lower,
)
from dpaudit.model.claims import Claim

__all__ = [
    "OBJECTIVES",
    "candidate_events",
    "plan_bound",
    "planned_margin",
    "resolve_objective",
    "select_event",
]

#: What the event selection maximises: the epsilon bound at the claimed delta, or the delta
#: bound at the claimed epsilon (``"auto"``: see :func:`resolve_objective`).
OBJECTIVES = ("auto", "epsilon", "delta")


# Every distinct value among the 400 largest scores is a candidate threshold: the extreme tail
# is where the best events of a privacy violation live, and it is resolved release by release.
_TOP_RANKS = 400
# Beyond the top ranks, thresholds at ranks growing by 3 %: about 270 more candidates for a
# million releases; neighbouring candidates differ by 3 % in tail probability (finer than the
# sampling noise of planning), few enough that the Bonferroni level of planning stays usable.
_RANK_GROWTH = 1.03
# Tie probabilities tried at atoms of the statistic, besides 0 and 1: a coarse grid suffices,
# the bound varies smoothly with gamma.
_GAMMAS = (0.25, 0.5, 0.75)
# Family-wise level of the pessimistic planning estimates, split (Bonferroni) over all
# candidates: one-sided one standard deviation (Phi(-1) = 0.16); planning needs a ranking robust
# to selection noise, not confidence. Certification does not use it.
_PLAN_ALPHA = 0.16
# Trust a reference model's importance-sampling estimate of Q(event) where Q was seen at least
# this often, only if it matches the count within this many standard errors plus this fraction.
_TRUST_MIN_COUNT = 30
_TRUST_SIGMAS = 4.0
_TRUST_RELATIVE = 0.1
# e^-u is clipped at u = -50 (weight e^50): the events where the estimate matters have u > 0.
_MIN_LOSS = -50.0


def resolve_objective(objective: str, claim: Claim) -> str:
    """``"auto"`` resolved: ``"epsilon"`` for a pure claim; kept ``"auto"`` for an approximate one.

    For an approximate claim, ``"auto"`` means: on the selection set, find the event
    with the best epsilon bound at the claimed delta and the event with the best delta
    bound at the claimed epsilon; certify the one with the larger planned violation
    margin, or the epsilon event when neither plans a violation (so a correct
    mechanism still gets its tightest epsilon lower bound, never "0, 0").

    Args:
        objective: one of :data:`OBJECTIVES`.
        claim: the claim audited.

    Returns:
        ``"epsilon"``, ``"delta"`` or ``"auto"`` (approximate claims only).
    """
    if objective == "auto" and claim.delta == 0:  # pure: the tightest epsilon bound
        return "epsilon"
    return objective


def plan_bound(k_p, k_q, n_sel, n_cert, claim: Claim, objective: str, alpha: float, level, q_is):
    """The bound an event would certify with ``n_cert`` releases, from selection counts.

    Planned with the bound certification will use (:func:`~dpaudit.estimation.bounds.bound_method`
    of the claim): the conditional ratio bound for a pure claim's epsilon objective, the
    Clopper–Pearson pair otherwise.

    Args:
        k_p, k_q: expected event counts among ``n_sel`` selection releases of ``P`` and ``Q``.
        n_sel: selection releases per dataset.
        n_cert: certification releases per dataset.
        claim: the claim audited.
        objective: ``"epsilon"`` or ``"delta"``.
        alpha: ``1 - confidence`` of the certified bound.
        level: the selection estimates are one-sided Clopper–Pearson bounds at this level
            (pessimistic for the event), then projected to ``n_cert``.
        q_is: importance-sampling estimates of ``Q(event)`` (NaN where none).

    Returns:
        The planned bounds (``-1`` for an epsilon bound where nothing would be certified).
    """
    method = bound_method(claim.delta)
    return _bound_of(
        _planned(k_p, k_q, n_sel, n_cert, alpha, level, q_is, method), claim, objective
    )


class _Planned(NamedTuple):
    """Planned certification bounds of the candidates, and the pessimistic estimates behind them.

    ``p_lo``, ``q_hi``: the Clopper–Pearson pair (``alpha / 2`` each) at the projected
    counts; ``ratio_lo``: the conditional ratio bound at ``alpha`` on them (``None`` unless
    planned for it); ``p_tilde``, ``q_tilde``: the pessimistic selection estimates.
    """

    p_lo: np.ndarray
    q_hi: np.ndarray
    ratio_lo: np.ndarray | None
    p_tilde: np.ndarray
    q_tilde: np.ndarray


def _planned(k_p, k_q, n_sel, n_cert, alpha, level, q_is, method: str = PAIR) -> _Planned:
    """Planned certification bounds of ``method`` and the pessimistic estimates behind them."""
    p_tilde, _ = clopper_pearson(k_p, n_sel, level)
    _, q_tilde = clopper_pearson(k_q, n_sel, level)
    # A reference model's importance-sampling estimate replaces an upper bound that only
    # says "unseen in n_sel draws" (planning only; certification counts fresh draws).
    q_tilde = np.where(np.isnan(q_is), q_tilde, np.minimum(q_tilde, np.maximum(q_is, k_q / n_sel)))
    p_lo, _ = clopper_pearson(p_tilde * n_cert, n_cert, alpha / 2)
    _, q_hi = clopper_pearson(q_tilde * n_cert, n_cert, alpha / 2)
    ratio_lo = None
    if method == CONDITIONAL_RATIO:  # the expected Poisson counts n_cert * (p, q)
        ratio_lo, _ = conditional_ratio_lower(p_tilde * n_cert, q_tilde * n_cert, 1.0 - alpha)
    return _Planned(p_lo, q_hi, ratio_lo, p_tilde, q_tilde)


def planned_margin(p, q, n_cert: int, claim: Claim) -> float:
    """The planned violation margin ``p - e^epsilon q - delta`` in standard errors of ``n_cert``.

    Scale-free, so an event chosen for the epsilon bound and one chosen for the delta
    bound can be compared: both certify a violation exactly when ``p - e^eps q > delta``
    (``log((p - delta)/q) > eps`` is the same inequality), and the one further from the
    boundary in standard errors is the likelier to be certified.

    Args:
        p: the planned probability of the event under ``P``.
        q: the same under ``Q``.
        n_cert: certification releases per dataset.
        claim: the claim audited.

    Returns:
        The margin (negative when no violation is planned).
    """
    e = math.exp(claim.epsilon)
    sd = math.sqrt((p * (1 - p) + e * e * q * (1 - q)) / n_cert)
    return (p - e * q - claim.delta) / max(sd, 1e-300)


def _thresholds(sp_asc: np.ndarray) -> np.ndarray:
    """Distinct values of the ascending ``sp_asc`` at the top ``_TOP_RANKS`` ranks, then
    geometric ranks (vectorised: the ranks are a fixed function of the size)."""
    sp = sp_asc[::-1]
    return np.unique(sp[_ranks(sp.size)])


@functools.lru_cache(maxsize=16)
def _ranks(n: int) -> np.ndarray:
    """Ranks ``0 .. _TOP_RANKS - 1``, then ``int(400 * 1.03^j)`` below ``n`` (as listed before)."""
    ranks = list(range(min(n, _TOP_RANKS)))
    r = float(_TOP_RANKS)
    while r < n:
        ranks.append(int(r))
        r *= _RANK_GROWTH
    out = np.asarray(ranks, dtype=int)
    out.flags.writeable = False
    return out


def _counts_above(sorted_s: np.ndarray, t: np.ndarray):
    """``#{s > t}`` and ``#{s = t}`` for each threshold, from ascending scores."""
    gt = sorted_s.size - np.searchsorted(sorted_s, t, side="right")
    ge = sorted_s.size - np.searchsorted(sorted_s, t, side="left")
    return gt.astype(float), (ge - gt).astype(float)


def _importance_weights(sp_asc: np.ndarray, t: np.ndarray):
    """``mean_P[1{s > t} e^-s]`` and ``mean_P[1{s = t} e^-s]`` from ascending ``P`` losses."""
    n = sp_asc.size
    with np.errstate(over="ignore"):
        w = np.where(sp_asc > _MIN_LOSS, np.exp(-np.maximum(sp_asc, _MIN_LOSS)), 0.0)
    # suffix[i] = sum_{j >= i} e^{-u_j} over the sorted P draws.
    suffix = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
    w_gt = suffix[np.searchsorted(sp_asc, t, side="right")] / n
    w_eq = suffix[np.searchsorted(sp_asc, t, side="left")] / n - w_gt
    return w_gt, w_eq


def candidate_events(s_p: np.ndarray, s_q: np.ndarray, loss: bool = False):
    """Thresholds ``t`` and tie probabilities ``gamma`` worth trying, with their counts.

    Every distinct value among the top ``_TOP_RANKS`` ranks of ``s_p``, then
    geometrically spaced ranks; for each ``t`` the event ``{s > t} + gamma {s = t}``
    for ``gamma`` in ``{0, 1}`` (both directions of the tie) and, at atoms, a few
    fractions.

    Args:
        s_p: selection scores of releases of ``P`` (the numerator).
        s_q: selection scores of releases of ``Q``.
        loss: the statistic is the reference model's privacy loss ``u = log p_P / p_Q``:
            also estimate ``Q(event)`` by importance sampling from the ``P`` draws,
            ``mean_P[1{event} e^-u]`` — exact in expectation when the implementation
            matches the model, and able to see events far rarer under ``Q`` than the
            selection set's size. Otherwise that column is NaN.

    Returns:
        Columns ``(t, gamma, k_p, k_q, q_is)`` as arrays of one length.
    """
    return _candidates(np.sort(s_p), np.sort(np.asarray(s_q)), loss)


def _candidates(sp_asc: np.ndarray, sq_asc: np.ndarray, loss: bool):
    """:func:`candidate_events` from the scores already sorted (ascending)."""
    t = _thresholds(sp_asc)
    p_gt, p_eq = _counts_above(sp_asc, t)
    q_gt, q_eq = _counts_above(sq_asc, t)
    if loss:
        w_gt, w_eq = _importance_weights(sp_asc, t)
    else:
        w_gt = w_eq = np.full(t.shape, np.nan)
    rows = [
        (t, np.zeros_like(t), p_gt, q_gt, w_gt),
        (t, np.ones_like(t), p_gt + p_eq, q_gt + q_eq, w_gt + w_eq),
    ]
    # An atom: more than two selection releases share the value (not a coincidence of doubles).
    atoms = (p_eq + q_eq) > 2
    if atoms.any():
        for g in _GAMMAS:
            rows.append(
                (
                    t[atoms],
                    np.full(t[atoms].shape, g),
                    p_gt[atoms] + g * p_eq[atoms],
                    q_gt[atoms] + g * q_eq[atoms],
                    w_gt[atoms] + g * w_eq[atoms],
                )
            )
    return [np.concatenate(col) for col in zip(*rows, strict=True)]


def _directions(s_d, s_dp, is_loss: bool):
    """The candidate tables of both directions of one arm, with one sort per score array.

    Direction ``D' -> D`` thresholds ``-s``: its ascending scores are the reversed,
    negated ascending scores of the other direction (negation is exact), so each
    array is sorted once.
    """
    d_asc, dp_asc = np.sort(np.asarray(s_d)), np.sort(np.asarray(s_dp))
    return (
        _candidates(d_asc, dp_asc, is_loss),
        _candidates(-dp_asc[::-1], -d_asc[::-1], is_loss),
    )


def _trust_reference(table, n_sel):
    """Drop the importance-sampling column when the reference disagrees with the counts.

    Where ``Q`` was seen often enough in the event, the importance-sampling estimate
    must match the count (see the ``_TRUST_*`` constants); a reference that fails this
    somewhere is not the implementation's law, and its tail estimates are not trusted
    for planning (plain counts are used).
    """
    t, g, k_p, k_q, q_is = table
    seen = (k_q >= _TRUST_MIN_COUNT) & ~np.isnan(q_is)
    if seen.any():
        expected = q_is[seen] * n_sel
        tolerance = _TRUST_SIGMAS * np.sqrt(k_q[seen]) + _TRUST_RELATIVE * k_q[seen]
        if np.any(np.abs(expected - k_q[seen]) > tolerance):
            q_is = np.full_like(q_is, np.nan)
    return t, g, k_p, k_q, q_is


def select_event(
    scores, n_sel: int, n_cert: int, claim: Claim, objective: str, alpha: float, loss=False
) -> SelectedEvent:
    """The best (arm, direction, threshold, gamma) on the selection scores.

    Candidates are ranked by the bound they would certify, computed from
    pessimistic selection estimates at level ``_PLAN_ALPHA / N`` over all ``N``
    candidates of all arms (Bonferroni): the maximum of ``N`` noisy tail estimates
    would otherwise favour a rare event that happened to look extreme in selection.
    This only affects power; validity rests on the certification set alone. An
    *arm* is one pair with one statistic (e.g. a reference model's privacy loss and
    a classifier on the same pair are two arms).

    With ``objective="auto"`` (approximate claims, see :func:`resolve_objective`) the
    best event for each objective is found, and the one with the larger
    :func:`planned_margin` is kept when a violation is planned, else the epsilon one.

    Args:
        scores: per arm, ``(scores of D, scores of D')`` on the selection releases.
        n_sel: selection releases per dataset (the default length of the score arrays;
            each arm's own length is used).
        n_cert: certification releases per dataset.
        claim: the claim audited.
        objective: ``"epsilon"``, ``"delta"`` or ``"auto"``.
        alpha: ``1 - confidence``.
        loss: whether the statistic is a reference model's privacy loss (see
            :func:`candidate_events`): one flag for all arms, or one per arm.

    Returns:
        The :class:`~dpaudit.blackbox.result.SelectedEvent` (the first best on ties);
        its ``pair`` is the index of the arm.
    """
    flags = [loss] * len(scores) if isinstance(loss, bool) else list(loss)
    tables = []  # (arm, direction, releases of the arm, candidate columns)
    for arm, ((s_d, s_dp), is_loss) in enumerate(zip(scores, flags, strict=True)):
        n_arm = np.asarray(s_d).size
        for direction, table in enumerate(_directions(s_d, s_dp, is_loss)):
            tables.append((arm, direction, n_arm, _trust_reference(table, n_arm)))
    level = _PLAN_ALPHA / sum(table[0].size for _, _, _, table in tables)
    # One planning call over the candidates of every arm and direction (elementwise, so the
    # same numbers as per table, without a scipy call per table).
    columns = zip(*(c for *_, c in tables), strict=True)
    t, g, k_p, k_q, q_is = (np.concatenate(col) for col in columns)
    n_rows = np.concatenate([np.full(c[0].size, float(n)) for _, _, n, c in tables])
    method = bound_method(claim.delta)  # plan with the bound certification will use
    planned = _planned(k_p, k_q, n_rows, n_cert, alpha, level, q_is, method)
    p_tilde, q_tilde = planned.p_tilde, planned.q_tilde
    objectives = ("epsilon", "delta") if objective == "auto" else (objective,)
    bounds = {name: np.asarray(_bound_of(planned, claim, name)) for name in objectives}
    best: dict = {}
    stop = np.cumsum([c[0].size for *_, c in tables])
    for (arm, direction, n_arm, _), end, begin in zip(
        tables, stop, np.concatenate([[0], stop[:-1]]), strict=True
    ):
        for name in objectives:
            i = begin + int(np.argmax(bounds[name][begin:end]))
            candidate = SelectedEvent(
                float(bounds[name][i]), arm, direction, float(t[i]), float(g[i]),
                float(k_p[i] / n_arm), float(k_q[i] / n_arm), name,
            )  # fmt: skip
            if name not in best or candidate.objective > best[name][0].objective:
                best[name] = (candidate, float(p_tilde[i]), float(q_tilde[i]))
    return _choose(best, claim, n_cert)


def _bound_of(planned: _Planned, claim: Claim, objective: str):
    """The planned bound of one objective (the ratio bound where it was planned, a pure
    claim's epsilon objective; else the pair ``(p_lo, q_hi)``)."""
    p_lo, q_hi = planned.p_lo, planned.q_hi
    if objective == "delta":
        return p_lo - math.exp(claim.epsilon) * q_hi
    if planned.ratio_lo is not None and claim.delta == 0:
        with np.errstate(divide="ignore"):
            return np.where(planned.ratio_lo > 0, np.log(planned.ratio_lo), -1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(
            p_lo > claim.delta, np.log(np.maximum(p_lo - claim.delta, 1e-300)) - np.log(q_hi), -1.0
        )


def _choose(best: dict, claim: Claim, n_cert: int) -> SelectedEvent:
    """One objective's best event; for ``"auto"``, the larger planned margin (see above)."""
    if len(best) == 1:
        return next(iter(best.values()))[0]
    eps_event, delta_event = best["epsilon"], best["delta"]
    if eps_event[0].objective <= claim.epsilon:  # no violation planned: the tightest epsilon
        return eps_event[0]
    margins = [planned_margin(p, q, n_cert, claim) for _, p, q in (eps_event, delta_event)]
    return delta_event[0] if margins[1] > margins[0] else eps_event[0]
