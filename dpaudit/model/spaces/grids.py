"""Grids on [0, 1]^d with L2 quadrature weights.

A function on the domain is represented by its values at the grid points; the
L2 inner product is approximated by the quadrature rule
``<f, g> = sum_a w_a f(x_a) g(x_a)``. The default midpoint grid has equal
weights ``1/m`` on ``m`` points, the L2 normalisation of LR Alg. 1 as corrected in
docs/paper-errors.md#lr-discretization-scale (docs/conventions.md#grid-normalisation):
Gram-matrix eigenpairs ``(mu_k, v_k)`` become L2 eigenpairs
``lambda_k = mu_k / m`` and ``phi_k = sqrt(m) v_k``.
"""

from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.core.checks import check_finite, check_positive


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Grid:
    """Points of a domain with quadrature weights for the L2 inner product.

    Attributes:
        points: array of shape ``(m, d)``.
        weights: array of shape ``(m,)``, positive, summing to the domain volume.
    """

    points: jax.Array
    weights: jax.Array

    @property
    def size(self) -> int:
        """Number of grid points ``m``."""
        return len(self.points)

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the domain."""
        return int(self.points.shape[1])

    def inner(self, f: jax.Array, g: jax.Array) -> jax.Array:
        """Quadrature L2 inner product of grid values along the last axis.

        Args:
            f: grid values, shape ``(..., m)``.
            g: grid values, shape ``(..., m)``.

        Returns:
            ``sum_a w_a f_a g_a``, shape ``(...)``.
        """
        return jnp.sum(self.weights * f * g, axis=-1)


def uniform_grid(size: int | tuple[int, ...], dim: int = 1, *, rule: str = "midpoint") -> Grid:
    """Tensor grid on ``[0, 1]^dim``.

    Args:
        size: points per axis (an int, or one int per axis).
        dim: dimension of the domain (1, 2, ...).
        rule: ``"midpoint"`` (cell centres ``(i - 1/2)/n``, equal weights; the
            normalisation ``lambda = mu/m``, docs/paper-errors.md#lr-discretization-scale) or ``"trapezoid"``
            (``linspace(0, 1, n)`` including the endpoints, trapezoid weights).

    Returns:
        A :class:`Grid` with ``prod(size)`` points in lexicographic order.

    Raises:
        ValueError: for a non-positive size, a size tuple whose length is not
            ``dim``, or an unknown rule.

    Example:
        >>> g = uniform_grid(4)
        >>> [round(float(t), 3) for t in g.points[:, 0]]
        [0.125, 0.375, 0.625, 0.875]
    """
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}.")
    sizes = (size,) * dim if isinstance(size, int | np.integer) else tuple(size)
    if len(sizes) != dim:
        raise ValueError(f"size has {len(sizes)} entries but dim is {dim}; give one per axis.")
    axes, axis_weights = [], []
    for n in sizes:
        if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
            raise ValueError(f"grid size per axis must be a positive integer, got {n!r}.")
        n = int(n)
        if rule == "midpoint":
            axes.append((np.arange(n) + 0.5) / n)
            axis_weights.append(np.full(n, 1.0 / n))
        elif rule == "trapezoid":
            if n < 2:
                raise ValueError("the trapezoid rule needs at least 2 points per axis.")
            axes.append(np.linspace(0.0, 1.0, n))
            w = np.full(n, 1.0 / (n - 1))
            w[[0, -1]] *= 0.5
            axis_weights.append(w)
        else:
            raise ValueError(f"rule must be 'midpoint' or 'trapezoid', got {rule!r}.")
    points = np.array(list(itertools.product(*axes)), dtype=float).reshape(-1, dim)
    weights = np.array([np.prod(w) for w in itertools.product(*axis_weights)], dtype=float)
    # device_put: the same float64 arrays, without the program jnp.asarray compiles per shape
    return Grid(points=jax.device_put(points), weights=jax.device_put(weights))


def custom_grid(points, weights) -> Grid:
    """A grid from user-given points ``(m,)`` or ``(m, d)`` and positive weights ``(m,)``.

    Args:
        points: the grid points, ``(m,)`` or ``(m, d)``.
        weights: the quadrature weights, ``(m,)``, all > 0.

    Returns:
        The :class:`Grid`.

    Raises:
        ValueError: on NaN/inf, non-positive weights, or mismatched lengths.
    """
    pts = np.asarray(points, dtype=float)
    if pts.ndim == 1:
        pts = pts[:, None]
    if pts.ndim != 2:
        raise ValueError(f"points must have shape (m,) or (m, d), got {pts.shape}.")
    w = np.asarray(weights, dtype=float)
    check_finite("grid points", pts)
    check_positive("grid weights", w)
    if w.shape != (pts.shape[0],):
        raise ValueError(
            f"weights must have shape ({pts.shape[0]},) to match the points, got {w.shape}."
        )
    return Grid(points=jax.device_put(pts), weights=jax.device_put(w))
