"""Faulty releases whose law's support moves with the data.

A noise law whose support is centred on the summary (``Uniform(m, m + 1)``,
``m + Exponential(rate)``, ``DiscreteUniform(s, s + 9)``, a Laplace truncated to
``[m - c, m + c]``) makes some releases possible under ``D`` and impossible under
``D'``: their privacy loss is infinite, so no epsilon holds at any delta below the
probability of those releases. Each builder states that probability as the true
``delta`` at every epsilon (``params["true_delta_at_claimed_epsilon"]``).

The pair of every entry moves one of ``n`` records in ``[0, 1]`` from 0 to 1, so
the clipped mean moves by ``1 / n`` (the sum, by 1).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
from numpyro.distributions.transforms import AffineTransform

import dpaudit
from dpaudit.core.checks import check_delta, check_epsilon
from mechanisms.common import summary_release
from mechanisms.faulty import register_pair

__all__ = [
    "discrete_uniform_count",
    "shifted_exponential_mean",
    "truncated_laplace_mean",
    "uniform_mean",
]


def _check(epsilon, delta, n):
    check_epsilon(epsilon)
    check_delta(delta)
    if not (isinstance(n, int | np.integer) and n >= 2):
        raise ValueError(f"n must be an integer >= 2 (the public number of records), got {n!r}.")


def _mean(n):
    def summary(data):
        x = jnp.asarray(data, dtype=jnp.float64)
        if x.shape != (n,):
            raise ValueError(f"expected {n} scalar records, got shape {x.shape}.")
        return jnp.mean(jnp.clip(x, 0.0, 1.0))[None]

    return summary


def _flaw(moved_mass: float, what: str) -> dpaudit.KnownFlaw:
    return dpaudit.KnownFlaw(
        reason=(
            f"{what}: releases in a set of probability {moved_mass:.4g} under D are impossible "
            "under D' (infinite privacy loss), so delta(epsilon) >= that probability at every "
            "epsilon."
        ),
        true_epsilon=math.inf,
        true_delta=0.0,
        visible_on="any pair whose summaries differ (the support moves with the summary).",
    )


def _release(name, summary, noise, epsilon, delta, params, description, moved_mass, what):
    return summary_release(
        name,
        summary,
        noise,
        epsilon=epsilon,
        delta=delta,
        sensitivity=None,
        sensitivity_norm=None,
        reference="none: a noise law whose support depends on the data is not DP",
        difference_norm=None,
        params={**params, "true_delta_at_claimed_epsilon": moved_mass},
        description=description,
        known_flaw=_flaw(moved_mass, what),
    )


@dpaudit.register(
    "faulty/uniform-data-dependent-support", example={"n": 20, "delta": 1e-3}, faulty=True
)
def uniform_mean(epsilon: float = 1.0, delta: float = 1e-3, n: int = 20) -> dpaudit.Mechanism:
    """Clipped mean ``m`` released as ``Uniform(m, m + 1)``: a support that moves with the data.

    Args:
        epsilon, delta: the claim.
        n: the public number of records in ``[0, 1]``.

    Returns:
        The :class:`~dpaudit.Mechanism`; true delta ``1 / n`` at every epsilon.
    """
    _check(epsilon, delta, n)
    return _release(
        "faulty/uniform-data-dependent-support",
        _mean(n),
        lambda m: dist.Uniform(m, m + 1.0).to_event(1),
        epsilon,
        delta,
        {"epsilon": epsilon, "delta": delta, "n": n},
        "Clipped mean m released as a draw of Uniform(m, m + 1).",
        1.0 / n,
        "Uniform(m, m + 1)",
    )


@dpaudit.register(
    "faulty/shifted-exponential-support", example={"n": 20, "delta": 1e-3}, faulty=True
)
def shifted_exponential_mean(
    epsilon: float = 1.0, delta: float = 1e-3, n: int = 20, rate: float = 20.0
) -> dpaudit.Mechanism:
    """Clipped mean ``m`` released as ``m + Exponential(rate)``: one-sided noise, support ``[m, inf)``.

    Args:
        epsilon, delta: the claim.
        n: the public number of records in ``[0, 1]``.
        rate: the exponential's rate.

    Returns:
        The :class:`~dpaudit.Mechanism`; true delta ``1 - exp(-rate / n)`` at every
        epsilon ``>= rate / n``.
    """
    _check(epsilon, delta, n)
    if not rate > 0:
        raise ValueError(f"rate must be > 0, got {rate!r}.")
    return _release(
        "faulty/shifted-exponential-support",
        _mean(n),
        lambda m: dist.TransformedDistribution(
            dist.Exponential(rate * jnp.ones_like(m)), AffineTransform(m, 1.0)
        ).to_event(1),
        epsilon,
        delta,
        {"epsilon": epsilon, "delta": delta, "n": n, "rate": rate},
        "Clipped mean m plus one-sided Exponential(rate) noise.",
        -math.expm1(-rate / n),
        "m + Exponential(rate)",
    )


@dpaudit.register("faulty/discrete-uniform-support", example={"n": 20, "delta": 1e-3}, faulty=True)
def discrete_uniform_count(
    epsilon: float = 1.0, delta: float = 1e-3, n: int = 20, width: int = 10
) -> dpaudit.Mechanism:
    """Count ``s`` of records in ``[0, 1]`` (rounded sum) released as ``DiscreteUniform(s, s + width - 1)``.

    Args:
        epsilon, delta: the claim.
        n: the public number of records.
        width: the number of values the release can take.

    Returns:
        The :class:`~dpaudit.Mechanism`; true delta ``1 / width`` at every epsilon.
    """
    _check(epsilon, delta, n)
    if not (isinstance(width, int) and width >= 1):
        raise ValueError(f"width must be an integer >= 1, got {width!r}.")

    def summary(data):
        x = jnp.asarray(data, dtype=jnp.float64)
        if x.shape != (n,):
            raise ValueError(f"expected {n} scalar records, got shape {x.shape}.")
        return jnp.round(jnp.sum(jnp.clip(x, 0.0, 1.0)))[None]

    return _release(
        "faulty/discrete-uniform-support",
        summary,
        lambda s: dist.DiscreteUniform(s, s + (width - 1)).to_event(1),
        epsilon,
        delta,
        {"epsilon": epsilon, "delta": delta, "n": n, "width": width},
        "Rounded sum s released as a uniform draw from {s, ..., s + width - 1}.",
        1.0 / width,
        "DiscreteUniform(s, s + width - 1)",
    )


def truncated_laplace_moved_mass(n: int, scale: float, half_width: float) -> float:
    """``P_D`` of the releases impossible under ``D'`` for :func:`truncated_laplace_mean`.

    ``D`` releases ``Laplace(0, b)`` truncated to ``[-c, c]``; ``D'`` is centred at ``1 / n``,
    so ``[-c, -c + 1/n)`` is impossible under ``D'``.

    Args:
        n: the public number of records.
        scale: the Laplace scale ``b``.
        half_width: the truncation half-width ``c`` (``> 1 / n``).

    Returns:
        The probability of ``[-c, -c + 1/n)`` under ``D``.
    """
    shift = 1.0 / n
    lo, hi = half_width, half_width - shift  # distances from the centre, both on one side
    return (math.exp(-hi / scale) - math.exp(-lo / scale)) / (
        2.0 * -math.expm1(-half_width / scale)
    )


@dpaudit.register("faulty/truncated-laplace-support", example={"n": 20, "delta": 1e-3}, faulty=True)
def truncated_laplace_mean(
    epsilon: float = 1.0,
    delta: float = 1e-3,
    n: int = 20,
    scale: float = 0.1,
    half_width: float = 0.3,
) -> dpaudit.Mechanism:
    """Clipped mean ``m`` plus Laplace noise truncated to ``[m - c, m + c]`` (a data-dependent bound).

    With ``scale >= 1 / (n epsilon)`` the Laplace part alone keeps ``epsilon``; the
    moving truncation does not.

    Args:
        epsilon, delta: the claim.
        n: the public number of records in ``[0, 1]``.
        scale: the Laplace scale ``b``.
        half_width: the truncation half-width ``c`` (``> 1 / n``).

    Returns:
        The :class:`~dpaudit.Mechanism`; true delta
        :func:`truncated_laplace_moved_mass` at every epsilon ``>= 1 / (n b)``.
    """
    _check(epsilon, delta, n)
    if not (scale > 0 and half_width > 1.0 / n):
        raise ValueError(
            f"scale must be > 0 and half_width > 1/n = {1.0 / n:g}, got {scale!r}, {half_width!r}."
        )
    return _release(
        "faulty/truncated-laplace-support",
        _mean(n),
        lambda m: dist.TruncatedDistribution(
            dist.Laplace(m, scale), low=m - half_width, high=m + half_width
        ).to_event(1),
        epsilon,
        delta,
        {"epsilon": epsilon, "delta": delta, "n": n, "scale": scale, "half_width": half_width},
        "Clipped mean m plus Laplace(scale) noise truncated to [m - c, m + c].",
        truncated_laplace_moved_mass(n, scale, half_width),
        "Laplace truncated to [m - c, m + c]",
    )


def _moved_pair(n=20):
    d = np.zeros(n)
    d_prime = d.copy()
    d_prime[0] = 1.0
    return d, d_prime


for _name in (
    "faulty/uniform-data-dependent-support",
    "faulty/shifted-exponential-support",
    "faulty/discrete-uniform-support",
    "faulty/truncated-laplace-support",
):
    register_pair(_name)(_moved_pair)
