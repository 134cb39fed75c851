"""Counting XLA compilations in tests: one helper instead of a listener per test file.

``with count_compilations() as count:`` counts the backend compilations JAX reports inside
the block (``count[0]``); ``ignore`` names call-stack frames whose compilations are not
counted (e.g. numpyro's eager ``validate_args`` checks). JAX (0.10) reports a program read
back from a persistent cache as a backend compilation too (the event times
``compile_or_get_cached``); the files that count compile without the test run's cache anyway
(``COUNTING_FILES`` in tests/conftest.py), so their counts never depend on another process.
"""

import contextlib
import traceback
from collections import Counter

import jax

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@contextlib.contextmanager
def count_compilations(ignore=()):
    """Count XLA backend compilations inside the block (a one-element list).

    Args:
        ignore: function names; a compilation with one of them on the call stack is not
            counted.
    """
    count = [0]
    ignored = set(ignore)

    def listener(event, duration, **kwargs):
        if event != BACKEND_COMPILE:
            return
        if ignored and ignored & {frame.name for frame in traceback.extract_stack()}:
            return
        count[0] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield count
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


PROGRAM_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "traces",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lowerings",
    BACKEND_COMPILE: "compilations",
}


@contextlib.contextmanager
def count_programs():
    """Count jaxpr traces, lowerings and XLA compilations inside the block (a Counter)."""
    counts = Counter()

    def listener(event, duration, **kwargs):
        if event in PROGRAM_EVENTS:
            counts[PROGRAM_EVENTS[event]] += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield counts
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
