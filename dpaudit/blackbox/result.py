"""Records of a black-box audit: the selected event, the certified counts, and the result.

:class:`SelectedEvent` is what selection hands to certification,
:class:`CertifiedCounts` what certification counted; :class:`CertifiedEvent`
and :class:`BlackBoxResult` are the public, frozen, JSON-able outcome (JSON
through :func:`dpaudit.core.serialize.json_float`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np
import scipy.special

from dpaudit.accounting.profiles import gaussian_epsilon
from dpaudit.blackbox.tradeoff import NotionBound
from dpaudit.core.serialize import json_float, jsonable
from dpaudit.estimation.bounds import (
    CONDITIONAL_RATIO,
    PAIR,
    bound_method,
    certified_delta,
    certified_epsilon_by,
    conditional_ratio_lower,
    detectable_violation,
    one_sided_pair,
)
from dpaudit.estimation.sequential import SequentialStop
from dpaudit.estimation.significance import borderline_note, p_value
from dpaudit.model.audit_record import DIRECTIONS, AuditRecord
from dpaudit.model.claims import Claim, claim_label, notion_summary_lines

__all__ = [
    "DIRECTIONS",
    "AuditStrength",
    "BlackBoxResult",
    "CertifiedCounts",
    "CertifiedEvent",
    "EventBound",
    "PerLaw",
    "SelectedEvent",
    "SelectionSummary",
    "Timings",
    "audit_strength",
    "certified_bounds",
    "gaussian_strength",
    "selection_epsilon",
    "strength_in_notion",
    "strength_notes",
    "verdict_notes",
    "violation_p_value",
]

# Event sizes tried for the budget's best detectable epsilon: Q-probabilities log-spaced from
# 1/n to e^-epsilon (above it P = e^epsilon q would exceed 1); 24 points resolve the minimum
# to a few per cent of epsilon, enough for a statement of strength.
_STRENGTH_GRID = 24
# Largest Gaussian mu searched by gaussian_strength (a pair this far apart is singular in
# practice: P(S) = 1, Q(S) = Phi(-20) at the best threshold).
_MAX_GAUSSIAN_MU = 40.0


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


class PerLaw(NamedTuple):
    """One value per law of the certified direction: ``P`` (the numerator's) and ``Q``.

    Attributes:
        P: the value under ``P`` (counts, releases, or scores).
        Q: the same under ``Q``.
    """

    P: Any
    Q: Any

    def to_dict(self) -> dict:
        """``{"P": ..., "Q": ...}`` (the JSON shape).

        Returns:
            The dict.
        """
        return {"P": self.P, "Q": self.Q}


class SelectionSummary(NamedTuple):
    """The certified event's plug-in estimates on the selection set (not certified).

    Attributes:
        p_hat: the event's frequency among the selection releases under ``P``.
        q_hat: the same under ``Q``.
        epsilon_hat: the plug-in :func:`selection_epsilon`.
        n: selection releases per dataset.
        pairs: the candidate pairs selection chose among.
    """

    p_hat: float
    q_hat: float
    epsilon_hat: float
    n: int
    pairs: int

    def to_dict(self) -> dict:
        """The fields, floats through :func:`~dpaudit.serialize.json_float`.

        Returns:
            The dict.
        """
        return {k: json_float(v) if isinstance(v, float) else v for k, v in self._asdict().items()}


class EventBound(NamedTuple):
    """How the epsilon bound of the certified event was certified.

    Attributes:
        method: :data:`~dpaudit.blackbox.bounds.CONDITIONAL_RATIO` or
            :data:`~dpaudit.blackbox.bounds.PAIR` (:func:`~dpaudit.blackbox.bounds.bound_method`).
        confidence: the level the bound holds at.
        ratio_lower: the lower bound on ``P(S) / Q(S)`` (``p_lower / q_upper`` for the pair).
        theta_lower: for the conditional ratio, the lower bound on ``P(S) / (P(S) + Q(S))``
            given ``k_P + k_Q``; ``None`` for the pair.
    """

    method: str
    confidence: float
    ratio_lower: float
    theta_lower: float | None = None

    def to_dict(self) -> dict:
        """``{"method", "confidence"[, "theta_lower"], "ratio_lower"}``, floats JSON-able.

        Returns:
            The dict.
        """
        out: dict[str, Any] = {"method": self.method, "confidence": self.confidence}
        if self.theta_lower is not None:
            out["theta_lower"] = self.theta_lower
        out["ratio_lower"] = self.ratio_lower
        return {k: json_float(v) if isinstance(v, float) else v for k, v in out.items()}


class Timings(NamedTuple):
    """Wall seconds of each phase, and this process's CPU seconds of each (all its threads,
    not Ray's workers: on a loaded machine the wall time is mostly waiting for a core).

    Attributes:
        selection: wall seconds of drawing the selection releases and choosing the event.
        certification: wall seconds of counting the event on fresh releases.
        selection_cpu: CPU seconds of selection.
        certification_cpu: CPU seconds of certification.
    """

    selection: float
    certification: float
    selection_cpu: float
    certification_cpu: float

    def to_dict(self) -> dict:
        """The fields as a dict, in order.

        Returns:
            The dict.
        """
        return self._asdict()


class AuditStrength(NamedTuple):
    """The smallest violations an audit would have certified (:func:`audit_strength`).

    Attributes:
        epsilon: the smallest epsilon (at the claimed delta) certified on an event as
            frequent under ``Q`` as the certified one.
        delta: the smallest delta (at the claimed epsilon) on such an event.
        q: that ``Q``-frequency, ``k_Q / n``.
        epsilon_any_event: the smallest epsilon over all event sizes at this budget.
        gaussian_mu: the smallest ``mu`` of a Gaussian mechanism certified as violating
            (:func:`gaussian_strength`).
        gaussian_epsilon: that Gaussian's epsilon at the claim's delta (``inf`` for a pure claim).
        gaussian_rho: that Gaussian's zCDP ``rho = mu^2 / 2``.
    """

    epsilon: float
    delta: float
    q: float
    epsilon_any_event: float
    gaussian_mu: float = math.inf
    gaussian_epsilon: float = math.inf
    gaussian_rho: float = math.inf

    def to_dict(self) -> dict:
        """The fields, floats through :func:`~dpaudit.serialize.json_float`.

        Returns:
            The dict.
        """
        return {k: json_float(v) for k, v in self._asdict().items()}


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
        counts: the :class:`PerLaw` counts ``k`` in the event on the certification set.
        n: certification releases per dataset (planned; the Poisson mean for the
            conditional-ratio bound).
        p_lower, q_upper: the one-sided Clopper–Pearson bounds (``alpha / 2`` each) on
            ``releases``: they give the delta bound (and the epsilon bound of the pair).
        selection: the :class:`SelectionSummary` of plug-in estimates on the selection set.
        releases: the :class:`PerLaw` releases counted (``n`` each for a fixed count;
            Poisson(``n``) draws for the conditional-ratio bound); ``None`` when not recorded.
        bound: the :class:`EventBound`: how the epsilon bound was certified (``None`` when
            not recorded).
    """

    direction: str
    pair: int
    statistic: str
    threshold: float
    tie_probability: float
    counts: PerLaw
    n: int
    p_lower: float
    q_upper: float
    selection: SelectionSummary
    releases: PerLaw | None = None
    bound: EventBound | None = None

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
            "counts": self.counts.to_dict(),
            "n": self.n,
            "p_lower": self.p_lower,
            "q_upper": self.q_upper,
            "selection": self.selection.to_dict(),
            "releases": {} if self.releases is None else self.releases.to_dict(),
            "bound": {} if self.bound is None else self.bound.to_dict(),
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
        statistic: the test statistic, ``"model"``, ``"logistic"``, ``"mlp"``, ``"float"``
            or ``"bits"`` (also readable as ``method``, its former name; JSON key
            ``"method"``).
        epsilon_lower: certified lower bound on ``epsilon(delta_claim)``.
        delta_lower: certified lower bound on ``delta(epsilon_claim)``.
        event: the :class:`CertifiedEvent`.
        selection_scores / certification_scores: :class:`PerLaw` arrays — a
            subsample (at most 20000) of the statistic's values in the certified
            direction, for plots.
        seconds: wall time; ``timings``: the :class:`Timings` of selection and
            certification (wall and this process's CPU seconds).
        notes: sentences qualifying the verdict.
        objective: what the certified event was chosen for, ``"epsilon"`` (the epsilon
            bound at the claimed delta) or ``"delta"`` (the delta bound at the claimed
            epsilon). Both bounds are certified on that one event.
        strength: the :class:`AuditStrength`
            (:func:`~dpaudit.estimation.bounds.detectable_violation`): ``epsilon`` /
            ``delta``, the smallest violations that would have been certified on an event
            as frequent under ``Q`` as the certified one (``q``), and
            ``epsilon_any_event``, the smallest over all event sizes at this budget
            (``None`` when not recorded).
        reproducible: ``False`` when the sampler ignores the audit's seed (its own
            randomness): the verdict is valid, but a rerun draws other releases.
        stopping: ``None`` for a fixed budget; with ``stopping="sequential"``, the
            :class:`~dpaudit.estimation.sequential.SequentialStop`: when and why certification
            stopped (the look, the releases counted of the planned budget, the look's
            confidence, the reason). ``samples`` is then the releases counted.
        notion_bound: for a zCDP / RDP / GDP / f-DP claim, the certified lower bound on the
            claim's own parameter (:func:`dpaudit.blackbox.tradeoff.notion_bound`:
            ``notion, stated, parameter, lower, claimed, exceeds_claim, confidence``), at the
            audit's confidence and from the same event; ``None`` for an (epsilon, delta) claim.
        borderline: ``{"p_value", "threshold"}`` when the violation is borderline (its
            p-value, :func:`dpaudit.estimation.significance.p_value`, exceeds
            :data:`~dpaudit.estimation.significance.BORDERLINE_P`), else ``None``.
        p_value: for a violation, its p-value (not in :meth:`to_dict` unless borderline);
            ``None`` for an inconclusive verdict.
    """

    samples_select: int
    seed: int
    statistic: str
    epsilon_lower: float
    delta_lower: float
    event: CertifiedEvent
    selection_scores: PerLaw
    certification_scores: PerLaw
    seconds: float
    timings: Timings
    notes: tuple[str, ...]
    kind: str = "black-box"
    objective: str = "epsilon"
    strength: AuditStrength | None = None
    reproducible: bool = True
    stopping: SequentialStop | None = None
    notion_bound: NotionBound | None = None
    borderline: dict | None = None
    p_value: float | None = None

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
        return PAIR if self.event.bound is None else str(self.event.bound.method)

    @property
    def detectable_epsilon(self) -> float:
        """The smallest epsilon this audit would have certified (see :attr:`strength`)."""
        return math.inf if self.strength is None else float(self.strength.epsilon)

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
        stopping = {} if self.stopping is None else {"stopping": self.stopping.to_dict()}
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
            "strength": {} if self.strength is None else self.strength.to_dict(),
            "reproducible": self.reproducible,
            **stopping,
            "seconds": self.seconds,
            "timings": self.timings.to_dict(),
            "notes": list(self.notes),
            # only for notion claims, so (epsilon, delta) records are unchanged
            **(
                {}
                if self.notion_bound is None
                else {"notion_bound": jsonable(self.notion_bound.to_dict())}
            ),
            # only for borderline violations, so other records are unchanged
            **({} if self.borderline is None else {"borderline": dict(self.borderline)}),
        }

    def __repr__(self) -> str:
        """One line: sampler, verdict, claim, statistic and the certified bound (no arrays)."""
        return (
            f"BlackBoxResult({self.mechanism!r}, verdict={self.verdict!r}, claim=("
            f"{self.claim.epsilon:g}, {self.claim.delta:g}), statistic={self.statistic!r}, "
            f"epsilon_lower={self.epsilon_lower:.4g}, samples={self.samples})"
        )

    @property
    def reason(self) -> str:
        """The decisive reason for the verdict, in one line.

        A violation names the certified event and its certified probabilities under the two
        laws; an inconclusive verdict the note qualifying it.
        """
        c, e = self.claim, self.event
        if self.verdict != "violation":
            return self.notes[-1] if self.notes else f"epsilon >= {self.epsilon_lower:.4g}"
        p, q = ("D", "D'") if e.direction == "D->D'" else ("D'", "D")
        if self.epsilon_lower > c.epsilon:
            bound = f"epsilon({c.delta:g}) >= {self.epsilon_lower:.4g} > epsilon = {c.epsilon:g}"
        else:
            bound = f"delta({c.epsilon:g}) >= {self.delta_lower:.4g} > delta = {c.delta:g}"
        return (
            f"event statistic > {e.threshold:.4g} has P_{p} >= {e.p_lower:.3g} and "
            f"P_{q} <= {e.q_upper:.3g} (counts {e.counts.P} / {e.counts.Q} of {e.n}): {bound}"
        )

    def summary(self) -> str:
        """A few lines for people: verdict, the decisive reason, claim, certified bound, event.

        A violation leads with its :attr:`reason` (line 2); an inconclusive verdict ends
        with the note qualifying it.

        Returns:
            The text (no trailing newline).
        """
        c, e = self.claim, self.event
        anchor = (
            f"epsilon({c.delta:g}) >= {self.epsilon_lower:.4g} at confidence "
            f"{self.confidence:g} ({self.bound_method} bound)"
        )
        lines = [f"{self.mechanism}: {self.verdict} (black-box, {self.statistic})"]
        if self.verdict == "violation":
            lines.append(f"  why: {self.reason}")
        if self.notion_bound is not None:  # the claim's own parameter first, the anchor second
            lines += notion_summary_lines(self)
            lines[-1] += f" {anchor}"
        else:
            lines += [f"  claim: {claim_label(c, anchor=True)}, {c.adjacency}",
                      f"  certified: {anchor}"]  # fmt: skip
        lines += [
            f"  event: {e.direction}, statistic > {e.threshold:.4g}, counts P {e.counts.P} / "
            f"Q {e.counts.Q} of {e.n}",
        ]
        if self.stopping is not None:
            lines.append(f"  sequential: {self.stopping.reason}")
        if self.notes and self.verdict != "violation":
            lines.append(f"  why: {self.notes[-1]}")
        if self.borderline is not None:
            lines.append(f"  {borderline_note(self.borderline['p_value'])}")
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
        :class:`EventBound` of :attr:`CertifiedEvent.bound`.
    """
    k_p, n_p, k_q, n_q = counts.k_p, counts.n_p, counts.k_q, counts.n_q
    eps = float(
        certified_epsilon_by(
            counts.bound, k_p, n_p, k_q, n_q, delta=claim.delta, confidence=confidence
        )
    )
    delta = float(certified_delta(k_p, n_p, k_q, n_q, epsilon=claim.epsilon, confidence=confidence))
    p_lo, q_hi = (float(b) for b in one_sided_pair(k_p, n_p, k_q, n_q, confidence))
    if counts.bound == CONDITIONAL_RATIO:
        ratio, theta = conditional_ratio_lower(k_p, k_q, confidence)
        bound = EventBound(counts.bound, confidence, float(ratio), float(theta))
    else:
        bound = EventBound(counts.bound, confidence, p_lo / q_hi if q_hi > 0 else math.inf)
    return eps, delta, (p_lo, q_hi), bound


def violation_p_value(counts: CertifiedCounts, claim: Claim, level: float, confidence: float):
    """The p-value of a certified epsilon violation (:func:`dpaudit.estimation.significance.p_value`).

    The smallest failure probability at which the same counts still certify
    ``epsilon(delta) > epsilon_claim`` (for the conditional-ratio bound in closed form,
    the binomial tail ``I_theta0(k_P, k_Q + 1)``; otherwise by bisection). A sequential certification stopped at a look
    spending ``1 - level`` of the audit's ``1 - confidence``: the look's p-value is scaled
    by ``(1 - confidence) / (1 - level)``, which keeps ``P(p <= x) <= x`` over all looks.

    Args:
        counts: the certified counts.
        claim: the claim audited.
        level: the confidence the counts were certified at (a look's, or the audit's).
        confidence: the audit's ``1 - alpha``.

    Returns:
        ``p`` in ``(0, 1]``.
    """

    def certifies_at(a: float) -> bool:
        eps = certified_epsilon_by(
            counts.bound, counts.k_p, counts.n_p, counts.k_q, counts.n_q,
            delta=claim.delta, confidence=1.0 - a,
        )  # fmt: skip
        return float(eps) > claim.epsilon

    look_alpha = 1.0 - level
    if not certifies_at(look_alpha):
        return 1.0 - confidence
    if counts.bound == CONDITIONAL_RATIO and counts.k_p > 0:
        # Closed form: the Clopper-Pearson lower bound Beta(a; k_P, k_Q + 1) of theta exceeds
        # theta_0 = e^eps / (1 + e^eps) exactly when a > I_theta0(k_P, k_Q + 1).
        theta0 = 1.0 / (1.0 + math.exp(-claim.epsilon))
        at_look = float(scipy.special.betainc(counts.k_p, counts.k_q + 1, theta0))
    else:
        at_look = p_value(certifies_at, look_alpha)
    return min(1.0, at_look * (1.0 - confidence) / look_alpha)


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


def audit_strength(k_q: int, n: int, claim, confidence: float) -> AuditStrength:
    """The smallest violations this audit and this budget would have certified, per family.

    Two families of mechanisms, because a budget detects them differently:

    * **event** (``epsilon``, ``delta``, ``q``, ``epsilon_any_event``): the violation sits on
      one event, ``P(S) = e^eps_true Q(S) + delta`` (randomized response, a Laplace
      mechanism's tail): :func:`~dpaudit.blackbox.bounds.detectable_violation` at the
      certified event's ``Q``-frequency ``q = k_q / n``, and over all event sizes.
    * **gaussian** (``gaussian_mu``, ``gaussian_epsilon``, ``gaussian_rho``): a Gaussian
      mechanism, privacy loss ``N(mu^2 / 2, mu^2)``, whose ratio ``P(S) / Q(S)`` is far
      below ``e^epsilon(delta)`` on every event a budget can count:
      :func:`gaussian_strength` (the best threshold event at expected counts). Its
      ``epsilon`` at the claim's delta (``inf`` for a pure claim), its zCDP ``rho`` and
      ``mu`` (GDP) are the figures for a Gaussian mechanism.

    Args:
        k_q: the certified event's count under ``Q``.
        n: certification releases per dataset.
        claim: the claim audited (its ``(epsilon, delta)`` anchor for a notion claim).
        confidence: ``1 - alpha``.

    Returns:
        The :class:`AuditStrength`: the event family's ``epsilon``, ``delta``, ``q``,
        ``epsilon_any_event`` and the Gaussian family's ``gaussian_mu``,
        ``gaussian_epsilon``, ``gaussian_rho``.
    """
    q = k_q / n
    eps, delta = detectable_violation(q, n, claim.epsilon, claim.delta, confidence)
    grid = np.geomspace(1.0 / n, math.exp(-claim.epsilon), _STRENGTH_GRID)
    best = float(np.min(detectable_violation(grid, n, claim.epsilon, claim.delta, confidence)[0]))
    mu = gaussian_strength(n, claim, confidence)
    gauss_eps = (
        gaussian_epsilon(claim.delta, mu) if claim.delta > 0 and math.isfinite(mu) else math.inf
    )
    return AuditStrength(eps, delta, q, best, mu, gauss_eps, mu * mu / 2.0)


def gaussian_strength(n: int, claim, confidence: float) -> float:
    """The smallest ``mu`` of a Gaussian mechanism this budget would certify as violating.

    A Gaussian pair ``N(mu, 1)`` / ``N(0, 1)`` and the threshold events ``{x > t}``:
    ``P(S) = Phi(mu - t)``, ``Q(S) = Phi(-t)``; at the expected counts ``n P(S)``,
    ``n Q(S)`` the audit's bound (:func:`~dpaudit.blackbox.bounds.certified_epsilon_by`, the
    method the claim fixes) certifies ``epsilon(delta) > epsilon_claim`` on the best
    threshold exactly when ``mu`` is at least the returned value (bisection; the best event
    only improves with ``mu``). Expected counts: the median outcome, not a power guarantee.

    Args:
        n: certification releases per dataset.
        claim: the claim (its ``epsilon``, ``delta``).
        confidence: ``1 - alpha``.

    Returns:
        ``mu`` (``inf`` when even ``mu = 40`` would not be certified).
    """
    method = bound_method(claim.delta)

    def certifies(mu: float) -> bool:
        t = mu / 2.0 + np.linspace(-4.0, 12.0, 161)
        k_p = n * scipy.special.ndtr(mu - t)
        k_q = n * scipy.special.ndtr(-t)
        with np.errstate(divide="ignore", invalid="ignore"):
            eps = certified_epsilon_by(
                method, k_p, float(n), k_q, float(n), delta=claim.delta, confidence=confidence
            )
        return bool(np.nanmax(eps) > claim.epsilon)

    lo, hi = 0.0, _MAX_GAUSSIAN_MU
    if not certifies(hi):
        return math.inf
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if certifies(mid) else (mid, hi)
    return hi


def strength_in_notion(strength: AuditStrength, claim) -> str:
    """The Gaussian-family strength in the claim's own notion, in words.

    Args:
        strength: :func:`audit_strength`.
        claim: the claim audited.

    Returns:
        ``"rho >= 0.31"`` (zCDP), ``"mu >= 0.79"`` (GDP), else ``"epsilon >= 1.9"`` at the
        claim's delta (``"mu >= ..."`` for a pure claim: a Gaussian is never pure-DP).
    """
    mu = strength.gaussian_mu
    notion = getattr(claim, "notion", None)
    if notion == "zcdp":
        return f"rho >= {strength.gaussian_rho:.3g}"
    if notion == "gdp" or claim.delta == 0:
        return f"mu >= {mu:.3g}"
    return f"epsilon >= {strength.gaussian_epsilon:.3g}"


def strength_notes(
    strength: AuditStrength, claim: Claim, confidence: float, kinds, kind: str, reproducible: bool
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
    if not math.isfinite(strength.epsilon):  # no P(S) <= 1 certifies at this Q-frequency
        delta = strength.delta
        also = f" (a delta >= {delta:.3g} would)" if math.isfinite(delta) else ""
        return (
            f"Audit strength: on an event with the certified one's frequency under Q (q = "
            f"{strength.q:.3g}) no epsilon violation could have been certified at {level}"
            f"{also}; with the best event of any size, epsilon >= "
            f"{strength.epsilon_any_event:.3g}. {_gaussian_sentence(strength, claim)} A "
            "smaller violation can go unseen.",
            *_choice_notes(kinds, kind, reproducible),
        )
    notes = [
        f"Audit strength: for a mechanism whose violation sits on one event (randomized "
        f"response, a Laplace tail), an epsilon >= {strength.epsilon:.3g} (at delta "
        f"{claim.delta:g}) or a delta >= {strength.delta:.3g} (at epsilon "
        f"{claim.epsilon:g}) on an event as frequent as the certified one would have been "
        f"certified at {level} (expected counts); with the best event of any size, epsilon >= "
        f"{strength.epsilon_any_event:.3g}. {_gaussian_sentence(strength, claim)} A smaller "
        "violation can go unseen."
    ]
    return (*notes, *_choice_notes(kinds, kind, reproducible))


def _gaussian_sentence(strength: AuditStrength, claim) -> str:
    """The Gaussian family's strength, in the claim's notion."""
    figure = strength_in_notion(strength, claim)
    mu = f"mu >= {strength.gaussian_mu:.3g}"
    return (
        f"A Gaussian mechanism is detected only from {figure}"
        + ("" if figure == mu else f" ({mu})")
        + ": its loss ratio on any countable event is far below e^epsilon(delta)."
    )


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
