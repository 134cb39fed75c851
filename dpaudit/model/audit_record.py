"""The fields every audit result shares, white-box or black-box.

:class:`dpaudit.AuditResult` and :class:`dpaudit.BlackBoxResult` both start
with these fields, in this order, so reports and CI scripts read both kinds
alike.
"""

from __future__ import annotations

import dataclasses

from dpaudit.model.claims import Claim

__all__ = ["DIRECTIONS", "VERDICTS", "AuditRecord"]

#: The verdicts of an audit (a black-box audit reaches only "violation" or "inconclusive").
VERDICTS = ("pass", "violation", "inconclusive", "incompatible")

#: The two directions of a pair: ``"D->D'"`` draws ``x ~ P_D`` and tests it against
#: ``P_D'`` (loss ``L = log p_D - log p_D'``; black-box statistic ``s``); ``"D'->D"`` is
#: the reverse (black-box statistic ``-s``).
DIRECTIONS = ("D->D'", "D'->D")


@dataclasses.dataclass(frozen=True)
class AuditRecord:
    """The head of an audit result: what was audited, against which claim, and the verdict.

    Attributes:
        mechanism: the name of the mechanism (or sampler) audited.
        claim: the :class:`~dpaudit.Claim` audited.
        verdict: one of :data:`VERDICTS`.
        confidence: ``1 - alpha`` of the certified bounds.
        samples: releases drawn per dataset (per direction).
    """

    mechanism: str
    claim: Claim
    verdict: str
    confidence: float
    samples: int

    def record_dict(self) -> dict:
        """The shared fields as JSON-able values, in order (the head of every ``to_dict``).

        Returns:
            ``{"mechanism", "claim" (a dict), "verdict", "confidence", "samples"}``.
        """
        return {
            "mechanism": self.mechanism,
            "claim": dataclasses.asdict(self.claim),
            "verdict": self.verdict,
            "confidence": self.confidence,
            "samples": self.samples,
        }

    def _repr_html_(self) -> str:
        """The subclass's ``summary()`` as a small HTML table (Jupyter shows it for a result).

        Returns:
            The HTML.
        """
        import html

        head, *rest = self.summary().splitlines()
        rows = "".join(
            "<tr><th style='text-align:left'>{}</th><td style='text-align:left'>{}</td></tr>".format(
                *(html.escape(part.strip()) for part in line.split(":", 1))
            )
            for line in rest
        )
        return f"<div><b>{html.escape(head)}</b><table>{rows}</table></div>"
