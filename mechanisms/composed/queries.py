r"""k queries answered with independent noise, released together at k sample sites.

Each record is a point of ``[low, high]^k``; query ``i`` is the mean of the
records' clipped coordinate ``i``, with replace-one sensitivity
``Delta = (high - low) / n`` per query. Query ``i`` is released at the site
``"q{i}"``:

* ``composed-laplace-queries`` — ``Lap(Delta / epsilon_0)`` per query.
  ``composition="basic"``: ``epsilon_0 = epsilon / k``, so the k releases are
  ``epsilon``-DP together (basic composition; exact on the pair that moves
  every query by ``Delta``). ``composition="advanced"``: the claim is
  ``(epsilon, delta)`` and ``epsilon_0`` solves the advanced composition
  theorem ``sqrt(2 k log(1/delta)) epsilon_0 + k epsilon_0 (e^epsilon_0 - 1) =
  epsilon`` (Dwork & Roth 2014, Thm 3.20).
* ``composed-gaussian-queries`` — ``N(0, sigma^2)`` per query with ``sigma``
  the analytic calibration of ``(epsilon / k, delta / k)`` (basic composition
  of ``(epsilon, delta)``; Balle & Wang 2018 for each query).
* ``faulty/composed-laplace-one-budget`` and
  ``faulty/composed-gaussian-one-budget`` — every query calibrated to the
  whole ``(epsilon, delta)``: the claim is that of one query. True guarantee:
  ``k epsilon`` (Laplace), and for the Gaussian queries the exact epsilon at
  ``delta`` of one Gaussian with ``mu = sqrt(k) Delta / sigma`` (the k shifts
  compose into one, ``mu^2 = sum_i mu_i^2``).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

import dpaudit
from dpaudit.accounting.profiles import gaussian_epsilon
from dpaudit.core.checks import check_choice, check_count, check_delta, check_epsilon
from dpaudit.model.noise import analytic_gaussian_sigma
from mechanisms.faulty import register_pair

__all__ = ["advanced_composition_epsilon", "query_means"]

_EXAMPLE = {"epsilon": 1.0, "n": 20, "k": 3}
_EXAMPLE_DELTA = {"epsilon": 1.0, "delta": 1e-5, "n": 20, "k": 3}


def query_means(data, n: int, k: int, low: float = 0.0, high: float = 1.0):
    """The k query answers: per-coordinate means of the records clipped to ``[low, high]``.

    Args:
        data: ``(n, k)`` records.
        n: the public number of records.
        k: the number of queries (coordinates).
        low, high: the public clipping range.

    Returns:
        ``(k,)`` means.

    Raises:
        ValueError: for data of another shape.
    """
    x = jnp.asarray(data, dtype=jnp.float64)
    if x.ndim == 1 and k == 1:
        x = x[:, None]
    if x.shape != (n, k):
        raise ValueError(
            f"the mechanism was built for {n} records of {k} coordinates, got {x.shape}."
        )
    return jnp.mean(jnp.clip(x, low, high), axis=0)


def advanced_composition_epsilon(epsilon: float, delta: float, k: int) -> float:
    """Per-query epsilon_0 whose k-fold advanced composition is ``(epsilon, delta)``-DP.

    Solves ``sqrt(2 k log(1/delta)) e0 + k e0 (e^e0 - 1) = epsilon`` (Dwork & Roth
    2014, Thm 3.20, with delta' = delta and pure per-query guarantees).

    Args:
        epsilon: the total epsilon (> 0).
        delta: the total delta, in (0, 1).
        k: the number of queries.

    Returns:
        ``epsilon_0`` (rounded down, the safe side).
    """
    import scipy.optimize  # on use: loading the catalogue does not need it

    check_epsilon(epsilon)
    check_delta(delta)

    def total(e0):
        return math.sqrt(2 * k * math.log(1 / delta)) * e0 + k * e0 * math.expm1(e0) - epsilon

    root = scipy.optimize.brentq(total, 0.0, epsilon, xtol=1e-15, rtol=4 * 2.0**-52)
    return math.nextafter(root, 0.0) if total(root) > 0 else root


def _model(n, k, scales, family):
    def model(data):
        means = query_means(data, n, k)
        for i in range(k):
            noise = dist.Laplace if family == "laplace" else dist.Normal
            numpyro.sample(f"q{i}", noise(means[i], scales[i]))

    return model


def _queries(name, family, scales, claim, params, known_flaw=None, description=""):
    n, k = params["n"], params["k"]
    return dpaudit.Mechanism(
        name=name,
        model=_model(n, k, scales, family),
        claim=claim,
        params=params,
        release_site=tuple(f"q{i}" for i in range(k)),
        description=description,
        known_flaw=known_flaw,
    )


@dpaudit.register("composed-laplace-queries", example=_EXAMPLE)
def composed_laplace_queries(
    epsilon: float = 1.0, n: int = 100, k: int = 4, composition: str = "basic", delta: float = 0.0
) -> dpaudit.Mechanism:
    """k Laplace queries released together at k sites, budget split by composition.

    Args:
        epsilon: the claimed total epsilon.
        n: the public number of records.
        k: the number of queries (record coordinates).
        composition: ``"basic"`` (``epsilon / k`` each, pure claim) or ``"advanced"``
            (``(epsilon, delta)`` claim by the advanced composition theorem).
        delta: the claimed delta (``"advanced"`` only; 0 for ``"basic"``).

    Returns:
        The :class:`~dpaudit.Mechanism` (release sites ``q0 .. q{k-1}``).

    Raises:
        ValueError: one sentence naming the bad argument.
    """
    check_epsilon(epsilon)
    n, k = check_count("n", n), check_count("k", k)
    check_choice("composition", composition, ("basic", "advanced"))
    if composition == "basic":
        if delta != 0:
            raise ValueError(
                "basic composition of Laplace queries claims delta = 0; give no delta."
            )
        e0, reference = epsilon / k, "Dwork & Roth 2014, Thm 3.6 and Thm 3.16 (basic composition)"
    else:
        e0 = advanced_composition_epsilon(epsilon, delta, k)
        reference = "Dwork & Roth 2014, Thm 3.6 and Thm 3.20 (advanced composition)"
    scale = (1.0 / n) / e0
    claim = dpaudit.Claim(epsilon=epsilon, delta=delta, reference=reference)
    params = {"epsilon": epsilon, "delta": delta, "n": n, "k": k, "dim": k, "scale": scale}
    params["composition"] = composition
    return _queries(
        "composed-laplace-queries",
        "laplace",
        [scale] * k,
        claim,
        params,
        description=f"{k} clipped means, each plus Laplace noise, released at {k} sites.",
    )


@dpaudit.register(
    "faulty/composed-laplace-one-budget", example={"epsilon": 0.5, "n": 20, "k": 3}, faulty=True
)
def composed_laplace_one_budget(epsilon: float = 0.5, n: int = 100, k: int = 4):
    """k Laplace queries each calibrated to the whole epsilon, claimed epsilon-DP together.

    Args:
        epsilon: the claimed (and per-query) epsilon.
        n: the public number of records.
        k: the number of queries.

    Returns:
        The :class:`~dpaudit.Mechanism`; its ``known_flaw`` says the truth: ``k epsilon``.
    """
    check_epsilon(epsilon)
    n, k = check_count("n", n), check_count("k", k)
    scale = (1.0 / n) / epsilon
    flaw = dpaudit.KnownFlaw(
        reason=f"each of the {k} queries spends the whole epsilon: the k releases compose to "
        f"{k} epsilon, not epsilon.",
        true_epsilon=k * epsilon,
        visible_on="a pair moving every query by its sensitivity (record 0 from corner to corner)",
    )
    claim = dpaudit.Claim(epsilon=epsilon, reference="one query's budget claimed for k queries")
    params = {"epsilon": epsilon, "n": n, "k": k, "dim": k, "scale": scale}
    return _queries(
        "faulty/composed-laplace-one-budget",
        "laplace",
        [scale] * k,
        claim,
        params,
        flaw,
        description=f"{k} Laplace queries, each with the whole budget (claims one query's).",
    )


@dpaudit.register("composed-gaussian-queries", example=_EXAMPLE_DELTA)
def composed_gaussian_queries(
    epsilon: float = 1.0, delta: float = 1e-5, n: int = 100, k: int = 4
) -> dpaudit.Mechanism:
    """k Gaussian queries released together at k sites, ``(epsilon/k, delta/k)`` each.

    Args:
        epsilon: the claimed total epsilon.
        delta: the claimed total delta.
        n: the public number of records.
        k: the number of queries.

    Returns:
        The :class:`~dpaudit.Mechanism` (release sites ``q0 .. q{k-1}``).
    """
    check_epsilon(epsilon)
    check_delta(delta)
    n, k = check_count("n", n), check_count("k", k)
    sigma = analytic_gaussian_sigma(1.0 / n, epsilon / k, delta / k)
    claim = dpaudit.Claim(
        epsilon=epsilon,
        delta=delta,
        reference="Balle & Wang 2018 per query; Dwork & Roth 2014, Thm 3.16 (basic composition)",
    )
    params = {"epsilon": epsilon, "delta": delta, "n": n, "k": k, "dim": k, "sigma": sigma}
    return _queries(
        "composed-gaussian-queries",
        "gaussian",
        [sigma] * k,
        claim,
        params,
        description=f"{k} clipped means, each plus Gaussian noise, released at {k} sites.",
    )


@dpaudit.register("faulty/composed-gaussian-one-budget", example=_EXAMPLE_DELTA, faulty=True)
def composed_gaussian_one_budget(
    epsilon: float = 1.0, delta: float = 1e-5, n: int = 100, k: int = 4
) -> dpaudit.Mechanism:
    """k Gaussian queries each calibrated to the whole ``(epsilon, delta)``, claimed together.

    Args:
        epsilon: the claimed (and per-query) epsilon.
        delta: the claimed (and per-query) delta.
        n: the public number of records.
        k: the number of queries.

    Returns:
        The :class:`~dpaudit.Mechanism`; ``known_flaw.true_epsilon`` is the exact epsilon at
        ``delta`` of the composed Gaussian, ``mu = sqrt(k) Delta / sigma``.
    """
    check_epsilon(epsilon)
    check_delta(delta)
    n, k = check_count("n", n), check_count("k", k)
    sensitivity = 1.0 / n
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    mu = math.sqrt(k) * sensitivity / sigma
    flaw = dpaudit.KnownFlaw(
        reason=f"each of the {k} queries spends the whole (epsilon, delta): the shifts compose "
        f"into one Gaussian with mu = sqrt({k}) Delta / sigma.",
        true_epsilon=gaussian_epsilon(delta, mu),
        true_delta=delta,
        visible_on="a pair moving every query by its sensitivity (record 0 from corner to corner)",
    )
    claim = dpaudit.Claim(
        epsilon=epsilon, delta=delta, reference="one query's budget claimed for k queries"
    )
    params = {"epsilon": epsilon, "delta": delta, "n": n, "k": k, "dim": k, "sigma": sigma}
    return _queries(
        "faulty/composed-gaussian-one-budget",
        "gaussian",
        [sigma] * k,
        claim,
        params,
        flaw,
        description=f"{k} Gaussian queries, each with the whole budget (claims one query's).",
    )


def _corner_pair(n: int, k: int):
    """``(D, D')``: uniform points with record 0 at the origin in D and at (1, ..., 1) in D'."""
    data = np.random.default_rng(0).uniform(size=(n, k))
    data[0] = 0.0
    data_prime = data.copy()
    data_prime[0] = 1.0
    return data, data_prime


@register_pair("faulty/composed-laplace-one-budget")
def _laplace_pair():
    return _corner_pair(20, 3)


@register_pair("faulty/composed-gaussian-one-budget")
def _gaussian_pair():
    return _corner_pair(20, 3)
