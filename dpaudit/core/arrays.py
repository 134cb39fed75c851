"""Float64 device arrays from host values without compiling a program.

In this JAX version ``jnp.asarray(numpy array)`` and ``jnp.zeros(k)`` compile a small XLA
program per shape; ``jax.device_put`` of the same numpy array compiles none and holds the
same float64 values. Catalogue builders make their constants at build time, and
``dpaudit validate`` builds every mechanism, so these programs added up.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["float64_array"]


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
