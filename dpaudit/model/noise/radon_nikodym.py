r"""Closed-form log Radon–Nikodym derivatives of shifted noise laws.

Let ``P_0`` be the law of ``sigma Z`` and ``P_h`` that of ``h + sigma Z``. In
Karhunen–Loève coordinates (``x_j``, ``h_j``; eigenvalues ``lambda_j``):

* Gaussian process, Cameron–Martin form (MRS Lemma 3.1):
  ``log dP_h/dP_0 (x) = <h, x>_C / sigma^2 - ||h||_C^2 / (2 sigma^2)
  = sum_j (h_j x_j - h_j^2 / 2) / (sigma^2 lambda_j)``.
* ICLP, 1,C form (LR Lemma 1 / Thm 6, with the sqrt(2) of
  docs/paper-errors.md#lr-iclp-sigma-constant):
  ``log dP_h/dP_0 (x) = -(sqrt(2)/sigma) sum_j (|x_j - h_j| - |x_j|) / sqrt(lambda_j)``.

Both are evaluated **termwise** (docs/paper-errors.md#lr-termwise-density): under
``P_0`` the norms ``||x||_C`` and ``||x||_{1,C}`` are infinite almost surely, so only
the sum of termwise differences converges. The privacy loss of a release ``y`` between datasets
``D`` and ``D'`` is ``log dP_{f_D - f_D'}/dP_0 (y - f_D')``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

__all__ = [
    "cameron_martin_log_rn",
    "cameron_martin_log_rn_terms",
    "one_c_log_rn",
    "one_c_log_rn_terms",
]


def _as_arrays(shift, point, sigma) -> tuple[jax.Array, jax.Array, jax.Array]:
    # float64 arrays; sigma gets a trailing axis to broadcast against the K coefficients
    return (
        jnp.asarray(shift, dtype=jnp.float64),
        jnp.asarray(point, dtype=jnp.float64),
        jnp.asarray(sigma, dtype=jnp.float64)[..., None],
    )


def cameron_martin_log_rn_terms(shift, point, eigenvalues, sigma) -> jax.Array:
    """Summands ``(h_j x_j - h_j^2/2) / (sigma^2 lambda_j)``, shape ``(..., K)``.

    Args:
        shift, point, eigenvalues, sigma: as in :func:`cameron_martin_log_rn`.

    Returns:
        The summands, shape ``(..., K)``.
    """
    h, x, sigma = _as_arrays(shift, point, sigma)
    return (h * x - 0.5 * h * h) / (sigma**2 * jnp.asarray(eigenvalues, dtype=jnp.float64))


def cameron_martin_log_rn(shift, point, eigenvalues, sigma) -> jax.Array:
    """``log dP_h/dP_0 (x)`` for Gaussian-process noise (Cameron–Martin form).

    Args:
        shift: coefficients ``h`` of the shift, ``(..., K)``.
        point: coefficients ``x`` of the point, relative to the centre of ``P_0``.
        eigenvalues: ``(K,)``.
        sigma: noise multiplier, scalar or ``(...)``.

    Returns:
        The log-density ratio, shape ``(...)``.

    Example:
        >>> shift, point, eigenvalues = jnp.array([1.0]), jnp.array([0.5]), jnp.array([1.0])
        >>> float(cameron_martin_log_rn(shift, point, eigenvalues, sigma=1.0))  # x at h / 2
        0.0
    """
    return jnp.sum(cameron_martin_log_rn_terms(shift, point, eigenvalues, sigma), axis=-1)


def one_c_log_rn_terms(shift, point, eigenvalues, sigma) -> jax.Array:
    """Summands ``-(sqrt 2/sigma) (|x_j - h_j| - |x_j|) / sqrt(lambda_j)``, shape ``(..., K)``.

    Args:
        shift, point, eigenvalues, sigma: as in :func:`one_c_log_rn` (whose log-ratio is
            their sum over the last axis).

    Returns:
        The summands, shape ``(..., K)``.
    """
    h, x, sigma = _as_arrays(shift, point, sigma)
    root_lam = jnp.sqrt(jnp.asarray(eigenvalues, dtype=jnp.float64))
    return -(math.sqrt(2.0) / sigma) * (jnp.abs(x - h) - jnp.abs(x)) / root_lam


def one_c_log_rn(shift, point, eigenvalues, sigma) -> jax.Array:
    """``log dP_h/dP_0 (x)`` for ICLP noise (1,C form); ``|value| <= sqrt(2) ||h||_{1,C} / sigma``.

    Args:
        shift, point, eigenvalues, sigma: as in :func:`cameron_martin_log_rn`.

    Returns:
        The log-density ratio, shape ``(...)``.

    Example:
        >>> float(one_c_log_rn(jnp.array([1.0]), jnp.array([2.0]), jnp.array([2.0]), 1.0))
        1.0
    """
    return jnp.sum(one_c_log_rn_terms(shift, point, eigenvalues, sigma), axis=-1)
