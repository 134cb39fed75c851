"""The tasks executors run on workers, and the jobs shipped to them once.

* white-box shards (a range of chunks of one direction): a worker process keeps the loss
  kernels of the audit it last worked on (keyed by the job's token), so the kernels' jitted
  steps compile once per worker, not once per shard;
* black-box selection: one task per candidate pair (its selection releases and fitted
  statistics);
* neighbour search: one task per start point; a worker keeps the search's compiled program.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np

from dpaudit.whitebox.run import KernelRecipe, RunSettings, run_shard

__all__ = [
    "SearchJob",
    "SelectionJob",
    "SourceState",
    "WhiteboxJob",
    "new_token",
    "selection_task",
    "start_task",
    "whitebox_shard",
]

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


# ------------------------------------------------------------- black-box selection


class SelectionJob(NamedTuple):
    """Everything the selection of one candidate pair needs, shipped once to each worker.

    Attributes:
        fit: ``fit(shared, i)`` -> the fitted statistics of pair ``i`` (module level: the
            black-box engine's own per-pair function, which the serial run calls pair after pair).
        shared: what ``fit`` reads (the audit's plan, the release sources, the root key).
        sources: the ``(source of D, source of D')`` of each pair (the ones inside ``shared``:
            pickled once).
    """

    fit: Callable
    shared: object
    sources: list


class SourceState(NamedTuple):
    """What drawing a pair's selection releases taught its two sources, sent back to the driver.

    Attributes:
        shapes: the release shape of ``D``'s and of ``D'``'s source.
        structure: the multi-output structure the sources share (``None``: plain arrays).
        categories: how many non-numeric outputs got a category index (0 for numeric samplers).
    """

    shapes: tuple
    structure: object
    categories: int


def selection_task(job: SelectionJob, i: int):
    """Pair ``i``'s fitted statistics and what its sources learnt (one task of the selection).

    Args:
        job: the :class:`SelectionJob`.
        i: the index of the candidate pair.

    Returns:
        ``(fitted statistics, SourceState)``.

    Raises:
        Exception: whatever ``fit`` raises (the sampler's own error, as in the serial run),
            with a note naming the candidate pair.
    """
    try:
        fitted = job.fit(job.shared, i)
    except Exception as err:
        err.add_note(f"(selection releases of candidate pair {i} of {len(job.sources)})")
        raise
    pair = job.sources[i]
    outputs = pair[0].outputs
    state = SourceState(
        tuple(source.shape for source in pair), outputs.structure, len(outputs.categories.index)
    )
    return fitted, state


# ------------------------------------------------------------- neighbour search


class SearchJob(NamedTuple):
    """A neighbour search's problem, shipped once; each task runs one start point.

    Attributes:
        build: ``build(problem)`` -> the compiled program of the search (built once per worker).
        run: ``run(problem, starts, program)`` -> the search's results from ``starts`` (a batch).
        problem: the search problem.
        token: identifies the search (the worker's program cache key).
    """

    build: Callable
    run: Callable
    problem: object
    token: str


# token -> the compiled program of the search; one search at a time per worker.
_PROGRAMS: dict = {}


def start_task(job: SearchJob, starts):
    """Run the search from one start point (``starts``: a batch of one), on a worker.

    Args:
        job: the :class:`SearchJob`.
        starts: the start point, every leaf with a leading axis of length 1.

    Returns:
        ``job.run(job.problem, starts, program)`` as numpy arrays.
    """
    program = _PROGRAMS.get(job.token)
    if program is None:
        _PROGRAMS.clear()
        program = _PROGRAMS[job.token] = job.build(job.problem)
    return jax.tree_util.tree_map(np.asarray, job.run(job.problem, starts, program))
