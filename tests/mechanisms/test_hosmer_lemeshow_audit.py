"""Private Hosmer–Lemeshow as a registered mechanism: its budget split checked by an audit.

Oracles: the numpy Hosmer–Lemeshow sums (``hosmer_lemeshow``) and scipy's Laplace density
for the transcript's conditional law, brute force over cut points for the group sums'
total shift, and the closed form ``(Delta* + 4) epsilon'`` of the supremum on the worst
pair (``Delta*`` the ECDF's exact worst case, 4 the group sums' worst shift).
"""

import itertools

import jax
import numpy as np
import pytest
import scipy.stats

import dpaudit
from dpaudit.datasets import generate
from mechanisms.ecdf import (
    HosmerLemeshowRelease,
    bmr_exact_sensitivity,
    hosmer_lemeshow,
    hosmer_lemeshow_epsilon_prime,
    hosmer_lemeshow_sum_shift,
    inverse_ecdf,
    tree_depth,
)


def test_transcript_density_is_the_ecdf_density_times_laplace_sums_at_its_cut_points():
    rng = np.random.default_rng(0)
    m, y = rng.uniform(size=30), rng.integers(0, 2, size=30).astype(float)
    grid, eps_prime, q = np.linspace(0.0, 1.0, 4), 0.3, 4
    law = HosmerLemeshowRelease(m, y, grid, tree_depth(4), eps_prime, q)
    x = np.asarray(law.sample(jax.random.key(1), (5,)))
    assert x.shape == (5, 4 + 4 * q)
    both = jax.jit(lambda v: (law.log_prob(v), law.ecdf.log_prob(v[:, :4])))(x)
    got = np.asarray(both[0]) - np.asarray(both[1])
    for row, value in zip(x, got, strict=True):
        envelope = np.clip(np.maximum.accumulate(row[:4]), 0.0, 1.0)
        inner = np.asarray(inverse_ecdf(envelope, grid, np.arange(1, q) / q))
        _, sums = hosmer_lemeshow(m, y, np.concatenate([[0.0], inner, [1.0]]))
        expected = scipy.stats.laplace.logpdf(row[4:], sums.reshape(-1), 1 / eps_prime).sum()
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_group_sum_shift_bounds_hold_and_are_attained_over_cut_points():
    rng = np.random.default_rng(1)
    grid = np.linspace(0.0, 1.0, 6)
    cut_sets = [
        np.concatenate([[0.0], np.sort(c), [1.0]])
        for c in itertools.combinations_with_replacement(grid, 3)
    ]
    others_m, others_y = rng.uniform(size=9), rng.integers(0, 2, size=9).astype(float)
    for m0, y0, m1, y1 in [(0.0, 0.0, 1.0, 1.0), (0.4, 1.0, 0.7, 0.0), (0.3, 0.0, 0.3, 1.0)]:
        lower, upper = hosmer_lemeshow_sum_shift((m0, y0), (m1, y1))
        shifts = []
        for cuts in cut_sets:
            _, a = hosmer_lemeshow(np.r_[m0, others_m], np.r_[y0, others_y], cuts)
            _, b = hosmer_lemeshow(np.r_[m1, others_m], np.r_[y1, others_y], cuts)
            shifts.append(np.abs(a - b).sum())
        assert lower - 1e-12 <= min(shifts) and max(shifts) <= upper + 1e-12
        assert min(shifts) == pytest.approx(lower) and max(shifts) == pytest.approx(upper)


@pytest.mark.parametrize(
    ("name", "verdict"),
    [
        ("bmr-hosmer-lemeshow", "pass"),
        # the violation is also pinned by its golden record (audits/faulty)
        pytest.param("faulty/bmr-hosmer-lemeshow-budget", "violation", marks=pytest.mark.slow),
    ],
)
def test_the_budget_split_is_checked_by_auditing_the_mechanism(name, verdict):
    """epsilon / (L + 9) passes on the worst pair; epsilon / (L + 1) is a certified violation."""
    mech = dpaudit.build(name)
    d, d_prime = generate("scores", mech, seed=0)  # record 0: (0, 0) -> (1, 1)
    p = mech.params
    worst, _ = bmr_exact_sensitivity(p["n_points"])
    sup = (worst + 4.0) * p["epsilon_prime"]  # ECDF worst case + 4 group sums
    law, law_prime = mech.release_distribution(d), mech.release_distribution(d_prime)
    bounds = law.exact_sup_loss(law_prime)
    assert bounds.sup_loss_lower <= sup <= bounds.sup_loss
    assert bounds.sup_loss == pytest.approx(sup, rel=1e-9)
    if verdict == "pass":
        assert p["epsilon_prime"] == hosmer_lemeshow_epsilon_prime(p["epsilon"], p["depth"])
        assert sup <= mech.claim.epsilon
    else:
        assert mech.known_flaw.true_epsilon == pytest.approx(sup, rel=1e-12)
    result = dpaudit.audit(mech, d, d_prime, samples=200, seed=0)
    assert result.verdict == verdict
    if verdict == "violation":
        truth = mech.known_flaw.true_epsilon
        assert 0.9 * truth <= result.epsilon_lower <= truth
