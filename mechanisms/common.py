"""The shared tail of the catalogue's builders: a summary released with given noise.

Most builders end the same way: a summary ``f_D`` of the data is computed, a
noise distribution centred at it is sampled at the ``"release"`` site, and the
:class:`~dpaudit.Mechanism` record states the claim, the summary, the norm of
a difference of summaries, the public parameters and a description.
:func:`summary_release` is that tail, written once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpyro
from numpyro.distributions import Distribution

from dpaudit import Claim, KnownFlaw, Mechanism

__all__ = ["summary_release"]


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
            :data:`dpaudit.mechanism.SENSITIVITY_NORMS`), ``None`` with ``sensitivity``.
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
