"""Releasing what finished audits left behind: compiled programs go only above the budget."""

import jax
import jax.numpy as jnp
import pytest
from compile_counts import count_compilations

import dpaudit.core.memory
from dpaudit.core.memory import release_memory, resident_bytes


def _compilations(fn) -> int:
    with count_compilations() as count:
        fn()
    return count[0]


@jax.jit
def _double(x):
    return 2.0 * x


def test_compiled_programs_are_dropped_only_above_the_budget():
    x = jnp.arange(7.0)
    _double(x)
    assert resident_bytes() is None or resident_bytes() > 0
    assert release_memory(1 << 50) is False  # under the budget: programs kept
    assert _compilations(lambda: _double(x)) == 0
    assert release_memory(1) is (resident_bytes() is not None)  # above it: dropped
    if resident_bytes() is not None:
        assert _compilations(lambda: _double(x)) == 1
    assert float(_double(x)[3]) == 6.0  # the same result after recompiling


def test_the_default_budget_is_read_at_the_call(monkeypatch):
    """The suite's budget is the module constant when the call is made (tests/conftest.py
    raises it for the test process), not the value it had when the function was defined."""
    x = jnp.arange(5.0)
    _double(x)
    monkeypatch.setattr(dpaudit.core.memory, "SUITE_MEMORY_BYTES", 1 << 50)
    assert release_memory() is False
    assert _compilations(lambda: _double(x)) == 0
    monkeypatch.setattr(dpaudit.core.memory, "SUITE_MEMORY_BYTES", 1)
    assert release_memory() is (resident_bytes() is not None)


@pytest.mark.parametrize("budget", [0, -5, 1.5, True, "1GB"])
def test_a_budget_that_is_not_a_positive_number_of_bytes_is_refused(budget):
    with pytest.raises(ValueError, match="budget_bytes"):
        release_memory(budget)


def _collections(monkeypatch) -> list:
    calls = []
    collect = dpaudit.core.memory.gc.collect
    monkeypatch.setattr(dpaudit.core.memory.gc, "collect", lambda *a: calls.append(collect(*a)))
    return calls


def test_below_the_budget_no_garbage_is_collected(monkeypatch):
    """A full collection traverses every live object (about 0.2 s with 40 specs built): a
    suite's release after each audit must cost nothing while the process is under budget."""
    calls = _collections(monkeypatch)
    monkeypatch.setattr(dpaudit.core.memory, "resident_bytes", lambda: 1 << 20)
    assert release_memory(1 << 30) is False
    assert calls == []


def test_programs_are_kept_when_collecting_garbage_brings_the_process_under_budget(monkeypatch):
    """Above the budget, garbage and freed heap go first; the compiled programs go only if
    the process is still above it."""
    x = jnp.arange(6.0)
    _double(x)
    calls = _collections(monkeypatch)
    sizes = iter([2 << 30, 1 << 20])  # above before the collection, under after it
    monkeypatch.setattr(dpaudit.core.memory, "resident_bytes", lambda: next(sizes, 1 << 20))
    assert release_memory(1 << 30) is False
    assert len(calls) == 1
    assert _compilations(lambda: _double(x)) == 0


def test_dropping_the_programs_runs_every_registered_release(monkeypatch):
    """Programs a module keeps itself (compiled executables in a dict) go with JAX's own:
    their releases run when the programs are dropped, never below the budget."""
    calls = []
    release = dpaudit.core.memory.on_release(lambda: calls.append(1))
    dpaudit.core.memory.on_release(release)  # registered once
    monkeypatch.setattr(dpaudit.core.memory, "resident_bytes", lambda: 2 << 30)
    assert release_memory(1 << 50) is False and calls == []
    assert release_memory(1 << 30) is True
    assert calls == [1]


def test_a_release_that_is_not_callable_is_refused():
    with pytest.raises(TypeError, match="release must be a function"):
        dpaudit.core.memory.on_release(42)
