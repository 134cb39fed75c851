"""Issue 34: a model that draws from a non-JAX random source while traced is refused.

Its release law changes from one trace to the next, so an audit would compare two different
mechanisms (a correct Laplace mean was reported a violation in 6 of 7 audits, a pass once).
"""

import random

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from compile_counts import count_compilations

import dpaudit
from dpaudit.model.traced_randomness import check_traced_randomness

N = 10
D0 = jnp.zeros((N, 1))
D1 = D0.at[0, 0].set(1.0)


def _mechanism(offset):
    def model(data):
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0)) + offset()
        numpyro.sample("release", dist.Laplace(mean, 1.0 / N))

    return dpaudit.Mechanism(
        "mean", model, dpaudit.Claim(epsilon=1.0, sensitivity=1 / N, sensitivity_norm="l1")
    )


@pytest.mark.parametrize(
    "offset",
    # the global np.random generator is the case under test
    [lambda: np.random.normal(0.0, 0.1), lambda: random.gauss(0.0, 0.1)],  # noqa: NPY002
    ids=["np.random", "random"],
)
def test_a_model_drawing_outside_numpyro_is_refused_by_audit(offset):
    with pytest.raises(ValueError, match="draws from a random source outside numpyro") as err:
        dpaudit.audit(_mechanism(offset), D0, D1, samples=1000, progress=False)
    assert "'mean'" in str(err.value) and "site 'release'" in str(err.value)
    assert len(str(err.value).splitlines()) == 1


def test_a_scale_drawn_outside_numpyro_is_seen_in_the_density():
    def model(data):
        scale = 1.0 + np.random.uniform()  # noqa: NPY002 - the global generator under test
        numpyro.sample("release", dist.Laplace(jnp.mean(data), scale))

    with pytest.raises(ValueError, match="differ"):
        check_traced_randomness(model, D0, "scale")


def test_a_seeded_numpy_generator_inside_the_model_is_accepted():
    # the same numbers on every trace: a constant of the mechanism, not hidden randomness
    check_traced_randomness(_mechanism(lambda: np.random.default_rng(5).normal()).model, D0, "m")


def test_sites_that_appear_in_one_trace_only_are_refused():
    rng = np.random.default_rng(1)

    def model(data):
        if rng.uniform() < 0.5:
            numpyro.sample("a", dist.Normal(0.0, 1.0))
        numpyro.sample("release", dist.Normal(jnp.mean(data), 1.0))

    with pytest.raises(ValueError, match="sample sites"):
        for _ in range(20):
            check_traced_randomness(model, D0, "branching")


def test_a_user_law_whose_density_draws_outside_numpyro_is_still_refused():
    """Equal parameters prove equal densities only for numpyro's and dpaudit's own laws."""

    class NoisyLaplace(dist.Laplace):
        def log_prob(self, value):
            return super().log_prob(value) + np.random.uniform()  # noqa: NPY002

    def model(data):
        numpyro.sample("release", NoisyLaplace(jnp.mean(data), 1.0))

    with pytest.raises(ValueError, match="log densities at site 'release'"):
        check_traced_randomness(model, D0, "noisy")


def test_equal_laws_are_compared_by_their_parameters_without_a_program():
    def model(data):
        numpyro.sample("release", dist.Laplace(jnp.mean(data), 1.0).expand([3]).to_event(1))

    numpyro.handlers.seed(model, 0)(D0)  # the model's own operations compile here
    with count_compilations() as compiled:
        check_traced_randomness(model, D0, "laplace")
    assert compiled[0] == 0


def test_an_observed_site_with_a_parameter_drawn_outside_numpyro_is_refused():
    # the value is the data's (equal in both traces): only the law's parameters differ
    def model(data):
        loc = np.random.normal()  # noqa: NPY002 - the global generator under test
        numpyro.sample("release", dist.Normal(loc, 1.0), obs=jnp.mean(data))

    with pytest.raises(ValueError, match="log densities at site 'release'"):
        check_traced_randomness(model, D0, "observed")


class _ClosureLaw(dist.Normal):
    """A law whose density reads a function attribute: its parameters cannot be compared."""

    def __init__(self, loc, shift):
        super().__init__(loc, 1.0)
        self.shift = lambda x: x + shift

    def log_prob(self, value):
        return super().log_prob(self.shift(value))


def test_a_random_number_kept_in_a_closure_of_the_law_is_seen_in_the_density():
    def hidden(data):  # the random number lives in a closure, outside the compared attributes
        law = _ClosureLaw(jnp.mean(data), np.random.normal())  # noqa: NPY002
        numpyro.sample("release", law, obs=jnp.mean(data))

    with pytest.raises(ValueError, match="log densities at site 'release'"):
        check_traced_randomness(hidden, D0, "closure")
