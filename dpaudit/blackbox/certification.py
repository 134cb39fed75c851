"""Certification: counting the selected event on fresh releases of the selected pair.

The releases counted here are drawn with keys disjoint from the selection
releases, after the event is fixed: one event, one pair, one direction,
certified once. Certifying several events on one set of releases and keeping
the best would be a silent best-of-many (the maximum of many lower bounds is
not a lower bound); selecting and certifying on one set would let the event fit
the noise of the releases it is judged on.
"""

from __future__ import annotations

from dpaudit.blackbox.result import CertifiedCounts, SelectedEvent
from dpaudit.blackbox.samplers import ReleaseSource, numpy_generator

__all__ = ["KEPT_SCORES", "count_event"]

#: Scores kept for plots per dataset (of selection and certification releases): enough for a
#: smooth histogram, small enough for a report.
KEPT_SCORES = 20_000


def count_event(
    selected: SelectedEvent,
    score,
    sources: tuple[ReleaseSource, ReleaseSource],
    samples: int,
    keys,
    progress=None,
) -> CertifiedCounts:
    """Count the event ``{sign*s > t} + gamma {sign*s = t}`` on ``samples`` fresh releases each.

    Direction ``D->D'``: ``P = P_D`` and the statistic ``s``; ``D'->D``: ``P = P_D'`` and
    ``-s``. Ties ``sign*s = t`` are kept each with probability ``gamma``, drawn as one
    binomial per dataset.

    Args:
        selected: the event chosen on the selection releases.
        score: the statistic fixed before certification.
        sources: the release sources of the selected pair ``(D, D')``.
        samples: certification releases per dataset.
        keys: three JAX keys: releases of ``D``, releases of ``D'``, the tie resolution.
        progress: a :class:`dpaudit.progress.ProgressBar`.

    Returns:
        The :class:`~dpaudit.blackbox.result.CertifiedCounts`.

    Raises:
        ValueError, TypeError: on bad releases.
    """
    sign = selected.sign
    source_p, source_q = sources if sign > 0 else sources[::-1]
    key_p, key_q = (keys[0], keys[1]) if sign > 0 else (keys[1], keys[0])
    keep = min(KEPT_SCORES, samples)
    t = selected.threshold
    p_above, p_ties, s_p = source_p.tally(samples, key_p, score, sign, t, keep, progress)
    q_above, q_ties, s_q = source_q.tally(samples, key_q, score, sign, t, keep, progress)
    rng = numpy_generator(keys[2])
    k_p = p_above + (int(rng.binomial(p_ties, selected.gamma)) if p_ties else 0)
    k_q = q_above + (int(rng.binomial(q_ties, selected.gamma)) if q_ties else 0)
    return CertifiedCounts(k_p, k_q, s_p, s_q)
