r"""Norms of functions, evaluated termwise in a covariance eigenbasis.

All functions take coefficients ``h`` of shape ``(..., K)`` in the eigenbasis
(``h_j = <h, phi_j>``, see :meth:`KarhunenLoeveBasis.project`) and the
eigenvalues ``lambda`` of shape ``(K,)``. For an operator power ``C^s``
(docs/conventions.md#norms, inclusions in docs/conventions.md#norm-inclusions):

* L2: ``||h|| = (sum_j h_j^2)^(1/2)``
* Cameron–Martin: ``||h||_{C^s} = (sum_j h_j^2 / lambda_j^s)^(1/2)``
* weighted l1: ``||h||_{1,C^s} = sum_j |h_j| / lambda_j^(s/2)``

``s = 1`` gives ``||h||_C`` and ``||h||_{1,C}``. The ``*_terms`` functions return
the summands and the ``*_partial_norms`` functions the norms of the first
``k = 1..K`` components, which the compatibility analysis reads as a function
of ``K`` (a summary compatible with its noise has partial norms that level
off; an incompatible one has partial norms that keep growing).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = [
    "cameron_martin_norm",
    "cameron_martin_partial_norms",
    "cameron_martin_terms",
    "l2_norm",
    "l2_partial_norms",
    "one_c_norm",
    "one_c_partial_norms",
    "one_c_terms",
]


def cameron_martin_terms(coefficients, eigenvalues, power: float = 1.0) -> jax.Array:
    """Summands ``h_j^2 / lambda_j^power`` of the squared Cameron–Martin norm.

    Args:
        coefficients, eigenvalues, power: ``h`` ``(..., K)``, ``lambda`` ``(K,)`` and ``s``
            (the module docstring).

    Returns:
        The summands, shape ``(..., K)``.
    """
    h = jnp.asarray(coefficients, dtype=jnp.float64)
    return h * h / jnp.asarray(eigenvalues, dtype=jnp.float64) ** power


def one_c_terms(coefficients, eigenvalues, power: float = 1.0) -> jax.Array:
    """Summands ``|h_j| / lambda_j^(power/2)`` of the weighted-l1 norm ``||h||_{1,C^power}``.

    Args:
        coefficients, eigenvalues, power: ``h`` ``(..., K)``, ``lambda`` ``(K,)`` and ``s``
            (the module docstring).

    Returns:
        The summands, shape ``(..., K)``.
    """
    h = jnp.asarray(coefficients, dtype=jnp.float64)
    return jnp.abs(h) / jnp.asarray(eigenvalues, dtype=jnp.float64) ** (0.5 * power)


def l2_norm(coefficients) -> jax.Array:
    """``||h||_{L2}`` from coefficients in any orthonormal basis.

    Args:
        coefficients: ``h``, shape ``(..., K)``.

    Returns:
        The norms, shape ``(...)``.
    """
    h = jnp.asarray(coefficients, dtype=jnp.float64)
    return jnp.sqrt(jnp.sum(h * h, axis=-1))


def cameron_martin_norm(coefficients, eigenvalues, power: float = 1.0) -> jax.Array:
    """``||h||_{C^power} = (sum_j h_j^2 / lambda_j^power)^(1/2)``.

    Args:
        coefficients, eigenvalues, power: ``h`` ``(..., K)``, ``lambda`` ``(K,)`` and ``s``
            (the module docstring).

    Returns:
        The norms, shape ``(...)``.

    Example:
        >>> float(cameron_martin_norm(jnp.array([1.0, 1.0]), jnp.array([1.0, 0.25])))
        2.23606797749979
    """
    return jnp.sqrt(jnp.sum(cameron_martin_terms(coefficients, eigenvalues, power), axis=-1))


def one_c_norm(coefficients, eigenvalues, power: float = 1.0) -> jax.Array:
    """``||h||_{1,C^power} = sum_j |h_j| / lambda_j^(power/2)``.

    Args:
        coefficients, eigenvalues, power: ``h`` ``(..., K)``, ``lambda`` ``(K,)`` and ``s``
            (the module docstring).

    Returns:
        The norms, shape ``(...)``.

    Example:
        >>> float(one_c_norm(jnp.array([1.0, -1.0]), jnp.array([1.0, 0.25])))
        3.0
    """
    return jnp.sum(one_c_terms(coefficients, eigenvalues, power), axis=-1)


def l2_partial_norms(coefficients) -> jax.Array:
    """L2 norms of the first ``k = 1..K`` components, shape ``(..., K)``.

    Args:
        coefficients: ``h``, shape ``(..., K)``.

    Returns:
        The partial norms, non-decreasing along the last axis.
    """
    h = jnp.asarray(coefficients, dtype=jnp.float64)
    return jnp.sqrt(jnp.cumsum(h * h, axis=-1))


def cameron_martin_partial_norms(coefficients, eigenvalues, power: float = 1.0) -> jax.Array:
    """Cameron–Martin norms of the first ``k = 1..K`` components, shape ``(..., K)``.

    Args:
        coefficients, eigenvalues, power: ``h`` ``(..., K)``, ``lambda`` ``(K,)`` and ``s``
            (the module docstring).

    Returns:
        The partial norms, non-decreasing along the last axis.
    """
    return jnp.sqrt(jnp.cumsum(cameron_martin_terms(coefficients, eigenvalues, power), axis=-1))


def one_c_partial_norms(coefficients, eigenvalues, power: float = 1.0) -> jax.Array:
    """Weighted-l1 norms of the first ``k = 1..K`` components, shape ``(..., K)``.

    Args:
        coefficients, eigenvalues, power: ``h`` ``(..., K)``, ``lambda`` ``(K,)`` and ``s``
            (the module docstring).

    Returns:
        The partial norms, non-decreasing along the last axis.
    """
    return jnp.cumsum(one_c_terms(coefficients, eigenvalues, power), axis=-1)
