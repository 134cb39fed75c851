"""The options of a black-box audit, as one frozen record checked once.

:func:`~dpaudit.blackbox.blackbox_audit` keeps its keyword arguments (what users
type); it builds a :class:`BlackBoxOptions` from them, and the engine's stages
read that record. :func:`~dpaudit.blackbox.run_blackbox_audit` takes the record
itself, with the same results.

Example:
    >>> opts = BlackBoxOptions(samples=20_000, classifier_options={"l2": 1e-3})
    >>> opts.select, opts.classifier_options.l2, opts.kinds
    (10000, 0.001, ('logistic', 'float'))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dpaudit.blackbox.autopairs import AutoPairs
from dpaudit.blackbox.selection import OBJECTIVES
from dpaudit.blackbox.statistics import STATISTICS, ClassifierOptions, classifier_settings
from dpaudit.core.checks import check_choice, check_count
from dpaudit.model.mechanism import Mechanism

__all__ = ["STOPPING_RULES", "BlackBoxOptions", "resolve_statistic"]

#: How certification decides its budget: count all ``samples`` (``"fixed"``), or stop at the
#: first pre-registered look that certifies a violation (``"sequential"``, level spent over the
#: looks; :mod:`dpaudit.blackbox.sequential`).
STOPPING_RULES = ("fixed", "sequential")

# Default selection releases: a tenth of the certification budget, at least 10000 so that the
# statistic and the event tail are estimated even for small budgets.
MIN_SELECT = 10_000
SELECT_FRACTION = 10


@dataclasses.dataclass(frozen=True)
class BlackBoxOptions:
    """How a black-box audit runs: every keyword argument of
    :func:`~dpaudit.blackbox.blackbox_audit` (frozen; checked when built).

    The fields and their defaults are the keyword arguments of
    :func:`~dpaudit.blackbox.blackbox_audit` (see there for their meaning), except the
    deprecated ``method=`` alias; ``classifier_options`` is kept as a
    :class:`~dpaudit.blackbox.statistics.ClassifierOptions`.

    Attributes:
        pairs: candidate pairs, ``"auto"`` or an :class:`~dpaudit.blackbox.AutoPairs`,
            or ``None`` for the pair ``(data, data_prime)``.
        reference: the reference :class:`~dpaudit.Mechanism`, or ``None``.
        statistic: ``"auto"``, ``"model"``, ``"logistic"`` or ``"mlp"``.
        features: the classifiers' feature map, or ``None``.
        samples: certification releases per dataset.
        select_samples: selection releases per dataset and pair, or ``None`` (see
            :attr:`select`).
        confidence: ``1 - alpha`` of the certified bounds.
        objective: ``"auto"``, ``"epsilon"`` or ``"delta"``.
        seed: the seed of every draw.
        check_adjacency: check each pair is adjacent under the claim's adjacency.
        chunk_size: releases per sampler call, or ``None``.
        classifier_options: the :class:`~dpaudit.blackbox.statistics.ClassifierOptions`
            (built from a mapping or ``None``).
        name: the implementation's name in reports, or ``None``.
        progress: show a progress bar (``None``: on a terminal, for long runs).
        executor: ``None``, ``"ray"`` or a :mod:`dpaudit.distributed` executor.
        stopping: ``"fixed"`` or ``"sequential"``.
        force: run even when the estimated cost is beyond the limits of
            :mod:`dpaudit.core.budget`.

    Raises:
        ValueError, TypeError: one sentence naming the bad argument.
    """

    pairs: Sequence[tuple[Any, Any]] | str | AutoPairs | None = None
    reference: Mechanism | None = None
    statistic: str = "auto"
    features: Callable | None = None
    samples: int = 1_000_000
    select_samples: int | None = None
    confidence: float = 0.95
    objective: str = "auto"
    seed: int = 0
    check_adjacency: bool = True
    chunk_size: int | None = None
    classifier_options: ClassifierOptions | Mapping[str, Any] | None = None
    name: str | None = None
    progress: bool | None = None
    executor: Any = None
    stopping: str = "fixed"
    force: bool = False

    def __post_init__(self) -> None:
        """Check every option once (one sentence naming the bad one) and normalise its type."""
        check_choice("statistic", self.statistic, STATISTICS)
        check_choice("objective", self.objective, OBJECTIVES)
        kinds = resolve_statistic(self.statistic, self.reference)[1]
        if self.features is not None and not callable(self.features):
            raise TypeError("features must be a callable releases (n, ...) -> features (n, p).")
        samples = check_count("samples", self.samples)
        select = self.select_samples
        if select is not None:
            select = check_count("select_samples", select)
        _set(self, samples=samples, select_samples=select)
        # A classifier trains on one half of the selection releases and thresholds on the other.
        if any(k != "model" for k in kinds) and self.select < 4:
            raise ValueError("select_samples must be >= 4 to train and threshold a classifier.")
        if not (isinstance(self.confidence, float | int) and 0 < self.confidence < 1):
            raise ValueError(f"confidence must be in (0, 1), got {self.confidence!r}.")
        chunk_size = None if self.chunk_size is None else check_count("chunk_size", self.chunk_size)
        _set(
            self,
            confidence=float(self.confidence),
            seed=int(self.seed),
            chunk_size=chunk_size,
            classifier_options=classifier_settings(self.classifier_options),
        )
        check_choice("stopping", self.stopping, STOPPING_RULES)
        if self.executor is not None and self.stopping == "sequential":
            raise ValueError(
                "stopping='sequential' counts look by look in this process; drop executor= or "
                "use stopping='fixed'."
            )

    @property
    def select(self) -> int:
        """Selection releases per dataset and pair: ``select_samples``, by default
        ``max(10000, samples // 10)``."""
        if self.select_samples is not None:
            return self.select_samples
        return max(MIN_SELECT, self.samples // SELECT_FRACTION)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The statistics fitted on each pair (selection chooses among them)."""
        return resolve_statistic(self.statistic, self.reference)[1]


def _set(options: BlackBoxOptions, **values) -> None:
    """Store normalised values on the frozen record (only while it is being built)."""
    for field, value in values.items():
        object.__setattr__(options, field, value)


def resolve_statistic(statistic: str, reference) -> tuple[str, tuple[str, ...]]:
    """``statistic`` with ``"auto"`` resolved, checked against ``reference``, and its arms.

    ``"auto"`` with a reference fits both the reference's privacy loss and the default
    classifier, and selection chooses between them (with the multiple-testing correction
    of selection): a reference model never yields a weaker planned bound than the default
    statistic on the same data. ``"auto"`` also offers the float reachability statistic,
    an arm only when its fit is found on the selection releases (releases of numpy's
    Laplace arithmetic), so audits of other samplers choose among the same arms as before.

    Args:
        statistic: one of :data:`~dpaudit.blackbox.statistics.STATISTICS`.
        reference: the reference :class:`~dpaudit.Mechanism`, or ``None``.

    Returns:
        ``(statistic, kinds)``: the resolved name and the statistics fitted.

    Raises:
        ValueError: ``"model"`` without a reference.
        TypeError: a reference that is not a :class:`~dpaudit.Mechanism`.
    """
    if statistic == "auto":
        if reference is not None:
            resolve_statistic("model", reference)
            return "model+logistic", ("model", "logistic", "float")
        return "logistic", ("logistic", "float")
    if statistic == "model" and reference is None:
        raise ValueError(
            "statistic='model' needs reference=<a dpaudit.Mechanism of the intended mechanism>."
        )
    if reference is not None and not isinstance(reference, Mechanism):
        raise TypeError(f"reference must be a dpaudit.Mechanism, got {type(reference).__name__}.")
    return statistic, (statistic,)
