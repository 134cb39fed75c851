"""Shared test configuration.

Statistical tests draw with fixed seeds; each is calibrated so that, for a
random seed, it would fail spuriously with probability at most
``TEST_FAILURE_RATE`` (numpyro's convention), far below 1 / (number of
statistical tests in the suite).

Hypothesis runs the derandomized ``ci`` profile by default so CI is
reproducible; ``HYPOTHESIS_PROFILE=long`` explores far more examples locally.
"""

import os

# The suite compiles without the persistent compilation cache (the compilation-count tests
# count backend compilations; a cache hit is none), and writes nothing to the user's cache.
# Subprocesses inherit it. tests/core/test_compilation_cache.py turns it on in tmp folders.
os.environ["DPAUDIT_CACHE"] = "0"
# The suite's xdist workers take a core each: no draw helper process beside them (it cannot
# pay, and each would hold ~190 MB). tests/blackbox/test_draw_helper.py turns it on.
os.environ.setdefault("DPAUDIT_DRAW_HELPER", "off")

import jax
import pytest
from hypothesis import settings

import dpaudit  # enables jax_enable_x64
import dpaudit.core.memory
import dpaudit.testing.plugin  # (registers the dpaudit-ci / dpaudit-long profiles)

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
