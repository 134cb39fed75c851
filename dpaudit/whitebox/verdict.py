r"""The verdict of a white-box audit: every rule, in one pure function.

:func:`verdict` reads the claim, the bounds on ``delta(epsilon_claim)``
(:class:`~dpaudit.whitebox.summaries.DeltaSummary`), the exact accounting, the
certificate and the compatibility analysis, and returns ``(verdict, notes)``.
The rules, in the order they are applied (``tests/whitebox/test_verdict.py``
has one row per rule):

1. **violation — certificate.** A verified release certifies the violation
   (a pure claim with ``L(x) > epsilon + tol``, or mutually singular laws).
2. **violation — Monte Carlo.** The Monte Carlo lower bound of
   ``delta(epsilon)`` (``alpha/2`` per direction) exceeds ``delta``.
3. **violation — exact lower curve.** The exact/numerical lower bound of
   ``delta(epsilon)`` exceeds ``delta`` by more than the error bound of its
   computation (:func:`delta_tolerance`).
4. **violation — exact supremum.** A pure claim with Laplace noise whose exact
   ``sup L`` (its certified lower bound) exceeds ``epsilon`` by more than the error
   bound of its computation (:func:`dpaudit.core.roundoff.sup_loss_tolerance`); noted
   when no single release was verified.
5. **pass — exact supremum.** A pure claim passes with Laplace accounting when
   ``sup L <= epsilon`` up to that error bound (rules 4 and 5 share one threshold:
   an excess is either a violation or within rounding), or with any accounting when
   ``sup L = 0`` (identical laws).
6. **inconclusive — pure claim on sampling.** Otherwise a pure claim is
   inconclusive: sampling never certifies a supremum.
7. **pass — upper bound.** An ``(epsilon, delta)`` claim passes when the upper
   bound on ``delta(epsilon)`` is at most ``delta``: the exact/numerical upper
   curve when available, else the Monte Carlo upper bounds of both directions
   (noted: a Monte Carlo pass covers only the pair tested).
8. **inconclusive.** Otherwise.
9. **incompatible.** No violation, but the compatibility analysis shows the
   claimed kind of DP is impossible for this noise as ``K`` grows (mutually
   singular laws in the limit, or a pure claim with ICLP noise on a
   Gaussian-only pair: equivalent laws that are not pure-DP). The note cites
   the theorem for the noise at hand
   (:meth:`~dpaudit.model.compatibility.Compatibility.limit_explanation`). Only for a
   truncated functional release (``compatibility.extrapolated``): a finite
   coefficient vector declared by the user is the mechanism, its verdict
   rests on the audited law, and the limit is only noted.
10. **undetermined compatibility** adds the analysis's reason as a note.

A claim in another notion (zCDP, RDP, GDP, f-DP; :mod:`dpaudit.model.claims`) is audited
through the ``(epsilon, delta)`` point it implies at its ``anchor_delta`` by the rules
above, then judged in its own notion by :func:`notion_result`
(:func:`dpaudit.whitebox.notions.evaluate_notion`): its verdict is the notion's, except that a
deterministic violation of the anchor (certificate, exact accounting) stands, and an
"incompatible" anchor stays incompatible unless the notion finds a violation.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.core.roundoff import (
    BRACKET_ROUNDOFF_RTOL,
    gamma,
    gaussian_delta_error,
    sup_loss_tolerance,
)
from dpaudit.estimation.pld import delta_bounds
from dpaudit.estimation.significance import (
    BORDERLINE_P,
    borderline_note,
    borderline_record,
    p_value,
)
from dpaudit.model.claims import Claim
from dpaudit.model.compatibility import Compatibility
from dpaudit.whitebox.notions import evaluate_notion
from dpaudit.whitebox.result import Certificate
from dpaudit.whitebox.summaries import DeltaSummary

__all__ = [
    "PassLowerBound",
    "clamp_pass_lower_bound",
    "delta_tolerance",
    "exact_delta_violated",
    "monte_carlo_p_value",
    "notion_result",
    "verdict",
]

_PURE_ON_SAMPLING = (
    "a pure-epsilon claim cannot pass on Monte Carlo evidence alone (a supremum "
    "is never certified by sampling); no release with L > epsilon was found."
)
_MONTE_CARLO_PASS = (
    "Monte Carlo pass: the upper confidence bounds of both directions support the "
    "claim for this pair of datasets only, not for every neighbouring pair."
)


def delta_tolerance(claim: Claim, accounting) -> float:
    """How far the exact lower bound of ``delta(epsilon_claim)`` may exceed a claim that holds.

    For Gaussian accounting the curve is a closed form at a computed ``mu``: its error bound
    (:func:`dpaudit.core.roundoff.gaussian_delta_error`, with ``mu``'s own error), so a claim
    calibrated at exactly the curve (an analytic-Gaussian or a GDP claim) is not read as
    violated. A numerical lower curve is already a lower bound after its round-off margin
    (:class:`~dpaudit.accounting.DiscretePLD`); only the comparison's rounding is left.

    Args:
        claim: the ``(epsilon, delta)`` claim.
        accounting: the exact accounting, or ``None``.

    Returns:
        The tolerance (``>= 0``).
    """
    rounding = gamma(2) * claim.delta
    if accounting is None or accounting.family != "gaussian" or not accounting.mu:
        return rounding
    mu_error = accounting.mu_error or 0.0
    return rounding + float(gaussian_delta_error(claim.epsilon, float(accounting.mu), mu_error))


def exact_delta_violated(claim: Claim, lower: float | None, accounting) -> bool:
    """Rule 3: the exact lower bound of ``delta(epsilon)`` exceeds the claim beyond rounding.

    Args:
        claim: the ``(epsilon, delta)`` claim.
        lower: the exact/numerical lower bound of ``delta(claim.epsilon)``, or ``None``.
        accounting: the exact accounting behind it, or ``None``.

    Returns:
        Whether it is a violation.
    """
    return lower is not None and lower > claim.delta + delta_tolerance(claim, accounting)


def _sup_over_claim(claim: Claim, accounting) -> bool:
    """Rules 4/5: the certified supremum exceeds ``epsilon`` beyond the computation's error."""
    sup_lower = getattr(accounting, "sup_loss_lower", accounting.sup_loss)
    return sup_lower > claim.epsilon + sup_loss_tolerance(accounting)


def _exact_violation(claim: Claim, delta: DeltaSummary, accounting) -> bool:
    """Rules 3 and 4: the exact accounting alone shows a violation."""
    violated = exact_delta_violated(claim, delta.exact_lower, accounting)
    if accounting is not None and accounting.family in ("laplace", "supremum") and claim.pure:
        violated = violated or _sup_over_claim(claim, accounting)
    return violated


def _pure_verdict(claim: Claim, accounting) -> tuple[str, list[str]]:
    """Rules 5 and 6: a pure claim without violation."""
    if accounting is not None and accounting.family in ("laplace", "supremum"):
        # A pass needs the certified *upper* end of the supremum within the claim (up to its
        # computation's error), or a bracket only round-off wide whose lower end is; a wider
        # bracket [lower, upper] around the claim is inconclusive.
        upper = accounting.sup_loss
        lower = getattr(accounting, "sup_loss_lower", upper)
        narrow = upper - lower <= BRACKET_ROUNDOFF_RTOL * (1.0 + upper)
        ok = upper <= claim.epsilon + sup_loss_tolerance(accounting) or (
            narrow and not _sup_over_claim(claim, accounting)
        )
        return ("pass" if ok else "inconclusive"), []
    if accounting is not None and accounting.sup_loss == 0.0:
        return "pass", []  # identical laws: L = 0 everywhere
    return "inconclusive", [_PURE_ON_SAMPLING]


def _compatibility_verdict(claim, compat, noise_family, current: str) -> tuple[str, list[str]]:
    """Rules 9 and 10: the K -> infinity limit overrides a pass or an inconclusive."""
    notes = []
    if compat is not None and current != "violation":
        # Without a noise structure there is no family; Gaussian is the permissive default.
        family = noise_family if noise_family is not None else "gaussian"
        if compat.allows(claim.pure, family) is False:
            explanation = compat.limit_explanation(claim.pure, family)
            if compat.extrapolated:
                notes.append(
                    f"no violation at K = {compat.n_components}, but {explanation} The claim "
                    "cannot hold for the functional (K -> infinity) mechanism."
                )
                current = "incompatible"
            else:
                notes.append(
                    f"the release is a finite coefficient vector (K = {compat.n_components}) "
                    "declared as such, so the verdict rests on the audited law; a functional "
                    f"release with these coefficients would not extend as K grows: {explanation}"
                )
    if compat is not None and compat.classification == "undetermined":
        notes.append(compat.reason)
    return current, notes


def verdict(
    claim: Claim,
    delta: DeltaSummary,
    accounting: ExactAccounting | None,
    certificate: Certificate | None,
    compatibility: Compatibility | None,
    noise_family: str | None,
) -> tuple[str, tuple[str, ...]]:
    """The verdict on ``claim`` from the audit's evidence (rules in the module docstring).

    Args:
        claim: the claim audited.
        delta: the bounds on ``delta(epsilon_claim)``; reads ``monte_carlo_lower``,
            ``upper`` and ``exact_lower``.
        accounting: the exact accounting, or ``None``.
        certificate: a verified certificate, or ``None``.
        compatibility: the compatibility analysis, or ``None``.
        noise_family: ``"gaussian"``/``"laplace"`` for shifted noise, else ``None``.

    Returns:
        ``(verdict, notes)``: one of :data:`~dpaudit.whitebox.result.VERDICTS` and
        the sentences qualifying it.
    """
    notes: list[str] = []
    exact_violation = _exact_violation(claim, delta, accounting)
    if certificate is not None or delta.monte_carlo_lower > claim.delta or exact_violation:
        outcome = "violation"  # rules 1-4
        if certificate is None and claim.pure and exact_violation:
            notes.append("violation from exact accounting (no single release verified).")
    elif claim.pure:
        outcome, pure_notes = _pure_verdict(claim, accounting)
        notes += pure_notes
    elif delta.upper <= claim.delta:
        outcome = "pass"  # rule 7
        if accounting is None:
            notes.append(_MONTE_CARLO_PASS)
    else:
        outcome = "inconclusive"  # rule 8
    outcome, compat_notes = _compatibility_verdict(claim, compatibility, noise_family, outcome)
    return outcome, tuple(notes + compat_notes)


def monte_carlo_p_value(claim: Claim, directions, alpha: float) -> float:
    """The p-value of a violation that rests on the Monte Carlo lower bounds alone (rule 2).

    The smallest failure probability ``a`` at which the same draws still certify
    ``delta(epsilon_claim) > delta`` (``a / 2`` per direction, as the verdict spends
    ``alpha``; :func:`dpaudit.estimation.significance.p_value`).

    Args:
        claim: the ``(epsilon, delta)`` claim.
        directions: the two :class:`~dpaudit.whitebox.result.DirectionResult`.
        alpha: ``1 - confidence`` of the audit.

    Returns:
        ``p`` in ``(0, alpha]`` (``alpha`` when the bounds cannot be recomputed to agree).
    """

    def certifies_at(a: float) -> bool:
        for r in directions:
            se, n = float(r.at_claim["std_error"]), int(r.n)
            if n < 2:
                return False
            low, _ = delta_bounds(
                r.at_claim["estimate"], se * se * n, n, a / 2, method=r.curve.method
            )
            if float(low) > claim.delta:
                return True
        return False

    return p_value(certifies_at, alpha) if certifies_at(alpha) else alpha


class PassLowerBound(NamedTuple):
    """The certified lower bound on epsilon reported with a verdict.

    Attributes:
        value: the bound reported (at most the claimed epsilon on a pass).
        raw: the bound as computed, before any clamping.
        note: a sentence when the bound was clamped, else ``None``.
    """

    value: float
    raw: float
    note: str | None


def clamp_pass_lower_bound(outcome: str, claim: Claim, epsilon_lower: float) -> PassLowerBound:
    """On a pass, clamp the certified lower bound on epsilon to at most the claimed epsilon.

    A pass can only be reached with a bound above the claim through round-off: the exact
    supremum ``sum_j a_j`` of a claim calibrated at exactly its tight epsilon is within
    the error bound of its computation (:func:`dpaudit.core.roundoff.sup_loss_tolerance`) of the
    claim (e.g. ``1.0000000000000009`` for a claim of 1), and the pass rules accept it. Reporting it as a *certified* bound above the claim would
    contradict the verdict, so the value shown is ``min(epsilon_lower, epsilon)`` and the
    raw value is kept (``diagnostics["epsilon_lower_raw"]`` of the audit result).

    Args:
        outcome: the verdict.
        claim: the claim audited.
        epsilon_lower: the certified lower bound as computed.

    Returns:
        A :class:`PassLowerBound`; ``value == raw`` and ``note is None`` unless clamped.

    Example:
        >>> clamp_pass_lower_bound("pass", Claim(1.0), 1.0000000000000009).value
        1.0
        >>> clamp_pass_lower_bound("violation", Claim(1.0), 1.5).note is None
        True
    """
    if outcome != "pass" or not epsilon_lower > claim.epsilon:
        return PassLowerBound(epsilon_lower, epsilon_lower, None)
    note = (
        f"the certified lower bound on epsilon computed as {epsilon_lower!r} exceeds the claim "
        f"{claim.epsilon!r} by round-off only (within the accounting margin); it is reported "
        "as the claim, the raw value is in diagnostics['epsilon_lower_raw']."
    )
    return PassLowerBound(claim.epsilon, epsilon_lower, note)


def _deterministic_violation(result) -> bool:
    """Whether the anchor's violation rests on a certificate or exact accounting (no sampling)."""
    if result.verdict != "violation":
        return False
    if result.certificate is not None:
        return True
    lower = result.delta_at_claimed_epsilon.exact_lower
    return exact_delta_violated(result.claim, lower, result.exact)


def notion_result(result, claim):
    """The audit result of a notion claim: the anchor's audit, judged in the claim's notion.

    Args:
        result: the :class:`~dpaudit.AuditResult` of the claim's ``(epsilon, delta)``
            anchor (:meth:`~dpaudit.model.claims.ZCDPClaim.as_dp`).
        claim: the notion claim.

    Returns:
        The result with ``claim`` set to the notion claim, the notion's verdict, its notes
        appended and the :class:`~dpaudit.whitebox.notions.NotionAudit` record in
        ``diagnostics["notion"]``.
    """
    judged = evaluate_notion(
        claim, result.exact, result.directions, result.curves, result.confidence
    )
    outcome = judged.verdict
    notes = list(judged.notes)
    if outcome != "violation" and _deterministic_violation(result):
        outcome = "violation"
        notes.append(
            f"the claim implies ({result.claim.epsilon:.6g}, {result.claim.delta:g})-DP "
            "(its anchor), which is violated with certainty."
        )
    elif outcome != "violation" and result.verdict == "incompatible":
        outcome = "incompatible"
    notes.append(
        f"claim {judged.claim}; its (epsilon, delta) fields are its anchor "
        f"({result.claim.epsilon:.6g}, {result.claim.delta:g}) by {judged.conversion}."
    )
    diagnostics = {**result.diagnostics, "notion": judged.to_dict()}
    p = _notion_p_value(result, outcome, judged)
    kept = result.notes
    if diagnostics.get("borderline") is not None and (p is None or p <= BORDERLINE_P):
        del diagnostics["borderline"]  # the anchor's borderline violation is not the verdict
        kept = tuple(n for n in kept if not n.startswith("borderline:"))
    elif p is not None and p > BORDERLINE_P and "borderline" not in diagnostics:
        diagnostics["borderline"] = borderline_record(p)
        notes.append(borderline_note(p))
    return dataclasses.replace(
        result,
        claim=claim,
        verdict=outcome,
        diagnostics=diagnostics,
        notes=(*kept, *notes),
        p_value=p,
    )


def _notion_p_value(result, outcome: str, judged) -> float | None:
    """The p-value of a notion claim's violation: ``0`` when it rests on no sampling (the
    notion's exact accounting, or a deterministic violation of its anchor), the anchor's when
    that is a violation too, else the audit's level (a notion's Monte Carlo bound is
    certified at ``1 - confidence``; its p-value is not recomputed, so at most that)."""
    if outcome != "violation":
        return None
    # the notion's verdicts say when a violation rests on their Monte Carlo bounds alone
    sampled = any(n.startswith("violation certified by the Monte Carlo") for n in judged.notes)
    if _deterministic_violation(result) or (judged.verdict == "violation" and not sampled):
        return 0.0
    if result.verdict == "violation" and result.p_value is not None:
        return result.p_value
    return 1.0 - result.confidence
