"""The catalogue's DP-SGD (mechanisms/dpsgd/training.py) as training targets for the specs here.

``target(variant=..., ...)`` returns a :class:`dpaudit.training.TrainingTarget`: the
model-free white-box training (:func:`mechanisms.dpsgd.training.simulated_train`, every
iterate released, vectorised over runs) and the per-step log-likelihood ratio of the
canary coordinate under the *claimed* noise (what the auditor knows). Run as a script, it
prints each variant's claimed and exact epsilon (the numbers in the specs' ``[claim]``).
"""

from __future__ import annotations

from dpaudit.training import TrainingTarget, subsampled_gaussian_loss
from mechanisms.dpsgd.library_targets import claim_rounding
from mechanisms.dpsgd.training import DPSGDConfig, claimed_epsilon, simulated_train


def config_of(**params) -> DPSGDConfig:
    """The configuration of a spec's ``[training.params]`` (``dim`` 4: the canary's and three)."""
    return DPSGDConfig(**{"dim": 4, **params})


def target(**params) -> TrainingTarget:
    """The variant's training target.

    Args:
        **params: fields of :class:`mechanisms.dpsgd.training.DPSGDConfig`.

    Returns:
        The target (vectorised; ``llr`` under the claimed noise ``noise_multiplier * clip``).
    """
    config = config_of(**params)
    return TrainingTarget(
        train=simulated_train(config),
        dataset=None,
        dim=config.dim,
        llr=subsampled_gaussian_loss(config.q, config.noise_multiplier * config.clip, config.clip),
        vectorize=True,
        name=f"catalogue DP-SGD ({config.variant}, T={config.steps}, q={config.q:g})",
    )


def claim_epsilon(**params) -> float:
    """The variant's accountant's epsilon, rounded up to 4 significant digits (the spec's claim)."""
    return claim_rounding(claimed_epsilon(config_of(**params)))


if __name__ == "__main__":
    from mechanisms.dpsgd.training import VARIANTS

    for v in VARIANTS:
        print(v, claim_epsilon(variant=v))
