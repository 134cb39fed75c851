"""Empirical PLD: hockey-stick terms, streaming moments, and the coverage of the confidence bounds."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit.estimation.pld import (
    delta_bounds,
    empirical_delta,
    epsilon_for_delta,
    epsilon_lower_for_delta,
    hockey_stick_curve,
    hockey_stick_terms,
    init_hockey_stick,
    interpolate_epsilon,
    update_hockey_stick,
)
from dpaudit.model.noise import gaussian_delta


def test_hockey_stick_terms_handle_infinite_losses():
    y = np.asarray(hockey_stick_terms(jnp.array([-1e6, 0.0, 1.0, jnp.inf]), jnp.array([0.0, 1.0])))
    np.testing.assert_allclose(y[0], [0.0, 0.0, 1 - math.exp(-1.0), 1.0])
    np.testing.assert_allclose(y[1], [0.0, 0.0, 0.0, 1.0])
    assert not np.any(np.isnan(y))


def test_empirical_delta_estimates_the_gaussian_curve():
    """E_P[(1 - e^(eps - L))_+] with L ~ N(mu^2/2, mu^2) is Balle–Wang's exact delta."""
    mu, n = 1.3, 400_000
    loss = np.random.default_rng(0).normal(mu**2 / 2, mu, n)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    est = empirical_delta(loss, eps)
    exact = gaussian_delta(eps, mu)
    y = np.asarray(hockey_stick_terms(loss, eps))
    se = y.std(axis=1) / math.sqrt(n)
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / (2 * eps.size))
    np.testing.assert_array_less(np.abs(est - exact), z * se)


@pytest.mark.parametrize("method", ["bernstein", "hoeffding"])
def test_confidence_bounds_have_their_stated_coverage(method):
    """Over many simulated runs each one-sided bound fails at most at its nominal rate.

    R runs of n Gaussian losses for two (mu, epsilon) cases with a known exact delta;
    each bound's failure count must stay below the Binomial(R, alpha) quantile at
    TEST_FAILURE_RATE / 8 (8 = 2 methods x 2 sides x 2 cases).
    """
    rng = np.random.default_rng(1 if method == "bernstein" else 2)
    runs, n, alpha = 2000, 1000, 0.1
    limit = scipy.stats.binom.isf(TEST_FAILURE_RATE / 8, runs, alpha)
    for mu, eps in ((1.0, 0.3), (2.0, 2.5)):
        exact = float(gaussian_delta(eps, mu))
        loss = rng.normal(mu**2 / 2, mu, size=(runs, n))
        y = -np.expm1(np.minimum(eps - loss, 0.0))
        mean, var = y.mean(axis=1), y.var(axis=1, ddof=1)
        lower, upper = delta_bounds(mean, var, n, alpha, method=method)
        assert np.sum(lower > exact) <= limit
        assert np.sum(upper < exact) <= limit
        # and the bounds are informative, not vacuous
        assert np.median(upper - lower) < 0.25


def test_bernstein_adapts_to_small_delta():
    """For a small delta the empirical Bernstein interval is much narrower than Hoeffding's."""
    mean, var, n = 1e-4, 1e-4, 1_000_000
    lo_b, hi_b = delta_bounds(mean, var, n, 0.01)
    _, hi_h = delta_bounds(mean, var, n, 0.01, method="hoeffding")
    assert hi_b - mean < 0.05 * (hi_h - mean)
    assert lo_b > 0  # a certified positive delta from 10^6 samples


_update = jax.jit(update_hockey_stick)


@settings(max_examples=25)
@given(
    losses=arrays(
        np.float64,
        40,
        elements=st.one_of(st.floats(-5, 5), st.just(np.inf)),
    ),
    cut=st.integers(1, 39),
)
def test_streaming_state_equals_batch_moments(losses, cut):
    """Chunked, masked updates (Chan et al.) reproduce the batch mean and sum of squares."""
    eps = jnp.array([0.0, 0.3, 1.0, 4.0])
    index = np.arange(losses.size)
    state = _update(init_hockey_stick(eps.size), losses, eps, index < cut)
    state = _update(state, losses, eps, index >= cut)
    y = np.asarray(hockey_stick_terms(losses, eps))
    assert int(state.count) == losses.size
    np.testing.assert_allclose(np.asarray(state.mean), y.mean(axis=1), atol=1e-12)
    m2 = ((y - y.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    np.testing.assert_allclose(np.asarray(state.m2), m2, atol=1e-10)
    assert float(state.max_loss) == losses.max()
    assert int(state.n_infinite) == int(np.sum(losses == np.inf))


def test_curve_from_state_and_nan_losses_are_rejected():
    eps = np.linspace(0, 3, 7)
    loss = np.random.default_rng(3).normal(0.5, 1.0, 5000)
    state = update_hockey_stick(init_hockey_stick(eps.size), loss, eps)
    curve = hockey_stick_curve(state, eps, 0.01)
    assert np.all(curve.lower <= curve.estimate) and np.all(curve.estimate <= curve.upper)
    assert np.all(np.diff(curve.estimate) <= 1e-15)  # delta(epsilon) is non-increasing
    bad = update_hockey_stick(state, jnp.array([jnp.nan, 1.0]), eps)
    assert int(bad.n_nan) == 1
    with pytest.raises(ValueError, match="NaN"):
        hockey_stick_curve(bad, eps, 0.01)
    with pytest.raises(ValueError, match="NaN"):
        empirical_delta(np.array([0.0, np.nan]), eps)


def test_epsilon_inversion_helpers():
    eps = np.array([0.0, 1.0, 2.0, 3.0])
    upper = np.array([0.5, 0.2, 0.05, 0.0])
    assert epsilon_for_delta(eps, upper, 0.1) == 2.0
    assert epsilon_for_delta(eps, upper + 1, 0.1) == math.inf
    assert epsilon_lower_for_delta(eps, upper, 0.1) == 1.0
    assert epsilon_lower_for_delta(eps, upper * 0, 0.1) == 0.0
    assert interpolate_epsilon(eps, upper, 0.125) == pytest.approx(1.5)
    assert interpolate_epsilon(eps, upper, 0.9) == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"failure_probability": 0.0}, "failure_probability"),
        ({"failure_probability": 1.5}, "failure_probability"),
        ({"method": "magic"}, "method"),
        ({"n": 1}, "two samples"),
    ],
)
def test_bad_bound_arguments(kwargs, match):
    args = {"mean": 0.1, "variance": 0.01, "n": 100, "failure_probability": 0.05, **kwargs}
    with pytest.raises(ValueError, match=match):
        delta_bounds(**args)
