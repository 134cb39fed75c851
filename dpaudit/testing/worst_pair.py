"""The worst pair a mechanism's declared sensitivity allows (``dpaudit audit --pairs worst``).

It sits above the engines because it reuses the black-box neighbour patterns
(:mod:`dpaudit.blackbox.autopairs`) to choose a pair for a white-box audit.
"""

from __future__ import annotations

import numpy as np

from dpaudit.blackbox.autopairs import AutoPairs, auto_pairs
from dpaudit.whitebox.scope import pair_scope

__all__ = ["worst_pair"]


def _changed_record(data, data_prime) -> int:
    """The record where a replace-one pair differs (0 when none or shapes differ)."""
    a, b = np.asarray(data), np.asarray(data_prime)
    if a.shape != b.shape or a.ndim == 0:
        return 0
    differs = np.nonzero(np.any((a != b).reshape(a.shape[0], -1), axis=1))[0]
    return int(differs[0]) if differs.size else 0


def worst_pair(mechanism, data, data_prime, domain) -> tuple[tuple, str, dict]:
    """The neighbour of ``data`` whose summary moves most, records within ``domain``.

    The changed record of ``(data, data_prime)`` is replaced by the extreme records of the
    box ``domain = (lo, hi)`` (its corners in the patterns of the black-box neighbour
    search, :func:`~dpaudit.blackbox.autopairs.auto_pairs` with kind ``"records"``), and the
    candidate with the largest ``difference_norm(summary(D) - summary(D'))`` is kept. The
    choice reads only the summaries, never a release, so the audit of the chosen pair keeps
    its confidence.

    Args:
        mechanism: the mechanism (its ``summary``, ``difference_norm`` and claim).
        data, data_prime: the pair given (its first dataset is the base).
        domain: ``(lo, hi)``, the range of a record's values.

    Returns:
        ``(pair, name, scope)``: the chosen ``(D, D')``, the candidate's name and its
        :func:`pair_scope` record.

    Raises:
        ValueError: for a mechanism without a declared sensitivity, summary or
            ``difference_norm``, a bad domain, or data outside it.
    """
    claim = mechanism.claim
    if claim.sensitivity is None:
        raise ValueError(
            f"--pairs worst needs the sensitivity the mechanism declares (its claim's "
            f"sensitivity and sensitivity_norm); {mechanism.name!r} declares none: give the "
            "pair with --data or --generator instead."
        )
    if mechanism.summary is None or mechanism.difference_norm is None:
        raise ValueError(
            f"--pairs worst needs the mechanism's summary and difference_norm to measure "
            f"pairs; {mechanism.name!r} lacks them: give the pair with --data or --generator."
        )
    index = _changed_record(data, data_prime)
    spec = AutoPairs(kind="records", domain=tuple(domain), index=index)
    candidates = auto_pairs(np.asarray(data), claim, spec)
    best = None
    for name, pair in zip(candidates.names, candidates.pairs, strict=True):
        scope = pair_scope(mechanism, *pair)
        if scope is not None and (best is None or scope["difference"] > best[2]["difference"]):
            best = (tuple(pair), name, scope)
    if best is None:
        raise ValueError(
            f"--pairs worst found no candidate pair whose summaries {mechanism.name!r} can "
            "compare; give the pair with --data or --generator."
        )
    return best
