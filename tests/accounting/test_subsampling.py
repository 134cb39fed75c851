"""Subsampled Gaussian/Laplace accounting against dp_accounting and direct quadrature."""

import math

import numpy as np
import pytest
import scipy.integrate
import scipy.stats
from dp_accounting.pld import privacy_loss_distribution as dp_pld
from dp_accounting.pld import privacy_loss_mechanism as dp_mech

from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, compose_accounting
from dpaudit.accounting.subsampling import (
    SubsampledComponent,
    subsampled_accounting,
    subsampled_component,
)
from dpaudit.model.loss import NoiseShift

REMOVE, ADD = dp_mech.AdjacencyType.REMOVE, dp_mech.AdjacencyType.ADD


def _hockey_stick(p, q, e, lo=-40.0, hi=40.0, points=()):
    """int (p - e^e q)_+ by quadrature: an oracle independent of the loss algebra."""
    value = scipy.integrate.quad(
        lambda x: max(0.0, p(x) - math.exp(e) * q(x)),
        lo,
        hi,
        points=points,
        limit=400,
        epsabs=1e-15,
        epsrel=1e-12,
    )[0]
    return value


@pytest.mark.parametrize("family", ["gaussian", "laplace"])
def test_one_step_curves_equal_dp_accounting_and_quadrature(family):
    q, s = 0.05, 1.3
    if family == "gaussian":
        base = GaussianComponent(s)
        ref = {
            a: dp_mech.GaussianPrivacyLoss(1.0, s, sampling_prob=q, adjacency_type=a)
            for a in (REMOVE, ADD)
        }
        a_law, b_law = scipy.stats.norm(0, 1).pdf, scipy.stats.norm(s, 1).pdf
    else:
        base = LaplaceComponent(s)
        ref = {
            a: dp_mech.LaplacePrivacyLoss(1.0, s, sampling_prob=q, adjacency_type=a)
            for a in (REMOVE, ADD)
        }
        a_law, b_law = scipy.stats.laplace(0, 1).pdf, scipy.stats.laplace(s, 1).pdf
    c = subsampled_component(base, q)
    eps = np.linspace(-1.5, 2.5, 17)
    np.testing.assert_allclose(
        c.curve(eps, True), ref[REMOVE].get_delta_for_epsilon(eps), atol=1e-14
    )
    np.testing.assert_allclose(c.curve(eps, False), ref[ADD].get_delta_for_epsilon(eps), atol=1e-14)

    def mix(x):
        return (1 - q) * a_law(x) + q * b_law(x)

    for e in (-0.3, 0.0, 0.05, 0.4):
        kinks = (0.0, s)
        remove = _hockey_stick(mix, a_law, e, points=kinks)
        add = _hockey_stick(a_law, mix, e, points=kinks)
        assert float(c.curve(e, True)) == pytest.approx(remove, abs=1e-10)
        assert float(c.curve(e, False)) == pytest.approx(add, abs=1e-10)


def _agree(ours, ref, eps, *, atol):
    theirs = np.array([ref.get_delta_for_epsilon(e) for e in eps])
    upper, lower = ours.delta_upper(eps), ours.delta_lower(eps)
    # dp_accounting's pessimistic curve is an upper bound of the same connect-the-dots
    # construction: ours agrees within the discretisation and never falls below it by
    # more than round-off; our lower curve lies below both.
    np.testing.assert_allclose(upper, theirs, rtol=1e-4, atol=atol)
    assert np.all(upper >= theirs - 1e-12)
    assert np.all(lower <= theirs)


@pytest.mark.parametrize("steps", [1, 100, pytest.param(1000, marks=pytest.mark.slow)])
def test_poisson_subsampled_gaussian_matches_dp_accounting(steps):
    """Acceptance: q = 0.01, sigma = 1 at T = 1, 100, 1000."""
    ours = subsampled_accounting(GaussianComponent(1.0), 0.01, steps)
    ref = dp_pld.from_gaussian_mechanism(1.0, sampling_prob=0.01).self_compose(steps)
    assert ours.family == "composed" and ours.reverse_upper_pld is not None
    # the upper curve carries its round-off margin (each copy's pmf rounding, charged once
    # per copy of the composition): agreement is within that margin
    margin = max(ours.upper_pld.margin, ours.reverse_upper_pld.margin)
    assert margin <= 1e-8 * steps
    _agree(ours, ref, np.array([0.0, 0.1, 0.3, 0.6, 1.0, 1.5]), atol=1e-10 + margin)
    # at delta = 1e-5 the curve falls about 1e-4 per unit of epsilon: the margin moves
    # epsilon up by about margin / 1e-4 (never down)
    theirs = ref.get_epsilon_for_delta(1e-5)
    assert theirs - 1e-9 <= ours.epsilon_upper(1e-5) <= theirs + 1e-5 + margin / 1e-4
    assert ours.epsilon_lower(1e-5) <= ref.get_epsilon_for_delta(1e-5)


@pytest.mark.parametrize("steps", [1, 30])
def test_poisson_subsampled_laplace_matches_dp_accounting(steps):
    q, a = 0.1, 0.8
    ours = subsampled_accounting(LaplaceComponent(a), q, steps)
    ref = dp_pld.from_laplace_mechanism(1.0, sensitivity=a, sampling_prob=q).self_compose(steps)
    assert ours.family == "laplace"
    assert ours.sup_loss == pytest.approx(steps * math.log1p(q * math.expm1(a)), rel=1e-12)
    _agree(ours, ref, np.array([0.0, 0.05, 0.2, 0.5, 1.0]), atol=1e-10)
    assert float(ours.delta_upper(ours.sup_loss)) == 0.0


def test_mixed_subsampled_and_plain_parts_compose():
    step = subsampled_component(GaussianComponent(1.0), 0.02)
    ours = compose_accounting([step, LaplaceComponent(0.3)], [20, 1])
    ref = (
        dp_pld.from_gaussian_mechanism(1.0, sampling_prob=0.02)
        .self_compose(20)
        .compose(dp_pld.from_laplace_mechanism(1.0, sensitivity=0.3))
    )
    _agree(ours, ref, np.array([0.0, 0.3, 0.6, 1.0]), atol=1e-10)


def test_without_replacement_dominates_the_worst_direct_pair():
    """Replace-one: batch fraction q, records clipped to C: the pair
    ((1-q) N(0) + q N(C), (1-q) N(0) + q N(-C)) lies below the bound built from the
    replace-one base shift 2C, in both orders and at every epsilon."""
    q, c_norm, sigma = 0.1, 1.0, 1.5
    comp = subsampled_component(GaussianComponent(2 * c_norm / sigma), q, "without-replacement")
    assert comp.symmetric
    acc = compose_accounting([comp], discretization=1e-3)

    def p(x):
        return (1 - q) * scipy.stats.norm.pdf(x, 0, sigma) + q * scipy.stats.norm.pdf(
            x, c_norm, sigma
        )

    def r(x):
        return (1 - q) * scipy.stats.norm.pdf(x, 0, sigma) + q * scipy.stats.norm.pdf(
            x, -c_norm, sigma
        )

    for e in (-0.3, 0.1, 0.5):
        truth = max(_hockey_stick(p, r, e, -15, 15), _hockey_stick(r, p, e, -15, 15))
        assert float(comp.curve(e)) >= truth - 1e-12
        assert float(acc.delta_upper(e)) >= truth - 1e-12
    # for epsilon >= 0 the bound is Balle et al.'s q delta_M(log(1 + (e^eps - 1)/q))
    e = 0.3
    inner = math.log1p(math.expm1(e) / q)
    base = GaussianComponent(2 * c_norm / sigma).curve(inner)
    assert float(comp.curve(e)) == pytest.approx(q * float(base), rel=1e-12)


def test_subsampling_of_a_noise_shift_and_q_one():
    h = np.array([3.0, 4.0])
    shift = NoiseShift("gaussian", h, np.ones(2), 5.0, False, 0.0, h, h * 0, None, "x")
    comp = subsampled_component(shift, 0.5)
    assert isinstance(comp, SubsampledComponent) and comp.base == GaussianComponent(1.0)
    assert subsampled_component(shift, 1.0) == GaussianComponent(1.0)
    full = subsampled_accounting(shift, 1.0, 4)
    assert full.family == "gaussian" and full.mu == pytest.approx(2.0)


def test_bad_subsampling_input():
    with pytest.raises(ValueError, match=r"q must lie in \(0, 1\]"):
        subsampled_component(GaussianComponent(1.0), 0.0)
    with pytest.raises(ValueError, match="scheme must be one of"):
        subsampled_component(GaussianComponent(1.0), 0.1, "shuffle")
    with pytest.raises(ValueError, match="one Gaussian or one Laplace loss"):
        subsampled_component(
            compose_accounting([LaplaceComponent(0.1), LaplaceComponent(0.2)]), 0.1
        )
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        subsampled_accounting(GaussianComponent(1.0), 0.1, 0)
