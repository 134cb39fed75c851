"""Shared test configuration.

Statistical tests draw with fixed seeds; each is calibrated so that, for a
random seed, it would fail spuriously with probability at most
``TEST_FAILURE_RATE`` (numpyro's convention), far below 1 / (number of
statistical tests in the suite).

Hypothesis runs the derandomized ``ci`` profile by default so CI is
reproducible; ``HYPOTHESIS_PROFILE=long`` explores far more examples locally.
"""

import os
import shutil
import tempfile

# The suite's xdist workers take a core each: no draw helper process beside them (it cannot
# pay, and each would hold ~190 MB). tests/blackbox/test_draw_helper.py turns it on.
os.environ.setdefault("DPAUDIT_DRAW_HELPER", "off")

import jax
import pytest
from hypothesis import settings

import dpaudit  # enables jax_enable_x64
import dpaudit.core.compilation_cache as compilation_cache
import dpaudit.core.memory
import dpaudit.testing.plugin  # (registers the dpaudit-ci / dpaudit-long profiles)

# One persistent compilation cache per test run, on request (DPAUDIT_TEST_CACHE=1, or
# DPAUDIT_TEST_CACHE_DIR=DIR to keep the run's folder in DIR), shared by the run's processes
# (the xdist workers, the `dpaudit` subprocesses and spawned suite workers of the tests): the
# process that starts the run makes an empty folder, every process of the run compiles into
# it and reads from it, the starting process deletes it at the end. Never the user's cache.
# Off by default: on 8 files under `-n 2` it saved 0-8 % CPU in three pairs of runs (wall
# 0.52x in the quietest pair), not yet measured on a whole run (BENCHMARKS.md, "Default
# suite, session 13").
# Files that count compilations compile without it (COUNTING_FILES, below). Without it the
# suite compiles without any persistent cache (DPAUDIT_CACHE=0, inherited by subprocesses).
# tests/core/test_compilation_cache.py turns the cache on in its own tmp folders.
RUN_CACHE_ON = bool(os.environ.get("DPAUDIT_TEST_CACHE_DIR")) or os.environ.get(
    "DPAUDIT_TEST_CACHE", ""
).strip().lower() in {"1", "on", "yes", "true"}
OWN_RUN_CACHE = RUN_CACHE_ON and not os.environ.get("DPAUDIT_TEST_CACHE_DIR")
if OWN_RUN_CACHE:
    os.environ["DPAUDIT_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="dpaudit-test-jax-")
if RUN_CACHE_ON:
    os.environ["DPAUDIT_CACHE"] = "1"
    os.environ["DPAUDIT_CACHE_DIR"] = os.environ["DPAUDIT_TEST_CACHE_DIR"]
else:
    os.environ["DPAUDIT_CACHE"] = "0"

RUN_CACHE_DIR = os.environ["DPAUDIT_TEST_CACHE_DIR"] if RUN_CACHE_ON else None
if RUN_CACHE_DIR:
    compilation_cache.enable_compilation_cache(RUN_CACHE_DIR)


def pytest_configure(config):
    """Two processes of the run may compile one program at once: a process that reads the
    entry while the other still writes it warns, deletes the entry and compiles the program
    itself (dpaudit.core.compilation_cache), with the same result. Not a test failure."""
    if RUN_CACHE_DIR:
        config.addinivalue_line(
            "filterwarnings", "ignore:Error reading persistent compilation cache entry"
        )


def pytest_unconfigure(config):
    """The process that made the run's cache folder deletes it."""
    if OWN_RUN_CACHE and not os.environ.get("PYTEST_XDIST_WORKER"):
        shutil.rmtree(RUN_CACHE_DIR, ignore_errors=True)


# Test files that count compilations, traces or cache entries in their own process: their
# tests compile without the run's cache (a program read back from it is no compilation, so a
# count would depend on what another process compiled first). tests/test_run_cache.py checks
# that every file using jax.monitoring, compile_counts or the cache is listed.
COUNTING_FILES = (
    "tests/blackbox/test_blackbox_selection_cost.py",
    "tests/cli/test_prepare_cost.py",
    "tests/cli/test_validate_cost.py",
    "tests/core/test_arrays.py",
    "tests/core/test_compilation_cache.py",
    "tests/core/test_memory.py",
    "tests/mechanisms/test_dpsgd_costs.py",
    "tests/model/test_parameter_checks.py",
    "tests/model/test_traced_randomness.py",
    "tests/whitebox/test_continuous_latent.py",
    "tests/whitebox/test_engine.py",
    "tests/whitebox/test_first_audit_programs.py",
    "tests/whitebox/test_heavy_compiles.py",
    "tests/whitebox/test_second_audit_programs.py",
    "tests/whitebox/test_svt_certificate_programs.py",
    "tests/whitebox/test_winning_release_programs.py",
)


def run_cache_for(nodeid: str) -> str | None:
    """The compilation cache folder for a test (its node id): the run's, or ``None`` (off)."""
    return None if nodeid.split("::")[0] in COUNTING_FILES else RUN_CACHE_DIR


@pytest.fixture(autouse=True)
def _run_cache_for_this_test(request):
    """Tests of COUNTING_FILES compile without the run's cache, every other test with it
    (set again after a test that changed the cache choice, as the CLI's --no-cache does)."""
    folder = run_cache_for(request.node.nodeid)
    if folder is None and RUN_CACHE_DIR is not None:
        compilation_cache.disable_compilation_cache()
    elif folder is not None and jax.config.jax_compilation_cache_dir != folder:
        compilation_cache.enable_compilation_cache(folder)
    yield
    if folder is None and RUN_CACHE_DIR is not None:
        compilation_cache.enable_compilation_cache(RUN_CACHE_DIR)


# A suite of several audits run in-process (``main(["audit", DIR])``) drops JAX's compiled
# programs between its audits once the process holds more than SUITE_MEMORY_BYTES (1.2 GB,
# sized for a fresh ``dpaudit audit`` process). A test worker holds the programs of its
# earlier tests and stays above 1.2 GB after a few dozen of them, so nearly every suite test
# dropped every program between its audits and compiled them all again (test_spec of
# tests/whitebox/test_notion_entry_points.py: 8.6 s CPU after a drop, 1.5 s without;
# BENCHMARKS.md, "Default test suite, session 11"). In the test process the programs are
# dropped between test files instead (below), never inside a test, above 2 GB: after a drop
# a worker held 0.7 GB and regrew to 1.2 GB within about 15 tests, to 1.8 GB within 65
# (tests/whitebox), so 2 GB drops about every hundred tests with a peak near the 2.4 GB seen
# before. tests/core/test_memory.py tests the dropping with its own budgets; subprocesses
# keep the real budget.
dpaudit.core.memory.SUITE_MEMORY_BYTES = 1 << 40
FILE_MEMORY_BYTES = 2 << 30


@pytest.fixture(scope="module", autouse=True)
def _release_memory_between_files():
    """After each test file: above 2 GB resident, drop JAX's compiled programs (a file
    rarely shares programs with the next one, and a worker's memory stays bounded)."""
    yield
    resident = dpaudit.core.memory.resident_bytes()
    if resident is not None and resident > FILE_MEMORY_BYTES:
        dpaudit.core.memory.release_memory(FILE_MEMORY_BYTES)


# The heaviest test files first, heaviest first: `make test` runs one file per xdist worker
# at a time (--dist loadfile) and takes the files in collection order (--no-loadscope-reorder;
# xdist's own reorder puts files with many tests first, so the heavy files with few tests -
# one or two whole audits each - came last and one worker finished them alone). Order: CPU
# seconds per file (benchmarks/suite_files.py on tests/whitebox and tests/blackbox, wall for
# files whose work runs in subprocesses; CI run E's --durations elsewhere; BENCHMARKS.md,
# "Default test suite, session 12"); a file missing from the list keeps its place after them.
HEAVY_FILES = (
    "tests/blackbox/test_blackbox.py",
    "tests/whitebox/test_audit.py",
    "tests/runtime/test_ray.py",
    "tests/whitebox/test_supports.py",
    "tests/whitebox/test_first_audit_programs.py",
    "tests/blackbox/test_blackbox_specs.py",
    "tests/mechanisms/test_mechanisms_iclp.py",
    "tests/whitebox/test_second_audit_programs.py",
    "tests/whitebox/test_notion_audits.py",
    "tests/whitebox/test_continuous_latent.py",
    "tests/whitebox/test_user_subsampling.py",
    "tests/golden/test_golden.py",
    "tests/training/test_training_audit.py",
    "tests/mechanisms/test_hosmer_lemeshow_audit.py",
    "tests/whitebox/test_mixed_sites.py",
    "tests/whitebox/test_multisite.py",
    "tests/whitebox/test_engine.py",
    "tests/whitebox/test_process_history.py",
    "tests/training/test_training_bounds.py",
    "tests/mechanisms/test_ecdf.py",
    "tests/whitebox/test_parameterisations.py",
    "tests/accounting/test_suprema.py",
    "tests/blackbox/test_ratio_bound.py",
    "tests/runtime/test_shards.py",
    "tests/runtime/test_suite_workers.py",
    "tests/cli/test_explain.py",
    "tests/mechanisms/test_private_bandwidth.py",
    "tests/blackbox/test_blackbox_percall.py",
    "tests/cli/test_shipped_suite.py",
    "tests/mechanisms/test_statdp_mechanisms.py",
    "tests/testing/test_continuity.py",
    "tests/whitebox/test_heavy_compiles.py",
    "tests/test_readme.py",
    "tests/blackbox/test_blackbox_power.py",
    "tests/model/noise/test_noise.py",
    "tests/whitebox/test_notion_entry_points.py",
    "tests/whitebox/test_multisite_notions.py",
    "tests/io/schemas/test_schemas.py",
    "tests/model/test_loss.py",
)


def pytest_collection_modifyitems(config, items):
    """Put the tests of HEAVY_FILES first, in its order (a stable sort: each file's tests and
    every other file keep their order, so module fixtures and xdist's file groups are kept)."""
    rank = {name: i for i, name in enumerate(HEAVY_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


TEST_FAILURE_RATE = 1e-5

# the suite runs under the hypothesis profiles of the dpaudit pytest plugin, "ci" or "long"
# (importing the module registers them; its options and fixtures stay off)
settings.load_profile(f"dpaudit-{os.environ.get('HYPOTHESIS_PROFILE', 'ci')}")

assert jax.config.jax_enable_x64
