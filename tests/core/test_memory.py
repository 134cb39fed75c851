"""Releasing what finished audits left behind: compiled programs go only above the budget."""

import jax
import jax.numpy as jnp
import pytest

from dpaudit.core.memory import release_memory, resident_bytes

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _compilations(fn) -> int:
    count = [0]

    def listener(event, duration, **kwargs):
        if event == BACKEND_COMPILE:
            count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        fn()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
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


@pytest.mark.parametrize("budget", [0, -5, 1.5, True, "1GB"])
def test_a_budget_that_is_not_a_positive_number_of_bytes_is_refused(budget):
    with pytest.raises(ValueError, match="budget_bytes"):
        release_memory(budget)
