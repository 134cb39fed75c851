"""HRW online release for a general kernel: the Schur-complement recursion has the batch law.

Oracles from outside the recursion: direct Gaussian conditioning with scipy's symmetric solver
(``conditional_law``), the batch Gram matrix, the two-neighbour Ornstein-Uhlenbeck formulas of
the exponential special case, scipy's chi-square / normal quantiles at TEST_FAILURE_RATE for the
sampled comparison, and Balle & Wang's exact Gaussian profile for the faulty variant.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
import scipy.stats
from conftest import TEST_FAILURE_RATE

import dpaudit
from dpaudit.model.noise import classical_gaussian_sigma, gaussian_delta
from dpaudit.model.spaces import Exponential, Gaussian, Matern
from mechanisms.faulty import example_pair as faulty_pair
from mechanisms.faulty.calibration import gaussian_true_epsilon
from mechanisms.hrw.online import (
    OnlineGPRelease,
    conditional_law,
    example_pair,
    gram,
    online_factor,
    online_gp_release,
    unconditioned_mu,
    van_der_corput,
)
from mechanisms.hrw.release import kernel_matrix, ou_conditional

KERNELS = [
    (Gaussian(0.1), 1),
    (Matern(2.5, 0.2), 1),
    (Exponential(0.4), 2),  # l2 exponential in d = 2: not Markov, no fast special case
    (Gaussian((0.3, 0.5)), 2),
]


def _points(dim, m=9, seed=0):
    return np.random.default_rng(seed).uniform(0.0, 1.0, size=(m, dim))


def _release(kernel, dim, *, key=0, shape=(), fn=None):
    return OnlineGPRelease(
        fn or (lambda p: jnp.zeros(p.shape[0])),
        kernel=kernel,
        sensitivity=0.1,
        epsilon=0.5,
        delta=0.01,
        key=jax.random.key(key),
        dim=dim,
        sample_shape=shape,
    )


@pytest.mark.parametrize(("kernel", "dim"), KERNELS)
def test_each_step_is_direct_gaussian_conditioning_to_1e10(kernel, dim):
    """Step i's conditional mean weights and variance equal C^{-1} V and K - V^T C^{-1} V."""
    pts = _points(dim)
    release = _release(kernel, dim)
    for i, p in enumerate(pts):
        release.query(p)
        row = release.factor[i]
        weights, variance = conditional_law(kernel, pts[:i], p)
        # mean = v^T z = v^T L^{-1} xi: the weights on the earlier xi are L^{-T} v
        if i:
            implied = scipy.linalg.solve_triangular(release.factor[:i, :i].T, row[:i], lower=False)
            np.testing.assert_allclose(implied, weights, atol=1e-10)
        assert row[i] ** 2 == pytest.approx(variance, abs=1e-10)


@pytest.mark.parametrize(("kernel", "dim"), KERNELS)
def test_joint_law_equals_the_batch_law_to_1e10(kernel, dim):
    """L L^T = K for two query orders; answers = f + s L z (means f, covariance s^2 K)."""
    pts = _points(dim, m=12, seed=1)
    for order in (np.arange(12), np.random.default_rng(2).permutation(12)):
        factor = online_factor(kernel, pts[order])
        np.testing.assert_allclose(factor @ factor.T, kernel_matrix(kernel, pts[order]), atol=1e-10)
    fn = lambda p: jnp.sum(jnp.sin(3 * p), axis=1)  # noqa: E731
    release = _release(kernel, dim, key=5, shape=(3,), fn=fn)
    answers = np.stack([release.query(p) for p in pts], axis=-1)
    s = classical_gaussian_sigma(0.1, 0.5, 0.01)
    mean = np.asarray(fn(jnp.asarray(pts)))
    np.testing.assert_allclose(
        answers, mean + s * release.innovations @ release.factor.T, atol=1e-10
    )


def test_recursion_reduces_to_the_ou_two_neighbour_formulas():
    """Exponential kernel in d = 1: the general weights are those of ou_conditional (1e-10)."""
    pts = np.array([0.5, 0.1, 0.9, 0.3, 0.7, 0.05])
    for i in range(1, len(pts)):
        weights, variance = conditional_law(Exponential(0.2), pts[:i, None], pts[i : i + 1])
        before = np.sort(pts[:i])
        j = np.searchsorted(before, pts[i])
        left = before[j - 1] if j > 0 else None
        right = before[j] if j < i else None
        w_left, w_right, var = ou_conditional(pts[i], left, right, 0.2)
        expected = np.zeros(i)
        if left is not None:
            expected[np.flatnonzero(pts[:i] == left)[0]] = w_left
        if right is not None:
            expected[np.flatnonzero(pts[:i] == right)[0]] = w_right
        np.testing.assert_allclose(weights, expected, atol=1e-10)
        assert variance == pytest.approx(var, abs=1e-10)


def test_sampled_answers_have_the_batch_law():
    """20000 paths of 7 Matern answers in scrambled order, whitened by the batch Cholesky: N(0, I).

    Bonferroni over 7 means, 7 variances and 21 correlations at total failure rate
    TEST_FAILURE_RATE (normal approximations: sd 1/sqrt(N), sqrt(2/N), 1/sqrt(N)).
    """
    pts = np.array([0.5, 0.1, 0.9, 0.3, 0.33, 0.75, 0.6])[:, None]
    kernel, n_paths = Matern(1.5, 0.3), 20_000
    answers = online_gp_release(
        lambda p: jnp.cos(p[:, 0]),
        pts,
        kernel=kernel,
        sensitivity=0.1,
        epsilon=0.5,
        delta=0.01,
        key=jax.random.key(11),
        sample_shape=(n_paths,),
    )
    s = classical_gaussian_sigma(0.1, 0.5, 0.01)
    chol = np.linalg.cholesky(s**2 * kernel_matrix(kernel, pts))
    z = scipy.linalg.solve_triangular(chol, (answers - np.cos(pts[:, 0])).T, lower=True).T
    quantile = scipy.stats.norm.isf(TEST_FAILURE_RATE / (2 * 35))
    assert np.all(np.abs(z.mean(0)) < quantile / math.sqrt(n_paths))
    assert np.all(np.abs((z**2).mean(0) - 1) < quantile * math.sqrt(2 / n_paths))
    corr = (z.T @ z / n_paths)[np.triu_indices(7, 1)]
    assert np.all(np.abs(corr) < quantile / math.sqrt(n_paths))


def test_repeats_and_degenerate_queries_add_no_noise_and_bad_input_is_refused():
    release = _release(Gaussian(0.3), 1, shape=(4,))
    first = release.query(0.25)
    np.testing.assert_array_equal(release.query(0.25), first)
    np.testing.assert_array_equal(release.noise_at(0.25), first / release.scale)
    release.query(0.25 + 1e-9)  # Schur complement ~ 1e-17: read as a linear function
    assert release.factor.shape == (1, 1)
    with pytest.raises(ValueError, match="outside the"):
        release.query(1.5)
    with pytest.raises(ValueError, match="has not been queried"):
        release.noise_at(0.5)
    with pytest.raises(ValueError, match="repeats or is a linear function"):
        online_factor(Gaussian(0.3), [0.2, 0.2])
    with pytest.raises(TypeError, match="Kernel"):
        OnlineGPRelease(jnp.sin, kernel="rbf", sensitivity=1, epsilon=1, delta=0.1, key=None)


@pytest.mark.parametrize("nu", [0.5, 1.5, 2.5])
def test_numpy_matern_gram_equals_the_jax_kernel(nu):
    x, y = _points(2, m=5, seed=3), _points(2, m=4, seed=4)
    kernel = Matern(nu, 0.3, variance=2.0)
    np.testing.assert_allclose(gram(kernel, x, y), np.asarray(kernel(x, y)), rtol=1e-12)


def test_van_der_corput_stream():
    np.testing.assert_array_equal(van_der_corput(5), [0.5, 0.25, 0.75, 0.125, 0.625])


def test_catalogue_entry_is_calibrated_by_the_exact_gaussian_profile():
    """Mahalanobis distance of the 0 -> 1 pair <= RKHS sensitivity, and Balle & Wang's exact
    delta at (epsilon, mu = distance / s) is below the claimed delta."""
    mech = dpaudit.build("hrw-online-gp")
    d, d_prime = example_pair("hrw-online-gp")
    distance = float(mech.distance(d, d_prime))
    assert 0 < distance <= mech.claim.sensitivity
    assert float(gaussian_delta(1.0, distance / mech.params["sigma"])) <= mech.claim.delta


@pytest.mark.slow
def test_catalogue_entry_passes_and_faulty_entry_is_a_violation_at_its_true_epsilon():
    """Exact Gaussian accounting: the correct entry passes; the faulty one is a violation whose
    certified epsilon is within 1e-6 of the KnownFlaw (truth within 10 % is the requirement)."""
    mech = dpaudit.build("hrw-online-gp")
    d, d_prime = example_pair("hrw-online-gp")
    report = dpaudit.audit(mech, d, d_prime, samples=2000, seed=3)
    assert report.verdict == "pass"
    assert report.epsilon_at_claimed_delta["exact"] <= 1.0
    bad = dpaudit.build("faulty/hrw-online-unconditioned")
    pair = faulty_pair("faulty/hrw-online-unconditioned")
    report = dpaudit.audit(bad, *pair, samples=2000, seed=3)
    assert report.verdict == "violation"
    assert report.epsilon_lower == pytest.approx(bad.known_flaw.true_epsilon, rel=1e-6)


def test_unconditioned_worst_pair_beats_a_dense_search_and_matches_the_profile():
    """The worst (a, b) found is at least the best of a 1001-point diagonal-free random search,
    and the true epsilon is Balle & Wang's at that mu."""
    bad = dpaudit.build("faulty/hrw-online-unconditioned")
    q = np.asarray(bad.params["queries"])
    mu, _, _ = unconditioned_mu(20, 0.1, q, bad.params["sigma"])
    rng = np.random.default_rng(0)
    trial = rng.uniform(0, 1, size=(20_000, 2))
    g = lambda x: np.exp(-((q[:, 0] - x[:, None]) ** 2) / 0.02)  # noqa: E731
    c = 1 / (20 * math.sqrt(2 * math.pi) * 0.1 * bad.params["sigma"])
    searched = c * np.sqrt(np.sum((g(trial[:, 0]) - g(trial[:, 1])) ** 2, axis=1)).max()
    assert mu >= searched - 1e-12
    assert bad.known_flaw.true_epsilon == pytest.approx(gaussian_true_epsilon(mu, 1e-3))
    d, d_prime = faulty_pair("faulty/hrw-online-unconditioned")
    assert float(bad.distance(d, d_prime)) == pytest.approx(mu * bad.params["sigma"], rel=1e-9)
