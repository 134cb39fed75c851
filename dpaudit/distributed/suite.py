"""A suite of audit specs in parallel: one Ray task per spec (``dpaudit run --workers N``).

Each task prepares its spec again on the worker (from the spec's path, with the same
overrides) and runs it with the serial engine, so every result is the one the serial
suite gives; only the order in which audits finish changes. The driver has already
validated every spec, so a spec that fails on a worker is an error of that audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from dpaudit.distributed.executors import connect_ray, gather, ship

__all__ = ["run_spec", "run_suite_parallel", "start_suite"]


def run_spec(overrides: tuple, path: str):
    """Prepare and run one spec (on a worker).

    Args:
        overrides: ``(seed, samples)`` of the command line (``None`` each when absent).
        path: the spec's path.

    Returns:
        The audit's result.

    Raises:
        SpecError: the audit failed on bad input (one sentence naming the spec).
        RuntimeError: the audit crashed.
    """
    from dpaudit.cli import prepare, run_audit
    from dpaudit.spec import SpecError

    seed, samples = overrides
    try:
        (item,) = prepare([Path(path)], seed, samples)
        return run_audit(item)
    except SpecError:
        raise
    except (TypeError, ValueError) as err:
        raise SpecError(f"{path}: audit failed: {err}") from None
    except Exception as err:  # a crash is no verdict: the suite stops, nothing is written
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise RuntimeError(f"{path}: the audit crashed ({first}); no report was written.") from None


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


def run_suite_parallel(
    paths: Sequence,
    seed: int | None = None,
    samples: int | None = None,
    *,
    workers: int | None = None,
    address: str | None = None,
    progress=None,
) -> list:
    """Run the specs ``paths`` as parallel Ray tasks and return their results in order.

    Args:
        paths: the spec files (already validated by the caller).
        seed: overrides every spec's seed, or ``None``.
        samples: overrides every spec's budget, or ``None``.
        workers: CPUs of a local Ray instance started on demand (``None``: all cores).
        address: a running Ray cluster (``host:port`` or ``"auto"``) instead.
        progress: a progress bar advanced once per finished audit, or ``None``.

    Returns:
        One result per spec, in the order of ``paths``; identical to the serial run's.

    Raises:
        ValueError: ``workers < 1``, Ray missing, an unreachable address, or an audit that
            failed on bad input (nothing partial is returned).
        RuntimeError: an audit crashed.
    """
    start_suite(workers, address)
    ray = connect_ray(address, workers)
    ref = ship(ray, (seed, samples), "the command-line overrides")
    remote = ray.remote(num_cpus=1, max_retries=3)(run_spec)
    refs = [remote.remote(ref, str(path)) for path in paths]
    return gather(ray, refs, [1] * len(refs), progress)
