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

import functools

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
        coefficients, eigenvalues, power: as in :func:`cameron_martin_terms`.

    Returns:
        The summands, shape ``(..., K)``.
    """
    h = jnp.asarray(coefficients, dtype=jnp.float64)
    return jnp.abs(h) / jnp.asarray(eigenvalues, dtype=jnp.float64) ** (0.5 * power)


def _l2_terms(coefficients) -> jax.Array:
    h = jnp.asarray(coefficients, dtype=jnp.float64)
    return h * h


# How each norm's Args / Returns read (the arguments are those of its ``*_terms`` function).
_L2_ARGS = """
    Args:
        coefficients: ``h``, shape ``(..., K)``.
"""
_WEIGHTED_ARGS = """
    Args:
        coefficients, eigenvalues, power: ``h`` ``(..., K)``, ``lambda`` ``(K,)`` and ``s``
            (the module docstring).
"""
_RETURNS = {
    False: """
    Returns:
        The norms, shape ``(...)``.
""",
    True: """
    Returns:
        The partial norms, non-decreasing along the last axis.
""",
}


# The first paragraph (and example) of each norm's docstring.
_SUMMARIES = {
    "l2_norm": "``||h||_{L2}`` from coefficients in any orthonormal basis.",
    "l2_partial_norms": "L2 norms of the first ``k = 1..K`` components, shape ``(..., K)``.",
    "cameron_martin_norm": """``||h||_{C^power} = (sum_j h_j^2 / lambda_j^power)^(1/2)``.

    Example:
        >>> float(cameron_martin_norm(jnp.array([1.0, 1.0]), jnp.array([1.0, 0.25])))
        2.23606797749979
""",
    "cameron_martin_partial_norms": (
        "Cameron–Martin norms of the first ``k = 1..K`` components, shape ``(..., K)``."
    ),
    "one_c_norm": """``||h||_{1,C^power} = sum_j |h_j| / lambda_j^(power/2)``.

    Example:
        >>> float(one_c_norm(jnp.array([1.0, -1.0]), jnp.array([1.0, 0.25])))
        3.0
""",
    "one_c_partial_norms": (
        "Weighted-l1 norms of the first ``k = 1..K`` components, shape ``(..., K)``."
    ),
}


def _norm_function(name: str, terms, *, squared: bool, partial: bool):
    """The public function ``name``: ``terms`` summed (cumulatively when ``partial``) over the
    last axis, square-rooted when the terms are ``squared``."""
    add_up = jnp.cumsum if partial else jnp.sum

    @functools.wraps(terms)  # the norm takes the arguments of its terms
    def norm(*args, **kwargs) -> jax.Array:
        total = add_up(terms(*args, **kwargs), axis=-1)
        return jnp.sqrt(total) if squared else total

    norm.__name__ = norm.__qualname__ = name
    args = _L2_ARGS if terms is _l2_terms else _WEIGHTED_ARGS
    norm.__doc__ = _SUMMARIES[name].strip("\n") + "\n" + args + _RETURNS[partial]
    return norm


def _norm_functions(family: str, terms, *, squared: bool):
    """``(<family>_norm, <family>_partial_norms)`` from the family's summands ``terms``."""
    return (
        _norm_function(f"{family}_norm", terms, squared=squared, partial=False),
        _norm_function(f"{family}_partial_norms", terms, squared=squared, partial=True),
    )


l2_norm, l2_partial_norms = _norm_functions("l2", _l2_terms, squared=True)
cameron_martin_norm, cameron_martin_partial_norms = _norm_functions(
    "cameron_martin", cameron_martin_terms, squared=True
)
one_c_norm, one_c_partial_norms = _norm_functions("one_c", one_c_terms, squared=False)
