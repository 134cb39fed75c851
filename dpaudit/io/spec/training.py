"""A ``[training]`` spec built and run: its target, its canary, its training audit.

:func:`resolve_training` executes the spec's ``file.py:callable`` (user code) and checks
that it returns a :class:`~dpaudit.training.TrainingTarget`; :func:`run_training` runs
:func:`~dpaudit.training.training_audit` on it with the spec's canary, score, runs and
budget.
"""

from __future__ import annotations

from dpaudit.io.spec.resolve import load_callable
from dpaudit.io.spec.schema import AuditSpec, field_error
from dpaudit.training import (
    DiracCanaries,
    GradientCanary,
    TrainingTarget,
    one_run_training_audit,
    training_audit,
)

__all__ = ["resolve_training", "run_training", "training_canary"]


def resolve_training(spec: AuditSpec) -> TrainingTarget:
    """The spec's training target: ``callable(**training.params)``, checked.

    Args:
        spec: a validated spec with a ``[training]`` table.

    Returns:
        The :class:`~dpaudit.training.TrainingTarget`.

    Raises:
        SpecError: when the callable returns something else, the canary coordinate is not
            below the target's ``dim``, a one-run audit has more canaries than the target
            has parameters, or ``score = "llr"`` and the target has no ``llr``.
    """
    t = spec.training
    build = load_callable(spec.path, t.train, "training.train")
    target = build(**dict(t.params)) if callable(build) else build
    if not isinstance(target, TrainingTarget):
        raise field_error(
            spec.path,
            "training.train",
            f"must return a dpaudit.training.TrainingTarget, got {type(target).__name__}.",
        )
    if t.canaries > target.dim:  # one-run: each Dirac canary takes a parameter of its own
        raise field_error(
            spec.path,
            "training.canaries",
            f"{t.canaries} canaries do not fit the target's {target.dim} parameters (one "
            "Dirac canary each); lower canaries or give the target a larger dim.",
        )
    if t.coordinate >= target.dim:
        raise field_error(
            spec.path,
            "training.coordinate",
            f"must be below the target's dim = {target.dim}, got {t.coordinate}.",
        )
    if t.claim == "profile" and target.profile is None:
        raise field_error(
            spec.path, "training.claim", "'profile' needs a target with profile; use 'point'."
        )
    if t.score == "llr" and target.llr is None:
        raise field_error(
            spec.path, "training.score", "'llr' needs a target with llr; use 'sum' or 'last'."
        )
    return target


def training_canary(spec: AuditSpec, target: TrainingTarget) -> GradientCanary:
    """The spec's Dirac gradient canary, scored as ``training.score`` asks.

    Args:
        spec: a validated training spec.
        target: its resolved target.

    Returns:
        The :class:`~dpaudit.training.GradientCanary`.
    """
    t = spec.training
    return GradientCanary(
        dim=target.dim,
        coordinate=t.coordinate,
        norm=t.norm,
        aggregate="last" if t.score == "last" else "sum",
        transform=target.llr if t.score == "llr" else None,
    )


def run_training(spec: AuditSpec, target: TrainingTarget):
    """The spec's training audit: many runs, or one run with many canaries (``training.mode``).

    Args:
        spec: a validated training spec (``samples`` is its run count; 1 for one run).
        target: its resolved target.

    Returns:
        The :class:`~dpaudit.training.TrainingAuditResult`.

    Raises:
        ValueError: for bad input found while training (states of different shapes,
            non-finite scores).
    """
    t = spec.training
    claim = target.profile if t.claim == "profile" else spec.claim
    if t.mode == "one-run":
        transform = target.llr if t.score == "llr" else None
        canaries = DiracCanaries(m=t.canaries, dim=target.dim, norm=t.norm, transform=transform)
        return one_run_training_audit(
            target.train, target.dataset, claim, canaries, k_plus=t.guesses_in,
            k_minus=t.guesses_out, confidence=spec.confidence, seed=spec.seed, name=target.name,
        )  # fmt: skip
    return training_audit(
        target.train,
        target.dataset,
        claim,
        training_canary(spec, target),
        runs=spec.samples,
        confidence=spec.confidence,
        select_fraction=spec.training.select_fraction,
        seed=spec.seed,
        vectorize=target.vectorize,
        name=target.name,
    )
