"""Faulty claims in the notions beyond (epsilon, delta): a GDP mu computed in the wrong norm,
a zCDP sigma without the square root, and a Rényi claim with add-remove sensitivity."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np

import dpaudit
from dpaudit.accounting.conversions import gdp_epsilon
from dpaudit.accounting.renyi import laplace_renyi
from dpaudit.core.checks import check_epsilon, check_positive
from dpaudit.model.claims import GDPClaim, RDPClaim, ZCDPClaim
from mechanisms.classic import histogram_counts
from mechanisms.common import gaussian_release, laplace_release
from mechanisms.faulty import register_pair
from mechanisms.notions import RDP_ORDERS, with_notion_claim

#: The delta at which the known flaws state their true epsilon (the claims' anchor).
_FLAW_DELTA = 1e-5


def _mean(n: int, dim: int):
    def summary(data):
        x = jnp.asarray(data, dtype=jnp.float64).reshape(n, dim)
        return jnp.mean(jnp.clip(x, 0.0, 1.0), axis=0)

    return summary


@dpaudit.register(
    "faulty/gaussian-gdp-linf-sensitivity", example={"mu": 1.0, "n": 10, "dim": 4}, faulty=True
)
def gaussian_gdp_linf_sensitivity(mu: float = 1.0, n: int = 100, dim: int = 4):
    """Gaussian mean in ``[0, 1]^d`` claimed mu-GDP with ``sigma = Delta_inf / mu`` (wrong norm).

    The l2 sensitivity is ``sqrt(d) / n``; calibrating with the l-infinity one ``1 / n``
    makes ``sigma`` too small by ``sqrt(d)``: the mechanism is ``sqrt(d) mu``-GDP.

    Args:
        mu: the claimed GDP parameter.
        n: the public number of records.
        dim: the dimension ``d`` of a record (>= 2 for the flaw to show).

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_positive("mu", mu)
    sigma = (1.0 / n) / mu
    true_mu = math.sqrt(dim) * mu
    mech = gaussian_release(
        "faulty/gaussian-gdp-linf-sensitivity",
        _mean(n, dim),
        sigma,
        epsilon=1.0,
        sensitivity=math.sqrt(dim) / n,
        reference="DRS 2022, Thm 2.7 with the l-infinity sensitivity in place of the l2 one",
        params={"mu": mu, "n": n, "dim": dim, "sigma": sigma, "true_mu": true_mu},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                f"sigma = Delta_inf / mu ignores that a record moves all {dim} coordinates: the "
                f"l2 sensitivity is sqrt(d) / n, so the mechanism is {true_mu:g}-GDP, not {mu:g}."
            ),
            true_epsilon=gdp_epsilon(_FLAW_DELTA, true_mu),
            true_delta=_FLAW_DELTA,
            visible_on="a pair where one record moves from 0 to 1 in every coordinate.",
        ),
    )
    return with_notion_claim(mech, GDPClaim(mu=mu))


@register_pair("faulty/gaussian-gdp-linf-sensitivity")
def _gdp_pair():
    d = np.zeros((10, 4))
    d_prime = d.copy()
    d_prime[0] = 1.0
    return d, d_prime


@dpaudit.register("faulty/gaussian-zcdp-unsquared", example={"rho": 2.0, "n": 10}, faulty=True)
def gaussian_zcdp_unsquared(rho: float = 2.0, n: int = 100):
    """Gaussian mean claimed rho-zCDP with ``sigma = Delta / (2 rho)`` (the square root forgotten).

    ``rho = Delta^2 / (2 sigma^2)`` gives ``sigma = Delta / sqrt(2 rho)``; dropping the square
    root gives ``sigma = Delta / (2 rho)``, so the true parameter is ``2 rho^2`` (worse than
    claimed when ``rho > 1/2``).

    Args:
        rho: the claimed zCDP parameter.
        n: the public number of scalar records.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_positive("rho", rho)
    sensitivity = 1.0 / n
    sigma = sensitivity / (2.0 * rho)
    true_rho = 2.0 * rho * rho
    true_mu = math.sqrt(2.0 * true_rho)
    mech = gaussian_release(
        "faulty/gaussian-zcdp-unsquared",
        _mean(n, 1),
        sigma,
        epsilon=1.0,
        sensitivity=sensitivity,
        reference="Bun & Steinke 2016, Prop. 1.6 with sigma = Delta / (2 rho)",
        params={"rho": rho, "n": n, "sigma": sigma, "true_rho": true_rho},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                f"sigma = Delta / (2 rho) forgets the square root of Delta^2 / (2 sigma^2) = rho: "
                f"the mechanism is {true_rho:g}-zCDP, not {rho:g}-zCDP."
            ),
            true_epsilon=gdp_epsilon(_FLAW_DELTA, true_mu),
            true_delta=_FLAW_DELTA,
        ),
    )
    return with_notion_claim(mech, ZCDPClaim(rho=rho))


@register_pair("faulty/gaussian-zcdp-unsquared")
def _zcdp_pair():
    d = np.zeros(10)
    d_prime = d.copy()
    d_prime[0] = 1.0
    return d, d_prime


@dpaudit.register(
    "faulty/laplace-histogram-rdp-add-remove", example={"epsilon": 1.0, "n_bins": 4}, faulty=True
)
def laplace_histogram_rdp_add_remove(epsilon: float = 1.0, n_bins: int = 4):
    """Laplace histogram with scale ``1 / epsilon`` claimed RDP with sensitivity 1 under replace-one.

    Replacing a record moves one count down and another up: the l1 sensitivity is 2,
    and the true Rényi divergence is ``2 D_alpha(epsilon)`` (two Laplace coordinates),
    not the claimed ``D_alpha(epsilon)`` (one coordinate: the add-remove sensitivity).

    Args:
        epsilon: ``1 / scale``.
        n_bins: number of categories.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    mech = laplace_release(
        "faulty/laplace-histogram-rdp-add-remove",
        lambda data: histogram_counts(data, n_bins),
        1.0 / epsilon,
        epsilon=epsilon,
        sensitivity=1.0,
        reference="Mironov 2017, Prop. 6 with the add-remove sensitivity under replace-one",
        params={"epsilon": epsilon, "n_bins": n_bins},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "a replaced record changes two counts, so the l1 sensitivity is 2: the Renyi "
                "divergence is twice the claimed one (and the pure epsilon is 2 epsilon)."
            ),
            true_epsilon=2.0 * epsilon,
            true_delta=0.0,
            visible_on="a pair where one record changes category.",
        ),
    )
    claimed = laplace_renyi(RDP_ORDERS, [epsilon])
    return with_notion_claim(mech, RDPClaim(orders=RDP_ORDERS, epsilons=tuple(claimed)))


@register_pair("faulty/laplace-histogram-rdp-add-remove")
def _rdp_pair():
    d = np.array([0, 1, 2, 3, 0, 1], dtype=float)
    d_prime = d.copy()
    d_prime[0] = 2.0
    return d, d_prime
