"""Continuous latent sites marginalised by their distribution (dpaudit.model.sites, issue 15 item 3).

The adaptive SVT program (latent ``ThresholdNoise``, one ``NoisyComparison`` site per
answer) is checked against the catalogue's ``SparseVector`` — the same algorithm written
as one distribution, an independent implementation of the pattern law — and the refusals
name the site and what to provide.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from compile_counts import count_compilations

import dpaudit
from dpaudit.accounting.suprema import log_density_error
from dpaudit.model.noise import NoisyComparison, SparseVector, ThresholdNoise
from dpaudit.model.sites import JointRelease, model_trace
from mechanisms.composed.svt import svt_program_model

CLAIM = dpaudit.Claim(epsilon=1.0)
THRESHOLDS = np.array([4.0, 3.0, 5.0])
N = 12


def _data(seed):
    rng = np.random.default_rng(seed)
    d = (rng.random((N, 3)) < 0.35).astype(float)
    d_prime = d.copy()
    d_prime[0] = 1.0 - d_prime[0]
    return d, d_prime


def _program(threshold_scale, query_scale, cutoff):
    model = svt_program_model(N, THRESHOLDS, threshold_scale, query_scale, cutoff)
    sites = tuple(f"answer_{i}" for i in range(3))
    return dpaudit.Mechanism("program", model, CLAIM, release_site=sites)


def _law(data, threshold_scale, query_scale, cutoff):
    counts = jnp.sum(jnp.asarray(data), axis=0)
    return SparseVector(counts, THRESHOLDS, threshold_scale, query_scale, cutoff=cutoff)


VARIANTS = [(2.0, 8.0, 1), (2.0, 0.0, None), (4.0, 4.0 / 3.0, 2)]


@pytest.mark.parametrize(("b_rho", "b_nu", "cutoff"), VARIANTS)
def test_the_program_density_is_the_sparse_vector_law(b_rho, b_nu, cutoff):
    """Every pattern: the joint density with the threshold noise marginalised equals the
    SparseVector law (1e-12), impossible answers included (-inf)."""
    data, _ = _data(0)
    joint = _program(b_rho, b_nu, cutoff).release_distribution(data)
    assert isinstance(joint, JointRelease) and joint.marginalised == {
        "threshold_noise": ("answer_0", "answer_1", "answer_2")
    }
    law = _law(data, b_rho, b_nu, cutoff)
    patterns = np.array(list(np.ndindex(3, 3, 3)), dtype=float) - 1.0  # all 27 codes
    # jitted, as an audit evaluates them (eagerly every operation compiled for its shapes)
    mine, theirs = (np.asarray(jax.jit(f.log_prob)(patterns)) for f in (joint, law))
    np.testing.assert_array_equal(np.isinf(mine), np.isinf(theirs))
    finite = np.isfinite(theirs)
    np.testing.assert_allclose(mine[finite], theirs[finite], rtol=0, atol=1e-12)
    masses = [math.exp(law.certified_log_prob(row)[0]) for row in patterns[finite]]
    assert math.isclose(math.fsum(masses), 1.0, abs_tol=1e-9)  # every possible pattern seen


@pytest.mark.parametrize(("b_rho", "b_nu", "cutoff"), VARIANTS)
def test_the_exact_route_agrees_with_the_sparse_vector_route(b_rho, b_nu, cutoff):
    """The enumerated, closed-form suprema of the program equal SparseVector's (1e-9)."""
    data, data_prime = _data(1)
    mech = _program(b_rho, b_nu, cutoff)
    mine = mech.release_distribution(data).exact_sup_loss(mech.release_distribution(data_prime))
    theirs = _law(data, b_rho, b_nu, cutoff).exact_sup_loss(_law(data_prime, b_rho, b_nu, cutoff))
    assert mine.method == "latent marginal"
    for field in ("forward_lower", "forward_upper", "backward_lower", "backward_upper"):
        a, b = getattr(mine, field), getattr(theirs, field)
        assert a == b if math.isinf(b) else math.isclose(a, b, abs_tol=1e-9), field
    assert mine.forward_lower <= mine.forward_upper


def test_the_quadrature_error_is_certified_and_reaches_the_certificate():
    """log_prob_error bounds |log_prob - truth| (truth bracketed in closed form), is what the
    certificate margin reads, and is exactly 0 for releases with no numerical density."""
    data, _ = _data(2)
    joint = _program(2.0, 8.0, 1).release_distribution(data)
    law = _law(data, 2.0, 8.0, 1)
    for codes in ([0.0, 1.0, -1.0], [0.0, 0.0, 0.0], [1.0, -1.0, -1.0]):
        x = jnp.asarray(codes)
        error = joint.log_prob_error(x)
        lower, upper = law.certified_log_prob(np.asarray(codes))
        computed = float(joint.log_prob(x))
        assert 0 < error < 1e-2
        assert max(abs(computed - lower), abs(upper - computed)) <= error
        assert log_density_error(joint, x) == error

    def two(data):
        numpyro.sample("a", dist.Laplace(jnp.sum(data), 1.0))
        numpyro.sample("b", dist.Laplace(jnp.sum(data), 1.0))

    plain = dpaudit.Mechanism("two", two, CLAIM, release_site=("a", "b"))
    assert plain.release_distribution(np.zeros(3)).log_prob_error(jnp.zeros(2)) == 0.0


def test_a_continuous_latent_site_without_a_marginal_is_refused():
    def model(data):
        u = numpyro.sample("u", dist.Laplace(0.0, 1.0), infer={"dpaudit": "latent"})
        numpyro.sample("release", dist.Laplace(jnp.sum(data) + u, 1.0))

    with pytest.raises(ValueError, match=r"latent site 'u' \(Laplace\).*marginal_log_prob") as err:
        dpaudit.Mechanism("cont", model, CLAIM).release_distribution(np.zeros(3))
    assert str(err.value).count(". ") == 0  # one sentence


def test_only_release_sites_of_a_known_kind_may_depend_on_the_marginalised_site():
    def shared_depends(data):
        rho = numpyro.sample("rho", ThresholdNoise(1.0), infer={"dpaudit": "latent"})
        numpyro.sample("seed", dist.Normal(rho, 1.0), infer={"dpaudit": "shared"})
        numpyro.sample("a", NoisyComparison(jnp.sum(data), rho, 1.0))

    with pytest.raises(
        ValueError, match=r"site 'seed' depends on the continuous latent site 'rho'"
    ):
        dpaudit.Mechanism("s", shared_depends, CLAIM, release_site="a").release_distribution(
            np.zeros(3)
        )

    def normal_depends(data):
        rho = numpyro.sample("rho", ThresholdNoise(1.0), infer={"dpaudit": "latent"})
        numpyro.sample("a", dist.Normal(jnp.sum(data) + rho, 1.0))

    with pytest.raises(TypeError, match=r"latent site 'rho'.*only NoisyComparison answers"):
        dpaudit.Mechanism("n", normal_depends, CLAIM, release_site="a").release_distribution(
            np.zeros(3)
        )


def test_a_release_site_independent_of_the_latent_keeps_its_own_density():
    """A Laplace site beside the SVT answers: the joint density is the sum of the two."""

    def model(data):
        total = jnp.sum(data)
        rho = numpyro.sample("rho", ThresholdNoise(2.0), infer={"dpaudit": "latent"})
        numpyro.sample("count", dist.Laplace(total, 1.0))
        numpyro.sample("a", NoisyComparison(total - 1.0, rho, 3.0))

    mech = dpaudit.Mechanism("mix", model, CLAIM, release_site=("count", "a"))
    joint = mech.release_distribution(np.ones(2))
    assert joint.marginalised == {"rho": ("a",)}
    x = jnp.array([[0.5, 1.0], [3.0, 0.0]])
    law = SparseVector(jnp.array([1.0]), 0.0, 2.0, 3.0, cutoff=None)
    expected = dist.Laplace(2.0, 1.0).log_prob(x[:, 0]) + jax.jit(law.log_prob)(x[:, 1:])
    np.testing.assert_allclose(jax.jit(joint.log_prob)(x), expected, rtol=0, atol=1e-12)
    assert joint.exact_sup_loss(mech.release_distribution(np.zeros(2))) is None  # not enumerable


def test_a_pattern_impossible_under_the_neighbour_gives_a_certain_infinite_supremum():
    """Without query noise, (negative, positive) needs gap_0 < rho <= gap_1: possible under D
    (gap_1 = gap_0 + 1), impossible under D' (the record moves both counts): sup L = inf
    exactly, in both routes (the enumeration must not prune a prefix possible under D)."""
    d = np.zeros((N, 3))
    d[0], d[1], d[2, 2] = [0.0, 1.0, 0.0], [1.0, 0.0, 0.0], 1.0  # counts (1, 1, 1)
    d_prime = d.copy()
    d_prime[0] = [1.0, 0.0, 0.0]  # counts (2, 0, 1)
    mech = _program(2.0, 0.0, None)
    mine = mech.release_distribution(d).exact_sup_loss(mech.release_distribution(d_prime))
    theirs = _law(d, 2.0, 0.0, None).exact_sup_loss(_law(d_prime, 2.0, 0.0, None))
    assert mine.forward_lower == theirs.forward_lower == math.inf


def test_reading_the_program_law_runs_no_quadrature():
    """The law of a program is read without evaluating its marginal (counts, not seconds).

    The check that the latent site's ``marginal_log_prob`` accepts its answers is traced,
    never run: run op by op it compiled a program per quadrature operation in a fresh
    process (~50 for svt-program). The model's own operations run once beforehand.
    """
    data, _ = _data(3)
    mechanism = _program(2.0, 8.0, 1)
    model_trace(mechanism.model, data)  # the model's own programs
    with count_compilations() as count:
        joint = mechanism.release_distribution(data)
    assert isinstance(joint, JointRelease)
    assert count[0] == 0
