"""The faulty catalogue: valid known flaws, buildable examples, adjacent visible pairs."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpaudit
from mechanisms.faulty import example_pair

FAULTY = dpaudit.catalogue(faulty=True)


def test_catalogue_lists_every_required_flaw():
    assert len(FAULTY) >= 14
    for name in FAULTY:
        assert name.startswith("faulty/")


@pytest.mark.parametrize("name", FAULTY)
def test_known_flaw_is_machine_readable_and_pair_is_adjacent(name):
    mech = dpaudit.build(name)
    flaw = mech.known_flaw
    assert isinstance(flaw, dpaudit.KnownFlaw) and flaw.reason
    assert flaw.true_epsilon is not None
    # the true guarantee is worse than the claim: larger epsilon at the claimed delta
    assert flaw.true_delta <= mech.claim.delta or flaw.true_delta == mech.claim.delta
    assert flaw.true_epsilon > mech.claim.epsilon
    d, d_prime = example_pair(name)
    dpaudit.check_adjacent(d, d_prime, mech.claim.adjacency)


def _example_pair_losses(name, seed):
    """The faulty mechanism `name`, its example pair and the privacy losses of 500 of its releases on D."""
    mech = dpaudit.build(name)
    d, d_prime = example_pair(name)
    x = mech.sample(d, jax.random.key(seed), 500)
    return mech, d, d_prime, mech.release_log_prob(d, x) - mech.release_log_prob(d_prime, x)


@pytest.mark.parametrize(
    "name",
    [
        "faulty/iclp-unscaled-sigma",
        "faulty/iclp-raw-eigenpairs",
        "faulty/textbook-tree-replace-one",
        "faulty/noisy-max-with-value",
        "faulty/histogram-scale-epsilon",
    ],
)
def test_finite_true_epsilon_is_reached_on_the_example_pair(name):
    """Pure-DP flaws: the largest privacy loss seen on the pair equals the stated true epsilon."""
    mech, d, d_prime, loss = _example_pair_losses(name, seed=0)
    assert float(jnp.max(loss)) == pytest.approx(mech.known_flaw.true_epsilon, rel=1e-6)
    assert float(mech.distance(d, d_prime)) > mech.claim.sensitivity or name.endswith(
        ("sigma", "value", "epsilon")
    )


@pytest.mark.parametrize(
    "name",
    [
        "faulty/ecdf-data-dependent-grid",
        "faulty/rough-mean-smooth-noise",
        "faulty/svt-lyu-alg5",
        "faulty/gaussian-pure-claim",
    ],
)
def test_not_dp_flaws_show_unbounded_losses(name):
    mech, _, _, loss = _example_pair_losses(name, seed=1)
    loss = np.asarray(loss)
    assert mech.known_flaw.true_epsilon == math.inf
    assert loss.max() > 3 * mech.claim.epsilon


def test_classical_gaussian_at_epsilon_10_true_delta():
    """The classical calibration needs epsilon <= 1 (docs/paper-errors.md#mrs-epsilon-at-most-one): true delta about 0.0245 at claimed (10, 0.01)."""
    mech = dpaudit.build("faulty/gaussian-classical-large-epsilon")
    assert mech.params["true_delta_at_claimed_epsilon"] == pytest.approx(0.0245, abs=5e-4)
    assert dpaudit.noise.gaussian_delta(mech.known_flaw.true_epsilon, mech.params["mu"]) <= 0.01


def test_svt_alg4_true_epsilon_formula_and_unknown_name():
    assert dpaudit.build("faulty/svt-lyu-alg4", cutoff=3).known_flaw.true_epsilon == 19 / 4
    with pytest.raises(ValueError, match="no faulty mechanism"):
        example_pair("bmr-ecdf")
