"""BMR's continual counter (Thm 0.A.1, Laplace): suffix sensitivity ceil((L+1)/2), exact losses.

Oracles: the linear programme of dpaudit.model.noise.linear_laplace (HiGHS) against the tree dynamic
programme, brute-force dyadic block sums, the closed form ceil((L+1)/2) of BMR Lemma 1 for
suffixes, and the Laplace density ratio of the textbook node counts.
"""

import math

import jax
import numpy as np
import pytest

import dpaudit
from dpaudit.model.noise.linear_laplace import (
    ancestor_matrix,
    ancestor_sensitivity,
    linear_laplace_sensitivity,
)
from mechanisms.continual.counter import (
    continual_node_scale,
    continual_worst_case,
    example_pair,
    node_counts,
    running_counts,
    suffix_shifts,
)


@pytest.mark.parametrize("depth", range(1, 7))
def test_suffix_worst_case_is_ceil_half_of_l_plus_one(depth):
    assert continual_worst_case(2**depth)[0] == math.ceil((depth + 1) / 2)


@pytest.mark.parametrize("n_steps", [2, 5, 8, 13, 16])
def test_tree_programme_equals_the_linear_programme_on_every_suffix(n_steps):
    depth = math.ceil(math.log2(n_steps))
    a = ancestor_matrix(depth, n_steps)
    lp = [linear_laplace_sensitivity(a, s) for s in suffix_shifts(n_steps)]
    np.testing.assert_allclose(ancestor_sensitivity(depth, suffix_shifts(n_steps)), lp, atol=1e-6)
    assert max(lp) <= math.ceil((depth + 1) / 2) + 1e-6


def test_privacy_loss_of_every_neighbour_is_at_most_epsilon_and_attained():
    """|d| min-l1 explanation / b <= epsilon for random real-valued changes; = epsilon at the
    documented pair (a 0 -> 1 change at the worst step)."""
    mech = dpaudit.build("continual-counter")
    scale = mech.params["node_scale"]
    d, d_prime = example_pair("continual-counter")
    assert float(mech.distance(d, d_prime)) / scale == pytest.approx(1.0)
    rng = np.random.default_rng(5)
    for _ in range(50):
        x = rng.uniform(0, 1, 8)
        y = x.copy()
        y[rng.integers(8)] = rng.uniform(0, 1)
        assert float(mech.distance(x, y)) / scale <= 1.0 + 1e-12


def test_release_is_running_counts_plus_ancestor_noise():
    mech = dpaudit.build("continual-counter", epsilon=0.5)
    d, _ = example_pair("continual-counter")
    np.testing.assert_allclose(running_counts(d), np.cumsum(d))
    x = np.asarray(mech.sample(d, jax.random.key(0), 40_000))
    b = continual_node_scale(0.5, 3)
    assert b == 4.0
    # each step gets L + 1 = 4 independent Lap(b): variance 2 (L+1) b^2 = 128, sd of the
    # sample variance ~ sqrt((kurtosis-1)/N) 128 with excess kurtosis 3/4: 5 sd is 5 %
    np.testing.assert_allclose(x.var(0), 128.0, rtol=0.05)
    np.testing.assert_allclose(x.mean(0), np.cumsum(d), atol=5 * math.sqrt(128 / 40_000))


def test_textbook_node_counts_and_true_epsilon():
    stream = np.arange(8.0) / 8
    counts = np.asarray(node_counts(stream, 3))
    blocks = [stream[j * 2**lv : (j + 1) * 2**lv].sum() for lv in range(4) for j in range(8 >> lv)]
    np.testing.assert_allclose(counts, blocks)
    bad = dpaudit.build("faulty/continual-textbook-half-scale")
    d, d_prime = example_pair("faulty/continual-textbook-half-scale")
    x = bad.sample(d, jax.random.key(1), 2000)
    loss = np.asarray(bad.release_log_prob(d, x) - bad.release_log_prob(d_prime, x))
    assert loss.max() == pytest.approx(bad.known_flaw.true_epsilon, rel=1e-9)
    assert bad.known_flaw.true_epsilon == 2.0


def test_bad_streams_are_refused():
    mech = dpaudit.build("continual-counter")
    with pytest.raises(ValueError, match="shape"):
        mech.summary(np.zeros(5))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mech.summary(np.full(8, 2.0))
