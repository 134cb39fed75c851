"""Faulty selection mechanisms: report-noisy-max returning its value, and the sparse vector
variants that Lyu, Su & Li (2017) show are not private as claimed (their Alg. 3-6)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import Distribution, constraints

import dpaudit
from dpaudit.core.checks import check_epsilon
from mechanisms.classic import log_laplace_cdf, sparse_vector_mechanism
from mechanisms.common import summary_release
from mechanisms.faulty import register_pair


class NoisyMaxWithValue(Distribution):
    """``(argmax_i (u_i + Z_i), max_i (u_i + Z_i))`` with ``Z_i ~ Lap(b)`` i.i.d.

    Release ``[index, value]``; its density (counting x Lebesgue) is
    ``f(v - u_i) prod_{j != i} F(v - u_j)``, exact.
    """

    arg_constraints = {}
    support = constraints.real_vector
    pytree_data_fields = ("loc", "scale")

    def __init__(self, loc, scale, *, validate_args=None):
        self.loc = jnp.asarray(loc, dtype=jnp.float64)
        self.scale = float(scale)
        super().__init__(batch_shape=(), event_shape=(2,), validate_args=validate_args)

    def sample(self, key, sample_shape=()):
        """Draws of the NoisyMaxWithValue release.

        Args:
            key, sample_shape: as :meth:`numpyro.distributions.Distribution.sample`.
        """
        noisy = self.loc + self.scale * jax.random.laplace(key, (*sample_shape, *self.loc.shape))
        index = jnp.argmax(noisy, axis=-1).astype(jnp.float64)
        return jnp.stack([index, jnp.max(noisy, axis=-1)], axis=-1)

    def log_prob(self, value):
        """Log density (mass) of NoisyMaxWithValue releases.

        Args:
            value: releases, with any leading shape.
        """
        index, v = value[..., 0], value[..., 1]
        k = self.loc.shape[0]
        t = (v[..., None] - self.loc) / self.scale
        log_f = -jnp.abs(t) - jnp.log(2.0 * self.scale)
        log_cdf = log_laplace_cdf(t)
        chosen = jnp.arange(k) == index[..., None]
        total = jnp.sum(jnp.where(chosen, log_f, log_cdf), axis=-1)
        valid = (index >= 0) & (index < k) & (index == jnp.round(index))
        return jnp.where(valid, total, -jnp.inf)


@dpaudit.register(
    "faulty/noisy-max-with-value",
    example={"epsilon": 1.0, "thresholds": (0.25, 0.5, 0.75)},
    faulty=True,
)
def noisy_max_with_value(epsilon: float = 1.0, thresholds=(0.25, 0.5, 0.75)):
    """Report noisy max on monotone counting queries (Lap(1/eps), add/remove) that also returns the max.

    Args:
        epsilon: the claimed epsilon.
        thresholds: one monotone counting query per threshold (``#{x_i >= t}``).

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    t = np.asarray(thresholds, dtype=float)
    k = t.size

    def summary(data):
        x = jnp.asarray(data, dtype=jnp.float64)
        return jnp.sum(x[:, None] >= t[None, :], axis=0).astype(jnp.float64)

    return summary_release(
        "faulty/noisy-max-with-value",
        summary,
        lambda loc: NoisyMaxWithValue(loc, 1.0 / epsilon),
        epsilon=epsilon,
        sensitivity=1.0,
        sensitivity_norm="linf",
        reference="Dwork & Roth 2014, Claim 3.9 (which covers the index only)",
        adjacency="add-remove",
        difference_norm=lambda h: jnp.max(jnp.abs(h), axis=-1),
        params={"epsilon": epsilon, "thresholds": t, "scale": 1.0 / epsilon},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "Lap(1/epsilon) report-noisy-max is epsilon-DP for the index of monotone counting "
                "queries; releasing the noisy maximum too costs one epsilon per query that the "
                "added record raises: below every count the density ratio is exactly "
                f"e^(k epsilon) with k = {k} queries (StatDP's NoisyMax returning the value)."
            ),
            true_epsilon=k * epsilon,
            visible_on="adding a record that satisfies every query (score above all thresholds).",
        ),
    )


@register_pair("faulty/noisy-max-with-value")
def _noisy_max_pair():
    d = np.array([0.1, 0.3, 0.6, 0.9, 0.2])
    return d, np.append(d, 1.0)


# ------------------------------------------------------------ sparse vector variants

_SVT_FLAW_EXAMPLE = {"epsilon": 1.0, "n": 4, "thresholds": (2.0,) * 8}


def _svt_pair():
    """Every query sits at its threshold under D; the replaced record raises the first four
    queries and lowers the last four, so negatives on the first half and positives on the
    second half become less likely together (Lyu et al.'s counterexamples)."""
    half = np.array([[0, 0, 0, 0, 1, 1, 1, 1]])
    d = np.concatenate([half, 1 - half, half, 1 - half])  # every count is 2
    d_prime = d.copy()
    d_prime[0] = 1 - half[0]
    return d.astype(float), d_prime.astype(float)


@dpaudit.register("faulty/svt-lyu-alg3", example=_SVT_FLAW_EXAMPLE | {"cutoff": 1}, faulty=True)
def svt_lyu_alg3(epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4, cutoff: int = 1):
    """SVT that outputs the noisy query answer of positives (Lyu et al. Alg. 3, Roth's notes).

    Args:
        epsilon, n, thresholds, cutoff: as :func:`mechanisms.classic.svt`.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    return sparse_vector_mechanism(
        "faulty/svt-lyu-alg3",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=cutoff,
        threshold_scale=2.0 / epsilon,
        query_scale=2.0 * cutoff / epsilon,
        release_values=True,
        reference="Roth 2011 lecture notes (Lyu, Su & Li 2017, Alg. 3)",
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "releasing q_i + nu_i for positives reveals the noise, and every negative answer "
                "then leaks about the threshold noise; Lyu et al. show it is not epsilon'-DP "
                "for any finite epsilon' over query streams."
            ),
            true_epsilon=math.inf,
            visible_on="negatives on queries that rise and a positive on one that falls.",
        ),
        description="SVT returning noisy values of positive answers.",
    )


def lyu_alg4_flaw(epsilon: float, cutoff: int) -> dpaudit.KnownFlaw:
    """The true guarantee of SVT whose query noise ignores the cutoff (Lyu et al., Alg. 4).

    Shared by the closed-form entry here and the adaptive program of
    :mod:`mechanisms.composed.svt`: both run the same algorithm.

    Args:
        epsilon: the claimed epsilon.
        cutoff: the number of positive answers ``c``.

    Returns:
        The :class:`~dpaudit.KnownFlaw` with ``true_epsilon = (1 + 6c) epsilon / 4``.
    """
    return dpaudit.KnownFlaw(
        reason=(
            "the query noise Lap(Delta/epsilon_2), epsilon_2 = 3 epsilon/4, does not grow with "
            "the cutoff c; Lyu et al. (Thm 3) prove the true guarantee (1 + 6c) epsilon / 4."
        ),
        true_epsilon=(1 + 6 * cutoff) * epsilon / 4,
        visible_on="positives on queries that fall and negatives on queries that rise.",
    )


@dpaudit.register("faulty/svt-lyu-alg4", example=_SVT_FLAW_EXAMPLE | {"cutoff": 2}, faulty=True)
def svt_lyu_alg4(epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4, cutoff: int = 2):
    """SVT with eps1 = eps/4 and query noise Lap(4/(3 eps)) not scaled by c (Lee & Clifton).

    Args:
        epsilon, n, thresholds, cutoff: as :func:`mechanisms.classic.svt`.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    return sparse_vector_mechanism(
        "faulty/svt-lyu-alg4",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=cutoff,
        threshold_scale=4.0 / epsilon,
        query_scale=4.0 / (3.0 * epsilon),
        reference="Lee & Clifton 2014 (Lyu, Su & Li 2017, Alg. 4)",
        known_flaw=lyu_alg4_flaw(epsilon, cutoff),
        description="SVT with query noise that ignores the cutoff.",
    )


@dpaudit.register(
    "faulty/svt-lyu-alg5",
    # the last four thresholds sit one below: (neg x4, pos x4) needs rho in (0, 1] under D
    # and rho in (1, 0] under D'
    example=_SVT_FLAW_EXAMPLE | {"thresholds": (2.0,) * 4 + (1.0,) * 4},
    faulty=True,
)
def svt_lyu_alg5(epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4):
    """SVT without query noise and without cutoff (Stoddard et al.; Lyu et al. Alg. 5).

    Args:
        epsilon, n, thresholds: as :func:`mechanisms.classic.svt` (there is no cutoff).

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    return sparse_vector_mechanism(
        "faulty/svt-lyu-alg5",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=None,
        threshold_scale=2.0 / epsilon,
        query_scale=0.0,
        reference="Stoddard, Chen & Machanavajjhala 2014 (Lyu, Su & Li 2017, Alg. 5)",
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "with no query noise the pattern fixes an interval for the threshold noise; a "
                "neighbour can make that interval empty, so some output has probability 0 "
                "under D' and > 0 under D."
            ),
            true_epsilon=math.inf,
            visible_on="a query at the threshold that rises while another falls below it.",
        ),
        description="SVT with a noisy threshold only.",
    )


@dpaudit.register("faulty/svt-lyu-alg6", example=_SVT_FLAW_EXAMPLE, faulty=True)
def svt_lyu_alg6(epsilon: float = 1.0, n: int = 100, thresholds=(10.0,) * 4):
    """SVT with query noise Lap(2/eps) and no cutoff (Chen et al.; Lyu et al. Alg. 6).

    Args:
        epsilon, n, thresholds: as :func:`mechanisms.classic.svt` (there is no cutoff).

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    check_epsilon(epsilon)
    return sparse_vector_mechanism(
        "faulty/svt-lyu-alg6",
        epsilon=epsilon,
        n=n,
        thresholds=thresholds,
        cutoff=None,
        threshold_scale=2.0 / epsilon,
        query_scale=2.0 / epsilon,
        reference="Chen, Xu & Machanavajjhala 2015 (Lyu, Su & Li 2017, Alg. 6)",
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                "without a cutoff every positive answer costs privacy; the loss grows with the "
                "number of positives, so over query streams no finite epsilon holds (Lyu et al.)."
            ),
            true_epsilon=math.inf,
            visible_on="many positives on queries that all fall in the neighbour.",
        ),
        description="SVT with no bound on the number of positive answers.",
    )


for _name in (
    "faulty/svt-lyu-alg3",
    "faulty/svt-lyu-alg4",
    "faulty/svt-lyu-alg5",
    "faulty/svt-lyu-alg6",
):
    register_pair(_name)(_svt_pair)
