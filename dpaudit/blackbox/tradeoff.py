r"""Black-box audits of claims in other notions: trade-off points and implied profiles.

A black-box audit certifies one event ``S`` with joint Clopper–Pearson bounds
``P(S) >= p_lo`` and ``Q(S) <= q_hi`` (confidence ``1 - alpha`` together). The test
"reject ``P`` outside ``S``" has type I error ``1 - P(S) <= 1 - p_lo`` and type II error
``Q(S) <= q_hi``; a trade-off function ``f`` is non-increasing, so

* **GDP / f-DP**: the claim is violated when ``q_hi < f(1 - p_lo)``; for mu-GDP the
  certified parameter is ``mu >= Phi^{-1}(p_lo) - Phi^{-1}(q_hi)`` (the ``mu`` whose
  ``G_mu`` passes through the certified point). For a tabulated ``f`` the value at
  ``1 - p_lo`` is bounded below by ``f`` at the next grid point.
* **zCDP / RDP**: audited through the ``(epsilon, delta)`` profile they imply
  (:mod:`dpaudit.accounting.conversions`): violated when
  ``p_lo - e^epsilon q_hi > delta_claim(epsilon)`` at some ``epsilon`` of a grid; and
  directly, by data processing: ``D_alpha(P || Q) >= D_alpha(Bern(p_lo) || Bern(q_hi))``
  (:func:`binary_renyi`), violated when that exceeds a claimed ``epsilon(alpha)`` (or
  ``rho alpha``). The certified parameter: ``epsilon(alpha)`` per claimed order for RDP;
  for zCDP the larger of the largest ``rho`` whose implied profile is still below a
  certified point and ``max_alpha D_alpha(Bern(p_lo) || Bern(q_hi)) / alpha``.

All of these read the same two bounds, so they hold together at the audit's confidence.
:func:`black_box_anchor` moves a notion claim's (epsilon, delta) anchor to
``delta = 0.05`` before the event is selected: the selection maximises the delta margin
at the anchor's epsilon, and at the default anchor (``1e-5``) the events are too rare
to count with a black-box budget.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from dpaudit.accounting.conversions import gdp_mu_for_point, zcdp_delta
from dpaudit.model.claims import (
    DEFAULT_ANCHOR_DELTA,
    GDPClaim,
    RDPClaim,
    TradeoffClaim,
    ZCDPClaim,
    is_notion_claim,
)

__all__ = [
    "BLACK_BOX_ANCHOR_DELTA",
    "NotionBound",
    "binary_renyi",
    "black_box_anchor",
    "notion_blackbox_result",
    "notion_bound",
]

#: The anchor delta of a notion claim in a black-box audit (unless the claim sets one).
BLACK_BOX_ANCHOR_DELTA = 0.05
# Epsilons at which an implied (epsilon, delta) profile is compared with a certified point.
_PROFILE_POINTS = 64
# Orders over which a certified binary Renyi divergence is turned into a rho (D_alpha / alpha).
_RHO_ORDERS = 1.0 + np.geomspace(1e-3, 1e3, 200)


def black_box_anchor(claim):
    """The claim with its anchor at :data:`BLACK_BOX_ANCHOR_DELTA` (when left at the default).

    Args:
        claim: any claim.

    Returns:
        The claim, re-anchored if it is a notion claim with the default anchor.
    """
    if is_notion_claim(claim) and claim.anchor_delta == DEFAULT_ANCHOR_DELTA:
        return dataclasses.replace(claim, anchor_delta=BLACK_BOX_ANCHOR_DELTA)
    return claim


def _tradeoff_at_least(claim, x: float) -> float:
    """A lower bound on the claimed ``f(x)``."""
    if isinstance(claim, GDPClaim):
        return float(claim.tradeoff(x))
    points, values = np.asarray(claim.points), np.asarray(claim.values)
    i = min(int(np.searchsorted(points, x, side="left")), points.size - 1)
    return float(values[i])  # f is non-increasing: f(x) >= f(next grid point)


def _profile_excess(claim, p_lo: float, q_hi: float) -> tuple[float, np.ndarray]:
    """Largest ``p_lo - e^e q_hi - delta_claim(e)`` over a grid, and the grid."""
    top = math.log(p_lo / q_hi) if q_hi > 0 and p_lo > 0 else 50.0
    grid = np.linspace(0.0, max(top, 1e-6), _PROFILE_POINTS)
    certified = p_lo - np.exp(grid) * q_hi
    return float(np.max(certified - claim.delta_implied(grid))), grid


def _certified_rho(p_lo: float, q_hi: float, grid: np.ndarray) -> float:
    """The largest rho whose implied profile lies below a certified point (0 when none)."""
    import scipy.optimize

    best = 0.0
    for e in grid:
        d = p_lo - math.exp(e) * q_hi
        if d <= 0:
            continue

        def gap(rho, e=e, d=d):
            return float(zcdp_delta(e, rho)) - d

        if gap(best if best > 0 else 1e-12) >= 0:
            continue
        hi = max(best, 1e-3)
        while gap(hi) < 0 and hi < 1e6:
            hi *= 2.0
        best = max(best, float(scipy.optimize.brentq(gap, 1e-12, hi, xtol=1e-10)))
    return best


def binary_renyi(orders, p: float, q: float) -> np.ndarray:
    """``D_alpha(Bern(p) || Bern(q))``: what one event shows of ``D_alpha(P || Q)``.

    By data processing ``D_alpha(P || Q) >= D_alpha(Bern(P(S)) || Bern(Q(S)))``, and for
    ``q <= p`` the binary divergence grows as ``p`` rises and as ``q`` falls (it is convex
    in each argument with minimum 0 at ``p = q``), so certified ``P(S) >= p`` and
    ``Q(S) <= q`` certify ``D_alpha(P || Q) >= D_alpha(Bern(p) || Bern(q))``.

    Args:
        orders: orders ``alpha > 1``.
        p: a lower bound on ``P(S)``.
        q: an upper bound on ``Q(S)``.

    Returns:
        The divergence at each order (0 when ``p <= q``).

    Example:
        >>> round(float(binary_renyi([2.0], 0.5, 0.25)[0]), 6)  # log(1 + (p-q)^2 / (q (1-q)))
        0.287682
    """
    alpha = np.asarray(orders, dtype=np.float64)
    if not p > q:
        return np.zeros(alpha.shape)
    with np.errstate(divide="ignore"):
        first = alpha * math.log(p) + (1.0 - alpha) * math.log(q)
        second = alpha * math.log1p(-p) + (1.0 - alpha) * math.log1p(-q)
    return np.maximum(np.logaddexp(first, second) / (alpha - 1.0), 0.0)


def _renyi_bound(claim, p_lo: float, q_hi: float) -> dict:
    """The certified Rényi lower bounds: per claimed order (RDP) or the best rho (zCDP)."""
    if isinstance(claim, RDPClaim):
        orders = np.asarray(claim.orders, dtype=np.float64)
        lower = binary_renyi(orders, p_lo, q_hi)
        claimed = np.asarray(claim.epsilons, dtype=np.float64)
        return {"parameter": "epsilon(alpha)", "orders": orders.tolist(),
                "lower": lower.tolist(), "claimed": claimed.tolist(),
                "exceeds_claim": bool(np.any(lower > claimed))}  # fmt: skip
    _, grid = _profile_excess(claim, p_lo, q_hi)
    rho = max(_certified_rho(p_lo, q_hi, grid),
              float(np.max(binary_renyi(_RHO_ORDERS, p_lo, q_hi) / _RHO_ORDERS)))  # fmt: skip
    return {"parameter": "rho", "lower": rho, "claimed": claim.rho,
            "exceeds_claim": rho > claim.rho}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class NotionBound:
    """The certified lower bound on a notion claim's own parameter, from one certified event.

    Attributes:
        notion: ``"zcdp"``, ``"rdp"``, ``"gdp"`` or ``"f-dp"``.
        stated: the claim in words (``"0.9-GDP"``).
        parameter: ``"rho"``, ``"epsilon(alpha)"``, ``"mu"`` or ``"gdp mu"`` (f-DP: the GDP
            ``mu`` through the certified point).
        lower: the certified lower bound (a list per order for RDP).
        claimed: the claimed parameter (a list per order for RDP; ``None`` for f-DP).
        exceeds_claim: whether the certified bound refutes the claim.
        confidence: the confidence of the pair of bounds it comes from.
        orders: the RDP orders, else ``None``.
        type_i_upper, type_ii_upper: for GDP / f-DP, the certified point of the trade-off
            curve, else ``None``.
    """

    notion: str
    stated: str
    parameter: str
    lower: Any
    claimed: Any
    exceeds_claim: bool
    confidence: float
    orders: list | None = None
    type_i_upper: float | None = None
    type_ii_upper: float | None = None

    def to_dict(self) -> dict:
        """The fields as a dict in the JSON record's order, without the ``None`` extras.

        Returns:
            ``{"notion", "stated", "parameter"[, "orders"], "lower", "claimed",
            "exceeds_claim"[, "type_i_upper", "type_ii_upper"], "confidence"}``.
        """
        out = {"notion": self.notion, "stated": self.stated, "parameter": self.parameter}
        if self.orders is not None:
            out["orders"] = self.orders
        out |= {"lower": self.lower, "claimed": self.claimed, "exceeds_claim": self.exceeds_claim}
        if self.type_i_upper is not None:
            out |= {"type_i_upper": self.type_i_upper, "type_ii_upper": self.type_ii_upper}
        return out | {"confidence": self.confidence}


def notion_bound(claim, p_lo: float, q_hi: float, confidence: float) -> NotionBound:
    """The certified parameter of the claim's notion from one certified event.

    Args:
        claim: a notion claim.
        p_lo: certified lower bound on ``P(S)``.
        q_hi: certified upper bound on ``Q(S)`` (jointly with ``p_lo``).
        confidence: the confidence of the pair of bounds.

    Returns:
        The :class:`NotionBound` (``orders`` for RDP; for GDP / f-DP also the certified
        ``type_i_upper``/``type_ii_upper`` point; an f-DP claim's ``lower`` is the GDP
        ``mu`` through that point, its parameter ``"gdp mu"``).
    """
    out = {"notion": claim.notion, "stated": claim.describe()}
    if isinstance(claim, GDPClaim | TradeoffClaim):
        x = 1.0 - p_lo
        mu = float(gdp_mu_for_point(x, q_hi))
        out |= {"parameter": "mu" if isinstance(claim, GDPClaim) else "gdp mu", "lower": mu,
                "claimed": claim.mu if isinstance(claim, GDPClaim) else None,
                "exceeds_claim": bool(q_hi < _tradeoff_at_least(claim, x)),
                "type_i_upper": x, "type_ii_upper": q_hi}  # fmt: skip
    else:
        out |= _renyi_bound(claim, p_lo, q_hi)
    return NotionBound(**out, confidence=confidence)


def notion_blackbox_result(result, claim):
    """The black-box result judged in the claim's notion (module docstring).

    Args:
        result: the :class:`~dpaudit.blackbox.BlackBoxResult` of the claim's anchor.
        claim: the notion claim.

    Returns:
        The result with the notion claim, its verdict, :attr:`notion_bound` (the certified
        parameter) and a note stating it (for example ``"mu >= 1.31 at confidence 0.95"``).
    """
    p_lo, q_hi = result.event.p_lower, result.event.q_upper
    conf = result.confidence
    bound = notion_bound(claim, p_lo, q_hi, conf)
    violated = bound.exceeds_claim
    if isinstance(claim, GDPClaim | TradeoffClaim):
        x = 1.0 - p_lo
        note = (
            f"Certified at confidence {conf:g}: a test with type I error <= {x:.4g} and type "
            f"II error <= {q_hi:.4g}, so mu >= {bound.lower:.4g} (claimed {claim.describe()})."
        )
    else:
        excess, _ = _profile_excess(claim, p_lo, q_hi)
        violated = violated or excess > 0
        note = (
            f"Certified at confidence {conf:g}: delta(epsilon) >= p_lo - e^epsilon q_hi with "
            f"p_lo = {p_lo:.4g}, q_hi = {q_hi:.4g}; {claim.describe()} implies "
            f"({claim.conversion}) a delta {'exceeded' if excess > 0 else 'not exceeded'} there."
        )
        if isinstance(claim, ZCDPClaim):
            note += f" rho >= {bound.lower:.4g}."
        else:
            pairs = ", ".join(
                f"D_{a:g} >= {d:.4g}" for a, d in zip(bound.orders, bound.lower, strict=True)
            )
            note += f" By data processing on the event: {pairs}."
    verdict = "violation" if violated or result.verdict == "violation" else "inconclusive"
    # refuted by the parameter or by the implied profile
    bound = dataclasses.replace(bound, exceeds_claim=bool(violated))
    return dataclasses.replace(
        result, claim=claim, verdict=verdict, notes=(*result.notes, note), notion_bound=bound
    )
