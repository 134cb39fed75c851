"""Assertions for pytest, and dogfooding: every catalogue mechanism's sensitivity claim is checked.

* ``assert_sensitivity_bound`` passes on correct bounds and fails on understated ones
  with a counterexample (pair, norm measured, bound) that is reproducible;
* ``assert_compatible`` accepts a smoothed mean and rejects the raw mean of rough
  curves under a smooth noise (MRS Thm 3.1);
* ``assert_dp`` delegates to ``dpaudit.audit``;
* the whole catalogue: each mechanism with a summary, a norm and a known record
  space is property-checked (hypothesis pairs + worst-case search); each faulty
  mechanism whose flaw is an understated sensitivity must be caught.
"""

import math
import re

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.errors import HypothesisException

import dpaudit
from dpaudit import Claim, KnownFlaw, Mechanism
from dpaudit.model.noise import GaussianProcessNoise, GridNoise, ICLPNoise
from dpaudit.model.spaces import (
    Matern,
    brownian_motion_basis,
    kl_basis,
    uniform_grid,
)
from dpaudit.testing import (
    Box,
    CompatibilityViolation,
    DPViolation,
    L2Ball,
    Labels,
    Product,
    SearchBudget,
    SensitivityViolation,
    assert_compatible,
    assert_dp,
    assert_sensitivity_bound,
    record_space_of,
)
from dpaudit.testing.strategies import neighbouring_pairs

pytest_plugins = ["pytester"]  # for the plugin test at the end

N = 10
SMALL = SearchBudget(restarts=4, steps=40, candidates=64)


def box_mean(x):
    return jnp.mean(x, axis=0)


# ------------------------------------------------------------- sensitivity bound


def test_correct_bound_passes_on_pairs_strategy_and_search():
    pairs = [(np.zeros((N, 1)), np.vstack([np.ones((1, 1)), np.zeros((N - 1, 1))]))]
    worst = assert_sensitivity_bound(
        box_mean,
        lambda h: jnp.sum(jnp.abs(h)),
        1.0 / N,
        datasets=pairs,
        record_space=Box(0.0, 1.0, dim=1),
        n=N,
        budget=SMALL,
    )
    assert worst.ratio == pytest.approx(1.0, abs=1e-9)  # the bound 1/n is tight
    assert_sensitivity_bound(
        box_mean,
        lambda h: jnp.sum(jnp.abs(h)),
        1.0 / 3,
        datasets=neighbouring_pairs(Box(0.0, 1.0, dim=1), n=3),
    )


def test_understated_bound_fails_with_a_named_counterexample():
    with pytest.raises(SensitivityViolation) as caught:
        assert_sensitivity_bound(
            box_mean,
            lambda h: jnp.sum(jnp.abs(h)),
            0.5 / N,  # claims half the true sensitivity 1/n
            record_space=Box(0.0, 1.0, dim=1),
            n=N,
            budget=SMALL,
            seed=3,
        )
    error = caught.value
    assert error.ratio == pytest.approx(2.0, rel=1e-9)
    assert error.bound == pytest.approx(0.05)
    message = str(error)
    assert "ratio 2.000000" in message and "bound 0.05" in message
    assert f"record {error.worst.index} of D" in message and "seed 3" in message
    # the counterexample is a real neighbouring pair at the extremes of the box
    dpaudit.check_adjacent(error.data, error.data_prime)
    i = error.worst.index
    assert {float(error.data[i, 0]), float(error.data_prime[i, 0])} == {0.0, 1.0}
    # and reproducible from its seed
    with pytest.raises(SensitivityViolation) as again:
        assert_sensitivity_bound(
            box_mean,
            lambda h: jnp.sum(jnp.abs(h)),
            0.5 / N,
            record_space=Box(0.0, 1.0, dim=1),
            n=N,
            budget=SMALL,
            seed=3,
        )
    np.testing.assert_array_equal(again.value.data, error.data)


def test_hypothesis_counterexample_is_shrunk_and_named():
    """A bound of 0.3 on the l2 distance of means of n in 2..4 curves of the unit ball fails
    (for n = 2 a unit curve replaced by 0 moves the mean by 0.5); hypothesis reports the
    shrunk counterexample (derandomized ci profile)."""
    grid = uniform_grid(8)
    weights = np.asarray(grid.weights)
    with pytest.raises(SensitivityViolation) as caught:
        assert_sensitivity_bound(
            lambda x: np.mean(x, axis=0),  # plain numpy summaries work too
            lambda h: np.sqrt(np.sum(weights * h * h)),
            0.3,
            datasets=neighbouring_pairs(L2Ball(1.0, grid), n=(2, 4)),
        )
    error = caught.value
    n = len(error.data)
    assert error.distance > 0.3 * (1 + 1e-6)
    assert n == 2  # shrinking keeps the smallest dataset
    assert "record" in str(error) and "ratio" in str(error)


def test_non_adjacent_pairs_and_missing_inputs_are_rejected():
    far = (np.zeros((3, 1)), np.ones((3, 1)))
    with pytest.raises(ValueError, match="differ in 3 records"):
        assert_sensitivity_bound(box_mean, jnp.abs, 1.0, datasets=[far])
    with pytest.raises(ValueError, match="give datasets"):
        assert_sensitivity_bound(box_mean, jnp.abs, 1.0)
    with pytest.raises(ValueError, match="give the norm"):
        assert_sensitivity_bound(box_mean, bound=1.0, datasets=[])
    with pytest.raises(TypeError, match="iterable of"):
        assert_sensitivity_bound(box_mean, jnp.abs, 1.0, datasets=3)


def test_add_remove_claims_are_checked_under_add_remove():
    def total(x):
        return jnp.sum(x)

    pair = (np.array([0.2, 0.7, 1.0]), np.array([0.2, 0.7]))
    assert_sensitivity_bound(total, jnp.abs, 1.0, datasets=[pair], adjacency="add-remove")
    with pytest.raises(SensitivityViolation, match="D' is D without record 2"):
        assert_sensitivity_bound(total, jnp.abs, 0.5, datasets=[pair], adjacency="add-remove")


# ------------------------------------------------------------------ compatibility


@pytest.fixture(scope="module")
def bm_basis():
    return brownian_motion_basis(uniform_grid(64), 64)  # lambda_j ~ j^-2, full rank


def rough_pairs(n=4, m=64):
    """Step curves (coefficients ~ 1/j in the Brownian basis) replaced by zero."""
    step = np.where(np.arange(m) < m // 2, 1.0, 0.0)
    data = np.tile(step, (n, 1)) * 0.5
    prime = data.copy()
    prime[0] = 0.0
    return [(data, prime)]


def test_compatible_smoothed_mean_passes(bm_basis):
    lam = bm_basis.eigenvalues
    shrink = lam**2 / (lam**2 + 1e-3)  # ICLP-QR with eta = 2: terms decay like j^-6

    def smoothed(x):
        return bm_basis.reconstruct(shrink * bm_basis.project(jnp.mean(x, axis=0)))

    results = assert_compatible(
        smoothed, GridNoise(ICLPNoise(lam, 1.0), bm_basis), datasets=rough_pairs()
    )
    assert [r.classification for r in results] == ["compatible"]


def test_raw_mean_of_rough_curves_is_incompatible(bm_basis):
    """h_j ~ 1/j against lambda_j ~ j^-2: the Cameron–Martin terms do not decay (MRS Thm 3.1)."""
    noise = GridNoise(GaussianProcessNoise(bm_basis.eigenvalues, 1.0), bm_basis)
    with pytest.raises(CompatibilityViolation, match="incompatible") as caught:
        assert_compatible(box_mean, noise, datasets=rough_pairs())
    assert caught.value.result.classification == "incompatible"
    assert "record 0 of D" in str(caught.value)


def test_difference_outside_the_noise_span_is_singular():
    grid = uniform_grid(32)
    basis = kl_basis(Matern(2.5, 0.3), grid, n_components=6)  # smooth, truncated
    noise = GridNoise(GaussianProcessNoise(basis.eigenvalues, 1.0), basis)
    with pytest.raises(CompatibilityViolation, match="mutually singular"):
        assert_compatible(box_mean, noise, datasets=rough_pairs(m=32))
    with pytest.raises(TypeError, match="GridNoise"):
        assert_compatible(box_mean, "noise", datasets=[])


# --------------------------------------------------------------------------- DP


def laplace_mean(scale_factor=1.0, n=N, epsilon=1.0):
    import numpyro
    import numpyro.distributions as dist

    def summary(x):
        return jnp.mean(jnp.clip(x, 0.0, 1.0))

    def model(x):
        numpyro.sample("release", dist.Laplace(summary(x), scale_factor / (n * epsilon)))

    return Mechanism(
        name="laplace-mean-test",
        model=model,
        claim=Claim(epsilon=epsilon, sensitivity=1.0 / n, sensitivity_norm="l1"),
        summary=summary,
        difference_norm=jnp.abs,
        params={"record_space": Box(0.0, 1.0)},
    )


def test_assert_dp_delegates_to_the_audit_engine():
    if not callable(getattr(dpaudit, "audit", None)):
        pytest.skip("dpaudit.audit is not available yet")
    data = np.zeros(N)
    prime = data.copy()
    prime[0] = 1.0
    result = assert_dp(laplace_mean(), data, prime, samples=2_000)
    assert result.verdict == "pass"
    with pytest.raises(DPViolation, match="violation") as caught:
        assert_dp(laplace_mean(scale_factor=0.5), data, prime, samples=2_000)
    assert caught.value.result.verdict == "violation"
    # without a pair, the worst pair of the sensitivity search is audited
    with pytest.raises(DPViolation):
        assert_dp(laplace_mean(scale_factor=0.5), n=N, samples=2_000)
    # a stronger claim than the mechanism makes is audited as given
    with pytest.raises(DPViolation):
        assert_dp(laplace_mean(), data, prime, claim=Claim(epsilon=0.5), samples=2_000)


# ------------------------------------------------- dogfooding: the whole catalogue


def curve_grid(p):
    """The grid of a curve mechanism: its basis's grid, or the midpoint grid of its size."""
    basis = p.get("basis")
    if hasattr(basis, "grid"):
        return basis.grid
    size = p.get("grid_points", p.get("grid_size"))
    if size is None and isinstance(basis, str):
        found = re.search(r"(\d+)-point midpoint grid", basis)
        size = int(found.group(1)) if found else None
    return uniform_grid(int(size) if size is not None else 100)


#: Records each catalogue mechanism takes (the Mechanism record has no field for it
#: yet; a mechanism may also declare ``params["record_space"]``). Unknown -> skipped.
RECORD_SPACES = {
    "bernstein-mean": lambda p: Box(-p["tau"], p["tau"], dim=p["grid_points"]),
    "bernstein-mean-2d": lambda p: Box(-p["tau"], p["tau"], dim=p["grid_points"]),
    "frl-mean": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "iclp-ar-mean": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "iclp-qr-mean": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "gaussian-kl-coefficients": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "mrs-penalized-mean": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "mrs-penalized-mean-coefficients": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "mrs-linear-functionals": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "iclp-qr-covariance": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "iclp-qr-fos-regression": lambda p: Product(
        L2Ball(p["covariate_bound"], dim=p["p"]), L2Ball(p["tau"], curve_grid(p))
    ),
    "hrw-gaussian-kde": lambda p: Box(0.0, 1.0, dim=p["dim"]),
    "hrw-gaussian-kde-anisotropic": lambda p: Box(0.0, 1.0, dim=p["dim"]),
    "hrw-sobolev-kde": lambda p: Box(0.0, 1.0, dim=p["dim"]),
    "iclp-qr-kde": lambda p: Box(0.0, 1.0, dim=p["dim"]),
    "hrw-kernel-logistic": lambda p: Product(Box(0.0, 1.0, dim=p["dim"]), Labels((-1.0, 1.0))),
    "hrw-kernel-svm": lambda p: Product(Box(0.0, 1.0, dim=p["dim"]), Labels((-1.0, 1.0))),
    "hrw-kernel-ridge": lambda p: Product(
        Box(0.0, 1.0, dim=p["dim"]), Box(-p["y_bound"], p["y_bound"])
    ),
    "iclp-qr-krr": lambda p: Product(
        Box(0.0, 1.0, dim=1), Box(-p["response_bound"], p["response_bound"])
    ),
    "laplace-mean": lambda p: Box(p["low"], p["high"], dim=p["dim"]),
    "gaussian-mean-classical": lambda p: Box(p["low"], p["high"], dim=p["dim"]),
    "gaussian-mean-analytic": lambda p: Box(p["low"], p["high"], dim=p["dim"]),
    "geometric-count": lambda p: Labels((0.0, 1.0)),
    "report-noisy-max-laplace": lambda p: Labels(tuple(range(p["n_bins"]))),
    "report-noisy-max-exponential": lambda p: Labels(tuple(range(p["n_bins"]))),
    "report-noisy-max-gumbel": lambda p: Labels(tuple(range(p["n_bins"]))),
    "svt": lambda p: Labels((0.0, 1.0), dim=len(p["thresholds"])),
    "svt-dwork-roth": lambda p: Labels((0.0, 1.0), dim=len(p["thresholds"])),
    "bmr-ecdf": lambda p: Box(p["low"], p["high"]),
    "bmr-roc": lambda p: Product(Box(p["low"], p["high"]), Labels((0.0, 1.0))),
    # faulty mechanisms whose flaw is an understated sensitivity
    "faulty/iclp-raw-eigenpairs": lambda p: L2Ball(p["tau"], curve_grid(p)),
    "faulty/textbook-tree-replace-one": lambda p: Box(0.0, 1.0),
}
#: Faulty mechanisms whose known flaw is an understated sensitivity: the search must
#: find a pair beyond the claimed bound. (Other flaws — noise scale, composition,
#: compatibility — leave the sensitivity claim true.)
SENSITIVITY_FLAWS = {"faulty/iclp-raw-eigenpairs", "faulty/textbook-tree-replace-one"}
#: Records per dataset in the dogfooding runs (small: the bounds hold for every n).
DOGFOOD_N = 6
DOGFOOD_BUDGET = SearchBudget(
    restarts=4, steps=40, candidates=32, evolution_iterations=4, evolution_population=32
)
DOGFOOD_HYPOTHESIS = settings(
    max_examples=4,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)


def build_small(name):
    """The catalogue mechanism with DOGFOOD_N records when its builder takes n."""
    try:
        return dpaudit.build(name, n=DOGFOOD_N)
    except (TypeError, ValueError):
        return dpaudit.build(name)


def dogfood_space(mech):
    space = record_space_of(mech)
    if space is None and mech.name in RECORD_SPACES:
        space = RECORD_SPACES[mech.name](dict(mech.params))
    return space


def skip_unless_searchable(mech):
    if mech.summary is None or mech.difference_norm is None or mech.claim.sensitivity is None:
        pytest.skip(f"{mech.name} declares no summary/sensitivity norm to check")
    space = dogfood_space(mech)
    if space is None:
        pytest.skip(
            f"{mech.name}: no record space known; declare params['record_space'] or add it "
            "to RECORD_SPACES"
        )
    return space


# The gradient search on iclp-qr-krr once hung in an XLA futex wait on a loaded 2-core
# machine (jax 0.10.2); re-run in isolation (session 5, load average ~20) it finished in 42 s
# wall and did not hang, so it runs again, marked slow for its length.
SLOW_SEARCHES = {"iclp-qr-krr"}
CORRECT = [
    pytest.param(name, marks=pytest.mark.slow) if name in SLOW_SEARCHES else name
    for name in dpaudit.catalogue(faulty=False)
]
FAULTY = dpaudit.catalogue(faulty=True)


@pytest.mark.parametrize("name", CORRECT or [pytest.param(None, marks=pytest.mark.skip)])
def test_catalogue_sensitivity_claims_hold(name):
    """Property check: hypothesis pairs and the worst-case search stay within the claim."""
    mech = build_small(name)
    space = skip_unless_searchable(mech)
    n = int(mech.params.get("n", DOGFOOD_N))
    try:
        worst = assert_sensitivity_bound(
            mech,
            datasets=neighbouring_pairs(space, n=n, adjacency=mech.claim.adjacency),
            record_space=space,
            n=n,
            budget=DOGFOOD_BUDGET,
            hypothesis_settings=DOGFOOD_HYPOTHESIS,
        )
    except HypothesisException as error:  # e.g. records too large for hypothesis
        pytest.skip(f"{name}: hypothesis could not draw datasets ({type(error).__name__})")
    assert worst.ratio <= 1.0 + 1e-6
    assert math.isfinite(worst.distance)


@pytest.mark.parametrize("name", FAULTY or [pytest.param(None, marks=pytest.mark.skip)])
def test_faulty_sensitivity_claims_are_caught(name):
    mech = build_small(name)
    assert isinstance(mech.known_flaw, KnownFlaw)
    if name not in SENSITIVITY_FLAWS:
        pytest.skip(f"{name}: the known flaw is not an understated sensitivity")
    space = skip_unless_searchable(mech)
    with pytest.raises(SensitivityViolation) as caught:
        assert_sensitivity_bound(
            mech,
            record_space=space,
            n=int(mech.params.get("n", DOGFOOD_N)),
            budget=DOGFOOD_BUDGET,
        )
    assert caught.value.ratio > 1.0 + 1e-6


def test_faulty_rough_mean_is_caught_by_the_compatibility_assertion():
    if "faulty/rough-mean-smooth-noise" not in FAULTY:
        pytest.skip("faulty/rough-mean-smooth-noise is not in the catalogue")
    from dpaudit.io.datasets import example

    mech = dpaudit.build("faulty/rough-mean-smooth-noise")
    with pytest.raises(CompatibilityViolation):
        assert_compatible(mech, datasets=[example(mech)])


# ------------------------------------------------------------------ pytest plugin


def test_plugin_fixtures_profiles_and_catalogue_parametrisation(pytester):
    pytester.makepyfile(
        """
        from hypothesis import settings
        from dpaudit.testing import SearchBudget

        def test_fixtures(search_budget, dpaudit_seed):
            assert search_budget == SearchBudget.long()
            assert dpaudit_seed == 7
            assert settings().max_examples == 2000

        def test_each_mechanism(catalogue_name):
            assert isinstance(catalogue_name, str)
        """
    )
    result = pytester.runpytest_inprocess(
        "-p", "dpaudit.testing.plugin", "--dpaudit-profile=long", "--dpaudit-seed=7", "-q"
    )
    assert settings().max_examples != 2000  # the caller's profile is restored afterwards
    n_names = len(CORRECT)
    if n_names:
        result.assert_outcomes(passed=1 + n_names)
    else:
        result.assert_outcomes(passed=1, skipped=1)
