"""The scope of a white-box verdict: on which pair it holds, and how strong that pair is.

An audit judges one neighbouring pair ``(D, D')``. A pass says the claim held *on that
pair*: a pair that moves the summary by a small part of the sensitivity the claim
declares says little about the worst pair the claim covers. :func:`pair_scope` measures
the pair's summary difference ``difference_norm(summary(D) - summary(D'))`` against the
claim's declared sensitivity, and :func:`with_pair_scope` records it in the result
(``diagnostics["pair"]``) with a note; a pass or inconclusive verdict on a pair that uses
less than :data:`WEAK_PAIR_FRACTION` of the sensitivity carries a warning
(``diagnostics["pair"]["weak"]``, shown by ``summary()``, the CLI table and the report).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

__all__ = ["WEAK_PAIR_FRACTION", "pair_scope", "scope_text", "with_pair_scope"]

#: A pass on a pair whose summary difference is below this fraction of the declared
#: sensitivity carries a weak-pair warning.
WEAK_PAIR_FRACTION = 0.5


def pair_scope(mechanism, data, data_prime) -> dict | None:
    """The pair's summary difference against the claim's declared sensitivity.

    Args:
        mechanism: the audited :class:`~dpaudit.Mechanism`.
        data, data_prime: the pair.

    Returns:
        ``{"difference", "sensitivity", "sensitivity_norm", "fraction"}`` (``fraction`` is
        ``difference / sensitivity``; ``None`` without a declared sensitivity), or ``None``
        when the mechanism has no ``summary`` and ``difference_norm`` to measure the pair.
    """
    if mechanism.summary is None or mechanism.difference_norm is None:
        return None
    try:
        h = np.asarray(mechanism.summary(data), dtype=np.float64) - np.asarray(
            mechanism.summary(data_prime), dtype=np.float64
        )
        difference = float(np.asarray(mechanism.difference_norm(h)))
    except (TypeError, ValueError, IndexError):  # summaries of different shapes (add-remove)
        return None
    if not math.isfinite(difference):
        return None
    sensitivity = mechanism.claim.sensitivity
    fraction = None if not sensitivity else difference / float(sensitivity)
    return {
        "difference": difference,
        "sensitivity": None if sensitivity is None else float(sensitivity),
        "sensitivity_norm": mechanism.claim.sensitivity_norm,
        "fraction": fraction,
    }


def scope_text(scope: dict) -> str:
    """One phrase: ``"summary difference 0.0005 = 5% of the declared sensitivity 0.01 (l1)"``.

    Args:
        scope: a :func:`pair_scope` record.

    Returns:
        The phrase.
    """
    text = f"summary difference {scope['difference']:.4g}"
    if scope.get("fraction") is None:
        return text + " (the claim declares no sensitivity to compare it with)"
    norm = f" ({scope['sensitivity_norm']})" if scope.get("sensitivity_norm") else ""
    return (
        f"{text} = {100 * scope['fraction']:.3g}% of the declared sensitivity "
        f"{scope['sensitivity']:.4g}{norm}"
    )


def with_pair_scope(result, mechanism, data, data_prime):
    """The result with its pair's scope in ``diagnostics["pair"]`` and, when weak, a warning.

    Args:
        result: the :class:`~dpaudit.AuditResult` of ``(data, data_prime)``.
        mechanism: the audited mechanism (its claim's sensitivity is the yardstick).
        data, data_prime: the pair audited.

    Returns:
        The result, unchanged when the pair cannot be measured.
    """
    scope = pair_scope(mechanism, data, data_prime)
    if scope is None:
        return result
    fraction = scope["fraction"]
    weak = (
        fraction is not None
        and fraction < WEAK_PAIR_FRACTION
        and result.verdict in ("pass", "inconclusive")
    )
    scope["weak"] = bool(weak)
    notes = list(result.notes)
    if weak:
        notes.append(
            f"weak pair: this {result.verdict} holds for the audited pair only, whose "
            f"{scope_text(scope)}; a pair at the declared sensitivity may violate the claim: "
            "audit one (dpaudit audit FILE.py:CALLABLE --pairs worst, or a dataset generator "
            "that puts the changed record at the data bound)."
        )
    diagnostics = {**result.diagnostics, "pair": scope}
    return dataclasses.replace(result, diagnostics=diagnostics, notes=tuple(notes))
