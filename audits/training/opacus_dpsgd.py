"""Opacus 1.6 (CPU) DP-SGD as a training target: its per-sample clipping, its noise, its sampler.

A linear model without bias is trained on a sum loss, so each record's gradient is the
record itself; the records are zero on coordinate 0, where the canary record (``norm e_0``,
appended when present) sits, so that coordinate of each update is the canary's clipped
gradient (when its batch holds it) plus Opacus's noise. With ``loss_reduction="sum"`` and
a learning rate of 1, the update is the noisy sum of clipped gradients; the auditor sees
every update (white-box, all iterates). The claim is Opacus's own accountant (``"prv"``)
at delta 1e-5 for ``steps`` Poisson-sampled steps at rate ``batch_size / n``
(:func:`accountant_epsilon`; run this file to print it).

PyTorch and Opacus are imported when a training runs or the accountant is first asked (each
is a pure function of its parameters, computed once per process): building the target - as
``dpaudit validate`` does - imports neither.

Variants: ``"poisson"`` (``poisson_sampling=True``, what the accountant assumes; the score
is the summed per-step log-likelihood ratio of a Poisson-sampled canary);
``"fixed-batches"`` (``poisson_sampling=False`` with the user's loader of fixed-size batches
in the data's order: every record in exactly one known batch per epoch, no amplification,
still accounted as Poisson sampling: a faulty claim; the white-box score sums the canary
coordinate over the steps whose batch holds the canary).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.training import ProfileClaim, TrainingTarget, subsampled_gaussian_loss
from mechanisms.dpsgd.library_targets import claim_rounding, library_target

VARIANTS = ("poisson", "fixed-batches")


def make_train(steps: int, batch_size: int, noise_multiplier: float, clip: float, variant: str):
    """``train(dataset, key, gradient_canary) -> (steps, dim)`` updates, one Opacus training."""

    def train(dataset, key, gradient_canary):
        import torch
        from opacus import PrivacyEngine

        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        torch.manual_seed(seed)
        x = np.asarray(dataset, dtype=np.float64)
        g = np.asarray(gradient_canary, dtype=np.float64)
        if np.any(g != 0):
            x = np.concatenate([x, g[None]], axis=0)
        data = torch.utils.data.TensorDataset(torch.tensor(x))
        # fixed batches in the data's order (a streaming loader): the canary, appended last,
        # is in the last batch of every epoch
        loader = torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=False)
        model = torch.nn.Linear(x.shape[1], 1, bias=False).double()
        torch.nn.init.zeros_(model.weight)
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        with warnings.catch_warnings():  # secure_mode advice: not the audit's concern
            warnings.simplefilter("ignore")
            model, optimizer, loader = PrivacyEngine().make_private(
                module=model, optimizer=optimizer, data_loader=loader,
                noise_multiplier=noise_multiplier, max_grad_norm=clip,
                poisson_sampling=variant == "poisson", loss_reduction="sum",
            )  # fmt: skip
        releases = []
        with warnings.catch_warnings(), _quiet_opacus_log():
            # an empty Poisson batch: Opacus warns (log and hook) on every such step
            warnings.filterwarnings("ignore", message="Full backward hook is firing")
            _train_steps(model, optimizer, loader, steps, releases)
        return np.stack(releases)

    return train


def _train_steps(model, optimizer, loader, steps: int, releases: list) -> None:
    """Take ``steps`` optimizer steps, appending each step's update (minus the weight change)."""
    while len(releases) < steps:
        for (batch,) in loader:
            before = model._module.weight.detach().clone()
            optimizer.zero_grad()
            model(batch).sum().backward()  # an empty Poisson batch still takes a noisy step
            optimizer.step()
            releases.append((before - model._module.weight.detach()).numpy().ravel())
            if len(releases) == steps:
                return


@contextlib.contextmanager
def _quiet_opacus_log():
    """Opacus's loggers at ERROR for the block (its empty-batch warning is expected here)."""
    logger = logging.getLogger("opacus")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


@functools.cache
def accountant_epsilon(
    steps: int, batch_size: int, n: int, noise_multiplier: float, delta: float = 1e-5
) -> float:
    """Opacus's PRV accountant: epsilon at ``delta`` of ``steps`` steps at rate
    ``batch_size / n``, rounded up to 4 significant digits (the specs' claim).

    Args:
        steps: the number of steps.
        batch_size: the (expected) batch size.
        n: the number of records.
        noise_multiplier: the noise multiplier.
        delta: the delta.

    Returns:
        The accountant's epsilon.
    """
    from opacus.accountants import create_accountant

    accountant = create_accountant("prv")
    accountant.history = [(noise_multiplier, batch_size / n, steps)]
    return claim_rounding(float(accountant.get_epsilon(delta=delta)))


def accountant_profile(
    steps: int, batch_size: int, n: int, noise_multiplier: float, delta: float = 1e-5
) -> ProfileClaim:
    """Opacus's PRV accountant's whole privacy profile ``delta(epsilon)``, as an upper curve.

    The discrete privacy-loss distribution Opacus's ``PRVAccountant.get_epsilon`` builds (its
    ``_get_dprv``, with the same ``eps_error = 0.01`` and ``delta_error = delta / 1000``)
    gives ``delta_est(e) = sum_{t >= e} p_t (1 - e^{e - t})``; Gopi et al.'s error bounds
    make ``delta_est(e - eps_error) + delta_error`` an upper curve: the epsilon it reaches at
    ``delta`` is ``get_epsilon(delta)``'s upper estimate. The curve and the description are
    computed when the audit first reads them (:func:`_prv_tails`, once per process).

    Args:
        steps: the number of steps.
        batch_size: the (expected) batch size.
        n: the number of records.
        noise_multiplier: the noise multiplier.
        delta: the delta at which the audit reports epsilon.

    Returns:
        The :class:`~dpaudit.training.ProfileClaim`.
    """
    eps_error, delta_error = 0.01, delta / 1000

    def delta_of_epsilon(epsilon):
        t, tail, tail_exp = _prv_tails(steps, batch_size / n, noise_multiplier, delta_error)
        e = np.asarray(epsilon, dtype=float) - eps_error
        i = np.searchsorted(t, e, side="left")
        return np.clip(tail[i] - np.exp(e) * tail_exp[i], 0.0, 1.0) + delta_error

    def description():
        epsilon = accountant_epsilon(steps, batch_size, n, noise_multiplier, delta)
        return f"Opacus PRV profile (epsilon {epsilon:.4g} at delta {delta:g})"

    return ProfileClaim(delta_of_epsilon, delta=delta, description=description)


@functools.cache
def _prv_tails(steps: int, rate: float, noise_multiplier: float, delta_error: float):
    """Opacus's discrete PRV (``eps_error = 0.01``) as ``(t, tail, tail_exp)`` read-only arrays:
    ``tail[i] = sum_{j >= i} p_j`` and ``tail_exp[i] = sum_{j >= i} p_j e^{-t_j}`` (a zero
    appended to each)."""
    from opacus.accountants import PRVAccountant

    accountant = PRVAccountant()
    accountant.history = [(noise_multiplier, rate, steps)]
    dprv = accountant._get_dprv(eps_error=0.01, delta_error=delta_error)
    t, p = np.asarray(dprv.domain.ts, dtype=float), np.asarray(dprv.pmf, dtype=float)
    tail = np.append(np.flip(np.cumsum(np.flip(p))), 0.0)
    tail_exp = np.append(np.flip(np.cumsum(np.flip(p * np.exp(-t)))), 0.0)
    for array in (t, tail, tail_exp):
        array.flags.writeable = False
    return t, tail, tail_exp


def target(
    variant: str = "poisson",
    steps: int = 22,
    batch_size: int = 2,
    n: int = 20,
    noise_multiplier: float = 0.6,
    clip: float = 10.0,
    dim: int = 4,
) -> TrainingTarget:
    """The training target (serial: one Opacus training per run).

    Args:
        variant: one of :data:`VARIANTS`.
        steps: the number of steps.
        batch_size: the (expected) batch size.
        n: the number of records.
        noise_multiplier: the noise multiplier.
        clip: Opacus's ``max_grad_norm``.
        dim: the number of parameters.

    Returns:
        The :class:`~dpaudit.training.TrainingTarget`.
    """
    if variant == "poisson":
        llr = subsampled_gaussian_loss(batch_size / n, noise_multiplier * clip, clip)
    else:  # the canary's batches: the last of each epoch of ceil((n + 1) / batch_size)
        per_epoch = -(-(n + 1) // batch_size)
        known = jnp.asarray((np.arange(steps) + 1) % per_epoch == 0, dtype=jnp.float64)

        def llr(x):
            return x * known

    return library_target(
        make_train(steps, batch_size, noise_multiplier, clip, variant),
        variant=variant,
        variants=VARIANTS,
        n=n,
        dim=dim,
        llr=llr,
        name=f"Opacus DP-SGD ({variant}, T={steps}, batch {batch_size} of {n})",
        profile=accountant_profile(steps, batch_size, n, noise_multiplier),
        requires=("torch", "opacus"),
    )


if __name__ == "__main__":
    print(accountant_epsilon(22, 2, 20, 0.6))
