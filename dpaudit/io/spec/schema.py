"""The records of a validated audit spec, the error it raises, and what a spec may contain.

:func:`dpaudit.io.spec.load_spec` fills these records from a TOML file; nothing
here reads files or runs user code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dpaudit.model.audit_record import VERDICTS  # the verdicts a white-box spec may expect
from dpaudit.model.claims import Claim

__all__ = [
    "BLACKBOX_VERDICTS",
    "CLASSIFIER_OPTIONS",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_SAMPLES",
    "FEATURES",
    "NOTION_FIELDS",
    "SECTIONS",
    "TOP_LEVEL",
    "TRAINING_CLAIMS",
    "TRAINING_MODES",
    "TRAINING_SCORES",
    "TRAINING_VERDICTS",
    "VERDICTS",
    "AuditSpec",
    "BlackBoxSpec",
    "SpecError",
    "TrainingSpec",
    "field_error",
]

#: A black-box audit can refute a claim from samples, never prove it.
BLACKBOX_VERDICTS = ("violation", "inconclusive")
#: A training audit refutes a claim from canary scores, never proves it.
TRAINING_VERDICTS = ("violation", "inconclusive")
#: How a training spec's gradient canary is scored: the canary coordinate summed over the
#: iterates, the last iterate's, or the summed per-step log-likelihood ratio (the target's).
TRAINING_SCORES = ("sum", "last", "llr")
#: What a training spec audits: the ``[claim]`` point, or the target's whole accountant profile.
TRAINING_CLAIMS = ("point", "profile")
#: How a training spec audits: many runs with and without one canary, or one run with many.
TRAINING_MODES = ("many-run", "one-run")
#: Classifier features of a black-box spec: the release values, or Karhunen–Loève coefficients.
FEATURES = ("values", "kl")
#: The keys allowed at the top level of a spec file.
TOP_LEVEL = frozenset(
    {
        "name",
        "expected",
        "description",
        "mechanism",
        "blackbox",
        "training",
        "claim",
        "data",
        "budget",
    }
)
#: The fields allowed in each table of a spec file.
SECTIONS: Mapping[str, frozenset[str]] = {
    "mechanism": frozenset({"name", "path", "params"}),
    "blackbox": frozenset(
        {
            "sampler",
            "mechanism",
            "params",
            "method",
            "reference",
            "reference_params",
            "features",
            "components",
            "objective",
            "stopping",
            "classifier_options",
            "pairs",
        }
    ),
    "claim": frozenset(
        {
            "epsilon",
            "delta",
            "adjacency",
            "zcdp_rho",
            "gdp_mu",
            "rdp_orders",
            "rdp_epsilons",
            "tradeoff_points",
            "tradeoff_values",
            "tradeoff_name",
            "anchor_delta",
        }
    ),
    "training": frozenset(
        {
            "train",
            "params",
            "coordinate",
            "norm",
            "score",
            "runs",
            "select_fraction",
            "claim",
            "mode",
            "canaries",
            "guesses_in",
            "guesses_out",
        }
    ),
    "data": frozenset({"generator", "files", "params"}),
    "budget": frozenset({"samples", "select_samples", "confidence", "seed"}),
}
#: The ``[claim]`` fields of the notions beyond (epsilon, delta) (``dpaudit.model.claims``).
NOTION_FIELDS = (
    "zcdp_rho",
    "gdp_mu",
    "rdp_orders",
    "rdp_epsilons",
    "tradeoff_points",
    "tradeoff_values",
)
#: The options a black-box spec may pass to the classifier (``[blackbox.classifier_options]``).
CLASSIFIER_OPTIONS = ("batch", "hidden", "l2", "learning_rate", "steps")
#: Releases drawn per direction (black-box: certification releases per dataset) by default.
DEFAULT_SAMPLES = 200_000
#: Confidence of the certified bounds by default.
DEFAULT_CONFIDENCE = 0.95


class SpecError(ValueError):
    """An invalid audit spec; the message names the file and the field."""


def field_error(path: Path, field: str, message: str) -> SpecError:
    """The error for one field of a spec, as one line ``"{path}: {field}: {message}"``.

    Args:
        path: the spec file.
        field: the field at fault, dotted (``"claim.epsilon"``).
        message: what is wrong and what is allowed.

    Returns:
        A :class:`SpecError` to raise.

    Example:
        >>> str(field_error(Path("a.toml"), "claim.epsilon", "missing."))
        'a.toml: claim.epsilon: missing.'
    """
    return SpecError(f"{path}: {field}: {message}")


@dataclasses.dataclass(frozen=True)
class BlackBoxSpec:
    """The validated ``[blackbox]`` table of a spec (see :func:`dpaudit.blackbox_audit`).

    Attributes:
        sampler: ``"/abs/file.py:callable"`` of a plain sampler, or ``None``.
        mechanism: a catalogue name sampled as a black box, or ``None``
            (exactly one of ``sampler`` / ``mechanism`` is set).
        params: keyword arguments of the sampler (or of the catalogue builder).
        method: ``"model"``, ``"logistic"``, ``"mlp"``, ``"float"`` or ``"bits"``
            (``"auto"`` resolved: ``"model"`` when there is a reference, else
            ``"logistic"``, with ``offers_float``).
        reference: the reference model (the intended mechanism), a catalogue
            name or ``"/abs/file.py:callable"``, or ``None``; a ``[mechanism]``
            table in the same spec is the reference.
        reference_params: parameters of the reference's builder.
        features: ``"values"`` or ``"kl"`` (classifier features).
        components: number of KL coefficients for ``features = "kl"``, or
            ``None`` for all of the basis.
        objective: ``"auto"`` (the default, as in :func:`dpaudit.blackbox_audit`), ``"epsilon"``
            or ``"delta"``.
        stopping: ``"fixed"`` or ``"sequential"`` (certification stops at the first
            pre-registered look that certifies a violation).
        classifier_options: passed to :func:`dpaudit.blackbox_audit`.
        reference_in_mechanism: the reference is the spec's ``[mechanism]`` table.
        offers_float: ``method`` was ``"auto"`` without a reference: the audit runs
            :func:`dpaudit.blackbox_audit`'s ``statistic="auto"``, which offers the float
            reachability statistic beside the classifier when its fit is found.
        pairs: ``None`` (the ``[data]`` pair), or the keyword arguments of a
            :class:`~dpaudit.blackbox.AutoPairs` (``{}`` for ``pairs = "auto"``):
            candidate neighbours generated around the first dataset.
    """

    sampler: str | None
    mechanism: str | None
    params: Mapping[str, Any]
    method: str
    reference: str | None
    reference_params: Mapping[str, Any]
    features: str = "values"
    components: int | None = None
    objective: str = "auto"
    stopping: str = "fixed"
    classifier_options: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    reference_in_mechanism: bool = False
    offers_float: bool = False
    pairs: Mapping[str, Any] | None = None


@dataclasses.dataclass(frozen=True)
class TrainingSpec:
    """The validated ``[training]`` table of a spec (see :func:`dpaudit.training.training_audit`).

    Attributes:
        train: ``"/abs/file.py:callable"``; ``callable(**params)`` returns a
            :class:`~dpaudit.training.TrainingTarget` (the training function, its data and,
            for ``score = "llr"``, its per-step log-likelihood ratio).
        params: keyword arguments of the callable.
        coordinate: the parameter the Dirac gradient canary pushes.
        norm: the canary gradient's norm.
        score: one of :data:`TRAINING_SCORES`.
        runs: trainings in all, half with the canary (even, ``>= 8``).
        select_fraction: fraction of the runs that choose the threshold, in ``[0, 1)``;
            ``0``: every run certifies, Bonferroni over all thresholds.
        claim: ``"point"`` (the ``[claim]`` table's epsilon at its delta) or ``"profile"``
            (the target's accountant profile, whose epsilon at delta the ``[claim]`` states).
        mode: one of :data:`TRAINING_MODES`; ``"one-run"``: one training with ``canaries``
            Dirac canaries, each included by a fair coin
            (:func:`dpaudit.training.one_run_training_audit`).
        canaries: one-run: the number of canaries ``m`` (one parameter each); else 0.
        guesses_in: one-run: the highest scores guessed *in* (fixed before training).
        guesses_out: one-run: the lowest scores guessed *out* (fixed before training).
    """

    train: str
    params: Mapping[str, Any]
    coordinate: int = 0
    norm: float = 1.0
    score: str = "sum"
    runs: int = 200
    select_fraction: float = 0.25
    claim: str = "point"
    mode: str = "many-run"
    canaries: int = 0
    guesses_in: int = 0
    guesses_out: int = 0


@dataclasses.dataclass(frozen=True)
class AuditSpec:
    """A validated audit spec.

    Attributes:
        name: the audit's name.
        path: the spec file.
        mechanism: a catalogue name or ``"file.py:callable"``: the mechanism
            whose claim is audited. For a black-box spec, the ``[mechanism]``
            table when there is one (the model the implementation declares it
            computes, also the reference), else what is sampled
            (``blackbox.mechanism`` or ``blackbox.sampler``).
        params: parameters for the mechanism's builder (black-box without
            ``[mechanism]``: ``blackbox.params``).
        claim: the claim audited: a :class:`~dpaudit.Claim`, or a claim of
            :mod:`dpaudit.model.claims` (zCDP, RDP, GDP).
        generator: a named dataset generator, or ``None`` when ``files`` is given.
        files: two ``.npy``/``.npz`` files holding ``D`` and ``D'``, or ``None``.
        data_params: parameters of the generator.
        samples: releases drawn per direction (black-box: certification
            releases per dataset).
        confidence: confidence of the certified bounds.
        seed: the random seed.
        expected: the verdict the spec expects, or ``None``.
        description: free text.
        blackbox: the ``[blackbox]`` table, or ``None`` for a white-box spec.
        select_samples: black-box selection releases per dataset (``None``:
            the engine's default).
        training: the ``[training]`` table, or ``None`` (a training spec has no
            ``[data]`` table: the target brings its data; ``samples`` is its run count).
    """

    name: str
    path: Path
    mechanism: str
    params: Mapping[str, Any]
    claim: Claim
    generator: str | None
    files: tuple[Path, Path] | None
    data_params: Mapping[str, Any]
    samples: int
    confidence: float
    seed: int
    expected: str | None = None
    description: str = ""
    blackbox: BlackBoxSpec | None = None
    select_samples: int | None = None
    training: TrainingSpec | None = None

    @property
    def kind(self) -> str:
        """``"training"`` for a ``[training]`` spec, ``"black-box"`` for a ``[blackbox]`` one,
        else ``"white-box"``."""
        if self.training is not None:
            return "training"
        return "white-box" if self.blackbox is None else "black-box"
