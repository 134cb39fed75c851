"""A suite of audit specs on local worker processes (``dpaudit audit --workers N``).

Ray's local instance costs seconds to start and a raylet, a GCS server and an object
store beside the workers; for a suite on one machine a plain set of ``N`` processes is
enough. ``N`` auditing processes are the driver itself and ``N - 1`` workers: each worker
is a fresh Python started by ``spawn`` (never ``fork``: the driver runs JAX's threads),
imports dpaudit once, and then takes specs one at a time, while the driver audits a share
of its own. Whichever process audits a spec prepares it from its path, once (the driver
only reads every spec file first, :func:`dpaudit.io.spec.load_spec`, nothing built), and
runs it with the serial engine (:func:`dpaudit.runtime.suite.prepare_and_run`), so every
result is the serial run's; a worker sends back its result and what the driver's report
needs of the prepared audit (:attr:`~dpaudit.runtime.suite.SuiteRunner.report_view`).

Which worker runs which spec is family-affine (:mod:`dpaudit.runtime.schedule`): the specs
of one group (:attr:`~dpaudit.runtime.suite.SuiteTarget.group`, a family that shares
compiled programs) run on one worker, longest groups first, so no program is traced,
lowered and compiled by two workers side by side on a cold cache. Workers share the
driver's persistent compilation cache: entries are named by the program's hash, and an
entry read half-written is deleted and recompiled (:mod:`dpaudit.core.compilation_cache`),
never a wrong program.

Workers inherit the driver's environment (BLAS and OpenMP thread counts, ``XLA_FLAGS``),
so they sum in the order the driver does. Between audits a worker releases what the
audit left behind (:func:`dpaudit.core.memory.release_memory`) against its share of the
suite's memory budget, so ``N`` workers together stay within what one serial process
would hold. A worker that raises, or dies (killed, out of memory), stops the suite with
a sentence naming its spec (noticed by the driver between two of its own audits); the
other workers are stopped and nothing is returned. While workers run, the driver's own
library audits draw without the draw helper (:mod:`dpaudit.blackbox.drawhelper`): every
core already has an audit.
"""

from __future__ import annotations

import copyreg
import io
import multiprocessing
import os
import pickle
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from types import MappingProxyType

from dpaudit.blackbox.drawhelper import HELPER_SETTING
from dpaudit.core.compilation_cache import disable_compilation_cache, enable_compilation_cache
from dpaudit.core.errors import WorkerDied
from dpaudit.core.memory import SUITE_MEMORY_BYTES, release_memory
from dpaudit.runtime.schedule import Dispatcher, plan_groups
from dpaudit.runtime.suite import SuiteRunner, SuiteTarget, driver_cache, prepare_and_run

__all__ = ["WORKER_MEMORY_FLOOR", "LocalSuite", "run_suite_local", "suite_plan", "worker_budget"]

#: The smallest per-worker budget: a fresh worker with JAX and the engine loaded holds
#: about 0.5 GB, so a lower budget would only drop compiled programs after every audit.
WORKER_MEMORY_FLOOR = 600 << 20

#: Seconds between checks that every busy worker is still alive while waiting for results.
_POLL_SECONDS = 0.5


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


def suite_plan(targets: Sequence[SuiteTarget], workers: int) -> list:
    """Which worker starts with which specs: whole groups, longest first.

    Args:
        targets: the suite's :class:`SuiteTarget` (a target without a group is a group
            of its own).
        workers: worker processes.

    Returns:
        One list per worker of its groups (lists of indices into ``targets``), as
        :func:`dpaudit.runtime.schedule.plan_groups`.

    Raises:
        ValueError: ``workers < 1``.
    """
    keys = [t.group or f"path:{t.path}" for t in targets]
    return plan_groups(keys, [t.cost for t in targets], workers)


def run_pooled(overrides: tuple, target, keep: bool = False):
    """Prepare and run one audit of the suite in this process, then release what it left.

    Args:
        overrides: ``(seed, samples, runner, budget)``: the command line's seed and samples
            (``None`` each when absent), the :class:`SuiteRunner`, and this process's memory
            budget (bytes).
        target: a :class:`~dpaudit.runtime.suite.SuiteTarget`.
        keep: return the prepared audit itself (the driver's own share), not its
            :attr:`~dpaudit.runtime.suite.SuiteRunner.report_view` (a worker's).

    Returns:
        ``(result, seconds, prepared)``: as :func:`~dpaudit.runtime.suite.prepare_and_run`,
        ``prepared`` the audit's report view unless ``keep`` (``None`` without a view).
    """
    seed, samples, runner, budget = overrides
    try:
        item, result, seconds = prepare_and_run((seed, samples, runner), target)
    finally:
        release_memory(budget)
    if not keep:
        item = runner.report_view(item) if runner.report_view is not None else None
    return result, seconds, item


def _mapping_proxy(mapping: dict) -> MappingProxyType:
    """A read-only mapping again (unpickling a :class:`types.MappingProxyType`)."""
    return MappingProxyType(mapping)


def _dumps(value) -> bytes:
    """``value`` pickled, read-only mappings (a white-box certificate's sites) as their dict."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    reduce_proxy = lambda proxy: (_mapping_proxy, (dict(proxy),))  # noqa: E731
    pickler.dispatch_table = {**copyreg.dispatch_table, MappingProxyType: reduce_proxy}
    pickler.dump(value)
    return buffer.getvalue()


def _picklable_error(err: BaseException, target: SuiteTarget) -> bytes:
    """``err`` pickled, or a RuntimeError naming the spec when it cannot be."""
    try:
        return _dumps(err)
    except Exception:  # an exception that does not pickle: its sentence survives
        return _dumps(RuntimeError(f"{target.path}: the audit crashed ({err})."))


def _result_payload(value, target: SuiteTarget) -> tuple[bytes, bool]:
    """``(pickled value, True)``, or a pickled error naming the spec when it cannot be sent."""
    try:
        return _dumps(value), True
    except Exception as err:  # an unpicklable result must fail the run, not vanish
        message = f"{target.path}: its result cannot be sent back from the worker ({err})."
        return _dumps(RuntimeError(message)), False


def _next_task(tasks, parent: int):
    """The next task, or ``None`` once the driver is gone (this worker is then orphaned)."""
    while True:
        try:
            return tasks.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            if os.getppid() != parent:
                return None


def worker_loop(worker: int, overrides: tuple, tasks, results) -> None:
    """A worker process: audit each ``(index, target)`` from ``tasks`` until ``None``.

    Each outcome goes to ``results`` as ``(worker, index, ok, payload)``, the payload
    pickled here (a result that cannot be pickled is reported as that spec's error, not
    lost). A worker whose driver has died stops after its current audit.

    Args:
        worker: this worker's index.
        overrides: ``(seed, samples, cache_dir, runner, budget)``: as :func:`run_pooled`,
            with the driver's JAX compilation cache folder (``None``: none).
        tasks: the worker's own queue of ``(index, target)``, ``None`` to stop.
        results: the queue shared by every worker.
    """
    # a worker already uses a core of its own: no helper process drawing beside it
    os.environ.setdefault(HELPER_SETTING, "off")
    seed, samples, cache_dir, runner, budget = overrides
    if cache_dir:  # the driver's compilation cache (a worker is a fresh JAX process)
        enable_compilation_cache(cache_dir)
    else:  # the driver runs without a cache: so does its worker
        disable_compilation_cache()
    parent = os.getppid()
    while (task := _next_task(tasks, parent)) is not None:
        index, target = task
        try:
            value = run_pooled((seed, samples, runner, budget), target)
        except BaseException as err:  # reported to the driver, which stops the suite
            payload, ok = _picklable_error(err, target), False
        else:
            payload, ok = _result_payload(value, target)
        results.put((worker, index, ok, payload))
        if not ok:
            return


def _died(target: SuiteTarget, code) -> WorkerDied:
    return WorkerDied(
        f"{target.path}: the worker process auditing it died (exit code {code}: killed, or "
        "out of memory); the run is incomplete and no report was written."
    )


def _drive(suite: LocalSuite) -> None:
    """The suite's dispatching thread: feed each worker process its next spec when it reports
    one, until every worker process has run out (the driver is worker 0, fed by itself)."""
    busy: dict = {}

    def feed(worker: int) -> None:
        index = suite.next_for(worker)
        busy.pop(worker, None)
        if index is None:
            suite.tasks[worker - 1].put(None)
        else:
            busy[worker] = index
            suite.tasks[worker - 1].put((index, suite.targets[index]))

    for worker in range(1, len(suite.procs) + 1):
        feed(worker)
    while busy and not suite.stopping.is_set():
        try:
            worker, index, ok, payload = suite.results.get(timeout=_POLL_SECONDS)
        except queue.Empty:
            for w, i in busy.items():
                if not suite.procs[w - 1].is_alive():
                    raise _died(suite.targets[i], suite.procs[w - 1].exitcode) from None
            continue
        if not ok:
            raise pickle.loads(payload)
        suite.finished.put((index, *pickle.loads(payload)))
        feed(worker)


@contextmanager
def _helper_off(others: bool):
    """The draw helper off in this process while ``others`` (worker processes) audit too,
    unless ``DPAUDIT_DRAW_HELPER`` is set."""
    if not others or HELPER_SETTING in os.environ:
        yield
        return
    os.environ[HELPER_SETTING] = "off"
    try:
        yield
    finally:
        os.environ.pop(HELPER_SETTING, None)


class LocalSuite:
    """A suite audited by this process and local worker processes, family-affine.

    Starting it starts ``workers - 1`` worker processes and a dispatching thread;
    :meth:`wait` audits this process's own share (worker 0 of the plan) and collects
    the workers' results, calling ``on_result`` in the caller's thread as audits finish;
    :meth:`stop` ends the workers at once (the caller failed meanwhile). See
    :func:`run_suite_local`.

    Args:
        targets: the suite's :class:`SuiteTarget`.
        overrides: ``(seed, samples)`` of the command line (``None`` each when absent).
        runner: how an audit is prepared and run (the CLI's :class:`SuiteRunner`).
        workers: auditing processes, this one included (at most one per audit).

    Raises:
        ValueError: ``workers < 1``.
    """

    def __init__(self, targets: Sequence[SuiteTarget], overrides: tuple, runner, workers: int):
        budget = worker_budget(workers)
        self.targets = list(targets)
        count = max(1, min(int(workers), len(self.targets)))
        self.dispatcher, self.lock = Dispatcher(suite_plan(self.targets, count)), threading.Lock()
        self.own = (*overrides, runner, budget)
        shipped = (*overrides, driver_cache(), runner, budget)
        context = multiprocessing.get_context("spawn")
        self.results, self.tasks = context.Queue(), [context.Queue() for _ in range(count - 1)]
        self.procs = [
            context.Process(target=worker_loop, args=(w, shipped, self.tasks[w - 1], self.results))
            for w in range(1, count)
        ]
        for process in self.procs:  # not daemonic: an audit may start processes of its own
            process.start()
        self.finished: queue.Queue = queue.Queue()
        self.stopping, self.error = threading.Event(), None
        self.thread = threading.Thread(target=self._dispatch, name="dpaudit-suite", daemon=True)
        self.thread.start()

    def next_for(self, worker: int) -> int | None:
        """The next audit for ``worker`` (``0``: this process), as the plan's dispatcher says."""
        with self.lock:
            return self.dispatcher.next(worker)

    def _dispatch(self) -> None:
        try:
            _drive(self)
        except BaseException as err:  # handed to the caller by wait()
            self.error = err

    def _collect(self, done: dict, on_result, block: bool) -> None:
        """The workers' finished audits into ``done`` (waiting for one when ``block``); a
        worker's failure raised here."""
        while True:
            try:
                index, result, took, item = self.finished.get(timeout=_POLL_SECONDS if block else 0)
            except queue.Empty:
                if self.error is not None:
                    raise self.error from None
                if block and not self.thread.is_alive() and self.finished.empty():
                    raise WorkerDied(
                        "the suite's worker processes stopped early; the run is incomplete and "
                        "no report was written."
                    ) from None
                return
            done[index] = (result, took, item)
            if on_result is not None:
                on_result(index, result, took, item)
            if block:
                return

    def wait(self, on_result: Callable | None = None) -> list:
        """Audit this process's share, then every ``(result, seconds, prepared)`` in the order
        of the targets, once all have finished.

        Args:
            on_result: ``on_result(index, result, seconds, prepared)``, called in this thread
                as each audit finishes (in the order they finish), or ``None``; ``prepared``
                is the prepared audit for this process's share, a worker's report view
                (:attr:`SuiteRunner.report_view`) for the others.

        Returns:
            One ``(result, seconds, prepared)`` per target.

        Raises:
            ValueError: an audit failed on bad input.
            RuntimeError: an audit crashed, or a worker process died (the spec is named).
        """
        done: dict = {}
        try:
            with _helper_off(bool(self.procs)):
                while (index := self.next_for(0)) is not None:
                    self._collect(done, on_result, block=False)
                    value = run_pooled(self.own, self.targets[index], keep=True)
                    done[index] = value
                    if on_result is not None:
                        on_result(index, *value)
            while len(done) < len(self.targets):
                self._collect(done, on_result, block=True)
        except BaseException:
            self.stop()
            raise
        self.thread.join()
        _stop(self.procs, self.tasks, failed=False)
        return [done[i] for i in range(len(self.targets))]

    def stop(self) -> None:
        """End the workers now (what they were auditing is lost); safe to call twice."""
        self.stopping.set()
        self.thread.join(timeout=10 * _POLL_SECONDS)
        _stop(self.procs, self.tasks, failed=True)


def _stop(procs, tasks, failed: bool) -> None:
    """End the workers: after a failure at once, otherwise once they have read ``None``."""
    for process in procs:
        if failed and process.is_alive():
            process.terminate()
    for process in procs:
        process.join(timeout=None if not failed else 10)
        if process.is_alive():
            process.kill()
            process.join()
    for q in tasks:
        q.close()


def run_suite_local(
    paths: Sequence,
    seed: int | None = None,
    samples: int | None = None,
    *,
    runner: SuiteRunner,
    workers: int,
    progress=None,
    seconds: list | None = None,
    on_result: Callable | None = None,
) -> list:
    """Run the audits ``paths`` on ``workers`` local processes (this one and ``workers - 1``
    spawned); results in the order of ``paths``.

    Groups of specs (:attr:`SuiteTarget.group`) run whole on one worker, longest first
    (:func:`suite_plan`; :attr:`SuiteTarget.cost` from the previous run, else the group's
    size); a worker done with its own groups takes another's unstarted ones. Workers use
    the driver's JAX compilation cache and environment.

    Args:
        paths: spec files or :class:`SuiteTarget` (already validated by the caller).
        seed: overrides every spec's seed, or ``None``.
        samples: overrides every spec's budget, or ``None``.
        runner: how a worker prepares and runs an audit (the CLI's :class:`SuiteRunner`).
        workers: auditing processes, this one included (at most one per audit).
        progress: a progress bar advanced once per finished audit, or ``None``.
        seconds: a list that receives each audit's wall time on its worker, in the order
            of ``paths`` (``None``: not wanted).
        on_result: ``on_result(index, result, seconds)`` called in the driver as each audit
            finishes (in the order they finish; ``None``: nothing).

    Returns:
        One result per audit, in the order of ``paths``; identical to the serial run's.

    Raises:
        ValueError: ``workers < 1``, or an audit that failed on bad input.
        RuntimeError: an audit crashed, or a worker process died (the spec is named).
    """
    targets = [t if isinstance(t, SuiteTarget) else SuiteTarget(str(t)) for t in paths]
    if not targets:
        worker_budget(workers)  # a bad count is refused all the same
        return []

    def report(index: int, result, took: float, _prepared) -> None:
        if progress is not None:
            progress.advance(1)
        if on_result is not None:
            on_result(index, result, took)

    done = LocalSuite(targets, (seed, samples), runner, workers).wait(report)
    if seconds is not None:
        seconds[:] = [s for _, s, _ in done]
    return [r for r, _, _ in done]
