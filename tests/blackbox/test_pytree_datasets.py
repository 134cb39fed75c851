"""Datasets given as ``(X, y)`` tuples, lists and dicts of arrays audit end to end."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import dpaudit
from dpaudit.model.adjacency import is_scalar_dataset

_X = np.random.default_rng(0).normal(size=(20, 2))
_Y = (_X[:, 0] > 0).astype(float)


def _clipped_sum(data, n, key):
    """Laplace(1) around the sum of the first feature clipped to [-1/2, 1/2] (true epsilon 1)."""
    x = data["x"] if isinstance(data, dict) else data[0]
    total = float(np.clip(np.asarray(x)[:, 0], -0.5, 0.5).sum())
    return total + np.asarray(jax.random.laplace(key, (n,)))


@pytest.mark.parametrize(
    "wrap",
    [
        lambda x, y: (x, y),
        lambda x, y: [x, y],
        lambda x, y: {"x": x, "y": y},
    ],
    ids=["tuple", "list", "dict"],
)
def test_pytree_dataset_audits_to_a_violation(wrap):
    data, prime = wrap(_X, _Y), wrap(_X[:-1], _Y[:-1])
    claim = dpaudit.Claim(epsilon=0.1, adjacency="add-remove")
    result = dpaudit.blackbox_audit(_clipped_sum, data, prime, claim, samples=4000, seed=1)
    assert result.verdict == "violation"


def test_pytree_dataset_adjacency_is_still_checked():
    claim = dpaudit.Claim(epsilon=1.0, adjacency="add-remove")
    with pytest.raises(ValueError, match="add-remove neighbours"):
        dpaudit.blackbox_audit(_clipped_sum, (_X, _Y), (_X[:-3], _Y[:-3]), claim, samples=100)


def test_is_scalar_dataset_measures_shapes_of_leaves():
    assert is_scalar_dataset(0.5)
    assert is_scalar_dataset(np.float64(2.0))
    assert not is_scalar_dataset((1.0, 2.0))  # several scalars: check_adjacent says why
    assert not is_scalar_dataset((_X, _Y))
    assert not is_scalar_dataset({"x": _X, "y": _Y})
    assert not is_scalar_dataset(np.zeros(3))
