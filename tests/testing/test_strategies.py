"""hypothesis strategies: every drawn dataset respects its bound, pairs are neighbours, and
shrinking gives small, readable counterexamples."""

import numpy as np
import pytest
from hypothesis import given, settings

from dpaudit.model.adjacency import ADD_REMOVE, REPLACE_ONE, n_records
from dpaudit.model.spaces import custom_grid, uniform_grid
from dpaudit.testing import Box, L2Ball, Labels, Product, RecordSpace
from dpaudit.testing.strategies import (
    cube_points,
    curve_records,
    curves,
    datasets,
    labelled_points,
    neighbouring_pairs,
    records,
    scores_with_labels,
)

GRID = uniform_grid(12)
# unequal quadrature weights, so the bound must use them
UNEVEN = custom_grid(np.linspace(0.05, 0.95, 10), np.linspace(0.05, 0.15, 10))
FIND = settings(derandomize=True, database=None, max_examples=1000, deadline=None)


def weighted_norms(x, grid):
    return np.sqrt(np.sum(np.asarray(grid.weights) * x * x, axis=-1))


@given(curves((1, 5), GRID, tau=2.0), curves(3, UNEVEN, tau=0.5, smooth=False))
def test_curves_respect_the_l2_bound_on_the_grid(data, rough):
    assert data.ndim == 2 and data.shape[1] == GRID.size and 1 <= data.shape[0] <= 5
    assert np.all(weighted_norms(data, GRID) <= 2.0 * (1 + 1e-12))
    assert rough.shape == (3, UNEVEN.size)
    assert np.all(weighted_norms(rough, UNEVEN) <= 0.5 * (1 + 1e-12))
    assert L2Ball(0.5, UNEVEN).contains(rough)


@given(curves(2, GRID, smooth=True, n_modes=3))
def test_smooth_curves_lie_in_the_span_of_the_first_cosines(data):
    t = np.asarray(GRID.points)[:, 0]
    features = np.stack([np.ones_like(t), np.cos(np.pi * t), np.cos(2 * np.pi * t)], axis=1)
    coefficients, *_ = np.linalg.lstsq(features, data.T, rcond=None)
    np.testing.assert_allclose(features @ coefficients, data.T, atol=1e-9)


def test_boundary_curves_are_drawn():
    """The worst cases sit on ||x|| = tau: the strategy must reach it."""
    from hypothesis import find

    curve = find(
        curve_records(GRID, 1.0),
        lambda x: weighted_norms(x, GRID) >= 1.0 - 1e-12,
        settings=FIND,
    )
    assert weighted_norms(curve, GRID) == pytest.approx(1.0)


@given(cube_points((1, 4), d=3), labelled_points(5, d=2, radius=0.5), scores_with_labels(4))
def test_points_labelled_points_and_scores(points, labelled, scored):
    assert points.shape[1:] == (3,) and np.all((points >= 0) & (points <= 1))
    x, y = labelled
    assert x.shape == (5, 2) and y.shape == (5,)
    assert np.all(np.linalg.norm(x, axis=1) <= 0.5 * (1 + 1e-12))
    assert set(np.unique(y)) <= {-1.0, 1.0}
    s, labels = scored
    assert s.shape == labels.shape == (4,)
    assert np.all((s >= 0) & (s <= 1)) and set(np.unique(labels)) <= {0, 1}


SPACES = [
    L2Ball(1.0, GRID),
    Box(-1.0, 2.0, dim=2),
    Box(0.0, 1.0),
    Product(L2Ball(1.0, dim=3), Labels((-1.0, 1.0))),
    Labels((0.0, 1.0), dim=4),
]


@pytest.mark.parametrize("space", SPACES, ids=lambda s: s.describe())
@pytest.mark.parametrize("adjacency", [REPLACE_ONE, ADD_REMOVE], ids=str)
def test_pairs_are_neighbours_inside_the_space(space, adjacency):
    @settings(max_examples=25)
    @given(neighbouring_pairs(space, n=(1, 5), adjacency=adjacency))
    def check(pair):
        data, prime = pair
        adjacency.check(data, prime)
        assert space.contains(data) and space.contains(prime)
        change = n_records(prime) - n_records(data)
        assert change in adjacency.size_change()

    check()


def test_shrinking_gives_the_smallest_readable_counterexample():
    """A 'mean moves by more than 0.3' property fails first for n = 1, changed record 0,
    with the records pushed to the ends of the box."""
    from hypothesis import find

    data, prime = find(
        neighbouring_pairs(Box(0.0, 1.0), n=(1, 6)),
        lambda pair: abs(pair[0].mean() - pair[1].mean()) > 0.3,
        settings=FIND,
    )
    assert len(data) == 1
    assert data[0] == 0.0  # floats shrink towards 0: the only record is 0 ...
    assert prime[0] > 0.3  # ... and its replacement the smallest value that fails
    curves_found = find(
        curves((1, 4), GRID, 1.0, smooth=True),
        lambda x: np.max(weighted_norms(x, GRID)) > 0.5,
        settings=FIND,
    )
    assert curves_found.shape[0] == 1


def test_records_of_a_user_defined_space_use_its_sampler():
    class Simplex(RecordSpace):
        shape = (3,)
        unit_dim = 3

        def sample(self, rng, batch_shape=()):
            return rng.dirichlet(np.ones(3), size=tuple(batch_shape) or None)

        def contains(self, record, *, rtol=1e-9):
            return bool(np.all(np.abs(np.sum(record, axis=-1) - 1) < 1e-9))

    space = Simplex()

    @settings(max_examples=10)
    @given(datasets(space, 3))
    def check(data):
        assert data.shape == (3, 3) and space.contains(data)

    check()


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: datasets(Box(), n=0), ValueError, "n must be a positive integer"),
        (lambda: datasets(Box(), n=(3, 2)), ValueError, "size range"),
        (lambda: curve_records(GRID, tau=-1.0), ValueError, "tau must be"),
        (lambda: curve_records("grid"), TypeError, "Grid"),
        (lambda: curve_records(GRID, n_modes=0), ValueError, "n_modes"),
        (lambda: records("box"), TypeError, "RecordSpace"),
        (lambda: neighbouring_pairs(Box(), adjacency="swap"), ValueError, "adjacency"),
    ],
)
def test_bad_arguments(build, error, message):
    with pytest.raises(error, match=message):
        build()
