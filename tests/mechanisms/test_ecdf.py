"""BMR ECDF: claim vs distance, smoothing, inverse ECDF, private AUC, Hosmer-Lemeshow."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE

import dpaudit
from mechanisms.ecdf import (
    auc,
    bmr_worst_case_sensitivity,
    hosmer_lemeshow,
    inverse_ecdf,
    private_hosmer_lemeshow,
    roc_counts,
    roc_curve,
    smooth_ecdf,
)


def test_worst_case_is_L_and_claim_is_L_plus_1():
    for depth in range(1, 8):
        assert bmr_worst_case_sensitivity(depth) == depth
    mech = dpaudit.build("bmr-ecdf", n_points=16)
    assert mech.claim.sensitivity == 5.0 and mech.params["node_scale"] == 5.0


def test_distance_never_exceeds_claim_on_neighbours():
    mech = dpaudit.build("bmr-ecdf", n=30, n_points=8)
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(40):
        d = rng.uniform(-0.2, 1.2, 30)
        d_prime = d.copy()
        d_prime[rng.integers(30)] = rng.uniform(-0.2, 1.2)
        dpaudit.check_adjacent(d, d_prime)
        worst = max(worst, float(mech.distance(d, d_prime)))
    assert worst <= mech.claim.sensitivity - 1  # the exact worst case is L = 3 < L + 1


def test_release_privacy_loss_is_bounded_by_L_over_L_plus_1_epsilon():
    mech = dpaudit.build("bmr-ecdf", n=20, n_points=4, epsilon=1.0)
    d = np.full(20, 0.1)
    d_prime = d.copy()
    d_prime[0] = 0.8  # shifts counts on an interval of grid points
    x = mech.sample(d, jax.random.key(0), 100)
    loss = mech.release_log_prob(d, x) - mech.release_log_prob(d_prime, x)
    assert float(jnp.max(jnp.abs(loss))) <= 2 / 3 + 1e-3  # L/(L+1) epsilon, L = 2


def test_per_point_noise_variance_in_counts():
    """Per-point count variance (docs/oracles.md#oracle-bmr, docs/paper-errors.md#bmr-error-units): Var(n F-hat - n F) = 2 (L+1)^3 / epsilon^2 per grid point."""
    n, eps = 50, 2.0
    mech = dpaudit.build("bmr-ecdf", n=n, n_points=8, epsilon=eps)
    d = np.linspace(0, 1, n)
    x = np.asarray(mech.sample(d, jax.random.key(3), 100_000))
    counts_noise = n * (x - np.asarray(mech.summary(d)))
    ratio = counts_noise.var(0) / (2 * 4**3 / eps**2)
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / 16)  # kurtosis of a sum of 4 Laplaces is 4.5
    np.testing.assert_array_less(np.abs(ratio - 1), z * math.sqrt(3.5 / 100_000))


@pytest.mark.parametrize("p", [1, 2])
def test_smoothing_is_monotone_in_unit_interval_and_deterministic(p):
    mech = dpaudit.build("bmr-ecdf", n=40, n_points=16, epsilon=0.5)
    x = np.asarray(mech.sample(np.linspace(0, 1, 40), jax.random.key(p), 5))
    for row in x:
        s = smooth_ecdf(row, p=p)
        assert np.all(np.diff(s) >= 0) and s.min() >= 0 and s.max() <= 1
        np.testing.assert_array_equal(s, smooth_ecdf(row.copy(), p=p))
    already = np.linspace(0.1, 0.9, 16)
    np.testing.assert_allclose(smooth_ecdf(already, p=p), already, atol=1e-7)


def test_inverse_ecdf_returns_grid_points():
    grid = np.linspace(0, 1, 8)
    values = smooth_ecdf(np.array([0.0, 0.1, 0.05, 0.4, 0.5, 0.8, 0.7, 1.0]))
    q = inverse_ecdf(values, grid, np.linspace(0.01, 0.99, 30))
    assert set(np.asarray(q).tolist()) <= set(grid.tolist())
    with pytest.raises(ValueError, match="non-decreasing"):
        inverse_ecdf([0.5, 0.2, 1.0], [0.0, 0.5, 1.0], 0.3)


def test_private_auc_on_breast_cancer():
    """n = 569, epsilon = 1, grid of 8 points, smoothed (p = 2) ROC.

    Error analysis: AUC = int TPR dFPR, so |AUC' - AUC| <= sup|TPR' - TPR| + sup|FPR' - FPR|
    for monotone curves. Each ECDF value carries the sum of L + 1 = 4 Lap(8) counts (sd 22.6);
    normalised by the 212 positives and 357 negatives, the rates' errors have sd about 0.11 and
    0.07 and the AUC error sd is about 0.05 (seen in 200 simulated releases: sd 0.04). The
    stated tolerance 0.25 is 5 sd plus the grid discretisation (computed exactly below).
    """
    datasets = pytest.importorskip("sklearn.datasets")
    linear = pytest.importorskip("sklearn.linear_model")
    metrics = pytest.importorskip("sklearn.metrics")
    x, y = datasets.load_breast_cancer(return_X_y=True)
    x = (x - x.mean(0)) / x.std(0)
    prob = linear.LogisticRegression(max_iter=1000).fit(x, y).predict_proba(x)[:, 1]
    score = 1.0 - prob  # BMR: lower score = positive
    exact = metrics.roc_auc_score(y, prob)
    mech = dpaudit.build("bmr-roc", n=569, n_points=8, epsilon=1.0)
    grid_auc = auc(*roc_curve(*np.asarray(roc_counts(score, y, mech.params["grid"]))))
    release = np.asarray(mech.sample((score, y.astype(float)), jax.random.key(7)))
    private = auc(*roc_curve(smooth_ecdf(release[0]), smooth_ecdf(release[1])))
    assert abs(grid_auc - exact) < 0.05
    assert abs(private - grid_auc) < 0.25


def test_hosmer_lemeshow_half_open_groups_and_large_epsilon_limit():
    rng = np.random.default_rng(0)
    m = rng.uniform(size=400)
    y = (rng.uniform(size=400) < m).astype(float)
    m[:5] = 0.5  # values on a cut point count once
    _, sums = hosmer_lemeshow(m, y, np.linspace(0, 1, 11))
    assert sums[2].sum() + sums[3].sum() == 400
    h_private, _, cuts = private_hosmer_lemeshow(
        m, y, epsilon=1e7, key=jax.random.key(0), expected_floor=1e-9
    )
    h_same_cuts, _ = hosmer_lemeshow(m, y, cuts)
    assert h_private == pytest.approx(h_same_cuts, rel=1e-3)


def test_hosmer_lemeshow_budget_split_is_epsilon_over_L_plus_9(monkeypatch):
    """The tree nodes get Lap((L + 9)/epsilon) and so do the 4 Q group sums: with all labels
    0 the observed-positive row is pure noise, z (L + 9)/epsilon for the key's own draws
    (a split epsilon/(L + 1) would overspend 2x at L = 6 and fails both checks)."""
    import mechanisms.ecdf.analysis as analysis

    scales = []
    real = analysis.AncestorLaplace

    def spy(values, depth, scale, **kwargs):
        scales.append((depth, scale))
        return real(values, depth, scale, **kwargs)

    monkeypatch.setattr(analysis, "AncestorLaplace", spy)
    rng = np.random.default_rng(0)
    m, y = rng.uniform(size=200), np.zeros(200)
    key, epsilon, n_groups = jax.random.PRNGKey(7), 2.0, 10
    _, sums, _ = private_hosmer_lemeshow(m, y, epsilon=epsilon, key=key, n_groups=n_groups)
    ((depth, scale),) = scales
    assert depth == 6 and scale == pytest.approx((depth + 9) / epsilon, rel=1e-15)
    _, key_sums = jax.random.split(key)
    z = np.asarray(jax.random.laplace(key_sums, (4, n_groups)))
    np.testing.assert_allclose(sums[2], z[2] * (depth + 9) / epsilon, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_inverse_ecdf_is_the_smallest_grid_point_reaching_p(seed):
    """Minimality by brute force: the answer reaches p and no earlier grid point does (the
    last point when none does); ties in the values included."""
    rng = np.random.default_rng(seed)
    values = np.sort(np.round(rng.uniform(size=12), 1))  # rounded: repeated values
    grid = np.cumsum(rng.uniform(0.1, 1.0, size=12))
    levels = np.concatenate([rng.uniform(size=20), values[:3], [0.0, 1.0]])
    answers = np.asarray(inverse_ecdf(values, grid, levels))
    for p, t in zip(levels, answers, strict=True):
        reaching = [i for i in range(12) if values[i] >= p]
        assert t == grid[reaching[0] if reaching else 11]


@pytest.mark.parametrize("seed", range(6))
def test_p1_smoothing_is_optimal_against_an_independent_lp(seed):
    """p = 1: the smoothed values are feasible (monotone, in [0, 1]), and the cheapest
    correction reaching them, min ||nu||_1 s.t. A nu = x - F (equality LP), equals the optimum
    of the smoothing problem written independently (split |nu| <= t, dual simplex)."""
    from scipy.optimize import linprog

    from dpaudit.model.noise.linear_laplace import ancestor_matrix

    rng = np.random.default_rng(seed)
    n_points = 8
    noisy = np.sort(rng.uniform(size=n_points)) + rng.laplace(scale=0.2, size=n_points)
    x = smooth_ecdf(noisy, p=1)
    assert np.all(np.diff(x) >= 0) and x[0] >= 0 and x[-1] <= 1
    a = ancestor_matrix(3, n_points)
    nodes = a.shape[1]
    # reaching x exactly: min sum t, -t <= nu <= t, A nu = x - F
    eye = np.eye(nodes)
    split = np.block([[eye, -eye], [-eye, -eye]])
    cost = np.concatenate([np.zeros(nodes), np.ones(nodes)])
    reach = linprog(
        cost,
        A_ub=split,
        b_ub=np.zeros(2 * nodes),
        A_eq=np.hstack([a, 0 * a]),
        b_eq=x - noisy,
        bounds=(None, None),
        method="highs-ds",
    )
    # the smoothing problem: x = F + A nu monotone in [0, 1], min sum t
    order = np.zeros((n_points + 1, n_points))
    order[0, 0], order[1, -1] = -1.0, 1.0
    order[2 + np.arange(n_points - 1), np.arange(n_points - 1)] = 1.0
    order[2 + np.arange(n_points - 1), np.arange(1, n_points)] = -1.0
    rhs = np.zeros(n_points + 1)
    rhs[1] = 1.0
    best = linprog(
        cost,
        A_ub=np.vstack([split, np.hstack([order @ a, 0 * order @ a])]),
        b_ub=np.concatenate([np.zeros(2 * nodes), rhs - order @ noisy]),
        bounds=(None, None),
        method="highs-ds",
    )
    assert reach.status == 0 and best.status == 0
    assert reach.fun == pytest.approx(best.fun, rel=1e-9, abs=1e-9)
