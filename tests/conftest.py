"""Shared test configuration.

Statistical tests draw with fixed seeds; each is calibrated so that, for a
random seed, it would fail spuriously with probability at most
``TEST_FAILURE_RATE`` (numpyro's convention), far below 1 / (number of
statistical tests in the suite).

Hypothesis runs the derandomized ``ci`` profile by default so CI is
reproducible; ``HYPOTHESIS_PROFILE=long`` explores far more examples locally.
"""

import os

import jax
from hypothesis import settings

import dpaudit  # enables jax_enable_x64
import dpaudit.testing.plugin  # noqa: F401  (registers the dpaudit-ci / dpaudit-long profiles)

TEST_FAILURE_RATE = 1e-5

# the suite runs under the hypothesis profiles of the dpaudit pytest plugin, "ci" or "long"
# (importing the module registers them; its options and fixtures stay off)
settings.load_profile(f"dpaudit-{os.environ.get('HYPOTHESIS_PROFILE', 'ci')}")

assert jax.config.jax_enable_x64
