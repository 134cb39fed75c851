r"""How surprising a violation is, and the error of a suite of audits.

A statistical violation is certified at confidence ``1 - alpha``: a correct mechanism
whose claim is exactly tight is reported as violating it with probability at most
``alpha`` (5 % at the default 0.95). Two things make that usable in CI:

* **The p-value of a violation.** ``p`` is the smallest ``alpha`` at which the same
  evidence (the same counts, the same losses) would still certify the violation
  (:func:`p_value`). Under an exactly tight correct claim ``P(p <= x) <= x`` for every
  ``x`` (the bounds are valid at every level), so ``p`` is the probability that such a
  mechanism produces an excess at least this large. A violation with
  ``p > BORDERLINE_P`` is **borderline**: its excess sits at the statistical resolution
  of the audit, and the result says so (:func:`borderline_record`). A non-borderline
  violation of a correct claim then happens with probability at most
  :data:`BORDERLINE_P` per audit. Violations that rest on no sampling (a verified
  release, exact accounting) have ``p = 0``.
* **Suites.** ``dpaudit audit DIR`` runs many audits; each that can raise a violation
  spends part of a suite-wide false-alarm level ``alpha_suite``
  (``--suite-confidence``). The correction is Holm's step-down procedure over the
  audits' p-values (:func:`holm`), which controls the family-wise error (the
  probability of at least one false violation in the suite) at ``alpha_suite`` whatever
  the dependence between audits, and rejects everything Bonferroni
  (``p <= alpha_suite / m``) rejects. A violation the correction does not keep is
  reported as borderline for the suite.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

__all__ = [
    "BORDERLINE_P",
    "borderline_note",
    "borderline_record",
    "correct_suite",
    "holm",
    "p_value",
    "suite_p_values",
]

#: A violation whose p-value exceeds this is borderline: a correct, exactly tight claim is
#: reported as a non-borderline violation with probability at most this per audit.
BORDERLINE_P = 1e-3
#: Smallest p-value the bisection resolves (``p`` below it is reported as this bound).
_P_FLOOR = 1e-15
_BISECTION_STEPS = 40  # log-scale steps: p to 1e-10 relative over [1e-15, alpha]


def p_value(certifies_at: Callable[[float], bool], alpha: float) -> float:
    """The smallest failure probability at which the evidence still certifies the violation.

    The certified bounds tighten as ``alpha`` grows, so ``{a : certifies_at(a)}`` is an
    interval ``(p, 1)``; ``p`` is found by bisection on ``log a`` between
    :data:`_P_FLOOR` and ``alpha`` (where it certifies, by assumption).

    Args:
        certifies_at: ``certifies_at(a)``: whether the same evidence certifies the
            violation at failure probability ``a`` (total, over all its bounds).
        alpha: the failure probability at which the audit certified it.

    Returns:
        ``p`` in ``[_P_FLOOR, alpha]`` (a conservative, slightly larger value: the
        bisection returns the certifying end of its last interval).

    Raises:
        ValueError: ``alpha`` outside ``(0, 1)``.

    Example:
        >>> round(p_value(lambda a: a > 0.01, 0.05), 6)
        0.01
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}.")
    if certifies_at(_P_FLOOR):
        return _P_FLOOR
    lo, hi = math.log(_P_FLOOR), math.log(alpha)
    for _ in range(_BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if certifies_at(math.exp(mid)):
            hi = mid
        else:
            lo = mid
    return math.exp(hi)


def borderline_note(p: float, suite: bool = False) -> str:
    """The sentence a borderline violation carries.

    Args:
        p: the violation's p-value.
        suite: whether it is borderline for the suite's correction (not for the audit).

    Returns:
        The sentence.
    """
    where = (
        "the suite's error correction does not keep it"
        if suite
        else f"above {BORDERLINE_P:g}, the level of a firm violation"
    )
    return (
        f"borderline: a correct, exactly tight mechanism produces an excess this large with "
        f"probability p <= {p:.2g} ({where}); the violation is at the statistical resolution "
        "of the audit: rerun with more samples to settle it."
    )


def borderline_record(p: float) -> dict | None:
    """``{"p_value", "threshold"}`` for a borderline violation, else ``None``.

    Args:
        p: the violation's p-value.

    Returns:
        The record, or ``None`` when ``p <= BORDERLINE_P`` (a firm violation).
    """
    if p <= BORDERLINE_P:
        return None
    return {"p_value": float(p), "threshold": BORDERLINE_P}


def holm(p_values: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise level ``alpha``.

    Sort the ``m`` p-values ascending; reject the ``i``-th (0-based) while
    ``p_(i) <= alpha / (m - i)``; stop at the first that fails. The probability of
    rejecting any true hypothesis is at most ``alpha`` under any dependence (Holm 1979).

    Args:
        p_values: one p-value per audit that can raise a violation (``1`` for an audit
            that raised none).
        alpha: the family-wise level in ``(0, 1)``.

    Returns:
        Per p-value, in the given order, whether it is rejected (the violation stands).

    Raises:
        ValueError: ``alpha`` outside ``(0, 1)``.

    Example:
        >>> holm([0.001, 0.04, 0.03], 0.05)
        [True, False, False]
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}.")
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    rejected = [False] * m
    for rank, i in enumerate(order):
        if p_values[i] > alpha / (m - rank):
            break
        rejected[i] = True
    return rejected


def suite_p_values(results) -> list[float]:
    """The p-value of each audit of a suite, for :func:`holm` (``1`` for no violation).

    Args:
        results: audit results (white-box or black-box), each with ``verdict`` and
            ``p_value`` (a violation without one counts at its audit's level,
            ``1 - confidence``).

    Returns:
        One p-value per result, in order.
    """
    out = []
    for r in results:
        if r.verdict != "violation":
            out.append(1.0)
        else:
            p = getattr(r, "p_value", None)
            out.append(1.0 - float(r.confidence) if p is None else float(p))
    return out


def correct_suite(results, suite_confidence: float) -> list:
    """Holm's correction over a suite: violations it does not keep become borderline.

    Every audit of the suite can raise a violation, so all count in ``m``. A violation
    Holm rejects (its p-value small enough) stands; any other violation is reported as
    ``"inconclusive"`` with a ``borderline`` record (``{"p_value", "threshold",
    "suite": True}``) and a note: at the suite's level it is not a finding. The
    probability that a suite of correct, exactly tight mechanisms shows any violation is
    then at most ``1 - suite_confidence``.

    Args:
        results: the suite's audit results, in order.
        suite_confidence: ``1 - alpha_suite``, in ``(0, 1)``.

    Returns:
        The results, the demoted ones replaced.

    Raises:
        ValueError: ``suite_confidence`` outside ``(0, 1)``.
    """
    import dataclasses

    if not 0 < suite_confidence < 1:
        raise ValueError(
            f"suite_confidence must lie strictly between 0 and 1, got {suite_confidence!r}."
        )
    p = suite_p_values(results)
    kept = holm(p, 1.0 - suite_confidence)
    out = []
    for r, pv, keep in zip(results, p, kept, strict=True):
        if r.verdict != "violation" or keep:
            out.append(r)
            continue
        record = {"p_value": pv, "threshold": (1.0 - suite_confidence), "suite": True}
        note = borderline_note(pv, suite=True)
        if hasattr(r, "diagnostics"):  # white-box: the record lives in the diagnostics
            diagnostics = {**r.diagnostics, "borderline": record}
            out.append(dataclasses.replace(r, verdict="inconclusive", diagnostics=diagnostics,
                                           notes=(*r.notes, note)))  # fmt: skip
        else:
            out.append(dataclasses.replace(r, verdict="inconclusive", borderline=record,
                                           notes=(note, *r.notes)))  # fmt: skip
    return out
