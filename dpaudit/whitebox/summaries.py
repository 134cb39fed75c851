r"""Summaries of an audit: the two directions and the exact accounting, combined.

Typed records (:class:`DeltaSummary`, :class:`EpsilonSummary`, :class:`AuditCurves`
and its :class:`DirectionCurves`, :class:`DirectionAtClaim`) that read like the
documented dicts of :meth:`dpaudit.AuditResult.to_dict` (``summary["upper"]``,
``summary.get("exact")``, ``curves["D->D'"]["lower"]``), and the ``diagnostics`` dict. Each direction's bound at the claimed epsilon holds at
``alpha / 2``, so the maximum over the two directions holds at ``alpha``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.estimation.pld import epsilon_for_delta, epsilon_lower_for_delta, interpolate_epsilon
from dpaudit.model.audit_record import DIRECTIONS
from dpaudit.model.claims import Claim

__all__ = [
    "AuditCurves",
    "DeltaSummary",
    "DirectionAtClaim",
    "DirectionCurves",
    "EpsilonSummary",
    "audit_curves",
    "audit_diagnostics",
    "delta_summary",
    "epsilon_summary",
]


class _RecordMapping(Mapping):
    """Read-only mapping access to a frozen dataclass's fields, in field order.

    Fields whose name is in ``_OPTIONAL`` and whose value is ``None`` are absent
    (they are absent from the documented dict too). ``_KEYS`` renames a field whose
    documented key is no identifier (``"D->D'"``).
    """

    _OPTIONAL: tuple[str, ...] = ()
    _KEYS: Mapping[str, str] = {}

    def _keys(self) -> list[str]:
        names = [f.name for f in dataclasses.fields(self)]
        present = [k for k in names if not (k in self._OPTIONAL and getattr(self, k) is None)]
        return [self._KEYS.get(k, k) for k in present]

    def __getitem__(self, key: str):
        if key not in self._keys():
            raise KeyError(key)
        fields = {v: k for k, v in self._KEYS.items()}
        return getattr(self, fields.get(key, key))

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.items())!r})"


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class DeltaSummary(_RecordMapping):
    """The mechanism's ``delta(epsilon_claim)``: max over the two directions.

    Read as a mapping too (``summary["upper"]``), with the attributes as keys.

    Attributes:
        estimate: the exact value for Gaussian noise, else the Monte Carlo estimate.
        lower: the larger of the Monte Carlo and exact lower bounds.
        upper: the exact upper bound when known, else the Monte Carlo upper bound.
        monte_carlo_estimate, monte_carlo_lower, monte_carlo_upper: max over
            directions of the Monte Carlo estimate and bounds (``alpha / 2`` each).
        exact_lower, exact_upper: the exact/numerical curve at the claim, or ``None``.
    """

    estimate: float
    lower: float
    upper: float
    monte_carlo_estimate: float
    monte_carlo_lower: float
    monte_carlo_upper: float
    exact_lower: float | None
    exact_upper: float | None


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class EpsilonSummary(_RecordMapping):
    """The tight epsilon at the claimed delta (read as a mapping too).

    Attributes:
        estimate: best estimate (never below the certified lower bound).
        upper: an upper bound (``inf`` when none is known).
        exact: the exact/numerical value, or ``None``.
        monte_carlo_estimate, monte_carlo_upper: from the Monte Carlo curves;
            ``None`` (and absent as keys) for pure claims.
        claimed: the claimed epsilon.
        ratio_to_claim: ``estimate / claimed`` (``inf``/``0`` when not finite/positive).
    """

    _OPTIONAL = ("monte_carlo_estimate", "monte_carlo_upper")

    estimate: float
    upper: float
    exact: float | None
    monte_carlo_estimate: float | None
    monte_carlo_upper: float | None
    claimed: float
    ratio_to_claim: float


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class DirectionAtClaim(_RecordMapping):
    """One direction's ``delta(epsilon_claim)`` (read as a mapping too).

    Attributes:
        estimate: the Monte Carlo estimate.
        lower, upper: its confidence bounds, at ``alpha / 2`` each.
        std_error: the estimate's standard error.
    """

    estimate: float
    lower: float
    upper: float
    std_error: float


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class DirectionCurves(_RecordMapping):
    """One direction's Monte Carlo curve of ``delta(epsilon)`` over the grid (a mapping too).

    Attributes:
        estimate, lower, upper, std_error: ``(G,)`` arrays; the bounds are simultaneous
            over the grid and both directions.
        failure_probability_per_point: the level each point's bound is at.
    """

    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    std_error: np.ndarray
    failure_probability_per_point: float


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class AuditCurves(_RecordMapping):
    """The curves of an audit on its epsilon grid (read as a mapping too, with the keys
    ``"D->D'"`` and ``"D'->D"`` for the two directions).

    Attributes:
        epsilons: the ``(G,)`` grid.
        claim_index: the index of the claimed epsilon in it.
        confidence: ``1 - alpha``.
        forward: the :class:`DirectionCurves` of ``D->D'`` (key ``"D->D'"``).
        backward: the same of ``D'->D`` (key ``"D'->D"``).
        exact_upper, exact_lower: the exact/numerical curves, or ``None``.
    """

    _KEYS = {"forward": DIRECTIONS[0], "backward": DIRECTIONS[1]}

    epsilons: np.ndarray
    claim_index: int
    confidence: float
    forward: DirectionCurves
    backward: DirectionCurves
    exact_upper: np.ndarray | None
    exact_lower: np.ndarray | None


def delta_summary(results: Sequence, accounting: ExactAccounting | None, claim: Claim):
    """Combine both directions' bounds at the claimed epsilon with the exact accounting.

    Args:
        results: the two :class:`~dpaudit.whitebox.result.DirectionResult`.
        accounting: the exact accounting, or ``None``.
        claim: the claim audited.

    Returns:
        A :class:`DeltaSummary`.
    """
    fwd, bwd = results
    mc_est = max(fwd.at_claim["estimate"], bwd.at_claim["estimate"])
    mc_lower = max(fwd.at_claim["lower"], bwd.at_claim["lower"])
    mc_upper = max(fwd.at_claim["upper"], bwd.at_claim["upper"])
    exact_lower = exact_upper = None
    if accounting is not None:
        exact_lower = float(accounting.delta_lower(claim.epsilon))
        exact_upper = float(accounting.delta_upper(claim.epsilon))
    gaussian = accounting is not None and accounting.family == "gaussian"
    return DeltaSummary(
        # The Gaussian curve is exact, so it is the estimate; the numerical Laplace
        # curves are bounds only, so the Monte Carlo mean stays the estimate.
        estimate=exact_upper if gaussian else mc_est,
        lower=max(mc_lower, exact_lower if exact_lower is not None else 0.0),
        upper=exact_upper if exact_upper is not None else mc_upper,
        monte_carlo_estimate=mc_est,
        monte_carlo_lower=mc_lower,
        monte_carlo_upper=mc_upper,
        exact_lower=exact_lower,
        exact_upper=exact_upper,
    )


def _pure_epsilons(claim, results, accounting, candidate_losses) -> tuple[float, dict]:
    """Certified lower bound and ``{estimate, upper, exact}`` for a pure claim."""
    fwd, bwd = results
    observed = [v for v in candidate_losses if not math.isnan(v)]
    # Verified losses (less their round-off margin) certify epsilon >= L(x).
    epsilon_lower = max(0.0, max(observed, default=-math.inf)) if observed else 0.0
    if accounting is not None and accounting.family == "laplace":
        epsilon_lower = max(epsilon_lower, accounting.sup_loss)
    if accounting is not None and accounting.family == "supremum":
        epsilon_lower = max(epsilon_lower, accounting.sup_loss_lower)
    if accounting is not None and accounting.family in ("gaussian", "singular"):
        # Gaussian/singular losses are unbounded unless the summaries coincide.
        epsilon_lower = math.inf if accounting.sup_loss > 0 else 0.0
    exact_eps = accounting.epsilon_upper(0.0) if accounting is not None else None
    info = {
        "estimate": exact_eps
        if exact_eps is not None
        else max(0.0, max(fwd.max_loss, bwd.max_loss)),
        "upper": exact_eps if exact_eps is not None else math.inf,
        "exact": exact_eps,
    }
    return epsilon_lower, info


def _approximate_epsilons(claim, grid, results, accounting, certificate) -> tuple[float, dict]:
    """Certified lower bound and the epsilon entries for an ``(epsilon, delta)`` claim."""
    fwd, bwd = results
    delta = claim.delta
    lower_curve = np.maximum(fwd.curve.lower, bwd.curve.lower)
    upper_curve = np.maximum(fwd.curve.upper, bwd.curve.upper)
    est_curve = np.maximum(fwd.curve.estimate, bwd.curve.estimate)
    epsilon_lower = epsilon_lower_for_delta(grid, lower_curve, delta)
    if certificate is not None and certificate.kind == "singular":
        epsilon_lower = math.inf  # singular laws: delta(epsilon) = 1 for every epsilon
    exact_eps = None
    if accounting is not None:
        epsilon_lower = max(epsilon_lower, accounting.epsilon_lower(delta))
        exact_eps = accounting.epsilon_upper(delta)
    info = {
        "estimate": exact_eps
        if exact_eps is not None
        else interpolate_epsilon(grid, est_curve, delta),
        "upper": exact_eps
        if exact_eps is not None
        else epsilon_for_delta(grid, upper_curve, delta),
        "exact": exact_eps,
        "monte_carlo_estimate": interpolate_epsilon(grid, est_curve, delta),
        "monte_carlo_upper": epsilon_for_delta(grid, upper_curve, delta),
    }
    return epsilon_lower, info


def epsilon_summary(
    claim: Claim, grid, results: Sequence, accounting, certificate, candidate_losses
) -> tuple[float, EpsilonSummary]:
    """The certified lower bound on ``epsilon(delta_claim)`` and the tight-epsilon summary.

    Args:
        claim: the claim audited.
        grid: ``(G,)`` epsilon grid of the curves.
        results: the two direction results.
        accounting: the exact accounting, or ``None``.
        certificate: the certificate found, or ``None``.
        candidate_losses: verified losses (less their margins) of every candidate release.

    Returns:
        ``(epsilon_lower, summary)``.
    """
    if claim.pure:
        epsilon_lower, info = _pure_epsilons(claim, results, accounting, candidate_losses)
    else:
        epsilon_lower, info = _approximate_epsilons(claim, grid, results, accounting, certificate)
    # An estimate never sits below what is certified (the constructed candidates of a
    # pure claim can certify more than the largest sampled loss shows).
    if not math.isnan(info["estimate"]):
        info["estimate"] = max(info["estimate"], epsilon_lower)
    estimate = info["estimate"]
    if math.isfinite(estimate) and estimate > 0:
        ratio = estimate / claim.epsilon
    else:
        ratio = math.inf if estimate == math.inf else 0.0
    summary = EpsilonSummary(
        estimate=estimate,
        upper=info["upper"],
        exact=info["exact"],
        monte_carlo_estimate=info.get("monte_carlo_estimate"),
        monte_carlo_upper=info.get("monte_carlo_upper"),
        claimed=claim.epsilon,
        ratio_to_claim=ratio,
    )
    return epsilon_lower, summary


def audit_curves(grid, claim_index: int, confidence: float, results, accounting) -> AuditCurves:
    """The ``curves`` of an audit result.

    Args:
        grid: ``(G,)`` epsilons.
        claim_index: index of the claimed epsilon in ``grid``.
        confidence: ``1 - alpha``.
        results: the two direction results.
        accounting: the exact accounting, or ``None``.

    Returns:
        The :class:`AuditCurves`, read as ``{epsilons, claim_index, confidence, "D->D'":
        {...}, "D'->D": {...}, exact_upper, exact_lower}`` (numpy arrays; ``None``
        without accounting).
    """
    by_direction = {
        r.direction: DirectionCurves(
            estimate=r.curve.estimate,
            lower=r.curve.lower,
            upper=r.curve.upper,
            std_error=r.curve.std_error,
            failure_probability_per_point=r.curve.failure_probability,
        )
        for r in results
    }
    exact = accounting is not None
    return AuditCurves(
        epsilons=grid,
        claim_index=claim_index,
        confidence=confidence,
        forward=by_direction[DIRECTIONS[0]],
        backward=by_direction[DIRECTIONS[1]],
        exact_upper=np.asarray(accounting.delta_upper(grid)) if exact else None,
        exact_lower=np.asarray(accounting.delta_lower(grid)) if exact else None,
    )


def audit_diagnostics(results, chunk: int, route: str) -> dict:
    """The ``diagnostics`` dict: per direction ESS/MCSE, counts; chunk size and route.

    Args:
        results: the two direction results.
        chunk: releases per chunk.
        route: the loss-evaluation route.

    Returns:
        A dict keyed by direction, plus ``chunk_size`` and ``route``.
    """
    diagnostics = {
        r.direction: {
            "n": r.n,
            "ess": r.ess,
            "mcse": r.mcse,
            "std_error_at_claim": r.at_claim["std_error"],
            "max_loss": r.max_loss,
            "n_infinite": r.n_infinite,
            "kept": int(r.losses.size),
        }
        for r in results
    }
    diagnostics["chunk_size"] = chunk
    diagnostics["route"] = route
    return diagnostics
