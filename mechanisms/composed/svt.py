r"""The sparse vector technique written as an adaptive program (whole-trace audit).

The same algorithm as the catalogue's ``svt`` (Lyu, Su & Li 2017, Alg. 1), but
as a numpyro *program* instead of one distribution: the threshold noise
``rho ~ Lap(Delta / epsilon_1)`` is a latent sample site (``"threshold_noise"``,
``infer={"dpaudit": "latent"}``) and each query's answer is its own release site
``"answer_i"``, drawn from :class:`dpaudit.model.noise.NoisyComparison` given ``rho``:
``1`` when ``q_i + nu_i >= T_i + rho`` (``nu_i ~ Lap(query_scale)``), ``0``
otherwise, and ``-1`` once ``cutoff`` positives have been given. Whether a query
is answered depends on the earlier *released* answers, so the program is
adaptive; the audit evaluates the joint density of the answers with ``rho``
integrated out by :meth:`dpaudit.model.noise.ThresholdNoise.marginal_log_prob`
(docs/whole-trace.md), and decides pure claims exactly by enumerating the
answers with the closed-form marginal (:func:`dpaudit.model.sites.joint_release`).

* ``svt-program`` — Lyu Alg. 1: ``epsilon_1 = epsilon_2 = epsilon / 2``,
  ``rho ~ Lap(Delta / epsilon_1)``, ``nu_i ~ Lap(2 c Delta / epsilon_2)``; it is
  ``epsilon``-DP (Lyu et al. Thm 2).
* ``faulty/svt-program-unscaled-query-noise`` — Lee & Clifton's variant (Lyu
  Alg. 4): ``epsilon_1 = epsilon / 4``, ``nu_i ~ Lap(Delta / epsilon_2)`` with
  ``epsilon_2 = 3 epsilon / 4`` not scaled by ``c``; true guarantee
  ``(1 + 6 c) epsilon / 4`` (Lyu et al. Thm 3).

Queries are counting queries on 0/1 records (``mechanisms.classic.svt_queries``,
``Delta = 1`` under replace-one).
"""

from __future__ import annotations

import numpy as np
import numpyro

import dpaudit
from dpaudit.core.checks import check_count, check_epsilon
from dpaudit.model.noise import NoisyComparison, ThresholdNoise
from mechanisms.classic import svt_queries
from mechanisms.faulty import register_pair
from mechanisms.faulty.selection import lyu_alg4_flaw

__all__ = ["example_pair", "svt_program_model"]


def svt_program_model(n: int, thresholds, threshold_scale: float, query_scale: float, cutoff):
    """The numpyro program of an SVT run: a latent threshold noise, one site per answer.

    Args:
        n: the public number of records.
        thresholds: one public threshold per query.
        threshold_scale: the Laplace scale of the threshold noise.
        query_scale: the Laplace scale of each query's noise (0: none).
        cutoff: the positives before stopping (``None``: never stops).

    Returns:
        ``model(data)`` sampling ``"threshold_noise"`` (latent) and ``"answer_0"`` ...
    """
    thresholds = np.asarray(thresholds, dtype=float)
    k = thresholds.size

    def model(data):
        queries = svt_queries(data, n, k)
        rho = numpyro.sample(
            "threshold_noise", ThresholdNoise(threshold_scale), infer={"dpaudit": "latent"}
        )
        positives = 0.0
        for i in range(k):
            active = True if cutoff is None else positives < cutoff
            answer = numpyro.sample(
                f"answer_{i}",
                NoisyComparison(queries[i] - thresholds[i], rho, query_scale, active),
            )
            positives = positives + (answer == 1.0)

    return model


def _program(name, *, epsilon, n, thresholds, cutoff, threshold_scale, query_scale, **extra):
    check_epsilon(epsilon)
    n = check_count("n", n)
    thresholds = np.asarray(thresholds, dtype=float)
    if thresholds.ndim != 1 or thresholds.size < 1 or not np.all(np.isfinite(thresholds)):
        raise ValueError("thresholds must be a non-empty 1-D array of finite public values.")
    if cutoff is not None:
        cutoff = check_count("cutoff", cutoff)
    claim = dpaudit.Claim(
        epsilon=epsilon,
        sensitivity=1.0,
        sensitivity_norm="linf",
        reference=extra.pop("reference"),
    )
    params = {
        "epsilon": epsilon,
        "n": n,
        "thresholds": thresholds,
        "cutoff": cutoff,
        "threshold_scale": threshold_scale,
        "query_scale": query_scale,
    }
    return dpaudit.Mechanism(
        name=name,
        model=svt_program_model(n, thresholds, threshold_scale, query_scale, cutoff),
        claim=claim,
        params=params,
        release_site=tuple(f"answer_{i}" for i in range(thresholds.size)),
        **extra,
    )


_EXAMPLE = {"epsilon": 1.0, "n": 12, "thresholds": (4.0, 4.0, 4.0), "cutoff": 1}


@dpaudit.register("svt-program", example=_EXAMPLE)
def svt_program(epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4, cutoff: int = 1):
    """SVT (Lyu Alg. 1) as an adaptive program: latent threshold noise, one site per answer.

    Args:
        epsilon: the claimed epsilon.
        n: the public number of records.
        thresholds: one public threshold per query (the number of queries).
        cutoff: the number ``c`` of positive answers before the program stops.

    Returns:
        The :class:`~dpaudit.Mechanism` (release sites ``answer_0 .. answer_{k-1}``).

    Raises:
        ValueError: one sentence naming the bad argument.
    """
    check_epsilon(epsilon)
    cutoff = check_count("cutoff", cutoff)
    return _program(
        "svt-program",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=cutoff,
        threshold_scale=1.0 / (epsilon / 2.0),
        query_scale=2.0 * cutoff / (epsilon / 2.0),
        reference="Lyu, Su & Li 2017, Alg. 1 / Thm 2",
        description="SVT (Lyu Alg. 1) written as a program: the threshold noise is latent and "
        "each answer is a release site.",
    )


def _flaw_pair():
    """Every query sits at its threshold under D; the replaced record raises the first four
    queries and lowers the last four (Lyu et al.'s counterexample for Alg. 4)."""
    half = np.array([[0, 0, 0, 0, 1, 1, 1, 1]])
    d = np.concatenate([half, 1 - half, half, 1 - half])  # every count is 2
    d_prime = d.copy()
    d_prime[0] = 1 - half[0]
    return d.astype(float), d_prime.astype(float)


@dpaudit.register(
    "faulty/svt-program-unscaled-query-noise",
    example={"epsilon": 1.0, "n": 4, "thresholds": (2.0,) * 8, "cutoff": 2},
    faulty=True,
)
def svt_program_unscaled_query_noise(
    epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4, cutoff: int = 2
):
    """SVT program with query noise Lap(4/(3 eps)) not scaled by c (Lee & Clifton; Lyu Alg. 4).

    Args:
        epsilon, n, thresholds, cutoff: as :func:`svt_program`.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.

    Raises:
        ValueError: one sentence naming the bad argument.
    """
    check_epsilon(epsilon)
    cutoff = check_count("cutoff", cutoff)
    return _program(
        "faulty/svt-program-unscaled-query-noise",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=cutoff,
        threshold_scale=4.0 / epsilon,
        query_scale=4.0 / (3.0 * epsilon),
        reference="Lee & Clifton 2014 (Lyu, Su & Li 2017, Alg. 4)",
        known_flaw=lyu_alg4_flaw(epsilon, cutoff),
        description="SVT program whose query noise ignores the cutoff.",
    )


register_pair("faulty/svt-program-unscaled-query-noise")(_flaw_pair)


def example_pair(name: str, seed: int = 0):
    """The neighbouring pair audit specs read (``generator = "example"``) for this module.

    Args:
        name: the catalogue name (only ``faulty/svt-program-unscaled-query-noise``
            documents a pair).
        seed: unused (the pair is the fixed counterexample); accepted for the spec loader.

    Returns:
        ``(D, D')``: ``(4, 8)`` 0/1 records, every count at its threshold under ``D``.

    Raises:
        ValueError: for another mechanism.
    """
    if name != "faulty/svt-program-unscaled-query-noise":
        raise ValueError(f"{name!r} documents no example pair in mechanisms.composed.svt.")
    return _flaw_pair()
