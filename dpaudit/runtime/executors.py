"""Executors: run the shards of a white-box or black-box Monte Carlo run, then merge them.

An executor splits each run into shards (:func:`shard_ranges`), runs them (in this
process, or as Ray tasks) and merges the partial states with the engines' exact
merges: the result is the serial run's, bit for bit. It also fans out the black-box
selection (one task per candidate pair, :meth:`ShardExecutor.run_selection`) and a
neighbour search (one task per start point, :meth:`ShardExecutor.start_search`), whose
tasks are independent: their results, joined in order, are the serial run's.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import warnings
from collections.abc import Callable, Sequence

import jax
import numpy as np

from dpaudit.blackbox.certification import TallyJob, merge_tally, tally_job_shard, tally_shard
from dpaudit.blackbox.drawhelper import HELPER_SETTING
from dpaudit.blackbox.samplers import chunks_of
from dpaudit.runtime.shards import (
    SearchJob,
    SelectionJob,
    WhiteboxJob,
    new_token,
    selection_task,
    start_task,
    whitebox_shard,
)
from dpaudit.whitebox.run import chunk_count, init_direction, merge_direction

__all__ = [
    "EXECUTORS",
    "LocalExecutor",
    "RayExecutor",
    "ShardExecutor",
    "connect_ray",
    "shard_ranges",
]

#: Executor names accepted by ``audit(executor=...)`` and ``blackbox_audit(executor=...)``.
EXECUTORS = ("ray",)
# A shard that fails because its worker process died is rerun (same keys, same result) up
# to this many times before the run stops.
_RETRIES = 3
# Object store of a local instance: shards return a few hundred numbers per chunk and the
# shared inputs are small, so 512 MiB is ample (Ray's default takes 30 % of the RAM).
_LOCAL_OBJECT_STORE = 512 * 1024 * 1024
# Tries to start a local instance: Ray gives its node a fixed 30 s to register, which a
# heavily loaded machine can miss once.
_START_ATTEMPTS = 2
# Seconds to wait for the head node of a Ray cluster before saying it cannot be reached.
_CONNECT_TIMEOUT = 5.0


def shard_ranges(n_chunks: int, shards: int) -> list[range]:
    """Split chunks ``0 .. n_chunks - 1`` into at most ``shards`` contiguous, near-equal ranges.

    Args:
        n_chunks: the number of chunks of the run.
        shards: the number of shards wanted.

    Returns:
        The non-empty ranges, in chunk order.

    Example:
        >>> shard_ranges(5, 2)
        [range(0, 2), range(2, 5)]
    """
    shards = max(1, min(int(shards), int(n_chunks)))
    bounds = [n_chunks * i // shards for i in range(shards + 1)]
    return [range(a, b) for a, b in itertools.pairwise(bounds) if b > a]


class ShardExecutor:
    """Runs shards of chunks and merges them; subclasses say where shards run (:meth:`map`).

    Args:
        shards: shards per direction (white-box) or per dataset (black-box).
    """

    def __init__(self, shards: int):
        self.shards = int(shards)

    def map(
        self,
        function: Callable,
        shared,
        tasks: Sequence,
        sizes: Sequence[int],
        progress,
        ordered: bool = False,
    ):
        """``[function(shared, task) for task in tasks]``, somewhere.

        Args:
            function: a module-level function ``(shared, task) -> partial state``.
            shared: what every task needs (shipped once), or what :meth:`put` returned.
            tasks: the tasks.
            sizes: chunks per task (to advance ``progress``).
            progress: a :class:`dpaudit.core.progress.ProgressBar`, or ``None``.
            ordered: when tasks fail, raise the error of the first failing task in task
                order (the one a serial run meets first); else the first failure to arrive.

        Returns:
            The results, in the order of ``tasks``.
        """
        raise NotImplementedError

    def put(self, shared, what: str):
        """``shared``, ready to be given to several :meth:`map` calls (sent once).

        Args:
            shared: what the tasks share.
            what: what it is, for an error message.

        Returns:
            A handle :meth:`map` accepts as ``shared`` (here: ``shared`` itself).
        """
        return shared

    def run_selection(self, fit: Callable, shared, sources: list, select: int, progress=None):
        """The black-box selection of every candidate pair, one task per pair, in pair order.

        Each pair's selection releases and fitted statistics depend only on the pair's own
        keys, so the tasks run anywhere in any order and the list is the serial run's, bit
        for bit. Samplers with non-numeric outputs are fitted here, pair after pair: their
        category indices are given in order of first sight across the pairs.

        Args:
            fit: a module-level ``fit(shared, i)`` -> the fitted statistics of pair ``i``.
            shared: what ``fit`` reads (shipped once).
            sources: the ``(source of D, source of D')`` of each pair (those in ``shared``).
            select: selection releases per dataset (chunks advance ``progress``).
            progress: a progress bar, or ``None``.

        Returns:
            ``[fit(shared, i) for i in range(len(sources))]``.
        """
        sizes = [2 * chunks_of(select, d.chunk) for d, _ in sources]
        if len(sources) > 1 and not _categorical(sources):
            layouts = {id(s.outputs): s.outputs for pair in sources for s in pair}.values()
            before = [dict(layout.categories.index) for layout in layouts]
            job = SelectionJob(fit, shared, sources)
            tasks = list(range(len(sources)))
            parts = self.map(selection_task, job, tasks, sizes, progress, ordered=True)
            if not any(state.categories for _, state in parts):
                for pair, (_, state) in zip(sources, parts, strict=True):
                    _learn(pair, state)
                return [fitted for fitted, _ in parts]
            # outputs turned out non-numeric (no probe saw them): forget the categories the
            # tasks indexed (in process, out of order) and fit again here, in pair order
            for layout, index in zip(layouts, before, strict=True):
                layout.categories.index = index
        results = []
        for i, size in enumerate(sizes):
            results.append(fit(shared, i))
            if progress is not None:
                progress.advance(size)
        return results

    def start_search(self, build: Callable, run: Callable, problem) -> Callable:
        """A neighbour search's runner: one task per start point, the problem sent once.

        Args:
            build: ``build(problem)`` -> the search's compiled program (once per worker).
            run: ``run(problem, starts, program)`` -> the results from a batch of starts
                (a pytree of arrays with a leading axis of starts).
            problem: the search problem.

        Returns:
            ``runner(starts)`` -> ``run(problem, starts, build(problem))`` computed start by
            start and joined along the leading axis.

        Raises:
            TypeError: if the problem cannot be sent to the workers.
        """
        job = self.put(SearchJob(build, run, problem, new_token()), "the search's summary or norm")

        def runner(starts):
            count = int(np.shape(jax.tree_util.tree_leaves(starts)[0])[0])
            tasks = [
                jax.tree_util.tree_map(lambda a, r=r: a[r : r + 1], starts) for r in range(count)
            ]
            parts = self.map(start_task, job, tasks, [1] * count, None, ordered=True)
            return jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves), *parts)

        return runner

    def run_directions(self, recipe, key, settings, progress=None) -> list:
        """Both directions of a white-box run, as merged partial states.

        Args:
            recipe: the :class:`~dpaudit.whitebox.run.KernelRecipe`.
            key: the audit's root key.
            settings: the :class:`~dpaudit.whitebox.run.RunSettings`.
            progress: a progress bar advanced per chunk, or ``None``.

        Returns:
            Two :class:`~dpaudit.whitebox.run.DirectionState`.
        """
        ranges = shard_ranges(chunk_count(settings), self.shards)
        tasks = [(d, r) for d in (0, 1) for r in ranges]
        job = WhiteboxJob(recipe, key, settings, new_token())
        parts = self.map(whitebox_shard, job, tasks, [len(r) for _, r in tasks], progress)
        states = [init_direction(settings), init_direction(settings)]
        for (d, _), part in zip(tasks, parts, strict=True):
            states[d] = merge_direction(states[d], part)
        return states

    def run_tallies(self, jobs: tuple[TallyJob, ...], n_chunks: int, progress=None) -> list:
        """The certification tallies of the jobs (one per dataset), as merged partial states.

        Args:
            jobs: the :class:`~dpaudit.blackbox.certification.TallyJob` of each dataset.
            n_chunks: chunks per dataset.
            progress: a progress bar advanced per chunk, or ``None``.

        Returns:
            One :class:`~dpaudit.blackbox.certification.TallyState` per job.
        """
        if _categorical([(job.source,) for job in jobs]):
            # category indices are given in order of first sight: count here, in chunk order
            everything = range(n_chunks)
            return [tally_shard(job, everything, progress) for job in jobs]
        ranges = shard_ranges(n_chunks, self.shards)
        tasks = [(j, r) for j in range(len(jobs)) for r in ranges]
        parts = self.map(tally_job_shard, jobs, tasks, [len(r) for _, r in tasks], progress)
        merged: dict = {}
        for (j, _), part in zip(tasks, parts, strict=True):
            merged[j] = part if j not in merged else merge_tally(merged[j], part)
        return [merged[j] for j in range(len(jobs))]


def _categorical(sources) -> bool:
    """Whether the sampler's outputs were seen to be non-numeric (categories were indexed)."""
    return any(source.outputs.categories.index for pair in sources for source in pair)


def _learn(pair, state) -> None:
    """Tell the driver's sources of a pair what drawing on a worker taught their copies."""
    for source, shape in zip(pair, state.shapes, strict=True):
        if source.shape is None:
            source.shape = shape
    if pair[0].outputs.structure is None:
        pair[0].outputs.structure = state.structure


class LocalExecutor(ShardExecutor):
    """Shards in this process, run last shard first (the merge must not depend on the order).

    Args:
        shards: shards per direction or dataset (default 4).
    """

    def __init__(self, shards: int = 4):
        super().__init__(shards)

    def map(self, function, shared, tasks, sizes, progress, ordered=False):
        """Run the tasks here, in reverse order (see :meth:`ShardExecutor.map`).

        Args:
            function: ``(shared, task) -> partial state``.
            shared: what every task needs.
            tasks: the tasks.
            sizes: chunks per task.
            progress: a progress bar, or ``None``.
            ordered: on failures, raise the first failing task's error in task order.

        Returns:
            The results, in the order of ``tasks``.
        """
        results, failed = [None] * len(tasks), None
        for i in reversed(range(len(tasks))):
            try:
                results[i] = function(shared, tasks[i])
            except Exception as err:
                if not ordered:
                    raise
                failed = err  # a task before it may fail too: the first in order is raised
                continue
            if progress is not None:
                progress.advance(sizes[i])
        if failed is not None:
            raise failed
        return results


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ValueError(
            "the Ray executor needs the optional dependency ray: pip install 'dpaudit[distributed]'."
        ) from None
    return ray


def _check_reachable(address: str) -> None:
    """Raise ``ValueError`` unless ``host:port`` of a Ray head accepts a connection."""
    target = address.split("://", 1)[-1]
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(
            f"the Ray address {address!r} is not host:port (e.g. 127.0.0.1:6379, or 'auto')."
        )
    try:
        with socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT):
            pass
    except OSError as err:
        raise ValueError(
            f"cannot reach a Ray cluster at {address!r} ({err.strerror or err}); start one with "
            "'ray start --head' or check the address."
        ) from None


def _blas_threads() -> dict:
    """The driver's BLAS / OpenMP thread counts, for local workers.

    Ray sets ``OMP_NUM_THREADS=1`` in workers whose environment does not state it, and a
    multi-threaded BLAS sums in another order than a single-threaded one: numpy and scipy
    linear algebra (Cameron-Martin norms, Gaussian accounting) then differ in the last
    bits from the serial run (measured: epsilon 0.6078528859728819 serial vs ...8315 on a
    worker for ``hrw-gaussian-kde-anisotropic``). Local workers get the driver's counts (its
    own variables, else one thread per core, OpenBLAS's default), so a suite on local
    workers gives the serial run's bits.
    """
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    stated = {name: os.environ[name] for name in names if name in os.environ}
    return stated or {"OMP_NUM_THREADS": str(os.cpu_count() or 1)}


def connect_ray(address: str | None = None, workers: int | None = None):
    """Connect to Ray: a cluster at ``address``, or a local instance with ``workers`` CPUs.

    An instance already started in this process is reused.

    Args:
        address: ``host:port`` of a running cluster's head, ``"auto"``, or ``None`` to
            start a local instance.
        workers: CPUs of the local instance (default: all cores); ignored with ``address``.

    Returns:
        The ``ray`` module.

    Raises:
        ValueError: Ray not installed, ``workers < 1``, or an unreachable address.
        RuntimeError: a local instance that did not start (twice).
    """
    ray = _import_ray()
    if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
        raise ValueError(f"workers must be >= 1 (one Ray worker per CPU), got {workers!r}.")
    if address is not None and address != "auto":
        _check_reachable(address)
    if ray.is_initialized():
        return ray
    options = {"include_dashboard": False, "logging_level": "ERROR", "log_to_driver": False}
    if address is None:
        # Local workers see the driver's import path: a sampler defined in the caller's own
        # module (a script folder, a test folder) unpickles on them as it does here.
        path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        # each worker takes a core: no draw helper process beside it
        env = {"PYTHONPATH": path, HELPER_SETTING: "off", **_blas_threads()}
        options.update(num_cpus=workers, runtime_env={"env_vars": env})
        options["object_store_memory"] = _LOCAL_OBJECT_STORE
    else:
        options["address"] = address
    for _ in range(_START_ATTEMPTS):
        try:
            with warnings.catch_warnings():
                # Ray starts its processes by fork + exec: JAX's warning about fork in a
                # threaded process does not apply (nothing of JAX runs in the child before exec).
                warnings.filterwarnings("ignore", message="os.fork", category=RuntimeWarning)
                ray.init(**options)
            return ray
        except Exception as err:  # Ray raises a bare Exception when its node does not start
            if address is not None or "timed out during startup" not in str(err):
                raise
            ray.shutdown()
    raise RuntimeError(
        f"a local Ray instance did not start ({_START_ATTEMPTS} tries; Ray waits 30 s for its "
        "node, too little on an overloaded machine)."
    )


def _call(function, shared, task):
    return function(shared, task)


_REMOTE = {}


def _remote(ray):
    if "call" not in _REMOTE:
        _REMOTE["call"] = ray.remote(num_cpus=1, max_retries=_RETRIES)(_call)
    return _REMOTE["call"]


def ship(ray, value, what: str):
    """Put ``value`` in Ray's object store once, with one sentence if it cannot be pickled.

    Args:
        ray: the ``ray`` module (connected).
        value: what the tasks share.
        what: what it is, for the message.

    Returns:
        The object reference.

    Raises:
        TypeError: if ``value`` cannot be pickled.
    """
    try:
        return ray.put(value)
    except TypeError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise TypeError(
            f"{what} cannot be sent to Ray workers because it cannot be pickled ({first}); "
            "keep open files, locks and connections out of samplers and mechanisms, or run "
            "without executor='ray'."
        ) from None


def gather(ray, refs: list, sizes: Sequence[int], progress, ordered: bool = False) -> list:
    """Wait for every task; a failing task stops the run with its own error.

    Args:
        ray: the ``ray`` module.
        refs: the tasks' object references.
        sizes: chunks per task (to advance ``progress``).
        progress: a progress bar, or ``None``.
        ordered: raise the error of the first failing task in the order of ``refs`` (the
            tasks before it are waited for, those after it cancelled), as a serial run
            would; else the first failure to arrive (the others are cancelled).

    Returns:
        The results, in the order of ``refs``.

    Raises:
        Exception: the failing task's own exception, or ``RuntimeError`` when a worker died
            more often than it is retried.
    """
    index = {ref: i for i, ref in enumerate(refs)}
    results, pending, failed = [None] * len(refs), list(refs), None
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        (ref,) = done
        try:
            results[index[ref]] = ray.get(ref)
        except ray.exceptions.RayError as err:
            if failed is None or index[ref] < failed[0]:
                failed = (index[ref], _failure(ray, err))
            after = [r for r in pending if not ordered or index[r] > failed[0]]
            _cancel(ray, after)
            pending = [r for r in pending if r not in after]
            continue
        if progress is not None:
            progress.advance(sizes[index[ref]])
    if failed is not None:
        raise failed[1]
    return results


def _failure(ray, err) -> Exception:
    """The exception a failed task stops the run with."""
    if isinstance(err, ray.exceptions.RayTaskError):
        cause = err.cause if isinstance(err.cause, BaseException) else None
        if cause is None:
            return RuntimeError(f"a shard failed: {str(err).splitlines()[0]}")
        return cause
    return RuntimeError(
        f"a Ray worker was lost more than {_RETRIES} times ({type(err).__name__}); the run "
        "is incomplete and no result is reported."
    )


def _cancel(ray, refs) -> None:
    for ref in refs:
        ray.cancel(ref, force=True)


class RayExecutor(ShardExecutor):
    """Shards as Ray tasks (one CPU each): a local instance started on demand, or a cluster.

    The shared inputs (sampler, mechanism, statistic, settings) go into the object store
    once; a worker that dies mid-shard is replaced and its shard rerun with the same keys.

    Args:
        address: ``host:port`` of a cluster head, ``"auto"``, or ``None`` (local instance).
        workers: CPUs of a local instance (default: all cores).
        shards: shards per direction or dataset (default: the cluster's CPUs).

    Raises:
        ValueError: Ray not installed, bad ``workers``, or an unreachable address.
    """

    def __init__(self, address: str | None = None, workers: int | None = None, shards=None):
        self._ray = connect_ray(address, workers)
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        super().__init__(shards or max(1, cpus))

    def map(self, function, shared, tasks, sizes, progress, ordered=False):
        """Run the tasks as Ray tasks (see :meth:`ShardExecutor.map`).

        Args:
            function: ``(shared, task) -> partial state`` (module level: pickled by name).
            shared: what every task needs (put in the object store once), or the handle
                :meth:`put` returned.
            tasks: the tasks.
            sizes: chunks per task.
            progress: a progress bar, or ``None``.
            ordered: on failures, raise the first failing task's error in task order.

        Returns:
            The results, in the order of ``tasks``.

        Raises:
            TypeError: if ``shared`` cannot be pickled.
        """
        ref = self.put(shared, "the audit's sampler, mechanism or statistic")
        remote = _remote(self._ray)
        refs = [remote.remote(function, ref, task) for task in tasks]
        return gather(self._ray, refs, sizes, progress, ordered)

    def put(self, shared, what: str):
        """``shared`` in Ray's object store (once), or the reference it already is.

        Args:
            shared: what the tasks share.
            what: what it is, for the message.

        Returns:
            The object reference.

        Raises:
            TypeError: if ``shared`` cannot be pickled.
        """
        if isinstance(shared, self._ray.ObjectRef):
            return shared
        return ship(self._ray, shared, what)
