"""MRS simulation study helpers (mechanisms/mrs.py): kernels C1-C4, eq. (4) data, tau, exact risk.

Oracles: the kernels' printed formulas (MRS App. eq. 6) evaluated by hand in
numpy; scipy.stats.kstest for the uniform scores of eq. (4); R's unit-Euclidean
eigenvectors for the default scale; a brute-force maximisation for the public
bound; and Monte Carlo over simulated datasets (through the library's
penalised-mean summary) for the exact risk, at the suite's ``TEST_FAILURE_RATE``.
"""

import math

import jax
import numpy as np
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.model.spaces import Matern, kl_basis, uniform_grid
from mechanisms.mrs.mean import mrs_penalized_mean, mrs_shrinkage
from mechanisms.mrs.simulation import (
    MRS_KERNELS,
    MRSSimulation,
    mrs_kernel,
    mrs_penalized_mean_risk,
    mrs_simulation,
    mrs_simulation_curves,
    mrs_simulation_tau,
)

M = 30  # grid points of most tests: one compiled shape


def l2_norms(x, m=M):
    return np.sqrt(np.sum(np.asarray(x) ** 2, axis=-1) / m)  # midpoint weights 1/m


# ------------------------------------------------------------------- kernels


@given(rho=st.floats(1e-3, 5.0), name=st.sampled_from(MRS_KERNELS))
def test_kernels_match_the_printed_formulas(rho, name):
    s = np.array([0.0, 0.1, 0.37, 0.9])
    t = np.array([0.0, 0.55, 1.0])
    r = np.abs(s[:, None] - t[None, :])
    by_hand = {
        "C1": np.exp(-(r**2) / rho),
        "C2": (1 + math.sqrt(5) * r / rho + 5 * r**2 / (3 * rho**2))
        * np.exp(-math.sqrt(5) * r / rho),
        "C3": (1 + math.sqrt(3) * r / rho) * np.exp(-math.sqrt(3) * r / rho),
        "C4": np.exp(-r / rho),
    }[name]
    got = np.asarray(mrs_kernel(name, rho)(s[:, None], t[:, None]))
    np.testing.assert_allclose(got, by_hand, rtol=1e-12, atol=1e-300)


def test_kernel_rejects_bad_input():
    with pytest.raises(ValueError, match="name must be one of"):
        mrs_kernel("C5", 0.1)
    with pytest.raises(ValueError, match="rho must be a finite number > 0"):
        mrs_kernel("C1", 0.0)
    with pytest.raises(TypeError, match="rho must be a number"):
        mrs_kernel("C1", "0.1")


# ---------------------------------------------------------------- simulation


def test_paper_defaults_and_r_eigenvector_scale():
    """Defaults of MRS Sec. 5; v_j = phi_j / sqrt(m) has unit Euclidean norm (R's eigen())."""
    sim = mrs_simulation()
    assert sim.p == 4.0 and sim.score_bound == 0.4 and sim.basis.grid_size == 100
    t = np.asarray(sim.basis.grid.points)[:, 0]
    np.testing.assert_allclose(sim.mean, 0.1 * np.sin(np.pi * t), rtol=1e-15)
    assert 50 <= sim.n_terms <= 100  # "about m = 50" in R; see the docstring
    v = np.asarray(sim.basis.eigenfunctions) * sim.eigenvector_scale
    np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1.0, rtol=1e-10)
    j = np.arange(1, sim.n_terms + 1)
    np.testing.assert_allclose(sim.loadings, j**-2.0 / 10.0, rtol=1e-15)
    assert mrs_simulation(M, eigenvector_norm="l2").eigenvector_scale == 1.0


def test_scores_are_uniform_on_the_stated_interval():
    """Coefficients of X_i - mu in the data basis, divided by the loadings, are U(-b, b) (KS test)."""
    sim = mrs_simulation(M, kernel="C3", rho=0.2, p=3.0, score_bound=0.7)
    x = np.asarray(mrs_simulation_curves(sim, jax.random.key(3), 400))
    scores = np.asarray(sim.basis.project(x - sim.mean)) / sim.loadings
    assert np.all(np.abs(scores) <= 0.7 * (1 + 1e-9))
    p_value = scipy.stats.kstest(scores.ravel(), scipy.stats.uniform(-0.7, 1.4).cdf).pvalue
    assert p_value > TEST_FAILURE_RATE
    # independence across terms: correlations of the score columns are O(1/sqrt(400))
    corr = np.corrcoef(scores.T)[np.triu_indices(sim.n_terms, 1)]
    assert np.max(np.abs(corr)) < 0.3


@settings(max_examples=12)
@given(
    seed=st.integers(0, 2**31 - 1),
    kernel=st.sampled_from(MRS_KERNELS),
    n_terms=st.sampled_from([1, 3, 8]),
    norm=st.sampled_from(["euclidean", "l2"]),
    shift=st.floats(-1.0, 1.0),
)
def test_tau_bounds_every_curve_and_is_attained(seed, kernel, n_terms, norm, shift):
    """sup ||X_i|| over the score box, attained at U_j = b sgn(mu_j); the mean may leave the span."""
    mean = lambda t: 0.1 * np.sin(np.pi * t) + shift * t**3  # noqa: E731
    sim = mrs_simulation(
        M, kernel=kernel, rho=0.3, mean=mean, n_terms=n_terms, eigenvector_norm=norm
    )
    tau = mrs_simulation_tau(sim)
    x = mrs_simulation_curves(sim, jax.random.key(seed % 1000), 64)
    assert np.all(l2_norms(x) <= tau * (1 + 1e-12))
    phi = np.asarray(sim.basis.eigenfunctions)
    mean_j = np.asarray(sim.basis.project(sim.mean))
    corner = sim.mean + phi @ (sim.loadings * sim.score_bound * np.where(mean_j >= 0, 1.0, -1.0))
    assert l2_norms(corner) == pytest.approx(tau, rel=1e-12)
    # no other corner of the score box is longer (brute force for few terms)
    if n_terms <= 4:
        signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * n_terms)).reshape(n_terms, -1).T
        corners = sim.mean + (signs * sim.loadings * sim.score_bound) @ phi.T
        assert np.max(l2_norms(corners)) == pytest.approx(tau, rel=1e-12)


def test_simulation_rejects_bad_input():
    with pytest.raises(ValueError, match="p must be a finite number > 1"):
        mrs_simulation(M, p=1.0)
    with pytest.raises(ValueError, match="score_bound must be a finite number > 0"):
        mrs_simulation(M, score_bound=-0.4)
    with pytest.raises(ValueError, match="eigenvector_norm must be one of"):
        mrs_simulation(M, eigenvector_norm="unit")
    with pytest.raises(ValueError, match=r"mean has shape \(3,\) but must be \(30,\)"):
        mrs_simulation(M, mean=np.zeros(3))
    with pytest.raises(ValueError, match="contains 1 NaN"):
        mrs_simulation(M, mean=np.r_[np.nan, np.zeros(M - 1)])
    with pytest.raises(ValueError, match="n_terms=31 exceeds"):
        mrs_simulation(M, kernel="C4", n_terms=31)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        mrs_simulation_curves(mrs_simulation(M), jax.random.key(0), 0)
    with pytest.raises(TypeError, match="simulation must be an MRSSimulation"):
        mrs_simulation_tau("C1")
    assert isinstance(mrs_simulation(M), MRSSimulation)


# ---------------------------------------------------------------------- risk


def test_risk_by_hand_when_the_noise_basis_is_the_data_basis():
    """Same basis, mean in the span: sum (1-s_j)^2 mu_j^2 + b^2/(3n) sum a_j^2 s_j^2."""
    sim = mrs_simulation(M, kernel="C3", rho=0.2, p=3.0, n_terms=10)
    mean_j = np.asarray(sim.basis.project(sim.mean))
    in_span = np.asarray(sim.basis.reconstruct(mean_j))
    sim = mrs_simulation(M, kernel="C3", rho=0.2, p=3.0, n_terms=10, mean=in_span)
    s = np.asarray(mrs_shrinkage(sim.basis.eigenvalues, 1.5, 0.01))
    by_hand = np.sum((1 - s) ** 2 * mean_j**2) + 0.4**2 / (3 * 7) * np.sum(sim.loadings**2 * s**2)
    risk = mrs_penalized_mean_risk(sim, sim.basis, n=7, eta=1.5, phi=0.01)
    assert risk == pytest.approx(by_hand, rel=1e-10)


@pytest.mark.parametrize("phi", [1e-4, 0.05])
def test_risk_matches_monte_carlo_of_the_penalised_mean(phi):
    """Noise basis (C3, rho 0.1, 12 terms) different from the data basis (C1): bias + variance.

    Each replicate is the library's penalised mean of n = 5 simulated curves; the
    Monte Carlo mean of the squared errors lies within z standard errors of the
    exact risk, z for a two-sided TEST_FAILURE_RATE / 2 (two parameters).
    """
    sim = mrs_simulation(M, rho=0.01, eigenvector_norm="l2")
    basis = kl_basis(Matern(1.5, 0.1), sim.basis.grid, n_components=12)
    n, reps = 5, 1500
    x = np.asarray(mrs_simulation_curves(sim, jax.random.key(11), n * reps)).reshape(reps, n, M)
    errors = np.array(
        [
            np.sum((np.asarray(mrs_penalized_mean(d, basis, eta=1.0, phi=phi)) - sim.mean) ** 2) / M
            for d in x
        ]
    )
    exact = mrs_penalized_mean_risk(sim, basis, n=n, eta=1.0, phi=phi)
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / 4)
    assert abs(errors.mean() - exact) <= z * errors.std(ddof=1) / math.sqrt(reps)
    # the bias alone (n -> infinity) is below the risk and the check is sensitive to it
    assert mrs_penalized_mean_risk(sim, basis, n=10**9, eta=1.0, phi=phi) < 0.9 * exact


def test_risk_rejects_a_basis_on_another_grid():
    sim = mrs_simulation(M)
    other = kl_basis(Matern(1.5, 0.1), uniform_grid(M + 1), n_components=5)
    with pytest.raises(ValueError, match="basis lives on a grid of 31 points"):
        mrs_penalized_mean_risk(sim, other, n=5, eta=1.0, phi=0.1)
    with pytest.raises(ValueError, match="phi must be a finite number > 0"):
        mrs_penalized_mean_risk(sim, sim.basis, n=5, eta=1.0, phi=0.0)
