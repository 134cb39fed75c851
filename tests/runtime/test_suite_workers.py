"""`--workers N`: a suite on N local worker processes (no Ray) gives the serial run's results."""

import json

import pytest
from spec_fixtures import USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

import dpaudit.cli.main as cli
import dpaudit.runtime.pool as pool
from dpaudit.cli.main import main
from dpaudit.core.memory import SUITE_MEMORY_BYTES
from dpaudit.io.spec import SpecError
from dpaudit.runtime import SuiteRunner, SuiteTarget
from dpaudit.runtime.suite import driver_cache


def _strip(obj):
    """A JSON record without its timings and start stamp."""
    if isinstance(obj, dict):
        drop = ("seconds", "timings", "started", "finished", "created")
        return {k: _strip(v) for k, v in obj.items() if k not in drop}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _suite(tmp_path):
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "correct.toml").write_text(SPEC.format(expected='expected = "pass"', scale=1.0))
    (tmp_path / "faulty.toml").write_text(SPEC.format(expected='expected = "violation"', scale=0.5))
    target = f"{tmp_path / 'user.py'}:build"
    # --confidence reaches the workers' own preparation too (it did not: the spec's 0.95 ran)
    return ["audit", str(tmp_path), target, "--generator", "points", "--epsilon", "2",
            "--samples", "1500", "--seed", "4", "--confidence", "0.9"]  # fmt: skip


def test_two_local_workers_give_the_serial_json(tmp_path, capsys, monkeypatch):
    """Two specs and a FILE.py:CALLABLE target with its own options, serially and on 2 spawned
    worker processes: the same JSON (timings aside), the same lines, every audit run by a
    worker (none in the driver)."""
    base = _suite(tmp_path)
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    assert main([*base, "--json", str(serial)]) == 0
    serial_out = capsys.readouterr().out
    ran_here = []
    monkeypatch.setattr(pool, "run_spec", lambda *a: ran_here.append(a))  # a worker's own copy
    released = []  # the driver audits nothing: what building compiled is dropped first
    monkeypatch.setattr(cli, "release_memory", lambda *a: released.append(a))
    assert main([*base, "--json", str(parallel), "--workers", "2"]) == 0
    parallel_out = capsys.readouterr().out
    assert ran_here == []
    assert released.count((1,)) == 1
    a, b = (_strip(json.loads(p.read_text())) for p in (serial, parallel))
    assert [x["confidence"] for x in b["audits"]] == [0.9] * 3
    assert a == b
    assert [x["name"] for x in a["audits"]] == ["correct", "faulty", "user.py:build"]
    for name in ("correct: pass ✓", "faulty: violation ✓", "user.py:build: audited claim"):
        assert name in serial_out and name in parallel_out


def _prepare(paths, seed, samples):
    return [str(p) for p in paths]


def _echo(item):
    if item.endswith("bad"):
        raise ValueError("the bad one")
    return item.upper()


RUNNER = SuiteRunner(_prepare, _prepare, _echo)


def test_results_come_back_in_the_order_of_the_paths_whatever_the_costs():
    targets = [SuiteTarget("a", cost=1.0), SuiteTarget("b", cost=9.0), SuiteTarget("c")]
    seconds = []
    results = pool.run_suite_local(targets, runner=RUNNER, workers=2, seconds=seconds)
    assert results == ["A", "B", "C"]
    assert len(seconds) == 3


def test_an_audit_that_fails_on_a_worker_stops_the_suite_with_its_sentence():
    targets = [SuiteTarget("a"), SuiteTarget("bad", cost=5.0)]
    with pytest.raises(SpecError, match=r"^bad: audit failed: the bad one$"):
        pool.run_suite_local(targets, runner=RUNNER, workers=2)


@pytest.mark.parametrize("workers", ["0", "-1"])
def test_bad_workers_exit_2_and_write_nothing(workers, tmp_path, capsys):
    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "a.toml").write_text(SPEC.format(expected="", scale=1.0))
    out = tmp_path / "out.json"
    assert main(["audit", str(tmp_path), "--json", str(out), "--workers", workers]) == 2
    err = capsys.readouterr().err.strip()
    assert "--workers must be >= 1" in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_workers_share_the_suite_memory_budget():
    """N workers together stay within one serial process's budget; never below a fresh
    worker's own size."""
    assert pool.worker_budget(1) == SUITE_MEMORY_BYTES  # the suite's budget by default
    shipped = 1200 << 20  # the shipped budget (tests/conftest.py raises it for the tests)
    assert pool.worker_budget(2, shipped) == shipped // 2
    assert pool.worker_budget(64, shipped) == pool.WORKER_MEMORY_FLOOR
    with pytest.raises(ValueError, match="workers must be >= 1"):
        pool.worker_budget(0)


def test_a_worker_releases_memory_against_its_budget_after_every_audit(monkeypatch):
    """Each audit on a worker ends with release_memory(the worker's budget), even when it
    fails: N workers then hold at most N budgets of compiled programs between audits."""
    budgets = []
    monkeypatch.setattr(pool, "release_memory", budgets.append)
    overrides = (None, None, driver_cache(), RUNNER, 123 << 20)  # this process's cache kept
    result, seconds = pool.run_pooled(overrides, SuiteTarget("a"))
    assert result == "A" and seconds >= 0
    with pytest.raises(SpecError, match="the bad one"):
        pool.run_pooled(overrides, SuiteTarget("bad"))
    assert budgets == [123 << 20, 123 << 20]


def test_a_spec_the_driver_refuses_while_workers_run_exits_2_and_leaves_no_worker(tmp_path, capsys):
    """The driver validates while the workers audit: a spec it refuses stops the workers
    (none is left running), exits 2 with the spec's sentence and writes nothing."""
    import multiprocessing

    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "a.toml").write_text(SPEC.format(expected="", scale=1.0))
    # loads (the workers start), then its builder refuses the parameter
    (tmp_path / "b.toml").write_text(SPEC.format(expected="", scale="1.0, bogus = 3"))
    out = tmp_path / "out.json"
    code = main(["audit", str(tmp_path), "--json", str(out), "--workers", "2", "-q"])
    assert code == 2
    assert "b.toml" in capsys.readouterr().err
    assert not out.exists()
    assert multiprocessing.active_children() == []


def test_the_workers_prepare_with_the_command_lines_confidence_and_force(tmp_path):
    """What a worker runs: ``prepare`` with ``--confidence`` and ``--force`` applied."""
    from argparse import Namespace

    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "a.toml").write_text(SPEC.format(expected="", scale=1.0))
    runner = cli.suite_runner(Namespace(confidence=0.9, force=True))
    (item,) = runner.prepare([tmp_path / "a.toml"], None, None)
    assert item.spec.confidence == 0.9 and item.force
    (plain,) = cli.suite_runner(Namespace()).prepare([tmp_path / "a.toml"], None, None)
    assert plain.spec.confidence != 0.9 and not plain.force
