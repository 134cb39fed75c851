"""The engine's jitted steps: compiled once per shape, and no tracer escapes them.

A second audit of the same mechanism with the same shapes must compile nothing (the jitted
steps are module-level and take the noise and distributions as arguments), for the
closed-form and the density routes; and an audit under ``jax.checking_leaks`` must not leak
a tracer out of a jitted step.
"""

import warnings

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
import pytest
from compile_counts import count_compilations

import dpaudit
from dpaudit import Claim, Mechanism

N = 10
DATA, DATA_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)


def _laplace_mean(data):
    return numpyro.sample("release", dist.Laplace(jnp.mean(data), 1.0 / data.shape[0]))


MECHANISM = Mechanism(
    "laplace-mean", _laplace_mean, Claim(epsilon=1.0, sensitivity=1.0 / N, sensitivity_norm="l1")
)


def _audit(route, seed):
    return dpaudit.audit(
        MECHANISM, DATA, DATA_PRIME, samples=3000, seed=seed, route=route, chunk_size=1024
    )


@pytest.mark.parametrize("route", ["closed-form", "density"])
def test_second_audit_with_the_same_shapes_compiles_nothing(route):
    with count_compilations() as first:
        _audit(route, seed=1)
    with count_compilations() as second:
        result = _audit(route, seed=2)
    assert first[0] > 0  # the listener sees compilations at all
    assert second[0] == 0, f"{second[0]} new XLA compilation(s) on the {route} route"
    assert result.route == route


def _vector_mechanism(family: str, scale: float) -> Mechanism:
    """A 3-coordinate release of one family (``.to_event``, as users write it), noise ``scale``."""
    noise = dist.Laplace if family == "laplace" else dist.Normal

    def model(data):
        loc = jnp.mean(data) * jnp.array([1.0, 0.5, 0.25])
        return numpyro.sample("release", noise(loc, scale).to_event(1))

    delta = 0.0 if family == "laplace" else 1e-5
    claim = Claim(epsilon=2.0, delta=delta, sensitivity=1.75 / N, sensitivity_norm="l1")
    return Mechanism(f"{family}-vector-{scale}", model, claim)


@pytest.mark.parametrize("family", ["laplace", "gaussian"])
@pytest.mark.parametrize("route", ["closed-form", "density"])
def test_a_second_mechanism_of_the_same_family_and_shape_compiles_nothing(route, family):
    """Other noise parameters, same release shape: the law's parameters are jit arguments."""
    first_mechanism = _vector_mechanism(family, 1.0 / N)
    second_mechanism = _vector_mechanism(family, 3.0 / N)
    options = {"samples": 3000, "route": route, "chunk_size": 1024}
    with count_compilations() as first:
        dpaudit.audit(first_mechanism, DATA, DATA_PRIME, seed=1, **options)
    with count_compilations() as second:
        result = dpaudit.audit(second_mechanism, DATA, DATA_PRIME, seed=2, **options)
    assert first[0] > 0
    assert second[0] == 0, f"{second[0]} XLA compilation(s) for a second {family} mechanism"
    assert result.route == route
    assert result.verdict == "pass"


def test_no_tracer_leaks():
    with jax.checking_leaks():
        result = dpaudit.audit(MECHANISM, DATA, DATA_PRIME, samples=500, seed=0, chunk_size=256)
    assert result.verdict == "pass"


def test_method_is_a_deprecated_alias_of_bound_method():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = dpaudit.audit(MECHANISM, DATA, DATA_PRIME, samples=500, bound_method="hoeffding")
    with pytest.warns(DeprecationWarning, match="bound_method"):
        old = dpaudit.audit(MECHANISM, DATA, DATA_PRIME, samples=500, method="hoeffding")
    assert old.to_dict()["curves"] == new.to_dict()["curves"]
    assert new.directions[0].curve.method == "hoeffding"
    with pytest.raises(ValueError, match="bound_method"):
        dpaudit.audit(MECHANISM, DATA, DATA_PRIME, samples=500, bound_method="chernoff")
