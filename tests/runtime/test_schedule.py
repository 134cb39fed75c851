"""Family-affine scheduling of a local suite: whole groups per worker, longest first, by counts."""

import os
import queue
from pathlib import Path

import pytest

import dpaudit.runtime.pool as pool
from dpaudit.cli.main import audit_family
from dpaudit.io.spec import find_specs, load_spec
from dpaudit.runtime import SuiteRunner, SuiteTarget
from dpaudit.runtime.schedule import Dispatcher, group_costs, plan_groups
from dpaudit.runtime.suite import driver_cache

ROOT = Path(__file__).resolve().parents[2]


def test_groups_go_whole_to_the_least_loaded_worker_longest_first():
    """Unknown costs count audits: a (4), b (3), c (2), d (1) on 2 workers is a | b, c | then
    d on the lighter one; each group's audits in the given order."""
    keys = ["a", "b", "a", "c", "b", "a", "d", "c", "b", "a"]
    plan = plan_groups(keys, [0.0] * len(keys), 2)
    assert plan == [[[0, 2, 5, 9], [6]], [[1, 4, 8], [3, 7]]]
    assert plan_groups(keys, [0.0] * len(keys), 2) == plan  # deterministic


def test_known_costs_order_the_groups_and_unknown_ones_count_as_the_mean():
    # b's one audit is known to be long; a's three are unknown: each counts as the mean (4)
    keys, costs = ["a", "a", "a", "b", "c"], [0.0, 0.0, 0.0, 10.0, 2.0]
    table = group_costs(keys, costs)
    assert table == {"a": (18.0, [0, 1, 2]), "b": (10.0, [3]), "c": (2.0, [4])}
    assert plan_groups(keys, costs, 2) == [[[0, 1, 2]], [[3], [4]]]


def test_one_worker_runs_every_group_longest_first_and_more_workers_than_groups_idle():
    keys = ["x", "y", "y", "z", "z", "z"]
    assert plan_groups(keys, [0.0] * 6, 1) == [[[3, 4, 5], [1, 2], [0]]]
    assert plan_groups(keys, [0.0] * 6, 4) == [[[3, 4, 5]], [[1, 2]], [[0]], []]
    with pytest.raises(ValueError, match="workers must be >= 1"):
        plan_groups(keys, [0.0] * 6, 0)
    with pytest.raises(ValueError, match="one entry per audit"):
        plan_groups(keys, [0.0], 2)


def test_the_dispatcher_hands_out_every_audit_once_and_steals_only_whole_unstarted_groups():
    plan = [[[0, 1, 2], [3, 4], [5]], [[6], [7]]]
    d = Dispatcher(plan)
    assert [d.next(0), d.next(1)] == [0, 6]  # each starts its first group
    assert d.next(1) == 7  # worker 1 ran through its own groups
    # idle, it steals worker 0's last (shortest) unstarted group, then the next one
    assert [d.next(1), d.next(1)] == [5, 3]
    # worker 0 finishes its started group; the rest of 3-4 stays with worker 1
    assert [d.next(0), d.next(0), d.next(0)] == [1, 2, None]
    assert [d.next(1), d.next(1)] == [4, None]


def _prepare(paths, seed, samples):
    return [str(p) for p in paths]


def _pid(item):
    if item.endswith("dies"):
        os._exit(7)  # a worker killed mid-audit (as the OOM killer would)
    return item, os.getpid()


PIDS = SuiteRunner(_prepare, _prepare, _pid)


def test_a_local_suite_runs_each_group_on_one_worker_and_returns_results_in_order():
    groups = ["x", "y", "x", "z", "y", "x", "z"]
    targets = [SuiteTarget(f"s{i}", group=g) for i, g in enumerate(groups)]
    results = pool.run_suite_local(targets, runner=PIDS, workers=2)
    assert [r[0] for r in results] == [t.path for t in targets]
    pid_of = {}
    for g, (_, pid) in zip(groups, results, strict=True):
        pid_of.setdefault(g, set()).add(pid)
    assert all(len(pids) == 1 for pids in pid_of.values()), pid_of  # no group split
    assert len({pid for (_, pid) in results}) == 2  # both workers used


def test_a_worker_that_dies_fails_the_suite_naming_its_spec():
    targets = [SuiteTarget("fine", group="a"), SuiteTarget("it-dies", group="b")]
    with pytest.raises(RuntimeError, match=r"^it-dies: the worker process auditing it died"):
        pool.run_suite_local(targets, runner=PIDS, workers=2)


def test_a_worker_loop_releases_against_its_budget_and_stops_at_the_first_failure(monkeypatch):
    """In process: each audit ends with release_memory(the worker's budget); a failure is sent
    back (pickled) and the loop stops, leaving later tasks unread."""
    budgets = []
    monkeypatch.setattr(pool, "release_memory", budgets.append)
    runner = SuiteRunner(_prepare, _prepare, lambda item: 1 / 0 if item == "bad" else item)
    tasks, results = queue.Queue(), queue.Queue()
    for task in [(0, SuiteTarget("a")), (1, SuiteTarget("bad")), (2, SuiteTarget("c")), None]:
        tasks.put(task)
    pool.worker_loop(3, (None, None, driver_cache(), runner, 77 << 20), tasks, results)
    assert budgets == [77 << 20, 77 << 20]
    first, second = results.get_nowait(), results.get_nowait()
    assert first[:3] == (3, 0, True) and second[:3] == (3, 1, False)
    assert tasks.get_nowait() == (2, SuiteTarget("c"))  # never started


def test_shipped_specs_fall_into_families_read_from_the_spec_alone():
    """Counts over the shipped suite: the library audits are two families (OpenDP,
    diffprivlib), the training ones three (catalogue DP-SGD, jax-privacy, Opacus), and the
    SVT variants of the faulty catalogue one."""
    specs = {str(p): load_spec(p) for p in find_specs(str(ROOT / "audits"))}
    family = {path: audit_family(spec) for path, spec in specs.items()}
    libraries = {f for p, f in family.items() if "/libraries/" in p}
    assert libraries == {
        "black-box:opendp_audits.py:logistic",
        "black-box:diffprivlib_primitives.py:logistic",
    }
    assert len({f for p, f in family.items() if "/training/" in p}) == 3
    svt = {f for p, f in family.items() if "/faulty/svt-lyu" in p}
    assert svt == {"white-box:mechanisms.faulty.selection"}
    assert 20 <= len(set(family.values())) <= 60  # groups, not one per spec nor one for all


def _unusual(item):
    from types import MappingProxyType

    if item == "lock":
        import threading

        return threading.Lock()
    return {"sites": MappingProxyType({"a": 1.0})}


def test_results_with_read_only_mappings_come_back_and_unpicklable_ones_fail_naming_the_spec(
    monkeypatch,
):
    """A white-box certificate keeps its sites in a MappingProxyType, which plain pickle
    refuses (the run stopped with "cannot pickle 'mappingproxy' object", no spec named)."""
    import pickle
    from types import MappingProxyType

    monkeypatch.setattr(pool, "release_memory", lambda budget: None)
    runner = SuiteRunner(_prepare, _prepare, _unusual)
    tasks, results = queue.Queue(), queue.Queue()
    for task in [(0, SuiteTarget("certificate")), (1, SuiteTarget("lock")), None]:
        tasks.put(task)
    pool.worker_loop(0, (None, None, driver_cache(), runner, 1 << 30), tasks, results)
    (_, _, ok, payload), (_, _, bad, error) = results.get_nowait(), results.get_nowait()
    (value, _seconds, view) = pickle.loads(payload)
    assert ok and isinstance(value["sites"], MappingProxyType) and value["sites"]["a"] == 1.0
    assert view is None  # this runner sends no report view
    error = pickle.loads(error)
    assert not bad and isinstance(error, RuntimeError)
    assert str(error).startswith("lock: its result cannot be sent back from the worker")
