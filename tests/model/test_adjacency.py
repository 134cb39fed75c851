"""Adjacency relations: names match the Claim's, checks agree with check_adjacent, neighbours are neighbours."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit import Claim, Mechanism
from dpaudit.model.adjacency import (
    ADD_REMOVE,
    ADJACENCIES,
    REPLACE_ONE,
    AddRemove,
    Adjacency,
    ReplaceOne,
    get_record,
    insert_record,
    n_records,
    remove_record,
    replace_record,
)
from dpaudit.model.mechanism import adjacency_of


def test_names_are_the_claim_names():
    assert {REPLACE_ONE.name, ADD_REMOVE.name} == set(ADJACENCIES)
    assert str(REPLACE_ONE) == "replace-one" and str(ADD_REMOVE) == "add-remove"
    assert adjacency_of("replace-one") is REPLACE_ONE
    assert adjacency_of(ADD_REMOVE) is ADD_REMOVE
    assert adjacency_of(Claim(epsilon=1.0, adjacency="add-remove")) is ADD_REMOVE
    mech = Mechanism(name="m", model=lambda d: None, claim=Claim(epsilon=1.0))
    assert adjacency_of(mech) is REPLACE_ONE
    assert ReplaceOne() == REPLACE_ONE and AddRemove() != REPLACE_ONE
    assert REPLACE_ONE.size_change() == (0,) and ADD_REMOVE.size_change() == (-1, 1)
    assert isinstance(REPLACE_ONE, Adjacency)
    with pytest.raises(dataclasses.FrozenInstanceError):
        REPLACE_ONE.extra = 1


def test_bad_names_and_types():
    with pytest.raises(ValueError, match="adjacency must be one of"):
        adjacency_of("swap-two")
    with pytest.raises(TypeError, match="adjacency must be a name"):
        adjacency_of(3)


def test_replace_one_on_labelled_data():
    X, y = np.arange(12.0).reshape(4, 3), np.array([1.0, -1.0, 1.0, 1.0])
    X2, y2 = REPLACE_ONE.neighbour((X, y), 2, (np.zeros(3), -1.0))
    np.testing.assert_array_equal(X2[2], np.zeros(3))
    assert y2[2] == -1.0
    np.testing.assert_array_equal(np.delete(np.asarray(X2), 2, 0), np.delete(X, 2, 0))
    assert REPLACE_ONE.is_adjacent((X, y), (X2, y2))
    assert not ADD_REMOVE.is_adjacent((X, y), (X2, y2))
    # changing two records is not a neighbour
    X3 = np.asarray(X2).copy()
    X3[0] += 1
    with pytest.raises(ValueError, match="differ in 2 records"):
        REPLACE_ONE.check((X, y), (X3, y2))
    with pytest.raises(ValueError, match="needs the replacement record"):
        REPLACE_ONE.neighbour(X, 0)


def test_add_remove_both_directions():
    data = np.array([0.1, 0.2, 0.3])
    smaller = ADD_REMOVE.neighbour(data, 1)
    np.testing.assert_array_equal(smaller, [0.1, 0.3])
    larger = ADD_REMOVE.neighbour(data, 3, 0.9)  # append
    np.testing.assert_array_equal(larger, [0.1, 0.2, 0.3, 0.9])
    front = ADD_REMOVE.neighbour(data, 0, 0.9)
    np.testing.assert_array_equal(front, [0.9, 0.1, 0.2, 0.3])
    for other in (smaller, larger, front):
        ADD_REMOVE.check(data, other)
        ADD_REMOVE.check(other, data)
        assert not REPLACE_ONE.is_adjacent(data, other)


def test_record_structure_is_checked():
    with pytest.raises(ValueError, match="structure of the dataset"):
        replace_record((np.zeros((3, 2)), np.zeros(3)), 0, np.zeros(2))
    with pytest.raises(ValueError, match="has shape"):
        replace_record(np.zeros((3, 2)), 0, np.zeros(3))
    with pytest.raises(ValueError, match="different numbers of records"):
        n_records((np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="first axis"):
        n_records(np.float64(1.0))
    with pytest.raises(ValueError, match="at least one array"):
        n_records(())


def test_record_helpers_accept_a_traced_index():
    data = (jnp.arange(10.0).reshape(5, 2), jnp.arange(5))

    @jax.jit
    def all_three(index):
        record = (jnp.array([-1.0, -1.0]), jnp.array(-1))
        return (
            replace_record(data, index, record),
            remove_record(data, index),
            insert_record(data, index, record),
            get_record(data, index),
        )

    replaced, removed, inserted, record = all_three(3)
    np.testing.assert_array_equal(replaced[1], [0, 1, 2, -1, 4])
    np.testing.assert_array_equal(removed[1], [0, 1, 2, 4])
    np.testing.assert_array_equal(inserted[1], [0, 1, 2, -1, 3, 4])
    np.testing.assert_array_equal(record[0], [6.0, 7.0])
    assert replaced[0].dtype == data[0].dtype and inserted[1].dtype == data[1].dtype


small_arrays = st.integers(1, 6).flatmap(
    lambda n: arrays(np.float64, (n, 2), elements=st.floats(-3, 3, allow_subnormal=False))
)


@given(small_arrays, st.data())
def test_neighbours_are_adjacent_and_agree_with_numpy(data, draw):
    """Property: every built neighbour passes check_adjacent and matches np.delete / np.insert."""
    n = data.shape[0]
    index = draw.draw(st.integers(0, n - 1))
    record = draw.draw(arrays(np.float64, 2, elements=st.floats(-3, 3, allow_subnormal=False)))
    replaced = np.asarray(REPLACE_ONE.neighbour(data, index, record))
    assert REPLACE_ONE.is_adjacent(data, replaced)
    expected = data.copy()
    expected[index] = record
    np.testing.assert_array_equal(replaced, expected)
    removed = np.asarray(ADD_REMOVE.neighbour(data, index))
    np.testing.assert_array_equal(removed, np.delete(data, index, axis=0))
    assert ADD_REMOVE.is_adjacent(data, removed)
    position = draw.draw(st.integers(0, n))
    inserted = np.asarray(ADD_REMOVE.neighbour(data, position, record))
    np.testing.assert_array_equal(inserted, np.insert(data, position, record, axis=0))
    assert ADD_REMOVE.is_adjacent(inserted, data)
