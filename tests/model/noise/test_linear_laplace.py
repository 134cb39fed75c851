"""Linear-Laplace releases: LP sensitivity (docs/paper-errors.md#bmr-noise-scale), the tree DP, and exact densities."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given, settings
from hypothesis import strategies as st
from numpyro.distributions.gof import auto_goodness_of_fit

from dpaudit.model.noise.linear_laplace import (
    AncestorLaplace,
    LinearLaplace,
    ancestor_matrix,
    ancestor_sensitivity,
    linear_laplace_epsilon,
    linear_laplace_sensitivity,
    linear_laplace_sensitivity_bounds,
)
from mechanisms.ecdf import interval_shifts


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_lp_worst_case_over_all_intervals_is_L_not_L_plus_1(depth):
    """min ||nu||_1 s.t. A nu = 1_[a,b]: the worst case over all intervals is exactly L.

    BMR's Lemma 1 states L + 1 (docs/paper-errors.md#bmr-noise-scale).
    """
    a = ancestor_matrix(depth)
    shifts = interval_shifts(2**depth)
    lp = np.array([linear_laplace_sensitivity(a, s) for s in shifts])
    assert lp.max() == pytest.approx(depth, abs=1e-6)
    assert np.all(lp <= depth + 1)  # BMR's Lemma 1 bound holds
    np.testing.assert_allclose(lp, ancestor_sensitivity(depth, shifts), atol=1e-6)


@pytest.mark.parametrize("depth", [5, 6, 7])
def test_lp_reproduces_L_for_deeper_trees(depth):
    """The exact DP covers every interval; the LP agrees on its worst intervals and a sample."""
    shifts = interval_shifts(2**depth)
    dp = ancestor_sensitivity(depth, shifts)
    assert dp.max() == depth
    a = ancestor_matrix(depth)
    worst = np.flatnonzero(dp == depth)[:3]
    sample = np.random.default_rng(depth).choice(len(shifts), 12, replace=False)
    for i in np.concatenate([worst, sample]):
        assert linear_laplace_sensitivity(a, shifts[i]) == pytest.approx(dp[i], abs=1e-6)
    assert max(linear_laplace_sensitivity(a, shifts[i]) for i in worst) == pytest.approx(depth)


@pytest.mark.parametrize("depth", [2, 3, 4])
def test_textbook_tree_needs_2L_under_replacement(depth):
    """Node counts released directly (A = I): moving a record between leaves shifts 2L nodes."""
    a = ancestor_matrix(depth)  # row i: the ancestors of leaf i, i.e. leaf i's path
    n_nodes = a.shape[1]
    moves = [a[j] - a[i] for i in range(2**depth) for j in range(2**depth)]
    worst = max(linear_laplace_sensitivity(np.eye(n_nodes), s) for s in moves)
    assert worst == pytest.approx(2 * depth, abs=1e-6)
    assert worst > depth + 1  # so Lap((L+1)/eps) is not enough


def test_infeasible_shift_is_infinite_and_zero_shift_is_zero():
    a = np.array([[1.0, 0.0], [1.0, 0.0]])
    assert linear_laplace_sensitivity(a, [1.0, 0.0]) == math.inf
    assert linear_laplace_sensitivity(a, [0.0, 0.0]) == 0.0
    assert linear_laplace_epsilon(a, [0.5, 0.5], scale=2.0, count_scale=4.0) == pytest.approx(1.0)


@settings(max_examples=25)
@given(st.integers(1, 4), st.lists(st.integers(-2, 2), min_size=1, max_size=16))
def test_tree_dp_equals_lp_for_integer_shifts(depth, values):
    shift = np.array(values[: 2**depth], dtype=float)
    lp = linear_laplace_sensitivity(ancestor_matrix(depth, shift.size), shift)
    assert float(ancestor_sensitivity(depth, shift)) == pytest.approx(lp, abs=1e-6)


def _basic_solutions_minimum(matrix, shift) -> float:
    """min ||nu||_1 over A nu = s by enumerating basic solutions (an LP optimum is one)."""
    m, p = matrix.shape
    best = math.inf
    for columns in itertools.combinations(range(p), m):
        sub = matrix[:, columns]
        if abs(np.linalg.det(sub)) > 1e-12:
            best = min(best, float(np.sum(np.abs(np.linalg.solve(sub, shift)))))
    return best


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_certified_bounds_bracket_brute_force(depth, seed):
    """Dual objective <= brute-force minimum <= repaired primal, with a tiny gap."""
    rng = np.random.default_rng(seed)
    a = ancestor_matrix(depth)
    shift = rng.normal(size=a.shape[0]) * rng.choice([1e-3, 1.0, 1e3])
    bounds = linear_laplace_sensitivity_bounds(a, shift)
    exact = _basic_solutions_minimum(a, shift)
    assert bounds.lower <= exact <= bounds.upper
    assert bounds.lower <= bounds.point <= bounds.upper
    assert bounds.gap <= 1e-10 * (1.0 + exact)


def test_certified_bounds_on_random_dense_matrices():
    rng = np.random.default_rng(1)
    for _ in range(10):
        a = rng.normal(size=(3, 5))
        shift = rng.normal(size=3)
        bounds = linear_laplace_sensitivity_bounds(a, shift)
        assert bounds.lower <= _basic_solutions_minimum(a, shift) <= bounds.upper


def test_certified_bounds_widen_with_the_shift_error():
    a = ancestor_matrix(2)
    shift = np.array([1.0, 1.0, 0.0, 0.0])
    tight = linear_laplace_sensitivity_bounds(a, shift)
    loose = linear_laplace_sensitivity_bounds(a, shift, shift_error=1e-6)
    assert loose.lower < tight.lower <= 1.0 <= tight.upper < loose.upper
    # the true value of any shift within the error stays inside the wide bounds
    for sign in itertools.product((-1.0, 1.0), repeat=4):
        moved = shift + 1e-6 * np.array(sign)
        assert loose.lower <= _basic_solutions_minimum(a, moved) <= loose.upper


def test_certified_bounds_of_zero_and_infeasible_shifts():
    assert linear_laplace_sensitivity_bounds(np.eye(2), [0.0, 0.0]) == (0.0, 0.0, 0.0)
    infeasible = linear_laplace_sensitivity_bounds([[1.0], [1.0]], [1.0, 0.0])
    assert math.isinf(infeasible.lower) and math.isinf(infeasible.upper)


def test_bad_inputs_raise_one_sentence():
    with pytest.raises(ValueError, match="one entry per"):
        linear_laplace_sensitivity(np.eye(2), [1.0])
    with pytest.raises(ValueError, match="NaN"):
        linear_laplace_sensitivity(np.eye(2), [np.nan, 1.0])
    with pytest.raises(ValueError, match="depth"):
        ancestor_matrix(-1)
    with pytest.raises(NotImplementedError, match="linear_laplace_sensitivity"):
        LinearLaplace(jnp.zeros(1), jnp.ones((1, 2)), 1.0).log_prob(jnp.zeros(1))


def test_square_linear_laplace_density_matches_scipy():
    """Invertible A: change of variables; compare with a scipy product of Laplace densities."""
    a = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.5, 1.0, 2.0]])
    d = LinearLaplace(jnp.array([0.1, 0.2, 0.3]), a, scale=0.7, count_scale=5.0)
    y = np.array([[0.3, -0.2, 1.0], [0.1, 0.2, 0.3]])
    eta = 5.0 * np.linalg.solve(a, (y - [0.1, 0.2, 0.3]).T).T
    expected = scipy.stats.laplace(scale=0.7).logpdf(eta).sum(1) + 3 * np.log(5.0)
    expected -= np.log(abs(np.linalg.det(a)))
    np.testing.assert_allclose(d.log_prob(jnp.asarray(y)), expected, rtol=1e-12)


def test_ancestor_density_depth_one_matches_scipy_quadrature():
    """Two leaves + root: p(u) = int Lap(w) Lap(u1 - w) Lap(u2 - w) dw (closed form vs quad)."""
    b = 1.3
    law = scipy.stats.laplace(scale=b)
    d = AncestorLaplace(jnp.zeros(2), 1, b)
    for u in [(0.0, 0.0), (3.0, -2.0), (-40.0, 35.0), (0.1, 200.0)]:
        pts = sorted([0.0, *u])
        edges = [-np.inf, *pts, np.inf]
        f = lambda w, u=u: law.pdf(w) * law.pdf(u[0] - w) * law.pdf(u[1] - w)  # noqa: E731
        total = sum(
            scipy.integrate.quad(f, lo, hi, epsabs=0, epsrel=1e-13, limit=200)[0]
            for lo, hi in itertools.pairwise(edges)
        )
        assert float(d.log_prob(jnp.array(u))) == pytest.approx(math.log(total), abs=1e-9)


def test_ancestor_density_depth_two_matches_nested_scipy_quadrature():
    """Depth 2 (4 leaves, 2 internal nodes, root) by nested scipy quadrature: within 2e-5.

    An independent computation of the belief-propagation integral: the two level-1
    messages exactly (the integrand is a piecewise exponential between its kinks, integrated
    in closed form segment by segment), the root integral by scipy's quad over its
    breakpoints. The grid quadrature's error was measured below 2e-5 at depths 2-5 (docstring).
    """
    b = 1.3
    law = scipy.stats.laplace(scale=b)

    def message(x, a, c):  # int Lap(w - x) Lap(a - w) Lap(c - w) dw, exactly
        kinks = sorted([x, a, c])
        total = 0.0
        for lo, hi in itertools.pairwise([-np.inf, *kinks, np.inf]):
            # on (lo, hi) the exponent -(|w-x| + |w-a| + |w-c|)/b is linear: k w + m
            mid = 0.0 if np.isinf(lo) and np.isinf(hi) else (hi - 1.0 if np.isinf(lo) else
                  lo + 1.0 if np.isinf(hi) else (lo + hi) / 2)  # fmt: skip
            k = -sum(np.sign(mid - p) for p in (x, a, c)) / b
            m = sum(np.sign(mid - p) * p for p in (x, a, c)) / b
            if k == 0.0:
                total += np.exp(m) * (hi - lo)
            else:
                total += (np.exp(k * hi + m) - np.exp(k * lo + m)) / k
        return total / (2 * b) ** 3

    d = AncestorLaplace(jnp.zeros(4), 2, b)
    for u in [(0.3, -1.2, 2.0, 0.5), (4.0, 3.5, -6.0, -2.0)]:
        g = lambda w, u=u: law.pdf(w) * message(w, u[0], u[1]) * message(w, u[2], u[3])  # noqa: E731
        edges = [-60.0, *sorted([0.0, *u]), 60.0]
        total = sum(
            scipy.integrate.quad(g, lo, hi, epsabs=0, epsrel=1e-10, limit=200)[0]
            for lo, hi in itertools.pairwise(edges)
        )
        assert float(d.log_prob(jnp.array(u))) == pytest.approx(math.log(total), abs=2e-5)


def test_ancestor_samples_fit_density_and_variance():
    """GOF of sample() against log_prob(); per-point variance 2 (L+1) b^2 / n^2 (docs/oracles.md#oracle-bmr)."""
    d = AncestorLaplace(jnp.array([0.2, 0.5, 0.9]), 2, 1.5, count_scale=10.0)
    x = d.sample(jax.random.key(0), (4000,))
    assert auto_goodness_of_fit(x, jnp.exp(d.log_prob(x))) > TEST_FAILURE_RATE
    big = np.asarray(d.sample(jax.random.key(1), (200_000,)))
    var = big.var(0)
    expected = 2 * 3 * 1.5**2 / 100.0
    # Var of a sample variance: (kurtosis - 1) sigma^4 / N; a sum of 3 Laplaces has kurtosis 5
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / 6)
    np.testing.assert_array_less(np.abs(var / expected - 1), z * math.sqrt(4 / 200_000))
