"""DP-SGD catalogue entry: density against a step-by-step oracle, loss law against the accounting."""

import math
from pathlib import Path

import jax
import numpy as np
import pytest
import scipy.stats

import dpaudit
from dpaudit.accounting.profiles import declared_accounting
from dpaudit.io.spec import load_spec, resolve_mechanism
from mechanisms.dpsgd import (
    breast_cancer_records,
    breast_cancer_table,
    canary,
    canary_escape_probability,
    clipped_gradient_sum,
    clipped_gradients,
    dpsgd_accounting,
    example_pair,
)

SMALL = {"steps": 4, "q": 0.3, "n": 12, "noise_multiplier": 0.9}


def _pair(n):
    x, y = breast_cancer_records(n)
    cx, cy = canary()
    return (x, y), (np.vstack([x, cx]), np.append(y, cy))


def test_the_records_read_without_scikit_learn_are_its_records_bit_for_bit():
    """The CSV read equals ``load_breast_cancer`` exactly (the audits' data set is unchanged)."""
    datasets = pytest.importorskip("sklearn.datasets")
    bunch = datasets.load_breast_cancer()
    data, target = breast_cancer_table()
    assert data.dtype == bunch.data.dtype and target.dtype == bunch.target.dtype
    assert np.array_equal(data, bunch.data) and np.array_equal(target, bunch.target)
    assert not data.flags.writeable  # one shared copy per process


def test_entries_claim_their_accounting_and_carry_true_guarantees():
    mech = dpaudit.build("dpsgd-logistic")
    p = mech.params
    assert mech.claim.adjacency == "add-remove" and mech.claim.delta == 1e-5
    assert mech.claim.epsilon == dpsgd_accounting(1.0, 0.1, 20, lower=False).epsilon_upper(1e-5)
    d, d_prime = example_pair("dpsgd-logistic")
    dpaudit.check_adjacent(d, d_prime, "add-remove")
    assert d[0].shape == (100, 31) and set(np.unique(d[1])) == {0.0, 1.0}
    assert canary_escape_probability(20, 0.1, 1.0, 1.0, p["learning_rate"], 100) < 1e-12
    for name in ("faulty/dpsgd-ignores-steps", "faulty/dpsgd-noise-batch"):
        faulty = dpaudit.build(name)
        flaw = faulty.known_flaw
        assert dpaudit.model.registry.entry(name).faulty
        assert flaw.true_delta == faulty.claim.delta
        assert flaw.true_epsilon > 2 * faulty.claim.epsilon
        q, n = faulty.params["q"], faulty.params["n"]
        assert canary_escape_probability(20, q, faulty.params["noise_std"], 1.0, 0.05, n) < 1e-12


def _oracle_log_density(releases, x, y, masks, with_canary, *, q, clip, s, lr, denom):
    """The trajectory density step by step in numpy/scipy (an independent implementation)."""
    cx, cy = canary(clip)
    theta = np.zeros(x.shape[1])
    total = 0.0
    for t, r in enumerate(releases):
        grads = (1 / (1 + np.exp(-x @ theta)) - y)[:, None] * x
        norms = np.linalg.norm(grads, axis=1, keepdims=True)
        grads = grads * np.minimum(1.0, clip / np.maximum(norms, 1e-300))
        g = (masks[t][:, None] * grads).sum(0)
        cg = (1 / (1 + math.exp(-cx @ theta)) - cy) * cx
        cg = cg * min(1.0, clip / np.linalg.norm(cg))
        base = scipy.stats.multivariate_normal(g, s * s).logpdf(r)
        if with_canary:
            inc = scipy.stats.multivariate_normal(g + cg, s * s).logpdf(r)
            total += np.logaddexp(math.log1p(-q) + base, math.log(q) + inc)
        else:
            total += base
        theta = theta - lr * r / denom
    return total


def test_trajectory_density_matches_a_step_by_step_oracle():
    mech = dpaudit.build("dpsgd-logistic", **SMALL)
    d, d_prime = _pair(SMALL["n"])
    law = mech.release_distribution(d_prime)
    x = np.asarray(law.sample(jax.random.key(3), (3,)))
    assert x.shape == (3, 4, 31)
    p = mech.params
    for data, with_canary in ((d, False), (d_prime, True)):
        dist = mech.release_distribution(data)
        masks = np.asarray(dist.masks)
        # both laws padded to n + 1 records (one shape, one compiled step for both
        # directions); the padding row is never in a batch
        assert masks.shape == (4, SMALL["n"] + 1)
        assert not masks[:, data[0].shape[0] :].any()
        ours = np.asarray(dist.log_prob(x))
        for i in range(3):
            ref = _oracle_log_density(
                x[i], d[0], d[1], masks[:, : d[0].shape[0]], with_canary, q=p["q"],
                clip=p["clip"], s=p["noise_std"], lr=p["learning_rate"], denom=p["q"] * p["n"],
            )  # fmt: skip
            assert ours[i] == pytest.approx(ref, rel=1e-10)
    # the other records keep their batches whether or not the canary is present
    np.testing.assert_array_equal(
        np.asarray(mech.release_distribution(d).masks)[:, : SMALL["n"]],
        np.asarray(mech.release_distribution(d_prime).masks)[:, : SMALL["n"]],
    )


def test_the_clipped_gradient_sum_is_the_sum_of_the_clipped_gradients():
    # the trajectory law sums the batch's clipped gradients as two matrix products; it must
    # be the per-record definition (clipping active for most records, a zero row, a record
    # the model fits exactly, records outside the batch)
    x, y = breast_cancer_records(20)
    x[3] = 0.0
    mask = (np.arange(20) % 3 != 0).astype(np.float64)
    for seed, clip in ((0, 1.0), (1, 0.2), (2, 50.0)):
        theta = np.random.default_rng(seed).normal(size=31)
        ours = np.asarray(clipped_gradient_sum(theta, x, y, mask, clip))
        ref = np.sum(mask[:, None] * np.asarray(clipped_gradients(theta, x, y, clip)), 0)
        np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-13)
    big = np.zeros(31)
    big[0] = 1e3  # sigmoid saturates: residuals exactly 0 for the records with y = 1 and x_0 > 0
    ours = np.asarray(clipped_gradient_sum(big, x, y, mask, 1.0))
    ref = np.sum(mask[:, None] * np.asarray(clipped_gradients(big, x, y, 1.0)), 0)
    np.testing.assert_allclose(ours, ref, rtol=1e-12, atol=1e-13)


@pytest.mark.slow
def test_loss_law_is_the_accounted_composition():
    """Monte Carlo delta of the pair (both orders) within its band of the exact curve."""
    mech = dpaudit.build("dpsgd-logistic", **SMALL)
    d, d_prime = _pair(SMALL["n"])
    law_d, law_dp = mech.release_distribution(d), mech.release_distribution(d_prime)
    acc = declared_accounting(law_dp, law_d)
    assert acc is not None and acc.reverse_upper_pld is not None
    assert declared_accounting(law_dp, law_dp) is None
    exact = dpsgd_accounting(SMALL["noise_multiplier"], SMALL["q"], SMALL["steps"])
    n = 20_000
    for law_p, law_q, forward in ((law_dp, law_d, True), (law_d, law_dp, False)):
        x = law_p.sample(jax.random.key(11), (n,))
        loss = np.asarray(law_p.log_prob(x) - law_q.log_prob(x))
        for e in (0.0, 0.5, 1.0):
            y = np.maximum(0.0, -np.expm1(e - loss))
            pld = exact.upper_pld if forward else exact.reverse_upper_pld
            truth = float(pld.delta(e))
            band = 4.5 * y.std() / math.sqrt(n) + 1e-4  # 4.5 sigma: failure rate < 1e-5 per check
            assert abs(y.mean() - truth) < band, (forward, e, y.mean(), truth)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="q must lie"):
        dpaudit.build("dpsgd-logistic", q=0.0)
    with pytest.raises(ValueError, match="steps"):
        dpaudit.build("dpsgd-logistic", steps=0)
    mech = dpaudit.build("dpsgd-logistic", **SMALL)
    with pytest.raises(ValueError, match="records are"):
        mech.release_distribution((np.zeros((3, 5)), np.zeros(3)))
    with pytest.raises(ValueError, match="at most n = 12"):
        mech.release_distribution(breast_cancer_records(20))


@pytest.mark.parametrize(
    "spec", ["catalogue/dpsgd-logistic", "faulty/dpsgd-ignores-steps", "faulty/dpsgd-noise-batch"]
)
def test_shipped_specs_claim_what_their_builder_claims(spec):
    """A spec's [claim] is the accountant's epsilon its implementation states, which the
    builder computes: the two must not drift apart when the accounting changes."""
    loaded = load_spec(Path(__file__).resolve().parents[2] / "audits" / f"{spec}.toml")
    built = resolve_mechanism(loaded).claim
    assert (loaded.claim.epsilon, loaded.claim.delta) == (built.epsilon, built.delta)
