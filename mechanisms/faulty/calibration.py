"""Faulty scalar calibrations: classical Gaussian at large epsilon, Gaussian noise claimed
pure, and a histogram with Laplace scale epsilon instead of 1/epsilon."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist

import dpaudit
from dpaudit.core.checks import check_delta, check_epsilon
from dpaudit.model.noise import classical_gaussian_multiplier, gaussian_delta
from mechanisms.common import gaussian_release, laplace_release, summary_release
from mechanisms.faulty import register_pair


def gaussian_true_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon with exact ``delta(epsilon) <= delta`` for the Gaussian mechanism.

    ``mu = Delta / sigma``; Balle & Wang's profile is decreasing in epsilon, so
    the root is bracketed and rounded up.

    Args:
        mu: ``Delta / sigma``.
        delta: the target delta.

    Returns:
        The epsilon (0 when ``delta`` already holds at 0).
    """
    import scipy.optimize  # on use: loading the catalogue does not need it

    def excess(eps):
        return float(gaussian_delta(eps, mu)) - delta

    if excess(0.0) <= 0:
        return 0.0
    hi = 1.0
    while excess(hi) > 0:
        hi *= 2.0
    root = scipy.optimize.brentq(excess, 0.0, hi, xtol=1e-12)
    return float(np.nextafter(root + 1e-9, np.inf))


def _mean_parts(n, low, high):
    def summary(data):
        x = jnp.asarray(data, dtype=jnp.float64)
        if x.shape != (n,):
            raise ValueError(f"expected {n} scalar records, got shape {x.shape}.")
        return jnp.mean(jnp.clip(x, low, high))[None]

    return summary


@dpaudit.register(
    "faulty/gaussian-classical-large-epsilon",
    example={"epsilon": 10.0, "delta": 0.01, "n": 10},
    faulty=True,
)
def gaussian_classical_large_epsilon(
    epsilon: float = 10.0, delta: float = 0.01, n: int = 100, low: float = 0.0, high: float = 1.0
) -> dpaudit.Mechanism:
    """Gaussian mean with sigma = c(delta) Delta / epsilon used beyond epsilon <= 1 (see docs/paper-errors.md#mrs-epsilon-at-most-one).

    Args:
        epsilon, delta: the claim (the calibration is proven only for ``epsilon <= 1``).
        n: the public number of scalar records.
        low, high: the public clipping range.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    check_delta(delta)
    sensitivity = (high - low) / n
    sigma = classical_gaussian_multiplier(delta) * sensitivity / epsilon
    mu = sensitivity / sigma
    true_delta = float(gaussian_delta(epsilon, mu))
    summary = _mean_parts(n, low, high)

    return gaussian_release(
        "faulty/gaussian-classical-large-epsilon",
        summary,
        sigma,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference="HRW Prop. 2.4 / MRS Thm 3.2 applied outside epsilon <= 1",
        delta=delta,
        params={
            "epsilon": epsilon,
            "delta": delta,
            "n": n,
            "sigma": sigma,
            "mu": mu,
            "true_delta_at_claimed_epsilon": true_delta,
        },
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "the classical calibration c(delta) = sqrt(2 log(2/delta)) is proven only for "
                f"epsilon <= 1; at epsilon = {epsilon} the exact delta is {true_delta:.4g} "
                "(Balle & Wang profile; docs/paper-errors.md#mrs-epsilon-at-most-one)."
            ),
            true_epsilon=gaussian_true_epsilon(mu, delta),
            true_delta=delta,
            visible_on="a pair whose clipped means differ by (high - low) / n (extreme records).",
        ),
    )


@register_pair("faulty/gaussian-classical-large-epsilon")
def _gaussian_pair():
    d = np.zeros(10)
    d_prime = d.copy()
    d_prime[0] = 1.0
    return d, d_prime


@dpaudit.register("faulty/gaussian-pure-claim", example={"epsilon": 1.0, "n": 10}, faulty=True)
def gaussian_pure_claim(
    epsilon: float = 1.0, n: int = 100, low: float = 0.0, high: float = 1.0
) -> dpaudit.Mechanism:
    """Gaussian noise N(0, (Delta/epsilon)^2) on a mean, claimed pure epsilon-DP.

    Args:
        epsilon: the claimed (pure) epsilon.
        n, low, high: as :func:`gaussian_classical_large_epsilon`.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    sensitivity = (high - low) / n
    sigma = sensitivity / epsilon
    summary = _mean_parts(n, low, high)

    return summary_release(
        "faulty/gaussian-pure-claim",
        summary,
        lambda loc: dist.Normal(loc, sigma).to_event(1),
        epsilon=epsilon,
        sensitivity=sensitivity,
        sensitivity_norm="l1",
        reference="(none: Gaussian noise cannot give pure DP)",
        difference_norm=lambda h: jnp.sum(jnp.abs(h), axis=-1),
        params={"epsilon": epsilon, "n": n, "sigma": sigma},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "the Gaussian privacy loss (x - f_D')^2/2s^2 - (x - f_D)^2/2s^2 is unbounded in x, "
                "so no epsilon holds with delta = 0."
            ),
            true_epsilon=math.inf,
            true_delta=0.0,
            visible_on="any pair whose means differ; the loss grows linearly in the release.",
        ),
    )


@register_pair("faulty/gaussian-pure-claim")
def _gaussian_pure_pair():
    return _gaussian_pair()


@dpaudit.register(
    "faulty/histogram-scale-epsilon", example={"epsilon": 0.5, "n_bins": 4}, faulty=True
)
def histogram_scale_epsilon(epsilon: float = 0.5, n_bins: int = 4) -> dpaudit.Mechanism:
    """Noisy histogram (add/remove) with Laplace scale epsilon instead of 1/epsilon.

    Args:
        epsilon: the claimed epsilon (also, wrongly, the Laplace scale).
        n_bins: the number of histogram bins.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)

    def summary(data):
        x = jnp.asarray(data)
        if x.ndim != 1:
            raise ValueError("histogram records must be a 1-D array of categories.")
        return jnp.sum(x.astype(jnp.int64)[:, None] == jnp.arange(n_bins), axis=0).astype(float)

    return laplace_release(
        "faulty/histogram-scale-epsilon",
        summary,
        epsilon,  # the flaw: the Laplace scale should be 1/epsilon
        epsilon=epsilon,
        sensitivity=1.0,
        reference="Dwork & Roth 2014, Thm 3.6 (misapplied scale)",
        adjacency="add-remove",
        params={"epsilon": epsilon, "n_bins": n_bins, "scale": epsilon},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "the Laplace scale is epsilon instead of Delta/epsilon = 1/epsilon, so the true "
                "epsilon is 1/epsilon (worse than claimed whenever epsilon < 1)."
            ),
            true_epsilon=1.0 / epsilon,
            visible_on="adding one record to any bin.",
        ),
    )


@register_pair("faulty/histogram-scale-epsilon")
def _histogram_pair():
    d = np.array([0, 1, 2, 3, 1])
    return d, np.append(d, 2)
