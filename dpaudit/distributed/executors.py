"""Executors: run the shards of a white-box or black-box Monte Carlo run, then merge them.

An executor splits each run into shards (:func:`shard_ranges`), runs them (in this
process, or as Ray tasks) and merges the partial states with the engines' exact
merges: the result is the serial run's, bit for bit.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import warnings
from collections.abc import Callable, Sequence

from dpaudit.blackbox.certification import TallyJob, merge_tally, tally_job_shard
from dpaudit.distributed.shards import WhiteboxJob, new_token, whitebox_shard
from dpaudit.whitebox.run import chunk_count, init_direction, merge_direction

__all__ = [
    "EXECUTORS",
    "LocalExecutor",
    "RayExecutor",
    "ShardExecutor",
    "connect_ray",
    "resolve_executor",
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

    def map(self, function: Callable, shared, tasks: Sequence, sizes: Sequence[int], progress):
        """``[function(shared, task) for task in tasks]``, somewhere.

        Args:
            function: a module-level function ``(shared, task) -> partial state``.
            shared: what every task needs (shipped once).
            tasks: the tasks.
            sizes: chunks per task (to advance ``progress``).
            progress: a :class:`dpaudit.progress.ProgressBar`, or ``None``.

        Returns:
            The results, in the order of ``tasks``.
        """
        raise NotImplementedError

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
        ranges = shard_ranges(n_chunks, self.shards)
        tasks = [(j, r) for j in range(len(jobs)) for r in ranges]
        parts = self.map(tally_job_shard, jobs, tasks, [len(r) for _, r in tasks], progress)
        merged: dict = {}
        for (j, _), part in zip(tasks, parts, strict=True):
            merged[j] = part if j not in merged else merge_tally(merged[j], part)
        return [merged[j] for j in range(len(jobs))]


class LocalExecutor(ShardExecutor):
    """Shards in this process, run last shard first (the merge must not depend on the order).

    Args:
        shards: shards per direction or dataset (default 4).
    """

    def __init__(self, shards: int = 4):
        super().__init__(shards)

    def map(self, function, shared, tasks, sizes, progress):
        """Run the tasks here, in reverse order (see :meth:`ShardExecutor.map`).

        Args:
            function: ``(shared, task) -> partial state``.
            shared: what every task needs.
            tasks: the tasks.
            sizes: chunks per task.
            progress: a progress bar, or ``None``.

        Returns:
            The results, in the order of ``tasks``.
        """
        results = [None] * len(tasks)
        for i in reversed(range(len(tasks))):
            results[i] = function(shared, tasks[i])
            if progress is not None:
                progress.advance(sizes[i])
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
        env = {"PYTHONPATH": path, **_blas_threads()}
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


def gather(ray, refs: list, sizes: Sequence[int], progress) -> list:
    """Wait for every task; the first failing task stops the run with its own error.

    Args:
        ray: the ``ray`` module.
        refs: the tasks' object references.
        sizes: chunks per task (to advance ``progress``).
        progress: a progress bar, or ``None``.

    Returns:
        The results, in the order of ``refs``.

    Raises:
        Exception: the failing shard's own exception (the other tasks are cancelled), or
            ``RuntimeError`` when a worker died more often than it is retried.
    """
    index = {ref: i for i, ref in enumerate(refs)}
    results, pending = [None] * len(refs), list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                results[index[ref]] = ray.get(ref)
                if progress is not None:
                    progress.advance(sizes[index[ref]])
    except ray.exceptions.RayTaskError as err:
        _cancel(ray, pending)
        cause = err.cause if isinstance(err.cause, BaseException) else None
        if cause is None:
            raise RuntimeError(f"a shard failed: {str(err).splitlines()[0]}") from None
        raise cause from None
    except ray.exceptions.RayError as err:
        _cancel(ray, pending)
        raise RuntimeError(
            f"a Ray worker was lost more than {_RETRIES} times ({type(err).__name__}); the run "
            "is incomplete and no result is reported."
        ) from None
    return results


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

    def map(self, function, shared, tasks, sizes, progress):
        """Run the tasks as Ray tasks (see :meth:`ShardExecutor.map`).

        Args:
            function: ``(shared, task) -> partial state`` (module level: pickled by name).
            shared: what every task needs (put in the object store once).
            tasks: the tasks.
            sizes: chunks per task.
            progress: a progress bar, or ``None``.

        Returns:
            The results, in the order of ``tasks``.

        Raises:
            TypeError: if ``shared`` cannot be pickled.
        """
        ref = ship(self._ray, shared, "the audit's sampler, mechanism or statistic")
        remote = _remote(self._ray)
        refs = [remote.remote(function, ref, task) for task in tasks]
        return gather(self._ray, refs, sizes, progress)


def resolve_executor(executor) -> ShardExecutor | None:
    """The executor named or given by ``executor=`` of the audit functions.

    Args:
        executor: ``None`` (serial), ``"ray"`` (a :class:`RayExecutor` on a local instance,
            or the instance already connected), or a :class:`ShardExecutor`.

    Returns:
        ``None`` or the executor.

    Raises:
        ValueError: an unknown name, or Ray missing.
    """
    if executor is None or isinstance(executor, ShardExecutor):
        return executor
    if executor == "ray":
        return RayExecutor()
    raise ValueError(
        f"executor must be None, 'ray' or a dpaudit.distributed executor, got {executor!r}."
    )
