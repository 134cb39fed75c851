r"""Record spaces: the set of records a sensitivity claim is about.

The worst-case search of :mod:`dpaudit.testing.search` must stay inside the
set of records the claim is about. A :class:`RecordSpace` describes that set
for one record and supplies what the search needs: a projection (for gradient
ascent), a sampler (for restarts) and a map from the unit cube onto the set
(for derivative-free search):

* :class:`L2Ball` — curves on a grid with ``||x||_{L2} <= tau`` in the grid's
  quadrature norm ``(sum_a w_a x_a^2)^(1/2)`` (LR Assumption 1, MRS Sec. 4), or
  vectors in ``R^d`` with ``||x||_2 <= r`` (ERM features).
* :class:`Box` — points in ``[low, high]^d`` (KDE data, scores of an ECDF).
* :class:`Labels` — a finite set of labels (never moved by gradients).
* :class:`Product` — tuple records such as ``(x, y)`` for labelled data.

The hypothesis strategies of :mod:`dpaudit.testing.strategies` draw records
from the same spaces.

Example:
    >>> from dpaudit.model.spaces import uniform_grid
    >>> ball = L2Ball(1.0, uniform_grid(4))
    >>> float(ball.norm(ball.project(np.full(4, 3.0))))
    1.0
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.core.checks import check_finite_number
from dpaudit.model.mechanism import Mechanism
from dpaudit.model.spaces.grids import Grid

__all__ = [
    "Box",
    "L2Ball",
    "Labels",
    "Product",
    "RecordSpace",
    "record_space_of",
]


class RecordSpace:
    """The set of admissible records, with what a search needs to move inside it.

    A record is a single array (leaf spaces) or a tuple of records
    (:class:`Product`). All methods accept records with leading batch axes.
    Subclasses implement :meth:`project`, :meth:`sample`, :meth:`from_unit`,
    :meth:`contains`, :meth:`precondition`, :meth:`record_norm` and the
    attributes ``shape``, ``unit_dim``, ``scale`` and ``differentiable``.
    """

    #: shape of one record (leaf spaces).
    shape: tuple[int, ...] = ()
    #: number of unit-cube coordinates of :meth:`from_unit`.
    unit_dim: int = 0
    #: typical size of the set (step sizes are fractions of it).
    scale: float = 1.0
    #: whether gradients may move this record (False for labels).
    differentiable: bool = True

    def project(self, record):  # pragma: no cover - abstract
        """The nearest admissible record (metric projection), batched.

        Args:
            record: a record, or records with leading batch axes.

        Returns:
            The nearest admissible record(s), same structure (numpy or JAX like the input).
        """
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, batch_shape=()):  # pragma: no cover - abstract
        """Random admissible records with leading shape ``batch_shape`` (numpy).

        Args:
            rng: the numpy generator to draw from.
            batch_shape: the leading batch shape of the records drawn.

        Returns:
            Random admissible records (numpy) with leading shape ``batch_shape``.
        """
        raise NotImplementedError

    def from_unit(self, u):  # pragma: no cover - abstract
        """Map ``u`` in ``[0, 1]^unit_dim`` (shape ``(..., unit_dim)``) onto the set (numpy, onto).

        Args:
            u: unit-cube coordinates, shape ``(..., unit_dim)``.

        Returns:
            The records (numpy) that ``u`` maps to, with leading shape ``u.shape[:-1]``.
        """
        raise NotImplementedError

    def contains(self, record, *, rtol: float = 1e-9) -> bool:  # pragma: no cover - abstract
        """True when every record (of a batch) is admissible up to ``rtol``.

        Args:
            record: a record, or records with leading batch axes.
            rtol: relative slack allowed on the bound (rounding of projected records).

        Returns:
            True when every record is admissible.
        """
        raise NotImplementedError

    def precondition(self, gradient):
        """The gradient in the space's metric (Riemannian gradient); identity by default.

        Args:
            gradient: the Euclidean gradient with respect to a record (batched).

        Returns:
            The gradient in the space's metric, same shape.
        """
        return gradient

    def record_norm(self, vector):
        """Norm of a tangent vector (per record, batched) used to normalise steps.

        Args:
            vector: tangent vectors, one per record (batched).

        Returns:
            Their norms, one per record.
        """
        xp = _xp(vector)
        axes = tuple(range(-len(self.shape), 0))
        return xp.sqrt(xp.sum(vector * vector, axis=axes)) if axes else xp.abs(vector)

    def leaf_spaces(self) -> list[RecordSpace]:
        """The leaf spaces in the order of ``jax.tree_util.tree_leaves(record)``."""
        return [self]

    def describe(self) -> str:
        """One line for messages."""
        return type(self).__name__


def _xp(x):
    """numpy for numpy inputs (no compilation), jax.numpy for JAX arrays and tracers."""
    return jnp if isinstance(x, jax.Array) else np


@dataclasses.dataclass(frozen=True, eq=False)
class L2Ball(RecordSpace):
    r"""Records with ``||x|| <= radius``: curves on a grid, or vectors in ``R^dim``.

    On a grid the norm is the quadrature L2 norm ``(sum_a w_a x_a^2)^(1/2)``
    of the grid values (LR Assumption 1: ``||X_i||_H <= tau``); without a grid
    it is the Euclidean norm of a vector of length ``dim``.

    Args:
        radius: the bound ``tau`` (> 0).
        grid: a :class:`~dpaudit.model.spaces.Grid` (records are its ``m`` values), or None.
        dim: the vector length when ``grid`` is None.

    Raises:
        ValueError / TypeError: for a non-positive radius, or neither/both of grid and dim.
    """

    radius: float
    grid: Grid | None = None
    dim: int | None = None

    def __post_init__(self):
        radius = check_finite_number("L2Ball radius", self.radius)
        if radius <= 0:
            raise ValueError(f"L2Ball radius must be > 0, got {radius!r}.")
        object.__setattr__(self, "radius", radius)
        if (self.grid is None) == (self.dim is None):
            raise ValueError("L2Ball needs exactly one of grid (curves) or dim (vectors).")
        if self.grid is not None and not isinstance(self.grid, Grid):
            raise TypeError(f"L2Ball grid must be a dpaudit Grid, got {type(self.grid).__name__}.")
        if self.dim is not None and (
            isinstance(self.dim, bool) or not isinstance(self.dim, int | np.integer) or self.dim < 1
        ):
            raise ValueError(f"L2Ball dim must be a positive integer, got {self.dim!r}.")

    @property
    def size(self) -> int:
        return self.grid.size if self.grid is not None else int(self.dim)

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.size,)

    @property
    def unit_dim(self) -> int:
        return self.size

    @property
    def scale(self) -> float:
        return self.radius

    @property
    def weights(self) -> np.ndarray:
        if self.grid is None:
            return np.ones(self.size)
        return np.asarray(self.grid.weights, dtype=np.float64)

    def norm(self, record):
        """``(sum_a w_a x_a^2)^(1/2)`` along the last axis.

        Args:
            record: a record, or records with leading batch axes.

        Returns:
            The weighted L2 norm of each record.
        """
        xp = _xp(record)
        x = xp.asarray(record, dtype=xp.float64)
        return xp.sqrt(xp.sum(self.weights * x * x, axis=-1))

    def record_norm(self, vector):
        """The weighted L2 norm of a tangent vector (the ball's own metric).

        Args:
            vector: as in :meth:`RecordSpace.record_norm`.
        """
        return self.norm(vector)

    def precondition(self, gradient):
        """The Riemannian gradient ``g_a / w_a`` of the weighted L2 metric.

        Args:
            gradient: as in :meth:`RecordSpace.precondition`.
        """
        return gradient / self.weights

    def project(self, record):
        """Radial projection onto the ball (records inside are unchanged).

        Args:
            record: as in :meth:`RecordSpace.project`.
        """
        xp = _xp(record)
        x = xp.asarray(record, dtype=xp.float64)
        norm = self.norm(x)
        factor = xp.minimum(1.0, self.radius / xp.where(norm > 0, norm, 1.0))
        return x * factor[..., None]

    def sample(self, rng: np.random.Generator, batch_shape=()):
        # uniform in the ball of the weighted norm
        """Uniform draws in the ball of the weighted norm.

        Args:
            rng, batch_shape: as in :meth:`RecordSpace.sample`.
        """
        z = rng.standard_normal((*tuple(batch_shape), self.size)) / np.sqrt(self.weights)
        direction = z / self.norm(z)[..., None]
        u = rng.uniform(size=tuple(batch_shape))
        return direction * (self.radius * u ** (1.0 / self.size))[..., None]

    def from_unit(self, u):
        """The cube ``[-r, r]`` per coordinate (scaled by ``w_a^(-1/2)``), projected.

        Args:
            u: as in :meth:`RecordSpace.from_unit`.
        """
        x = (2.0 * np.asarray(u, dtype=float) - 1.0) * self.radius / np.sqrt(self.weights)
        return self.project(x)

    def contains(self, record, *, rtol: float = 1e-9) -> bool:
        """Weighted L2 norm ``<= radius (1 + rtol)``.

        Args:
            record, rtol: as in :meth:`RecordSpace.contains`.
        """
        return bool(np.all(np.asarray(self.norm(record)) <= self.radius * (1.0 + rtol)))

    def describe(self) -> str:
        if self.grid is not None:
            return f"curves on a {self.grid.size}-point grid with L2 norm <= {self.radius:g}"
        return f"vectors in R^{self.dim} with Euclidean norm <= {self.radius:g}"


class _ScalarOrVectorSpace(RecordSpace):
    """A leaf space of scalar records (``dim`` None) or vectors of length ``dim``."""

    dim: int | None = None

    def _check_dim(self) -> None:
        dim = self.dim
        if dim is not None and (
            isinstance(dim, bool) or not isinstance(dim, int | np.integer) or dim < 1
        ):
            raise ValueError(
                f"{type(self).__name__} dim must be a positive integer or None, got {dim!r}."
            )

    def _unit_records(self, u) -> np.ndarray:
        """Unit-cube coordinates ``(..., unit_dim)`` shaped like records (scalars: last axis dropped)."""
        u = np.asarray(u, dtype=float)
        return u[..., 0] if self.dim is None else u

    @property
    def shape(self) -> tuple[int, ...]:
        return () if self.dim is None else (int(self.dim),)

    @property
    def unit_dim(self) -> int:
        return 1 if self.dim is None else int(self.dim)


@dataclasses.dataclass(frozen=True, eq=False)
class Box(_ScalarOrVectorSpace):
    """Records in the box ``[low, high]^dim`` (scalars when ``dim`` is None).

    Args:
        low, high: the bounds (``low < high``), numbers.
        dim: the record length, or None for scalar records (scores).

    Raises:
        ValueError / TypeError: for ``low >= high`` or a bad dim.
    """

    low: float = 0.0
    high: float = 1.0
    dim: int | None = None

    def __post_init__(self):
        low = check_finite_number("Box low", self.low)
        high = check_finite_number("Box high", self.high)
        if not low < high:
            raise ValueError(f"Box needs low < high, got low={low!r}, high={high!r}.")
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)
        self._check_dim()

    @property
    def scale(self) -> float:
        return self.high - self.low

    def project(self, record):
        """Clip to ``[low, high]``.

        Args:
            record: as in :meth:`RecordSpace.project`.
        """
        xp = _xp(record)
        return xp.clip(xp.asarray(record, dtype=xp.float64), self.low, self.high)

    def sample(self, rng: np.random.Generator, batch_shape=()):
        """Uniform draws in the box.

        Args:
            rng, batch_shape: as in :meth:`RecordSpace.sample`.
        """
        return rng.uniform(self.low, self.high, size=(*tuple(batch_shape), *self.shape))

    def from_unit(self, u):
        """The affine map of ``[0, 1]`` onto ``[low, high]`` per coordinate.

        Args:
            u: as in :meth:`RecordSpace.from_unit`.
        """
        u = self._unit_records(u)
        return self.low + np.clip(u, 0.0, 1.0) * (self.high - self.low)

    def contains(self, record, *, rtol: float = 1e-9) -> bool:
        """Inside the box widened by ``rtol (high - low)``.

        Args:
            record, rtol: as in :meth:`RecordSpace.contains`.
        """
        x = np.asarray(record)
        slack = rtol * (self.high - self.low)
        return bool(np.all((x >= self.low - slack) & (x <= self.high + slack)))

    def describe(self) -> str:
        where = "scalars" if self.dim is None else f"points in R^{self.dim}"
        return f"{where} in [{self.low:g}, {self.high:g}]" + ("" if self.dim is None else "^d")


@dataclasses.dataclass(frozen=True, eq=False)
class Labels(_ScalarOrVectorSpace):
    """Records from a finite set of labels (``(-1.0, 1.0)``, ``(0, 1)``, categories ``0..k-1``).

    Scalar records by default; with ``dim`` a record is a vector of ``dim``
    labels (e.g. the 0/1 answers of one record to ``dim`` counting queries).
    Gradients never move labels; restarts and derivative-free search choose them.

    Raises:
        ValueError: for no labels, non-finite labels, or a bad dim.
    """

    values: tuple = (-1.0, 1.0)
    dim: int | None = None
    differentiable = False

    def __post_init__(self):
        values = np.asarray(self.values)
        if values.ndim != 1 or values.size < 1 or not np.all(np.isfinite(values)):
            raise ValueError(
                f"Labels needs a non-empty list of finite labels, got {self.values!r}."
            )
        object.__setattr__(self, "values", tuple(values.tolist()))
        self._check_dim()

    @property
    def array(self) -> np.ndarray:
        return np.asarray(self.values)

    def project(self, record):
        """The nearest label.

        Args:
            record: as in :meth:`RecordSpace.project`.
        """
        xp = _xp(record)
        x = xp.asarray(record)
        nearest = xp.argmin(xp.abs(x[..., None] - self.array), axis=-1)
        return xp.asarray(self.array)[nearest]

    def sample(self, rng: np.random.Generator, batch_shape=()):
        """Labels drawn uniformly.

        Args:
            rng, batch_shape: as in :meth:`RecordSpace.sample`.
        """
        return rng.choice(self.array, size=(*tuple(batch_shape), *self.shape))

    def from_unit(self, u):
        """Label ``floor(u k)`` of the ``k`` labels.

        Args:
            u: as in :meth:`RecordSpace.from_unit`.
        """
        u = self._unit_records(u)
        k = len(self.values)
        return self.array[np.clip(np.floor(u * k).astype(int), 0, k - 1)]

    def contains(self, record, *, rtol: float = 1e-9) -> bool:
        """Every entry is one of the labels (``rtol`` is not used).

        Args:
            record, rtol: as in :meth:`RecordSpace.contains`.
        """
        return bool(np.all(np.isin(np.asarray(record), self.array)))

    def describe(self) -> str:
        where = "" if self.dim is None else f" (vectors of {self.dim})"
        return f"labels in {set(self.values)}{where}"


@dataclasses.dataclass(frozen=True, eq=False)
class Product(RecordSpace):
    """Tuple records ``(r_1, ..., r_k)``, one from each space (labelled points: ``(x, y)``).

    Raises:
        TypeError: if a component is not a :class:`RecordSpace`.
    """

    spaces: tuple

    def __init__(self, *spaces):
        if len(spaces) == 1 and isinstance(spaces[0], list | tuple):
            spaces = tuple(spaces[0])
        if not spaces or not all(isinstance(s, RecordSpace) for s in spaces):
            raise TypeError("Product takes one or more RecordSpace components.")
        object.__setattr__(self, "spaces", tuple(spaces))

    @property
    def unit_dim(self) -> int:
        return sum(s.unit_dim for s in self.spaces)

    @property
    def scale(self) -> float:
        return max(s.scale for s in self.spaces)

    def leaf_spaces(self) -> list[RecordSpace]:
        return [leaf for s in self.spaces for leaf in s.leaf_spaces()]

    def project(self, record):
        """Project each component onto its space.

        Args:
            record: as in :meth:`RecordSpace.project`.
        """
        return tuple(s.project(r) for s, r in zip(self.spaces, record, strict=True))

    def sample(self, rng: np.random.Generator, batch_shape=()):
        """One draw from each component space.

        Args:
            rng, batch_shape: as in :meth:`RecordSpace.sample`.
        """
        return tuple(s.sample(rng, batch_shape) for s in self.spaces)

    def from_unit(self, u):
        """Consecutive blocks of ``u`` mapped by each component space.

        Args:
            u: as in :meth:`RecordSpace.from_unit`.
        """
        u = np.asarray(u, dtype=float)
        out, start = [], 0
        for s in self.spaces:
            out.append(s.from_unit(u[..., start : start + s.unit_dim]))
            start += s.unit_dim
        return tuple(out)

    def contains(self, record, *, rtol: float = 1e-9) -> bool:
        """Every component is admissible in its space.

        Args:
            record, rtol: as in :meth:`RecordSpace.contains`.
        """
        return all(s.contains(r, rtol=rtol) for s, r in zip(self.spaces, record, strict=True))

    def describe(self) -> str:
        return "(" + ", ".join(s.describe() for s in self.spaces) + ")"


def record_space_of(mechanism: Mechanism) -> RecordSpace | None:
    """The record space a mechanism declares, or None.

    Looked up, in order, as an attribute ``record_space`` of the mechanism and
    as ``mechanism.params["record_space"]`` (builders may put it there until
    :class:`~dpaudit.Mechanism` has a field for it).

    Args:
        mechanism: the :class:`~dpaudit.Mechanism`.

    Returns:
        Its :class:`RecordSpace`, or None when it declares none.

    Raises:
        TypeError: if the declared record space is not a :class:`RecordSpace`.
    """
    space = getattr(mechanism, "record_space", None)
    if space is None:
        space = mechanism.params.get("record_space")
    if space is not None and not isinstance(space, RecordSpace):
        raise TypeError(
            f"mechanism {mechanism.name!r} declares a record_space that is not a "
            f"dpaudit.testing RecordSpace: {type(space).__name__}."
        )
    return space
