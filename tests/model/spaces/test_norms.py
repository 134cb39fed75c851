"""Norm laws as hypothesis properties, and partial sums against closed-form series."""

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from dpaudit.model.spaces import (
    cameron_martin_norm,
    cameron_martin_partial_norms,
    l2_norm,
    l2_partial_norms,
    one_c_norm,
    one_c_partial_norms,
    spectral_basis,
    uniform_grid,
)

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False)


@st.composite
def coefficients_and_eigenvalues(draw):
    k = draw(st.integers(1, 40))
    h = draw(arrays(np.float64, k, elements=finite))
    lam = np.sort(draw(arrays(np.float64, k, elements=st.floats(1e-6, 1.0))))[::-1]
    return h, lam


@given(coefficients_and_eigenvalues())
def test_cameron_martin_is_at_most_one_c(pair):
    h, lam = pair
    assert float(cameron_martin_norm(h, lam)) <= float(one_c_norm(h, lam)) * (1 + 1e-12) + 1e-300


@given(coefficients_and_eigenvalues(), st.floats(1.0, 3.0))
def test_one_c_is_bounded_by_power_norm_times_trace(pair, eta):
    """||h||_{1,C} <= ||h||_{C^eta} sqrt(tr C^(eta - 1)) (Cauchy–Schwarz, docs/conventions.md#norm-inclusions)."""
    h, lam = pair
    bound = float(cameron_martin_norm(h, lam, power=eta)) * np.sqrt(np.sum(lam ** (eta - 1)))
    assert float(one_c_norm(h, lam)) <= bound * (1 + 1e-12) + 1e-300


@given(coefficients_and_eigenvalues())
def test_partial_norms_are_monotone_and_end_at_the_norm(pair):
    h, lam = pair
    for partial, full in (
        (cameron_martin_partial_norms(h, lam), cameron_martin_norm(h, lam)),
        (one_c_partial_norms(h, lam, power=2.0), one_c_norm(h, lam, power=2.0)),
        (l2_partial_norms(h), l2_norm(h)),
    ):
        partial = np.asarray(partial)
        assert np.all(np.diff(partial) >= -1e-12 * np.abs(partial[1:]))
        assert partial[-1] == pytest.approx(float(full), rel=1e-12, abs=1e-300)


def generalized_harmonic(p, k):
    """sum_{j=1..k} j^(-p) = zeta(p) - zeta(p, k + 1), from scipy (p > 1)."""
    return scipy.special.zeta(p) - scipy.special.zeta(p, k + 1)


@given(st.floats(1.5, 4.0), st.floats(0.0, 3.0), st.floats(0.5, 2.0))
def test_partial_sums_match_closed_form_series(beta, margin, s):
    """lambda_j = j^-beta, h_j = j^-a: sum_j h_j^2/lambda_j^s = H_K(2a - s beta)."""
    k = np.arange(1, 401)
    lam = k**-beta
    # choose a so that both series converge: 2a - s beta > 1 and a - s beta / 2 > 1
    a = s * beta / 2 + 1 + 0.05 + margin
    h = k**-a
    cm = np.asarray(cameron_martin_partial_norms(h, lam, power=s)) ** 2
    np.testing.assert_allclose(cm, generalized_harmonic(2 * a - s * beta, k), rtol=1e-10)
    oc = np.asarray(one_c_partial_norms(h, lam, power=s))
    np.testing.assert_allclose(oc, generalized_harmonic(a - s * beta / 2, k), rtol=1e-10)


def test_incompatible_shift_has_unbounded_partial_norms():
    """h_j = j^-a with a <= beta/2 + 1 is outside H_{1,C}: partial 1,C norms keep growing."""
    k = np.arange(1, 2001)
    beta, a = 2.0, 1.5  # a - beta/2 = 0.5 < 1: harmonic-like divergence
    partial = np.asarray(one_c_partial_norms(k**-a, k**-beta))
    np.testing.assert_allclose(partial[[99, 1999]], [np.sum(k[:100] ** -0.5), np.sum(k**-0.5)])
    assert partial[1999] > 4 * partial[99] > 0


def test_norms_of_grid_functions_through_a_fourier_basis():
    """Project a function with known cosine coefficients and read off its norms."""
    grid = uniform_grid(256)
    k = np.arange(1, 33)

    def cosine(t):
        return np.sqrt(2) * np.cos(np.pi * k * t)

    lam = k**-2.0
    basis = spectral_basis(lam, cosine, grid)
    coef = (-1.0) ** k * k**-3.0
    values = basis.reconstruct(coef)
    h = basis.project(values)
    np.testing.assert_allclose(h, coef, atol=1e-13)
    assert float(cameron_martin_norm(h, basis.eigenvalues)) == pytest.approx(
        np.sqrt(np.sum(k**-4.0)), rel=1e-12
    )
    assert float(one_c_norm(h, basis.eigenvalues)) == pytest.approx(np.sum(k**-2.0), rel=1e-12)
    assert float(l2_norm(h)) == pytest.approx(
        np.sqrt(float(jnp.sum(grid.weights * values**2))), rel=1e-12
    )
