"""The training audit end to end on the catalogue DP-SGD (simulated white-box and logistic)."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpaudit
from dpaudit.model.claims import GDPClaim
from dpaudit.training import (
    DiracCanaries,
    GradientCanary,
    InputCanary,
    ProfileClaim,
    UserCanary,
    one_run_audit,
    one_run_p_value,
    one_run_training_audit,
    subsampled_gaussian_loss,
    training_audit,
)
from mechanisms.dpsgd.training import (
    VARIANTS,
    DPSGDConfig,
    claim_of,
    exact_epsilon,
    example_data,
    logistic_train,
    simulated_train,
)

_DIM = 4


def _canary(config: DPSGDConfig) -> GradientCanary:
    """A Dirac gradient of norm 4 C on the last coordinate, scored by the per-step loss."""
    loss = subsampled_gaussian_loss(config.q, config.noise_multiplier * config.clip, config.clip)
    return GradientCanary(
        dim=config.dim, coordinate=config.dim - 1, norm=4 * config.clip, transform=loss
    )


def _audit(variant: str, seed: int = 0, runs: int = 1000, **kwargs):
    config = DPSGDConfig(variant=variant, dim=_DIM, **kwargs)
    return training_audit(
        simulated_train(config),
        None,
        claim_of(config),
        _canary(config),
        runs=runs,
        vectorize=True,
        seed=seed,
        name=variant,
    )


_CORRECT = DPSGDConfig(dim=_DIM)
_CORRECT_TRAIN = simulated_train(_CORRECT)


def test_correct_dpsgd_not_a_violation_and_ignored_steps_are():
    # One compiled training serves both: ignores-steps trains correctly and claims one step.
    for variant, verdict in (("correct", "inconclusive"), ("ignores-steps", "violation")):
        config = DPSGDConfig(dim=_DIM, variant=variant)
        result = training_audit(
            _CORRECT_TRAIN, None, claim_of(config), _canary(_CORRECT), runs=1000, vectorize=True
        )
        assert result.verdict == verdict
        assert result.bound.confidence == 0.95 and result.runs == (500, 500)
        record = json.loads(result.to_json())
        # The rank bound of the same runs rides along and decides nothing.
        assert record["rank"]["runs"] == [500, 500] and 1.2 < result.rank.mu < 1.8
        assert "if the score's ROC curve is Gaussian" in result.report()


def test_noise_scaled_to_the_batch_is_a_violation():
    result = _audit("noise-batch")
    assert result.verdict == "violation"
    assert result.bound.profile_excess > 0
    assert "violation" in result.report()


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["clip-after-noise", "misread-noise-multiplier"])
def test_other_faulty_variants_are_violations(variant):
    assert _audit(variant).verdict == "violation"


@pytest.mark.slow
def test_correct_dpsgd_never_a_violation_over_20_seeds():
    claim = claim_of(_CORRECT)
    for seed in range(20):
        result = training_audit(
            _CORRECT_TRAIN, None, claim, _canary(_CORRECT), runs=1000, vectorize=True, seed=seed
        )
        assert result.verdict == "inconclusive", seed


@pytest.mark.slow
def test_many_run_bound_approaches_the_exact_epsilon():
    # T = 100, gradient canary, all iterates, 1000 runs, 95 %: the GDP-shape epsilon (the
    # Nasr et al. 2023 reading) against the exact accounting; see docs/training.md.
    config = DPSGDConfig(noise_multiplier=2.0, dim=_DIM)
    claim = GDPClaim(mu=100.0)  # selects the threshold for mu; never violated here
    ratios = []
    for seed in range(5):
        result = training_audit(
            simulated_train(config),
            None,
            claim,
            _canary(config),
            runs=1000,
            vectorize=True,
            seed=seed,
            select_fraction=0.2,
        )
        ratios.append(result.bound.epsilon_gdp_shape / exact_epsilon(config))
    # Measured 0.58-0.70 (median 0.69) on these seeds: one certified point does not reach
    # the 0.8 at 1000 runs; the rank bound of all runs does (next test).
    assert np.median(ratios) >= 0.6, ratios


@pytest.mark.slow
def test_rank_bound_reaches_08_of_the_exact_epsilon_at_1000_runs():
    # Issue 30's acceptance: T = 100, gradient canary, all iterates, 1000 runs, 95 %, against
    # the exact epsilon(1e-5) = 8.39 (q = 0.5, noise multiplier 3). Seeds 20-24 were not used
    # for anything else; benchmarks/training_tightness.py measures 20 more.
    exact = exact_epsilon(_CORRECT)
    ratios = []
    for seed in range(20, 25):
        result = training_audit(
            _CORRECT_TRAIN, None, claim_of(_CORRECT), _canary(_CORRECT), runs=1000,
            vectorize=True, seed=seed,
        )  # fmt: skip
        assert result.verdict == "inconclusive"
        ratios.append(result.rank.epsilon / exact)
    assert np.median(ratios) >= 0.8 and max(ratios) < 1.0, ratios


def _final_theta(releases, config, n):
    return -config.learning_rate * jnp.sum(releases, axis=0) / (config.q * n)


def test_logistic_dpsgd_serial_equals_vmapped_and_input_canary_runs():
    config = DPSGDConfig(steps=5, n=40)
    data = example_data(config)
    train = logistic_train(config)
    canary = GradientCanary(dim=31, coordinate=30, norm=4 * config.clip)
    claim = claim_of(config)
    serial = training_audit(train, data, claim, canary, runs=8, seed=3)
    vmapped = training_audit(train, data, claim, canary, runs=8, seed=3, vectorize=True)
    assert serial.bound.counts == vmapped.bound.counts
    assert serial.bound.threshold == pytest.approx(vmapped.bound.threshold, rel=1e-9)

    x, y = data
    record = (np.r_[x[0, :30], 0.0], 1.0 - y[0])  # a mislabelled example

    def loss(releases, rec):
        theta = _final_theta(releases, config, 40)
        z = jnp.dot(theta, rec[0])
        return float(jax.nn.softplus(z) - rec[1] * z)

    def train_input(dataset, key):
        return train(dataset, key, np.zeros(31))

    result = training_audit(train_input, data, claim, InputCanary(record, loss), runs=8)
    assert result.canary == "input" and result.verdict == "inconclusive"


def test_bad_input_one_sentence_each():
    claim = dpaudit.Claim(epsilon=1.0, delta=1e-5)
    canary = GradientCanary(dim=2, coordinate=0)

    def shapes(dataset, key, gradient_canary):
        n = int(jax.random.randint(key, (), 1, 3))
        return np.ones((n, 2))

    with pytest.raises(ValueError, match="different shapes"):
        training_audit(shapes, None, claim, canary, runs=16)

    def nan_train(dataset, key, gradient_canary):
        return np.full((3, 2), np.nan)

    with pytest.raises(ValueError, match="not all finite"):
        training_audit(nan_train, None, claim, canary, runs=8)
    for confidence in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence must be in"):
            training_audit(nan_train, None, claim, canary, runs=8, confidence=confidence)
    with pytest.raises(ValueError, match="delta"):
        ProfileClaim(lambda e: e, delta=1.0)
    with pytest.raises(ValueError, match="runs must be"):
        training_audit(nan_train, None, claim, canary, runs=7)
    with pytest.raises(ValueError, match="coordinate"):
        GradientCanary(dim=2, coordinate=2)
    with pytest.raises(TypeError, match="claim must be"):
        training_audit(nan_train, None, 1.0, canary, runs=8)
    with pytest.raises(ValueError, match="variant"):
        DPSGDConfig(variant="nope")
    assert "correct" in VARIANTS


def test_user_canary():
    def train(dataset, key):
        return float(np.sum(dataset)) + float(jax.random.normal(key))

    canary = UserCanary(insert=lambda d: np.r_[d, 10.0], scorer=lambda s: s)
    claim = dpaudit.Claim(epsilon=0.5, delta=1e-5, adjacency="add-remove")
    result = training_audit(train, np.zeros(3), claim, canary, runs=200)
    assert result.verdict == "violation" and result.canary == "user"


def test_one_run_audit_of_dpsgd():
    # 300 Dirac canaries in one simulated run (T = 100, q = 0.5, sigma = 3): the correct
    # accounting is not refuted, the one-step accounting (ignores-steps) is.
    config = DPSGDConfig(dim=300)
    loss = subsampled_gaussian_loss(config.q, config.noise_multiplier * config.clip, config.clip)
    canaries = DiracCanaries(m=300, dim=300, norm=4 * config.clip, transform=loss)
    train = simulated_train(config)
    verdict, bound = one_run_audit(train, None, claim_of(config), canaries, k_plus=40, k_minus=40)
    assert verdict == "inconclusive" and 0 < bound.epsilon < exact_epsilon(config)
    assert bound.confidence == 0.95 and any("probability 1/2" in a for a in bound.assumptions)
    faulty = DPSGDConfig(dim=300, variant="ignores-steps")
    verdict, bound = one_run_audit(train, None, claim_of(faulty), canaries, k_plus=40, k_minus=40)
    assert verdict == "violation"
    # the record of the same audit: its p-value at the claimed epsilon, for a suite's Holm
    record = one_run_training_audit(
        train, None, claim_of(faulty), canaries, k_plus=40, k_minus=40, name="ignores-steps"
    )
    assert record.mode == "one-run" and record.bound == bound and record.runs == (1, 0)
    m, r, v = bound.canaries, bound.guesses, bound.correct
    claimed = record.claimed_epsilon
    assert record.p_value == one_run_p_value(m, r, v, claimed, 1e-5) <= 0.05
    assert "one-run training audit" in record.report() and "assumes:" in record.report()
    with pytest.raises(ValueError, match="m must be"):
        DiracCanaries(m=301, dim=300)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "verdict"), [("correct", "inconclusive"), ("noise-batch", "violation")]
)
def test_logistic_dpsgd_100_steps(variant, verdict):
    # The model-based path: logistic regression on breast cancer, T = 100, 400 runs vmapped.
    config = DPSGDConfig(variant=variant)
    result = training_audit(
        logistic_train(config),
        example_data(config),
        claim_of(config),
        _canary(config),
        runs=400,
        vectorize=True,
    )
    assert result.verdict == verdict
