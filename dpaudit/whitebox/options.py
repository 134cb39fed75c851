"""The options of a white-box audit, as one frozen record checked once.

:func:`dpaudit.audit` keeps its keyword arguments (what users type); it builds an
:class:`AuditOptions` from them, and the engine's stages read that record.
:func:`dpaudit.whitebox.engine.run_audit` takes the record itself, with the same
results.

Example:
    >>> opts = AuditOptions(samples=20_000, epsilons=[0.5, 1.0])
    >>> opts.samples, opts.epsilons, opts.bound_method
    (20000, (0.5, 1.0), 'bernstein')
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpaudit.core.budget import CostEstimate
from dpaudit.estimation.pld import BOUND_METHODS
from dpaudit.model.loss import ROUTES

__all__ = ["KEPT_LOSS_BYTES", "SECONDS_PER_RELEASE_FLOOR", "AuditOptions", "whitebox_cost"]

#: A floor on the time of one Monte Carlo release and its loss in one direction (the
#: fastest white-box audits measured take tens of nanoseconds): a budget refused on this
#: floor is beyond the limit whatever the mechanism.
SECONDS_PER_RELEASE_FLOOR = 1e-9
#: Bytes of one kept loss (a float64) of ``keep_samples``.
KEPT_LOSS_BYTES = 8


@dataclasses.dataclass(frozen=True)
class AuditOptions:
    """How a white-box audit runs: every keyword argument of :func:`dpaudit.audit` (frozen;
    checked when built).

    The fields and their defaults are the keyword arguments of :func:`dpaudit.audit` (see
    there for their meaning), except the deprecated ``method=`` alias.

    Attributes:
        samples: Monte Carlo releases per direction, an integer >= 2.
        seed: seed of ``jax.random.key``.
        confidence: ``1 - alpha`` for every bound and verdict, in ``(0, 1)``.
        epsilons: the curves' grid (a tuple of finite numbers >= 0), or ``None``.
        route: ``"auto"`` or one of :data:`dpaudit.loss.ROUTES`.
        exact: use exact/numerical accounting when the structure allows.
        compatibility: run the compatibility analysis for functional noises.
        check_adjacency: check that the datasets are neighbours under the claim's adjacency.
        bound_method: one of :data:`dpaudit.pld.BOUND_METHODS`.
        chunk_size: releases per chunk (a positive integer), or ``None``.
        keep_samples: losses kept per direction, >= 0.
        discretization: grid spacing of the numerical Laplace accounting, finite and > 0.
        progress: show a progress bar (``None``: for long runs on a terminal).
        executor: ``None``, ``"ray"`` or a :mod:`dpaudit.distributed` executor.
        force: run even when the audit's estimated cost is beyond
            :data:`dpaudit.core.budget.MAX_SECONDS` or :data:`~dpaudit.core.budget.MAX_BYTES`.

    Raises:
        ValueError: one sentence naming the bad argument.
    """

    samples: int = 100_000
    seed: int = 0
    confidence: float = 0.95
    epsilons: Sequence[float] | None = None
    route: str = "auto"
    exact: bool = True
    compatibility: bool = True
    check_adjacency: bool = True
    bound_method: str = "bernstein"
    chunk_size: int | None = None
    keep_samples: int = 1_000_000
    discretization: float = 1e-4
    progress: bool | None = None
    executor: Any = None
    force: bool = False

    def __post_init__(self) -> None:
        """Check every option once (one sentence naming the bad one) and normalise its type."""
        samples, confidence = self.samples, self.confidence
        if isinstance(samples, bool) or not isinstance(samples, int | np.integer) or samples < 2:
            raise ValueError(f"samples must be an integer >= 2, got {samples!r}.")
        if not (isinstance(confidence, float | int) and 0 < confidence < 1):
            raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}.")
        if self.route not in (*ROUTES, "auto"):
            raise ValueError(f"route must be 'auto' or one of {ROUTES}, got {self.route!r}.")
        if self.bound_method not in BOUND_METHODS:
            raise ValueError(
                f"bound_method must be one of {BOUND_METHODS}, got {self.bound_method!r}."
            )
        if self.keep_samples < 0:
            raise ValueError(f"keep_samples must be >= 0, got {self.keep_samples!r}.")
        discretization = self.discretization
        if not (math.isfinite(discretization) and discretization > 0):
            raise ValueError(f"discretization must be a finite number > 0, got {discretization!r}.")
        chunk = self.chunk_size
        if chunk is not None and (
            isinstance(chunk, bool) or not isinstance(chunk, int | np.integer) or chunk < 1
        ):
            raise ValueError(f"chunk_size must be a positive integer, got {chunk!r}.")
        values = {
            "samples": int(samples),
            "seed": int(self.seed),
            "confidence": float(confidence),
            "epsilons": _epsilon_grid(self.epsilons),
        }
        for field, value in values.items():
            object.__setattr__(self, field, value)


def whitebox_cost(options: AuditOptions) -> CostEstimate:
    """A lower estimate of a white-box audit's cost, known before anything runs.

    The Monte Carlo losses are folded chunk by chunk, so the memory that grows with the
    budget is the ``keep_samples`` losses kept per direction; the time is at least
    :data:`SECONDS_PER_RELEASE_FLOOR` per release and direction.

    Args:
        options: the audit's options.

    Returns:
        The :class:`~dpaudit.core.budget.CostEstimate` (a floor: refusing on it never
        refuses an audit that would fit the limits).
    """
    return CostEstimate(
        seconds=2 * options.samples * SECONDS_PER_RELEASE_FLOOR,
        bytes=2 * min(options.keep_samples, options.samples) * KEPT_LOSS_BYTES,
        basis=f"at least {SECONDS_PER_RELEASE_FLOOR * 1e9:g} ns per release and direction, "
        f"{options.samples} releases per direction, {options.keep_samples} losses kept per "
        "direction",
    )


def _epsilon_grid(epsilons) -> tuple[float, ...] | None:
    """A curve grid of finite epsilons >= 0, as a tuple (a negative epsilon is no privacy level)."""
    try:
        grid = np.asarray([] if epsilons is None else epsilons, dtype=float)
    except (TypeError, ValueError):
        grid = np.array([math.nan])
    if grid.ndim > 1 or not np.all(np.isfinite(grid) & (grid >= 0)):
        raise ValueError(f"epsilons must be a list of finite numbers >= 0, got {epsilons!r}.")
    return None if epsilons is None else tuple(grid.reshape(-1).tolist())
