"""Claims from training libraries' accountants: dp_accounting, Opacus, jax-privacy.

A DP training run states its guarantee through an accountant; these functions
turn that statement into the claim dpaudit audits, so the audit checks what the
library reported rather than a number copied by hand:

* :func:`claim_from_accountant` — epsilon at ``delta`` as a :class:`~dpaudit.Claim`,
  from a dp_accounting accountant or ``DpEvent`` (:meth:`dpaudit.Claim.from_dp_accounting`),
  an Opacus accountant (``accountant.get_epsilon(delta=...)``: ``RDPAccountant``,
  ``PRVAccountant``, ``GDPAccountant``), or a jax-privacy accountant
  (``compute_epsilon(...)`` with the run's arguments, or ``get_epsilon``);
* :func:`profile_claim` — the whole ``delta(epsilon)`` curve of a dp_accounting
  accountant as a :class:`~dpaudit.training.ProfileClaim`, for
  :func:`~dpaudit.training.training_audit` (the audit then checks every point of the
  profile, not one).

The libraries are read by their documented methods (duck typing): nothing is imported
unless a bare ``DpEvent`` has to be composed. Opacus and jax-privacy accountants
account for Poisson-subsampled DP-SGD under add/remove adjacency, which is the claim's.
"""

from __future__ import annotations

import inspect
import math

from dpaudit.accounting.libraries import (
    as_accountant,
    check_accountant_delta,
    delta_curve,
    epsilon_at,
)
from dpaudit.model.claims import Claim
from dpaudit.training import ProfileClaim

__all__ = ["claim_from_accountant", "profile_claim"]


def _library(accountant) -> str:
    module = type(accountant).__module__ or ""
    return module.split(".")[0]


def _epsilon_of(accountant, delta: float, kwargs: dict) -> float:
    """Opacus's ``get_epsilon(delta=...)`` or jax-privacy's ``compute_epsilon(...)``."""
    if hasattr(accountant, "compute_epsilon"):
        method = accountant.compute_epsilon
        if "delta" in inspect.signature(method).parameters and "delta" not in kwargs:
            kwargs = {**kwargs, "delta": delta}
        return float(method(**kwargs))
    if kwargs:
        raise TypeError(
            f"{type(accountant).__name__}.get_epsilon takes delta only; got {sorted(kwargs)}."
        )
    return float(accountant.get_epsilon(delta=delta))


def claim_from_accountant(accountant, delta: float | None = None, **kwargs) -> Claim:
    """The claim an accountant states: epsilon at ``delta``, add/remove adjacency.

    Args:
        accountant: a dp_accounting accountant or ``DpEvent``; an Opacus accountant
            (``get_epsilon(delta=...)``); or a jax-privacy accountant
            (``compute_epsilon(**kwargs)``, e.g. ``num_updates=...``).
        delta: the delta of the claim (required).
        **kwargs: the arguments of a jax-privacy ``compute_epsilon`` (``delta`` is passed
            when the method takes it).

    Returns:
        The :class:`~dpaudit.Claim`; its ``reference`` names the accountant.

    Raises:
        ValueError: for a missing delta or one outside ``(0, 1)``, or an accountant that
            states no finite epsilon.
        TypeError: for an object with none of these methods.

    Example:
        >>> class Fake:                      # an Opacus-like accountant
        ...     def get_epsilon(self, delta):
        ...         return 2.0
        >>> claim_from_accountant(Fake(), delta=1e-5).epsilon
        2.0
    """
    delta = check_accountant_delta(delta)
    dp_accounting_like = hasattr(accountant, "get_delta") and hasattr(accountant, "get_epsilon")
    neither = not (hasattr(accountant, "get_epsilon") or hasattr(accountant, "compute_epsilon"))
    if (dp_accounting_like and not kwargs) or neither:  # neither: a DpEvent, or refused there
        return Claim.from_dp_accounting(accountant, delta=delta)
    epsilon = _epsilon_of(accountant, delta, kwargs)
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError(
            f"{type(accountant).__name__} states epsilon = {epsilon!r} at delta = {delta:g}; "
            "give a larger delta (or check the run's noise and steps)."
        )
    return Claim(
        epsilon=epsilon,
        delta=delta,
        adjacency="add-remove",
        reference=f"{_library(accountant)} {type(accountant).__name__}: epsilon at delta = {delta:g}",
    )


def profile_claim(accountant_or_event, delta: float | None = None) -> ProfileClaim:
    """A dp_accounting accountant's whole ``delta(epsilon)`` curve as a training claim.

    Args:
        accountant_or_event: a dp_accounting accountant or ``DpEvent``.
        delta: the delta at which the training audit reports its certified epsilon
            (required).

    Returns:
        The :class:`~dpaudit.training.ProfileClaim` (``delta_of_epsilon`` is the
        accountant's ``get_delta``).

    Raises:
        ValueError, TypeError: as :meth:`dpaudit.Claim.from_dp_accounting`.
    """
    delta = check_accountant_delta(delta)
    accountant = as_accountant(accountant_or_event)
    epsilon = epsilon_at(accountant, delta)
    return ProfileClaim(
        delta_of_epsilon=delta_curve(accountant),
        delta=delta,
        description=(
            f"the privacy profile of dp_accounting {type(accountant).__name__} "
            f"(epsilon {epsilon:.4g} at delta {delta:g})"
        ),
    )
