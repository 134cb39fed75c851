"""Exact suprema of the privacy loss: linear-Laplace LP, enumeration, two-sided geometric."""

import itertools
import math
import time

import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import dpaudit
from dpaudit.accounting.profiles import laplace_delta
from dpaudit.accounting.suprema import (
    ExactSupLoss,
    SupremumAccounting,
    exact_sup_loss,
    two_sided_geometric_sup_loss,
)
from dpaudit.io.datasets import generate
from dpaudit.model.noise.linear_laplace import (
    AncestorLaplace,
    LinearLaplace,
    ancestor_matrix,
    ancestor_sensitivity,
)
from mechanisms.faulty import example_pair


def _brute_force_l1(matrix, shift) -> float:
    """min ||d||_1 over A d = s by enumerating basic solutions (an LP optimum is one)."""
    m, p = matrix.shape
    best = math.inf
    for columns in itertools.combinations(range(p), m):
        sub = matrix[:, columns]
        if abs(np.linalg.det(sub)) < 1e-12:
            continue
        best = min(best, float(np.sum(np.abs(np.linalg.solve(sub, shift)))))
    return best


def _pair(name, **params):
    mechanism = dpaudit.build(name, **params)
    spec = {"bmr-ecdf": ("scores", {"labels": False}), "bmr-roc": ("scores", {})}
    generator, options = spec.get(name, ("bits", {}))
    data, data_prime = generate(generator, mechanism, seed=0, **options)
    return (
        mechanism,
        mechanism.release_distribution(data),
        mechanism.release_distribution(data_prime),
    )


def _contains(result: ExactSupLoss, value: float):
    assert result.sup_loss_lower <= value <= result.sup_loss
    assert result.forward_lower <= value <= result.forward_upper
    assert result.backward_lower <= value <= result.backward_upper
    assert result.error < 1e-9 * (1 + value)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_linear_laplace_matches_brute_force_on_small_trees(depth):
    rng = np.random.default_rng(depth)
    matrix = ancestor_matrix(depth)
    for _ in range(5):
        shift = rng.integers(-2, 3, size=matrix.shape[0]).astype(float)
        scale = 1.7
        p = AncestorLaplace(jnp.asarray(shift) / 10.0, depth, scale, count_scale=10.0)
        q = AncestorLaplace(jnp.zeros(matrix.shape[0]), depth, scale, count_scale=10.0)
        result = exact_sup_loss(p, q)
        assert result.method == "linear-laplace"
        expected = _brute_force_l1(matrix, shift) / scale
        _contains(result, expected)
        assert ancestor_sensitivity(depth, shift) / scale == pytest.approx(expected, abs=1e-12)


def test_linear_laplace_loss_approaches_the_supremum_along_the_shift():
    """Depth 1 has a closed-form density: the loss along y = t s tends to the LP value."""
    shift = np.array([1.0, -1.0])  # min ||d||_1 = 2 (the root cannot help)
    p = AncestorLaplace(jnp.asarray(shift), 1, 1.0)
    q = AncestorLaplace(jnp.zeros(2), 1, 1.0)
    sup = exact_sup_loss(p, q).sup_loss
    losses = [float(p.log_prob(t * shift) - q.log_prob(t * shift)) for t in (1.0, 5.0, 40.0)]
    assert max(losses) <= sup + 1e-9  # never above the supremum
    assert losses[-1] == pytest.approx(sup, abs=1e-9)  # attained in the limit
    grid = np.linspace(-6, 6, 25)
    ys = jnp.asarray(np.stack(np.meshgrid(grid, grid), -1).reshape(-1, 2))
    assert float(jnp.max(jnp.abs(p.log_prob(ys) - q.log_prob(ys)))) <= sup + 1e-9


def test_square_linear_laplace_is_exact_and_attained():
    matrix = jnp.array([[1.0, 0.0], [1.0, 1.0]])
    p = LinearLaplace(jnp.array([1.0, 3.0]), matrix, scale=0.5)
    q = LinearLaplace(jnp.zeros(2), matrix, scale=0.5)
    result = exact_sup_loss(p, q)
    expected = float(np.sum(np.abs(np.linalg.solve(np.asarray(matrix), [1.0, 3.0])))) / 0.5
    _contains(result, expected)
    y = jnp.array([-10.0, -30.0])  # far on the side opposite the shift: |L| is maximal
    assert float(q.log_prob(y) - p.log_prob(y)) == pytest.approx(expected, abs=1e-9)


def test_shift_outside_the_column_space_is_singular():
    matrix = jnp.array([[1.0], [1.0]])
    p = LinearLaplace(jnp.array([1.0, 0.0]), matrix, scale=1.0)
    q = LinearLaplace(jnp.zeros(2), matrix, scale=1.0)
    result = exact_sup_loss(p, q)
    assert math.isinf(result.sup_loss_lower) and math.isinf(result.sup_loss)
    accounting = result.accounting()
    assert accounting.delta_lower(5.0) == 1.0 and accounting.epsilon_lower(0.0) == math.inf


def test_different_matrices_or_scales_are_not_recognised():
    p = LinearLaplace(jnp.zeros(2), jnp.eye(2), scale=1.0)
    assert exact_sup_loss(p, LinearLaplace(jnp.zeros(2), jnp.eye(2), scale=2.0)) is None
    assert exact_sup_loss(p, LinearLaplace(jnp.zeros(2), 2 * jnp.eye(2), scale=1.0)) is None
    assert exact_sup_loss(dist.Normal(0.0, 1.0), dist.Normal(1.0, 1.0)) is None


@pytest.mark.parametrize("n_points", [4, 8, 16])
def test_bmr_ecdf_passes_its_claim(n_points):
    mechanism, p, q = _pair("bmr-ecdf", n_points=n_points)
    result = exact_sup_loss(p, q)
    assert 0 < result.sup_loss <= mechanism.claim.epsilon
    # the pair moves one record from 0 to 1: count shift 1 on every released leaf
    scale = mechanism.params["node_scale"]
    depth = mechanism.params["depth"]
    shift = np.ones(n_points)
    shift[-1] = 0.0  # the last grid point is 1: both records are below it
    _contains(result, float(ancestor_sensitivity(depth, shift)) / scale)


def test_bmr_exact_calibration_is_tight():
    """With calibration="exact" the worst case of every pair is at most epsilon, exactly."""
    mechanism, p, q = _pair("bmr-ecdf", n_points=16, calibration="exact")
    assert exact_sup_loss(p, q).sup_loss <= mechanism.claim.epsilon * (1 + 1e-9)


def test_bmr_roc_sums_its_two_releases():
    mechanism, p, q = _pair("bmr-roc", n_points=16)
    result = exact_sup_loss(p, q)
    scale = mechanism.params["node_scale"]
    n = mechanism.params["n"]
    shift = n * (np.asarray(p.base_dist.loc) - np.asarray(q.base_dist.loc))
    expected = sum(float(ancestor_sensitivity(4, row)) for row in shift) / scale
    _contains(result, expected)
    assert result.sup_loss <= mechanism.claim.epsilon


def test_textbook_tree_under_replacement_exceeds_its_claim():
    name = "faulty/textbook-tree-replace-one"
    mechanism = dpaudit.build(name)
    data, data_prime = example_pair(name)
    result = exact_sup_loss(
        mechanism.release_distribution(data), mechanism.release_distribution(data_prime)
    )
    assert result.sup_loss_lower > mechanism.claim.epsilon
    _contains(result, mechanism.known_flaw.true_epsilon)


def test_two_sided_geometric_is_exact():
    alpha = 0.3
    result = two_sided_geometric_sup_loss(5.0, 2.0, math.log(1 / alpha))
    _contains(result, 3 * math.log(1 / alpha))
    assert math.isinf(two_sided_geometric_sup_loss(0.5, 0.0, 1.0).sup_loss_lower)


def test_geometric_count_passes_and_matches_enumeration():
    mechanism, p, q = _pair("geometric-count", n=30)
    result = exact_sup_loss(p, q)
    assert result.method == "declared"
    _contains(result, mechanism.claim.epsilon)  # count shift 1, a = epsilon
    ks = jnp.arange(-200.0, 230.0)
    brute = float(jnp.max(jnp.abs(p.log_prob(ks) - q.log_prob(ks))))
    assert brute == pytest.approx(result.sup_loss, abs=1e-12)


def test_enumeration_of_categorical_and_binomial():
    p, q = (
        dist.Categorical(probs=jnp.array([0.5, 0.3, 0.2])),
        dist.Categorical(probs=jnp.array([0.2, 0.3, 0.5])),
    )
    result = exact_sup_loss(p, q)
    _contains(result, math.log(2.5))
    b1, b2 = dist.Binomial(5, probs=0.4), dist.Binomial(5, probs=0.5)
    k = np.arange(6)
    ratio = np.log(scipyish_binom(k, 0.4)) - np.log(scipyish_binom(k, 0.5))
    result = exact_sup_loss(b1, b2)
    assert result.forward_lower <= ratio.max() <= result.forward_upper
    assert result.backward_lower <= (-ratio).max() <= result.backward_upper


def scipyish_binom(k, prob):
    return np.array([math.comb(5, int(i)) * prob**i * (1 - prob) ** (5 - i) for i in k])


def test_enumeration_with_a_missing_point_is_infinite():
    p, q = (
        dist.Categorical(probs=jnp.array([0.5, 0.5])),
        dist.Categorical(probs=jnp.array([1.0, 0.0])),
    )
    result = exact_sup_loss(p, q)
    assert math.isinf(result.forward_upper) and math.isfinite(result.backward_upper)


def test_batched_enumeration_adds_up():
    p = dist.Bernoulli(probs=jnp.array([0.5, 0.25])).to_event(1)
    q = dist.Bernoulli(probs=jnp.array([0.25, 0.5])).to_event(1)
    expected = math.log(2.0) + math.log(1.5)  # x = (1, 0): 0.5/0.25 and 0.75/0.5
    result = exact_sup_loss(p, q)
    assert result.forward_lower <= expected <= result.forward_upper
    assert result.error < 1e-9


def test_supremum_accounting_bounds():
    accounting = SupremumAccounting(sup_loss=1.0, sup_loss_lower=0.9, method="declared")
    assert accounting.delta_upper(1.0) == 0.0
    assert accounting.delta_upper(0.0) == pytest.approx(1 - math.exp(-1.0))
    # delta(eps) <= 1 - e^{eps - S} is tight for a two-point law at +-S: check the bound holds
    assert float(accounting.delta_upper(0.5)) >= 0.0
    assert accounting.epsilon_upper(0.0) == 1.0
    assert accounting.epsilon_upper(0.1) == pytest.approx(1.0 + math.log(0.9))
    assert accounting.epsilon_lower(0.0) == 0.9 and accounting.epsilon_lower(0.1) == 0.0
    assert accounting.summary()["family"] == "supremum"


def test_linear_laplace_route_is_fast_at_catalogue_sizes():
    _, p, q = _pair("bmr-roc", n_points=16)
    start = time.perf_counter()
    for _ in range(5):
        exact_sup_loss(p, q)
    assert (time.perf_counter() - start) / 5 < 0.5


def test_enumeration_declines_different_or_huge_supports():
    assert exact_sup_loss(dist.DiscreteUniform(0, 3), dist.DiscreteUniform(0, 4)) is None
    huge = dist.Binomial(10**7, probs=0.5)
    assert exact_sup_loss(huge, dist.Binomial(10**7, probs=0.4)) is None


def test_supremum_delta_bound_dominates_laws_with_that_supremum():
    """(1 - e^{eps - S})_+ is above the Laplace curve and the randomised-response curve."""
    eps = np.linspace(0.0, 2.0, 41)
    accounting = SupremumAccounting(sup_loss=1.5, sup_loss_lower=1.5, method="declared")
    bound = accounting.delta_upper(eps)
    assert np.all(bound >= laplace_delta(eps, 1.5) - 1e-15)
    # randomised response with loss +-S: delta(eps) = (e^S - e^eps)_+ / (1 + e^S)
    rr = np.maximum(0.0, np.exp(1.5) - np.exp(eps)) / (1 + np.exp(1.5))
    assert np.all(bound >= rr - 1e-15)
