"""Figures of an audit's result, for notebooks and the HTML report.

Each function draws on a matplotlib ``ax`` (a new figure when ``ax`` is
``None``) and returns it, or ``None`` when the result holds nothing to draw:

* :func:`loss_distribution` — the privacy-loss distribution of both directions
  (white-box), the claimed epsilon marked; infinite losses counted in words.
* :func:`privacy_profile` — ``delta(epsilon)`` on the audited pair against the
  claim: Monte Carlo confidence bands, the exact curve when known, the claim as
  the point ``(epsilon, delta)`` — a pure claim as the vertical line
  ``epsilon = claim``, beyond which the curve must vanish.
* :func:`compatibility_sums` — partial sums of the Cameron–Martin and 1,C
  norms of the summaries' difference as the truncation grows.
* :func:`releases` — a few releases against the non-private summary.
* :func:`certification_scores` — black-box: the certification statistic under
  both datasets, the certified event's threshold marked.

Trade-off and Rényi figures of the other privacy notions live in
``dpaudit.io.plot.tradeoff`` and are re-exported here when present.

Readable defaults: small legends of at most four entries, linear axes where
the numbers are few (a handful of components), log axes only where values
span decades, and a sentence on the axes when there is no finite value to draw.
"""

from dpaudit.io.plot.blackbox import certification_scores
from dpaudit.io.plot.whitebox import (
    compatibility_sums,
    loss_distribution,
    privacy_profile,
    releases,
)

__all__ = [
    "certification_scores",
    "compatibility_sums",
    "loss_distribution",
    "privacy_profile",
    "releases",
]
