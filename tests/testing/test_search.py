"""Worst-case neighbour search: it reaches the analytic worst cases and never exceeds them.

The four acceptance summaries are built here from dpaudit.model.spaces primitives, each
with its analytic supremum of ``||f_D - f_D'||`` over replace-one neighbours:

* sample mean of curves, ``||X_i||_{L2} <= tau``: ``2 tau / n`` (antipodal curves);
* ICLP-QR mean (LR Sec. 4.2), 1,C norm: ``f_j = s_j Xbar_j`` with
  ``s_j = lambda_j^eta / (lambda_j^eta + psi)``; ``||f_D - f_D'||_{1,C} =
  (1/n) sum_j w_j |d_j|`` with ``w_j = s_j / sqrt(lambda_j)`` and ``d = X_i - X_i'``,
  ``||d|| <= 2 tau``; by Cauchy–Schwarz the supremum is ``(2 tau / n) ||w||_2``, attained
  at ``X_i = -X_i' = tau sum_j w_j phi_j / ||w||`` (the tight bound of docs/paper-errors.md#lr-loose-bounds);
* MRS penalised mean (MRS Thm 4.1), Cameron–Martin norm: ``(2 tau / n) max_j w_j``,
  attained at ``X_i = -X_i' = tau phi_{j*}``;
* Gaussian KDE (HRW Sec. 3.4), RKHS norm of the unnormalised kernel, measured on
  the grid as the Cameron–Martin norm in the kernel's Karhunen–Loève basis (the
  Mahalanobis norm ``h^T K^{-1} h`` of HRW Prop. 3.4, <= the RKHS norm):
  ``sqrt(2 (1 - K(x, x'))) / (n (2 pi h^2)^(d/2))``, approached as the points separate.

The gradient search must reach >= 0.99 of each within a fixed budget, and — the
bounds being suprema — must never exceed them.
"""

import math

import jax.numpy as jnp
import numpy as np
import pytest

from dpaudit import Claim, Mechanism
from dpaudit.model.spaces import (
    Gaussian,
    Matern,
    cameron_martin_norm,
    custom_grid,
    kl_basis,
    one_c_norm,
    uniform_grid,
)
from dpaudit.testing import (
    Box,
    L2Ball,
    Labels,
    Product,
    SearchBudget,
    WorstCase,
    worst_neighbours,
)

TAU, N = 1.0, 12
#: The fixed budget of the acceptance tests.
BUDGET = SearchBudget(restarts=8, steps=60)
# The suprema are exact; the search may touch them up to float64 round-off.
ROUND_OFF = 1e-9


@pytest.fixture(scope="module")
def grid():
    # cells of widths growing like t: unequal weights, so the ascent must use their metric
    edges = np.linspace(0.0, 1.0, 41) ** 2
    return custom_grid(0.5 * (edges[1:] + edges[:-1]), np.diff(edges))


@pytest.fixture(scope="module")
def basis(grid):
    return kl_basis(Matern(nu=1.5, lengthscale=0.2), grid, n_components=15)


def l2_on(grid):
    return lambda h: jnp.sqrt(jnp.sum(grid.weights * h * h, axis=-1))


def shrinkage(basis, eta, psi):
    lam = basis.eigenvalues
    return lam**eta / (lam**eta + psi)


def check_reaches(worst: WorstCase, analytic: float):
    assert worst.bound == pytest.approx(analytic, rel=1e-12)
    assert worst.ratio >= 0.99, worst.describe()
    assert worst.ratio <= 1.0 + ROUND_OFF, worst.describe()


def test_sample_mean_reaches_2_tau_over_n(grid):
    worst = worst_neighbours(
        lambda x: jnp.mean(x, axis=0),
        l2_on(grid),
        bound=2 * TAU / N,
        record_space=L2Ball(TAU, grid),
        n=N,
        budget=BUDGET,
    )
    check_reaches(worst, 2 * TAU / N)
    assert worst.method == "gradient"
    # the worst pair is a pair of antipodal curves on the sphere ||x|| = tau
    a, b = worst.data[worst.index], worst.data_prime[worst.index]
    assert L2Ball(TAU, grid).norm(a) == pytest.approx(TAU, rel=1e-6)
    np.testing.assert_allclose(a, -b, atol=1e-3)


def search_shrunk_mean(shrink, basis, grid, coefficient_norm, analytic):
    """Search the coefficient-shrunk mean ``shrink * <mean, phi>`` and check it reaches ``analytic``."""
    worst = worst_neighbours(
        lambda x: shrink * basis.project(jnp.mean(x, axis=0)),
        lambda h: coefficient_norm(h, basis.eigenvalues),
        bound=analytic,
        record_space=L2Ball(TAU, grid),
        n=N,
        budget=BUDGET,
    )
    check_reaches(worst, analytic)
    return worst


def test_iclp_qr_mean_reaches_the_cauchy_schwarz_bound_in_the_1c_norm(grid, basis):
    eta, psi = 1.5, 1e-3
    s = shrinkage(basis, eta, psi)
    weights = s / jnp.sqrt(basis.eigenvalues)
    analytic = 2 * TAU / N * float(jnp.sqrt(jnp.sum(weights**2)))
    printed = 2 * TAU / N * float(jnp.sum(weights))  # LR Thm 6's per-coordinate bound
    assert analytic < printed  # the printed bound is valid but not tight

    worst = search_shrunk_mean(s, basis, grid, one_c_norm, analytic)
    # the maximiser has coefficients proportional to w (up to signs)
    d = np.abs(np.asarray(basis.project(worst.data[worst.index] - worst.data_prime[worst.index])))
    cosine = d @ np.asarray(weights) / (np.linalg.norm(d) * float(jnp.linalg.norm(weights)))
    assert cosine > 0.99


def test_mrs_penalised_mean_reaches_the_cameron_martin_bound(grid, basis):
    eta, phi = 1.0, 1e-3
    s = shrinkage(basis, eta, phi)
    weights = s / jnp.sqrt(basis.eigenvalues)
    analytic = 2 * TAU / N * float(jnp.max(weights))
    # MRS Thm 4.1's eigenvalue-free bound tau / (n sqrt(phi)) at eta = 1 is above it
    assert analytic <= TAU / (N * math.sqrt(phi)) * (1 + 1e-12)

    search_shrunk_mean(s, basis, grid, cameron_martin_norm, analytic)


def test_gaussian_kde_approaches_the_rkhs_bound_as_points_separate(grid):
    h_bw = 0.1
    kde_grid = uniform_grid(60)
    kernel = Gaussian(lengthscale=h_bw)  # exp(-r^2 / (2 h^2)), HRW's noise kernel
    kde_basis = kl_basis(kernel, kde_grid)
    normaliser = (2 * math.pi * h_bw**2) ** -0.5

    def kde(points):  # points (n, 1) in [0, 1]
        return normaliser * jnp.mean(kernel(kde_grid.points, points), axis=1)

    analytic = math.sqrt(2) * normaliser / N
    worst = worst_neighbours(
        kde,
        lambda h: cameron_martin_norm(kde_basis.project(h), kde_basis.eigenvalues),
        bound=analytic,
        record_space=Box(0.0, 1.0, dim=1),
        n=N,
        budget=BUDGET,
    )
    check_reaches(worst, analytic)
    x, x_prime = worst.data[worst.index, 0], worst.data_prime[worst.index, 0]
    # the exact RKHS norm of the difference bounds the grid norm (HRW Prop. 3.4) ...
    exact = normaliser / N * math.sqrt(2 - 2 * math.exp(-((x - x_prime) ** 2) / (2 * h_bw**2)))
    assert worst.distance <= exact * (1 + 1e-6)
    # ... and both approach sqrt(2) / (n (2 pi h^2)^(1/2)) only for far-apart points
    assert abs(x - x_prime) > 0.25


def test_piecewise_constant_summary_falls_back_to_differential_evolution():
    """ECDF counts on a grid have zero gradient; the l1 worst case N_grid / n needs x = low, x' = high."""
    thresholds = (jnp.arange(32) + 0.5) / 32  # 32 cell midpoints of [0, 1]
    n = 10

    def ecdf(scores):
        return jnp.mean(jnp.where(scores[:, None] <= thresholds[None, :], 1.0, 0.0), axis=0)

    # a score below the first threshold counts at all 32, one above the last at none
    analytic = len(thresholds) / n
    worst = worst_neighbours(
        ecdf,
        lambda h: jnp.sum(jnp.abs(h)),
        bound=analytic,
        record_space=Box(0.0, 1.0),
        n=n,
        budget=SearchBudget(candidates=256, evolution_iterations=30),
    )
    assert worst.method in ("random", "evolution")
    assert worst.ratio == pytest.approx(1.0, abs=1e-12)
    assert min(worst.data[worst.index], worst.data_prime[worst.index]) < thresholds[0]


def test_add_remove_search_on_a_sum():
    """Under add-remove the sum changes by one record: sup = the box size."""
    worst = worst_neighbours(
        lambda x: jnp.sum(x),
        jnp.abs,
        bound=2.0,
        record_space=Box(-2.0, 1.0),
        n=5,
        adjacency="add-remove",
        budget=SearchBudget(restarts=4, steps=40, candidates=64),
    )
    assert worst.adjacency == "add-remove"
    assert len(worst.data) == 5 and len(worst.data_prime) == 4
    assert worst.ratio == pytest.approx(1.0, abs=1e-9)
    assert worst.data[worst.index] == pytest.approx(-2.0)


def test_labelled_records_are_searched_over_labels_and_features():
    """A label-weighted mean: (1/n) ||y x - y' x'|| <= 2 r / n, needing opposite signed features."""
    space = Product(L2Ball(1.0, dim=3), Labels((-1.0, 1.0)))
    worst = worst_neighbours(
        lambda data: jnp.mean(data[1][:, None] * data[0], axis=0),
        lambda h: jnp.sqrt(jnp.sum(h * h)),
        bound=2.0 / 6,
        record_space=space,
        n=6,
        budget=SearchBudget(restarts=8, steps=60, candidates=64),
    )
    assert worst.ratio == pytest.approx(1.0, abs=1e-6)
    assert set(np.unique(worst.data[1])) <= {-1.0, 1.0}
    assert space.contains((worst.data[0], worst.data[1]))


def test_a_mechanism_is_searched_with_its_claim():
    n = 8

    def model(data):  # pragma: no cover - never run here
        raise NotImplementedError

    mech = Mechanism(
        name="understated-mean",
        model=model,
        claim=Claim(epsilon=1.0, sensitivity=0.5 / n, sensitivity_norm="l1"),
        summary=lambda x: jnp.mean(jnp.clip(x, 0.0, 1.0)),
        difference_norm=jnp.abs,
        params={"record_space": Box(0.0, 1.0)},
    )
    worst = worst_neighbours(mech, n=n, budget=SearchBudget(restarts=4, steps=40, candidates=64))
    assert worst.name == "understated-mean"
    assert worst.ratio == pytest.approx(2.0, rel=1e-9)
    assert worst.exceeds()
    assert "ratio 2.000000" in worst.describe()


def test_same_seed_same_result_and_fixed_data(grid):
    data = np.asarray(L2Ball(TAU, grid).sample(np.random.default_rng(3), (N,)))
    kwargs = dict(
        record_space=L2Ball(TAU, grid),
        data=data,
        budget=SearchBudget(restarts=2, steps=20, candidates=16),
        seed=7,
    )
    first = worst_neighbours(lambda x: jnp.mean(x, axis=0), l2_on(grid), 1.0, **kwargs)
    second = worst_neighbours(lambda x: jnp.mean(x, axis=0), l2_on(grid), 1.0, **kwargs)
    assert first.distance == second.distance
    np.testing.assert_array_equal(first.data, second.data)
    # only the searched record differs from the given data
    rest = np.delete(first.data, first.index, axis=0)
    np.testing.assert_array_equal(rest, np.delete(data, first.index, axis=0))


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({}, ValueError, "give record_space"),
        ({"record_space": Box(), "n": 0}, ValueError, "n must be an integer"),
        ({"record_space": Box(), "n": 3, "method": "magic"}, ValueError, "method must be"),
        ({"record_space": Box(), "n": 3, "vary": "all"}, ValueError, "vary must be"),
        ({"record_space": "box", "n": 3}, TypeError, "RecordSpace"),
        ({"record_space": Box(), "data": np.array([2.0])}, ValueError, "outside the record space"),
    ],
)
def test_bad_search_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        worst_neighbours(jnp.mean, jnp.abs, 1.0, **kwargs)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: L2Ball(0.0, dim=2), "radius must be > 0"),
        (lambda: L2Ball(1.0), "exactly one of grid"),
        (lambda: Box(1.0, 0.0), "low < high"),
        (lambda: Box(0.0, 1.0, dim=0), "dim must be"),
        (lambda: Labels(()), "non-empty"),
        (lambda: SearchBudget(restarts=0), "restarts must be"),
    ],
)
def test_bad_record_spaces(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_record_space_primitives(grid):
    rng = np.random.default_rng(0)
    ball = L2Ball(2.0, grid)
    x = ball.sample(rng, (50,))
    assert x.shape == (50, grid.size) and ball.contains(x)
    far = 10 * x
    projected = np.asarray(ball.project(far))
    np.testing.assert_allclose(ball.norm(projected), 2.0, rtol=1e-12)
    assert ball.contains(np.asarray(ball.from_unit(rng.uniform(size=(20, grid.size)))))
    # the corner u = (1, 0, ..., 0) maps to the curve of norm radius concentrated at one point
    u = np.full(grid.size, 0.5)
    u[0] = 1.0
    assert float(ball.norm(ball.from_unit(u))) == pytest.approx(2.0)
    box = Box(-1.0, 3.0, dim=2)
    assert box.contains(box.sample(rng, (10,)))
    np.testing.assert_allclose(box.project(np.array([[-5.0, 9.0]])), [[-1.0, 3.0]])
    labels = Labels((0, 1, 2))
    np.testing.assert_array_equal(labels.from_unit(np.array([[0.0], [0.5], [1.0]])), [0, 1, 2])
    np.testing.assert_array_equal(labels.project(jnp.array([0.2, 1.7])), [0, 2])
