"""Library support for notebooks/02_kde.ipynb: exact replacement distances of the ICLP-QR KDE.

Outside oracles: numpy ``eigh`` of the weighted Gram matrix (the eigenpairs
at the grid points, where the Nyström extension is exact), and the
mechanism's own distance (grid values projected on the basis, then
``one_c_norm``), an independent code path. No statistical tests here: every
check is deterministic.
"""

import numpy as np
import pytest
from curve_test_support import KDE_ETA, SEED, UNIT_POINT
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
from mechanisms.iclp import beyond

RTOL = 1e-9  # floating-point slack on "distance <= bound"
KERNEL, BASIS = beyond.kde_basis(0.08, grid_size=40)
LAM = np.asarray(BASIS.eigenvalues)


def test_replacement_distances_match_numpy_eigh_at_grid_points():
    """At grid points: (c/n) sum_j lambda_j^(eta-1/2) |phi_j(y_a) - phi_j(y_b)| from numpy eigh."""
    eta, n = 1.3, 17
    grid = np.asarray(BASIS.grid.points)
    w = np.asarray(BASIS.grid.weights)
    gram = np.asarray(KERNEL(BASIS.grid.points))
    mu, v = np.linalg.eigh(np.sqrt(w)[:, None] * gram * np.sqrt(w)[None, :])
    order = np.argsort(mu)[::-1][: BASIS.n_components]
    lam, phi = mu[order], v[:, order] / np.sqrt(w)[:, None]  # L2-normalised eigenfunctions
    np.testing.assert_allclose(lam, LAM, rtol=1e-6, atol=1e-12 * LAM[0])
    c = beyond.kde_normaliser(BASIS, eta)
    expected = (c / n) * np.abs(phi[:, None, :] - phi[None, :, :]) @ lam ** (eta - 0.5)
    got = beyond.kde_replacement_distances(grid, kernel=KERNEL, basis=BASIS, eta=eta, n=n)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-12)
    assert got.shape == (40, 40)
    np.testing.assert_array_equal(np.diag(got), 0.0)
    np.testing.assert_allclose(got, got.T, rtol=1e-12)


@settings(max_examples=20)
@given(seed=SEED, n=st.sampled_from([1, 5, 40]), eta=KDE_ETA, x_old=UNIT_POINT, x_new=UNIT_POINT)
def test_replacement_distance_is_the_mechanism_distance_and_below_the_bound(
    seed, n, eta, x_old, x_new
):
    """Equals mech.distance(D, D') (grid values -> coefficients -> 1,K norm) and <= Delta (Thm 8)."""
    mech = beyond.iclp_qr_kde(n=n, epsilon=1.0, bandwidth=0.08, eta=eta, grid_size=40)
    rng = np.random.default_rng(seed)
    data = rng.uniform(size=n)
    data[0] = x_old
    other = data.copy()
    other[0] = x_new
    got = beyond.kde_replacement_distances(
        [x_old], [x_new], kernel=KERNEL, basis=BASIS, eta=eta, n=n
    )
    assert got.shape == (1, 1)
    assert got[0, 0] == pytest.approx(float(mech.distance(data, other)), rel=1e-8, abs=1e-13)
    assert got[0, 0] <= mech.claim.sensitivity * (1 + RTOL)


def test_worst_replacement_moves_a_record_across_the_domain_and_stays_below_the_bound():
    """The largest distance over a dense set: records at opposite ends, well below Delta (slack)."""
    eta, n = 1.25, 100
    dense = np.linspace(0.0, 1.0, 201)
    d = beyond.kde_replacement_distances(dense, kernel=KERNEL, basis=BASIS, eta=eta, n=n)
    a, b = np.unravel_index(np.argmax(d), d.shape)
    assert abs(dense[a] - dense[b]) > 0.5
    c = beyond.kde_normaliser(BASIS, eta)
    bound = beyond.kde_sensitivity(LAM, n=n, eta=eta, normaliser=c)
    assert 0.05 * bound < d.max() <= bound * (1 + RTOL)
    # linear in the records: 1/n scaling
    d_small = beyond.kde_replacement_distances(dense, kernel=KERNEL, basis=BASIS, eta=eta, n=1)
    np.testing.assert_allclose(d_small, n * d, rtol=1e-12)


def test_replacement_distances_in_two_dimensions_match_the_mechanism():
    kernel, basis = beyond.kde_basis(0.15, grid_size=12, dim=2)
    mech = dpaudit.build(
        "iclp-qr-kde", n=3, epsilon=1.0, bandwidth=0.15, eta=1.1, dim=2, grid_size=12
    )
    data = np.array([[0.1, 0.9], [0.5, 0.5], [0.3, 0.2]])
    other = data.copy()
    other[0] = [0.95, 0.05]
    got = beyond.kde_replacement_distances(
        data[:1], other[:1], kernel=kernel, basis=basis, eta=1.1, n=3
    )
    assert got[0, 0] == pytest.approx(float(mech.distance(data, other)), rel=1e-8)
    assert got[0, 0] <= mech.claim.sensitivity * (1 + RTOL)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"points": [0.2, 1.3]}, ValueError, "outside the domain"),
        ({"points": [0.2, np.nan]}, ValueError, "NaN"),
        ({"points": [[0.2, 0.3]]}, ValueError, "must be"),
        ({"others": [-0.1]}, ValueError, "outside the domain"),
        ({"eta": 1.0}, ValueError, "eta"),
        ({"n": 0}, ValueError, "n"),
        ({"n": 2.5}, ValueError, "positive integer"),
        ({"kernel": "gaussian"}, TypeError, "Kernel"),
    ],
)
def test_replacement_distances_reject_bad_input(kwargs, error, match):
    args = {"points": [0.2, 0.4], "kernel": KERNEL, "basis": BASIS, "eta": 1.5, "n": 10}
    args.update(kwargs)
    points = args.pop("points")
    with pytest.raises(error, match=match):
        beyond.kde_replacement_distances(points, **args)
