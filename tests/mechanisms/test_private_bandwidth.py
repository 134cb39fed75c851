"""HRW private-bandwidth KDE: scale sensitivity by brute force, the two-site loss against scipy,
the composed guarantee against dp_accounting and the exact profile of the example pair."""

import itertools
import math

import dp_accounting
import jax
import numpy as np
import pytest
import scipy.integrate
import scipy.stats

import dpaudit
from dpaudit.accounting.profiles import declared_accounting, gaussian_curve
from dpaudit.model.noise import classical_gaussian_multiplier
from dpaudit.model.sites import JointRelease
from mechanisms.hrw.bandwidth import (
    BANDWIDTH_NUGGET,
    adaptive_pair_accounting,
    bandwidth_ladder,
    bandwidth_pair_parameters,
    example_pair,
    gini_mean_difference,
    gini_sensitivity,
    kde_grid_mahalanobis,
    ladder_index,
    laplace_gaussian_delta,
    laplace_gaussian_epsilon,
    rule_of_thumb_bandwidth,
    whitened_to_curve,
)
from mechanisms.hrw.kde import gaussian_kde

CORRECT, FAULTY = "hrw-private-bandwidth-kde", "faulty/hrw-bandwidth-budget-ignored"


def test_gini_is_the_pairwise_definition():
    x = np.random.default_rng(0).uniform(size=37)
    pairwise = np.abs(x[:, None] - x[None, :]).sum() / (37 * 36)
    assert float(gini_mean_difference(x)) == pytest.approx(pairwise, rel=1e-13)


def test_gini_sensitivity_by_brute_force():
    """Every dataset of 3 records on a 5-point grid of [0, 1], every replacement: max = 2/n."""
    values = np.linspace(0.0, 1.0, 5)
    worst = 0.0
    for data in itertools.product(values, repeat=3):
        g = float(gini_mean_difference(np.array(data)))
        for v in values:
            other = np.array((v, *data[1:]))
            worst = max(worst, abs(g - float(gini_mean_difference(other))))
    assert worst == pytest.approx(gini_sensitivity(3), rel=1e-12)


@pytest.mark.parametrize("h", list(bandwidth_ladder(0.05, 0.5, 4)))
def test_kde_mahalanobis_is_within_the_rkhs_bound(h):
    """Brute force over 61 x 61 record moves: the grid Mahalanobis norm <= sqrt(2) (RKHS bound)."""
    points = np.linspace(0.0, 1.0, 61)
    worst = max(kde_grid_mahalanobis(a, b, h, 16) for a in points for b in points)
    assert worst <= math.sqrt(2.0) * (1 + 1e-12)
    if h == 0.05:  # the example pair attains the bound (0 and 1 are grid points, K(0, 1) ~ 0)
        assert kde_grid_mahalanobis(0.0, 1.0, h, 16) == pytest.approx(math.sqrt(2.0), rel=1e-5)


def test_two_site_loss_matches_scipy():
    """log p_D - log p_D' of (scale, kde) = Laplace + multivariate-normal log ratios of the curve."""
    mech = dpaudit.build(CORRECT, n=20)
    p = mech.params
    d = np.random.default_rng(1).uniform(size=20)
    d_prime = d.copy()
    d_prime[0] = 1.0 - d[0]
    x = np.asarray(mech.sample(d, jax.random.key(2), 50))
    loss = np.asarray(mech.release_log_prob(d, x) - mech.release_log_prob(d_prime, x))
    h, curve = whitened_to_curve(mech, x)
    grid = np.linspace(0.0, 1.0, 16)
    c = classical_gaussian_multiplier(p["delta"])
    oracle = np.empty(len(x))
    for i in range(len(x)):
        s = c * math.sqrt(2) / (20 * math.sqrt(2 * math.pi) * h[i] * p["epsilon_kde"])
        cov = s**2 * (np.exp(-0.5 * ((grid[:, None] - grid) / h[i]) ** 2) + 1e-6 * np.eye(16))
        log_ratio = 0.0
        for data, sign in ((d, 1.0), (d_prime, -1.0)):
            g = np.abs(data[:, None] - data[None, :]).sum() / (20 * 19)
            kde = np.asarray(gaussian_kde(data, grid, h[i]))
            log_ratio += sign * scipy.stats.laplace(g, p["scale_noise"]).logpdf(x[i, 0])
            log_ratio += sign * scipy.stats.multivariate_normal(kde, cov).logpdf(curve[i])
        oracle[i] = log_ratio
    assert BANDWIDTH_NUGGET == 1e-6
    np.testing.assert_allclose(loss, oracle, rtol=1e-7, atol=1e-7)


def test_bandwidth_rule_and_ladder():
    n = 50
    h = float(rule_of_thumb_bandwidth(0.3, n, 0.01, 1.0))
    assert h == pytest.approx((2 / n) ** 0.2 * math.sqrt(math.pi) / 2 * 0.3, rel=1e-14)
    ladder = bandwidth_ladder(0.05, 0.5, 16)
    idx = np.asarray(ladder_index(ladder * 1.01, 0.05, 0.5, 16))
    np.testing.assert_array_equal(idx, np.arange(16))


@pytest.mark.parametrize(("a", "mu"), [(0.5, 0.1282), (2.0, 0.1282), (1.0, 0.8)])
def test_laplace_gaussian_composition_matches_dp_accounting(a, mu):
    laplace = dp_accounting.pld.privacy_loss_distribution.from_laplace_mechanism(
        1.0, sensitivity=a, value_discretization_interval=1e-4
    )
    gauss = dp_accounting.pld.privacy_loss_distribution.from_gaussian_mechanism(
        1.0, sensitivity=mu, value_discretization_interval=1e-4
    )
    pld = laplace.compose(gauss)
    for eps in (0.0, 0.5 * a, a, a + 0.3):
        assert laplace_gaussian_delta(eps, a, mu) == pytest.approx(
            pld.get_delta_for_epsilon(eps), rel=2e-3, abs=1e-6
        )
    eps = laplace_gaussian_epsilon(1e-3, a, mu)
    assert laplace_gaussian_delta(eps, a, mu) <= 1e-3
    assert eps == pytest.approx(pld.get_epsilon_for_delta(1e-3), rel=2e-3)


def _pair_delta(mech, eps: float) -> float:
    """Exact delta(eps) of the example pair (D -> D'): integrate the scale release's law."""
    p = mech.params
    b, shift = p["scale_noise"], gini_sensitivity(p["n"])
    c = classical_gaussian_multiplier(p["delta"])
    ladder = np.asarray(p["bandwidths"])
    mus = [
        kde_grid_mahalanobis(0.0, 1.0, h, p["grid_size"]) * p["epsilon_kde"] / (math.sqrt(2) * c)
        for h in ladder
    ]

    def integrand(s):  # D has Gini 0, D' has Gini 2/n
        loss_scale = (abs(s - shift) - abs(s)) / b
        h = rule_of_thumb_bandwidth(s, p["n"], p["h_min"], p["h_max"])
        j = int(ladder_index(h, p["h_min"], p["h_max"], p["n_bandwidths"]))
        return math.exp(-abs(s) / b) / (2 * b) * float(gaussian_curve(eps - loss_scale, mus[j]))

    kinks = sorted({0.0, shift})
    total = 0.0
    for lo, hi in [(-60 * b, kinks[0]), (kinks[0], kinks[-1]), (kinks[-1], 60 * b)]:
        total += scipy.integrate.quad(integrand, lo, hi, limit=400, epsabs=1e-13)[0]
    return total


def test_faulty_true_epsilon_is_attained_by_the_example_pair():
    """The stated truth (composition bound) and the example pair's exact epsilon agree to 0.1 %."""
    mech = dpaudit.build(FAULTY)
    truth = mech.known_flaw.true_epsilon
    assert truth == pytest.approx(
        laplace_gaussian_epsilon(1e-3, 2.0, 0.5 / classical_gaussian_multiplier(1e-3))
    )
    assert _pair_delta(mech, truth) <= 1e-3 * (1 + 1e-6)
    assert _pair_delta(mech, truth * 0.999) > 1e-3


def test_correct_claim_holds_on_the_example_pair():
    mech = dpaudit.build(CORRECT)
    assert (
        _pair_delta(mech, mech.claim.epsilon) < 1e-3 * mech.claim.delta
    )  # 9.3e-7: basic composition is loose


def _oracle_mus(mech, a, b):
    """``mu_j`` of a record moved from ``a`` to ``b`` at every ladder bandwidth (symmetric solve)."""
    p = mech.params
    c = classical_gaussian_multiplier(p["delta"])
    factor = p["epsilon_kde"] / (math.sqrt(2) * c)
    return np.array(
        [kde_grid_mahalanobis(a, b, h, p["grid_size"]) * factor for h in p["bandwidths"]]
    )


def _declared(mech, d, d_prime):
    return declared_accounting(mech.release_distribution(d), mech.release_distribution(d_prime))


def test_declared_accounting_of_the_worst_pair():
    """The model's declared accounting (the adaptive dominating pair) at the example pair:
    mu_max is the oracle's max over all 16 ladder bandwidths, epsilon_upper(delta) equals the
    exact Laplace x Gaussian composition, is never below dp_accounting's optimistic composition
    of the same pair, and the two curves bracket the exact curve of the adaptive pair."""
    mech = dpaudit.build(CORRECT)
    d, d_prime = example_pair(CORRECT)
    acc = _declared(mech, d, d_prime)
    mus = _oracle_mus(mech, 0.0, 1.0)
    a = gini_sensitivity(mech.params["n"]) / mech.params["scale_noise"]
    assert acc.family == "composed"
    assert acc.mu == pytest.approx(mus.max(), rel=1e-8)
    assert acc.mu >= mus.max()
    exact = laplace_gaussian_epsilon(1e-3, a, mus.max())
    upper = acc.epsilon_upper(1e-3)
    assert exact - 1e-9 <= upper <= exact + 1e-4  # a pessimistic curve on a 1e-4 grid
    pld = dp_accounting.pld.privacy_loss_distribution
    optimistic = pld.from_laplace_mechanism(
        1.0, sensitivity=a, value_discretization_interval=1e-4, pessimistic_estimate=False
    ).compose(
        pld.from_gaussian_mechanism(
            1.0, sensitivity=mus.max(), value_discretization_interval=1e-4,
            pessimistic_estimate=False,
        )
    )  # fmt: skip
    assert upper >= optimistic.get_epsilon_for_delta(1e-3)
    assert acc.epsilon_lower(1e-3) <= laplace_gaussian_epsilon(1e-3, a, mus.min()) + 1e-9
    for eps in (0.5, 0.7333):
        truth = _pair_delta(mech, eps)
        assert float(acc.delta_lower(eps)) <= truth <= float(acc.delta_upper(eps))


def test_declared_mu_is_the_max_over_the_whole_ladder():
    """A spread dataset (its own bandwidth mid-ladder) with one record moved 0 -> 0.2: mu_j varies
    by 3x along the ladder and the declared mu is the max over all J, not the data's bandwidth."""
    mech = dpaudit.build(CORRECT)
    d = np.linspace(0.0, 1.0, mech.params["n"])
    d_prime = d.copy()
    d_prime[0] = 0.2
    a, mus = bandwidth_pair_parameters(mech, d, d_prime)
    oracle = _oracle_mus(mech, 0.0, 0.2)
    np.testing.assert_allclose(mus, oracle, rtol=1e-8)
    assert oracle.max() > 2.5 * oracle.min()
    gap = abs(float(gini_mean_difference(d)) - float(gini_mean_difference(d_prime)))
    assert a == pytest.approx(gap / mech.params["scale_noise"], rel=1e-12)
    acc = _declared(mech, d, d_prime)
    assert acc.mu >= oracle.max()
    assert acc.mu == pytest.approx(oracle.max(), rel=1e-8)
    assert acc.epsilon_upper(1e-3) >= laplace_gaussian_epsilon(1e-3, a, oracle.max()) - 1e-9


def test_adaptive_pair_accounting_degenerate_cases():
    """Equal mu at every bandwidth: the non-adaptive composition (lower and upper agree to the
    grid); all mu zero: the Laplace site alone; other models declare nothing."""
    acc = adaptive_pair_accounting(0.5, [0.3, 0.3])
    assert acc.epsilon_upper(1e-3) - acc.epsilon_lower(1e-3) < 3e-4
    assert acc.epsilon_upper(1e-3) >= laplace_gaussian_epsilon(1e-3, 0.5, 0.3) - 1e-9
    alone = adaptive_pair_accounting(0.5, np.zeros(4))
    assert alone.family == "laplace" and alone.sup_loss == pytest.approx(0.5, rel=1e-9)
    other = dpaudit.build("composed-laplace-queries")  # a JointRelease whose model has no hook
    d = np.zeros((20, 3))
    d_prime = d.copy()
    d_prime[0] = 1.0
    assert isinstance(other.release_distribution(d), JointRelease)
    assert _declared(other, d, d_prime) is None


def test_bad_inputs():
    with pytest.raises(ValueError, match="epsilon_kde"):
        dpaudit.build(CORRECT, epsilon_kde=2.0)
    with pytest.raises(ValueError, match="h_min"):
        dpaudit.build(CORRECT, h_min=0.6)
    with pytest.raises(ValueError, match="n >= 2"):
        dpaudit.build(CORRECT, n=1)
    mech = dpaudit.build(CORRECT, n=5)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        mech.sample(np.full(5, 3.0), jax.random.key(0), 2)
    with pytest.raises(ValueError, match="no example pair"):
        example_pair("hrw-gaussian-kde")


@pytest.mark.slow
def test_audits_never_violate_and_find_the_flaw():
    """Correct: a pass over 3 seeds (the declared adaptive accounting). Faulty: violation within
    10 % of the truth."""
    d, d_prime = example_pair(CORRECT)
    for seed in (11, 12, 13):
        result = dpaudit.audit(dpaudit.build(CORRECT), d, d_prime, samples=2000, seed=seed)
        assert result.verdict == "pass"
    mech = dpaudit.build(FAULTY)
    result = dpaudit.audit(mech, *example_pair(FAULTY), samples=5000, seed=21)
    assert result.verdict == "violation"
    assert result.epsilon_lower <= mech.known_flaw.true_epsilon
    assert result.epsilon_lower >= 0.9 * mech.known_flaw.true_epsilon
