"""The shard functions executors run on workers, and the jobs shipped to them once.

A worker process keeps the loss kernels of the audit it last worked on (keyed by the
job's token): the kernels' jitted steps compile once per worker, not once per shard.
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from dpaudit.whitebox.run import KernelRecipe, RunSettings, run_shard

__all__ = ["WhiteboxJob", "new_token", "whitebox_shard"]

# token -> the two loss kernels; one audit at a time per worker keeps memory bounded.
_KERNELS: dict = {}


class WhiteboxJob(NamedTuple):
    """Everything a white-box shard needs, shipped once to each worker.

    Attributes:
        recipe: the :class:`~dpaudit.whitebox.run.KernelRecipe`.
        key: the audit's root key.
        settings: the :class:`~dpaudit.whitebox.run.RunSettings`.
        token: identifies the audit (the worker's kernel cache key).
    """

    recipe: KernelRecipe
    key: object
    settings: RunSettings
    token: str


def new_token() -> str:
    """A fresh identifier of one run's job.

    Returns:
        A random hex string.
    """
    return uuid.uuid4().hex


def whitebox_shard(job: WhiteboxJob, task: tuple[int, range]):
    """Run one shard ``task = (direction, chunks)`` of a white-box audit.

    Args:
        job: the :class:`WhiteboxJob`.
        task: the direction index and the chunk indices.

    Returns:
        The shard's :class:`~dpaudit.whitebox.run.DirectionState`.
    """
    d_index, chunks = task
    kernels = _KERNELS.get(job.token)
    if kernels is None:
        _KERNELS.clear()
        kernels = _KERNELS[job.token] = job.recipe.kernels()
    return run_shard(kernels[d_index], d_index, job.key, job.settings, chunks)
