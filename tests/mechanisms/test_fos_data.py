"""Function-on-scalar regression data (LR App. C.2) and the scalar slope of Alabi et al.

Oracles: numpy's least squares (the non-private slope), the public bounds checked directly, the
adjacency checker, and the Laplace variance 2 b^2 of the two noise terms (delta method).
"""

import math

import jax
import numpy as np
import pytest

import dpaudit
from mechanisms.iclp.beyond import alabi_slope, example_pair, fos_dataset


def test_fos_dataset_respects_the_public_bounds():
    x, y = fos_dataset(300, 3, tau=2.0, covariate_bound=1.5, seed=4)
    assert x.shape == (300, 3) and y.shape == (300, 100)
    assert np.all(np.linalg.norm(x, axis=1) <= 1.5 + 1e-12)
    assert np.all(np.sqrt(np.mean(y * y, axis=1)) <= 2.0 + 1e-12)
    np.testing.assert_allclose(x[:, 0], 1.5 / math.sqrt(3))  # the intercept column


def test_example_pair_is_adjacent_and_accepted_by_the_mechanism():
    mech = dpaudit.build("iclp-qr-fos-regression")
    d, d_prime = example_pair("iclp-qr-fos-regression")
    dpaudit.check_adjacent(d, d_prime, "replace-one")
    distance = float(mech.distance(d, d_prime))
    assert 0 < distance <= mech.claim.sensitivity  # the unit 1,nu sensitivity of the joint ICLP
    assert mech.summary(d).shape == mech.summary(d_prime).shape
    with pytest.raises(ValueError, match="no example pair"):
        example_pair("iclp-qr-kde")


def test_alabi_slope_is_least_squares_without_noise_and_has_the_delta_method_spread():
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 200)
    y = 0.7 * x + 0.1 * rng.standard_normal(200)
    assert float(alabi_slope(x, y, epsilon=1.0)) == pytest.approx(np.polyfit(x, y, 1)[0], rel=1e-12)
    keys = jax.random.split(jax.random.key(1), 4000)
    draws = np.asarray(jax.vmap(lambda k: alabi_slope(x, y, epsilon=2.0, key=k))(keys))
    cov, var = np.sum((x - x.mean()) * (y - y.mean())), np.sum((x - x.mean()) ** 2)
    # delta method: Var ~ (Var Z1 + slope^2 Var Z2) / var^2 with Var Z = 2 b^2, b = 1/(0.5 * 2)
    expected = (2.0 + (cov / var) ** 2 * 2.0) / var**2
    assert draws.var() == pytest.approx(expected, rel=0.15)
