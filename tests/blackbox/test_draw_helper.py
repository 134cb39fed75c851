"""The helper process drawing host-Python samplers' releases: the serial run's records.

Counts, not seconds: which calls the helper answered, how many releases it drew, and that
every record field equals the serial run's. Skipped without the ``libraries`` extra where
a shipped library spec is used.
"""

from __future__ import annotations

import json
import os
import signal
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dpaudit.blackbox import drawhelper
from dpaudit.blackbox.drawhelper import helper_enabled, shared_helper
from dpaudit.cli.main import prepare, run_audit
from dpaudit.io.spec.resolve import SpecSampler

_LIBRARIES = Path(__file__).resolve().parents[2] / "audits" / "libraries"
_SAMPLES = 4000


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("seconds", "timings")}
    return [_strip(v) for v in obj] if isinstance(obj, list) else obj


def _record(result) -> str:
    """The record as the golden records compare it: every field, and the scores' bytes."""
    scores = {
        name: {k: np.asarray(v, float).tobytes().hex() for k, v in part.to_dict().items()}
        for name in ("selection_scores", "certification_scores")
        if (part := getattr(result, name, None)) is not None
    }
    return json.dumps([_strip(result.to_dict()), scores], sort_keys=True, default=str)


def _run(monkeypatch, item, mode: str):
    """The audit with the helper ``mode`` and the releases this process's sampler drew."""
    monkeypatch.setenv(drawhelper.HELPER_SETTING, mode)
    local: list = []
    call = SpecSampler.__call__

    def counted(self, data, n, key):
        if mode == "on":  # what the helper was asked is started there: nothing taken back
            assert shared_helper().wait_started()
        local.append(int(n))
        return call(self, data, n, key)

    monkeypatch.setattr(SpecSampler, "__call__", counted)
    before = dict(shared_helper().counts)
    result = run_audit(item)
    monkeypatch.setattr(SpecSampler, "__call__", call)
    after = shared_helper().counts
    return result, local, {k: after[k] - before.get(k, 0) for k in after}


@pytest.fixture(autouse=True)
def _helper_started():
    """The helper answers before a test counts its draws (a starting helper draws nothing)."""
    assert shared_helper().ready()


def _split(serial_calls: list, local: list, counts: dict) -> list:
    """The calls the helper answered: the serial calls this process did not make."""
    rest = Counter(serial_calls) - Counter(local)
    assert not Counter(local) - Counter(serial_calls)  # no call of its own
    assert sum(n * k for n, k in rest.items()) == counts["helper_releases"]
    return sorted(rest.elements())


def _library_item(name: str, module: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip(module, exc_type=ImportError)
    (item,) = prepare([_LIBRARIES / f"{name}.toml"], samples=_SAMPLES)
    return item


def test_diffprivlib_spec_gives_the_serial_bits_with_half_the_releases_drawn_beside(monkeypatch):
    item = _library_item("diffprivlib-laplace", "diffprivlib")
    serial, serial_calls, idle = _run(monkeypatch, item, "off")
    assert idle["helper_releases"] == 0
    parallel, local, counts = _run(monkeypatch, item, "on")
    assert _record(parallel) == _record(serial)
    # D' of the selection and Q of the certification came from the helper, nothing else
    # (the serial run's last call is Q's: its Poissonised count)
    assert _split(serial_calls, local, counts) == sorted(
        [item.spec.select_samples, serial_calls[-1]]
    )
    assert counts["taken_back"] == counts["refused"] == counts["errors"] == 0


def test_opendp_spec_draws_the_same_releases_split_between_the_processes(monkeypatch):
    # OpenDP cannot be seeded (its releases differ run to run): the calls and their sizes
    # are the serial run's, half of the releases from the helper
    item = _library_item("opendp-laplace", "opendp")
    serial, serial_calls, _ = _run(monkeypatch, item, "off")
    parallel, local, counts = _run(monkeypatch, item, "on")
    assert len(_split(serial_calls, local, counts)) == 2  # D' selected, Q certified there
    assert counts["taken_back"] == counts["refused"] == counts["errors"] == 0
    assert (parallel.samples, parallel.verdict) == (serial.samples, serial.verdict)


_FAILING = """
import numpy as np

def sampler(data, n, key):
    data = np.asarray(data, dtype=float)
    if n >= 500 and data.sum() > 2.5:
        raise ValueError("this dataset has no releases")
    seed = np.random.SeedSequence(int(n) + int(10 * data.sum()))
    return data.sum() + np.random.default_rng(seed).laplace(size=n)

sampler.host_python = True
sampler.prefix_stable = True
"""

_SPEC = """name = "helper-failure"
expected = "inconclusive"

[blackbox]
sampler = "failing.py:sampler"

[claim]
epsilon = 1.0
delta = 0.0
adjacency = "replace-one"

[data]
files = ["d.npy", "dp.npy"]

[budget]
samples = 2000
select_samples = 1000
confidence = 0.95
seed = 0
"""


def _failing_item(folder: Path, last: float = 2.0):
    """A spec whose sampler fails on ``D'`` (drawn by the helper) unless ``last <= 1.5``."""
    (folder / "failing.py").write_text(_FAILING)
    (folder / "spec.toml").write_text(_SPEC)
    np.save(folder / "d.npy", np.array([0.0, 0.0, 1.0, 1.0]))
    np.save(folder / "dp.npy", np.array([0.0, 0.0, 1.0, last]))
    (item,) = prepare([folder / "spec.toml"])
    return item


def test_a_sampler_failing_in_the_helper_fails_the_audit_with_the_serial_sentence(
    monkeypatch, tmp_path
):
    item = _failing_item(tmp_path)
    messages = {}
    for mode in ("off", "on"):
        before = shared_helper().counts["errors"]
        with pytest.raises(ValueError) as caught:
            _run(monkeypatch, item, mode)
        messages[mode] = (type(caught.value), str(caught.value))
        errors = shared_helper().counts["errors"] - before
        assert errors == (mode == "on")  # the helper met the failure (D' is drawn there)
    assert messages["on"] == messages["off"]
    assert "this dataset has no releases" in messages["on"][1]


def test_a_sampler_the_helper_cannot_import_stays_serial_and_says_nothing(monkeypatch, tmp_path):
    item = _failing_item(tmp_path)
    monkeypatch.setattr(item.target.sampler, "origin", (str(tmp_path / "gone.toml"), "no.py:x"))
    before = shared_helper().counts["refused"]
    with pytest.raises(ValueError, match="this dataset has no releases"):
        _run(monkeypatch, item, "on")  # drawn here after the helper's refusal: the same error
    assert shared_helper().counts["refused"] - before == 1


def test_unpicklable_or_undeclared_samplers_are_never_sent():
    def closure(data, n, key):
        return np.zeros(n)

    closure.host_python = True
    assert drawhelper.shipped_sampler(closure) is None  # a closure: drawn here
    assert drawhelper.shipped_sampler(np.zeros) is None  # not declared host-Python


def test_the_setting_and_one_core(monkeypatch):
    monkeypatch.setenv(drawhelper.HELPER_SETTING, "off")
    assert not helper_enabled()
    monkeypatch.setenv(drawhelper.HELPER_SETTING, "auto")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert not helper_enabled()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert helper_enabled()
    monkeypatch.setenv(drawhelper.HELPER_SETTING, "sometimes")
    with pytest.raises(ValueError, match="DPAUDIT_DRAW_HELPER must be one of auto, on, off"):
        helper_enabled()


def test_a_request_the_helper_has_not_started_is_drawn_here_and_skipped_there():
    helper = shared_helper()
    key = np.zeros(2, np.uint32)
    os.kill(helper.process.pid, signal.SIGSTOP)  # it cannot start anything now
    try:
        before = helper.counts["taken_back"]
        ticket = helper.submit(b"", None, 0, key)
        assert helper.take(ticket) is None  # taken back: the caller draws it
        assert helper.counts["taken_back"] - before == 1
    finally:
        os.kill(helper.process.pid, signal.SIGCONT)
    assert helper.ready()  # it skipped the request taken back and answers the next


def test_a_helper_that_dies_leaves_the_serial_record(monkeypatch, tmp_path):
    item = _failing_item(tmp_path, last=1.5)  # no failure: D' draws
    serial, serial_calls, _ = _run(monkeypatch, item, "off")
    own = drawhelper.DrawHelper()
    monkeypatch.setattr(drawhelper, "_HELPER", [own])
    assert own.ready()
    os.kill(own.process.pid, signal.SIGKILL)
    own.process.join()
    with own.arrived:  # its reader has seen the pipe close
        own.arrived.wait_for(lambda: own.broken, 60)
    parallel, local, counts = _run(monkeypatch, item, "on")
    assert _record(parallel) == _record(serial) and local == serial_calls
    assert own.broken and counts["helper_releases"] == 0
