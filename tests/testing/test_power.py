"""assert_test_power_bounded: HRW Prop. 2.6 as a check, with a stated failure rate.

Oracles: closed-form sizes and powers of threshold tests for Laplace noise (the likelihood-ratio
test of the Laplace mechanism attains power = e^epsilon size exactly, so the check is tested
where it is tight) and scipy's Clopper-Pearson (beta quantiles). Failure rates: each call has
false-alarm probability at most 1e-6, so 20 seeds of a correct mechanism fail with probability
at most 2e-5 (<= about TEST_FAILURE_RATE); the detections below have power 1 - O(1e-30) per seed.
"""

import math

import jax
import jax.numpy as jnp
import pytest
import scipy.stats

import dpaudit
from dpaudit.testing import PowerCheck, TestPowerViolation, assert_test_power_bounded
from mechanisms.faulty import example_pair

SEEDS = range(100, 120)  # not used while writing the check


def _laplace_setting():
    mech = dpaudit.build("laplace-mean")  # n = 50 records in [0,1]^2, Laplace scale 0.04 per axis
    d = jnp.zeros((50, 2))
    return mech, d, d.at[0].set(1.0)  # means 0 and (0.02, 0.02): l1 shift 0.04 = Delta


def _lr_test(threshold):
    # rejects H: D when both coordinates exceed 0.02 + t: for t >= 0 the likelihood ratio is
    # e^epsilon on the whole region, so power = e^epsilon size (tight)
    return lambda x: jnp.all(x > 0.02 + threshold, axis=-1)


@pytest.mark.parametrize("seed", SEEDS)
def test_correct_laplace_mechanism_passes_at_the_tight_likelihood_ratio_test(seed):
    mech, d, d_prime = _laplace_setting()
    t = 0.02 * math.log(5.0) - 0.02  # size 0.25 e^{-2(0.02 + t)/0.04} = 0.05
    check = assert_test_power_bounded(
        mech, d, d_prime, _lr_test(t), level=0.05, samples=20_000, seed=seed
    )
    assert isinstance(check, PowerCheck) and not check.refuted
    assert check.level_bound == pytest.approx(0.05 * math.e)


def test_tight_test_power_matches_e_epsilon_times_size_and_clopper_pearson():
    """At the tight test the power estimate is within 5 standard errors of e * 0.05."""
    mech, d, d_prime = _laplace_setting()
    t = 0.02 * math.log(5.0) - 0.02
    check = assert_test_power_bounded(mech, d, d_prime, _lr_test(t), samples=50_000, seed=7)
    assert check.size.estimate == pytest.approx(0.05, abs=5 * math.sqrt(0.05 * 0.95 / 50_000))
    p = 0.05 * math.e
    assert check.power.estimate == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / 50_000))
    k, n = check.power.count, check.power.samples
    assert check.power.lower == pytest.approx(scipy.stats.beta.ppf(0.5e-6, k, n - k + 1))
    assert check.bound == pytest.approx(math.e * check.size.upper)


def test_gaussian_mechanism_with_delta_passes():
    mech = dpaudit.build("gaussian-mean-analytic")  # epsilon 2, delta 1e-3, sensitivity 0.02
    d = jnp.zeros(50)
    check = assert_test_power_bounded(
        mech, d, d.at[0].set(1.0), lambda x: x[:, 0] > 0.05, samples=20_000, seed=3
    )
    assert check.delta == 1e-3 and not check.refuted


@pytest.mark.parametrize("seed", SEEDS[:5])
def test_faulty_histogram_is_detected(seed):
    """faulty/histogram-scale-epsilon: scale 0.5 for epsilon 0.5 (true epsilon 2). Bin 2 holds 1
    record in D and 2 in D'; rejecting when it reads above 1.5 has size 0.5 e^-1 = 0.18 and
    power 1 - 0.5 e^-1 = 0.82 > e^0.5 0.18 = 0.30."""
    mech = dpaudit.build("faulty/histogram-scale-epsilon")
    d, d_prime = example_pair("faulty/histogram-scale-epsilon")
    with pytest.raises(TestPowerViolation, match="refutes") as info:
        assert_test_power_bounded(
            mech, d, d_prime, lambda x: x[:, 2] > 1.5, samples=5_000, seed=seed
        )
    check = info.value.check
    assert check.refuted and check.power.lower > check.bound


def _randomised_response(data, key, n):  # one bit flipped with probability 1/4: epsilon log 3
    return jnp.where(jax.random.bernoulli(key, 0.25, (n,)), 1 - data, data)


def test_plain_sampler_passes_its_true_epsilon_and_fails_a_smaller_one():
    check = assert_test_power_bounded(
        _randomised_response, 0, 1, lambda x: x == 1, epsilon=math.log(3.0), samples=20_000
    )
    assert check.power.estimate == pytest.approx(3 * check.size.estimate, rel=0.1)
    with pytest.raises(TestPowerViolation):
        assert_test_power_bounded(
            _randomised_response, 0, 1, lambda x: x == 1, epsilon=0.5, samples=20_000
        )


def test_bad_inputs_are_refused_in_one_sentence():
    with pytest.raises(ValueError, match="give epsilon"):
        assert_test_power_bounded(_randomised_response, 0, 1, lambda x: x == 1)
    mech, d, d_prime = _laplace_setting()
    with pytest.raises(TypeError, match="booleans"):
        assert_test_power_bounded(mech, d, d_prime, lambda x: x.sum(-1), samples=100)
    with pytest.raises(ValueError, match="not of level"):
        assert_test_power_bounded(
            mech, d, d_prime, lambda x: x[:, 0] > -1, level=0.05, samples=2_000
        )
    with pytest.raises(ValueError, match="failure_rate"):
        assert_test_power_bounded(mech, d, d_prime, _lr_test(0.0), failure_rate=0)
    with pytest.raises(TypeError, match="sampler"):
        assert_test_power_bounded("laplace", d, d_prime, _lr_test(0.0))
