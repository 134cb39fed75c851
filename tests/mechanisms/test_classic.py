"""Classic mechanisms: noise laws against scipy (GOF), exact argmax/SVT laws, calibration."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from conftest import TEST_FAILURE_RATE

import dpaudit
from mechanisms.classic import NoisyArgmax


def _chi2_pvalue(samples, probs, support=None):
    """Chi-square GOF on the support (0..k-1 by default); sparse cells pooled."""
    samples = np.asarray(samples)
    support = np.arange(len(probs)) if support is None else np.asarray(support)
    counts = np.array([(samples == v).sum() for v in support], dtype=float)
    expected = np.asarray(probs, dtype=float) * len(samples)
    keep = expected >= 5
    obs, exp = counts[keep], expected[keep]
    rest = len(samples) - exp.sum()
    if rest > 1e-9 * len(samples):  # pool the sparse cells
        obs, exp = np.append(obs, len(samples) - obs.sum()), np.append(exp, rest)
    exp = exp * obs.sum() / exp.sum()
    return scipy.stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize(
    ("name", "law"),
    [
        ("laplace-mean", lambda m: scipy.stats.laplace(scale=m.params["scale"])),
        ("gaussian-mean-classical", lambda m: scipy.stats.norm(scale=m.params["sigma"])),
        ("gaussian-mean-analytic", lambda m: scipy.stats.norm(scale=m.params["sigma"])),
    ],
)
def test_continuous_noise_fits_scipy(name, law):
    """KS test of the release noise against scipy at failure rate TEST_FAILURE_RATE."""
    mech = dpaudit.build(name)
    dim = mech.params["dim"]
    d = np.random.default_rng(0).uniform(size=(mech.params["n"], dim))
    x = np.asarray(mech.sample(d, jax.random.key(1), 5000)) - np.asarray(mech.summary(d))
    for j in range(dim):
        assert scipy.stats.kstest(x[:, j], law(mech).cdf).pvalue > TEST_FAILURE_RATE / dim
    y = jnp.asarray(x[:5] + np.asarray(mech.summary(d)))
    expected = law(mech).logpdf(x[:5]).sum(1)
    np.testing.assert_allclose(mech.release_log_prob(d, y), expected, rtol=1e-10)


def test_geometric_count_fits_scipy_dlaplace():
    mech = dpaudit.build("geometric-count", epsilon=0.7)
    d = (np.arange(30) % 3 == 0).astype(float)
    k = np.asarray(mech.sample(d, jax.random.key(2), 20_000)) - 10.0
    law = scipy.stats.dlaplace(0.7)
    support = np.arange(-40, 41)
    probs = law.pmf(support)
    assert _chi2_pvalue(k, probs, support) > TEST_FAILURE_RATE
    np.testing.assert_allclose(
        mech.release_log_prob(d, jnp.arange(-3.0, 4.0) + 10),
        law.logpmf(np.arange(-3, 4)),
        rtol=1e-12,
    )


@pytest.mark.parametrize("noise", ["laplace", "exponential"])
def test_noisy_argmax_law_matches_scipy_quadrature_and_samples(noise):
    u = np.array([3.0, 5.0, 4.5, 1.0])
    law = scipy.stats.laplace(scale=2.0) if noise == "laplace" else scipy.stats.expon(scale=2.0)
    d = NoisyArgmax(u, 2.0, noise)

    def p(i):
        def f(x):
            return law.pdf(x - u[i]) * np.prod([law.cdf(x - u[j]) for j in range(4) if j != i])

        return scipy.integrate.quad(f, -90, 100, points=list(u), limit=500, epsrel=1e-12)[0]

    np.testing.assert_allclose(np.asarray(d.probs), [p(i) for i in range(4)], atol=1e-5)
    draws = d.sample(jax.random.key(3), (20_000,))
    assert _chi2_pvalue(draws, d.probs) > TEST_FAILURE_RATE


def test_gumbel_noisy_max_is_the_exponential_mechanism():
    mech = dpaudit.build("report-noisy-max-gumbel", epsilon=1.0)
    d = np.array([0] * 8 + [1] * 5 + [2] * 7)
    expected = scipy.special.softmax(np.array([8.0, 5.0, 7.0]) / 2.0)
    got = np.exp([float(mech.release_log_prob(d, i)) for i in range(3)])
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert _chi2_pvalue(mech.sample(d, jax.random.key(4), 20_000), expected) > TEST_FAILURE_RATE


@pytest.mark.parametrize("name", ["svt", "svt-dwork-roth"])
def test_svt_pattern_law_fits_samples(name):
    mech = dpaudit.build(name, cutoff=2)
    d = (np.random.default_rng(5).uniform(size=(12, 3)) < 0.35).astype(float)
    x = np.asarray(mech.sample(d, jax.random.key(6), 20_000))
    patterns, counts = np.unique(x, axis=0, return_counts=True)
    # one jitted call for the seen patterns and one past the cutoff (eagerly, each batch
    # shape and quadrature grid compiled every operation again: 2-3x the time)
    rows = jnp.asarray(np.vstack([patterns, [1.0, 1.0, 1.0]]))
    log_p = np.asarray(jax.jit(lambda v: mech.release_log_prob(d, v))(rows))
    probs = np.exp(log_p[:-1])
    assert abs(probs.sum() - 1) < 1e-3  # every reachable pattern was seen
    assert (
        scipy.stats.chisquare(counts, probs / probs.sum() * counts.sum()).pvalue > TEST_FAILURE_RATE
    )
    assert log_p[-1] == -np.inf  # past cutoff


def test_classical_gaussian_refuses_large_epsilon():
    with pytest.raises(ValueError, match="epsilon <= 1"):
        dpaudit.build("gaussian-mean-classical", epsilon=2.0)
    with pytest.raises(ValueError, match="n = 50 records"):
        dpaudit.build("laplace-mean").summary(np.zeros((3, 2)))
