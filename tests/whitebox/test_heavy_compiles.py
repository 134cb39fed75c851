"""What the heaviest shipped audits (BMR ECDF/ROC, DP-SGD) compile, counted, not timed.

Reading a release law runs the model's trace, which draws a release; the engine then checks
that the law has a density. Eagerly, a DP-SGD trajectory draw compiled its vmapped scan anew
on every call, a tree-noise draw compiled each gather and sum, and the density check
compiled (and ran) the law's whole log-density once per audit only to discard it.
"""

import jax
import jax.numpy as jnp
import numpy as np
from compile_counts import count_compilations

import dpaudit
from dpaudit.model.densities import check_has_density
from dpaudit.model.noise.linear_laplace import AncestorLaplace
from mechanisms.dpsgd import breast_cancer_records


def _dpsgd_law(n_records):
    mech = dpaudit.build("dpsgd-logistic", steps=3, q=0.5, n=6)
    return mech.release_distribution(breast_cancer_records(n_records))


def test_a_second_dpsgd_law_of_the_same_shape_draws_without_compiling():
    key = jax.random.key(3)
    first, second = _dpsgd_law(6), _dpsgd_law(5)  # both padded to n + 1 records
    np.asarray(first.sample(key))
    np.asarray(first.sample(key, (4,)))
    with count_compilations() as count:
        one, four = second.sample(key), second.sample(key, (4,))
        np.asarray(one), np.asarray(four)
    assert count[0] == 0, f"{count[0]} compilation(s) to draw from a second DP-SGD law"
    assert one.shape == (3, 31) and four.shape == (4, 3, 31)


def test_a_tree_noise_draw_is_one_program_per_shape():
    key = jax.random.key(0)
    law = AncestorLaplace(jnp.linspace(0.1, 0.9, 7), depth=3, scale=4.0, count_scale=50.0)
    with count_compilations() as count:
        draws = np.asarray(law.sample(key, (5,)))
    assert count[0] == 1, f"{count[0]} compilations for one tree-noise draw (one program)"
    other = AncestorLaplace(jnp.linspace(0.2, 0.8, 7), depth=3, scale=2.0, count_scale=50.0)
    with count_compilations() as count:
        np.asarray(other.sample(key, (5,)))
    assert count[0] == 0
    # each leaf: its loc plus the noise of its depth + 1 ancestors over n (A eta / n)
    eta = 4.0 * np.asarray(jax.random.laplace(key, (5, law.n_noise)))
    expected = np.asarray(law.loc) + eta @ law.matrix.T / 50.0
    np.testing.assert_allclose(draws, expected, rtol=1e-12, atol=1e-15)


def test_checking_that_a_law_has_a_density_compiles_nothing():
    law = AncestorLaplace(jnp.linspace(0.1, 0.9, 7), depth=3, scale=4.0, count_scale=50.0)
    trajectories = _dpsgd_law(6)
    with count_compilations() as count:
        check_has_density(law, "tree")
        check_has_density(trajectories, "dpsgd")
    assert count[0] == 0, f"{count[0]} compilation(s) to check for a log_prob"
