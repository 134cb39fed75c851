"""One compilation cache per test run (tests/conftest.py): shared by the run's processes,
never by the files that count programs in their own process."""

import os
from pathlib import Path

import pytest
from conftest import COUNTING_FILES, RUN_CACHE_DIR, run_cache_for

from dpaudit.runtime.suite import driver_cache

ROOT = Path(__file__).resolve().parents[1]
# what a test file that counts compilations, traces or cache entries uses
COUNTING_WORDS = (
    "jax.monitoring",
    "compile_counts",
    "compilation_cache",
    "_cache_size",
    "backend_compile_and_load",
)


def test_every_file_that_counts_programs_compiles_without_the_run_cache():
    counting = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if path.name != Path(__file__).name
        and any(word in path.read_text() for word in COUNTING_WORDS)
    }
    assert sorted(counting - set(COUNTING_FILES)) == []
    assert sorted(set(COUNTING_FILES) - counting) == []  # a stale name turns nothing off
    assert all(run_cache_for(f"{name}::test") is None for name in COUNTING_FILES)


def test_other_tests_and_their_subprocesses_compile_into_the_run_cache():
    if RUN_CACHE_DIR is None:
        pytest.skip("DPAUDIT_TEST_CACHE=0: the run compiles without a cache")
    assert run_cache_for("tests/test_run_cache.py::x") == RUN_CACHE_DIR
    assert driver_cache() == RUN_CACHE_DIR  # this process (and the suite workers it spawns)
    assert os.environ["DPAUDIT_CACHE_DIR"] == RUN_CACHE_DIR  # `dpaudit` subprocesses
    assert os.environ["DPAUDIT_CACHE"] == "1"
    assert not Path(RUN_CACHE_DIR).is_relative_to(Path.home() / ".cache")  # not the user's
