"""The density route sums per-coordinate log-density differences once (issue 29, item 5).

``loss_at_releases`` equals the difference of the two whole log densities up to float64
round-off, resolves an impossible coordinate as the whole-density rule does (``+inf``
outside Q's support, ``-inf`` outside P's, NaN outside both), and falls back to the whole
densities for laws without independent coordinates.
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

from dpaudit.model.densities import combine_log_probs, site_log_prob
from dpaudit.model.loss import coordinate_log_probs, loss_at_releases
from dpaudit.model.noise import GaussianProcessNoise, ICLPNoise

LAM = np.arange(1, 9.0) ** -2.0  # numpy: nothing runs on JAX while the suite is collected


def _pairs():
    loc = jnp.linspace(-1.0, 1.0, 8)
    return {
        "laplace-to-event": (
            dist.Laplace(loc, 0.7).to_event(1),
            dist.Laplace(0.0, 0.7 * jnp.ones(8)).to_event(1),
        ),
        "normal-batch": (dist.Normal(loc, 1.3), dist.Normal(loc + 0.2, 1.3)),
        "iclp": (ICLPNoise(LAM, 1.0, loc=0.1 * loc), ICLPNoise(LAM, 1.0)),
        "gp": (GaussianProcessNoise(LAM, 2.0, loc=0.1 * loc), GaussianProcessNoise(LAM, 2.0)),
    }


# the names only: building the pairs at collection cost about 0.5 s of JAX in every worker
@pytest.mark.parametrize("name", ["laplace-to-event", "normal-batch", "iclp", "gp"])
def test_the_sum_of_differences_is_the_difference_of_the_sums(name):
    p, q = _pairs()[name]
    x = p.sample(jax.random.key(3), (500,))
    terms = coordinate_log_probs(p, x)
    assert terms.shape == (500, 8)  # per coordinate: one reduction per release
    np.testing.assert_allclose(np.sum(terms, axis=1), site_log_prob(p, x), rtol=1e-13)
    whole = combine_log_probs(site_log_prob(p, x), site_log_prob(q, x))
    scale = np.abs(site_log_prob(p, x)) + np.abs(site_log_prob(q, x))
    assert np.all(np.abs(loss_at_releases(p, q, x) - whole) <= 1e-13 * (1.0 + scale))


def test_impossible_coordinates_are_resolved_as_for_whole_densities():
    p = dist.Uniform(jnp.zeros(3), jnp.ones(3)).to_event(1)
    q = dist.Uniform(jnp.array([0.0, 0.5, 0.0]), jnp.array([1.0, 1.0, 2.0])).to_event(1)
    x = jnp.array([[0.2, 0.7, 0.3], [0.2, 0.1, 0.3], [0.2, 0.1, 1.5], [0.2, 0.7, 1.5]])
    loss = np.asarray(loss_at_releases(p, q, x))
    expected = np.asarray(combine_log_probs(site_log_prob(p, x), site_log_prob(q, x)))
    # densities 1 under P, 2 * 1/2 under Q; an impossible coordinate under Q, under P, both
    assert loss[0] == 0.0 and loss[1] == np.inf and np.isnan(loss[2]) and loss[3] == -np.inf
    np.testing.assert_array_equal(loss, expected)


def test_laws_without_independent_coordinates_use_the_whole_densities():
    p = dist.MultivariateNormal(jnp.zeros(2), jnp.array([[1.0, 0.3], [0.3, 1.0]]))
    q = dist.MultivariateNormal(jnp.ones(2), jnp.array([[1.0, 0.3], [0.3, 1.0]]))
    x = p.sample(jax.random.key(0), (10,))
    assert coordinate_log_probs(p, x) is None
    np.testing.assert_array_equal(
        loss_at_releases(p, q, x), combine_log_probs(site_log_prob(p, x), site_log_prob(q, x))
    )
