"""Calibration helpers against dp_accounting's Gaussian privacy-loss distribution."""

import math

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld

from dpaudit.model.noise import (
    analytic_gaussian_sigma,
    classical_gaussian_multiplier,
    classical_gaussian_sigma,
    gaussian_delta,
    iclp_sigma,
)


def accounting_delta(sigma, sensitivity, epsilon):
    loss = pld.from_gaussian_mechanism(
        standard_deviation=sigma, sensitivity=sensitivity, value_discretization_interval=1e-4
    )
    return loss.get_delta_for_epsilon(epsilon)


@pytest.mark.parametrize(
    ("epsilon", "mu"), [(0.1, 0.2), (0.5, 0.3), (1.0, 1.0), (2.0, 1.5), (8.0, 3.0)]
)
def test_exact_gaussian_delta_matches_dp_accounting(epsilon, mu):
    assert gaussian_delta(epsilon, mu) == pytest.approx(
        accounting_delta(1 / mu, 1.0, epsilon), rel=1e-6
    )


@pytest.mark.parametrize(
    ("sensitivity", "epsilon", "delta"), [(1.0, 1.0, 1e-5), (0.3, 0.2, 1e-3), (2.0, 5.0, 1e-8)]
)
def test_analytic_sigma_is_tight_and_conservative(sensitivity, epsilon, delta):
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    assert gaussian_delta(epsilon, sensitivity / sigma) <= delta  # conservative
    assert gaussian_delta(epsilon, sensitivity / (sigma * (1 - 1e-6))) > delta  # and tight
    assert accounting_delta(sigma, sensitivity, epsilon) == pytest.approx(delta, rel=1e-5)


def test_classical_calibration_is_conservative_then_invalid_for_large_epsilon():
    """c(delta) Delta/epsilon: see docs/paper-errors.md#mrs-epsilon-at-most-one."""
    assert classical_gaussian_multiplier(0.1) == pytest.approx(math.sqrt(2 * math.log(20)))
    sigma = classical_gaussian_sigma(2.0, 0.5, 1e-3)
    assert sigma == pytest.approx(math.sqrt(2 * math.log(2e3)) * 4.0)
    # very conservative for epsilon <= 1: about 100x smaller true delta at epsilon = 1
    assert gaussian_delta(1.0, 1.0 / classical_gaussian_sigma(1.0, 1.0, 0.01)) < 0.01 / 50
    # and invalid for large epsilon: sigma = c(0.01) Delta / 10 leaks delta ~ 0.0245
    mu = 10.0 / classical_gaussian_multiplier(0.01)
    assert gaussian_delta(10.0, mu) == pytest.approx(0.0245, abs=5e-4)
    with pytest.raises(ValueError, match="proven only for epsilon <= 1"):
        classical_gaussian_sigma(1.0, 10.0, 0.01)
    # the analytic calibration at epsilon = 10 does meet delta
    assert gaussian_delta(10.0, 1.0 / analytic_gaussian_sigma(1.0, 10.0, 0.01)) <= 0.01


def test_iclp_sigma():
    assert iclp_sigma(0.25, 0.5) == pytest.approx(math.sqrt(2) * 0.5)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: iclp_sigma(1.0, 0.0), "epsilon must be > 0"),
        (lambda: iclp_sigma(-1.0, 1.0), "sensitivity must be > 0"),
        (lambda: iclp_sigma(1.0, float("inf")), "epsilon must be finite"),
        (lambda: classical_gaussian_multiplier(0.0), "delta must lie strictly between 0 and 1"),
        (lambda: classical_gaussian_multiplier(1.0), "delta must lie strictly between 0 and 1"),
        (lambda: analytic_gaussian_sigma(1.0, 1.0, 1.5), "delta must lie strictly between 0 and 1"),
        (lambda: analytic_gaussian_sigma(1.0, -1.0, 0.1), "epsilon must be > 0"),
        (lambda: gaussian_delta(1.0, np.array([1.0, 0.0])), "mu must be > 0"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(("epsilon", "delta"), [(0.5, 1e-6), (1.0, 1e-5), (10.0, 0.1)])
def test_analytic_sigma_absorbs_norm_round_off_and_is_minimal_to_1e_11(epsilon, delta):
    """A pair whose computed norm exceeds the bound by round-off (1e-14 relative) still meets
    the claim, and sigma is within a relative 1e-11 of the exact root (the slack is 1e-12)."""
    sigma = analytic_gaussian_sigma(1.0, epsilon, delta)
    assert gaussian_delta(epsilon, (1.0 + 1e-14) / sigma) <= delta
    assert gaussian_delta(epsilon, 1.0 / (sigma * (1.0 - 1e-11))) > delta
