"""Audits that outgrow one process: shards of chunk keys on Ray workers, suites in parallel.

Every Monte Carlo run of dpaudit is a set of chunks, each drawn from its own key. A
*shard* is a range of chunk keys; its partial state (white-box:
:class:`~dpaudit.whitebox.run.DirectionState`, black-box certification:
:class:`~dpaudit.blackbox.certification.TallyState`) merges with the others into the
serial run's result, bit for bit, whatever the number of shards and the order they
finish in. An *executor* runs the shards:

* ``executor=None`` (default): this process, chunk after chunk;
* ``executor="ray"`` or :class:`RayExecutor`: Ray tasks on a local Ray instance started on
  demand, or on a cluster (``RayExecutor(address=...)``); Ray is an optional dependency
  (``pip install "dpaudit[distributed]"``);
* :class:`LocalExecutor`: shards in this process, in reverse order (for tests: it shows that
  the merge does not depend on the split).

The same executors fan out the black-box selection (one task per candidate pair:
its selection releases and fitted statistics) and the worst-case neighbour search of
:func:`dpaudit.testing.worst_neighbours` (one task per start point of the gradient
ascent); both are joined in order into the serial run's result.

:func:`run_suite_local` runs whole audit specs on local worker processes (``dpaudit audit
--workers N``), :func:`run_suite_parallel` on Ray (``--ray ADDRESS``). See ``docs/distributed.md``.
"""

from __future__ import annotations

from dpaudit.runtime.executors import (
    LocalExecutor,
    RayExecutor,
    ShardExecutor,
    connect_ray,
    shard_ranges,
)
from dpaudit.runtime.pool import LocalSuite, run_suite_local
from dpaudit.runtime.suite import SuiteRunner, SuiteTarget, run_suite_parallel, start_suite

__all__ = [
    "LocalExecutor",
    "LocalSuite",
    "RayExecutor",
    "ShardExecutor",
    "SuiteRunner",
    "SuiteTarget",
    "connect_ray",
    "run_suite_local",
    "run_suite_parallel",
    "shard_ranges",
    "start_suite",
]
