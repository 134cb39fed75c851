"""A pytest plugin: when the test process drops JAX's compiled programs, and its memory.

A suite of several audits run in-process (``dpaudit audit DIR``, ``main([...])``) calls
``dpaudit.core.memory.release_memory`` between audits, which drops every compiled program
once the process holds more than ``SUITE_MEMORY_BYTES``; a test worker holds the programs of
all its earlier tests, so this tells how often the suite recompiles from nothing::

    DROPS_OUT=drops.txt PYTHONPATH=$PWD/benchmarks python -m pytest tests/x -p cache_drops

``DROPS_OUT`` gets one line per ``jax.clear_caches`` call (resident MB before it, the test),
``DROPS_OUT.rss`` the resident MB after each test. With ``DROPS_BUDGET_MB`` set, the suite
budget is set to it after collection (e.g. the 1200 MB of a fresh ``dpaudit audit``).
"""

import os

import jax

_clear = jax.clear_caches
_OUT = os.environ.get("DROPS_OUT", "drops.txt")


def _resident_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _counted_clear():
    with open(_OUT, "a", encoding="utf-8") as out:
        out.write(f"{_resident_mb():.0f}MB {os.environ.get('PYTEST_CURRENT_TEST', '?')}\n")
    return _clear()


jax.clear_caches = _counted_clear


def pytest_collection_finish(session):
    """Set the suite's memory budget from ``DROPS_BUDGET_MB`` (after tests/conftest.py)."""
    budget = os.environ.get("DROPS_BUDGET_MB")
    if budget:
        import dpaudit.core.memory

        dpaudit.core.memory.SUITE_MEMORY_BYTES = int(budget) << 20


def pytest_runtest_teardown(item):
    """Record the resident memory after each test."""
    with open(_OUT + ".rss", "a", encoding="utf-8") as out:
        out.write(f"{_resident_mb():.0f} {item.nodeid}\n")
