"""What the library DP-SGD targets of ``audits/training/`` share: their records and target.

A library's DP-SGD (jax-privacy, Opacus) becomes a white-box canary target the same way:
a linear per-example loss makes each record's gradient the record itself; the records are
zero on coordinate 0, where the Dirac gradient canary sits, so that coordinate of every
released update is the canary's clipped gradient (when its batch holds it) plus the
library's noise. Each library's own ``train`` inserts the canary (it differs: a masked
row in a traced JAX step, a record appended to a PyTorch loader); this module holds the
rest: the records (:func:`canary_free_records`), the variant check and the
:class:`~dpaudit.training.TrainingTarget` (:func:`library_target`), and the rounding of
an accountant's epsilon into a spec's claim (:func:`claim_rounding`).
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Callable

import numpy as np

from dpaudit.training import ProfileClaim, TrainingTarget

__all__ = ["canary_free_records", "claim_rounding", "library_target"]


def canary_free_records(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """``n`` records of ``dim`` standard normal features, zero on coordinate 0 (the canary's).

    Args:
        n: the number of records.
        dim: the number of features (= parameters of the linear model).
        seed: the seed of the features.

    Returns:
        The ``(n, dim)`` records.
    """
    x = np.random.default_rng(seed).normal(size=(n, dim))
    x[:, 0] = 0.0
    return x


def claim_rounding(epsilon: float) -> float:
    """An accountant's epsilon rounded *up* to 4 significant digits (a spec's claim).

    Args:
        epsilon: the accountant's epsilon (``> 0``).

    Returns:
        The smallest 4-significant-digit number ``>= epsilon``.
    """
    scale = 10 ** (3 - math.floor(math.log10(epsilon)))
    return math.ceil(epsilon * scale) / scale


# fmt: off
def library_target(
    train: Callable, *, variant: str, variants: tuple[str, ...], n: int, dim: int,
    llr: Callable, name: str, vectorize: bool = False, profile: ProfileClaim | None = None,
    requires: tuple[str, ...] = (),
) -> TrainingTarget:
    """A library's DP-SGD as a :class:`~dpaudit.training.TrainingTarget` on canary-free records.

    Args:
        train: ``train(dataset, key, gradient_canary) -> (steps, dim)`` updates.
        variant: the variant built (checked against ``variants``).
        variants: the library module's variants.
        n: the number of records (:func:`canary_free_records`).
        dim: the number of parameters.
        llr: the per-step score transform of the canary coordinate.
        name: what is audited.
        vectorize: ``train`` is JAX-traceable (each group's runs are one ``vmap``).
        profile: the accountant's whole privacy profile, or ``None``.
        requires: the modules ``train`` imports when it runs (the library): checked here,
            without importing them, so that a missing ``training`` extra is one sentence when
            the target is built (as ``dpaudit validate`` does), not an import error mid-audit.

    Returns:
        The target.

    Raises:
        ValueError: for a variant not in ``variants``, or a module of ``requires`` that is
            not installed.
    """
    # fmt: on
    if variant not in variants:
        raise ValueError(f"variant must be one of {variants}, got {variant!r}.")
    missing = [module for module in requires if importlib.util.find_spec(module) is None]
    if missing:
        raise ValueError(
            f"{name} needs {', '.join(missing)}, which is not installed: "
            "pip install 'dpaudit[training]'."
        )
    return TrainingTarget(
        train=train, dataset=canary_free_records(n, dim), dim=dim, llr=llr,
        vectorize=vectorize, name=name, profile=profile,
    )  # fmt: skip
