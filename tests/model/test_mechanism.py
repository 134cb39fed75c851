"""The mechanism record: Claim validation, reading a model's release density, adjacency."""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.stats

import dpaudit
from dpaudit import Claim, KnownFlaw, Mechanism, check_adjacent
from dpaudit.model.registry import register, unregister


def laplace_mean(n=50, epsilon=1.0, bound=1.0):
    def model(data):
        mean = jnp.mean(jnp.clip(data, 0.0, bound))
        numpyro.sample("release", dist.Laplace(mean, bound / (n * epsilon)))

    return Mechanism(
        name="laplace-mean",
        model=model,
        claim=Claim(epsilon=epsilon, sensitivity=bound / n, sensitivity_norm="l1"),
        summary=lambda data: jnp.mean(jnp.clip(data, 0.0, bound)),
        difference_norm=jnp.abs,
        params={"n": n, "epsilon": epsilon, "bound": bound},
    )


def test_release_log_prob_matches_scipy():
    mech = laplace_mean()
    data = jnp.linspace(0.0, 1.0, 50)
    x = jnp.array([0.3, 0.5, 0.9])
    expected = scipy.stats.laplace(loc=0.5, scale=1 / 50).logpdf(np.asarray(x))
    np.testing.assert_allclose(mech.release_log_prob(data, x), expected, rtol=1e-12)


def test_sample_and_distance():
    mech = laplace_mean()
    data = jnp.full(50, 0.2)
    draws = mech.sample(data, jax.random.key(0), 20_000)
    assert draws.shape == (20_000,)
    # mean of 20000 Laplace(0.2, 0.02) draws: sd of the mean = 0.02 sqrt(2) / sqrt(20000) = 2e-4
    assert abs(float(draws.mean()) - 0.2) < 5 * 2e-4 * 1.0
    prime = data.at[0].set(1.0)
    assert math.isclose(float(mech.distance(data, prime)), 0.8 / 50, rel_tol=1e-12)
    assert float(mech.distance(data, prime)) <= mech.claim.sensitivity


def test_params_are_read_only():
    mech = laplace_mean()
    with pytest.raises(TypeError):
        mech.params["n"] = 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        mech.name = "other"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 0.0}, "epsilon = 0 needs a delta > 0"),
        ({"epsilon": -1.0}, "epsilon must be a finite number >= 0"),
        ({"epsilon": math.inf}, "epsilon must be a finite number >= 0"),
        ({"epsilon": 1.0, "delta": 1.0}, "0 <= delta < 1"),
        ({"epsilon": 1.0, "delta": -0.1}, "0 <= delta < 1"),
        ({"epsilon": 1.0, "adjacency": "swap"}, "adjacency must be one of"),
        ({"epsilon": 1.0, "sensitivity": 1.0}, "go together"),
        ({"epsilon": 1.0, "sensitivity": 1.0, "sensitivity_norm": "sup"}, "must be one of"),
        ({"epsilon": 1.0, "sensitivity": -1.0, "sensitivity_norm": "l1"}, "sensitivity must be"),
    ],
)
def test_claim_rejects_bad_fields(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Claim(**kwargs)


def test_claim_type_errors_and_pure():
    with pytest.raises(TypeError, match="epsilon must be a number"):
        Claim(epsilon="1")
    assert Claim(epsilon=1).pure and not Claim(epsilon=1, delta=1e-5).pure
    assert isinstance(Claim(epsilon=1).epsilon, float)


def test_known_flaw_validation():
    with pytest.raises(ValueError, match="say what is wrong"):
        KnownFlaw(reason="")
    assert KnownFlaw("sigma too small", true_epsilon=math.sqrt(2)).true_epsilon == math.sqrt(2)


def test_missing_release_site_is_a_clear_error():
    def model(data):
        numpyro.sample("output", dist.Normal(jnp.mean(data), 1.0))

    mech = Mechanism("no-site", model, Claim(epsilon=1.0))
    with pytest.raises(ValueError, match=r"no sample site named 'release'.*\['output'\]"):
        mech.release_log_prob(jnp.zeros(3), 0.0)


def test_mechanism_type_errors():
    with pytest.raises(TypeError, match="model must be callable"):
        Mechanism("x", model=3, claim=Claim(epsilon=1.0))
    with pytest.raises(TypeError, match=r"claim must be a dpaudit\.Claim"):
        Mechanism("x", model=lambda d: None, claim={"epsilon": 1.0})
    mech = Mechanism("x", model=lambda d: None, claim=Claim(epsilon=1.0))
    with pytest.raises(ValueError, match="declares no summary"):
        mech.distance(jnp.zeros(2), jnp.ones(2))


def test_replace_one_adjacency():
    x = np.arange(12.0).reshape(4, 3)
    y = x.copy()
    y[2, 1] = -1.0
    check_adjacent(x, y)
    check_adjacent(x, x)
    z = y.copy()
    z[0, 0] = 99.0
    with pytest.raises(ValueError, match="differ in 2 records"):
        check_adjacent(x, z)
    with pytest.raises(ValueError, match="same number of records"):
        check_adjacent(x, x[:3])
    labels = np.array([0, 1, 0, 1])
    check_adjacent((x, labels), (x, labels.copy()))  # identical
    flipped = labels.copy()
    flipped[2] = 1
    check_adjacent((x, labels), (y, flipped))  # record 2 differs in both arrays
    flipped[1] = 0
    with pytest.raises(ValueError, match="differ in 2 records"):
        check_adjacent((x, labels), (y, flipped))


def test_add_remove_adjacency():
    x = np.arange(5.0)
    check_adjacent(x, np.delete(x, 2), "add-remove")
    check_adjacent(np.delete(x, 0), x, "add-remove")
    with pytest.raises(ValueError, match="no single added record"):
        check_adjacent(x, np.array([0.0, 1.0, 2.0, 7.0]), "add-remove")
    with pytest.raises(ValueError, match="differ by exactly one record"):
        check_adjacent(x, x, "add-remove")


def test_registry_builds_and_refuses_duplicates():
    @register("test-laplace-mean", example={"n": 10})
    def builder(n=50, epsilon=1.0):
        """A Laplace mean for the registry test."""
        return laplace_mean(n=n, epsilon=epsilon)

    try:
        assert "test-laplace-mean" in dpaudit.catalogue()
        mech = dpaudit.build("test-laplace-mean", epsilon=2.0)
        assert mech.params["n"] == 10 and mech.claim.epsilon == 2.0
        with pytest.raises(ValueError, match="already registered"):
            register("test-laplace-mean")(laplace_mean)
        with pytest.raises(ValueError, match="no mechanism named 'nope'"):
            dpaudit.build("nope")
    finally:
        unregister("test-laplace-mean")


def test_sensitivity_norm_is_a_deprecated_alias_of_difference_norm():
    mech = laplace_mean()
    assert mech.difference_norm is jnp.abs
    with pytest.warns(DeprecationWarning, match="difference_norm"):
        assert mech.sensitivity_norm is jnp.abs
    with pytest.warns(DeprecationWarning, match="difference_norm"):
        old = Mechanism(
            name="old-keyword",
            model=mech.model,
            claim=mech.claim,
            summary=mech.summary,
            sensitivity_norm=jnp.abs,
        )
    assert old.difference_norm is jnp.abs
    with pytest.raises(TypeError, match="not both"):
        Mechanism(
            name="both",
            model=mech.model,
            claim=mech.claim,
            difference_norm=jnp.abs,
            sensitivity_norm=jnp.abs,
        )
    replaced = dataclasses.replace(mech, name="renamed", difference_norm=jnp.square)
    assert replaced.name == "renamed" and replaced.difference_norm is jnp.square
    assert replaced.params == mech.params and replaced.claim is mech.claim
    assert dataclasses.replace(mech) == mech
