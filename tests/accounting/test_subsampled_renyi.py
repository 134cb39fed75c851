"""Rényi profile of the Poisson-subsampled Gaussian: dp_accounting, mpmath, compositions, DP-SGD."""

import logging
import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant

import dpaudit
from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, compose_accounting
from dpaudit.accounting.renyi import (
    composition_renyi,
    laplace_renyi,
    renyi_bounds,
    subsampled_gaussian_renyi,
)
from dpaudit.accounting.subsampling import subsampled_accounting, subsampled_component
from dpaudit.io.datasets import generate
from dpaudit.model.claims import RDPClaim, ZCDPClaim
from dpaudit.whitebox.notions import evaluate_notion, zcdp_rho_bracket

INTEGER_ORDERS = [2.0, 3.0, 4.0, 8.0, 16.0, 32.0, 64.0, 256.0]
CASES = [(0.5, 0.01), (1.0, 0.001), (1.0, 0.1), (2.0, 0.5), (5.0, 0.9), (0.8, 0.25)]


def _dp_accounting(orders, q, sigma, steps=1):
    acc = RdpAccountant(orders)
    acc.compose(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    return np.asarray(acc._rdp)  # the accountant has no public RDP getter


@pytest.mark.parametrize(("sigma", "q"), CASES)
def test_integer_orders_equal_dp_accounting(sigma, q):
    # Both are the binomial expansion; dp_accounting sums in log space, we sum the excess
    # over 1 (log1p), so they agree to dp_accounting's own round-off (measured <= 5e-11).
    low, high = subsampled_gaussian_renyi(INTEGER_ORDERS, 1.0 / sigma, q)
    theirs = _dp_accounting(INTEGER_ORDERS, q, sigma)
    np.testing.assert_allclose(low, theirs, rtol=1e-9)
    np.testing.assert_allclose(high, theirs, rtol=1e-9)
    assert np.all(high - low <= 1e-12 * high)


def _mp_renyi(alpha, mu, q, add=False):
    """D_alpha by mpmath quadrature at 30 digits (an oracle independent of the series)."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 30
    power = 1 - alpha if add else alpha

    def f(x):
        return mp.npdf(x) * (1 - q + q * mp.exp(mu * x - mu * mu / 2)) ** power

    return float(mp.log(mp.quad(f, [-mp.inf, -10, 0, 10, 20, mp.inf])) / (alpha - 1))


@pytest.mark.parametrize(
    ("alpha", "sigma", "q"),
    [(1.1, 5.0, 0.1), (1.5, 1.0, 0.01), (1.25, 2.0, 0.9), (1.25, 0.5, 0.5), (2.5, 1.0, 0.1)],
)
def test_fractional_orders_bracket_the_quadrature(alpha, sigma, q):
    # The series bracket (alternating tail + round-off) holds the 30-digit quadrature and is
    # at most 1e-8 relative wide. dp_accounting 0.6.0 is no oracle here: its fractional-order
    # series returns values up to 3x too high (or inf) at these points (docs/notions.md).
    low, high = subsampled_gaussian_renyi([alpha], 1.0 / sigma, q)
    exact = _mp_renyi(alpha, 1.0 / sigma, q)
    assert low[0] <= exact <= high[0]
    assert high[0] - low[0] <= 1e-8 * exact


@pytest.mark.parametrize(
    ("alpha", "sigma", "q"), [(2.0, 1.0, 0.01), (8.0, 2.0, 0.5), (32.0, 1.0, 0.9)]
)
def test_add_direction_brackets_the_quadrature_and_is_below_remove(alpha, sigma, q):
    low, high = subsampled_gaussian_renyi([alpha], 1.0 / sigma, q, direction="add")
    exact = _mp_renyi(alpha, 1.0 / sigma, q, add=True)
    assert low[0] <= exact <= high[0]
    gmax = (1 - q) ** (1 - alpha)
    assert high[0] - low[0] <= math.log1p(gmax / 2**16) / (alpha - 1) * 1.01
    assert high[0] < subsampled_gaussian_renyi([alpha], 1.0 / sigma, q)[0][0]


def test_add_is_below_remove_on_a_grid():
    # Mironov, Talwar & Zhang (2019): the remove direction dominates; the profiles use it.
    orders = [1.5, 2.0, 3.0, 6.0, 16.0]
    for sigma, q in CASES:
        add = subsampled_gaussian_renyi(orders, 1.0 / sigma, q, direction="add", cells=2**12)
        assert np.all(add[0] <= subsampled_gaussian_renyi(orders, 1.0 / sigma, q)[1])


def test_edge_cases_and_bad_input():
    assert subsampled_gaussian_renyi([2.0], 0.0, 0.5)[1][0] == 0.0
    np.testing.assert_allclose(subsampled_gaussian_renyi([3.0], 1.2, 1.0)[0], [3 * 1.44 / 2])
    for kwargs, words in [
        ({"orders": [1.0]}, "orders must be finite and > 1"),
        ({"mu": -1.0}, "mu must be"),
        ({"q": 0.0}, "q must lie in (0, 1]"),
        ({"direction": "up"}, "direction must be"),
    ]:
        args = {"orders": [2.0], "mu": 1.0, "q": 0.1} | kwargs
        with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
            subsampled_gaussian_renyi(**args)


def test_composed_dpsgd_accounting_profile_equals_dp_accounting():
    acc = subsampled_accounting(GaussianComponent(1.0), 0.1, 20, discretization=1e-3, lower=False)
    orders = [2.0, 4.0, 8.0, 32.0]
    low, high = renyi_bounds(orders, acc)
    theirs = _dp_accounting(orders, 0.1, 1.0, steps=20)
    np.testing.assert_allclose(low, theirs, rtol=1e-9)
    np.testing.assert_allclose(high, theirs, rtol=1e-9)


def test_mixed_composition_adds_profiles_and_unknown_parts_give_none():
    parts = [(GaussianComponent(0.5), 2), (LaplaceComponent(0.3), 3)]
    parts.append((subsampled_component(GaussianComponent(1.0), 0.2), 4))
    low, _ = composition_renyi([2.0, 4.0], parts)
    expected = (
        2 * np.array([2.0, 4.0]) * 0.125
        + 3 * laplace_renyi([2.0, 4.0], [0.3])
        + 4 * _dp_accounting([2.0, 4.0], 0.2, 1.0)
    )
    np.testing.assert_allclose(low, expected, rtol=1e-9)
    sub_laplace = subsampled_component(LaplaceComponent(1.0), 0.5)
    assert composition_renyi([2.0], [(sub_laplace, 1)]) is None
    acc = compose_accounting([sub_laplace], discretization=1e-3)  # family "laplace", no a_j
    assert renyi_bounds([2.0], acc) is None and zcdp_rho_bracket(acc) is None


def _evaluate(claim, accounting):
    return evaluate_notion(claim, accounting, [], None, 0.95)


def test_rdp_and_zcdp_verdicts_on_a_subsampled_composition():
    logging.disable(logging.WARNING)  # dp_accounting warns on orders it cannot converge
    acc = subsampled_accounting(GaussianComponent(1.0), 0.1, 20, discretization=1e-3, lower=False)
    orders = [2.0, 4.0, 8.0]
    eps = _dp_accounting(orders, 0.1, 1.0, steps=20)
    assert _evaluate(RDPClaim(orders, eps.tolist()), acc).verdict == "pass"
    lower = eps * (1 - 1e-6)
    assert _evaluate(RDPClaim(orders, lower.tolist()), acc).verdict == "violation"
    low, high = zcdp_rho_bracket(acc)
    assert high == pytest.approx(20 * 0.5, rel=1e-11) and 0.99 * high < low <= high
    assert _evaluate(ZCDPClaim(10.0), acc).verdict == "pass"
    assert _evaluate(ZCDPClaim(low * 0.999), acc).verdict == "violation"
    assert _evaluate(ZCDPClaim((low + high) / 2), acc).verdict == "inconclusive"


def _dpsgd(claim):
    mech = dpaudit.build("dpsgd-logistic", steps=5, q=0.1, n=100)
    return dpaudit.Mechanism(
        mech.name, mech.model, claim, mech.summary, mech.difference_norm, mech.params
    )


@pytest.mark.slow
def test_dpsgd_white_box_rdp_audit():
    # DP-SGD (T = 5, q = 0.1, sigma = 1) under its exact RDP claim: pass; 1e-3 lower: violation.
    orders = [2.0, 4.0, 8.0, 16.0]
    eps = _dp_accounting(orders, 0.1, 1.0, steps=5)
    for scale, expected in [(1.0, "pass"), (1 - 1e-3, "violation")]:
        claim = RDPClaim(orders, (eps * scale).tolist(), adjacency="add-remove",
                         sensitivity=1.0, sensitivity_norm="l2")  # fmt: skip
        mech = _dpsgd(claim)
        d, d_prime = generate("example", mech)
        result = dpaudit.audit(mech, d, d_prime, samples=1000)
        assert result.verdict == expected
        np.testing.assert_allclose(
            result.diagnostics["notion"]["tightest"]["upper"], eps, rtol=1e-9
        )
