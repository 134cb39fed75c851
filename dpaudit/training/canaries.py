r"""Canary designs: how a canary enters a training run and how a released state is scored.

A design has two methods: ``arguments(dataset, present)`` gives the dataset and the
extra keyword arguments of one call of the user's ``train`` (with or without the
canary), and ``score(state)`` turns the released state into one number, higher
meaning "the canary was in".

* :class:`InputCanary` (input space, black-box): a record (e.g. a mislabelled
  example) appended to the dataset (add/remove adjacency); score = ``-loss(state, record)``.
* :class:`GradientCanary` (gradient space, white-box): ``train`` receives
  ``gradient_canary``, a vector added as one more per-example gradient (a Dirac
  ``norm e_k``; zeros when absent); the released state holds the noisy updates
  ``(T, d)`` (all iterates) and the score reads their coordinate ``k``: the sum over
  iterates, the last one, or the sum of a per-step transform (e.g.
  :func:`subsampled_gaussian_loss`, the exact per-step privacy loss, which makes the
  test the Neyman–Pearson one).
* :class:`UserCanary`: the user's ``insert(dataset) -> dataset`` and ``score(state)``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "AGGREGATES",
    "DiracCanaries",
    "GradientCanary",
    "InputCanary",
    "UserCanary",
    "subsampled_gaussian_loss",
]

#: How a gradient canary's coordinate is read off the updates.
AGGREGATES = ("sum", "last")


def _append(dataset, record):
    """``dataset`` (an array or pytree, records on the first axis) with ``record`` appended."""
    return jax.tree_util.tree_map(
        lambda d, r: np.concatenate([np.asarray(d), np.asarray(r)[None]], axis=0), dataset, record
    )


@dataclasses.dataclass(frozen=True)
class InputCanary:
    """A record appended to the dataset; scored by its negated loss under the released state.

    Attributes:
        record: the canary record, a pytree matching one record of the dataset (e.g. ``(x, y)``).
        loss: ``loss(state, record) -> float`` (lower when the model saw the record).
    """

    record: Any
    loss: Callable
    kind: str = dataclasses.field(default="input", init=False)

    def arguments(self, dataset, present: bool) -> tuple[Any, dict]:
        """The dataset (with the canary appended when ``present``) and no extra arguments."""
        return (_append(dataset, self.record) if present else dataset), {}

    def score(self, state) -> float:
        """``-loss(state, record)``."""
        return -float(self.loss(state, self.record))


@dataclasses.dataclass(frozen=True)
class GradientCanary:
    """A Dirac gradient ``norm e_coordinate`` given to ``train`` as ``gradient_canary``.

    Attributes:
        dim: the number of parameters ``d``.
        coordinate: the coordinate ``k`` the canary pushes.
        norm: the canary gradient's norm (before the training's own clipping).
        aggregate: ``"sum"`` over all iterates or ``"last"`` iterate.
        transform: optional per-step map applied to the coordinate before summing
            (white-box knowledge, e.g. :func:`subsampled_gaussian_loss`).
        updates: ``updates(state) -> (T, d)`` array (default: the state itself).
    """

    dim: int
    coordinate: int
    norm: float = 1.0
    aggregate: str = "sum"
    transform: Callable | None = None
    updates: Callable | None = None
    kind: str = dataclasses.field(default="gradient", init=False)

    def __post_init__(self):
        if not (isinstance(self.dim, int) and self.dim >= 1):
            raise ValueError(f"dim must be a positive integer, got {self.dim!r}.")
        if not (isinstance(self.coordinate, int) and 0 <= self.coordinate < self.dim):
            raise ValueError(f"coordinate must be in [0, {self.dim}), got {self.coordinate!r}.")
        if not (math.isfinite(self.norm) and self.norm > 0):
            raise ValueError(f"norm must be a positive number, got {self.norm!r}.")
        if self.aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {self.aggregate!r}.")

    def gradient(self, present: bool) -> np.ndarray:
        """The canary gradient (zeros when absent)."""
        g = np.zeros(self.dim)
        g[self.coordinate] = self.norm if present else 0.0
        return g

    def arguments(self, dataset, present: bool) -> tuple[Any, dict]:
        """The dataset unchanged and ``gradient_canary``."""
        return dataset, {"gradient_canary": self.gradient(present)}

    def score_array(self, states):
        """Scores of a batch of released states (leading run axis), as a JAX array."""
        u = self.updates(states) if self.updates is not None else states
        u = jnp.asarray(u)
        x = u[..., self.coordinate]
        if self.aggregate == "last":
            return x[..., -1]
        if self.transform is not None:
            x = self.transform(x)
        return jnp.sum(x, axis=-1)

    def score(self, state) -> float:
        """The canary coordinate of the updates, summed or the last (after ``transform``)."""
        return float(self.score_array(state))


@dataclasses.dataclass(frozen=True)
class UserCanary:
    """A canary of the user's own: how it enters the dataset and how a state is scored.

    Attributes:
        insert: ``insert(dataset) -> dataset`` with the canary.
        scorer: ``scorer(state) -> float``, higher when the canary was in.
    """

    insert: Callable
    scorer: Callable
    kind: str = dataclasses.field(default="user", init=False)

    def arguments(self, dataset, present: bool) -> tuple[Any, dict]:
        """``insert(dataset)`` when ``present``, else the dataset; no extra arguments."""
        return (self.insert(dataset) if present else dataset), {}

    def score(self, state) -> float:
        """``scorer(state)``."""
        return float(self.scorer(state))


@dataclasses.dataclass(frozen=True)
class DiracCanaries:
    """``m`` gradient canaries for a one-run audit: canary ``i`` is ``norm e_i``.

    ``train`` receives ``gradient_canary``, an ``(m, dim)`` matrix whose excluded rows are
    zero; canary ``i``'s score reads coordinate ``i`` of the updates like
    :class:`GradientCanary`.

    Attributes:
        m: the number of canaries (``<= dim``).
        dim: the number of parameters.
        norm: each canary gradient's norm.
        transform: optional per-step map of the coordinate before summing.
    """

    m: int
    dim: int
    norm: float = 1.0
    transform: Callable | None = None

    def __post_init__(self):
        if not (isinstance(self.m, int) and 1 <= self.m <= self.dim):
            raise ValueError(
                f"m must be an integer in [1, dim = {self.dim}] (one coordinate per canary), "
                f"got {self.m!r}."
            )

    def gradients(self, included) -> np.ndarray:
        """The ``(m, dim)`` canary gradients, zero rows for the excluded canaries."""
        g = np.zeros((self.m, self.dim))
        g[np.arange(self.m), np.arange(self.m)] = self.norm * np.asarray(included, dtype=float)
        return g

    def scores(self, updates) -> np.ndarray:
        """One score per canary from the ``(T, dim)`` updates of one run."""
        x = jnp.asarray(updates)[:, : self.m]
        if self.transform is not None:
            x = self.transform(x)
        return np.asarray(jnp.sum(x, axis=0), dtype=np.float64)


def subsampled_gaussian_loss(q: float, noise_std: float, norm: float) -> Callable:
    """The per-step privacy loss of a Poisson-subsampled Gaussian step, as a score transform.

    ``x -> log(1 - q + q exp((norm x - norm^2 / 2) / noise_std^2))``: the log-likelihood
    ratio of "canary in" for an observed coordinate ``x`` when the canary (clipped to
    ``norm``) is sampled with probability ``q`` and the noise has standard deviation
    ``noise_std``. Summed over independent steps it is the most powerful score.

    Args:
        q: the sampling probability, in ``(0, 1]``.
        noise_std: the noise standard deviation (``> 0``).
        norm: the canary's clipped norm (``> 0``).

    Returns:
        An elementwise JAX function.
    """
    if not 0 < q <= 1 or not noise_std > 0 or not norm > 0:
        raise ValueError("subsampled_gaussian_loss needs q in (0, 1], noise_std > 0, norm > 0.")

    def transform(x):
        shift = (norm * x - 0.5 * norm**2) / noise_std**2
        return jnp.logaddexp(jnp.log1p(-q) if q < 1 else -jnp.inf, math.log(q) + shift)

    return transform
