"""Which worker of a local suite runs which audit: family-affine, longest groups first.

Audits of one family (the same mechanism builder, sampler or training target) share
compiled programs: the first audit of a family in a process traces, lowers and compiles
them, the next ones reuse them. Handed out one spec at a time to whichever worker is free,
two workers compile the same programs side by side on a cold cache (neither has written
them yet), which made two workers slower than one on two cores. Here every family is a
*group* that one worker runs from start to end:

* :func:`plan_groups` assigns the groups to workers before anything runs, longest
  (expected seconds, else number of audits) first, each to the worker with the least work
  so far (the longest-processing-time rule); ties go to the lower index, so the plan
  depends only on the groups and costs;
* :class:`Dispatcher` hands out the plan, one audit at a time; a worker that has finished
  its own groups takes the last group that another worker has not started (whole groups
  only: a family is never split), so a wrong cost estimate (a cold run knows none) costs
  no idle core.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence

__all__ = ["Dispatcher", "group_costs", "plan_groups"]


def group_costs(groups: Sequence[Hashable], costs: Sequence[float]) -> dict:
    """Every group's audits (in the given order) and their summed expected cost.

    An audit of unknown cost (``0``) counts as the mean of the known ones, or as 1 when
    none is known, so that a group's cost grows with its size.

    Args:
        groups: each audit's group key (hashable; equal keys share compiled programs).
        costs: each audit's expected seconds, ``0`` when unknown.

    Returns:
        ``{key: (cost, [indices])}`` in order of each group's first audit.

    Raises:
        ValueError: when ``groups`` and ``costs`` differ in length.
    """
    if len(groups) != len(costs):
        raise ValueError(
            f"groups and costs must have one entry per audit, got {len(groups)} and {len(costs)}."
        )
    known = [float(c) for c in costs if float(c) > 0]
    default = sum(known) / len(known) if known else 1.0
    table: dict = {}
    for index, (key, cost) in enumerate(zip(groups, costs, strict=True)):
        total, members = table.get(key, (0.0, []))
        members.append(index)
        table[key] = (total + (float(cost) if float(cost) > 0 else default), members)
    return table


def plan_groups(groups: Sequence[Hashable], costs: Sequence[float], workers: int) -> list:
    """Assign whole groups of audits to ``workers`` workers, longest group first.

    Args:
        groups: each audit's group key.
        costs: each audit's expected seconds (``0``: unknown).
        workers: worker processes (``>= 1``).

    Returns:
        One list per worker of its groups, each a list of audit indices in the order given;
        a worker's groups longest first. Deterministic: the same arguments give the same
        plan.

    Raises:
        ValueError: ``workers < 1``, or ``groups`` and ``costs`` of different lengths.
    """
    if isinstance(workers, bool) or int(workers) < 1:
        raise ValueError(f"workers must be >= 1 (worker processes), got {workers!r}.")
    table = group_costs(groups, costs)
    # longest first; equal costs in the order of their first audit (stable sort)
    ordered = sorted(table.values(), key=lambda entry: -entry[0])
    plan: list = [[] for _ in range(int(workers))]
    load = [0.0] * int(workers)
    for cost, members in ordered:
        worker = min(range(int(workers)), key=lambda w: (load[w], w))
        plan[worker].append(list(members))
        load[worker] += cost
    return plan


class Dispatcher:
    """Hands out a plan of :func:`plan_groups` one audit at a time, stealing whole groups.

    Args:
        plan: one list of groups (lists of audit indices) per worker.
    """

    def __init__(self, plan: Sequence[Sequence[Sequence[int]]]):
        self._queues = [deque(deque(group) for group in groups if group) for groups in plan]
        self._current: list[deque] = [deque() for _ in plan]

    def next(self, worker: int) -> int | None:
        """The next audit for ``worker``: its current group's, its next group's, or a stolen one.

        Args:
            worker: the worker asking (an index into the plan).

        Returns:
            An audit index, or ``None`` when no audit is left that ``worker`` may take
            (every remaining group has been started by another worker).
        """
        if not self._current[worker]:
            if self._queues[worker]:
                self._current[worker] = self._queues[worker].popleft()
            else:
                self._current[worker] = self._steal()
        return self._current[worker].popleft() if self._current[worker] else None

    def _steal(self) -> deque:
        """The last unstarted group of the worker with the most unstarted audits (ties: lowest
        index), or an empty group."""
        victims = [w for w, q in enumerate(self._queues) if q]
        if not victims:
            return deque()
        victim = max(victims, key=lambda w: (sum(len(g) for g in self._queues[w]), -w))
        return self._queues[victim].pop()
