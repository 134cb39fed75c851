"""PRNG keys made on the host (dpaudit.core.arrays): JAX's bits, and no program for them."""

import jax
import numpy as np
import pytest
from compile_counts import count_compilations

from dpaudit.core.arrays import host_key, random_key

SEEDS = [0, 1, 7, 2**31 - 1, 2**32, 2**32 + 5, 2**40 + 3, 2**63 - 1]


@pytest.mark.parametrize("seed", SEEDS)
def test_host_keys_are_jax_keys(seed):
    assert np.array_equal(host_key(seed), np.asarray(jax.random.PRNGKey(seed)))
    assert np.array_equal(
        jax.random.key_data(random_key(seed)), jax.random.key_data(jax.random.key(seed))
    )
    assert random_key(seed).dtype == jax.random.key(seed).dtype


def test_a_host_key_compiles_nothing():
    random_key(0)  # anything of the first call that is not the key itself
    with count_compilations() as count:
        key = random_key(12345)
        raw = host_key(12345)
    assert count[0] == 0
    assert np.array_equal(jax.random.key_data(key), raw)


@pytest.mark.parametrize("seed", [-1, True, jax.random.key(3)], ids=["negative", "bool", "key"])
def test_other_seeds_are_left_to_jax(seed):
    assert host_key(seed) is seed
