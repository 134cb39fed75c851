"""Faulty tree ECDFs: the textbook binary mechanism under replacement, and a data-dependent grid."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro
from numpyro.distributions import Distribution, constraints

import dpaudit
from dpaudit.core.checks import check_epsilon
from dpaudit.model.noise.linear_laplace import AncestorLaplace, LinearLaplace
from mechanisms.common import summary_release
from mechanisms.faulty import register_pair


def _depth(n_points: int) -> int:
    if n_points < 2:
        raise ValueError(f"n_points must be at least 2, got {n_points}.")
    return math.ceil(math.log2(n_points))


def node_counts(scores, grid) -> jnp.ndarray:
    """Counts of every dyadic node of the tree over the grid cells (leaves first, root last).

    Leaf ``i`` counts the clamped scores in ``(tau_(i-1), tau_i]`` (``tau_0 = -inf``);
    padded leaves are empty.

    Args:
        scores: ``(n,)`` scores.
        grid: ``(N,)`` increasing grid.

    Returns:
        The node counts, ``(2^(L+1) - 1,)``.
    """
    grid = jnp.asarray(grid, dtype=jnp.float64)
    x = jnp.clip(jnp.asarray(scores, dtype=jnp.float64), grid[0], grid[-1])
    depth = _depth(grid.shape[0])
    cell = jnp.searchsorted(grid, x, side="left")
    level = jnp.zeros(2**depth).at[cell].add(1.0)
    counts = [level]
    for _ in range(depth):
        level = level.reshape(-1, 2).sum(axis=1)
        counts.append(level)
    return jnp.concatenate(counts)


@dpaudit.register(
    "faulty/textbook-tree-replace-one",
    example={"epsilon": 1.0, "n": 20, "n_points": 8},
    faulty=True,
)
def textbook_tree_replace_one(
    epsilon: float = 1.0, n: int = 100, low: float = 0.0, high: float = 1.0, n_points: int = 8
) -> dpaudit.Mechanism:
    """Textbook binary mechanism: noisy node counts with Lap((L+1)/eps), claimed under replace-one.

    Args:
        epsilon: the claimed epsilon.
        n: the public number of scalar records.
        low, high: the public score range.
        n_points: the grid size ``N`` (tree depth ``ceil(log2 N)``).

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    depth = _depth(n_points)
    grid = jnp.linspace(low, high, n_points)
    scale = (depth + 1) / epsilon
    n_nodes = 2 ** (depth + 1) - 1

    def summary(data):
        scores = jnp.asarray(data, dtype=jnp.float64)
        if scores.shape != (n,):
            raise ValueError(f"expected {n} scalar scores, got shape {scores.shape}.")
        return node_counts(scores, grid) / n

    return summary_release(
        "faulty/textbook-tree-replace-one",
        summary,
        lambda loc: LinearLaplace(loc, jnp.eye(n_nodes), scale, n),
        epsilon=epsilon,
        sensitivity=float(depth + 1),
        sensitivity_norm="l1",
        reference="binary mechanism (Chan, Shi & Song 2011) with its add/remove bound L+1",
        difference_norm=lambda h: jnp.sum(jnp.abs(jnp.round(n * h, 9)), axis=-1),
        params={"epsilon": epsilon, "n": n, "n_points": n_points, "depth": depth, "scale": scale},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "one record touches L+1 nodes, so L+1 is the node-count l1 sensitivity under "
                "add/remove; a replacement moves a record between two root-to-leaf paths that "
                "differ in up to 2L nodes (docs/paper-errors.md#bmr-noise-scale), so Lap(2L/epsilon) is needed."
            ),
            true_epsilon=2 * depth * epsilon / (depth + 1),
            visible_on="a record moved from the first grid cell to the last (paths share only the root).",
        ),
    )


@register_pair("faulty/textbook-tree-replace-one")
def _tree_pair():
    d = np.linspace(0.0, 1.0, 20)
    d_prime = d.copy()
    d_prime[0] = 1.0  # first cell -> last cell
    return d, d_prime


class PublishedGridECDF(Distribution):
    """A BMR release on a data-dependent grid, published with the grid's two end points.

    The density is the :class:`AncestorLaplace` density of the values times a
    point mass on the end points (counting measure): ``-inf`` unless the
    released end points equal the data's min and max.
    """

    arg_constraints = {}
    support = constraints.real_vector
    pytree_data_fields = ("values", "ends")

    def __init__(self, values_distribution, ends, *, validate_args=None):
        self.values = values_distribution
        self.ends = jnp.asarray(ends, dtype=jnp.float64)
        m = values_distribution.event_shape[0]
        super().__init__(batch_shape=(), event_shape=(m + 2,), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Draws of the PublishedGridECDF release.

        Args:
            key, sample_shape: as :meth:`numpyro.distributions.Distribution.sample`.
        """
        v = self.values.sample(key, sample_shape)
        return jnp.concatenate([v, jnp.broadcast_to(self.ends, (*sample_shape, 2))], axis=-1)

    def log_prob(self, value):
        """Log density (mass) of PublishedGridECDF releases.

        Args:
            value: releases, with any leading shape.
        """
        same = jnp.all(value[..., -2:] == self.ends, axis=-1)
        return jnp.where(same, self.values.log_prob(value[..., :-2]), -jnp.inf)


@dpaudit.register(
    "faulty/ecdf-data-dependent-grid", example={"epsilon": 1.0, "n": 20, "n_points": 4}, faulty=True
)
def ecdf_data_dependent_grid(epsilon: float = 1.0, n: int = 100, n_points: int = 8):
    """BMR ECDF whose grid runs from the data's min to its max (BMR Sec. 3.1 as printed; see docs/paper-errors.md#bmr-data-dependent-grid).

    Args:
        epsilon: the claimed epsilon.
        n: the public number of scalar records.
        n_points: the grid size ``N``.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    depth = _depth(n_points)
    scale = (depth + 1) / epsilon

    def grid_of(scores):
        return jnp.linspace(jnp.min(scores), jnp.max(scores), n_points)

    def summary(data):
        scores = jnp.asarray(data, dtype=jnp.float64)
        if scores.shape != (n,):
            raise ValueError(f"expected {n} scalar scores, got shape {scores.shape}.")
        grid = grid_of(scores)
        values = jnp.sum(scores[:, None] <= grid[None, :], axis=0) / n
        return jnp.concatenate([values, grid[jnp.array([0, -1])]])

    def model(data):
        f = summary(data)
        values = AncestorLaplace(f[:-2], depth, scale, count_scale=n)
        numpyro.sample("release", PublishedGridECDF(values, f[-2:]))

    return dpaudit.Mechanism(
        name="faulty/ecdf-data-dependent-grid",
        model=model,
        claim=dpaudit.Claim(
            epsilon=epsilon,
            sensitivity_norm="l1",
            sensitivity=float(depth + 1),
            reference="BMR Thm 3.1 with tau_1 = min, tau_N = max of the data",
        ),
        summary=summary,
        difference_norm=lambda h: jnp.where(
            jnp.any(h[..., -2:] != 0, axis=-1), jnp.inf, jnp.sum(jnp.abs(n * h[..., :-2]), axis=-1)
        ),
        params={"epsilon": epsilon, "n": n, "n_points": n_points, "depth": depth},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "the grid end points are the data's min and max; publishing the ECDF as a "
                "function publishes them, so neighbours with another extreme record give "
                "mutually singular releases (docs/paper-errors.md#bmr-data-dependent-grid)."
            ),
            true_epsilon=math.inf,
            visible_on="a pair that changes the largest (or smallest) score.",
        ),
    )


@register_pair("faulty/ecdf-data-dependent-grid")
def _grid_pair():
    d = np.linspace(0.1, 0.9, 20)
    d_prime = d.copy()
    d_prime[-1] = 1.0
    return d, d_prime
