"""Exact worst cases of the BMR tree releases (used by notebooks/04_ecdf_roc.ipynb).

Oracles: HiGHS linear programmes (``linear_laplace_sensitivity``) over every
replace-one move, the closed forms ``L`` (ECDF, ``N = 2^L``) and
``2 ceil((L+1)/2)`` (ROC: a label flip shifts two suffixes, digest trap 25),
and the release densities themselves (the privacy loss reaches the LP value).
All checks are deterministic (no Monte Carlo tolerance is involved).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
from dpaudit.noise.linear_laplace import ancestor_matrix, linear_laplace_sensitivity
from mechanisms.ecdf import (
    bmr_exact_epsilon,
    bmr_exact_sensitivity,
    bmr_roc_exact_sensitivity,
    tree_depth,
)


def _lp_worst_ecdf(n_points):
    """Brute force: one HiGHS LP per move a -> c (a < c), shift 1 on [a, c - 1]."""
    a_mat = ancestor_matrix(tree_depth(n_points), n_points)
    idx = np.arange(n_points)
    return max(
        linear_laplace_sensitivity(a_mat, ((idx >= a) & (idx < c)).astype(float))
        for a in range(n_points)
        for c in range(a + 1, n_points)
    )


def _lp_worst_roc(n_points):
    """Brute force on the joint release: block-diagonal noise matrix, every (a, y) -> (c, y')."""
    a_mat = ancestor_matrix(tree_depth(n_points), n_points)
    joint = np.block([[a_mat, np.zeros_like(a_mat)], [np.zeros_like(a_mat), a_mat]])
    idx = np.arange(n_points)
    records = [(cell, label) for cell in range(n_points) for label in (0, 1)]
    worst = 0.0
    for a, y in records:
        for c, y2 in records:
            tp = y * (idx >= a) - y2 * (idx >= c)
            fp = (1 - y) * (idx >= a) - (1 - y2) * (idx >= c)
            worst = max(worst, linear_laplace_sensitivity(joint, np.concatenate([tp, fp])))
    return worst


@pytest.mark.parametrize("depth", range(1, 7))
def test_exact_worst_case_is_depth_for_full_trees(depth):
    assert bmr_exact_sensitivity(2**depth)[0] == depth


@pytest.mark.parametrize("n_points", [2, 3, 5, 8, 12])
def test_exact_worst_case_matches_the_linear_programme(n_points):
    # the LP optimum is rounded up by a relative 1e-9 so it can serve as an upper bound
    assert bmr_exact_sensitivity(n_points)[0] == pytest.approx(_lp_worst_ecdf(n_points), rel=1e-8)


@pytest.mark.parametrize("n_points", [2, 3, 4, 6])
def test_roc_worst_case_matches_the_linear_programme(n_points):
    assert bmr_roc_exact_sensitivity(n_points)[0] == pytest.approx(
        _lp_worst_roc(n_points), rel=1e-8
    )


@pytest.mark.parametrize("depth", range(1, 6))
def test_roc_worst_case_is_two_suffixes(depth):
    worst, ((a, y), (c, y2)) = bmr_roc_exact_sensitivity(2**depth)
    assert worst == 2 * math.ceil((depth + 1) / 2)
    assert a == c and y != y2  # a label flip in place: both ECDFs move by a suffix
    assert worst <= 2 * (depth + 1)  # the claim (sequential composition) holds, loosely


def test_the_returned_moves_attain_the_worst_case_on_datasets():
    n, n_points = 10, 16
    ecdf = dpaudit.build("bmr-ecdf", n=n, n_points=n_points)
    worst, (a, c) = bmr_exact_sensitivity(n_points)
    grid = ecdf.params["grid"]
    d = np.linspace(0.0, 1.0, n)
    d_prime = d.copy()
    d[0], d_prime[0] = grid[a], grid[c]
    assert float(ecdf.distance(d, d_prime)) == pytest.approx(worst, abs=1e-12)

    roc = dpaudit.build("bmr-roc", n=n, n_points=n_points)
    worst, ((a, y), (c, y2)) = bmr_roc_exact_sensitivity(n_points)
    labels = (np.arange(n) % 2).astype(float)
    labels_prime = labels.copy()
    labels[0], labels_prime[0] = y, y2
    pair = ((d.copy(), labels), (d.copy(), labels_prime))
    pair[0][0][0], pair[1][0][0] = grid[a], grid[c]
    assert float(roc.distance(*pair)) == pytest.approx(worst, abs=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_exact_epsilon_of_both_calibrations(epsilon):
    for depth in (2, 3, 5):
        n_points = 2**depth
        lemma = dpaudit.build("bmr-ecdf", epsilon=epsilon, n_points=n_points)
        exact = dpaudit.build("bmr-ecdf", epsilon=epsilon, n_points=n_points, calibration="exact")
        assert bmr_exact_epsilon(lemma) == pytest.approx(depth / (depth + 1) * epsilon)
        assert bmr_exact_epsilon(exact) == pytest.approx(epsilon)
        assert exact.params["node_scale"] == pytest.approx(depth / epsilon)
        assert exact.claim.sensitivity == depth and lemma.claim.sensitivity == depth + 1
        roc = dpaudit.build("bmr-roc", epsilon=epsilon, n_points=n_points)
        roc_exact = dpaudit.build(
            "bmr-roc", epsilon=epsilon, n_points=n_points, calibration="exact"
        )
        half = math.ceil((depth + 1) / 2)
        assert bmr_exact_epsilon(roc) == pytest.approx(2 * half / (2 * (depth + 1)) * epsilon)
        assert bmr_exact_epsilon(roc_exact) == pytest.approx(epsilon)


def test_release_privacy_loss_reaches_the_exact_epsilon():
    """The density route agrees with the LP: losses never exceed epsilon and approach it.

    With calibration "exact" the tight epsilon is the claimed 1.0. Along the ray
    ``x = f_D + t (f_D - f_D')`` the loss tends to ``min ||nu||_1 / b``; the
    AncestorLaplace density is accurate to 1e-4 (its docstring), so the bounds
    below hold deterministically.
    """
    n, n_points, epsilon = 20, 8, 1.0
    mech = dpaudit.build("bmr-ecdf", n=n, n_points=n_points, epsilon=epsilon, calibration="exact")
    _, (a, c) = bmr_exact_sensitivity(n_points)
    grid = mech.params["grid"]
    d = np.linspace(0.0, 1.0, n)
    d_prime = d.copy()
    d[0], d_prime[0] = grid[a], grid[c]
    f, f_prime = np.asarray(mech.summary(d)), np.asarray(mech.summary(d_prime))
    x = np.concatenate(
        [
            np.asarray(mech.sample(d, jax.random.key(0), 50)),
            f + np.array([0.0, 1.0, 5.0, 30.0, 100.0])[:, None] * (f - f_prime),
        ]
    )
    loss = jax.jit(lambda x: mech.release_log_prob(d, x) - mech.release_log_prob(d_prime, x))(
        jnp.asarray(x)
    )
    loss = np.asarray(loss)
    assert np.all(np.abs(loss) <= epsilon + 1e-3)
    assert loss[-1] == pytest.approx(epsilon, abs=2e-2)


@settings(max_examples=25)
@given(
    st.lists(st.floats(-0.5, 1.5), min_size=6, max_size=6),
    st.integers(0, 5),
    st.floats(-0.5, 1.5),
    st.sampled_from([3, 4, 8, 11]),
)
def test_no_neighbour_exceeds_the_exact_worst_case(scores, index, new_score, n_points):
    mech = dpaudit.build("bmr-ecdf", n=6, n_points=n_points)
    d = np.array(scores)
    d_prime = d.copy()
    d_prime[index] = new_score
    assert float(mech.distance(d, d_prime)) <= bmr_exact_sensitivity(n_points)[0] + 1e-12


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="calibration"):
        dpaudit.build("bmr-ecdf", calibration="tight")
    with pytest.raises(ValueError, match="calibration"):
        dpaudit.build("bmr-roc", calibration=None)
    with pytest.raises(ValueError, match="at least 2"):
        bmr_exact_sensitivity(1)
    with pytest.raises(TypeError, match="integer"):
        bmr_roc_exact_sensitivity(8.0)
    with pytest.raises(TypeError, match="Mechanism"):
        bmr_exact_epsilon("bmr-ecdf")
    with pytest.raises(ValueError, match="bmr-ecdf or bmr-roc"):
        bmr_exact_epsilon(dpaudit.build("laplace-mean"))
