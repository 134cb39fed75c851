"""The executor protocol: how an engine hands its Monte Carlo shards to a runtime.

The engines (:mod:`dpaudit.whitebox`, :mod:`dpaudit.blackbox`, :mod:`dpaudit.testing`)
take ``executor=`` and call only the methods of :class:`Executor`; they never import a
runtime. :mod:`dpaudit.runtime` implements the protocol (:class:`~dpaudit.runtime.LocalExecutor`,
:class:`~dpaudit.runtime.RayExecutor`). A name (``executor="ray"``) is looked up among the
entry points of the group ``dpaudit.executors`` that ``pyproject.toml`` declares.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

__all__ = ["EXECUTOR_GROUP", "Executor", "resolve_executor"]

#: The entry-point group naming executors (``ray = "dpaudit.runtime.executors:RayExecutor"``).
EXECUTOR_GROUP = "dpaudit.executors"


@runtime_checkable
class Executor(Protocol):
    """What an engine asks of an executor (:class:`dpaudit.runtime.ShardExecutor` implements it).

    Attributes:
        shards: shards per direction (white-box) or per dataset (black-box).
    """

    shards: int

    def map(self, function, shared, tasks, sizes, progress, ordered=False):
        """``[function(shared, task) for task in tasks]``, somewhere, in task order."""

    def put(self, shared, what: str):
        """``shared``, ready to be given to several :meth:`map` calls (sent once)."""

    def run_selection(self, fit, shared, sources: list, select: int, progress=None):
        """The black-box selection of every candidate pair, in pair order."""

    def start_search(self, build, run, problem):
        """A function running the worst-case neighbour search from a batch of start points."""

    def run_directions(self, recipe, key, settings, progress=None) -> list:
        """The white-box Monte Carlo of both directions, merged as the serial run's."""

    def run_tallies(self, jobs, n_chunks: int, progress=None) -> list:
        """The black-box certification tallies, merged as the serial run's."""


def resolve_executor(executor) -> Executor | None:
    """The executor named or given by ``executor=`` of the audit functions.

    Args:
        executor: ``None`` (serial), a name of the ``dpaudit.executors`` entry points
            (``"ray"``: a Ray executor on a local instance, or the instance already
            connected), or an :class:`Executor`.

    Returns:
        ``None`` or the executor.

    Raises:
        ValueError: an unknown name, or Ray missing.
    """
    if executor is None or isinstance(executor, Executor):
        return executor
    if isinstance(executor, str):
        named = {point.name: point for point in entry_points(group=EXECUTOR_GROUP)}
        if executor in named:
            return named[executor].load()()
    raise ValueError(
        f"executor must be None, 'ray' or a dpaudit.runtime executor, got {executor!r}."
    )
