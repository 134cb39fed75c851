"""Black-box audits: exact binomial bounds against scipy, calibration of the certified bounds by
simulation, power of the model-guided statistic against a classifier, detection of the faulty
catalogue from samples alone, bad input, and the result record.

Failure rates. Every statistical check is calibrated so that, for a random seed, it fails
spuriously with probability at most ``TEST_FAILURE_RATE`` (Bonferroni over the checks of a
test); seeds are fixed, so CI is deterministic. Detection and power checks are not calibrated
statements but margins: the numbers measured at the fixed seeds are in their docstrings.
"""

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.stats
from conftest import TEST_FAILURE_RATE
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
import dpaudit.blackbox as bb
from dpaudit.blackbox import (
    as_sampler,
    blackbox_audit,
    certified_delta,
    certified_epsilon,
    clopper_pearson,
    kl_features,
    numpy_generator,
)
from dpaudit.blackbox.samplers import REPLAY_RELEASES
from dpaudit.estimation.bounds import certified_epsilon_by
from dpaudit.model.spaces import Gaussian, kl_basis, uniform_grid
from mechanisms.faulty import example_pair

# ------------------------------------------------------------------ randomized response
#
# One bit, epsilon = log 3: the bit is kept with probability 3/4. Both 3/4 and 1/4 are
# multiples of 2^-53, so ``uniform < 3/4`` has probability exactly 3/4 in floating point and
# the mechanism is exactly log(3)-DP as implemented (no Mironov-style leak), and tight: the
# event {x = 1} has probability ratio exactly 3.

RR_EPSILON = math.log(3.0)
RR_PAIR = (np.array([1.0]), np.array([0.0]))


def randomized_response(data, n, key):
    keep = numpy_generator(key).random(n) < 0.75
    bit = float(np.asarray(data)[0]) == 1.0
    return (keep == bit).astype(np.float64)[:, None]


def _rr_model(data):
    p = jnp.where(jnp.asarray(data)[0] == 1.0, 0.75, 0.25)
    numpyro.sample("release", dist.Bernoulli(probs=p).expand([1]).to_event(1))


RR_REFERENCE = dpaudit.Mechanism(
    name="randomized-response", model=_rr_model, claim=dpaudit.Claim(epsilon=RR_EPSILON)
)


def _faulty(name):
    mech = dpaudit.build(name)
    return mech, example_pair(name)


# ------------------------------------------------------------------ Clopper–Pearson


@settings(max_examples=40)
@given(
    n=st.integers(1, 10**6),
    fraction=st.floats(0.0, 1.0),
    alpha=st.floats(1e-6, 0.4),
)
def test_clopper_pearson_matches_scipy_exact_interval(n, fraction, alpha):
    """One-sided bounds at level alpha = scipy's exact two-sided interval at 1 - 2 alpha."""
    k = round(fraction * n)
    lower, upper = clopper_pearson(k, n, alpha)
    ci = scipy.stats.binomtest(k, n).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    # scipy's root finder (brentq, absolute tolerance ~2e-12) is the looser of the two: seen
    # 3.7e-13 and 2e-13 absolute at n = 500001; the engine uses Beta quantiles directly
    np.testing.assert_allclose(float(lower), ci.low, rtol=1e-6, atol=2e-12)
    np.testing.assert_allclose(float(upper), ci.high, rtol=1e-6, atol=2e-12)


@pytest.mark.parametrize("n", [1, 7, 1000, 10**7])
def test_clopper_pearson_at_zero_and_all_successes(n):
    """k = 0: [0, 1 - alpha^(1/n)]; k = n: [alpha^(1/n), 1] (Beta(1, n), Beta(n, 1) quantiles)."""
    alpha = 0.025
    for k, expected in ((0, (0.0, -math.expm1(math.log(alpha) / n))), (n, (alpha ** (1 / n), 1.0))):
        lower, upper = clopper_pearson(k, n, alpha)
        ci = scipy.stats.binomtest(k, n).proportion_ci(1 - 2 * alpha, method="exact")
        np.testing.assert_allclose([float(lower), float(upper)], expected, rtol=1e-10)
        # scipy's binomtest is the looser oracle here (relative error 4e-8 at n = 10^7)
        np.testing.assert_allclose([float(lower), float(upper)], [ci.low, ci.high], rtol=1e-6)


def test_clopper_pearson_is_vectorised_and_rejects_bad_input():
    lower, upper = clopper_pearson(np.array([0, 5, 10]), 10, 0.05)
    assert lower.shape == upper.shape == (3,)
    assert np.all(np.diff(lower) > 0) and np.all(np.diff(upper) > 0)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(11, 10, 0.05)
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson(-1, 10, 0.05)
    for alpha in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="alpha must be in"):
            clopper_pearson(3, 10, alpha)


def test_certified_epsilon_and_delta_by_hand():
    """log((p_lo - delta) / q_hi) and p_lo - e^eps q_hi with the closed-form end bounds."""
    n, confidence = 1000, 0.95
    a = (1 - confidence) / 2
    p_lo, q_hi = a ** (1 / n), -math.expm1(math.log(a) / n)  # k_p = n, k_q = 0
    assert float(certified_epsilon(n, n, 0, n, confidence=confidence)) == pytest.approx(
        math.log(p_lo / q_hi), rel=1e-12
    )
    assert float(certified_epsilon(n, n, 0, n, delta=0.1)) == pytest.approx(
        math.log((p_lo - 0.1) / q_hi), rel=1e-12
    )
    assert float(certified_delta(n, n, 0, n, epsilon=2.0)) == pytest.approx(
        p_lo - math.exp(2.0) * q_hi, rel=1e-12
    )
    # an interior case through the Beta quantiles (the docstring's 1.531)
    p_lo = scipy.stats.beta.ppf(a, 5000, 5001)
    q_hi = scipy.stats.beta.ppf(1 - a, 1001, 9000)
    assert float(certified_epsilon(5000, 10000, 1000, 10000)) == pytest.approx(
        math.log(p_lo / q_hi), rel=1e-12
    )
    assert float(certified_epsilon(5000, 10000, 1000, 10000)) == pytest.approx(1.531, abs=5e-4)
    # nothing certified: p_lo <= delta, or the event is likelier under Q
    assert float(certified_epsilon(10, 1000, 0, 1000, delta=0.5)) == 0.0
    assert float(certified_epsilon(100, 1000, 500, 1000)) == 0.0
    assert float(certified_delta(100, 1000, 500, 1000, epsilon=0.1)) == 0.0


# ------------------------------------------------------------------ calibration

# (p, q, n, delta, epsilon): event probabilities under P and Q, releases per dataset, and the
# (delta, epsilon) at which the epsilon and delta bounds are evaluated.
BINOMIAL_CASES = [
    (0.75, 0.25, 1000, 0.0, 1.0),  # randomized response, log 3, tight
    (0.5, 0.05, 200, 0.0, 1.0),  # small n
    (0.3, 0.001, 5000, 0.01, 5.0),  # rare event under Q, approximate DP
    (0.01, 0.002, 20000, 0.0, 1.5),  # rare under both
]


def test_certified_bounds_are_calibrated_by_simulation():
    """For a fixed event, P(certified epsilon > true epsilon(delta)) <= 1 - confidence.

    R = 20000 independent count pairs per case (vectorised); the exceedance count is
    Binomial(R, <= 0.05), and the test rejects only above its upper quantile at
    TEST_FAILURE_RATE / (2 x cases). Plug-in proportions instead of Clopper–Pearson exceed
    about half the time and fail here.
    """
    reps, alpha = 20_000, 0.05
    checks = 2 * len(BINOMIAL_CASES)
    limit = scipy.stats.binom.isf(TEST_FAILURE_RATE / checks, reps, alpha)
    rng = np.random.default_rng(20260)
    for p, q, n, delta, epsilon in BINOMIAL_CASES:
        k_p, k_q = rng.binomial(n, p, reps), rng.binomial(n, q, reps)
        eps_true = math.log((p - delta) / q)
        eps_lo = certified_epsilon(k_p, n, k_q, n, delta=delta, confidence=1 - alpha)
        assert np.count_nonzero(eps_lo > eps_true) <= limit, (p, q, n)
        delta_true = p - math.exp(epsilon) * q
        delta_lo = certified_delta(k_p, n, k_q, n, epsilon=epsilon, confidence=1 - alpha)
        assert np.count_nonzero(delta_lo > max(delta_true, 0.0)) <= limit, (p, q, n)


def _calibration_run(sampler, pair, claim, reps, **kwargs):
    """Certified bounds of ``reps`` audits with seeds 0..reps-1."""
    bounds, verdicts = [], []
    for seed in range(reps):
        res = blackbox_audit(sampler, *pair, claim, seed=seed, progress=False, **kwargs)
        bounds.append(res.epsilon_lower)
        verdicts.append(res.verdict)
    return np.array(bounds), verdicts


def test_blackbox_audit_is_calibrated_on_randomized_response():
    """End to end on a tight, exactly-DP mechanism: the certified bound exceeds the true epsilon
    (log 3) in at most 5% of audits, so a correct claim is flagged at most that often.

    40 audits (seeds 0..39, 1000 selection + 1000 certification releases per dataset,
    model-guided); the exceedance count is Binomial(40, <= 0.05): reject above its upper
    quantile at TEST_FAILURE_RATE (10 of 40). Measured: 1 of 40 (1.0995; log 3 = 1.0986), mean
    bound 0.96 — a false "violation" of a true claim, as calibrated: at most 5% of audits.
    """
    reps = 40
    bounds, verdicts = _calibration_run(
        randomized_response,
        RR_PAIR,
        dpaudit.Claim(epsilon=RR_EPSILON),
        reps,
        statistic="model",
        reference=RR_REFERENCE,
        samples=1000,
        select_samples=1000,
    )
    exceed = int(np.count_nonzero(bounds > RR_EPSILON))
    assert exceed <= scipy.stats.binom.isf(TEST_FAILURE_RATE, reps, 0.05)
    # the verdict is exactly "certified bound above the claim" (never "pass")
    assert verdicts == ["violation" if b > RR_EPSILON else "inconclusive" for b in bounds]
    # not vacuous: the bound is informative (log 3 = 1.0986)
    assert 0.7 < float(np.mean(bounds)) < RR_EPSILON


@pytest.mark.slow
@pytest.mark.parametrize("statistic", ["model", "logistic"])
@pytest.mark.parametrize("case", ["randomized-response", "geometric-count", "laplace-mean"])
def test_blackbox_audit_is_calibrated_on_correct_mechanisms_long(case, statistic):
    """100 audits per (mechanism, statistic) on a worst-case pair, claim = true epsilon: at most
    Binomial(100, 0.05)'s upper TEST_FAILURE_RATE / 6 quantile (17) exceed it.

    ``geometric-count`` has integer releases (exact); ``laplace-mean`` is continuous and exactly
    DP as audited only thanks to the 2^-30 rounding of the statistic (no low-bit events).
    Measured (model): 1, 0 and 1 of 100 exceed; largest bounds 1.0995 (log 3 = 1.0986), 0.997
    and 1.010 (claims 1).
    """
    reps = 100
    if case == "randomized-response":
        sampler, pair, claim, ref = randomized_response, RR_PAIR, RR_REFERENCE.claim, RR_REFERENCE
    else:
        ref = dpaudit.build(case, dim=1) if case == "laplace-mean" else dpaudit.build(case)
        sampler, pair, claim = as_sampler(ref), _worst_pair(case, ref), ref.claim
        assert float(ref.distance(*pair)) == pytest.approx(claim.sensitivity, rel=1e-9)
    bounds, _ = _calibration_run(
        sampler,
        pair,
        claim,
        reps,
        statistic=statistic,
        reference=ref if statistic == "model" else None,
        samples=1000,
        select_samples=1000,
    )
    exceed = int(np.count_nonzero(bounds > claim.epsilon))
    assert exceed <= scipy.stats.binom.isf(TEST_FAILURE_RATE / 6, reps, 0.05)


def _recording(sampler):
    calls = []

    def record(data, n, key):
        calls.append(
            (np.asarray(data).tobytes(), n, np.asarray(jax.random.key_data(key)).tobytes())
        )
        return sampler(data, n, key)

    record.__name__ = getattr(sampler, "__name__", "recorded")
    return record, calls


def test_certification_releases_are_fresh_and_counted_once():
    """Selection and certification draw disjoint releases: no sampler key is ever reused, and
    each dataset gives select_samples + samples releases (beyond a tiny shape probe)."""
    sampler, calls = _recording(randomized_response)
    res = blackbox_audit(
        sampler,
        *RR_PAIR,
        dpaudit.Claim(epsilon=1.0),
        statistic="model",
        reference=RR_REFERENCE,
        samples=3000,
        select_samples=1000,
        seed=4,
        progress=False,
    )
    # the two short runs checking that the sampler replays its key share one key, on purpose
    replay = [c[2] for c in calls if c[1] == REPLAY_RELEASES]
    assert len(replay) == 2 and replay[0] == replay[1]
    keys = [c[2] for c in calls if c[1] != REPLAY_RELEASES] + replay[:1]
    assert len(set(keys)) == len(keys)
    # a pure claim: Poisson(3000) releases counted per dataset, drawn in one call of
    # 3000 + 8 (isqrt(3000) + 1) = 3440 (so a count above the mean costs no second call)
    assert res.event.n == 3000 and max(res.event.releases) <= 3440
    for data in RR_PAIR:
        drawn = sum(n for d, n, _ in calls if d == data.tobytes() and n not in (2, REPLAY_RELEASES))
        assert drawn == 1000 + 3440


# ------------------------------------------------------------------ correct mechanisms

CORRECT = [
    ("laplace-mean", {}, "model"),
    ("geometric-count", {}, "model"),
    ("gaussian-mean-analytic", {}, "logistic"),
    ("report-noisy-max-laplace", {}, "logistic"),
]


def _worst_pair(name, mech):
    n = mech.params["n"]
    if name == "report-noisy-max-laplace":
        d = np.repeat([0.0, 1.0, 2.0], [n // 3, n // 3, n - 2 * (n // 3)])  # near-tied counts
        d_prime = d.copy()
        d_prime[0] = 1.0  # one record moves from bin 0 to bin 1
        return d, d_prime
    shape = (n, mech.params["dim"]) if "dim" in mech.params else (n,)
    d = np.zeros(shape)
    d_prime = d.copy()
    d_prime[0] = 1.0  # an extreme record: the sensitivity is attained
    return d, d_prime


@pytest.mark.parametrize(("name", "kwargs", "statistic"), CORRECT)
def test_correct_mechanisms_are_never_flagged(name, kwargs, statistic):
    """Correct catalogue mechanisms on worst-case pairs, audited as plain samplers: never
    "violation". Confidence 1 - TEST_FAILURE_RATE / 4 per audit, so a false violation has
    probability <= TEST_FAILURE_RATE over the four (calibration is tested above at 0.95).
    Measured: 0.82, 0.90, 0.0, 0.39 against claims 1, 1, 2, 1 (at confidence 0.95 too, none is
    flagged: 0.96, 0.97, 0.0, 0.52; the approximate claim is audited on its delta margin)."""
    mech = dpaudit.build(name, **kwargs)
    pair = _worst_pair(name, mech)
    assert float(mech.distance(*pair)) == pytest.approx(mech.claim.sensitivity, rel=1e-9)
    res = blackbox_audit(
        as_sampler(mech),
        *pair,
        mech.claim,
        statistic=statistic,
        reference=mech if statistic == "model" else None,
        samples=10_000,
        confidence=1 - TEST_FAILURE_RATE / len(CORRECT),
        seed=3,
        progress=False,
    )
    assert res.verdict == "inconclusive"
    assert res.epsilon_lower <= mech.claim.epsilon


# ------------------------------------------------------------------ power


def test_model_guided_statistic_is_at_least_as_powerful_as_the_classifier():
    """faulty/textbook-tree-replace-one (claims 1, true 1.5; the flaw spreads over six Laplace
    node counts): at the same budget (5000 selection + 10^4 certification releases per dataset,
    where detection is not certain) and seeds 0, 1, 2, the privacy loss of the declared model
    certifies at least the logistic regression's bound on every seed, and flags at least as
    often.

    Measured: model 0.89 / 0.93 / 0.98, logistic 0.46 / 0.53 / 0.45 (a linear classifier cannot
    express the joint tail of six coordinates where the loss peaks). At 2 x 10^4: model 0.98 /
    1.15 / 1.20 (two "violation"), logistic 0.54 / 0.54 / 0.56; the benchmark flags it at 10^5
    with the model and never with logistic regression up to 10^7.
    """
    mech, pair = _faulty("faulty/textbook-tree-replace-one")
    sampler = as_sampler(mech)
    bounds = {"model": [], "logistic": []}
    for seed in range(3):
        for statistic in bounds:
            res = blackbox_audit(
                sampler,
                *pair,
                mech.claim,
                statistic=statistic,
                reference=mech if statistic == "model" else None,
                samples=10_000,
                select_samples=5_000,
                seed=seed,
                progress=False,
            )
            bounds[statistic].append(res.epsilon_lower)
    model, logistic = np.array(bounds["model"]), np.array(bounds["logistic"])
    assert np.all(model >= logistic)
    assert np.sum(model > mech.claim.epsilon) >= np.sum(logistic > mech.claim.epsilon)
    assert float(np.mean(model - logistic)) > 0.2  # a real gap, not a tie


# ------------------------------------------------------------------ detection

# (faulty mechanism, statistic, certification releases per dataset): a fast subset, each flagged
# well above the claim at these budgets (certified bounds measured at seed 0 in the comments).
FAST_DETECTION = [
    ("faulty/histogram-scale-epsilon", "logistic", 10_000),  # 1.90 vs claim 0.5 (true 2)
    ("faulty/gaussian-pure-claim", "model", 10_000),  # 2.28 vs 1 (true inf)
    ("faulty/iclp-unscaled-sigma", "model", 10_000),  # 1.36 vs 1 (true 1.414)
    ("faulty/noisy-max-with-value", "logistic", 10_000),  # 2.24 vs 1 (true 3)
]


def _audit_faulty_as_sampler(name, statistic, samples):
    """The faulty mechanism `name` audited as a plain sampler on its example pair at seed 0."""
    mech, pair = _faulty(name)
    res = blackbox_audit(
        as_sampler(mech),
        *pair,
        mech.claim,
        statistic=statistic,
        reference=mech if statistic == "model" else None,
        samples=samples,
        seed=0,
        progress=False,
    )
    return mech, res


@pytest.mark.parametrize(("name", "statistic", "samples"), FAST_DETECTION)
def test_faulty_mechanisms_are_flagged_from_samples(name, statistic, samples):
    mech, res = _audit_faulty_as_sampler(name, statistic, samples)
    assert res.verdict == "violation"
    assert res.epsilon_lower > mech.claim.epsilon
    assert res.confidence == 0.95 and res.samples == samples


# (statistic, certification releases per dataset) per faulty mechanism: the cheapest route at the
# smallest budget of the ladder 1e4, 1e5, 1e6, 1e7 that flags it in
# benchmarks/blackbox_faulty.py (seed 0; BENCHMARKS.md, "Black-box detection").
SLOW_DETECTION = {
    # Whole-trace (mechanisms/composed) and notion (mechanisms/faulty/notions.py) entries:
    # not on the benchmark ladder; budgets set at 10^5 with the model statistic (`make
    # test-slow` is the check; the runs of session 6 are in the stop note).
    # true epsilon 1.378 at delta 1e-5 vs claim 1: model 0.728 at 10^5 (inconclusive), 1.022 at
    # 10^6 (seed 0, session 6: near the budget's edge)
    "faulty/composed-functional-pair-half-covariance": ("model", 1_000_000),
    "faulty/bmr-hosmer-lemeshow-budget": ("model", 100_000),
    "faulty/continual-gaussian-one-level": ("model", 100_000),
    "faulty/hrw-bandwidth-budget-ignored": ("model", 100_000),
    "faulty/svt-program-unscaled-query-noise": ("model", 100_000),
    "faulty/composed-gaussian-one-budget": ("model", 100_000),
    "faulty/composed-laplace-one-budget": ("model", 100_000),
    "faulty/gaussian-gdp-linf-sensitivity": ("model", 100_000),
    "faulty/gaussian-zcdp-unsquared": ("model", 100_000),
    "faulty/laplace-histogram-rdp-add-remove": ("model", 100_000),
    # true epsilon 2: logistic 1.659, model 1.933 at 10^5 (seed 0)
    "faulty/continual-textbook-half-scale": ("logistic", 100_000),
    # DP-SGD (mechanisms/dpsgd): not on the benchmark ladder; the model statistic is the
    # white-box loss, which flags both with 4 000 releases (audits/faulty/dpsgd-*.toml).
    "faulty/dpsgd-ignores-steps": ("model", 10_000),
    "faulty/dpsgd-noise-batch": ("model", 10_000),
    "faulty/ecdf-data-dependent-grid": ("logistic", 10_000),
    # (10, 0.01) fails only on events of probability ~1e-7 under D': flagged at 10^7 through
    # the delta margin (objective "auto" picks the delta event when it plans the larger margin) with the
    # importance-sampling plan of the model-guided statistic: delta >= 0.0133 > 0.01 at seed 0,
    # but only 4 of seeds 0..9 flag it at 10^7 (the budget's edge: even the best event flags
    # with probability ~0.5 there; BENCHMARKS.md).
    "faulty/gaussian-classical-large-epsilon": ("model", 10_000_000),
    "faulty/gaussian-pure-claim": ("logistic", 10_000),
    "faulty/histogram-scale-epsilon": ("logistic", 10_000),
    "faulty/hrw-unsquared-covariance": ("logistic", 10_000),
    # 16 online queries with unconditioned noise: at 10^5 model 0.885, logistic 0.557 (both
    # inconclusive); at 10^6 the model flags it, 1.111 > 1 (seed 0: near the budget's edge)
    "faulty/hrw-online-unconditioned": ("model", 1_000_000),
    "faulty/iclp-raw-eigenpairs": ("logistic", 10_000),
    "faulty/iclp-unscaled-sigma": ("logistic", 10_000),
    "faulty/noisy-max-with-value": ("logistic", 10_000),
    "faulty/rough-mean-smooth-noise": ("logistic", 10_000),
    "faulty/svt-lyu-alg3": ("logistic", 10_000),
    "faulty/svt-lyu-alg4": ("logistic", 10_000),
    "faulty/svt-lyu-alg5": ("logistic", 10_000),
    "faulty/svt-lyu-alg6": ("logistic", 10_000),
    "faulty/textbook-tree-replace-one": ("model", 100_000),
    # supports that move with the data (mechanisms/faulty/support.py): releases impossible
    # under D' have probability 1/20, 0.632, 1/10 and 0.017 under D (claimed delta 1e-3)
    "faulty/uniform-data-dependent-support": ("model", 10_000),
    "faulty/shifted-exponential-support": ("model", 10_000),
    "faulty/discrete-uniform-support": ("model", 10_000),
    "faulty/truncated-laplace-support": ("model", 10_000),
}


# Faulty entries whose flaw a black-box audit does not reach at a budget a test can afford; each is
# flagged white-box by its spec in audits/faulty (golden records pin that verdict).
WHITE_BOX_ONLY = {
    # two 64-leaf ECDF trees claimed by parallel composition (claim 1, true 2): model statistic,
    # seed 0: 0.711 at 10^5, 0.876 at 10^6 (session 6); white-box: violation with exact accounting
    "faulty/composed-bmr-roc-parallel",
    # three parties' ECDF trees and their aggregate at four sites (claim 1, true 2): a black-box
    # budget was not measured (session 9); white-box: violation certified at 2.000000
    "faulty/bmr-federated-ecdf-aggregate-uncounted",
    "faulty/bmr-federated-ecdf-noise-split",
}


def test_slow_detection_table_covers_the_faulty_catalogue():
    assert not set(SLOW_DETECTION) & WHITE_BOX_ONLY
    assert sorted(set(SLOW_DETECTION) | WHITE_BOX_ONLY) == sorted(dpaudit.catalogue(faulty=True))


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    sorted(SLOW_DETECTION),
)
def test_whole_faulty_catalogue_is_flagged_as_plain_samplers(name):
    _, res = _audit_faulty_as_sampler(name, *SLOW_DETECTION[name])
    assert res.verdict == "violation", (name, res.epsilon_lower)


# ------------------------------------------------------------------ bad input


def _ok_sampler(data, n, key):
    return np.asarray(jax.random.normal(key, (n, 1))) + float(np.sum(data))


D0, D1 = np.zeros(3), np.array([1.0, 0.0, 0.0])
CLAIM = dpaudit.Claim(epsilon=1.0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: blackbox_audit("not a sampler", D0, D1, CLAIM), TypeError, "sampler must be"),
        (lambda: blackbox_audit(_ok_sampler, D0, D1), ValueError, "claim is required"),
        (lambda: blackbox_audit(_ok_sampler, D0, D1, 1.0), TypeError, "claim must be"),
        (lambda: blackbox_audit(_ok_sampler, D0, None, CLAIM), ValueError, "neighbouring pair"),
        (lambda: blackbox_audit(_ok_sampler, claim=CLAIM, pairs=[]), ValueError, "non-empty"),
        (lambda: blackbox_audit(_ok_sampler, claim=CLAIM, pairs=[D0]), ValueError, "non-empty"),
        (
            lambda: blackbox_audit(_ok_sampler, D0, np.ones(3), CLAIM),
            ValueError,
            "differ in 3 records",
        ),
        (
            lambda: blackbox_audit(_ok_sampler, D0, np.zeros(4), CLAIM),
            ValueError,
            "same number of records",
        ),
        (lambda: as_sampler(_ok_sampler), TypeError, "dpaudit.Mechanism"),
    ],
)
def test_bad_arguments_are_refused_with_one_sentence(call, error, match):
    with pytest.raises(error, match=match):
        call()


# Options refused on an otherwise valid call: (keyword arguments, error, message).
BAD_OPTIONS = [
    ({"pairs": [(D0, D1)]}, ValueError, "not both"),
    ({"statistic": "svm"}, ValueError, "statistic"),
    ({"objective": "renyi"}, ValueError, "objective"),
    ({"classifier_options": {"depth": 3}}, ValueError, "unknown classifier_options"),
    ({"statistic": "model"}, ValueError, "needs"),
    ({"reference": "laplace"}, TypeError, "reference must be"),
    ({"features": 3}, TypeError, "features"),
    ({"samples": 0}, ValueError, "samples"),
    ({"confidence": 1.5}, ValueError, "confidence"),
]


@pytest.mark.parametrize(("options", "error", "match"), BAD_OPTIONS)
def test_bad_options_are_refused_with_one_sentence(options, error, match):
    with pytest.raises(error, match=match):
        blackbox_audit(_ok_sampler, D0, D1, CLAIM, **options)


@pytest.mark.parametrize(
    ("sampler", "error", "match"),
    [
        (lambda d, n, k: np.zeros((n - 1, 1)), ValueError, "when asked for"),
        (lambda d, n, k: np.float64(0.0), ValueError, "when asked for"),
        (lambda d, n, k: np.full((n, 2), np.nan), ValueError, "NaN values"),
        (lambda d, n, k: np.array([{}] * n), TypeError, "hashable categories"),
        (lambda d, n, k: 1 / 0, ValueError, "failed on a request"),
    ],
)
def test_bad_releases_are_refused_with_one_sentence(sampler, error, match):
    with pytest.raises(error, match=match):
        blackbox_audit(sampler, D0, D1, CLAIM, samples=100, select_samples=100, progress=False)


def test_releases_that_change_shape_are_refused():
    calls = []

    def sampler(data, n, key):
        calls.append(n)
        return np.zeros((n, 1 if len(calls) == 1 else 2))

    with pytest.raises(ValueError, match="must keep one shape"):
        blackbox_audit(sampler, D0, D1, CLAIM, samples=100, select_samples=100, progress=False)


def test_releases_of_the_two_datasets_must_have_one_shape():
    def sampler(data, n, key):
        return np.zeros((n, 1 + int(np.sum(data))))

    with pytest.raises(ValueError, match="shape"):
        blackbox_audit(sampler, D0, D1, CLAIM, samples=100, select_samples=100, progress=False)


def test_reference_of_another_release_shape_is_refused():
    mech = dpaudit.build("laplace-mean")  # releases 2 coordinates; the sampler releases 1
    with pytest.raises(ValueError, match="releases shape"):
        blackbox_audit(
            _ok_sampler,
            np.zeros((50, 2)),
            np.vstack([np.ones((1, 2)), np.zeros((49, 2))]),
            CLAIM,
            reference=mech,
            samples=100,
            progress=False,
        )


def test_kl_features_of_a_grid_of_another_size_are_refused():
    basis = kl_basis(Gaussian(0.2), uniform_grid(20), n_components=4)

    def curves(data, n, key):
        return np.asarray(jax.random.normal(key, (n, 21)))

    with pytest.raises(ValueError, match="basis grid has 20 points"):
        blackbox_audit(curves, D0, D1, CLAIM, features=kl_features(basis), progress=False)


# ------------------------------------------------------------------ the result record


def test_result_record_is_json_and_holds_the_evidence():
    mech, pair = _faulty("faulty/histogram-scale-epsilon")
    res = blackbox_audit(as_sampler(mech), *pair, mech.claim, samples=10_000, progress=False)
    out = json.loads(json.dumps(res.to_dict()))
    assert out["kind"] == "black-box" and out["verdict"] == res.verdict == "violation"
    assert out["epsilon_lower"] == pytest.approx(res.epsilon_lower)
    assert out["samples"] == 10_000 and out["samples_select"] == 10_000
    assert out["confidence"] == 0.95 and out["method"] == "logistic"
    event = out["event"]
    assert set(event["counts"]) == {"P", "Q"} and event["n"] == 10_000
    assert event["direction"] in ("D->D'", "D'->D")
    # the record's bound is the one its counts certify: a pure claim, the conditional ratio
    # bound on Poisson(10000) releases per dataset (the pair gives the delta bound)
    assert out["bound_method"] == event["bound"]["method"] == "conditional-ratio"
    assert event["releases"]["P"] != 10_000 or event["releases"]["Q"] != 10_000
    k_p, k_q = event["counts"]["P"], event["counts"]["Q"]
    assert certified_epsilon_by(
        "conditional-ratio", k_p, 0, k_q, 0, confidence=0.95
    ) == pytest.approx(res.epsilon_lower, rel=1e-12)
    n_p, n_q = event["releases"]["P"], event["releases"]["Q"]
    assert certified_delta(k_p, n_p, k_q, n_q, epsilon=mech.claim.epsilon) == pytest.approx(
        res.delta_lower, rel=1e-12, abs=1e-15
    )
    assert out["claim"]["epsilon"] == mech.claim.epsilon
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.verdict = "pass"


@pytest.mark.parametrize("order", [0, 1])
def test_pairs_selects_one_pair_and_certifies_only_it(order):
    """An uninformative pair (D, D) next to the visible one: the selection picks the visible one
    and only its datasets are drawn for certification."""
    mech, (d, d_prime) = _faulty("faulty/gaussian-pure-claim")
    pairs = [(d, d), (d, d_prime)] if order == 0 else [(d, d_prime), (d, d)]
    sampler, calls = _recording(as_sampler(mech))
    res = blackbox_audit(
        sampler,
        claim=mech.claim,
        pairs=pairs,
        reference=mech,
        samples=5000,
        select_samples=2000,
        progress=False,
    )
    assert res.event.pair == 1 - order and res.event.selection.pairs == 2
    assert res.verdict == "violation"
    drawn_prime = sum(
        n for data, n, _ in calls if data == d_prime.tobytes() and n not in (2, REPLAY_RELEASES)
    )
    # selection + one certification call of 5000 + 8 (isqrt(5000) + 1) = 5568 releases (a
    # pure claim: Poisson(5000) releases counted, drawn in one call)
    assert drawn_prime == 2000 + 5568
    # D appears in both pairs: 2 x 2000 selection (twice in the uninformative pair, once in the
    # other) + 5568 certification
    drawn_d = sum(
        n for data, n, _ in calls if data == d.tobytes() and n not in (2, REPLAY_RELEASES)
    )
    assert drawn_d == 3 * 2000 + 5568


def test_delta_objective_certifies_more_delta_than_claimed():
    """faulty/hrw-unsquared-covariance claims (1, 0.1); its exact delta(1) is 0.33 (Gaussian
    mechanism with Delta/sigma = 1.52, Balle & Wang). Measured at seed 0: 0.28."""
    mech, pair = _faulty("faulty/hrw-unsquared-covariance")
    true_delta = float(dpaudit.noise.gaussian_delta(mech.claim.epsilon, mech.params["mu"]))
    res = blackbox_audit(
        as_sampler(mech),
        *pair,
        mech.claim,
        objective="delta",
        samples=5000,
        select_samples=5000,
        progress=False,
    )
    assert res.delta_lower > mech.claim.delta
    assert res.verdict == "violation"
    assert res.to_dict()["delta_at_claimed_epsilon"]["lower"] == pytest.approx(res.delta_lower)
    assert true_delta == pytest.approx(0.3276, abs=1e-3)


def test_kl_features_are_whitened_coefficients():
    basis = kl_basis(Gaussian(0.2), uniform_grid(20), n_components=4)
    coefficients = np.array([[1.0, -2.0, 0.5, 0.25], [0.0, 1.0, 0.0, -1.0]])
    curves = basis.reconstruct(coefficients)
    lam = np.asarray(basis.eigenvalues)
    np.testing.assert_allclose(kl_features(basis)(curves), coefficients / np.sqrt(lam), atol=1e-12)
    np.testing.assert_allclose(kl_features(basis, whiten=False)(curves), coefficients, atol=1e-12)
    np.testing.assert_allclose(
        kl_features(basis, 2)(curves), coefficients[:, :2] / np.sqrt(lam[:2]), atol=1e-12
    )


def test_kl_features_flag_a_functional_faulty_mechanism():
    """faulty/hrw-unsquared-covariance releases a curve on 21 grid points; logistic regression on
    its Karhunen–Loève coefficients (all 21, Gaussian kernel of the mechanism, trapezoid grid)
    flags it (measured epsilon 1.77 vs claim 1, true 2.39)."""
    mech, pair = _faulty("faulty/hrw-unsquared-covariance")
    basis = kl_basis(Gaussian(0.05), uniform_grid(21, rule="trapezoid"))
    res = blackbox_audit(
        as_sampler(mech),
        *pair,
        mech.claim,
        features=kl_features(basis),
        samples=5000,
        select_samples=5000,
        progress=False,
    )
    assert res.verdict == "violation"
    assert "KL coefficients" in res.event.statistic


def test_numpy_generator_is_reproducible_from_the_key():
    a = numpy_generator(jax.random.key(5)).random(4)
    b = numpy_generator(jax.random.key(5)).random(4)
    c = numpy_generator(jax.random.key(6)).random(4)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_audit_is_reproducible_from_the_seed():
    mech, pair = _faulty("faulty/gaussian-pure-claim")
    runs = [
        blackbox_audit(
            as_sampler(mech),
            *pair,
            mech.claim,
            reference=mech,
            samples=5000,
            seed=s,
            progress=False,
        )
        for s in (7, 7, 8)
    ]
    assert runs[0].event.counts == runs[1].event.counts
    assert runs[0].epsilon_lower == runs[1].epsilon_lower
    assert runs[0].event.counts != runs[2].event.counts
    assert bb.STATISTIC_RESOLUTION == 2.0**-30
