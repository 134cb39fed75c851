"""Support functions of the ICLP mean notebook: worst-case records and private cross-validation.

Outside oracles: the catalogue builders (their summaries, sensitivity norms and
calibrated sigma, an independent path to the same numbers), grid quadrature of
the L2 distances, and the analytic moments of the Laplace law (E xi^2 = 2 b^2,
E xi^4 = 24 b^4). The Monte Carlo test states its failure rate
(TEST_FAILURE_RATE, Bonferroni over its checks).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
from dpaudit.model.spaces import Matern, kl_basis, uniform_grid
from mechanisms.iclp import cross_validation, mean
from mechanisms.iclp import simulations as sim

GRID = uniform_grid(40)
BASIS = kl_basis(Matern(1.5, 0.1), GRID, n_components=12)
LAM = np.asarray(BASIS.eigenvalues)
PHI = np.asarray(BASIS.eigenfunctions)
W = np.asarray(GRID.weights)
BETA = 4.0  # Matérn nu = 3/2 in d = 1
RTOL = 1e-9


def _dataset(seed, n, tau, *, off_span=True):
    """n curves with L2 norms in (0, tau] and (optionally) parts off the basis span."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, BASIS.n_components)) @ PHI.T
    if off_span:
        x = x + 0.3 * rng.normal(size=(n, GRID.size))
    norms = np.sqrt((x**2) @ W)
    return x * (tau * rng.uniform(0.2, 1.0, size=n) / norms)[:, None]


# ------------------------------------------------------------------ worst-case records


@settings(max_examples=15)
@given(
    psi=st.floats(1e-4, 1.0),
    eta=st.floats(1.0, 2.0),
    tau=st.floats(0.1, 10.0),
    n=st.integers(2, 500),
    bound=st.sampled_from(mean.QR_BOUNDS),
)
def test_qr_worst_case_record_attains_cauchy_schwarz_bound(psi, eta, tau, n, bound):
    qr_params = {"tau": tau, "psi": psi, "eta": eta}
    build_options = {"epsilon": 1.0, "basis": BASIS, "beta": BETA, "sensitivity_bound": bound}
    mech = dpaudit.build("iclp-qr-mean", n=n, **qr_params, **build_options)
    record = np.asarray(mean.qr_worst_case_record(BASIS, **qr_params))
    assert math.isclose(math.sqrt(record**2 @ W), tau, rel_tol=1e-12)
    d = np.array(_dataset(1, n, tau))
    d[0] = record
    d_prime = d.copy()
    d_prime[0] = -record
    distance = float(mech.distance(d, d_prime))
    exact = mean.qr_mean_sensitivity(LAM, n=n, tau=tau, psi=psi, eta=eta, bound="cauchy-schwarz")
    assert distance == pytest.approx(exact, rel=1e-9)
    assert distance <= mech.claim.sensitivity * (1 + RTOL)


@settings(max_examples=10)
@given(m=st.integers(1, 12), tau=st.floats(0.1, 10.0), n=st.integers(2, 500))
def test_frl_worst_case_record_attains_cauchy_schwarz_bound(m, tau, n):
    mech = dpaudit.build("frl-mean", n=n, epsilon=1.0, tau=tau, n_components=m, basis=BASIS)
    record = np.asarray(mean.frl_worst_case_record(BASIS, tau=tau, n_components=m))
    d = np.zeros((n, GRID.size))
    d[0] = record
    d_prime = d.copy()
    d_prime[0] = -record
    distance = float(mech.distance(d, d_prime))
    assert distance == pytest.approx(2 * math.sqrt(m) * tau / n, rel=1e-9)
    assert distance == pytest.approx(mech.claim.sensitivity / math.sqrt(m), rel=1e-9)


# ------------------------------------------------------------------ PCV: exact scores


def _builder_score(method, x, value, *, epsilon, tau, eta, bound, folds):
    """The exact PCV score from the catalogue builders, fold by fold, on the grid."""
    n = x.shape[0]
    total = 0.0
    for test in np.array_split(np.arange(n), folds):
        train = np.delete(x, test, axis=0)
        common = {"n": train.shape[0], "epsilon": epsilon, "tau": tau, "basis": BASIS}
        if method == "frl":
            mech = dpaudit.build("frl-mean", n_components=value, sensitivity_bound=bound, **common)
            fit = np.asarray(mech.summary(train)) @ PHI[:, :value].T
            noise = 2 * value * mech.params["laplace_scale"] ** 2
        else:
            name = "iclp-qr-mean" if method == "iclp-qr" else "iclp-ar-mean"
            mech = dpaudit.build(
                name, psi=value, eta=eta, beta=BETA, sensitivity_bound=bound, **common
            )
            fit = np.asarray(mech.summary(train))
            noise = mech.params["sigma"] ** 2 * LAM.sum()  # E||sigma Z||^2 = sigma^2 tr(C)
        total += np.sum(((fit - x[test]) ** 2) @ W) + test.size * noise
    return total / n


@pytest.mark.parametrize(
    ("method", "values", "eta", "bound"),
    [
        ("iclp-qr", [1e-3, 3e-2, 0.5], 1.5, "printed"),
        ("iclp-qr", [1e-2], 1.25, "cauchy-schwarz"),
        ("iclp-ar", [2e-3, 2e-2, 0.1], 1.5, "corrected"),
        ("frl", [1, 4, 12], None, "printed"),
        ("frl", [3], None, "cauchy-schwarz"),
    ],
)
def test_exact_pcv_scores_match_the_builders(method, values, eta, bound):
    tau, epsilon, folds = 2.0, 1.5, 4
    x = _dataset(2, 41, tau)  # 41 records: unequal folds
    pcv = cross_validation.private_cross_validation(
        x,
        BASIS,
        method=method,
        candidates=values,
        epsilon=epsilon,
        tau=tau,
        eta=eta,
        sensitivity_bound=bound,
        folds=folds,
    )
    expected = [
        _builder_score(method, x, v, epsilon=epsilon, tau=tau, eta=eta, bound=bound, folds=folds)
        for v in values
    ]
    np.testing.assert_allclose(pcv.scores, expected, rtol=1e-10)
    assert pcv.best == values[int(np.argmin(expected))]
    assert pcv.draws is None and pcv.folds == folds and pcv.candidates == tuple(values)


def test_pcv_clips_records_above_tau_as_the_mechanism_does():
    tau = 1.0
    x = _dataset(3, 30, 3.0)  # many records above tau
    clipped = np.asarray(mean.enforce_l2_bound(x, GRID, tau, "clip"))
    kwargs = {"method": "iclp-qr", "candidates": [0.01, 0.1], "epsilon": 1.0, "tau": tau}
    kwargs |= {"eta": 1.5, "folds": 3}
    a = cross_validation.private_cross_validation(x, BASIS, out_of_bound="clip", **kwargs)
    b = cross_validation.private_cross_validation(clipped, BASIS, **kwargs)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-12)
    with pytest.raises(ValueError, match="tau"):
        cross_validation.private_cross_validation(x, BASIS, **kwargs)


@settings(max_examples=10)
@given(
    seed=st.integers(0, 10_000),
    eps_small=st.floats(0.05, 1.0),
    ratio=st.floats(1.5, 100.0),
)
def test_more_privacy_never_selects_less_smoothing(seed, eps_small, ratio):
    """argmin of base(psi) + c g(psi) with g decreasing is non-decreasing in c = 1/epsilon^2."""
    x = _dataset(seed, 25, 1.0)
    grid = list(np.geomspace(1e-4, 1.0, 9))
    kwargs = {"method": "iclp-qr", "candidates": grid, "tau": 1.0, "eta": 1.5, "folds": 5}
    noisy = cross_validation.private_cross_validation(x, BASIS, epsilon=eps_small, **kwargs)
    clean = cross_validation.private_cross_validation(x, BASIS, epsilon=eps_small * ratio, **kwargs)
    assert noisy.best >= clean.best


# ------------------------------------------------------------------ PCV: Monte Carlo


def test_monte_carlo_pcv_agrees_with_the_exact_expectation():
    """MC error within z sd; sd from Var(2 o xi + xi^2) = 8 o^2 b^2 + 20 b^4 per coordinate.

    Fails with probability <= TEST_FAILURE_RATE for a random key (CLT, Bonferroni
    over the candidates).
    """
    tau, epsilon, folds, draws, eta = 2.0, 1.0, 5, 4000, 1.5
    values = [1e-3, 1e-2, 0.1]
    x = _dataset(4, 50, tau)
    kwargs = {"method": "iclp-qr", "candidates": values, "epsilon": epsilon, "tau": tau}
    kwargs |= {"eta": eta, "folds": folds}
    exact = cross_validation.private_cross_validation(x, BASIS, **kwargs)
    mc = cross_validation.private_cross_validation(
        x, BASIS, draws=draws, key=jax.random.key(7), **kwargs
    )
    assert mc.draws == draws
    coefficients = (x * W) @ PHI
    variance = np.zeros(len(values))
    for test in np.array_split(np.arange(x.shape[0]), folds):
        train = np.delete(x, test, axis=0)
        for i, psi in enumerate(values):
            fit = np.asarray(mean.qr_mean(train, BASIS, psi=psi, eta=eta))
            delta = mean.qr_mean_sensitivity(LAM, n=train.shape[0], tau=tau, psi=psi, eta=eta)
            b = delta * np.sqrt(LAM) / epsilon
            o = fit - coefficients[test].mean(axis=0)
            per_draw = np.sum(8 * o**2 * b**2 + 20 * b**4)
            variance[i] += (test.size / x.shape[0]) ** 2 * per_draw / draws
    z = scipy.stats.norm.isf(TEST_FAILURE_RATE / (2 * len(values)))
    assert np.all(np.abs(mc.scores - exact.scores) <= z * np.sqrt(variance))
    assert np.any(mc.scores != exact.scores)  # it did sample


def test_monte_carlo_pcv_is_reproducible_and_frl_works():
    x = _dataset(5, 30, 1.0)
    # 3 candidates x 4000 draws x 12 components: the compiled shape of the test above
    kwargs = {"method": "frl", "candidates": [2, 5, 9], "epsilon": 1.0, "tau": 1.0, "folds": 3}
    a = cross_validation.private_cross_validation(
        x, BASIS, draws=4000, key=jax.random.key(1), **kwargs
    )
    b = cross_validation.private_cross_validation(
        x, BASIS, draws=4000, key=jax.random.key(1), **kwargs
    )
    c = cross_validation.private_cross_validation(
        x, BASIS, draws=4000, key=jax.random.key(2), **kwargs
    )
    np.testing.assert_array_equal(a.scores, b.scores)
    assert np.all(a.scores != c.scores)


def test_pcv_on_a_simulated_setting_prefers_an_interior_psi():
    """On S-2 (a bimodal mean), too little and too much smoothing both cost: interior optimum."""
    basis = mean.default_basis()
    x = sim.generate_curves(jax.random.key(0), 300, "S-2").curves
    psi_pss = mean.pss_qr_psi(300, 1.0, beta=4.0, eta=1.5)
    grid = list(np.geomspace(1e-3, 1e3, 13) * psi_pss)
    pcv = cross_validation.private_cross_validation(
        x,
        basis,
        method="iclp-qr",
        candidates=grid,
        epsilon=1.0,
        tau=4.0,
        eta=1.5,
        out_of_bound="clip",
    )
    best = int(np.argmin(pcv.scores))
    assert 0 < best < len(grid) - 1


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "gaussian"}, ValueError, "method"),
        ({"candidates": []}, ValueError, "candidates"),
        ({"candidates": 0.1}, ValueError, "candidates"),
        ({"candidates": [0.1, -1.0]}, ValueError, "psi"),
        ({"candidates": ["a"]}, TypeError, "psi"),
        ({"eta": None}, ValueError, "eta"),
        ({"method": "frl", "candidates": [2], "eta": 1.5}, ValueError, "eta"),
        ({"method": "frl", "candidates": [13], "eta": None}, ValueError, "n_components"),
        ({"method": "frl", "candidates": [0], "eta": None}, ValueError, "n_components"),
        ({"method": "iclp-ar", "eta": 0.5}, ValueError, "eta"),
        ({"sensitivity_bound": "corrected"}, ValueError, "sensitivity_bound"),
        ({"folds": 1}, ValueError, "folds"),
        ({"folds": 11}, ValueError, "folds"),
        ({"draws": 100}, ValueError, "key"),
        ({"key": jax.random.key(0)}, ValueError, "draws"),
        ({"draws": 0, "key": jax.random.key(0)}, ValueError, "draws"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"tau": -1.0}, ValueError, "tau"),
        ({"out_of_bound": "ignore"}, ValueError, "out_of_bound"),
    ],
)
def test_pcv_rejects_bad_input(kwargs, error, match):
    x = _dataset(6, 10, 1.0)
    base = {"method": "iclp-qr", "candidates": [0.1], "epsilon": 1.0, "tau": 1.0, "eta": 1.5}
    with pytest.raises(error, match=match):
        cross_validation.private_cross_validation(x, BASIS, **(base | kwargs))


def test_pcv_rejects_nan_curves_and_a_wrong_basis():
    x = _dataset(6, 10, 1.0)
    x[3, 5] = np.nan
    base = {"method": "iclp-qr", "candidates": [0.1], "epsilon": 1.0, "tau": 1.0, "eta": 1.5}
    with pytest.raises(ValueError, match="NaN"):
        cross_validation.private_cross_validation(x, BASIS, **base)
    with pytest.raises(TypeError, match="KarhunenLoeveBasis"):
        cross_validation.private_cross_validation(_dataset(6, 10, 1.0), GRID, **base)


def test_worst_case_records_reject_bad_input():
    with pytest.raises(ValueError, match="tau"):
        mean.qr_worst_case_record(BASIS, tau=0.0, psi=0.1, eta=1.5)
    with pytest.raises(ValueError, match="psi"):
        mean.qr_worst_case_record(BASIS, tau=1.0, psi=-0.1, eta=1.5)
    with pytest.raises(ValueError, match="n_components"):
        mean.frl_worst_case_record(BASIS, tau=1.0, n_components=13)
    with pytest.raises(TypeError, match="KarhunenLoeveBasis"):
        mean.frl_worst_case_record(jnp.ones(3), tau=1.0, n_components=1)
