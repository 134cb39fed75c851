"""Compatibility classification: spectral ground truth, Brownian motion, RBF noise, numerical floors."""

import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from dpaudit import Claim, Mechanism
from dpaudit.model.compatibility import classify_pair, compatibility, series_evidence
from dpaudit.model.noise import GaussianProcessNoise, GridNoise
from dpaudit.model.spaces import Gaussian, brownian_motion_basis, kl_basis, uniform_grid

J = np.arange(1, 2049.0)


def truth(a, beta):
    """LR §1.4 / MRS §2.2 with lambda_j = j^-beta, h_j = j^-a."""
    if 2 * a - beta <= 1:
        return "incompatible"
    return "compatible" if a - beta / 2 > 1 else "gaussian-only"


@settings(max_examples=60)
@given(beta=st.floats(1.1, 4.0), a=st.floats(0.3, 4.5))
def test_power_law_ground_truth(beta, a):
    """Compatible iff a - beta/2 > 1; Gaussian-only iff 2a - beta > 1 >= a - beta/2; else
    incompatible. Exponents within 0.15 of a boundary are left out (a finite K cannot tell
    j^-1.05 from j^-0.95); the boundaries themselves are tested below."""
    assume(abs(2 * a - beta - 1) > 0.15 and abs(a - beta / 2 - 1) > 0.15)
    got = compatibility(J**-a, J**-beta, eigenvalue_rtol=0).classification
    assert got == truth(a, beta)


@pytest.mark.parametrize("beta", [1.5, 2.0, 3.0])
def test_exact_boundaries_are_divergent(beta):
    a_cm = (1 + beta) / 2  # 2a - beta = 1: harmonic Cameron–Martin series -> singular
    assert compatibility(J**-a_cm, J**-beta, eigenvalue_rtol=0).classification == "incompatible"
    a_1c = 1 + beta / 2  # a - beta/2 = 1: harmonic 1,C series -> Gaussian only
    assert compatibility(J**-a_1c, J**-beta, eigenvalue_rtol=0).classification == "gaussian-only"


def test_random_signs_and_fluctuations_do_not_change_the_class():
    rng = np.random.default_rng(0)
    h = J**-1.6 * rng.choice([-1.0, 1.0], J.size) * rng.chisquare(3, J.size) / 3
    c = compatibility(h, J**-2.0, eigenvalue_rtol=0)  # 2a - beta = 1.2, a - beta/2 = 0.6
    assert c.classification == "gaussian-only"
    assert c.cameron_martin.exponent == pytest.approx(1.2, abs=0.15)


GRID_BM = uniform_grid(4096)
BM = brownian_motion_basis(GRID_BM, 1024)
T = np.asarray(GRID_BM.points[:, 0])


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        # phi_1 + phi_3/2: finitely many terms
        (
            "finite",
            np.asarray(BM.eigenfunctions[:, 0] + 0.5 * BM.eigenfunctions[:, 2]),
            "compatible",
        ),
        # t - t^2/2 meets the eigenfunctions' boundary conditions: h_j ~ j^-3
        ("smooth", T - T**2 / 2, "compatible"),
        # t is in the Cameron–Martin space (h' in L2) but h_j ~ j^-2 makes the 1,C norm diverge
        ("linear", T, "gaussian-only"),
        # a jump is not in the Cameron–Martin space of Brownian motion
        ("step", (T > 0.5).astype(float), "incompatible"),
        # nor is a Brownian path (Cameron–Martin space has measure 0)
        (
            "path",
            np.cumsum(np.random.default_rng(1).normal(size=T.size)) / np.sqrt(T.size),
            "incompatible",
        ),
    ],
)
def test_brownian_motion_basis(name, values, expected):
    c = compatibility(BM.project(jnp.asarray(values)), BM.eigenvalues)
    assert c.classification == expected, (name, c.reason)
    assert c.cameron_martin.partial_sums.shape == (1024,)


def _raw_mean_with_rbf_noise():
    """Faulty: the raw mean of rough (Brownian) curves released with RBF-kernel GP noise."""
    grid = uniform_grid(64)
    basis = kl_basis(Gaussian(0.2), grid)

    def model(data):
        noise = GaussianProcessNoise(basis.eigenvalues, 0.5)
        numpyro.sample("release", GridNoise(noise, basis, loc=jnp.mean(data, axis=0)))

    return Mechanism("raw-mean-rbf", model, Claim(epsilon=1.0, delta=1e-3)), grid


def test_raw_mean_of_brownian_curves_with_rbf_noise_is_incompatible():
    mech, grid = _raw_mean_with_rbf_noise()
    rng = np.random.default_rng(2)
    curves = np.cumsum(rng.normal(size=(6, grid.size)), axis=1) / np.sqrt(grid.size)
    data = jnp.asarray(curves)
    data_prime = data.at[0].set(jnp.asarray(-curves[0]))
    c = classify_pair(mech, data, data_prime)
    assert c.classification == "incompatible"
    assert (
        c.cameron_martin.ratio > 2.0
    )  # the terms explode: h_j decays like j^-1, lambda_j much faster


def test_eigenvalues_below_the_numerical_floor_do_not_fake_divergence():
    """An RBF kernel keeps eigenvalues down to 1e-20 x lambda_1 when asked (rtol=0): round-off.
    A smooth (RKHS) summary with a 1e-8 perturbation then shows growing terms h_j^2/lambda_j
    over those meaningless eigenvalues; the default floors stop the analysis before them."""
    grid = uniform_grid(64)
    kernel = Gaussian(0.2)
    basis = kl_basis(kernel, grid, rtol=0.0)
    assert float(basis.eigenvalues[-1] / basis.eigenvalues[0]) < 1e-15
    section = np.asarray(kernel(grid.points, grid.points))[20]
    h = basis.project(jnp.asarray(section + 1e-8 * np.random.default_rng(3).normal(size=64)))
    assert compatibility(h, basis.eigenvalues).classification == "compatible"
    naive = compatibility(h, basis.eigenvalues, eigenvalue_rtol=0, coefficient_rtol=0)
    assert naive.classification == "incompatible"  # what the floors prevent


def test_small_truncations_are_undetermined_and_zero_differences_compatible():
    c = compatibility(np.ones(5), np.ones(5) * 0.5)
    assert c.classification == "undetermined" and c.cameron_martin.converges is None
    # one coefficient at the truncation edge (a worst-case record that is a single
    # high-frequency eigenfunction) shows no trend: not "incompatible"
    edge = np.zeros(16)
    edge[14] = 0.1
    assert compatibility(edge, J[:16] ** -2).classification == "undetermined"
    edge = np.zeros(16)
    edge[5] = 0.1  # the terms stop inside the range: a finite norm
    assert compatibility(edge, J[:16] ** -2).classification == "compatible"
    c = compatibility(np.zeros(40), J[:40] ** -2)
    assert c.classification == "compatible"


def test_series_evidence_reports_the_partial_sum_curve_and_tail():
    ev = series_evidence(J**-2.0, "cameron-martin")
    assert ev.converges
    np.testing.assert_allclose(ev.partial_sums, np.cumsum(J**-2.0))
    assert ev.limit_estimate == pytest.approx(np.pi**2 / 6, rel=2e-3)
    assert ev.exponent == pytest.approx(2.0, abs=0.05)
    d = ev.to_dict()
    assert d["converges"] is True and len(d["partial_sums"]) == J.size


def test_bad_input():
    with pytest.raises(ValueError, match="same length"):
        compatibility(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="> 0"):
        compatibility(np.ones(3), np.array([1.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match="finite"):
        compatibility(np.array([1.0, np.nan]), np.ones(2))
    with pytest.raises(ValueError, match="non-negative"):
        series_evidence(np.array([1.0, -1.0]), "one-c")


def test_a_peak_of_the_terms_is_not_divergence():
    # Penalised summaries (MRS, kernel ridge): terms h_j^2/lambda_j rise to a peak and then
    # decay geometrically; the series converges and must not be read as divergent.
    j = np.arange(1, 16.0)
    terms = np.where(j <= 6, 10.0 ** (j - 6), 10.0 ** (-(j - 6)))
    evidence = series_evidence(terms, "cameron-martin")
    assert evidence.converges is True
    # a series still growing at the edge is divergent whatever came before
    growing = np.concatenate([np.ones(7), np.ones(8) * np.arange(1, 9.0) ** 2])
    assert series_evidence(growing, "cameron-martin").converges is False
