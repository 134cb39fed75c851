r"""DP-SGD as a training pipeline to audit with canaries: correct and faulty variants.

Each step ``t`` of DP-SGD releases ``r_t = sum_{i in B_t} clip_C(g_i) + N(0, s^2 I)``
(Poisson batch ``B_t``, each record with probability ``q``; ``s = noise_multiplier C``)
and moves ``theta_{t+1} = theta_t - lr r_t / (q n)``. The training functions here take
``gradient_canary`` (a per-example gradient added to the records', sampled like them; zeros
when absent) and release all the updates ``(r_1, ..., r_T)``: the white-box threat model
of Nasr et al. (2023) with a Dirac gradient canary and every iterate observed.

* :func:`simulated_train` needs no model: in the white-box setting with a Dirac canary
  on a coordinate no record's gradient touches, the canary coordinate of ``r_t`` is the
  canary's clipped gradient (when sampled) plus noise, whatever the other records do; the
  other records' gradients are taken as zero. It is JAX-traceable, so a thousand runs are
  one ``jax.vmap``.
* :func:`logistic_train` trains logistic regression on the breast-cancer data
  (:func:`mechanisms.dpsgd.breast_cancer_records`), per-example clipping and all.

Variants (:data:`VARIANTS`): ``"correct"``; ``"noise-batch"`` (noise ``s / (q n)``, a
mean's sensitivity applied to a sum); ``"clip-after-noise"`` (per-example gradients
summed unclipped, the noisy sum clipped to ``C``); ``"ignores-steps"`` (correct
training, the accountant reports one step's epsilon); ``"misread-noise-multiplier"``
(the noise multiplier used as the noise standard deviation, ignoring ``C``). The claim
of every variant is what its accountant reports (:func:`claimed_epsilon`); the exact
epsilon of the correct training comes from dpaudit's subsampled-Gaussian accounting
(:func:`exact_epsilon`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dpaudit.training import ProfileClaim
from mechanisms.dpsgd import dpsgd_accounting

__all__ = [
    "VARIANTS",
    "DPSGDConfig",
    "claim_of",
    "claimed_epsilon",
    "exact_epsilon",
    "example_data",
    "logistic_train",
    "simulated_train",
]

#: The DP-SGD variants: the correct one and four faulty implementations.
VARIANTS = (
    "correct",
    "noise-batch",
    "clip-after-noise",
    "ignores-steps",
    "misread-noise-multiplier",
)


@dataclasses.dataclass(frozen=True)
class DPSGDConfig:
    """One DP-SGD configuration.

    Attributes:
        steps: ``T``.
        q: the Poisson sampling probability.
        noise_multiplier: ``s / C``.
        clip: the clipping norm ``C`` (not 1, so that misreading the noise multiplier as
            the noise standard deviation changes the noise).
        n: the number of records (the faulty ``noise-batch`` divides by ``q n``).
        dim: the number of parameters (31 for the breast-cancer logistic regression).
        learning_rate: the step size (model-based training only).
        delta: the delta of the claim.
        variant: one of :data:`VARIANTS`.
    """

    steps: int = 100
    q: float = 0.5
    noise_multiplier: float = 3.0
    clip: float = 2.0
    n: int = 100
    dim: int = 31
    learning_rate: float = 0.05
    delta: float = 1e-5
    variant: str = "correct"

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}.")

    @property
    def noise_std(self) -> float:
        """The noise standard deviation the implementation really adds."""
        if self.variant == "noise-batch":
            return self.noise_multiplier * self.clip / (self.q * self.n)
        if self.variant == "misread-noise-multiplier":
            return self.noise_multiplier
        return self.noise_multiplier * self.clip


def exact_epsilon(config: DPSGDConfig) -> float:
    """The exact (numerically conservative) epsilon at ``delta`` of the *correct* training.

    Args:
        config: the configuration (its variant is ignored).

    Returns:
        ``epsilon(delta)`` of ``T`` Poisson-subsampled Gaussian steps, ``mu = 1/noise_multiplier``.
    """
    accounting = dpsgd_accounting(config.noise_multiplier, config.q, config.steps, lower=False)
    return float(accounting.epsilon_upper(config.delta))


def claimed_epsilon(config: DPSGDConfig) -> float:
    """What the variant's accountant reports: one step's epsilon for ``ignores-steps``.

    Args:
        config: the configuration.

    Returns:
        The claimed epsilon at ``config.delta``.
    """
    if config.variant == "ignores-steps":
        return exact_epsilon(dataclasses.replace(config, steps=1))
    return exact_epsilon(config)


def claim_of(config: DPSGDConfig) -> ProfileClaim:
    """The variant's claim: its accountant's whole privacy profile ``delta(epsilon)``.

    Args:
        config: the configuration.

    Returns:
        A :class:`~dpaudit.training.ProfileClaim` from the subsampled-Gaussian accounting
        of ``T`` steps (one step for ``ignores-steps``).
    """
    steps = 1 if config.variant == "ignores-steps" else config.steps
    accounting = dpsgd_accounting(config.noise_multiplier, config.q, steps, lower=False)
    return ProfileClaim(
        accounting.delta_upper,
        delta=config.delta,
        description=(
            f"the subsampled-Gaussian accounting of {steps} step(s) (q={config.q:g}, "
            f"noise multiplier {config.noise_multiplier:g}): epsilon "
            f"{accounting.epsilon_upper(config.delta):.4g} at delta {config.delta:g}"
        ),
    )


def _clip_rows(g, clip: float):
    norms = jnp.linalg.norm(g, axis=-1, keepdims=True)
    return g * jnp.minimum(1.0, clip / jnp.maximum(norms, 1e-300))


def _release(config: DPSGDConfig, total_clipped, total_raw, key):
    """One step's release from the clipped and unclipped gradient sums."""
    noise = config.noise_std * jax.random.normal(key, (config.dim,))
    if config.variant == "clip-after-noise":
        return _clip_rows(total_raw + noise, config.clip)
    return total_clipped + noise


def simulated_train(config: DPSGDConfig):
    """A model-free DP-SGD training releasing the updates seen by a white-box auditor.

    Args:
        config: the configuration.

    Returns:
        A jitted ``train(dataset, key, gradient_canary) -> (T, dim)`` releases (the dataset
        is not read: the other records' gradients are zero on every coordinate);
        ``gradient_canary`` is one gradient ``(dim,)`` or several ``(k, dim)`` (one-run
        audits), each sampled independently like a record.
    """

    def train(dataset, key, gradient_canary):
        g = jnp.atleast_2d(jnp.asarray(gradient_canary, dtype=jnp.float64))
        clipped = _clip_rows(g, config.clip)

        def step(_, k):
            k_sample, k_noise = jax.random.split(k)
            sampled = jax.random.bernoulli(k_sample, config.q, (g.shape[0],))
            return None, _release(config, sampled @ clipped, sampled @ g, k_noise)

        _, releases = lax.scan(step, None, jax.random.split(key, config.steps))
        return releases

    return jax.jit(train)


def _per_example_gradients(theta, x, y):
    """Gradients of the logistic loss of each record, ``(n, d)``."""
    p = jax.nn.sigmoid(x @ theta)
    return (p - y)[:, None] * x


def logistic_train(config: DPSGDConfig):
    """DP-SGD of a logistic regression (per-example clipping, Poisson batches).

    Args:
        config: the configuration (``dim`` must match the features).

    Returns:
        A jitted ``train((X, y), key, gradient_canary) -> (T, dim)`` releases ``r_t``.
    """

    def train(dataset, key, gradient_canary):
        x, y = (jnp.asarray(a, dtype=jnp.float64) for a in dataset)
        g_canary = jnp.asarray(gradient_canary, dtype=jnp.float64)

        def step(theta, k):
            k_batch, k_canary, k_noise = jax.random.split(k, 3)
            mask = jax.random.bernoulli(k_batch, config.q, (x.shape[0],))
            canary_in = jax.random.bernoulli(k_canary, config.q)
            raw = _per_example_gradients(theta, x, y)
            total_raw = mask @ raw + canary_in * g_canary
            total = mask @ _clip_rows(raw, config.clip) + canary_in * _clip_rows(
                g_canary, config.clip
            )
            r = _release(config, total, total_raw, k_noise)
            return theta - config.learning_rate * r / (config.q * x.shape[0]), r

        theta0 = jnp.zeros(x.shape[1])
        _, releases = lax.scan(step, theta0, jax.random.split(key, config.steps))
        return releases

    return jax.jit(train)


def example_data(config: DPSGDConfig) -> tuple[np.ndarray, np.ndarray]:
    """The first ``config.n`` breast-cancer records (31 features, the last zero).

    Args:
        config: the configuration.

    Returns:
        ``(X, y)``.
    """
    from mechanisms.dpsgd import breast_cancer_records

    return breast_cancer_records(config.n)
