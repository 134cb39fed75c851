"""Private Hosmer–Lemeshow as a registered multi-site mechanism: its budget split checked by an audit.

Oracles: the numpy Hosmer–Lemeshow sums (``hosmer_lemeshow``) and scipy's Laplace density
for the transcript's conditional law, brute force over cut points for the group sums'
total shift (all rows, expected rows, observed rows), the one-distribution form of the
same transcript (``HosmerLemeshowRelease``, its own chain-rule density and declared
supremum) for the three-site release, and the closed form ``(Delta* + 4) epsilon'`` of
the supremum on the worst pair (``Delta*`` the ECDF's exact worst case, 4 the group
sums' worst shift).
"""

import itertools

import jax
import numpy as np
import pytest
import scipy.stats

import dpaudit
from dpaudit.io.datasets import generate
from dpaudit.model.sites import JointRelease
from mechanisms.ecdf import (
    HosmerLemeshowRelease,
    bmr_exact_sensitivity,
    hosmer_lemeshow,
    hosmer_lemeshow_epsilon_prime,
    hosmer_lemeshow_sum_shift,
    inverse_ecdf,
    tree_depth,
)

ENTRIES = ("bmr-hosmer-lemeshow", "faulty/bmr-hosmer-lemeshow-budget")
SITES = ("ecdf", "expected", "observed")


def _one_law(mech, data):
    """The same transcript as one distribution (the oracle of the three-site release)."""
    p = mech.params
    grid = np.linspace(0.0, 1.0, p["n_points"])
    scores, labels = data
    return HosmerLemeshowRelease(
        scores, labels, grid, p["depth"], p["epsilon_prime"], p["n_groups"]
    )


def test_transcript_density_is_the_ecdf_density_times_laplace_sums_at_its_cut_points():
    rng = np.random.default_rng(0)
    m, y = rng.uniform(size=30), rng.integers(0, 2, size=30).astype(float)
    grid, eps_prime, q = np.linspace(0.0, 1.0, 4), 0.3, 4
    law = HosmerLemeshowRelease(m, y, grid, tree_depth(4), eps_prime, q)
    x = np.asarray(jax.jit(lambda key: law.sample(key, (5,)))(jax.random.key(1)))  # one program
    assert x.shape == (5, 4 + 4 * q)
    both = jax.jit(lambda v: (law.log_prob(v), law.ecdf.log_prob(v[:, :4])))(x)
    got = np.asarray(both[0]) - np.asarray(both[1])
    for row, value in zip(x, got, strict=True):
        envelope = np.clip(np.maximum.accumulate(row[:4]), 0.0, 1.0)
        inner = np.asarray(inverse_ecdf(envelope, grid, np.arange(1, q) / q))
        _, sums = hosmer_lemeshow(m, y, np.concatenate([[0.0], inner, [1.0]]))
        expected = scipy.stats.laplace.logpdf(row[4:], sums.reshape(-1), 1 / eps_prime).sum()
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(
    "n_points",
    [2, pytest.param(4, marks=pytest.mark.slow)],  # 4: the spec's tree, a quadrature density
)
def test_the_three_site_density_is_the_one_law_density(n_points):
    """Same layout (F, E1, E0, O1, O0): the joint density of the sites is the chain rule."""
    mech = dpaudit.build("bmr-hosmer-lemeshow", n_points=n_points)
    d, _ = generate("scores", mech, seed=0)
    law = mech.release_distribution(d)
    assert isinstance(law, JointRelease) and law.release_sites == SITES and law.adaptive()
    one = _one_law(mech, d)
    # the joint law's own draws are exercised by the audit below (its Monte Carlo); the
    # points drawn as one program (eagerly each operation compiled on its own: 2.4 against
    # 1.4 s CPU side by side)
    values = np.asarray(jax.jit(lambda key: one.sample(key, (8,)))(jax.random.key(3)))
    assert law.event_shape == (n_points + 4 * mech.params["n_groups"],)
    # both jitted, as an audit evaluates them (eagerly every operation compiles on its own)
    mine = jax.jit(law.log_prob)(values)
    np.testing.assert_allclose(mine, jax.jit(one.log_prob)(values), rtol=1e-12)


def test_group_sum_shift_bounds_hold_and_are_attained_over_cut_points():
    rng = np.random.default_rng(1)
    grid = np.linspace(0.0, 1.0, 6)
    cut_sets = [
        np.concatenate([[0.0], np.sort(c), [1.0]])
        for c in itertools.combinations_with_replacement(grid, 3)
    ]
    others_m, others_y = rng.uniform(size=9), rng.integers(0, 2, size=9).astype(float)
    rows = {"all": slice(0, 4), "expected": slice(0, 2), "observed": slice(2, 4)}
    for m0, y0, m1, y1 in [(0.0, 0.0, 1.0, 1.0), (0.4, 1.0, 0.7, 0.0), (0.3, 0.0, 0.3, 1.0)]:
        shifts = {name: [] for name in rows}
        for cuts in cut_sets:
            _, a = hosmer_lemeshow(np.r_[m0, others_m], np.r_[y0, others_y], cuts)
            _, b = hosmer_lemeshow(np.r_[m1, others_m], np.r_[y1, others_y], cuts)
            for name, part in rows.items():
                shifts[name].append(np.abs(a[part] - b[part]).sum())
        for name, seen in shifts.items():
            lower, upper = hosmer_lemeshow_sum_shift((m0, y0), (m1, y1), rows=name)
            assert lower - 1e-12 <= min(seen) and max(seen) <= upper + 1e-12
            assert min(seen) == pytest.approx(lower) and max(seen) == pytest.approx(upper)
    with pytest.raises(ValueError, match="rows must be one of"):
        hosmer_lemeshow_sum_shift((0.0, 0.0), (1.0, 1.0), rows="E1")


def _moved(data, record):
    (scores, labels), i = data, 0
    scores, labels = scores.copy(), labels.copy()
    scores[i], labels[i] = record
    return scores, labels


@pytest.mark.parametrize("name", ENTRIES)
@pytest.mark.parametrize("move", [((0.0, 0.0), (1.0, 1.0)), ((0.4, 1.0), (0.7, 0.0))])
def test_the_multi_site_supremum_is_the_one_law_supremum(name, move):
    """Sum of the sites' bounds (the sums' uniform over cut points) == the one law's bounds."""
    mech = dpaudit.build(name)
    d, _ = generate("scores", mech, seed=0)
    d, d_prime = _moved(d, move[0]), _moved(d, move[1])
    law, law_prime = mech.release_distribution(d), mech.release_distribution(d_prime)
    multi = law.exact_sup_loss(law_prime)
    single = _one_law(mech, d).exact_sup_loss(_one_law(mech, d_prime))
    assert multi.method.startswith("adaptive sites: ")
    assert "expected sums" in multi.method and "observed sums" in multi.method
    for field in ("forward_lower", "forward_upper", "backward_lower", "backward_upper"):
        assert getattr(multi, field) == pytest.approx(getattr(single, field), rel=1e-13)
    eps_prime = mech.params["epsilon_prime"]
    (m0, y0), (m1, y1) = move
    low = (2 * abs(m0 - m1) + 2 * abs(y0 - y1)) * eps_prime  # the sums, same group
    assert multi.sup_loss >= 4 * eps_prime and multi.sup_loss_lower >= low * (1 - 1e-12)


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
    assert mech.release_sites == SITES
    d, d_prime = generate("scores", mech, seed=0)  # record 0: (0, 0) -> (1, 1)
    p = mech.params
    worst, _ = bmr_exact_sensitivity(p["n_points"])
    sup = (worst + 4.0) * p["epsilon_prime"]  # ECDF worst case + 4 group sums
    law, law_prime = mech.release_distribution(d), mech.release_distribution(d_prime)
    bounds = law.exact_sup_loss(law_prime)
    assert bounds.sup_loss_lower <= sup <= bounds.sup_loss
    assert bounds.sup_loss == pytest.approx(sup, rel=1e-9)
    assert bounds.sup_loss_lower == pytest.approx(sup, rel=1e-9)
    if verdict == "pass":
        assert p["epsilon_prime"] == hosmer_lemeshow_epsilon_prime(p["epsilon"], p["depth"])
        assert sup <= mech.claim.epsilon
    else:
        assert mech.known_flaw.true_epsilon == pytest.approx(sup, rel=1e-12)
    result = dpaudit.audit(mech, d, d_prime, samples=200, seed=0)
    assert result.verdict == verdict
    assert result.exact is not None and result.exact.sup_loss == bounds.sup_loss
    if verdict == "violation":
        truth = mech.known_flaw.true_epsilon
        assert 0.9 * truth <= result.epsilon_lower <= truth
