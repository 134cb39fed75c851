"""`--workers N`: a suite on N local processes (the driver and N - 1 workers, no Ray) gives the
serial run's results, each spec prepared once."""

import json
import os

import pytest
from spec_fixtures import USER
from spec_fixtures import WHITE_BOX_SPEC as SPEC

import dpaudit.cli.main as cli
import dpaudit.runtime.pool as pool
from dpaudit.cli.main import main
from dpaudit.core.memory import SUITE_MEMORY_BYTES
from dpaudit.io.spec import SpecError
from dpaudit.runtime import SuiteRunner, SuiteTarget


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


# the spec fixtures' builder, logging every build (process id, scale factor) to a file
COUNTED_USER = USER.replace(
    "def build(n=20, epsilon=1.0, scale_factor=1.0):\n",
    "def build(n=20, epsilon=1.0, scale_factor=1.0):\n"
    "    import os\n"
    "    with open(os.environ['DPAUDIT_TEST_BUILDS'], 'a') as log:\n"
    "        log.write(f'{os.getpid()} {scale_factor}\\n')\n",
).replace("MECHANISM = build()\n", "")


def _builds(log) -> list:
    """Every logged build as ``(process id, scale factor)``; the log emptied."""
    lines = log.read_text().split() if log.exists() else []
    log.unlink(missing_ok=True)
    return list(zip(lines[::2], lines[1::2], strict=True))


def test_two_local_processes_give_the_serial_json_and_build_each_audit_once(
    tmp_path, capsys, monkeypatch
):
    """Two specs and a FILE.py:CALLABLE target with its own options, serially and with
    ``--workers 2``: the same JSON (timings aside), the same lines; each audit's mechanism
    built once in all (the serial run builds each once too), the driver auditing one share
    and one spawned worker the other (family-affine: the two specs of one builder together)."""
    log = tmp_path / "builds.txt"
    monkeypatch.setenv("DPAUDIT_TEST_BUILDS", str(log))  # spawned workers inherit it
    base = _suite(tmp_path)
    (tmp_path / "user.py").write_text(COUNTED_USER)
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    assert main([*base, "--json", str(serial)]) == 0
    serial_out = capsys.readouterr().out
    assert sorted(f for _, f in _builds(log)) == ["0.5", "1.0", "1.0"]
    assert main([*base, "--json", str(parallel), "--workers", "2"]) == 0
    parallel_out = capsys.readouterr().out
    builds = _builds(log)
    assert sorted(f for _, f in builds) == ["0.5", "1.0", "1.0"]  # once each, none again
    by_process = {pid: sorted(f for p, f in builds if p == pid) for pid, _ in builds}
    assert by_process[str(os.getpid())] == ["0.5", "1.0"]  # the two specs: the driver's share
    assert len(by_process) == 2  # the callable target: the worker's
    a, b = (_strip(json.loads(p.read_text())) for p in (serial, parallel))
    assert [x["confidence"] for x in b["audits"]] == [0.9] * 3
    assert a == b
    assert [x["name"] for x in a["audits"]] == ["correct", "faulty", "user.py:build"]
    for name in ("correct: pass ✓", "faulty: violation ✓", "user.py:build: audited claim"):
        assert name in serial_out and name in parallel_out


def test_a_malformed_spec_exits_2_before_anything_is_built(tmp_path, capsys, monkeypatch):
    """Every spec file is read before any audit: a spec that does not load stops the run
    with exit 2 before any mechanism is built or any worker started; nothing written."""
    import multiprocessing

    log = tmp_path / "builds.txt"
    monkeypatch.setenv("DPAUDIT_TEST_BUILDS", str(log))
    (tmp_path / "user.py").write_text(COUNTED_USER)
    (tmp_path / "a.toml").write_text(SPEC.format(expected="", scale=1.0))
    (tmp_path / "z.toml").write_text(SPEC.format(expected="", scale=1.0) + "[claim]\n")
    out = tmp_path / "out.json"
    assert main(["audit", str(tmp_path), "--json", str(out), "--workers", "2", "-q"]) == 2
    assert "z.toml" in capsys.readouterr().err
    assert _builds(log) == [] and not out.exists()
    assert multiprocessing.active_children() == []


def test_a_worker_sends_back_a_picklable_view_with_the_reports_figures(tmp_path):
    """What a worker sends back of a prepared white-box audit pickles, and its release
    figure draws the same paths as the mechanism itself."""
    import pickle
    from argparse import Namespace

    import numpy as np

    from dpaudit.io.plot.whitebox import ReleaseSketch, release_paths

    (tmp_path / "user.py").write_text(USER)
    (tmp_path / "a.toml").write_text(SPEC.format(expected="", scale=1.0))
    runner = cli.suite_runner(Namespace(report=str(tmp_path / "report")))
    (item,) = runner.prepare([tmp_path / "a.toml"], None, None)
    view = pickle.loads(pickle.dumps(runner.report_view(item)))
    assert isinstance(view.mechanism, ReleaseSketch)
    assert view.spec == item.spec and view.claim_note == item.claim_note
    assert all(np.array_equal(x, y) for x, y in zip(view.pair, item.pair, strict=True))
    # a scalar release has no figure, drawn directly or from the sketch
    assert view.mechanism.paths is None and release_paths(item.mechanism, item.pair[0]) is None


def _prepare(paths, seed, samples):
    return [str(p) for p in paths]


def _echo(item):
    if item.endswith("bad"):
        raise ValueError("the bad one")
    if item.endswith("helper"):  # the draw helper's setting where the audit ran
        return os.environ.get("DPAUDIT_DRAW_HELPER")
    if item.endswith("interrupt"):
        raise KeyboardInterrupt
    return item.upper()


RUNNER = SuiteRunner(_prepare, _prepare, _echo)


def test_results_come_back_in_the_order_of_the_paths_whatever_the_costs():
    targets = [SuiteTarget("a", cost=1.0), SuiteTarget("b", cost=9.0), SuiteTarget("c")]
    seconds = []
    results = pool.run_suite_local(targets, runner=RUNNER, workers=2, seconds=seconds)
    assert results == ["A", "B", "C"]
    assert len(seconds) == 3


def test_an_audit_that_fails_on_a_worker_stops_the_suite_with_its_sentence():
    """The worker's failure reaches the driver after the driver's own audit; no worker left."""
    import multiprocessing

    targets = [SuiteTarget("a"), SuiteTarget("bad", cost=5.0)]
    assert pool.suite_plan(targets, 2) == [[[0]], [[1]]]  # "bad" on the spawned worker
    with pytest.raises(SpecError, match=r"^bad: audit failed: the bad one$"):
        pool.run_suite_local(targets, runner=RUNNER, workers=2)
    assert multiprocessing.active_children() == []


@pytest.mark.parametrize("failing", ["bad", "interrupt"])
def test_the_drivers_own_failure_or_ctrl_c_stops_the_workers(failing):
    """An audit of the driver's own share that fails, or Ctrl-C during it, stops the suite
    with that error and leaves no worker running."""
    import multiprocessing

    targets = [
        SuiteTarget(failing, cost=5.0),
        SuiteTarget("a", cost=1.0),
        SuiteTarget("c", cost=1.0),
    ]
    assert pool.suite_plan(targets, 2)[0] == [[0]]  # the failing one: the driver's
    raised = KeyboardInterrupt if failing == "interrupt" else SpecError
    with pytest.raises(raised):
        pool.run_suite_local(targets, runner=RUNNER, workers=2)
    assert multiprocessing.active_children() == []


def test_no_draw_helper_beside_a_worker_unless_asked(monkeypatch):
    """The driver's own audits run without the draw helper while a worker audits too (every
    core has an audit), as the workers do; alone, or when the variable is set, as asked."""
    monkeypatch.delenv("DPAUDIT_DRAW_HELPER", raising=False)
    targets = [SuiteTarget("x-helper", cost=5.0), SuiteTarget("y-helper", cost=1.0)]
    assert pool.run_suite_local(targets, runner=RUNNER, workers=2) == ["off", "off"]
    assert "DPAUDIT_DRAW_HELPER" not in os.environ  # restored afterwards
    assert pool.run_suite_local(targets, runner=RUNNER, workers=1) == [None, None]
    monkeypatch.setenv("DPAUDIT_DRAW_HELPER", "on")
    assert pool.run_suite_local(targets[:1], runner=RUNNER, workers=2) == ["on"]


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
    overrides = (None, None, RUNNER, 123 << 20)
    result, seconds, view = pool.run_pooled(overrides, SuiteTarget("a"))
    assert result == "A" and seconds >= 0 and view is None  # RUNNER sends no report view
    with pytest.raises(SpecError, match="the bad one"):
        pool.run_pooled(overrides, SuiteTarget("bad"))
    assert budgets == [123 << 20, 123 << 20]


def test_a_spec_its_builder_refuses_exits_2_and_leaves_no_worker(tmp_path, capsys):
    """A spec that loads but whose builder refuses it (found by the process that audits it)
    stops the workers (none is left running), exits 2 with the spec's sentence and writes
    nothing."""
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
