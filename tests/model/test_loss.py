"""Privacy losses: the density, model and closed-form routes agree; infinite losses; bad input."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit import Claim, Mechanism
from dpaudit.model.loss import (
    combine_log_probs,
    evaluate_release,
    noise_shift,
    privacy_loss,
    sample_losses,
)
from dpaudit.model.noise import GaussianProcessNoise, GridNoise, ICLPNoise
from dpaudit.model.spaces import cameron_martin_norm, one_c_norm, spectral_basis, uniform_grid

GRID = uniform_grid(32)
K = 8
LAM = np.arange(1, K + 1.0) ** -2.0


def fourier(t):
    return np.sqrt(2) * np.cos(np.pi * np.arange(1, K + 1) * t)


BASIS = spectral_basis(LAM, fourier, GRID)
SIGMA = 0.7


def _model(kind):
    """Release of the column mean of ``data`` (n, K) coefficient vectors, with noise ``kind``."""

    def model(data):
        coef = jnp.mean(data, axis=0)
        if kind == "iclp-grid":
            d = GridNoise(ICLPNoise(BASIS.eigenvalues, SIGMA), BASIS, loc=BASIS.reconstruct(coef))
        elif kind == "gp-grid":
            d = GridNoise(
                GaussianProcessNoise(BASIS.eigenvalues, SIGMA), BASIS, loc=BASIS.reconstruct(coef)
            )
        elif kind == "iclp-coef":
            d = ICLPNoise(BASIS.eigenvalues, SIGMA, loc=coef)
        elif kind == "gp-coef":
            d = GaussianProcessNoise(BASIS.eigenvalues, SIGMA, loc=coef)
        elif kind == "laplace":
            d = dist.Laplace(coef, 0.3).to_event(1)
        elif kind == "mvn":
            d = dist.MultivariateNormal(coef, scale_tril=TRIL)
        else:  # "normal", unwrapped batch: the site density is the sum over the batch
            d = dist.Normal(coef, 0.4)
        numpyro.sample("release", d)

    return model


KINDS = ("iclp-grid", "gp-grid", "iclp-coef", "gp-coef", "laplace", "normal", "mvn")
TRIL = jnp.asarray(np.linalg.cholesky(0.3 * np.eye(K) + 0.1 * np.ones((K, K))))


def _mechanism(kind):
    return Mechanism(f"test-{kind}", _model(kind), Claim(epsilon=1.0))


def _pair(seed=0, n=5):
    rng = np.random.default_rng(seed)
    data = jnp.asarray(rng.normal(size=(n, K)) * 0.3)
    return data, data.at[0].set(jnp.asarray(rng.normal(size=K) * 0.3))


def test_combine_log_probs_never_forms_inf_minus_inf():
    lp = jnp.array([0.5, 0.5, -jnp.inf, -jnp.inf, 2.0])
    lq = jnp.array([1.5, -jnp.inf, 0.0, -jnp.inf, 2.0])
    out = np.asarray(combine_log_probs(lp, lq))
    np.testing.assert_array_equal(out[:4], [-1.0, np.inf, -np.inf, out[3]])
    assert np.isnan(out[3])  # outside both supports: the caller must reject it
    assert out[4] == 0.0


@pytest.mark.parametrize("kind", KINDS)
def test_density_model_and_closed_form_routes_agree(kind):
    mech = _mechanism(kind)
    data, data_prime = _pair()
    # releases from both laws (x ~ P_D and x ~ P_D'), so both directions' regions are covered
    x = jnp.concatenate(
        [
            mech.sample(data, jax.random.key(1), 64),
            mech.sample(data_prime, jax.random.key(2), 64),
        ]
    )
    density = np.asarray(privacy_loss(mech, data, data_prime, x, route="density"))
    model = np.asarray(privacy_loss(mech, data, data_prime, x, route="model"))
    closed = np.asarray(privacy_loss(mech, data, data_prime, x, route="closed-form"))
    assert np.all(np.isfinite(density))
    scale = 1 + np.abs(density)
    np.testing.assert_array_less(np.abs(model - density) / scale, 1e-10)
    np.testing.assert_array_less(np.abs(closed - density) / scale, 1e-9)
    # and the closed form is the Cameron–Martin / 1,C form of dpaudit.model.noise on the shift
    shift = noise_shift(mech.release_distribution(data), mech.release_distribution(data_prime))
    assert shift is not None and not shift.singular


@pytest.mark.parametrize("kind", ["gp-grid", "normal", "mvn"])
def test_gaussian_loss_is_normal_mu2_over_2_mu2(kind):
    """Under P_D the Gaussian loss is N(mu^2/2, mu^2), mu = ||h||_C / sigma (MRS Thm 3.3 proof)."""
    mech = _mechanism(kind)
    data, data_prime = _pair(3)
    h = np.asarray(jnp.mean(data, axis=0) - jnp.mean(data_prime, axis=0))
    if kind == "gp-grid":
        mu = float(cameron_martin_norm(h, LAM)) / SIGMA
    elif kind == "normal":
        mu = float(np.linalg.norm(h)) / 0.4
    else:  # h^T Sigma^-1 h
        mu = math.sqrt(float(h @ np.linalg.solve(np.asarray(TRIL @ TRIL.T), h)))
    n = 50_000
    for route in ("closed-form", "density"):
        loss = np.asarray(sample_losses(mech, data, data_prime, n, jax.random.key(7), route=route))
        z = (loss - mu**2 / 2) / mu
        # two KS tests (two routes) per kind, three kinds: Bonferroni over them
        assert scipy.stats.kstest(z, "norm").pvalue > TEST_FAILURE_RATE / 6


def test_iclp_loss_law_matches_composed_laplace_losses():
    """ICLP loss = sum of independent Laplace losses |u + a_j| - |u|, u ~ Lap(0, 1)."""
    mech = _mechanism("iclp-grid")
    data, data_prime = _pair(4)
    loss = np.asarray(sample_losses(mech, data, data_prime, 40_000, jax.random.key(8)))
    shift = noise_shift(mech.release_distribution(data), mech.release_distribution(data_prime))
    a = math.sqrt(2) * np.abs(shift.shift) / (shift.sigma * np.sqrt(shift.eigenvalues))
    u = np.random.default_rng(9).laplace(size=(40_000, a.size))
    reference = np.sum(np.abs(u + a) - np.abs(u), axis=1)
    assert scipy.stats.ks_2samp(loss, reference).pvalue > TEST_FAILURE_RATE


@settings(max_examples=25)
@given(
    h=st.lists(st.floats(-2, 2), min_size=6, max_size=6),
    sigma=st.floats(0.1, 3.0),
    decay=st.floats(0.5, 3.0),
)
def test_iclp_sup_loss_is_attained_at_the_centre(h, sigma, decay):
    """sup_x L(x) = sqrt(2) ||h||_{1,C} / sigma, attained at x = f_D, never exceeded.

    See docs/oracles.md#oracle-iclp-privacy-loss.
    """
    h = np.asarray(h)
    lam = np.arange(1, h.size + 1.0) ** -decay
    p = ICLPNoise(jnp.asarray(lam), sigma, loc=jnp.asarray(h))
    q = ICLPNoise(jnp.asarray(lam), sigma)
    sup = math.sqrt(2) * float(one_c_norm(jnp.asarray(h), jnp.asarray(lam))) / sigma
    loss, _, _, tol = evaluate_release(p, q, h)
    assert abs(loss - sup) <= tol
    x = p.sample(jax.random.key(0), (256,))
    losses = np.asarray(combine_log_probs(p.log_prob(x), q.log_prob(x)))
    assert np.all(np.abs(losses) <= sup * (1 + 1e-12) + 1e-12)


def test_singular_grid_pair_gives_infinite_loss_in_both_directions_without_nan():
    def model(data):
        loc = jnp.mean(data, axis=0)  # grid values: a rough curve leaves the 8-term span
        d = GridNoise(ICLPNoise(BASIS.eigenvalues, SIGMA), BASIS, loc=loc)
        numpyro.sample("release", d)

    mech = Mechanism("test-raw", model, Claim(epsilon=1.0))
    data = jnp.zeros((4, GRID.size))
    data_prime = data.at[0].set(jnp.where(GRID.points[:, 0] > 0.5, 1.0, 0.0))
    for a, b in ((data, data_prime), (data_prime, data)):
        loss = np.asarray(sample_losses(mech, a, b, 200, jax.random.key(0)))
        assert np.all(loss == np.inf)
        closed = np.asarray(sample_losses(mech, a, b, 200, jax.random.key(0), route="closed-form"))
        assert np.all(closed == np.inf)
    shift = noise_shift(mech.release_distribution(data), mech.release_distribution(data_prime))
    assert shift.singular and shift.residual_norm > 0.1


def test_release_outside_both_supports_is_an_error_not_a_number():
    mech = _mechanism("iclp-grid")
    data, data_prime = _pair()
    off = jnp.asarray(np.random.default_rng(0).normal(size=(3, GRID.size)))  # off both spans
    with pytest.raises(ValueError, match="NaN"):
        privacy_loss(mech, data, data_prime, off)


def test_nan_log_density_is_an_error():
    class NaNDensity(dist.Normal):
        def log_prob(self, value):
            return super().log_prob(value) * jnp.nan

    mech = Mechanism(
        "nan", lambda d: numpyro.sample("release", NaNDensity(jnp.mean(d), 1.0)), Claim(1.0)
    )
    with pytest.raises(ValueError, match="NaN"):
        sample_losses(mech, jnp.zeros(3), jnp.ones(3), 10, jax.random.key(0))


def test_release_distribution_without_density_is_a_type_error():
    class NoDensity(dist.Distribution):
        support = dist.constraints.real

        def __init__(self, loc):
            self.loc = loc
            super().__init__(batch_shape=(), event_shape=())

        def sample(self, key, sample_shape=()):
            return self.loc + jax.random.normal(key, sample_shape)

    mech = Mechanism("nodens", lambda d: numpyro.sample("release", NoDensity(d.mean())), Claim(1.0))
    with pytest.raises(TypeError, match="no density"):
        privacy_loss(mech, jnp.zeros(3), jnp.ones(3), jnp.zeros((2,)))


def test_model_without_release_site_is_a_value_error():
    mech = Mechanism(
        "nosite", lambda d: numpyro.sample("other", dist.Normal(d.mean(), 1.0)), Claim(1.0)
    )
    with pytest.raises(ValueError, match="release"):
        privacy_loss(mech, jnp.zeros(3), jnp.ones(3), jnp.zeros((2,)))


def test_bad_route_and_closed_form_without_structure():
    mech = Mechanism(
        "logistic",
        lambda d: numpyro.sample("release", dist.Logistic(jnp.mean(d), 1.0)),
        Claim(1.0),
    )
    with pytest.raises(ValueError, match="route"):
        privacy_loss(mech, jnp.zeros(3), jnp.ones(3), jnp.zeros((2,)), route="magic")
    with pytest.raises(ValueError, match="closed-form"):
        privacy_loss(mech, jnp.zeros(3), jnp.ones(3), jnp.zeros((2,)), route="closed-form")
    # the density route works for any distribution with a log_prob: Logistic losses are
    # bounded by |h| / s
    x = jnp.linspace(-30, 30, 101)
    loss = np.asarray(privacy_loss(mech, jnp.zeros(3), jnp.array([1.0, 0.0, 0.0]), x))
    assert np.all(np.abs(loss) <= 1 / 3 + 1e-12) and np.max(np.abs(loss)) > 0.33


def test_sampling_is_reproducible_and_noise_shift_needs_equal_noise():
    mech = _mechanism("gp-coef")
    data, data_prime = _pair()
    a = sample_losses(mech, data, data_prime, 1000, jax.random.key(3), chunk_size=300)
    b = sample_losses(mech, data, data_prime, 1000, jax.random.key(3), chunk_size=300)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    p = GaussianProcessNoise(BASIS.eigenvalues, 1.0)
    assert noise_shift(p, GaussianProcessNoise(BASIS.eigenvalues, 2.0)) is None
    assert noise_shift(p, ICLPNoise(BASIS.eigenvalues, 1.0)) is None
    assert noise_shift(dist.Normal(0.0, 1.0), dist.Normal(1.0, 2.0)) is None
    s = noise_shift(dist.Laplace(jnp.ones(3), 0.5).to_event(1), dist.Laplace(0.0, 0.5).expand([3]))
    assert s is None  # event shapes differ: no structure claimed
    s = noise_shift(dist.Laplace(jnp.ones(3), 0.5), dist.Laplace(jnp.zeros(3), 0.5))
    assert s.family == "laplace" and np.allclose(s.eigenvalues, 0.5) and np.allclose(s.shift, 1)
