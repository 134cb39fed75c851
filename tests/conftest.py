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
from hypothesis import HealthCheck, settings

import dpaudit  # noqa: F401  (enables jax_enable_x64)

TEST_FAILURE_RATE = 1e-5

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("long", max_examples=2000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

assert jax.config.jax_enable_x64
