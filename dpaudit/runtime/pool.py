"""A suite of audit specs on local worker processes (``dpaudit audit --workers N``).

Ray's local instance costs seconds to start and a raylet, a GCS server and an object
store beside the workers; for a suite on one machine a plain pool of ``N`` processes is
enough. Each worker is a fresh Python started by ``spawn`` (never ``fork``: the driver
runs JAX's threads), imports dpaudit once, and then takes specs one at a time, longest
first. A worker prepares its spec again from its path and runs it with the serial engine
(:func:`dpaudit.runtime.suite.run_spec`), so every result is the serial run's.

Workers inherit the driver's environment (BLAS and OpenMP thread counts, ``XLA_FLAGS``),
so they sum in the order the driver does. Between audits a worker releases what the
audit left behind (:func:`dpaudit.core.memory.release_memory`) against its share of the
suite's memory budget, so ``N`` workers together stay within what one serial process
would hold.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from dpaudit.core.memory import SUITE_MEMORY_BYTES, release_memory
from dpaudit.runtime.suite import SuiteRunner, SuiteTarget, driver_cache, run_spec

__all__ = ["WORKER_MEMORY_FLOOR", "run_suite_local", "worker_budget"]

#: The smallest per-worker budget: a fresh worker with JAX and the engine loaded holds
#: about 0.5 GB, so a lower budget would only drop compiled programs after every audit.
WORKER_MEMORY_FLOOR = 600 << 20


def worker_budget(workers: int, total: int = SUITE_MEMORY_BYTES) -> int:
    """The resident memory above which a worker drops compiled programs between audits.

    Args:
        workers: worker processes of the suite.
        total: the suite's budget (bytes), shared by the workers.

    Returns:
        ``total // workers``, at least :data:`WORKER_MEMORY_FLOOR`.

    Raises:
        ValueError: for ``workers < 1``.
    """
    if isinstance(workers, bool) or int(workers) < 1:
        raise ValueError(f"workers must be >= 1 (worker processes), got {workers!r}.")
    return max(WORKER_MEMORY_FLOOR, int(total) // int(workers))


def run_pooled(overrides: tuple, target):
    """Run one audit on a pool worker, then release what it left behind.

    Args:
        overrides: ``(seed, samples, cache_dir, runner, budget)``: as
            :func:`~dpaudit.runtime.suite.run_spec`, plus the worker's memory budget (bytes).
        target: a :class:`~dpaudit.runtime.suite.SuiteTarget`.

    Returns:
        ``(result, seconds)`` as :func:`~dpaudit.runtime.suite.run_spec`.
    """
    *serial, budget = overrides
    try:
        return run_spec(tuple(serial), target)
    finally:
        release_memory(budget)


def _gather(futures: dict, progress) -> list:
    """The futures' results in submission-key order; the first failure stops the rest."""
    results, pending = {}, set(futures.values())
    index = {future: i for i, future in futures.items()}
    while pending:
        done, pending = wait(pending, return_when=FIRST_EXCEPTION)
        for future in done:
            error = future.exception()
            if error is not None:
                for other in pending:
                    other.cancel()
                if isinstance(error, BrokenProcessPool):
                    raise RuntimeError(
                        "a worker process of the suite died (killed, or out of memory); the "
                        "run is incomplete and no report was written."
                    ) from None
                raise error
            results[index[future]] = future.result()
            if progress is not None:
                progress.advance(1)
    return [results[i] for i in range(len(futures))]


def run_suite_local(
    paths: Sequence,
    seed: int | None = None,
    samples: int | None = None,
    *,
    runner: SuiteRunner,
    workers: int,
    progress=None,
    seconds: list | None = None,
) -> list:
    """Run the audits ``paths`` on ``workers`` local processes; results in the order of ``paths``.

    Audits are handed out longest first (by :attr:`SuiteTarget.cost`, stable otherwise), so
    the suite does not end waiting for one long audit. Workers use the driver's JAX
    compilation cache and environment.

    Args:
        paths: spec files or :class:`SuiteTarget` (already validated by the caller).
        seed: overrides every spec's seed, or ``None``.
        samples: overrides every spec's budget, or ``None``.
        runner: how a worker prepares and runs an audit (the CLI's :class:`SuiteRunner`).
        workers: worker processes (at most one per audit is started).
        progress: a progress bar advanced once per finished audit, or ``None``.
        seconds: a list that receives each audit's wall time on its worker, in the order
            of ``paths`` (``None``: not wanted).

    Returns:
        One result per audit, in the order of ``paths``; identical to the serial run's.

    Raises:
        ValueError: ``workers < 1``, or an audit that failed on bad input.
        RuntimeError: an audit crashed, or a worker process died.
    """
    budget = worker_budget(workers)
    targets = [t if isinstance(t, SuiteTarget) else SuiteTarget(str(t)) for t in paths]
    overrides = (seed, samples, driver_cache(), runner, budget)
    order = sorted(range(len(targets)), key=lambda i: -targets[i].cost)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(min(int(workers), len(targets)), mp_context=context) as pool:
        try:
            futures = {i: pool.submit(run_pooled, overrides, targets[i]) for i in order}
            done = _gather(futures, progress)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    if seconds is not None:
        seconds[:] = [s for _, s in done]
    return [r for r, _ in done]
