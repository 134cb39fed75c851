"""Float64 device arrays and PRNG keys from host values without compiling a program.

In this JAX version ``jnp.asarray(numpy array)`` and ``jnp.zeros(k)`` compile a small XLA
program per shape; ``jax.device_put`` of the same numpy array compiles none and holds the
same float64 values. Catalogue builders make their constants at build time, and
``dpaudit validate`` builds every mechanism, so these programs added up. Likewise
``jax.random.key(seed)`` compiles two programs in a fresh process, where the same key's
bits are known on the host (:func:`host_key`, :func:`random_key`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["float64_array", "host_key", "random_key"]


def float64_array(values) -> jax.Array:
    """``jnp.asarray(values, dtype=jnp.float64)``; host values are put on the device as they are.

    Args:
        values: a JAX array (or tracer: converted by ``jnp.asarray``), or anything numpy
            reads as numbers (numpy array, list, Python number).

    Returns:
        The float64 array (the same values; a JAX float64 array is returned as it is).
    """
    if isinstance(values, jax.Array):  # on the device already, or traced
        return jnp.asarray(values, dtype=jnp.float64)
    return jax.device_put(np.asarray(values, dtype=np.float64))


def host_key(rng_seed):
    """An integer seed as the raw key ``jax.random.PRNGKey(rng_seed)``, made on the host.

    Args:
        rng_seed: an integer seed, or anything else (a key: returned as it is).

    Returns:
        ``uint32 [seed >> 32, seed & 0xFFFFFFFF]`` for ``0 <= seed < 2**63`` under JAX's
        default threefry keys (the bits of ``jax.random.PRNGKey(seed)`` and of
        ``jax.random.key_data(jax.random.key(seed))``); ``rng_seed`` itself otherwise.
    """
    if not isinstance(rng_seed, int) or isinstance(rng_seed, bool):
        return rng_seed
    if jax.config.jax_default_prng_impl != "threefry2x32" or not 0 <= rng_seed < 2**63:
        return rng_seed
    return np.asarray([rng_seed >> 32, rng_seed & 0xFFFFFFFF], dtype=np.uint32)


def random_key(seed: int) -> jax.Array:
    """``jax.random.key(seed)``, its bits made on the host (:func:`host_key`): no program.

    Args:
        seed: an integer seed.

    Returns:
        The typed PRNG key, equal to ``jax.random.key(seed)``.
    """
    bits = host_key(seed)
    if isinstance(bits, np.ndarray):
        return jax.random.wrap_key_data(bits)
    return jax.random.key(seed)
