"""audit(): verdicts on correct and faulty mechanisms, Monte Carlo vs exact curves, export.

The mechanisms are built here from dpaudit's pieces (not the catalogue): the ICLP and
Gaussian-process means of curves given by Karhunen–Loève coefficient vectors in the unit
L2 ball, each audited on the pair that attains its claimed sensitivity.
"""

import json
import math

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE

import dpaudit
from dpaudit import Claim, Mechanism
from dpaudit.model.loss import noise_shift
from dpaudit.model.noise import (
    GaussianProcessNoise,
    GridNoise,
    ICLPNoise,
    analytic_gaussian_sigma,
    classical_gaussian_multiplier,
    gaussian_delta,
)
from dpaudit.model.spaces import (
    Gaussian,
    cameron_martin_norm,
    kl_basis,
    one_c_norm,
    spectral_basis,
    uniform_grid,
)

GRID = uniform_grid(64)
K, N = 16, 10
LAM = np.arange(1, K + 1.0) ** -2.0
BASIS = spectral_basis(LAM, lambda t: np.sqrt(2) * np.cos(np.pi * np.arange(1, K + 1) * t), GRID)
W = LAM**2 / (LAM**2 + 0.01)  # ICLP-QR / MRS shrinkage weights (eta = 2, psi = 0.01)


def _clip(x):
    """The documented clipping step: records are projected onto the unit L2 ball."""
    norm = jnp.linalg.norm(x, axis=-1, keepdims=True)
    return x / jnp.maximum(1.0, norm)


def _summary_coefficients(data):
    return W * jnp.mean(_clip(data), axis=0)


# 1,C sensitivity of the QR mean over the unit ball: (2/n) ||w / sqrt(lambda)||_2 (Cauchy–Schwarz,
# attained by x = c/||c||, x' = -x with c = w / sqrt(lambda)).
C_ONE = W / np.sqrt(LAM)
DELTA_ONE_C = 2.0 / N * float(np.linalg.norm(C_ONE))
# Cameron–Martin sensitivity: (2/n) max_j w_j / sqrt(lambda_j), attained by x = e_j*, x' = -e_j*.
J_STAR = int(np.argmax(C_ONE))
DELTA_CM = 2.0 / N * float(C_ONE[J_STAR])


def _pair(direction):
    data = jnp.zeros((N, K))
    u = jnp.asarray(direction / np.linalg.norm(direction))
    return data.at[0].set(u), data.at[0].set(-u)


ICLP_PAIR = _pair(C_ONE)
GP_PAIR = _pair(np.eye(K)[J_STAR])


SQRT2 = math.sqrt(2.0)


def iclp_mean(epsilon=1.0, *, scale=SQRT2):
    """ICLP-QR mean; ``scale = sqrt(2)`` is LR Thm 4/8 corrected, ``scale = 1`` drops it
    (docs/paper-errors.md#lr-iclp-sigma-constant)."""
    sigma = scale * DELTA_ONE_C / epsilon

    def model(data):
        loc = BASIS.reconstruct(_summary_coefficients(data))
        numpyro.sample("release", GridNoise(ICLPNoise(BASIS.eigenvalues, sigma), BASIS, loc=loc))

    return Mechanism(
        "test-iclp-qr-mean" if scale == SQRT2 else "test-iclp-sigma-delta-over-eps",
        model,
        Claim(epsilon, sensitivity=DELTA_ONE_C, sensitivity_norm="one-c", reference="LR Thm 4"),
        summary=lambda d: BASIS.reconstruct(_summary_coefficients(d)),
        difference_norm=lambda h: one_c_norm(BASIS.project(h), BASIS.eigenvalues),
    )


def gp_mean(epsilon=1.0, delta=1e-3, *, calibration="analytic", pure=False):
    """MRS penalised mean with Gaussian-process noise, analytic or classical calibration."""
    if calibration == "analytic":
        sigma = analytic_gaussian_sigma(DELTA_CM, epsilon, delta)
    else:  # c(delta) Delta / epsilon, also where it is not proven (epsilon > 1, see docs/paper-errors.md#mrs-epsilon-at-most-one)
        sigma = classical_gaussian_multiplier(delta) * DELTA_CM / epsilon

    def model(data):
        loc = BASIS.reconstruct(_summary_coefficients(data))
        noise = GaussianProcessNoise(BASIS.eigenvalues, sigma)
        numpyro.sample("release", GridNoise(noise, BASIS, loc=loc))

    claim = Claim(
        epsilon,
        0.0 if pure else delta,
        sensitivity=DELTA_CM,
        sensitivity_norm="cameron-martin",
        reference="MRS Thm 3.3",
    )
    return Mechanism(
        f"test-gp-{calibration}{'-pure' if pure else ''}",
        model,
        claim,
        summary=lambda d: BASIS.reconstruct(_summary_coefficients(d)),
        difference_norm=lambda h: cameron_martin_norm(BASIS.project(h), BASIS.eigenvalues),
    )


def scalar_gaussian(mu=1.0, delta=None, epsilon=1.0):
    """N(mean, (1/(n mu))^2) release of the mean of [0, 1] values: loss N(mu^2/2, mu^2) on 0 vs 1."""
    n = 4
    scale = 1.0 / (n * mu)
    delta = float(gaussian_delta(epsilon, mu)) if delta is None else delta

    def model(data):
        numpyro.sample("release", dist.Normal(jnp.mean(jnp.clip(data, 0, 1)), scale))

    return Mechanism("test-scalar-gauss", model, Claim(epsilon, delta)), (
        jnp.zeros(n),
        jnp.zeros(n).at[0].set(1.0),
    )


def test_sensitivities_are_attained_on_the_test_pairs():
    for mech, pair in ((iclp_mean(), ICLP_PAIR), (gp_mean(), GP_PAIR)):
        assert float(mech.distance(*pair)) == pytest.approx(mech.claim.sensitivity, rel=1e-9)


def test_correct_iclp_passes_with_tight_epsilon():
    report = dpaudit.audit(iclp_mean(0.7), *ICLP_PAIR, samples=20_000, seed=1)
    assert report.verdict == "pass"
    assert report.certificate is None
    # the pair attains the sensitivity, so the claim is tight: sup loss = epsilon
    assert report.epsilon_at_claimed_delta["exact"] == pytest.approx(0.7, rel=1e-9)
    assert report.compatibility.classification == "compatible"
    assert report.route == "closed-form"


def test_iclp_with_sigma_delta_over_epsilon_is_a_certified_violation():
    """sigma = Delta/epsilon without the sqrt(2) gives sqrt(2) epsilon; certificate x = f_D.

    See docs/paper-errors.md#lr-iclp-sigma-constant.
    """
    mech = iclp_mean(1.0, scale=1.0)
    report = dpaudit.audit(mech, *ICLP_PAIR, samples=20_000, seed=2)
    assert report.verdict == "violation"
    cert = report.certificate
    assert cert is not None and cert.kind == "density-ratio"
    assert cert.loss > mech.claim.epsilon + cert.tolerance
    assert report.epsilon_at_claimed_delta["estimate"] == pytest.approx(math.sqrt(2), rel=1e-9)
    assert report.epsilon_lower == pytest.approx(math.sqrt(2), rel=1e-6)
    # the certificate is re-checked against the model's own density
    lp = mech.release_log_prob(
        ICLP_PAIR[0] if cert.direction == "D->D'" else ICLP_PAIR[1], cert.release
    )
    assert float(lp) == pytest.approx(cert.log_p, rel=1e-12)
    # a Monte Carlo draw alone also finds L > epsilon at this sample size
    best_mc = max(d.max_loss for d in report.directions)
    assert best_mc > mech.claim.epsilon


@pytest.mark.parametrize("calibration", ["analytic", "classical"])
def test_correct_gaussian_process_mechanisms_pass(calibration):
    mech = gp_mean(1.0, 1e-3, calibration=calibration)
    report = dpaudit.audit(mech, *GP_PAIR, samples=20_000, seed=3)
    assert report.verdict == "pass"
    assert report.delta_at_claimed_epsilon["upper"] <= 1e-3
    if calibration == "classical":  # classical c(delta) is conservative for epsilon <= 1
        assert report.epsilon_at_claimed_delta["exact"] < 0.7


def test_classical_gaussian_at_epsilon_10_is_violated():
    """c(delta) Delta/epsilon at epsilon = 10, delta = 0.01 has true delta 0.0245.

    The classical calibration is proven for epsilon <= 1 only, see
    docs/paper-errors.md#mrs-epsilon-at-most-one.
    """
    mech = gp_mean(10.0, 0.01, calibration="classical")
    for exact in (True, False):
        report = dpaudit.audit(mech, *GP_PAIR, samples=100_000, seed=4, exact=exact)
        assert report.verdict == "violation"
        assert report.delta_at_claimed_epsilon["monte_carlo_lower"] > 0.01
        assert report.epsilon_lower > 10.0
    assert report.delta_at_claimed_epsilon["monte_carlo_estimate"] == pytest.approx(
        0.0245, abs=2e-3
    )


def test_gaussian_noise_with_a_pure_claim_is_violated():
    report = dpaudit.audit(gp_mean(1.0, pure=True), *GP_PAIR, samples=5_000, seed=5)
    assert report.verdict == "violation"
    assert report.certificate is not None and report.certificate.loss > 1.0
    assert report.epsilon_at_claimed_delta["exact"] == math.inf


def test_raw_mean_of_rough_curves_with_rbf_noise():
    basis = kl_basis(Gaussian(0.2), GRID)

    def model(data):
        noise = GaussianProcessNoise(basis.eigenvalues, 1.0)
        numpyro.sample("release", GridNoise(noise, basis, loc=jnp.mean(data, axis=0)))

    mech = Mechanism("test-raw-mean-rbf", model, Claim(1.0, 1e-3))
    rng = np.random.default_rng(6)
    curves = np.cumsum(rng.normal(size=(N, GRID.size)), axis=1) / np.sqrt(GRID.size)
    data = jnp.asarray(curves)
    report = dpaudit.audit(mech, data, data.at[0].set(-data[0]), samples=2_000, seed=6)
    assert report.verdict == "violation"
    assert report.certificate.kind == "singular"
    assert report.delta_at_claimed_epsilon["lower"] == 1.0
    assert report.compatibility.classification == "incompatible"


def _gaussian_only_pair(k):
    """h = c j^-2 with lambda_j = j^-2: ||h||_C converges, ||h||_{1,C} = c sum 1/j diverges."""
    lam = np.arange(1, k + 1.0) ** -2.0
    return lam, 0.05 * lam  # c = 0.05


def test_pure_iclp_claim_on_a_gaussian_only_functional_pair_is_incompatible():
    """A grid release on a cosine basis truncated at K = 64: at K = 64 the 1,C norm is finite
    and the noise covers it, but no sigma works as K grows. The note cites the 1,C analysis
    (equivalent laws, not pure-DP; LR Thm 3/7), not the Cameron-Martin singularity."""
    k = 64
    lam, h = _gaussian_only_pair(k)
    grid = uniform_grid(4 * k)
    basis = spectral_basis(
        lam, lambda t: np.sqrt(2) * np.cos(np.pi * np.arange(1, k + 1) * t), grid
    )
    sigma = 1.5 * math.sqrt(2) * float(one_c_norm(jnp.asarray(h), jnp.asarray(lam)))
    curve = basis.reconstruct(jnp.asarray(h))

    def model(data):
        noise = ICLPNoise(basis.eigenvalues, sigma)
        numpyro.sample("release", GridNoise(noise, basis, loc=data[0, 0] * curve))

    mech = Mechanism("test-iclp-gaussian-only-grid", model, Claim(1.0))
    report = dpaudit.audit(mech, jnp.ones((1, 1)), jnp.zeros((1, 1)), samples=2_000, seed=7)
    assert report.compatibility.classification == "gaussian-only"
    assert report.compatibility.extrapolated
    assert report.verdict == "incompatible"
    assert report.exact.sup_loss < 1.0
    (note,) = [n for n in report.notes if "K = 64" in n]
    assert "not pure-DP" in note and "H_{1,C}" in note and "Thm 3/7" in note
    assert "singular" not in note.replace("not singular", "")


def test_gaussian_noise_outside_cameron_martin_is_incompatible_and_cites_it():
    """Gaussian grid noise, h_j = j^-1 with lambda_j = j^-2: ||h||_C^2 = sum 1 diverges."""
    k = 64
    lam = np.arange(1, k + 1.0) ** -2.0
    h = 0.01 * np.arange(1, k + 1.0) ** -1.0
    grid = uniform_grid(4 * k)
    basis = spectral_basis(
        lam, lambda t: np.sqrt(2) * np.cos(np.pi * np.arange(1, k + 1) * t), grid
    )
    curve = basis.reconstruct(jnp.asarray(h))

    def model(data):
        noise = GaussianProcessNoise(basis.eigenvalues, 50.0)
        numpyro.sample("release", GridNoise(noise, basis, loc=data[0, 0] * curve))

    mech = Mechanism("test-gp-outside-cm", model, Claim(1.0, 0.1))
    report = dpaudit.audit(mech, jnp.ones((1, 1)), jnp.zeros((1, 1)), samples=2_000, seed=7)
    assert report.compatibility.classification == "incompatible"
    assert report.verdict == "incompatible"
    (note,) = [n for n in report.notes if "K = 64" in n]
    assert "Cameron-Martin" in note and "mutually singular" in note and "Thm 3.1" in note


@pytest.mark.parametrize("k", [30, 64])
def test_finite_iclp_coefficient_vector_at_its_tight_epsilon_passes(k):
    """A user's coefficient vector (a bare ICLPNoise, K = 30 or 64) is the mechanism, not a
    truncation: with sigma = sqrt(2) ||h||_{1,C} / epsilon the claim is exactly tight and the
    verdict rests on the audited law. At K = 64 the same coefficients read as a Gaussian-only
    pair as K grows (at K = 30 the tail fit still reads compatible): the limit is only noted.
    The exact supremum is 1 + round-off, so the pass also clamps epsilon_lower to the claim."""
    epsilon = 1.0
    lam, h = _gaussian_only_pair(k)
    sigma = math.sqrt(2) * float(one_c_norm(jnp.asarray(h), jnp.asarray(lam))) / epsilon

    def model(data):
        numpyro.sample("release", ICLPNoise(jnp.asarray(lam), sigma, loc=data[0, 0] * h))

    mech = Mechanism("test-iclp-finite-vector", model, Claim(epsilon))
    report = dpaudit.audit(mech, jnp.ones((1, 1)), jnp.zeros((1, 1)), samples=2_000, seed=7)
    assert report.compatibility is not None and not report.compatibility.extrapolated
    assert report.verdict == "pass"
    assert report.exact.sup_loss == pytest.approx(epsilon, rel=1e-12)
    assert report.epsilon_lower <= epsilon
    assert report.diagnostics.get("epsilon_lower_raw", epsilon) >= epsilon
    if k == 64:
        assert report.compatibility.classification == "gaussian-only"
        assert any("finite coefficient vector (K = 64)" in n for n in report.notes)


@pytest.mark.parametrize("kind", ["gaussian", "iclp"])
def test_monte_carlo_curve_agrees_with_exact_curve_at_1e6_samples(kind):
    """Acceptance: the exact/numerical curve lies inside the Monte Carlo band (simultaneous over
    the grid and both directions, failure probability TEST_FAILURE_RATE / 2 per kind)."""
    if kind == "gaussian":
        mech, pair = gp_mean(1.0, 1e-3, calibration="classical"), GP_PAIR
    else:
        mech, pair = iclp_mean(1.5, scale=1.0), ICLP_PAIR
    report = dpaudit.audit(
        mech,
        *pair,
        samples=1_000_000,
        seed=8,
        confidence=1 - TEST_FAILURE_RATE / 2,
        epsilons=np.linspace(0.0, 2.5, 26),
    )
    curves = report.curves
    for direction in ("D->D'", "D'->D"):
        band = curves[direction]
        # truth lies in [exact_lower, exact_upper]; the band must meet that interval
        assert np.all(band["lower"] <= curves["exact_upper"] + 1e-12)
        assert np.all(band["upper"] >= curves["exact_lower"] - 1e-12)
        half = np.maximum(band["upper"] - band["estimate"], band["estimate"] - band["lower"])
        gap = curves["exact_upper"] - curves["exact_lower"]
        assert np.all(np.abs(band["estimate"] - curves["exact_upper"]) <= half + gap + 1e-12)
    assert report.verdict == ("pass" if kind == "gaussian" else "violation")


def test_false_violation_rate_on_correct_mechanisms_is_below_alpha():
    """Monte Carlo only (no exact accounting) on a claim that is exactly tight on the pair:
    the rate of 'violation' over independent seeds stays below alpha = 1 - confidence."""
    runs, alpha = 60, 0.1
    mech, pair = scalar_gaussian(mu=1.0, epsilon=0.5)  # delta_claim = true delta(0.5)
    iclp = iclp_mean(1.0)
    false_gauss = false_iclp = 0
    for seed in range(runs):
        r = dpaudit.audit(mech, *pair, samples=4_000, seed=seed, confidence=1 - alpha, exact=False)
        false_gauss += r.verdict == "violation"
        assert r.verdict in ("pass", "inconclusive", "violation")
    for seed in range(runs // 3):
        r = dpaudit.audit(
            iclp, *ICLP_PAIR, samples=2_000, seed=seed, confidence=1 - alpha, exact=False
        )
        false_iclp += r.verdict == "violation"
        assert r.verdict == "inconclusive"  # a pure claim never passes on sampling alone
    limit = scipy.stats.binom.isf(TEST_FAILURE_RATE, runs, alpha)
    assert false_gauss <= limit and false_iclp == 0


def test_monte_carlo_pass_and_generic_distributions():
    """Logistic noise (no exact accounting): losses are bounded by |h|/s."""
    n, s = 5, 0.4

    def build(epsilon):
        def model(data):
            numpyro.sample("release", dist.Logistic(jnp.mean(jnp.clip(data, 0, 1)), s))

        return Mechanism("test-logistic", model, Claim(epsilon))

    pair = (jnp.zeros(n), jnp.zeros(n).at[0].set(1.0))
    sup = 1 / (n * s)
    ok = dpaudit.audit(build(sup), *pair, samples=20_000, seed=9)
    assert ok.verdict == "inconclusive" and ok.route == "density" and ok.exact is None
    assert 0.9 * sup < ok.epsilon_lower <= sup
    bad = dpaudit.audit(build(0.5 * sup), *pair, samples=20_000, seed=9)
    assert bad.verdict == "violation" and bad.certificate.loss > 0.5 * sup
    approx = dpaudit.audit(
        Mechanism("test-logistic-approx", build(sup).model, Claim(0.5 * sup, 0.1)),
        *pair,
        samples=20_000,
        seed=9,
    )
    assert approx.verdict == "pass"
    assert any("this pair" in note for note in approx.notes)


def test_routes_agree_and_runs_are_reproducible():
    mech = iclp_mean(1.0, scale=1.0)
    kw = {"samples": 3_000, "seed": 10, "epsilons": np.linspace(0, 1.5, 7), "exact": False}
    closed = dpaudit.audit(mech, *ICLP_PAIR, route="closed-form", **kw)
    density = dpaudit.audit(mech, *ICLP_PAIR, route="density", **kw)
    again = dpaudit.audit(mech, *ICLP_PAIR, route="closed-form", **kw)
    np.testing.assert_array_equal(
        closed.curves["D->D'"]["estimate"], again.curves["D->D'"]["estimate"]
    )
    # different draws, same law: the two estimates are within their standard errors
    for d in ("D->D'", "D'->D"):
        a, b = closed.curves[d], density.curves[d]
        se = np.hypot(a["std_error"], b["std_error"])
        z = scipy.stats.norm.isf(TEST_FAILURE_RATE / 28)
        assert np.all(np.abs(a["estimate"] - b["estimate"]) <= z * se + 1e-12)
    model = dpaudit.audit(mech, *ICLP_PAIR, route="model", **{**kw, "samples": 300})
    assert model.verdict == closed.verdict == "violation"


def test_result_exports_to_json_arviz_and_netcdf(tmp_path):
    report = dpaudit.audit(gp_mean(), *GP_PAIR, samples=4_000, seed=11, progress=True)
    text = json.dumps(report.to_dict(), allow_nan=False)
    back = json.loads(text)
    assert back["verdict"] == report.verdict and back["claim"]["delta"] == 1e-3
    assert len(back["curves"]["epsilons"]) == len(report.curves["epsilons"])
    idata = report.to_inference_data()
    assert set(idata.groups()) >= {"posterior", "constant_data"}
    assert idata.posterior["loss"].shape == (1, 4_000, 2)
    path = report.to_netcdf(tmp_path / "audit.nc")
    import xarray

    with xarray.open_dataset(path, group="posterior", engine="h5netcdf") as ds:
        np.testing.assert_allclose(ds["loss"].values, idata.posterior["loss"].values)
    diag = report.diagnostics["D->D'"]
    assert diag["ess"] > 1000 and diag["mcse"] >= 0
    bare = dpaudit.audit(gp_mean(), *GP_PAIR, samples=500, seed=11, keep_samples=0)
    assert "posterior" not in bare.to_inference_data().groups()


def _nan_mechanism():
    class NaNNormal(dist.Normal):
        def log_prob(self, value):
            return jnp.where(value > 1.0, jnp.nan, super().log_prob(value))

    return Mechanism(
        "nan", lambda d: numpyro.sample("release", NaNNormal(jnp.mean(d), 1.0)), Claim(1.0)
    )


def test_bad_input_is_rejected_with_clear_errors():
    mech = gp_mean()
    data, data_prime = GP_PAIR
    with pytest.raises(ValueError, match="differ in 2 records"):
        dpaudit.audit(mech, data, data_prime.at[1].set(1.0))
    with pytest.raises(ValueError, match="no sample site"):
        dpaudit.audit(
            Mechanism("x", lambda d: numpyro.sample("y", dist.Normal(0, 1)), Claim(1.0)),
            data,
            data_prime,
        )
    with pytest.raises(ValueError, match="NaN"):
        dpaudit.audit(_nan_mechanism(), jnp.zeros(3), jnp.zeros(3).at[0].set(1.0), samples=500)
    with pytest.raises(ValueError, match="samples"):
        dpaudit.audit(mech, data, data_prime, samples=1)
    with pytest.raises(ValueError, match="confidence"):
        dpaudit.audit(mech, data, data_prime, confidence=1.0)
    with pytest.raises(ValueError, match="route"):
        dpaudit.audit(mech, data, data_prime, route="fast")
    with pytest.raises(TypeError, match="Mechanism"):
        dpaudit.audit("gp", data, data_prime)
    logistic = Mechanism(
        "l", lambda d: numpyro.sample("release", dist.Logistic(d.mean(), 1.0)), Claim(1.0)
    )
    with pytest.raises(ValueError, match="closed-form"):
        dpaudit.audit(
            logistic, jnp.zeros(3), jnp.ones(3), route="closed-form", check_adjacency=False
        )


def _faulty_catalogue():
    names = dpaudit.catalogue(faulty=True)
    if not names:
        pytest.skip("the faulty catalogue (mechanisms/faulty) is not registered yet")
    try:
        from mechanisms.faulty import example_pair
    except ImportError:
        pytest.skip("mechanisms.faulty.example_pair is not available yet")
    return names, example_pair


def _audit_faulty(structured_only: bool) -> int:
    names, example_pair = _faulty_catalogue()
    audited = 0
    for name in names:
        mech = dpaudit.build(name)
        pair = example_pair(name)
        if pair is None:
            continue
        shift = noise_shift(mech.release_distribution(pair[0]), mech.release_distribution(pair[1]))
        if structured_only and shift is None:
            continue
        report = dpaudit.audit(mech, *pair, samples=4_000, seed=12)
        assert report.verdict in ("violation", "incompatible"), (name, report.notes)
        audited += 1
    return audited


@pytest.mark.slow
def test_faulty_catalogue_flaws_are_found():
    """Faulty mechanisms with shifted Gaussian/ICLP/Laplace releases (exact accounting),
    each audited on mechanisms.faulty.example_pair(name): all must be found. Slow (about a
    minute on 2 cores: ~40 audits); the default suite sees the faulty specs' verdicts through
    the golden records and tests/cli/test_shipped_suite.py."""
    assert _audit_faulty(structured_only=True) > 0


@pytest.mark.slow
def test_whole_faulty_catalogue_flaws_are_found():
    """Every faulty mechanism, including sampled-density ones (ECDF trees, sparse vector,
    noisy max): slow because their release densities are costly per sample."""
    assert _audit_faulty(structured_only=False) > 0


def test_epsilon_estimate_never_below_the_certified_lower_bound():
    """With few samples the largest sampled loss is far below sup L; the constructed
    candidate ``x = f_D`` certifies sup L, and the reported estimate must not sit below it."""
    import numpyro
    import numpyro.distributions as dist

    k = 30  # sup L needs all 30 coordinates on the far side: probability 2^-30 per draw

    def model(data):
        numpyro.sample("release", dist.Laplace(jnp.mean(data) * jnp.ones(k), 1.0).to_event(1))

    mech = dpaudit.Mechanism(
        "laplace-vector", model, dpaudit.Claim(epsilon=1.0, sensitivity=1.0, sensitivity_norm="l1")
    )
    data, data_prime = jnp.zeros(10), jnp.zeros(10).at[0].set(1.0)  # shift 0.1 per coordinate
    report = dpaudit.audit(mech, data, data_prime, samples=50, seed=0, exact=False)
    assert report.verdict == "violation"
    assert report.epsilon_lower == pytest.approx(3.0, rel=1e-6)
    assert max(d.max_loss for d in report.directions) < 2.5
    assert report.epsilon_at_claimed_delta["estimate"] >= report.epsilon_lower
