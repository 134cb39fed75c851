"""Records of a black-box audit: the selected event, the certified counts, and the result.

:class:`SelectedEvent` is what selection hands to certification,
:class:`CertifiedCounts` what certification counted; :class:`CertifiedEvent`
and :class:`BlackBoxResult` are the public, frozen, JSON-able outcome (JSON
through :func:`dpaudit.core.serialize.json_float`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from dpaudit.core.serialize import json_float, jsonable
from dpaudit.estimation.bounds import (
    CONDITIONAL_RATIO,
    PAIR,
    certified_delta,
    certified_epsilon_by,
    conditional_ratio_lower,
    detectable_violation,
    one_sided_pair,
)
from dpaudit.model.audit_record import DIRECTIONS, AuditRecord
from dpaudit.model.claims import Claim, claim_label, notion_bound_text

__all__ = [
    "DIRECTIONS",
    "BlackBoxResult",
    "CertifiedCounts",
    "CertifiedEvent",
    "SelectedEvent",
    "audit_strength",
    "certified_bounds",
    "selection_epsilon",
    "strength_notes",
    "verdict_notes",
]

# Event sizes tried for the budget's best detectable epsilon: Q-probabilities log-spaced from
# 1/n to e^-epsilon (above it P = e^epsilon q would exceed 1); 24 points resolve the minimum
# to a few per cent of epsilon, enough for a statement of strength.
_STRENGTH_GRID = 24


class SelectedEvent(NamedTuple):
    """The event chosen on the selection releases (before any certification release is drawn).

    Attributes:
        objective: the bound it is planned to certify (what selection maximised).
        pair: index of the neighbouring pair.
        direction: 0 (``D->D'``) or 1 (``D'->D``), see :data:`DIRECTIONS`.
        threshold: ``t`` of the event ``{s > t} + gamma {s = t}`` (``s`` signed by direction).
        gamma: the tie probability.
        p_hat: the event's frequency among the selection releases under ``P``.
        q_hat: the same under ``Q``.
        chosen_for: the objective whose best event this is (``"epsilon"`` or ``"delta"``).
    """

    objective: float
    pair: int
    direction: int
    threshold: float
    gamma: float
    p_hat: float
    q_hat: float
    chosen_for: str = "epsilon"

    @property
    def sign(self) -> float:
        """``+1`` for ``D->D'`` (statistic ``s``), ``-1`` for ``D'->D`` (statistic ``-s``)."""
        return 1.0 if self.direction == 0 else -1.0


class CertifiedCounts(NamedTuple):
    """What certification counted on fresh releases of the selected pair.

    Attributes:
        k_p: releases of ``P`` in the event (ties resolved with probability ``gamma``).
        k_q: the same for ``Q``.
        scores_p: the first (at most 20000) signed scores of ``P``'s releases, for plots.
        scores_q: the same for ``Q``.
        n_p: releases of ``P`` counted (Poisson for the conditional-ratio bound).
        n_q: the same for ``Q``.
        bound: the epsilon bound the counts are for
            (:func:`~dpaudit.estimation.bounds.bound_method`).
    """

    k_p: int
    k_q: int
    scores_p: np.ndarray
    scores_q: np.ndarray
    n_p: int
    n_q: int
    bound: str = PAIR


@dataclasses.dataclass(frozen=True)
class CertifiedEvent:
    """The event a black-box audit certified, and the counts behind the bound.

    Attributes:
        direction: ``"D->D'"`` (``P = P_D`` in the numerator) or ``"D'->D"``.
        pair: index of the neighbouring pair used (0 for a single pair).
        statistic: what was thresholded (``"privacy loss of <model>"``,
            ``"logistic log-odds on <features>"``...).
        threshold: ``t``; the event is ``{s > t}`` plus ``{s = t}`` kept with
            probability ``tie_probability``.
        tie_probability: ``gamma`` in ``[0, 1]``.
        counts: ``{"P": k, "Q": k}`` on the certification set.
        n: certification releases per dataset (planned; the Poisson mean for the
            conditional-ratio bound).
        p_lower, q_upper: the one-sided Clopper–Pearson bounds (``alpha / 2`` each) on
            ``releases``: they give the delta bound (and the epsilon bound of the pair).
        selection: the plug-in estimates on the selection set
            (``p_hat, q_hat, epsilon_hat, n``).
        releases: ``{"P": n_P, "Q": n_Q}``, the releases counted (``n`` each for a fixed
            count; Poisson(``n``) draws for the conditional-ratio bound).
        bound: how the epsilon bound was certified: ``{"method", "confidence"}`` and, for
            ``"conditional-ratio"``, ``theta_lower`` (lower bound on ``P(S) / (P(S) +
            Q(S))`` given ``k_P + k_Q``) and ``ratio_lower`` (on ``P(S) / Q(S)``); for
            ``"clopper-pearson-pair"``, ``ratio_lower = p_lower / q_upper``.
    """

    direction: str
    pair: int
    statistic: str
    threshold: float
    tie_probability: float
    counts: dict
    n: int
    p_lower: float
    q_upper: float
    selection: dict
    releases: dict = dataclasses.field(default_factory=dict)
    bound: dict = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-able dict of the fields (infinities as ``"inf"``, NaN as ``None``).

        Returns:
            The dict.
        """
        return {
            "direction": self.direction,
            "pair": self.pair,
            "statistic": self.statistic,
            "threshold": json_float(self.threshold),
            "tie_probability": self.tie_probability,
            "counts": dict(self.counts),
            "n": self.n,
            "p_lower": self.p_lower,
            "q_upper": self.q_upper,
            "selection": {
                k: json_float(v) if isinstance(v, float) else v for k, v in self.selection.items()
            },
            "releases": dict(self.releases),
            "bound": {
                k: json_float(v) if isinstance(v, float) else v for k, v in self.bound.items()
            },
        }


@dataclasses.dataclass(frozen=True)
class BlackBoxResult(AuditRecord):
    """The outcome of :func:`~dpaudit.blackbox.blackbox_audit` (frozen; ``to_dict`` is JSON-able).

    Shares the white-box :class:`~dpaudit.AuditResult`'s fields where they mean
    the same (``mechanism, claim, verdict, confidence, samples, seed,
    epsilon_lower, delta_at_claimed_epsilon, seconds, notes``), so reports and
    CI scripts read both kinds alike; ``kind`` is ``"black-box"``.

    Attributes:
        mechanism: the sampler's name.
        claim: the :class:`~dpaudit.Claim` audited.
        verdict: ``"violation"`` or ``"inconclusive"``.
        confidence: ``1 - alpha`` of the certified bounds.
        samples: certification releases per dataset.
        samples_select: selection releases per dataset (per pair).
        seed: the seed.
        statistic: the test statistic, ``"model"``, ``"logistic"`` or ``"mlp"``
            (also readable as ``method``, its former name; JSON key ``"method"``).
        epsilon_lower: certified lower bound on ``epsilon(delta_claim)``.
        delta_lower: certified lower bound on ``delta(epsilon_claim)``.
        event: the :class:`CertifiedEvent`.
        selection_scores / certification_scores: ``{"P": ..., "Q": ...}`` — a
            subsample (at most 20000) of the statistic's values in the certified
            direction, for plots.
        seconds: wall time; ``timings``: wall seconds of selection / certification, and
            this process's CPU seconds of each (``selection_cpu``, ``certification_cpu``).
        notes: sentences qualifying the verdict.
        objective: what the certified event was chosen for, ``"epsilon"`` (the epsilon
            bound at the claimed delta) or ``"delta"`` (the delta bound at the claimed
            epsilon). Both bounds are certified on that one event.
        strength: the audit strength (:func:`~dpaudit.estimation.bounds.detectable_violation`):
            ``epsilon`` / ``delta``, the smallest violations that would have been certified
            on an event as frequent under ``Q`` as the certified one (``q``), and
            ``epsilon_any_event``, the smallest over all event sizes at this budget.
        reproducible: ``False`` when the sampler ignores the audit's seed (its own
            randomness): the verdict is valid, but a rerun draws other releases.
        stopping: ``None`` for a fixed budget; with ``stopping="sequential"``, when and
            why certification stopped (:func:`~dpaudit.estimation.sequential.stopping_record`:
            the look, the releases counted of the planned budget, the look's confidence,
            the reason). ``samples`` is then the releases counted.
        notion_bound: for a zCDP / RDP / GDP / f-DP claim, the certified lower bound on the
            claim's own parameter (:func:`dpaudit.blackbox.tradeoff.notion_bound`:
            ``notion, stated, parameter, lower, claimed, exceeds_claim, confidence``), at the
            audit's confidence and from the same event; ``None`` for an (epsilon, delta) claim.
    """

    samples_select: int
    seed: int
    statistic: str
    epsilon_lower: float
    delta_lower: float
    event: CertifiedEvent
    selection_scores: dict
    certification_scores: dict
    seconds: float
    timings: dict
    notes: tuple[str, ...]
    kind: str = "black-box"
    objective: str = "epsilon"
    strength: dict = dataclasses.field(default_factory=dict)
    reproducible: bool = True
    stopping: dict | None = None
    notion_bound: dict | None = None

    @property
    def method(self) -> str:
        """The test statistic (the former name of :attr:`statistic`, kept for readers)."""
        return self.statistic

    @property
    def route(self) -> str:
        """``"black-box (<statistic>)"``, the counterpart of the white-box route."""
        return f"black-box ({self.statistic})"

    @property
    def bound_method(self) -> str:
        """How the epsilon bound was certified: ``"conditional-ratio"`` (pure-epsilon claims)
        or ``"clopper-pearson-pair"`` (see :func:`~dpaudit.estimation.bounds.bound_method`)."""
        return str(self.event.bound.get("method", PAIR))

    @property
    def detectable_epsilon(self) -> float:
        """The smallest epsilon this audit would have certified (see :attr:`strength`)."""
        return float(self.strength.get("epsilon", math.inf))

    @property
    def bounds(self) -> dict:
        """Both certified bounds, each with the claim parameter it is at and its event."""
        event = f"the certified event (chosen for the {self.objective} bound)"
        return {
            "epsilon": {"lower": self.epsilon_lower, "at_delta": self.claim.delta, "event": event},
            "delta": {"lower": self.delta_lower, "at_epsilon": self.claim.epsilon, "event": event},
        }

    @property
    def delta_at_claimed_epsilon(self) -> dict:
        """``{"lower": delta_lower}``, in the shape of the white-box result's field."""
        return {"lower": self.delta_lower}

    def to_dict(self) -> dict:
        """A JSON-able dict in the shape of :meth:`dpaudit.AuditResult.to_dict` where it overlaps.

        Returns:
            The dict (the statistic under the key ``"method"``, as before its rename).
        """
        stopping = {} if self.stopping is None else {"stopping": dict(self.stopping)}
        return {
            "kind": self.kind,
            **self.record_dict(),
            "samples_select": self.samples_select,
            "seed": self.seed,
            "route": self.route,
            "method": self.statistic,
            "epsilon_lower": json_float(self.epsilon_lower),
            "delta_at_claimed_epsilon": {"lower": json_float(self.delta_lower)},
            "event": self.event.to_dict(),
            "bound_method": self.bound_method,
            "objective": self.objective,
            "bounds": {
                k: {f: json_float(v) if isinstance(v, float) else v for f, v in b.items()}
                for k, b in self.bounds.items()
            },
            "strength": {k: json_float(v) for k, v in self.strength.items()},
            "reproducible": self.reproducible,
            **stopping,
            "seconds": self.seconds,
            "timings": dict(self.timings),
            "notes": list(self.notes),
            # only for notion claims, so (epsilon, delta) records are unchanged
            **({} if self.notion_bound is None else {"notion_bound": jsonable(self.notion_bound)}),
        }

    def __repr__(self) -> str:
        """One line: sampler, verdict, claim, statistic and the certified bound (no arrays)."""
        return (
            f"BlackBoxResult({self.mechanism!r}, verdict={self.verdict!r}, claim=("
            f"{self.claim.epsilon:g}, {self.claim.delta:g}), statistic={self.statistic!r}, "
            f"epsilon_lower={self.epsilon_lower:.4g}, samples={self.samples})"
        )

    def summary(self) -> str:
        """A few lines for people: verdict, claim, certified bound, the event, and why.

        Returns:
            The text (no trailing newline).
        """
        c, e = self.claim, self.event
        lines = [
            f"{self.mechanism}: {self.verdict} (black-box, {self.statistic})",
            f"  claim: {claim_label(c, anchor=True)}, {c.adjacency}",
            f"  certified: epsilon({c.delta:g}) >= {self.epsilon_lower:.4g} at confidence "
            f"{self.confidence:g} ({self.bound_method} bound)",
            f"  event: {e.direction}, statistic > {e.threshold:.4g}, counts P {e.counts['P']} / "
            f"Q {e.counts['Q']} of {e.n}",
        ]
        if self.stopping is not None:
            lines.append(f"  sequential: {self.stopping['reason']}")
        if self.notion_bound is not None:
            lines.append(f"  notion: {notion_bound_text(self.notion_bound)}")
        if self.notes:
            lines.append(f"  why: {self.notes[-1]}")
        return "\n".join(lines)


def certified_bounds(counts: CertifiedCounts, claim: Claim, confidence: float):
    """The certified ``(epsilon_lower, delta_lower)`` of the counts, with the bound's record.

    The epsilon bound is the counts' method (:attr:`CertifiedCounts.bound`); the delta
    bound at the claimed epsilon is always the Clopper–Pearson pair on the releases
    counted (valid given the Poisson counts too). Each holds at ``confidence``.

    Args:
        counts: the :class:`CertifiedCounts`.
        claim: the claim audited.
        confidence: ``1 - alpha`` (a sequential look's own level when stopped there).

    Returns:
        ``(epsilon_lower, delta_lower, (p_lower, q_upper), bound)`` with ``bound`` the
        :attr:`CertifiedEvent.bound` record.
    """
    k_p, n_p, k_q, n_q = counts.k_p, counts.n_p, counts.k_q, counts.n_q
    eps = float(
        certified_epsilon_by(
            counts.bound, k_p, n_p, k_q, n_q, delta=claim.delta, confidence=confidence
        )
    )
    delta = float(certified_delta(k_p, n_p, k_q, n_q, epsilon=claim.epsilon, confidence=confidence))
    p_lo, q_hi = (float(b) for b in one_sided_pair(k_p, n_p, k_q, n_q, confidence))
    bound = {"method": counts.bound, "confidence": confidence}
    if counts.bound == CONDITIONAL_RATIO:
        ratio, theta = conditional_ratio_lower(k_p, k_q, confidence)
        bound |= {"theta_lower": float(theta), "ratio_lower": float(ratio)}
    else:
        bound |= {"ratio_lower": p_lo / q_hi if q_hi > 0 else math.inf}
    return eps, delta, (p_lo, q_hi), bound


def selection_epsilon(selected: SelectedEvent, delta: float) -> float:
    """The plug-in ``log((p_hat - delta) / q_hat)`` of the selected event (not certified).

    Args:
        selected: the event, with its selection frequencies.
        delta: the claimed delta.

    Returns:
        The estimate; ``inf`` when the event was never seen under ``Q``, 0 when
        ``p_hat <= delta``.
    """
    if selected.p_hat > delta and selected.q_hat > 0:
        return math.log(selected.p_hat - delta) - math.log(selected.q_hat)
    return math.inf if selected.p_hat > delta else 0.0


def verdict_notes(
    claim: Claim, objective: str, epsilon_lower: float, confidence: float, n_sel: int, samples: int
) -> tuple[str, ...]:
    """The sentences qualifying a black-box verdict.

    Args:
        claim: the claim audited.
        objective: ``"epsilon"`` or ``"delta"`` (what selection maximised).
        epsilon_lower: the certified bound.
        confidence: ``1 - alpha``.
        n_sel: selection releases per dataset that chose the event.
        samples: certification releases per dataset.

    Returns:
        The notes.
    """
    notes = []
    if claim.delta == 0:
        notes.append(
            "The epsilon bound is the exact conditional test of P(S)/Q(S) (one Clopper–Pearson "
            "bound on P(S)/(P(S)+Q(S)) given k_P + k_Q, at the full level): the certification "
            f"releases per dataset were Poisson({samples}) draws, so the counts are independent "
            "Poisson (docs/blackbox.md, 'The conditional ratio bound')."
        )
    if objective == "delta" and claim.delta > 0:
        notes.append(
            "The event was chosen for the delta margin at the claimed epsilon (objective "
            "'delta'): it planned the larger violation margin; pass objective='epsilon' for the "
            "tightest epsilon lower bound."
        )
    if epsilon_lower > claim.epsilon:
        notes.append(
            f"Certified at confidence {confidence:g}: epsilon({claim.delta:g}) >= "
            f"{epsilon_lower:.4g} > claimed {claim.epsilon:g} (event chosen on {n_sel} selection "
            f"releases per dataset, counted on {samples} fresh ones)."
        )
    else:
        notes.append(
            "No violation found: a black-box audit can refute a claim from samples but never "
            f"prove it; the certified lower bound {epsilon_lower:.4g} does not exceed the claimed "
            f"epsilon {claim.epsilon:g}."
        )
    return tuple(notes)


def audit_strength(k_q: int, n: int, claim: Claim, confidence: float) -> dict:
    """The smallest violations this audit and this budget would have certified.

    Args:
        k_q: the certified event's count under ``Q``.
        n: certification releases per dataset.
        claim: the claim audited.
        confidence: ``1 - alpha``.

    Returns:
        ``{"epsilon", "delta", "q", "epsilon_any_event"}`` (see
        :func:`~dpaudit.estimation.bounds.detectable_violation`): at the certified event's
        ``Q``-frequency ``q = k_q / n``, and the smallest epsilon over all event sizes.
    """
    q = k_q / n
    eps, delta = detectable_violation(q, n, claim.epsilon, claim.delta, confidence)
    grid = np.geomspace(1.0 / n, math.exp(-claim.epsilon), _STRENGTH_GRID)
    best = float(np.min(detectable_violation(grid, n, claim.epsilon, claim.delta, confidence)[0]))
    return {"epsilon": eps, "delta": delta, "q": q, "epsilon_any_event": best}


def strength_notes(
    strength: dict, claim: Claim, confidence: float, kinds, kind: str, reproducible: bool
) -> tuple[str, ...]:
    """Sentences on the audit's strength, the statistic chosen and reproducibility.

    Args:
        strength: :func:`audit_strength`.
        claim: the claim audited.
        confidence: ``1 - alpha``.
        kinds: the statistics selection chose among.
        kind: the one certified.
        reproducible: whether the sampler used the audit's seed.

    Returns:
        The notes.
    """
    level = f"{100 * confidence:g} %"
    if not math.isfinite(strength["epsilon"]):  # no P(S) <= 1 certifies at this Q-frequency
        delta = strength["delta"]
        also = f" (a delta >= {delta:.3g} would)" if math.isfinite(delta) else ""
        return (
            f"Audit strength: on an event with the certified one's frequency under Q (q = "
            f"{strength['q']:.3g}) no epsilon violation could have been certified at {level}"
            f"{also}; with the best event of any size, epsilon >= "
            f"{strength['epsilon_any_event']:.3g}. A smaller violation can go unseen.",
            *_choice_notes(kinds, kind, reproducible),
        )
    notes = [
        f"Audit strength: an epsilon >= {strength['epsilon']:.3g} (at delta {claim.delta:g}) "
        f"or a delta >= {strength['delta']:.3g} (at epsilon {claim.epsilon:g}) on an event as "
        f"frequent as the certified one would have been certified at {level} (expected "
        f"counts); with the best event of any size, epsilon >= "
        f"{strength['epsilon_any_event']:.3g}. A smaller violation can go unseen."
    ]
    return (*notes, *_choice_notes(kinds, kind, reproducible))


def _choice_notes(kinds, kind: str, reproducible: bool) -> list[str]:
    """The notes on the statistic chosen and on reproducibility."""
    notes = []
    if len(kinds) > 1:
        notes.append(
            f"The statistic was chosen on the selection set among {', '.join(kinds)}: {kind}."
        )
    if not reproducible:
        notes.append(
            "The sampler does not use the audit's seed (its own randomness): the bounds are "
            "valid, but a rerun with the same seed draws other releases."
        )
    return notes
