"""A log density that underflows or overflows is named as such, with the fix.

``log(prod(pdf))`` over 160 coordinates is ``-inf`` (every pdf below 1/100: the product
underflows) or ``+inf`` (every pdf near 500: it overflows) under both datasets at once,
so the loss ``log p - log p'`` is NaN; the error says both log densities are infinite
and to sum log densities instead, not merely "NaN losses".
"""

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
import pytest
from numpyro.distributions import constraints

import dpaudit

D, D_PRIME = jnp.zeros(5), jnp.zeros(5).at[0].set(1.0)


class ProductLaplace(dist.Distribution):
    """Laplace coordinates whose log density is written as ``log(prod(pdf))``."""

    arg_constraints = {}
    support = constraints.real_vector

    def __init__(self, loc, scale):
        self.loc, self.scale = loc, scale
        super().__init__(batch_shape=(), event_shape=jnp.shape(loc))

    def sample(self, key, sample_shape=()):
        return self.loc + self.scale * jax.random.laplace(key, sample_shape + self.event_shape)

    def log_prob(self, value):
        pdf = jnp.exp(-jnp.abs(value - self.loc) / self.scale) / (2 * self.scale)
        return jnp.log(jnp.prod(pdf, axis=-1))


def _mechanism(scale):
    def model(data):
        numpyro.sample("release", ProductLaplace(jnp.sum(data) * jnp.ones(160), scale))

    return dpaudit.Mechanism("product", model, dpaudit.Claim(1.0, 1e-5))


@pytest.mark.parametrize(
    ("scale", "record", "value"),
    # pdf ~ 1/200 (underflow to 0); pdf ~ 500 under both laws, a record of 1e-4 (overflow)
    [(100.0, 1.0, "-inf"), pytest.param(1e-3, 1e-4, "inf", marks=pytest.mark.slow)],
)
def test_both_log_densities_infinite_is_named_with_the_fix(scale, record, value):
    pattern = (
        rf"both log densities are infinite \(log p = log p' = {value}\).*log\(prod\(pdf\)\)"
        r".*sum of log densities"
    )
    with pytest.raises(ValueError, match=pattern):
        dpaudit.audit(_mechanism(scale), D, D.at[0].set(record), samples=64, seed=0)


@pytest.mark.slow
def test_the_same_law_with_summed_log_densities_audits():
    def model(data):
        numpyro.sample("release", dist.Laplace(jnp.sum(data) * jnp.ones(160), 100.0).to_event(1))

    # 160 coordinates each shifted by 1 at scale 100: sup L = 1.6 exactly
    mech = dpaudit.Mechanism("summed", model, dpaudit.Claim(1.7))
    result = dpaudit.audit(mech, D, D_PRIME, samples=64, seed=0)
    assert result.verdict == "pass" and result.exact.sup_loss == pytest.approx(1.6)
