"""Privacy notions beyond (epsilon, delta)-DP: zCDP, Rényi DP, Gaussian DP and f-DP.

* :mod:`dpaudit.notions.claims` — the claim records (:class:`ZCDPClaim`,
  :class:`RDPClaim`, :class:`GDPClaim`, :class:`TradeoffClaim`) and :func:`make_claim`;
* :mod:`dpaudit.notions.conversions` — the (epsilon, delta) profile each implies;
* :mod:`dpaudit.notions.renyi` — Rényi divergences of a pair (exact, Monte Carlo bounds);
* :mod:`dpaudit.notions.tradeoff` — trade-off curves of a pair and their duality with
  hockey-stick profiles;
* :mod:`dpaudit.notions.evaluation` — a notion claim judged on one pair;
* :mod:`dpaudit.notions.figures` — trade-off and Rényi-profile figures.

The mathematics, and why each conversion is exact or conservative: ``docs/notions.md``.
"""

from dpaudit.notions.claims import (
    NOTIONS,
    GDPClaim,
    RDPClaim,
    TradeoffClaim,
    ZCDPClaim,
    is_notion_claim,
    make_claim,
    notion_of,
)
from dpaudit.notions.evaluation import NotionAudit, evaluate_notion

__all__ = [
    "NOTIONS",
    "GDPClaim",
    "NotionAudit",
    "RDPClaim",
    "TradeoffClaim",
    "ZCDPClaim",
    "evaluate_notion",
    "is_notion_claim",
    "make_claim",
    "notion_of",
]
