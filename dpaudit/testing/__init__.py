"""Tools to regression-test DP mechanisms in your own CI (pytest + hypothesis).

* :mod:`dpaudit.testing.record_spaces` — the data bound a sensitivity claim is
  about: :class:`L2Ball` (curves on a grid, or vectors), :class:`Box`,
  :class:`Labels`, :class:`Product`.
* :mod:`dpaudit.testing.strategies` — hypothesis strategies for datasets and
  neighbouring pairs (curves, points, labelled points, scores with labels).
* :func:`worst_neighbours` — worst-case neighbour search (projected gradient
  ascent, random search, differential evolution) returning a :class:`WorstCase`.
* Assertions — :func:`assert_sensitivity_bound`, :func:`assert_compatible`,
  :func:`assert_dp`, raising an ``AssertionError`` that names the counterexample.
* :func:`assert_test_power_bounded` — HRW Prop. 2.6 as a check: a test's
  certified power on ``D'`` must stay below ``e^epsilon size + delta``.
* :func:`find_sensitivity_violation` / :func:`assert_arithmetic_sensitivity`
  (:mod:`dpaudit.testing.arithmetic`) — the sensitivity of *implemented* arithmetic:
  the user's summary run on neighbouring datasets that stress floats and fixed-width
  integers, a failing pair shrunk and printed with implemented and idealised differences.
* :mod:`dpaudit.testing.plugin` — an optional pytest plugin (profiles, fixtures).

Example (a test file)::

    import jax.numpy as jnp
    from dpaudit.model.spaces import uniform_grid
    from dpaudit.testing import L2Ball, assert_sensitivity_bound

    grid = uniform_grid(50)

    def test_mean_sensitivity():
        l2 = lambda h: jnp.sqrt(jnp.sum(grid.weights * h * h))
        assert_sensitivity_bound(lambda x: x.mean(0), l2, bound=2 / 20,
                                 record_space=L2Ball(1.0, grid), n=20)
"""

__all__ = [
    "Box",
    "CompatibilityViolation",
    "DPViolation",
    "L2Ball",
    "Labels",
    "NonDeterministicSummary",
    "PowerCheck",
    "Product",
    "RecordSpace",
    "SearchBudget",
    "SensitivityCounterexample",
    "SensitivityTarget",
    "SensitivityViolation",
    "TestPowerViolation",
    "WorstCase",
    "assert_arithmetic_sensitivity",
    "assert_compatible",
    "assert_dp",
    "assert_sensitivity_bound",
    "assert_test_power_bounded",
    "find_sensitivity_violation",
    "record_space_of",
    "sensitivity_target",
    "strategies",
    "worst_neighbours",
]

from dpaudit.testing import strategies as strategies
from dpaudit.testing.arithmetic import NonDeterministicSummary as NonDeterministicSummary
from dpaudit.testing.arithmetic import SensitivityCounterexample as SensitivityCounterexample
from dpaudit.testing.arithmetic import (
    assert_arithmetic_sensitivity as assert_arithmetic_sensitivity,
)
from dpaudit.testing.arithmetic import find_sensitivity_violation as find_sensitivity_violation
from dpaudit.testing.assertions import CompatibilityViolation as CompatibilityViolation
from dpaudit.testing.assertions import DPViolation as DPViolation
from dpaudit.testing.assertions import SensitivityViolation as SensitivityViolation
from dpaudit.testing.assertions import assert_compatible as assert_compatible
from dpaudit.testing.assertions import assert_dp as assert_dp
from dpaudit.testing.assertions import assert_sensitivity_bound as assert_sensitivity_bound
from dpaudit.testing.power import PowerCheck as PowerCheck
from dpaudit.testing.power import TestPowerViolation as TestPowerViolation
from dpaudit.testing.power import assert_test_power_bounded as assert_test_power_bounded
from dpaudit.testing.record_spaces import Box as Box
from dpaudit.testing.record_spaces import L2Ball as L2Ball
from dpaudit.testing.record_spaces import Labels as Labels
from dpaudit.testing.record_spaces import Product as Product
from dpaudit.testing.record_spaces import RecordSpace as RecordSpace
from dpaudit.testing.record_spaces import record_space_of as record_space_of
from dpaudit.testing.search import SearchBudget as SearchBudget
from dpaudit.testing.search import SensitivityTarget as SensitivityTarget
from dpaudit.testing.search import WorstCase as WorstCase
from dpaudit.testing.search import sensitivity_target as sensitivity_target
from dpaudit.testing.search import worst_neighbours as worst_neighbours
