"""White-box parity (issue 31, item 5): implementation law against its model, level and power."""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from scipy import stats

import dpaudit
from dpaudit.blackbox import check_parity, numpy_generator
from dpaudit.blackbox.parity import kolmogorov_distance

# A statistical assertion below fails by chance with at most this probability.
TEST_FAILURE_RATE = 2e-5


def _laplace_model(data):
    numpyro.sample("release", dist.Laplace(jnp.sum(data), 1.0))


MECH = dpaudit.Mechanism("laplace-sum", _laplace_model, dpaudit.Claim(1.0))
DATA = jnp.zeros(3)


def numpy_laplace(data, n, key, scale=1.0, shift=0.0):
    return float(np.sum(data)) + shift + numpy_generator(key).laplace(0.0, scale, n)


def test_kolmogorov_distance_matches_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=500), np.round(rng.normal(0.2, 1, 700), 1)  # ties
    assert kolmogorov_distance(x, y) == pytest.approx(stats.ks_2samp(x, y).statistic)


def test_the_implementation_of_its_model_is_consistent():
    res = check_parity(numpy_laplace, MECH, DATA, samples=20_000, seed=1)
    assert res.verdict == "consistent" and res.distance < res.threshold


def test_a_wrong_scale_is_a_mismatch_even_though_the_model_passes():
    res = check_parity(
        lambda d, n, k: numpy_laplace(d, n, k, scale=1.15), MECH, DATA, samples=20_000
    )
    assert res.verdict == "mismatch" and "mismatch" in str(res)


def test_level_equal_laws_rarely_mismatch():
    # P(mismatch) <= alpha = 0.05 per run; 40 runs: more than 9 has probability < 2e-5.
    verdicts = [check_parity(numpy_laplace, MECH, DATA, samples=2000, seed=s).verdict
                for s in range(40)]  # fmt: skip
    assert verdicts.count("mismatch") <= stats.binom.ppf(1 - TEST_FAILURE_RATE, 40, 0.05)


def test_power_at_the_detectable_distance():
    # Laplace(0, 1) vs Laplace(s, 1): Kolmogorov distance 1 - exp(-s/2) (at t = s/2).
    n = 5000
    detectable = check_parity(numpy_laplace, MECH, DATA, samples=n).detectable_distance
    shift = -2 * np.log(1 - detectable)
    found = [check_parity(lambda d, m, k: numpy_laplace(d, m, k, shift=shift), MECH, DATA,
                          samples=n, seed=s).verdict for s in range(10)]  # fmt: skip
    assert found == ["mismatch"] * 10  # power >= 0.95 each (in fact far higher)


def test_bad_input():
    with pytest.raises(ValueError, match="alpha must be in"):
        check_parity(numpy_laplace, MECH, DATA, alpha=1.5)
    with pytest.raises(ValueError, match="NaN releases"):
        check_parity(lambda d, n, k: np.full(n, np.nan), MECH, DATA, samples=10)
    with pytest.raises(ValueError, match="values each but the model's"):
        check_parity(lambda d, n, k: np.zeros((n, 2)), MECH, DATA, samples=10)
    with pytest.raises(TypeError, match="reference must be"):
        check_parity(numpy_laplace, "laplace", DATA)


def test_jax_sampler_of_the_model_itself():
    def jax_laplace(data, n, key):
        return jnp.sum(data) + jax.random.laplace(key, (n,))

    assert check_parity(jax_laplace, MECH, DATA, samples=20_000, seed=3).verdict == "consistent"
