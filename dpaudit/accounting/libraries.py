"""A dp_accounting accountant's (or DpEvent's) statement read as numbers: epsilon(delta), delta(epsilon).

dp_accounting describes a mechanism as a ``DpEvent`` and accounts for it with a
``PrivacyAccountant`` (``pld.PLDAccountant``: privacy loss distributions,
pessimistic by default; ``rdp.RdpAccountant``: Rényi DP). Both answer
``get_epsilon(target_delta)`` and ``get_delta(target_epsilon)`` and state their
neighbouring relation. This module reads them by that documented interface (duck
typing: dp_accounting is imported only to compose a bare ``DpEvent``), so that
:meth:`dpaudit.Claim.from_dp_accounting` and the training adapters
(:mod:`dpaudit.adapters.accountants`) state what the accountant states.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np

__all__ = [
    "ADJACENCY_OF_RELATION",
    "accountant_adjacency",
    "as_accountant",
    "check_accountant_delta",
    "delta_curve",
    "epsilon_at",
]

#: dp_accounting's ``NeighboringRelation`` names, as dpaudit adjacencies.
ADJACENCY_OF_RELATION = {"ADD_OR_REMOVE_ONE": "add-remove", "REPLACE_ONE": "replace-one"}


def check_accountant_delta(delta) -> float:
    """The delta at which an accountant's epsilon is read, checked.

    Args:
        delta: a number in ``(0, 1)``.

    Returns:
        ``delta`` as a float.

    Raises:
        ValueError: when ``delta`` is missing or outside ``(0, 1)``.
        TypeError: when it is not a number.
    """
    if delta is None:
        raise ValueError(
            "an accountant states epsilon at a delta: pass delta= (e.g. delta=1e-5, the delta "
            "of the training run's guarantee)."
        )
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise TypeError(f"delta must be a number in (0, 1), got {type(delta).__name__}.")
    if not 0 < float(delta) < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    return float(delta)


def as_accountant(accountant_or_event):
    """An accountant with ``get_epsilon`` / ``get_delta``: given, or a PLD accountant of an event.

    Args:
        accountant_or_event: a dp_accounting ``PrivacyAccountant`` (anything with
            ``get_epsilon`` and ``get_delta``), or a ``DpEvent`` (composed into a fresh
            ``pld.PLDAccountant``; an ``rdp.RdpAccountant`` when the PLD accountant does
            not support the event).

    Returns:
        The accountant.

    Raises:
        TypeError: for an object that is neither.
        ValueError: for an event neither accountant supports.
    """
    if hasattr(accountant_or_event, "get_epsilon") and hasattr(accountant_or_event, "get_delta"):
        return accountant_or_event
    try:
        import dp_accounting
    except ImportError:
        dp_accounting = None
    if dp_accounting is None or not isinstance(accountant_or_event, dp_accounting.DpEvent):
        raise TypeError(
            "expected a dp_accounting PrivacyAccountant (with get_epsilon and get_delta) or a "
            f"DpEvent, got {type(accountant_or_event).__name__}."
        )
    for make in (dp_accounting.pld.PLDAccountant, dp_accounting.rdp.RdpAccountant):
        accountant = make()
        if accountant.supports(accountant_or_event):
            accountant.compose(accountant_or_event)
            return accountant
    raise ValueError(
        f"neither dp_accounting's PLD nor its RDP accountant supports the event "
        f"{type(accountant_or_event).__name__}; compose it into an accountant yourself."
    )


def accountant_adjacency(accountant) -> str:
    """The dpaudit adjacency of an accountant's ``neighboring_relation`` (add/remove if none).

    Args:
        accountant: a dp_accounting accountant.

    Returns:
        ``"add-remove"`` or ``"replace-one"``.

    Raises:
        ValueError: for a relation dpaudit has no adjacency for (``REPLACE_SPECIAL``).
    """
    relation = getattr(accountant, "neighboring_relation", None)
    name = getattr(relation, "name", "ADD_OR_REMOVE_ONE")
    if name not in ADJACENCY_OF_RELATION:
        raise ValueError(
            f"the accountant's neighbouring relation {name} has no dpaudit adjacency; "
            f"supported are {', '.join(ADJACENCY_OF_RELATION)}."
        )
    return ADJACENCY_OF_RELATION[name]


def epsilon_at(accountant, delta: float) -> float:
    """The accountant's epsilon at ``delta`` (finite, or a ``ValueError``).

    Args:
        accountant: an accountant with ``get_epsilon``.
        delta: the target delta.

    Returns:
        The epsilon.

    Raises:
        ValueError: when the accountant states no finite epsilon at ``delta``.
    """
    epsilon = float(accountant.get_epsilon(delta))
    if not math.isfinite(epsilon):
        raise ValueError(
            f"the accountant states no finite epsilon at delta = {delta:g}; give a larger delta."
        )
    return epsilon


def delta_curve(accountant) -> Callable:
    """``delta(epsilon)`` of an accountant, vectorised (its ``get_delta`` at each epsilon).

    Args:
        accountant: an accountant with ``get_delta``.

    Returns:
        A function of an array of epsilons returning the array of deltas.
    """

    def delta_of_epsilon(epsilon):
        eps = np.asarray(epsilon, dtype=np.float64)
        flat = [float(accountant.get_delta(float(e))) for e in eps.ravel()]
        return np.asarray(flat, dtype=np.float64).reshape(eps.shape)

    return delta_of_epsilon
