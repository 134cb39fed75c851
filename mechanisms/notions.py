"""Mechanisms whose guarantee is stated in another notion: mu-GDP, rho-zCDP and Rényi DP.

* ``gaussian-mean-gdp`` — the Gaussian mechanism with ``sigma = Delta_2 / mu`` is mu-GDP
  (Dong, Roth & Su 2022, Thm 2.7);
* ``gaussian-mean-zcdp`` — with ``sigma = Delta_2 / sqrt(2 rho)`` it is rho-zCDP (Bun &
  Steinke 2016, Prop. 1.6);
* ``laplace-mean-rdp`` — the scalar Laplace mechanism with scale ``Delta_1 / epsilon``
  satisfies RDP at every order with Mironov's closed form (Mironov 2017, Prop. 6).

The faulty counterparts are in :mod:`mechanisms.faulty.notions`.
"""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp

import dpaudit
from dpaudit.accounting.renyi import laplace_renyi
from dpaudit.core.checks import check_epsilon, check_positive
from dpaudit.model.claims import GDPClaim, RDPClaim, ZCDPClaim
from mechanisms.common import gaussian_release, laplace_release

__all__ = ["RDP_ORDERS", "gaussian_mean_gdp", "gaussian_mean_zcdp", "laplace_mean_rdp"]

#: Orders of the Rényi claims of the catalogue (those of the dp_accounting cross-check).
RDP_ORDERS = (1.5, 2.0, 4.0, 8.0, 32.0)


def _mean(n: int, dim: int, low: float, high: float):
    def summary(data):
        x = jnp.asarray(data, dtype=jnp.float64).reshape(n, dim)
        return jnp.mean(jnp.clip(x, low, high), axis=0)

    return summary


def with_notion_claim(mechanism: dpaudit.Mechanism, claim) -> dpaudit.Mechanism:
    """The mechanism with its claim replaced by ``claim``, keeping the sensitivity fields.

    Args:
        mechanism: a mechanism built with an (epsilon, delta) placeholder claim.
        claim: the notion claim, without sensitivity fields.

    Returns:
        The mechanism claiming ``claim``.
    """
    base = mechanism.claim
    claim = dataclasses.replace(
        claim,
        sensitivity_norm=base.sensitivity_norm,
        sensitivity=base.sensitivity,
        reference=claim.reference or base.reference,
    )
    return dataclasses.replace(mechanism, claim=claim)


def gaussian_mean_sigma(mu: float, n: int, dim: int, low: float, high: float) -> float:
    """``sigma = Delta_2 / mu`` with ``Delta_2 = sqrt(d) (high - low) / n`` (replace-one).

    Args:
        mu: the GDP parameter.
        n, dim, low, high: records, their dimension and clipping range.

    Returns:
        The noise standard deviation.
    """
    return math.sqrt(dim) * (high - low) / n / mu


@dpaudit.register("gaussian-mean-gdp", example={"mu": 1.0, "n": 10})
def gaussian_mean_gdp(
    mu: float = 1.0, n: int = 100, dim: int = 1, low: float = 0.0, high: float = 1.0
) -> dpaudit.Mechanism:
    """Gaussian mean calibrated to mu-GDP: ``sigma = Delta_2 / mu`` (DRS 2022, Thm 2.7).

    Args:
        mu: the claimed GDP parameter (> 0).
        n, dim, low, high: the public number of records, their dimension and clipping range.

    Returns:
        The :class:`~dpaudit.Mechanism`, claiming mu-GDP.
    """
    check_positive("mu", mu)
    sigma = gaussian_mean_sigma(mu, n, dim, low, high)
    mech = gaussian_release(
        "gaussian-mean-gdp",
        _mean(n, dim, low, high),
        sigma,
        epsilon=1.0,
        sensitivity=math.sqrt(dim) * (high - low) / n,
        reference="Dong, Roth & Su 2022, Thm 2.7",
        params={"mu": mu, "n": n, "dim": dim, "sigma": sigma},
        description="Mean of clipped records plus Gaussian noise, claimed mu-GDP.",
    )
    return with_notion_claim(mech, GDPClaim(mu=mu))


@dpaudit.register("gaussian-mean-zcdp", example={"rho": 0.5, "n": 10})
def gaussian_mean_zcdp(
    rho: float = 0.5, n: int = 100, dim: int = 1, low: float = 0.0, high: float = 1.0
) -> dpaudit.Mechanism:
    """Gaussian mean calibrated to rho-zCDP: ``sigma = Delta_2 / sqrt(2 rho)`` (Bun & Steinke 2016).

    Args:
        rho: the claimed zCDP parameter (> 0).
        n, dim, low, high: as :func:`gaussian_mean_gdp`.

    Returns:
        The :class:`~dpaudit.Mechanism`, claiming rho-zCDP.
    """
    check_positive("rho", rho)
    sigma = gaussian_mean_sigma(math.sqrt(2.0 * rho), n, dim, low, high)
    mech = gaussian_release(
        "gaussian-mean-zcdp",
        _mean(n, dim, low, high),
        sigma,
        epsilon=1.0,
        sensitivity=math.sqrt(dim) * (high - low) / n,
        reference="Bun & Steinke 2016, Prop. 1.6",
        params={"rho": rho, "n": n, "dim": dim, "sigma": sigma},
        description="Mean of clipped records plus Gaussian noise, claimed rho-zCDP.",
    )
    return with_notion_claim(mech, ZCDPClaim(rho=rho))


@dpaudit.register("laplace-mean-rdp", example={"epsilon": 1.0, "n": 10})
def laplace_mean_rdp(
    epsilon: float = 1.0, n: int = 100, low: float = 0.0, high: float = 1.0
) -> dpaudit.Mechanism:
    """Scalar Laplace mean with scale ``Delta_1 / epsilon``, claimed RDP at :data:`RDP_ORDERS`.

    The claimed ``epsilon(alpha)`` is Mironov's closed form for Laplace noise (2017, Prop. 6).

    Args:
        epsilon: the Laplace mechanism's epsilon (``Delta_1 / scale``).
        n, low, high: the public number of scalar records and their clipping range.

    Returns:
        The :class:`~dpaudit.Mechanism`, claiming RDP.
    """
    check_epsilon(epsilon)
    sensitivity = (high - low) / n
    mech = laplace_release(
        "laplace-mean-rdp",
        _mean(n, 1, low, high),
        sensitivity / epsilon,
        epsilon=epsilon,
        sensitivity=sensitivity,
        reference="Mironov 2017, Prop. 6",
        params={"epsilon": epsilon, "n": n},
        description="Mean of clipped scalar records plus Laplace noise, claimed RDP.",
    )
    claimed = laplace_renyi(RDP_ORDERS, [epsilon])
    return with_notion_claim(mech, RDPClaim(orders=RDP_ORDERS, epsilons=tuple(claimed)))
