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

import jax
from hypothesis import settings

import dpaudit  # enables jax_enable_x64
import dpaudit.core.memory
import dpaudit.testing.plugin  # (registers the dpaudit-ci / dpaudit-long profiles)

# A suite of several audits (``dpaudit audit DIR`` in-process) drops JAX's compiled programs
# between audits once the process holds more than SUITE_MEMORY_BYTES (1.2 GB, sized for a
# fresh ``dpaudit audit`` process). A test worker holds the programs of hundreds of earlier
# tests and passed 1.2 GB within tests/whitebox, so every suite test dropped every program
# between its audits and each later test compiled its programs again (BENCHMARKS.md,
# "Default test suite, session 11"). A worker drops them above 4 GB instead (bounded memory on
# a shared CI machine). tests/core/test_memory.py tests the dropping with its own budgets;
# subprocesses keep the real budget.
dpaudit.core.memory.SUITE_MEMORY_BYTES = 4 << 30

TEST_FAILURE_RATE = 1e-5

# the suite runs under the hypothesis profiles of the dpaudit pytest plugin, "ci" or "long"
# (importing the module registers them; its options and fixtures stay off)
settings.load_profile(f"dpaudit-{os.environ.get('HYPOTHESIS_PROFILE', 'ci')}")

assert jax.config.jax_enable_x64
