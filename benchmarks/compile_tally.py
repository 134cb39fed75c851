"""A pytest plugin: XLA compilations and persistent-cache reads of one test process.

Used to measure a compilation cache shared by the processes of one test run::

    TALLY_OUT=tally.tsv PYTHONPATH=$PWD/benchmarks python -m pytest FILES -p compile_tally

At the end of the session one tab-separated line is appended to ``TALLY_OUT``: the
process's CPU seconds (its own, and its waited-for children's: subprocesses of
``dpaudit``), the number and seconds of backend compilations, persistent-cache hits and
the compile seconds JAX reports they saved, and the files run. Ray workers are not
children and are not counted.
"""

import os
import resource
import time

import jax
import pytest

_TALLY = {"compilations": 0, "compile_s": 0.0, "hits": 0, "saved_s": 0.0}
_FILES = set()


def _duration(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        _TALLY["compilations"] += 1
        _TALLY["compile_s"] += duration
    elif event == "/jax/compilation_cache/compile_time_saved_sec":
        _TALLY["saved_s"] += duration


def _event(event, **kwargs):
    if event == "/jax/compilation_cache/cache_hits":
        _TALLY["hits"] += 1


jax.monitoring.register_event_duration_secs_listener(_duration)
jax.monitoring.register_event_listener(_event)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Note the file of every test run."""
    _FILES.add(item.nodeid.split("::")[0])


def pytest_sessionfinish(session):
    """Append this process's line to ``TALLY_OUT``."""
    out = os.environ.get("TALLY_OUT")
    if not out:
        return
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    line = [
        f"{time.process_time():.2f}",
        f"{children.ru_utime + children.ru_stime:.2f}",
        str(_TALLY["compilations"]),
        f"{_TALLY['compile_s']:.2f}",
        str(_TALLY["hits"]),
        f"{_TALLY['saved_s']:.2f}",
        ",".join(sorted(_FILES)),
    ]
    with open(out, "a") as f:
        f.write("\t".join(line) + "\n")
