r"""hypothesis strategies for the datasets dpaudit's mechanisms take, and for neighbouring pairs.

Datasets are numpy arrays (or tuples of arrays) with the records on the first
axis, as :mod:`dpaudit.model.mechanism` expects:

* :func:`curves` — ``n`` curves on a grid with quadrature L2 norm ``<= tau``,
  smooth (a few cosine modes), rough (independent values at the grid
  points), or either;
* :func:`cube_points` — ``n`` points of ``[0, 1]^d`` (KDE data);
* :func:`labelled_points` — ``(X, y)`` with ``||x_i||_2 <= radius`` and labels
  ``y_i`` in a finite set (ERM, SVM);
* :func:`scores_with_labels` — ``(s, y)`` with scores in ``[low, high]`` and 0/1
  labels (ECDF, ROC);
* :func:`datasets` and :func:`records` for any
  :class:`~dpaudit.testing.record_spaces.RecordSpace`, and
  :func:`neighbouring_pairs` for pairs ``(D, D')`` under either adjacency.

Sizes and shapes are arguments (``n`` is an int, a ``(min, max)`` range or a
strategy). Everything shrinks towards small, readable counterexamples: fewer
records, zero curves and coefficients, the lower end of a box, the first label,
and the first record as the one that changes.

Example:
    >>> from hypothesis import given, settings
    >>> from dpaudit.model.spaces import uniform_grid
    >>> from dpaudit.testing import L2Ball
    >>> grid = uniform_grid(16)
    >>> @settings(max_examples=20, derandomize=True, deadline=None)
    ... @given(neighbouring_pairs(L2Ball(1.0, grid), n=(2, 5)))
    ... def test_mean_moves_at_most_2_tau_over_n(pair):
    ...     data, prime = pair
    ...     h = data.mean(axis=0) - prime.mean(axis=0)
    ...     assert (grid.weights * h * h).sum() ** 0.5 <= 2 / len(data) + 1e-12
    >>> test_mean_moves_at_most_2_tau_over_n()
"""

from __future__ import annotations

import math

import jax
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit.model.adjacency import (
    REPLACE_ONE,
    insert_record,
    n_records,
    remove_record,
    replace_record,
)
from dpaudit.model.mechanism import adjacency_of
from dpaudit.model.spaces.grids import Grid
from dpaudit.testing.record_spaces import Box, L2Ball, Labels, Product, RecordSpace

__all__ = [
    "cube_points",
    "curve_records",
    "curves",
    "datasets",
    "labelled_points",
    "neighbouring_pairs",
    "records",
    "scores_with_labels",
]

# Unit-interval floats without subnormals or signed zeros, which only make
# counterexamples harder to read.
_UNIT = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)
_FRACTION = st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def _sizes(n) -> st.SearchStrategy[int]:
    if isinstance(n, st.SearchStrategy):
        return n
    if isinstance(n, tuple) and len(n) == 2:
        low, high = n
        if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high):
            raise ValueError(f"a size range (min, max) needs integers 1 <= min <= max, got {n!r}.")
        return st.integers(low, high)
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(
            f"n must be a positive integer, a (min, max) range or a strategy, got {n!r}."
        )
    return st.just(int(n))


def _cosine_features(grid: Grid, n_modes: int) -> np.ndarray:
    """``(m, n_modes)`` smooth features: products of ``sqrt(2) cos(pi k t)`` over the axes."""
    points = np.asarray(grid.points)
    d = points.shape[1]
    # multi-indices in order of total degree, the constant function first
    indices, degree = [], 0
    while len(indices) < n_modes:
        level = [k for k in np.ndindex(*(degree + 1,) * d) if sum(k) == degree]
        indices.extend(level)
        degree += 1
    features = []
    for k in indices[:n_modes]:
        f = np.ones(points.shape[0])
        for axis, freq in enumerate(k):
            if freq:
                f = f * math.sqrt(2.0) * np.cos(math.pi * freq * points[:, axis])
        features.append(f)
    return np.stack(features, axis=1)


def _scaled_to_ball(values: np.ndarray, fraction: float, radius: float, weights) -> np.ndarray:
    """``values`` rescaled to norm ``fraction * radius`` (zero stays zero), never above radius."""
    norm = math.sqrt(float(np.sum(weights * values * values)))
    if not norm > 0.0 or fraction == 0.0:
        return np.zeros_like(values)
    x = (values / norm) * (fraction * radius)
    norm = math.sqrt(float(np.sum(weights * x * x)))
    return x * min(1.0, radius / norm) if norm > 0.0 else np.zeros_like(values)


def curve_records(
    grid: Grid, tau: float = 1.0, *, smooth: bool | None = None, n_modes: int = 6
) -> st.SearchStrategy[np.ndarray]:
    r"""One curve on ``grid`` (its ``m`` values) with ``(sum_a w_a x_a^2)^(1/2) <= tau``.

    Args:
        grid: the :class:`~dpaudit.model.spaces.Grid`.
        tau: the norm bound (> 0).
        smooth: True: ``sum_k c_k phi_k`` over the first ``n_modes`` cosine
            features; False: independent values at the grid points (white,
            rough); None: either.
        n_modes: number of cosine features of smooth curves.

    The norm is drawn as a fraction of ``tau`` in ``[0, 1]`` (hypothesis tries
    the ends, so curves on the boundary ``||x|| = tau`` are drawn often).
    """
    if not isinstance(grid, Grid):
        raise TypeError(f"grid must be a dpaudit Grid, got {type(grid).__name__}.")
    if not (isinstance(tau, int | float) and math.isfinite(tau) and tau > 0):
        raise ValueError(f"tau must be a finite number > 0, got {tau!r}.")
    if isinstance(n_modes, bool) or not isinstance(n_modes, int) or n_modes < 1:
        raise ValueError(f"n_modes must be a positive integer, got {n_modes!r}.")
    weights = np.asarray(grid.weights)
    features = _cosine_features(grid, n_modes)

    smooth_curve = st.builds(
        lambda c, f: _scaled_to_ball(features @ c, f, tau, weights),
        arrays(np.float64, n_modes, elements=_UNIT),
        _FRACTION,
    )
    rough_curve = st.builds(
        lambda v, f: _scaled_to_ball(v, f, tau, weights),
        arrays(np.float64, grid.size, elements=_UNIT),
        _FRACTION,
    )
    if smooth is None:
        return st.one_of(smooth_curve, rough_curve)
    return smooth_curve if smooth else rough_curve


def records(space: RecordSpace) -> st.SearchStrategy:
    """A strategy for one record of ``space``.

    :class:`L2Ball` on a grid gives smooth or rough curves; :class:`L2Ball`
    of vectors, :class:`Box`, :class:`Labels` and :class:`Product` give
    vectors, box points, labels and tuples. Any other space is sampled with
    its own ``sample`` from a hypothesis-drawn seed (which shrinks poorly:
    give such spaces their own strategy when counterexamples matter).

    Args:
        space: the :class:`~dpaudit.testing.RecordSpace`.

    Returns:
        A hypothesis strategy of single records.
    """
    if isinstance(space, L2Ball):
        if space.grid is not None:
            return curve_records(space.grid, space.radius)
        weights = np.ones(space.size)
        return st.builds(
            lambda v, f: _scaled_to_ball(v, f, space.radius, weights),
            arrays(np.float64, space.size, elements=_UNIT),
            _FRACTION,
        )
    if isinstance(space, Box):
        elements = st.floats(
            space.low, space.high, allow_nan=False, allow_infinity=False, allow_subnormal=False
        )
        if space.dim is None:
            return elements.map(np.float64)
        return arrays(np.float64, space.shape, elements=elements)
    if isinstance(space, Labels):
        if space.dim is None:
            return st.sampled_from([np.asarray(v) for v in space.values])
        return st.lists(st.sampled_from(space.values), min_size=space.dim, max_size=space.dim).map(
            np.asarray
        )
    if isinstance(space, Product):
        return st.tuples(*(records(s) for s in space.spaces))
    if isinstance(space, RecordSpace):
        return st.integers(0, 2**32 - 1).map(
            lambda seed: space.sample(np.random.default_rng(seed), ())
        )
    raise TypeError(f"records() needs a RecordSpace, got {type(space).__name__}.")


def _stack(items: list):
    return jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(x) for x in leaves]), *items)


def datasets(space: RecordSpace, n=(1, 10), *, record_strategy=None) -> st.SearchStrategy:
    """Datasets of ``n`` records of ``space`` (records stacked on the first axis).

    Args:
        space: the :class:`~dpaudit.testing.record_spaces.RecordSpace`.
        n: the number of records: an int, a ``(min, max)`` range, or a strategy.
        record_strategy: a strategy for one record (``records(space)`` by default).
    """
    record_strategy = records(space) if record_strategy is None else record_strategy
    return _sizes(n).flatmap(
        lambda size: st.lists(record_strategy, min_size=size, max_size=size).map(_stack)
    )


def neighbouring_pairs(
    space: RecordSpace, n=(1, 10), adjacency=REPLACE_ONE, *, record_strategy=None
) -> st.SearchStrategy:
    """Pairs ``(D, D')`` of neighbouring datasets of ``space``.

    Replace-one: ``D'`` is ``D`` with one record replaced by a fresh record.
    Add-remove: ``D'`` is ``D`` with one record removed or one record added
    (both directions are drawn). The changed position shrinks to the first
    record.

    Args:
        space: the record space.
        n: the number of records of ``D`` (int, range or strategy; at least 2
            records are kept for a removal under add-remove).
        adjacency: ``"replace-one"``, ``"add-remove"`` or an
            :class:`~dpaudit.model.adjacency.Adjacency`.
        record_strategy: a strategy for one record (``records(space)`` by default).
    """
    relation = adjacency_of(adjacency)
    record_strategy = records(space) if record_strategy is None else record_strategy
    data_strategy = datasets(space, n, record_strategy=record_strategy)

    @st.composite
    def pairs(draw):
        data = draw(data_strategy)
        size = n_records(data)
        if relation.name == "replace-one":
            index = draw(st.integers(0, size - 1))
            return data, replace_record(data, index, draw(record_strategy))
        if size >= 2 and draw(st.booleans()):
            return data, remove_record(data, draw(st.integers(0, size - 1)))
        index = draw(st.integers(0, size))
        return data, insert_record(data, index, draw(record_strategy))

    return pairs()


def curves(
    n, grid: Grid, tau: float = 1.0, *, smooth: bool | None = None, n_modes: int = 6
) -> st.SearchStrategy[np.ndarray]:
    """Datasets of ``n`` curves ``(n, m)`` on ``grid`` with L2 norm ``<= tau`` (see :func:`curve_records`).

    Args:
        n: the number of curves.
        grid: the :class:`~dpaudit.model.spaces.Grid`.
        tau: the L2 bound of each curve.
        smooth: True: smooth curves, False: rough ones, None: either.
        n_modes: number of cosine features of smooth curves.

    Returns:
        A hypothesis strategy of ``(n, m)`` arrays.
    """
    return datasets(
        L2Ball(tau, grid),
        n,
        record_strategy=curve_records(grid, tau, smooth=smooth, n_modes=n_modes),
    )


def cube_points(n, d: int = 1) -> st.SearchStrategy[np.ndarray]:
    """Datasets of ``n`` points ``(n, d)`` of ``[0, 1]^d``.

    Args:
        n: the number of points.
        d: their dimension.

    Returns:
        A hypothesis strategy of ``(n, d)`` arrays.
    """
    return datasets(Box(0.0, 1.0, d), n)


def labelled_points(
    n, d: int = 2, *, radius: float = 1.0, labels=(-1.0, 1.0)
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Datasets ``(X, y)``: ``X`` ``(n, d)`` with ``||x_i||_2 <= radius``, ``y_i`` in ``labels``.

    Args:
        n: the number of records.
        d: the dimension of the features.
        radius: the Euclidean bound of each feature vector.
        labels: the label values.

    Returns:
        A hypothesis strategy of ``(X, y)`` tuples.
    """
    return datasets(Product(L2Ball(radius, dim=d), Labels(labels)), n)


def scores_with_labels(
    n, *, low: float = 0.0, high: float = 1.0, labels=(0, 1)
) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    """Datasets ``(s, y)``: scores ``s_i`` in ``[low, high]`` and labels ``y_i`` (ECDF, ROC).

    Args:
        n: the number of records.
        low: the smallest score.
        high: the largest score.
        labels: the label values.

    Returns:
        A hypothesis strategy of ``(s, y)`` tuples.
    """
    return datasets(Product(Box(low, high), Labels(labels)), n)
