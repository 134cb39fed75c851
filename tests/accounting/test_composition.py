"""Composed accounting (dpaudit.accounting.composition) against exact oracles and dp_accounting."""

import math

import numpy as np
import pytest
import scipy.integrate
from dp_accounting.pld import privacy_loss_distribution as dp_pld

from dpaudit.accounting import composition
from dpaudit.accounting.composition import (
    GaussianComponent,
    LaplaceComponent,
    SupremumComponent,
    compose_accounting,
    connect_dots_pmf,
    exact_accounting,
    fold_tails,
    self_compose_pmf,
)
from dpaudit.accounting.profiles import (
    DiscretePLD,
    compose_pmfs,
    gaussian_curve,
    laplace_delta,
    laplace_pld,
    laplace_pmfs,
)
from dpaudit.accounting.suprema import SupremumAccounting
from dpaudit.model.loss import NoiseShift


def _shift(family, h, lam=None, sigma=1.0):
    h = np.asarray(h, dtype=float)
    lam = np.ones_like(h) if lam is None else np.asarray(lam, dtype=float)
    return NoiseShift(family, h, lam, sigma, False, 0.0, h, h * 0, None, "independent")


def _dp_composed(plds):
    out = plds[0]
    for p in plds[1:]:
        out = out.compose(p)
    return out


def test_gaussian_parts_compose_exactly():
    acc = compose_accounting([_shift("gaussian", [3.0]), _shift("gaussian", [4.0])])
    assert acc.family == "gaussian"
    assert acc.mu == pytest.approx(5.0, rel=1e-15)
    eps = np.array([-1.0, 0.0, 1.0, 4.0])
    np.testing.assert_array_equal(acc.delta_upper(eps), gaussian_curve(eps, 5.0))
    # counts repeat a part: 25 copies of mu = 1 is mu = 5
    assert compose_accounting([GaussianComponent(1.0)], [25]).mu == pytest.approx(5.0)


def test_laplace_sites_match_the_single_site_engine_and_dp_accounting():
    rng = np.random.default_rng(0)
    a1, a2 = rng.uniform(0.05, 0.4, 7), rng.uniform(0.05, 0.4, 5)
    acc = compose_accounting(
        [_shift("laplace", a1 * math.sqrt(0.5)), _shift("laplace", a2 * math.sqrt(0.5))]
    )
    assert acc.family == "laplace"
    assert acc.sup_loss == pytest.approx(a1.sum() + a2.sum(), rel=1e-14)
    single = laplace_pld(np.concatenate([a1, a2]), 1e-4)
    ref = _dp_composed(
        [dp_pld.from_laplace_mechanism(1.0, sensitivity=float(a)) for a in np.r_[a1, a2]]
    )
    eps = np.linspace(0.0, 0.99 * acc.sup_loss, 17)
    ours = acc.delta_upper(eps)
    theirs = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    np.testing.assert_allclose(ours, single.delta(eps), atol=1e-10)
    np.testing.assert_allclose(ours, theirs, atol=1e-9)
    assert np.all(ours >= theirs - 1e-12)
    assert np.all(acc.delta_lower(eps) <= ours)


def _true_gaussian_plus_laplace(eps, mu, a):
    """E over the Laplace loss (atoms and density) of the Gaussian curve at eps - L."""

    def density(x):
        return math.exp(0.5 * (x - a)) / 4 * float(gaussian_curve(eps - x, mu))

    cont = scipy.integrate.quad(density, -a, a, epsabs=1e-14, epsrel=1e-12)[0]
    atoms = 0.5 * float(gaussian_curve(eps - a, mu)) + 0.5 * math.exp(-a) * float(
        gaussian_curve(eps + a, mu)
    )
    return cont + atoms


def test_mixed_gaussian_laplace_sandwiches_the_exact_curve():
    mu, a = 0.8, 0.6
    acc = compose_accounting([GaussianComponent(mu), LaplaceComponent(a)], discretization=1e-3)
    assert acc.family == "composed" and acc.sup_loss == math.inf
    for e in (-0.5, 0.0, 0.5, 1.5, 3.0):
        truth = _true_gaussian_plus_laplace(e, mu, a)
        up, lo = float(acc.delta_upper(e)), float(acc.delta_lower(e))
        assert lo <= truth <= up
        assert up - lo < 0.02 * max(truth, 1e-6) + 1e-6  # discretisation 1e-3


def test_heterogeneous_laplace_and_gaussians_agree_with_dp_accounting():
    """Acceptance: 100 heterogeneous Laplace + 10 Gaussian components."""
    rng = np.random.default_rng(1)
    a = rng.uniform(0.01, 0.1, 100)
    mus = rng.uniform(0.05, 0.3, 10)
    parts = [LaplaceComponent(float(x)) for x in a] + [GaussianComponent(float(m)) for m in mus]
    acc = compose_accounting(parts)
    ref = _dp_composed(
        [dp_pld.from_laplace_mechanism(1.0, sensitivity=float(x)) for x in a]
        + [dp_pld.from_gaussian_mechanism(1.0, sensitivity=float(m)) for m in mus]
    )
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0, 4.0])
    ours = acc.delta_upper(eps)
    theirs = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    lower = acc.delta_lower(eps)
    # dp_accounting's pessimistic curve is itself an upper bound, so the two upper curves
    # agree to within both discretisations (same grid, same connect-the-dots pmfs except
    # that dpaudit merges the 10 Gaussians into one exactly before discretising).
    np.testing.assert_allclose(ours, theirs, rtol=2e-3, atol=1e-10)
    assert np.all(lower <= ours)
    assert np.all(lower <= theirs * (1 + 1e-9))
    for d in (1e-5, 1e-3):
        e_up, e_ref = acc.epsilon_upper(d), ref.get_epsilon_for_delta(d)
        assert e_up == pytest.approx(e_ref, abs=2e-3)
        assert acc.epsilon_lower(d) <= e_up


def test_power_path_equals_direct_convolution_within_its_margin():
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 1, 40)
    p /= p.sum()
    direct = p.copy()
    for _ in range(24):
        direct = np.convolve(direct, p)
    off, out, margin = self_compose_pmf(-3, p, 25, 0.01, 1e-15)
    assert margin < 1e-10
    full = np.zeros(direct.size)
    start = off - (-3 * 25)
    full[start : start + out.size] = out
    assert np.sum(np.abs(full - direct)) <= margin


def test_equal_laplace_power_path_matches_the_tree():
    acc = compose_accounting([LaplaceComponent(0.05)], [300])
    tree = laplace_pld(np.full(300, 0.05), 1e-4)
    eps = np.array([0.5, 1.0, 2.0, 3.0])
    np.testing.assert_allclose(acc.delta_upper(eps), tree.delta(eps), atol=1e-9)
    ref = dp_pld.from_laplace_mechanism(1.0, sensitivity=0.05).self_compose(300)
    theirs = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    assert np.all(acc.delta_upper(eps) >= theirs - 1e-12)
    assert np.all(acc.delta_lower(eps) <= theirs)


def test_supremum_parts_are_dominated_by_randomized_response():
    # a pure 0.3-DP Laplace part: its curve lies below randomized response's
    rr = compose_accounting([SupremumAccounting(0.3, 0.3, "declared")], discretization=1e-3)
    assert rr.family == "composed" and rr.sup_loss == pytest.approx(0.3)
    eps = np.linspace(-0.5, 0.3, 9)
    assert np.all(rr.delta_upper(eps) >= laplace_delta(eps, 0.3) - 1e-12)
    np.testing.assert_allclose(
        rr.delta_upper(np.array([0.0, 0.1])), SupremumComponent(0.3).curve([0.0, 0.1]), atol=1e-12
    )
    # composed with a Gaussian: still above the Gaussian + Laplace truth
    both = compose_accounting([SupremumComponent(0.3), GaussianComponent(0.5)], discretization=1e-3)
    assert float(both.delta_upper(0.5)) >= _true_gaussian_plus_laplace(0.5, 0.5, 0.3)


def test_fold_tails_moves_mass_the_safe_way():
    p = np.array([1e-6, 2e-6, 0.5, 0.5 - 5e-6, 2e-6])
    off, kept, inf = fold_tails(3, p, 1e-5, pessimistic=True)
    # upper curve: the lower tail moves up to the first kept point, the upper tail to +inf
    assert off == 5 and kept.size == 2 and inf == 2e-6
    assert kept[0] == pytest.approx(0.5 + 3e-6, abs=1e-15) and kept[1] == p[3]
    off, kept, inf = fold_tails(3, p, 1e-5, pessimistic=False)
    # lower curve: the upper tail moves down to the last kept point, the lower tail is dropped
    assert off == 5 and inf == 0.0
    assert kept[0] == 0.5 and kept[1] == pytest.approx(p[3] + 2e-6, abs=1e-15)


def test_connect_dots_reproduces_the_curve_at_grid_points():
    a, d = 0.37, 1e-3
    k = np.arange(math.floor(-a / d), math.ceil(a / d) + 1)
    lo, probs, inf = connect_dots_pmf(laplace_delta(k * d, a), int(k[0]), d)
    losses = d * (lo + np.arange(probs.size))
    for e in (-0.2, 0.0, 0.1, 0.3):
        curve = float(np.sum(probs * np.maximum(0.0, -np.expm1(e - losses)))) + inf
        assert curve == pytest.approx(float(laplace_delta(e, a)), abs=1e-12)


def test_singular_and_identity_parts():
    singular = NoiseShift(
        "gaussian", np.ones(1), np.ones(1), 1.0, True, 1.0, np.ones(1), np.zeros(1), None, "grid"
    )
    assert compose_accounting([_shift("laplace", [1.0]), singular]).family == "singular"
    same = compose_accounting([_shift("laplace", [0.0]), _shift("gaussian", [0.0])])
    assert same.sup_loss == 0.0 and float(same.delta_upper(0.0)) == 0.0
    # an ExactAccounting re-composes from its components
    one = exact_accounting(_shift("laplace", [0.5]))
    two = compose_accounting([one, compose_accounting([one])])
    assert two.sup_loss == pytest.approx(2 * 0.5 * math.sqrt(2))


def test_bad_input_is_one_clear_sentence():
    with pytest.raises(TypeError, match="cannot compose a str"):
        compose_accounting(["laplace"])
    with pytest.raises(ValueError, match="discretization"):
        compose_accounting([LaplaceComponent(1.0)], discretization=0.0)
    with pytest.raises(ValueError, match="tail_mass"):
        compose_accounting([LaplaceComponent(1.0)], tail_mass=0.5)
    with pytest.raises(ValueError, match="counts has 2 entries"):
        compose_accounting([LaplaceComponent(1.0)], [1, 2])
    with pytest.raises(ValueError, match="non-negative integers"):
        compose_accounting([LaplaceComponent(1.0)], [-1])
    with pytest.raises(ValueError, match="infinite supremum"):
        compose_accounting([SupremumAccounting(math.inf, 1.0, "declared")])


def test_connect_dots_sends_the_curve_above_the_grid_to_infinity():
    """A grid cut below the loss's support: the curve beyond the grid (delta(hi)) must stay."""
    mu, d = 1.0, 1e-2
    k = np.arange(-100, 101)  # losses in [-1, 1]: delta(1) = 0.127 must go to +inf
    lo, probs, inf = connect_dots_pmf(gaussian_curve(k * d, mu), -100, d)
    assert inf == pytest.approx(float(gaussian_curve(1.0, mu)), rel=1e-12)
    losses = d * (lo + np.arange(probs.size))
    for e in (1.0, 1.5, 3.0):
        curve = float(np.sum(probs * np.maximum(0.0, -np.expm1(e - losses)))) + inf
        assert curve >= float(gaussian_curve(e, mu))


# ------------------------------------------ many distinct components: the windowed tree


def _laplace_mix(n, lo, hi, seed):
    a = np.random.default_rng(seed).uniform(lo, hi, n)
    # grid-aligned and near-grid parameters exercise the exact edge tests of the closed form
    a[:4] = [0.002, 0.0021, 0.05, 0.05 + 1e-17]
    return a


def test_many_laplace_components_equal_the_plain_convolution(monkeypatch):
    """>= 32 distinct parts: closed-form pmfs + windowed tree = the plain tree (laplace_pld)."""
    monkeypatch.setattr(composition, "_LAPLACE_ROUTE", False)  # plain Laplace: tree forced
    a = _laplace_mix(120, 0.002, 0.08, 3)
    acc = compose_accounting([LaplaceComponent(float(x)) for x in a], discretization=1e-3)
    eps = np.linspace(-1.0, 0.99 * acc.sup_loss, 60)
    for estimate, ours in (("pessimistic", acc.delta_upper), ("optimistic", acc.delta_lower)):
        plain = laplace_pld(a, 1e-3, estimate=estimate).delta(eps)
        # the two differ by round-off and its charge only: the plain tree's derived FFT bound
        # (3.3e-11 here, docs/composition.md) against the windowed tree's N eps
        np.testing.assert_allclose(ours(eps), plain, rtol=1e-9, atol=1e-10)
    ref = _dp_composed(
        [
            dp_pld.from_laplace_mechanism(
                1.0, sensitivity=float(x), value_discretization_interval=1e-3
            )
            for x in a
        ]
    )
    theirs = np.array([ref.get_delta_for_epsilon(e) for e in eps[eps >= 0]])
    assert np.all(acc.delta_upper(eps[eps >= 0]) >= theirs - 1e-12)


def test_windowed_tree_moves_the_cut_tails_the_safe_way(monkeypatch):
    """A large tail budget makes the windows cut ~1e-5 of mass: the curves must stay sound."""
    monkeypatch.setattr(composition, "_LAPLACE_ROUTE", False)  # plain Laplace: tree forced
    a = np.random.default_rng(4).uniform(0.05, 0.1, 64)
    acc = compose_accounting(
        [LaplaceComponent(float(x)) for x in a], discretization=1e-3, tail_mass=1e-3
    )
    assert acc.upper_pld.infinity_mass > 1e-7  # the windows did cut mass above them
    eps = np.linspace(0.0, 3.5, 141)
    exact_up = laplace_pld(a, 1e-3, estimate="pessimistic").delta(eps)
    exact_low = laplace_pld(a, 1e-3, estimate="optimistic").delta(eps)
    assert np.all(acc.delta_upper(eps) >= exact_up - 1e-11)
    assert np.all(acc.delta_lower(eps) <= exact_low + 1e-11)
    assert np.all(acc.delta_upper(eps) <= exact_up + 2e-3)


def test_many_components_sandwich_a_high_resolution_composition():
    """Upper (lower) curve at d = 1e-3 above (below) the sandwich of the curve at d = 1e-5."""
    a = np.random.default_rng(5).uniform(0.01, 0.06, 40)
    mu = 0.3
    parts = [LaplaceComponent(float(x)) for x in a] + [GaussianComponent(mu)]
    coarse = compose_accounting(parts, discretization=1e-3)
    fine = compose_accounting(parts, discretization=1e-5)
    eps = np.array([0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 2.5])
    assert np.all(coarse.delta_upper(eps) >= fine.delta_lower(eps))
    assert np.all(coarse.delta_lower(eps) <= fine.delta_upper(eps))
    # the fine sandwich is narrow (the lower curve is first order in d: 41 parts x 1e-5)
    bulk = eps <= 1.5
    width = fine.delta_upper(eps[bulk]) - fine.delta_lower(eps[bulk])
    assert np.all(width < 1e-2 * fine.delta_upper(eps[bulk]))
    for delta in (1e-5, 1e-8):
        assert coarse.epsilon_upper(delta) >= fine.epsilon_lower(delta)


def test_windowed_last_product_with_a_gaussian_part_stays_sound():
    """The last product takes in the (long) Gaussian pmf; its window must account for it."""
    a = np.random.default_rng(6).uniform(0.05, 0.1, 40)
    mu, d = 0.8, 1e-3
    parts = [LaplaceComponent(float(x)) for x in a] + [GaussianComponent(mu)]
    acc = compose_accounting(parts, discretization=d, tail_mass=1e-3)
    # references: the same pmfs convolved in full (Gaussian cut at 1e-14 a tail)
    gauss_up = GaussianComponent(mu).upper_pmf(d, 1e-14)
    gauss_low = GaussianComponent(mu).lower_pmf(d, 1e-14)
    ref_up = DiscretePLD(
        d,
        *compose_pmfs([*laplace_pmfs(a, d, "pessimistic"), gauss_up[:2]]),
        gauss_up[2],
        0.0,
        "pessimistic",
    )
    ref_low = DiscretePLD(
        d, *compose_pmfs([*laplace_pmfs(a, d, "optimistic"), gauss_low]), 0.0, 0.0, "optimistic"
    )
    eps = np.linspace(-1.0, 6.0, 141)
    assert np.all(acc.delta_upper(eps) >= ref_up.delta(eps) - 1e-11)
    assert np.all(acc.delta_lower(eps) <= ref_low.delta(eps) + 1e-11)
    assert np.all(acc.delta_upper(eps) <= ref_up.delta(eps) + 2e-3)
