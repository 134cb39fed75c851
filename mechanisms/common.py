"""The shared tail of the catalogue's builders: a summary released with given noise.

Most builders end the same way: a summary ``f_D`` of the data is computed, a
noise distribution centred at it is sampled at the ``"release"`` site, and the
:class:`~dpaudit.Mechanism` record states the claim, the summary, the norm of
a difference of summaries, the public parameters and a description.
:func:`summary_release` is that tail, written once; :func:`laplace_release`,
:func:`gaussian_release` and :func:`iclp_release` are its three most common
noises with the norm that goes with each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import Distribution

from dpaudit import Claim, KnownFlaw, Mechanism
from dpaudit.model.noise import ICLPNoise
from dpaudit.model.spaces import KarhunenLoeveBasis, one_c_norm

__all__ = [
    "OUT_OF_BOUND",
    "ROUNDING_SLACK",
    "check_basis",
    "gaussian_release",
    "iclp_release",
    "laplace_release",
    "summary_release",
]

#: What a builder does with a record outside its public data bound: refuse it or
#: map it into the bound (a claimed step of the mechanism).
OUT_OF_BOUND = ("reject", "clip")
#: Relative excess over a norm bound read as floating-point rounding of a record
#: scaled to that norm: such a record is rescaled onto the ball, never used above it.
ROUNDING_SLACK = 1e-9


def summary_release(
    name: str,
    summary: Callable[[Any], jax.Array],
    noise: Callable[[jax.Array], Distribution],
    *,
    epsilon: float,
    sensitivity: float | None,
    sensitivity_norm: str | None,
    reference: str,
    difference_norm: Callable[[jax.Array], jax.Array] | None,
    params: Mapping[str, Any] | None = None,
    description: str = "",
    delta: float = 0.0,
    adjacency: str = "replace-one",
    known_flaw: KnownFlaw | None = None,
) -> Mechanism:
    """The mechanism that releases ``summary(data)`` perturbed by ``noise``.

    Its model is ``numpyro.sample("release", noise(summary(data)))``.

    Args:
        name: the mechanism's name (the catalogue name for a registered builder).
        summary: ``summary(data)``, the non-private summary ``f_D`` in the
            release's coordinates.
        noise: ``noise(loc)``, the release distribution centred at the summary
            ``loc`` (its ``log_prob`` is the release's marginal density).
        epsilon: the claimed epsilon.
        sensitivity: the bound on ``||f_D - f_D'||`` used to calibrate the noise
            (``None`` when the guarantee does not rest on a sensitivity).
        sensitivity_norm: the name of that norm (see
            :data:`dpaudit.model.claims.SENSITIVITY_NORMS`), ``None`` with ``sensitivity``.
        reference: the paper and theorem the guarantee rests on.
        difference_norm: ``difference_norm(h)``, the claim's norm of a
            difference of summaries.
        params: the public parameters the builder was called with (none by default).
        description: one paragraph for reports and ``dpaudit list``.
        delta: the claimed delta (``0`` for pure epsilon-DP).
        adjacency: ``"replace-one"`` or ``"add-remove"``.
        known_flaw: the true guarantee, for the faulty catalogue only.

    Returns:
        The :class:`~dpaudit.Mechanism`.

    Raises:
        ValueError, TypeError: from :class:`~dpaudit.Claim` or
            :class:`~dpaudit.Mechanism` when a field is invalid.
    """

    def model(data):
        numpyro.sample("release", noise(summary(data)))

    return Mechanism(
        name=name,
        model=model,
        claim=Claim(
            epsilon=epsilon,
            delta=delta,
            adjacency=adjacency,
            sensitivity_norm=sensitivity_norm,
            sensitivity=sensitivity,
            reference=reference,
        ),
        summary=summary,
        difference_norm=difference_norm,
        params={} if params is None else params,
        description=description,
        known_flaw=known_flaw,
    )


def _l1_norm(h) -> jax.Array:
    return jnp.sum(jnp.abs(h), axis=-1)


def _l2_norm(h) -> jax.Array:
    return jnp.sqrt(jnp.sum(h * h, axis=-1))


# the norm each i.i.d. vector noise is calibrated in: Laplace to l1, Gaussian to l2
_VECTOR_NOISES = {"l1": (dist.Laplace, _l1_norm), "l2": (dist.Normal, _l2_norm)}


def _vector_release(name, summary, scale, norm: str, fields) -> Mechanism:
    family, difference_norm = _VECTOR_NOISES[norm]

    def noise(loc):
        return family(loc, scale).to_event(1)

    return summary_release(
        name, summary, noise, sensitivity_norm=norm, difference_norm=difference_norm, **fields
    )


def laplace_release(
    name: str, summary: Callable[[Any], jax.Array], scale, **fields: Any
) -> Mechanism:
    """The Laplace mechanism: ``summary(data)`` plus i.i.d. ``Laplace(scale)``, ``l1`` claim.

    Args:
        name: the mechanism's name.
        summary: ``summary(data)``, a vector summary ``(k,)``.
        scale: the Laplace scale of every coordinate (``Delta_1 / epsilon`` when calibrated).
        **fields: the other keywords of :func:`summary_release` (``epsilon``,
            ``sensitivity``, ``reference``, ``params``, ...).

    Returns:
        The :class:`~dpaudit.Mechanism`, its claim in the ``l1`` norm.

    Raises:
        ValueError, TypeError: as :func:`summary_release`.
    """
    return _vector_release(name, summary, scale, "l1", fields)


def gaussian_release(
    name: str, summary: Callable[[Any], jax.Array], sigma, **fields: Any
) -> Mechanism:
    """The Gaussian mechanism: ``summary(data)`` plus i.i.d. ``N(0, sigma^2)``, ``l2`` claim.

    Args:
        name, summary, **fields: as :func:`laplace_release`.
        sigma: the noise standard deviation of every coordinate.

    Returns:
        The :class:`~dpaudit.Mechanism`, its claim in the ``l2`` norm (``Raises:`` as
        :func:`summary_release`).
    """
    return _vector_release(name, summary, sigma, "l2", fields)


def iclp_release(
    name: str, summary: Callable[[Any], jax.Array], eigenvalues, sigma, **fields: Any
) -> Mechanism:
    """An ICLP release of coefficients (LR Def. 2, Thm 4), claimed in the ``1,C`` norm.

    Coordinate ``j`` of the release is ``summary(data)_j`` plus
    ``sigma sqrt(lambda_j / 2)`` times a unit-variance Laplace variable.

    Args:
        name: the mechanism's name.
        summary: ``summary(data)``, the coefficients ``(K,)``.
        eigenvalues: ``(K,)`` the ``lambda_j`` of the ICLP covariance.
        sigma: the ICLP ``sigma`` (``sqrt(2) Delta / epsilon`` when calibrated).
        **fields: the other keywords of :func:`summary_release`.

    Returns:
        The :class:`~dpaudit.Mechanism`, its claim in the ``1,C`` norm of ``eigenvalues``.

    Raises:
        ValueError, TypeError: as :func:`summary_release`.
    """
    return summary_release(
        name,
        summary,
        lambda loc: ICLPNoise(eigenvalues, sigma, loc=loc),
        sensitivity_norm="one-c",
        difference_norm=lambda h: one_c_norm(h, eigenvalues),
        **fields,
    )


def check_basis(basis) -> KarhunenLoeveBasis:
    """Check that ``basis`` is a Karhunen–Loève basis.

    Args:
        basis: the candidate basis.

    Returns:
        ``basis`` unchanged.

    Raises:
        TypeError: if it is not a :class:`~dpaudit.spaces.KarhunenLoeveBasis`.
    """
    if not isinstance(basis, KarhunenLoeveBasis):
        raise TypeError(
            "basis must be a dpaudit.spaces.KarhunenLoeveBasis (see dpaudit.spaces.kl_basis), "
            f"got {type(basis).__name__}."
        )
    return basis
