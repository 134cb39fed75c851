"""The one interface of the accounting layer: a privacy profile with certified bounds.

Every accounting a white-box audit may hold implements :class:`PrivacyProfile`:
:class:`~dpaudit.accounting.profiles.ExactAccounting` (Gaussian curve, Laplace PLD
bounds, composed sites), :class:`~dpaudit.accounting.suprema.SupremumAccounting` (a
certified supremum of the loss) and
:class:`~dpaudit.accounting.composition.BoundedComposition` (a composed curve with a
certified supremum). The engine's summaries and verdict read only these members, so a
new family of exact accounting is a new implementation, nothing else.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["PrivacyProfile"]


@runtime_checkable
class PrivacyProfile(Protocol):
    """``delta(epsilon)`` and ``epsilon(delta)`` of a pair of release laws, bounded both ways.

    Attributes:
        family: what computed it (``"gaussian"``, ``"laplace"``, ``"supremum"``, ...).
        sup_loss: an upper bound on ``sup L`` over both directions (``inf`` when unbounded).
    """

    family: str
    sup_loss: float

    def delta_upper(self, epsilon):
        """Certified upper bounds on ``delta(epsilon)`` (both directions), per epsilon."""

    def delta_lower(self, epsilon):
        """Certified lower bounds on ``delta(epsilon)``, per epsilon."""

    def epsilon_upper(self, delta: float) -> float:
        """A certified upper bound on the smallest epsilon with ``delta(epsilon) <= delta``."""

    def epsilon_lower(self, delta: float) -> float:
        """A certified lower bound on that epsilon."""

    def summary(self) -> dict:
        """The JSON-ready record of the accounting."""
