"""Exact GP and numerical ICLP/Laplace accounting, cross-checked against dp_accounting."""

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from dp_accounting.pld import privacy_loss_mechanism as dp_mech
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.accounting.composition import exact_accounting
from dpaudit.accounting.profiles import (
    compose_pmfs,
    gaussian_epsilon,
    gaussian_mu,
    laplace_delta,
    laplace_parameters,
    laplace_pld,
)
from dpaudit.model.loss import NoiseShift
from dpaudit.model.noise import gaussian_delta


def _dp_accounting_composed(scales, shifts, discretization):
    """dp_accounting's sequential composition of Laplace PLDs (connect-the-dots, pessimistic)."""
    pld = None
    for b, h in zip(scales, shifts, strict=True):
        one = dp_pld.from_laplace_mechanism(
            float(b), sensitivity=float(h), value_discretization_interval=discretization
        )
        pld = one if pld is None else pld.compose(one)
    return pld


def _shift(family, h, lam, sigma):
    h = np.asarray(h, dtype=float)
    return NoiseShift(family, h, np.asarray(lam, float), sigma, False, 0.0, h, h * 0, None, "x")


def test_single_laplace_curve_matches_dp_accounting_and_integration():
    b, h = 0.8, 0.5
    a = h / b
    eps = np.linspace(-1.0, 1.0, 41)
    ref = dp_mech.LaplacePrivacyLoss(b, sensitivity=h).get_delta_for_epsilon(eps)
    np.testing.assert_allclose(laplace_delta(eps, a), ref, atol=1e-14)
    # and against E_P[(1 - e^(eps - L))_+] integrated from the densities directly
    for e in (0.1, 0.4):

        def integrand(x, e=e):
            loss = (abs(x) - abs(x - h)) / b
            return max(0.0, 1 - math.exp(e - loss)) * math.exp(-abs(x - h) / b) / (2 * b)

        kink = (e * b + h) / 2  # where L(x) = e
        value = scipy.integrate.quad(integrand, -20, 20, points=[0.0, kink, h], epsabs=1e-13)[0]
        assert float(laplace_delta(e, a)) == pytest.approx(value, abs=1e-11)


@pytest.mark.parametrize("k", [1, 5, 30, pytest.param(100, marks=pytest.mark.slow)])
def test_composed_laplace_curve_agrees_with_dp_accounting_to_1e_9(k):
    """Acceptance: the numerical ICLP curve equals dp_accounting's composed PLD to 1e-9 in delta,
    and is never below it by more than the FFT round-off of the two computations."""
    rng = np.random.default_rng(k)
    lam = np.arange(1, k + 1.0) ** -2.0
    sigma = 0.9
    h = rng.uniform(-0.3, 0.3, k) * np.sqrt(lam)
    a = laplace_parameters(h, lam, sigma)
    scales = sigma * np.sqrt(lam / 2)
    reference = _dp_accounting_composed(scales, np.abs(h), 1e-4)
    mine = laplace_pld(a, 1e-4)
    eps = np.linspace(0.0, a.sum() * 1.05, 25)
    ours = mine.delta(eps)
    theirs = np.array([reference.get_delta_for_epsilon(e) for e in eps])
    np.testing.assert_allclose(ours, theirs, atol=1e-9, rtol=0)
    assert np.all(ours >= theirs - 1e-13)
    assert np.all(ours <= theirs + mine.margin + 1e-12)  # no more than our own round-off above


def test_pessimistic_and_optimistic_curves_sandwich_the_truth():
    # one component: the exact curve is known in closed form
    a = np.array([0.7])
    eps = np.linspace(-0.5, 0.8, 27)
    exact = laplace_delta(eps, 0.7)
    up, lo = laplace_pld(a, 1e-3), laplace_pld(a, 1e-3, estimate="optimistic")
    assert np.all(up.delta(eps) >= exact - 1e-15)
    assert np.all(lo.delta(eps) <= exact + 1e-15)
    # several components: the truth by Monte Carlo, within its standard error
    a = np.array([0.3, 0.2, 0.15, 0.1, 0.05])
    u = np.random.default_rng(0).laplace(size=(400_000, a.size))
    loss = np.sum(np.abs(u + a) - np.abs(u), axis=1)
    eps = np.array([0.0, 0.2, 0.4, 0.6])
    y = -np.expm1(np.minimum(eps[:, None] - loss[None], 0.0))
    mc, se = y.mean(axis=1), y.std(axis=1) / math.sqrt(loss.size)
    z = scipy.stats.norm.isf(1e-5 / 8)
    up, lo = laplace_pld(a, 1e-4), laplace_pld(a, 1e-4, estimate="optimistic")
    assert np.all(up.delta(eps) >= mc - z * se)
    assert np.all(lo.delta(eps) <= mc + z * se)
    # the two curves close in as the grid is refined
    gap = [
        np.max(laplace_pld(a, d).delta(eps) - laplace_pld(a, d, estimate="optimistic").delta(eps))
        for d in (1e-2, 1e-3)
    ]
    assert gap[1] < 0.2 * gap[0]


def test_fft_composition_matches_direct_convolution():
    rng = np.random.default_rng(5)
    comps = [
        (int(rng.integers(-30, 0)), rng.dirichlet(np.ones(rng.integers(2, 400)))) for _ in range(40)
    ]
    offset, probs = compose_pmfs(comps)
    direct_offset, direct = comps[0]
    for o, p in comps[1:]:
        direct_offset += o
        direct = np.convolve(direct, p)
    assert offset == direct_offset
    n = max(probs.size, direct.size)
    err = np.max(np.abs(np.pad(probs, (0, n - probs.size)) - np.pad(direct, (0, n - direct.size))))
    assert err < probs.size * np.finfo(float).eps / 100  # far inside the documented margin


def test_gaussian_exact_curve_against_dp_accounting():
    h, lam, sigma = np.array([0.3, -0.2, 0.1]), np.array([1.0, 0.5, 0.1]), 0.6
    acc = exact_accounting(_shift("gaussian", h, lam, sigma))
    mu = gaussian_mu(h, lam, sigma)
    assert acc.mu == pytest.approx(math.sqrt(np.sum(h * h / lam)) / sigma)
    ref = dp_pld.from_gaussian_mechanism(1.0, sensitivity=mu, value_discretization_interval=1e-5)
    for e in (0.0, 0.5, 1.0, 2.0):
        assert float(acc.delta_upper(e)) == pytest.approx(ref.get_delta_for_epsilon(e), abs=1e-6)
        assert float(acc.delta_upper(e)) == float(gaussian_delta(e, mu))
    e = acc.epsilon_upper(1e-3)
    assert float(gaussian_delta(e, mu)) <= 1e-3
    assert float(gaussian_delta(e * (1 - 1e-9), mu)) > 1e-3 * (1 - 1e-6)
    assert acc.epsilon_upper(0.0) == math.inf and acc.sup_loss == math.inf


def test_gaussian_curve_for_negative_epsilon_uses_symmetry():
    mu = 1.1
    loss = np.random.default_rng(1).normal(mu**2 / 2, mu, 400_000)
    acc = exact_accounting(_shift("gaussian", [mu], [1.0], 1.0))
    e = -0.4
    y = -np.expm1(np.minimum(e - loss, 0.0))
    assert float(acc.delta_upper(e)) == pytest.approx(y.mean(), abs=5 * y.std() / 632)


@settings(max_examples=20)
@given(
    h=st.lists(st.floats(-1, 1), min_size=4, max_size=4),
    sigma=st.floats(0.3, 3.0),
)
def test_iclp_sup_loss_and_curve_vanish_above_it(h, sigma):
    lam = np.array([1.0, 0.3, 0.1, 0.02])
    acc = exact_accounting(_shift("laplace", h, lam, sigma))
    sup = math.sqrt(2) * np.sum(np.abs(h) / np.sqrt(lam)) / sigma
    assert acc.sup_loss == pytest.approx(sup, rel=1e-12, abs=1e-15)
    assert float(acc.delta_upper(sup * (1 + 1e-9) + 1e-12)) == 0.0
    assert acc.epsilon_upper(0.0) == acc.sup_loss
    if sup > 0.05:
        assert float(acc.delta_lower(0.5 * sup)) > 0
        assert float(acc.delta_lower(0.5 * sup)) <= float(acc.delta_upper(0.5 * sup))


def test_flawed_iclp_scale_gives_sqrt2_epsilon():
    """sigma = Delta / epsilon instead of sqrt(2) Delta / epsilon: sup loss sqrt(2) epsilon.

    See docs/paper-errors.md#lr-iclp-sigma-constant.
    """
    lam = np.arange(1, 9.0) ** -2
    h = lam**1.5
    delta_1c = np.sum(np.abs(h) / np.sqrt(lam))
    eps = 0.5
    flawed = exact_accounting(_shift("laplace", h, lam, delta_1c / eps))
    correct = exact_accounting(_shift("laplace", h, lam, math.sqrt(2) * delta_1c / eps))
    assert flawed.sup_loss == pytest.approx(math.sqrt(2) * eps)
    assert correct.sup_loss == pytest.approx(eps)


def test_singular_pairs_and_bad_input():
    s = NoiseShift(
        "gaussian", np.ones(2), np.ones(2), 1.0, True, 1.0, np.ones(2), np.zeros(2), None, "grid"
    )
    acc = exact_accounting(s)
    assert acc.family == "singular" and float(acc.delta_upper(50.0)) == 1.0
    with pytest.raises(ValueError, match="finite and >= 0"):
        laplace_pld(np.array([-1.0]))
    with pytest.raises(ValueError, match="discretization"):
        laplace_pld(np.array([1.0]), 0.0)
    with pytest.raises(ValueError, match="estimate"):
        laplace_pld(np.array([1.0]), estimate="exact")
    assert float(laplace_pld(np.zeros(3)).delta(0.0)) <= 1e-15  # identical laws
    assert gaussian_epsilon(0.1, 0.0) == 0.0


def test_every_accounting_is_a_privacy_profile():
    from dpaudit.accounting.composition import BoundedComposition
    from dpaudit.accounting.profiles import ExactAccounting
    from dpaudit.accounting.protocol import PrivacyProfile
    from dpaudit.accounting.suprema import ExactSupLoss

    gaussian = ExactAccounting(family="gaussian", sup_loss=float("inf"), mu=1.0)
    supremum = ExactSupLoss(0.5, 0.6, 0.5, 0.6, "declared").accounting()
    bounded = BoundedComposition(0.6, 0.5, "sites: declared", gaussian)
    for profile in (gaussian, supremum, bounded):
        assert isinstance(profile, PrivacyProfile), type(profile).__name__
    assert not isinstance(object(), PrivacyProfile)
