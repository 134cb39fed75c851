"""A suite of audit specs in parallel: one Ray task per spec (``dpaudit run --workers N``).

Each task prepares its spec again on the worker (from the spec's path, with the same
overrides) and runs it with the serial engine, so every result is the one the serial
suite gives; only the order in which audits finish changes. The driver has already
validated every spec, so a spec that fails on a worker is an error of that audit.
"""

from __future__ import annotations

import time
from argparse import Namespace
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from dpaudit.core.compilation_cache import disable_compilation_cache, enable_compilation_cache
from dpaudit.core.errors import UserCodeError
from dpaudit.io.spec import SpecError
from dpaudit.runtime.executors import connect_ray, gather, ship

__all__ = [
    "SuiteRunner",
    "SuiteTarget",
    "driver_cache",
    "prepare_and_run",
    "run_spec",
    "run_suite_parallel",
    "start_suite",
]


@dataclass(frozen=True)
class SuiteTarget:
    """One audit of a parallel suite, as a worker rebuilds it.

    Args:
        path: a spec file, or ``FILE.py:CALLABLE``.
        options: for a ``FILE.py:CALLABLE`` target, the command-line options that define its
            audit (claim, data, black-box options: ``vars()`` of the parsed command line);
            ``None`` for a spec file.
        cost: the expected seconds of the audit (from the previous run), used only to
            start the longest audits first; ``0.0`` when unknown.
        group: the audit's family (audits of one group share compiled programs and run on
            one worker of a local suite, :mod:`dpaudit.runtime.schedule`); ``""``: a group
            of its own. Ray's suite ignores it.
    """

    path: str
    options: dict | None = None
    cost: float = 0.0
    group: str = ""


class SuiteRunner(NamedTuple):
    """How a worker prepares and runs one audit: the CLI's functions, given by the CLI.

    The suite runner never imports the CLI; the CLI hands it these (module-level functions,
    shipped to the workers by reference).

    Args:
        prepare: ``prepare(paths, seed, samples) -> [prepared]`` for spec files.
        prepare_callable: ``prepare_callable(ref, options) -> prepared`` for a
            ``FILE.py:CALLABLE`` target and its command-line options (a ``Namespace``).
        run_audit: ``run_audit(prepared) -> result``.
        report_view: ``report_view(prepared) -> view``: what a local worker sends back of
            an audit it prepared, for the driver's report (picklable: a prepared audit
            holds models that do not pickle); ``None``: nothing is sent back.
    """

    prepare: Callable
    prepare_callable: Callable
    run_audit: Callable
    report_view: Callable | None = None


def _configure_worker(cache_dir: str | None) -> None:
    """The driver's compilation cache on this worker (a worker is a fresh JAX process)."""
    if cache_dir:
        enable_compilation_cache(cache_dir)
    else:  # the driver runs without a cache: so do its workers
        disable_compilation_cache()


def _prepare(target: SuiteTarget, seed, samples, runner: SuiteRunner):
    if target.options is None:
        (item,) = runner.prepare([Path(target.path)], seed, samples)
        return item
    return runner.prepare_callable(target.path, Namespace(**target.options))


def run_spec(overrides: tuple, target):
    """Prepare and run one audit of the suite (on a worker).

    Args:
        overrides: ``(seed, samples, cache_dir, runner)``: the command line's seed and
            samples (``None`` each when absent), the driver's JAX compilation cache, and
            the :class:`SuiteRunner`.
        target: a :class:`SuiteTarget`, or a spec's path.

    Returns:
        ``(result, seconds)``: the audit's result and its wall time on the worker.

    Raises:
        SpecError: the audit failed on bad input (one sentence naming the spec).
        RuntimeError: the audit crashed.
    """
    seed, samples, cache_dir, runner = overrides
    _configure_worker(cache_dir)
    _, result, seconds = prepare_and_run((seed, samples, runner), target)
    return result, seconds


def prepare_and_run(overrides: tuple, target):
    """Prepare one audit of the suite from its path and run it, in this process.

    Args:
        overrides: ``(seed, samples, runner)``: the command line's seed and samples
            (``None`` each when absent) and the :class:`SuiteRunner`.
        target: a :class:`SuiteTarget`, or a spec's path.

    Returns:
        ``(prepared, result, seconds)``: what ``runner.prepare`` built, the audit's result
        and its wall time (preparation included).

    Raises:
        SpecError: the audit failed on bad input (one sentence naming the spec).
        RuntimeError: the audit crashed.
    """
    seed, samples, runner = overrides
    target = target if isinstance(target, SuiteTarget) else SuiteTarget(str(target))
    path, started = target.path, time.perf_counter()
    try:
        item = _prepare(target, seed, samples, runner)
        result = runner.run_audit(item)
    except SpecError:
        raise
    except UserCodeError as err:  # a sampler or model raised mid-audit: a crash (exit 3)
        raise RuntimeError(
            f"{path}: the audit crashed in the mechanism ({err}); no report was written."
        ) from None
    except (TypeError, ValueError) as err:
        raise SpecError(f"{path}: audit failed: {err}") from None
    except Exception as err:  # a crash is no verdict: the suite stops, nothing is written
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise RuntimeError(f"{path}: the audit crashed ({first}); no report was written.") from None
    return item, result, time.perf_counter() - started


def start_suite(workers: int | None = None, address: str | None = None) -> None:
    """Check the options of a parallel suite and connect to Ray, before any audit runs.

    Args:
        workers: CPUs of a local Ray instance started on demand (``None``: all cores).
        address: a running Ray cluster (``host:port`` or ``"auto"``) instead.

    Raises:
        ValueError: ``workers < 1``, Ray missing, or an unreachable address.
    """
    if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
        raise ValueError(f"--workers must be >= 1 (Ray worker processes), got {workers!r}.")
    connect_ray(address, workers)


def driver_cache() -> str | None:
    """The driver's JAX compilation cache folder (workers use the same), or ``None``.

    Returns:
        The folder, or ``None`` when the driver runs without a persistent cache.
    """
    import jax

    return jax.config.jax_compilation_cache_dir or None


def run_suite_parallel(
    paths: Sequence,
    seed: int | None = None,
    samples: int | None = None,
    *,
    runner: SuiteRunner,
    workers: int | None = None,
    address: str | None = None,
    progress=None,
    seconds: list | None = None,
) -> list:
    """Run the audits ``paths`` as parallel Ray tasks and return their results in order.

    Tasks are submitted longest first (by :attr:`SuiteTarget.cost`, stable otherwise), so
    the suite does not end waiting for one long audit; the results come back in the order
    of ``paths`` all the same. Workers use the driver's JAX compilation cache.

    Args:
        paths: spec files or :class:`SuiteTarget` (already validated by the caller).
        seed: overrides every spec's seed, or ``None``.
        samples: overrides every spec's budget, or ``None``.
        runner: how a worker prepares and runs an audit (the CLI's :class:`SuiteRunner`).
        workers: CPUs of a local Ray instance started on demand (``None``: all cores).
        address: a running Ray cluster (``host:port`` or ``"auto"``) instead.
        progress: a progress bar advanced once per finished audit, or ``None``.
        seconds: a list that receives each audit's wall time on its worker, in the order
            of ``paths`` (``None``: not wanted).

    Returns:
        One result per audit, in the order of ``paths``; identical to the serial run's.

    Raises:
        ValueError: ``workers < 1``, Ray missing, an unreachable address, or an audit that
            failed on bad input (nothing partial is returned).
        RuntimeError: an audit crashed.
    """
    start_suite(workers, address)
    ray = connect_ray(address, workers)
    targets = [t if isinstance(t, SuiteTarget) else SuiteTarget(str(t)) for t in paths]
    ref = ship(ray, (seed, samples, driver_cache(), runner), "the command-line overrides")
    remote = ray.remote(num_cpus=1, max_retries=3)(run_spec)
    order = sorted(range(len(targets)), key=lambda i: -targets[i].cost)
    refs = {i: remote.remote(ref, targets[i]) for i in order}
    done = gather(ray, [refs[i] for i in range(len(targets))], [1] * len(targets), progress)
    if seconds is not None:
        seconds[:] = [s for _, s in done]
    return [r for r, _ in done]
