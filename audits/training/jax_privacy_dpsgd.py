"""jax-privacy 2.0's DP-SGD as a training target: its per-example clipping, its noise, its accountant.

Each step sums ``jax_privacy.clipping.clipped_grad`` of a linear per-example loss over a
Poisson batch (unsampled records are masked to a zero gradient, which the clipping leaves
zero) and adds ``jax_privacy.noise_addition.gaussian_privatizer`` noise of standard
deviation ``noise_multiplier * clip``; the auditor sees every noisy sum (white-box, all
iterates). The data's records have a zero gradient on coordinate 0, where the Dirac
gradient canary sits, so the canary coordinate is the canary's clipped gradient (when
sampled) plus noise. The claim is jax-privacy's ``DpsgdTrainingAccountant`` (PLD) epsilon
(:func:`accountant_epsilon`; run this file to print it).

Variants: ``"correct"``; ``"noise-without-clip"`` (the privatizer's standard deviation set
to the noise multiplier, forgetting the clipping norm: a misuse, not a jax-privacy bug).

jax-privacy is imported when a training runs or the accountant is asked (its import,
with dp_accounting, chex and optax, is about 0.9 s CPU): building the target, as
``dpaudit validate`` does, imports none of it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from dpaudit.training import TrainingTarget, subsampled_gaussian_loss
from mechanisms.dpsgd.library_targets import claim_rounding, library_target

VARIANTS = ("correct", "noise-without-clip")


def _loss(params, x, mask):
    # a linear loss per example: its gradient is the record itself (or the canary), masked
    return jnp.sum(mask * (x @ params))


def make_train(steps: int, q: float, noise_multiplier: float, clip: float, variant: str):
    """``train(dataset, key, gradient_canary) -> (steps, dim)`` noisy clipped sums."""
    stddev = noise_multiplier * (1.0 if variant == "noise-without-clip" else clip)

    def train(dataset, key, gradient_canary):
        from jax_privacy import clipping, noise_addition  # on use: validate needs neither

        grad = clipping.clipped_grad(_loss, l2_clip_norm=clip, batch_argnums=(1, 2))
        x = jnp.concatenate([jnp.asarray(dataset), jnp.asarray(gradient_canary)[None]], axis=0)
        present = jnp.any(jnp.asarray(gradient_canary) != 0)
        k_batch, k_noise = jax.random.split(key)
        privatizer = noise_addition.gaussian_privatizer(stddev=stddev, prng_key=k_noise)
        params = jnp.zeros(x.shape[1])
        state = privatizer.init(params)

        def step(state, k):
            mask = jax.random.bernoulli(k, q, (x.shape[0],)).astype(x.dtype)
            mask = mask.at[-1].multiply(present)  # the canary's row only when it is in
            noisy, state = privatizer.update(grad(params, x, mask), state)
            return state, noisy

        _, releases = jax.lax.scan(step, state, jax.random.split(k_batch, steps))
        return releases

    return train


def accountant_epsilon(
    steps: int, q: float, noise_multiplier: float, n: int, delta: float = 1e-5
) -> float:
    """jax-privacy's DP-SGD accountant (PLD, Poisson sampling): epsilon at ``delta``, rounded up
    to 4 significant digits (the specs' claim).

    Args:
        steps: the number of updates.
        q: the sampling probability (batch size ``q n``).
        noise_multiplier: the noise multiplier.
        n: the number of records.
        delta: the delta.

    Returns:
        The accountant's epsilon.
    """
    from jax_privacy import accounting

    params = accounting.DpParams(
        noise_multipliers=noise_multiplier, num_samples=n, delta=delta, batch_size=round(q * n)
    )
    accountant = accounting.DpsgdTrainingAccountant(accounting.PldAccountantConfig())
    return claim_rounding(float(accountant.compute_epsilon(num_updates=steps, dp_params=params)))


def target(
    variant: str = "correct",
    steps: int = 100,
    q: float = 0.1,
    noise_multiplier: float = 3.0,
    clip: float = 10.0,
    n: int = 50,
    dim: int = 4,
) -> TrainingTarget:
    """The training target (vectorised over runs).

    Args:
        variant: one of :data:`VARIANTS`.
        steps: the number of updates.
        q: the Poisson sampling probability.
        noise_multiplier: the noise multiplier.
        clip: the clipping norm.
        n: the number of records (``q n`` is the accountant's batch size).
        dim: the number of parameters.

    Returns:
        The :class:`~dpaudit.training.TrainingTarget`.
    """
    return library_target(
        make_train(steps, q, noise_multiplier, clip, variant),
        variant=variant,
        variants=VARIANTS,
        n=n,
        dim=dim,
        llr=subsampled_gaussian_loss(q, noise_multiplier * clip, clip),
        name=f"jax-privacy DP-SGD ({variant}, T={steps}, q={q:g})",
        vectorize=True,
        requires=("jax_privacy",),
    )


if __name__ == "__main__":
    print(accountant_epsilon(100, 0.1, 3.0, 50))
