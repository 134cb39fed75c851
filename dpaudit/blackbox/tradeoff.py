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
  (:mod:`dpaudit.notions.conversions`): violated when
  ``p_lo - e^epsilon q_hi > delta_claim(epsilon)`` at some ``epsilon`` of a grid; for
  zCDP the certified parameter is the largest ``rho`` whose implied profile is still
  below a certified point.

All of these read the same two bounds, so they hold together at the audit's confidence.
:func:`black_box_anchor` moves a notion claim's (epsilon, delta) anchor to
``delta = 0.05`` before the event is selected: the selection maximises the delta margin
at the anchor's epsilon, and at the default anchor (``1e-5``) the events are too rare
to count with a black-box budget.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.optimize

from dpaudit.notions.claims import (
    DEFAULT_ANCHOR_DELTA,
    GDPClaim,
    RDPClaim,
    TradeoffClaim,
    ZCDPClaim,
    is_notion_claim,
)
from dpaudit.notions.conversions import gdp_mu_for_point

__all__ = ["BLACK_BOX_ANCHOR_DELTA", "black_box_anchor", "notion_blackbox_result"]

#: The anchor delta of a notion claim in a black-box audit (unless the claim sets one).
BLACK_BOX_ANCHOR_DELTA = 0.05
# Epsilons at which an implied (epsilon, delta) profile is compared with a certified point.
_PROFILE_POINTS = 64


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
    from dpaudit.notions.conversions import zcdp_delta

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


def notion_blackbox_result(result, claim):
    """The black-box result judged in the claim's notion (module docstring).

    Args:
        result: the :class:`~dpaudit.blackbox.BlackBoxResult` of the claim's anchor.
        claim: the notion claim.

    Returns:
        The result with the notion claim, its verdict and a note stating the certified
        parameter (for example ``"mu >= 1.31 at confidence 0.95"``).
    """
    p_lo, q_hi = result.event.p_lower, result.event.q_upper
    conf = result.confidence
    if isinstance(claim, GDPClaim | TradeoffClaim):
        x = 1.0 - p_lo
        violated = q_hi < _tradeoff_at_least(claim, x)
        mu = float(gdp_mu_for_point(x, q_hi))
        note = (
            f"Certified at confidence {conf:g}: a test with type I error <= {x:.4g} and type "
            f"II error <= {q_hi:.4g}, so mu >= {mu:.4g} (claimed {claim.describe()})."
        )
    else:
        excess, grid = _profile_excess(claim, p_lo, q_hi)
        violated = excess > 0
        note = (
            f"Certified at confidence {conf:g}: delta(epsilon) >= p_lo - e^epsilon q_hi with "
            f"p_lo = {p_lo:.4g}, q_hi = {q_hi:.4g}; {claim.describe()} implies "
            f"({claim.conversion}) a delta {'exceeded' if violated else 'not exceeded'} there."
        )
        if isinstance(claim, ZCDPClaim):
            note += f" rho >= {_certified_rho(p_lo, q_hi, grid):.4g}."
        elif isinstance(claim, RDPClaim):
            note += " (Renyi divergences are not bounded from counts: the profile decides.)"
    verdict = "violation" if violated or result.verdict == "violation" else "inconclusive"
    return dataclasses.replace(result, claim=claim, verdict=verdict, notes=(*result.notes, note))
