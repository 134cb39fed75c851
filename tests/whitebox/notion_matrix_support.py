"""Mechanisms of the notion x entry-point matrix (tests/notions/test_notion_entry_points.py).

One Gaussian mean of ``n = 10`` records clipped to ``[0, 1]`` with noise ``sigma = 0.1``:
sensitivity 0.1, so exactly 0.5-zCDP, ``epsilon(alpha) = alpha / 2`` RDP and 1-GDP. Each
notion gets a claim far below the truth (``*_violated``: a violation wherever it is
audited) and one above it (``*_correct``: never a violation). Exact accounting of the
Gaussian decides both, so small sample counts suffice. The functions are builders: the
command line audits them as ``notion_matrix_support.py:zcdp_violated``.
"""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from dpaudit import Mechanism
from dpaudit.accounting.conversions import gdp_tradeoff
from dpaudit.model.claims import GDPClaim, RDPClaim, TradeoffClaim, ZCDPClaim

N, SIGMA = 10, 0.1
NOTIONS = ("zcdp", "rdp", "gdp", "f-dp")


def _summary(data):
    return jnp.mean(jnp.clip(jnp.asarray(data, dtype=jnp.float64)[:, 0], 0.0, 1.0))


def _model(data):
    numpyro.sample("release", dist.Normal(_summary(data), SIGMA))


def claim_for(notion: str, correct: bool):
    """The matrix's claim in ``notion``: above the truth (correct) or far below it."""
    common = {"sensitivity": 1.0 / N, "sensitivity_norm": "l1"}
    if notion == "zcdp":
        return ZCDPClaim(rho=0.6 if correct else 0.05, **common)
    if notion == "rdp":
        orders, eps = ((2.0, 8.0), (1.2, 4.8)) if correct else ((2.0,), (0.1,))
        return RDPClaim(orders=orders, epsilons=eps, **common)
    mu = 1.2 if correct else 0.3
    if notion == "gdp":
        return GDPClaim(mu=mu, **common)
    return TradeoffClaim.from_function(lambda x: gdp_tradeoff(x, mu), name=f"G_{mu:g}", **common)


def build(notion: str = "zcdp", correct: bool = False) -> Mechanism:
    """The Gaussian mean declaring the matrix's claim in ``notion``."""
    return Mechanism(
        name=f"gauss-{notion}-{'correct' if correct else 'violated'}",
        model=_model,
        claim=claim_for(notion, correct),
        summary=_summary,
        difference_norm=jnp.abs,
        params={"n": N},
    )


def zcdp_violated():
    return build("zcdp", False)


def zcdp_correct():
    return build("zcdp", True)


def rdp_violated():
    return build("rdp", False)


def rdp_correct():
    return build("rdp", True)


def gdp_violated():
    return build("gdp", False)


def gdp_correct():
    return build("gdp", True)


def fdp_violated():
    return build("f-dp", False)


def fdp_correct():
    return build("f-dp", True)
