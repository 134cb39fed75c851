"""Exact suprema of adaptive releases from history-uniform site bounds (dpaudit.model.sites).

The toy program releases ``first ~ Lap(sum D, 1)`` and then one of two queries,
``sum D`` or ``3 sum D``, with ``Lap(1)`` noise: the second when ``first > 50``.
Oracle (closed form): on the neighbours ``sum D = 0``, ``sum D' = 1`` the backward loss
``log dP_D'/dP_D`` is ``1 + 3 = 4`` for every ``first >= 50`` and far second values
(the first site's loss is ``+1`` beyond both centres, the selected query's ``3``), and
no transcript does better (each term is at most its site's bound), so ``sup L = 4``.
The forward supremum is 2. A release drawn with seed 0 selects the first query (its
first value is far below 50), so a bound read off that transcript would say 2.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import pytest
from numpyro.distributions import Distribution, constraints

import dpaudit
from dpaudit.accounting.suprema import ExactSupLoss
from dpaudit.model.noise.linear_laplace import AncestorLaplace
from dpaudit.model.sites import JointRelease, adaptive_sup_loss

N = 10
D, D_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)
THRESHOLD = 50.0  # P(first > 50) = e^-50 / 2 under D: never in a sample, still possible


class SelectedQuery(Distribution):
    """``Lap(queries[index], scale)``; ``index`` may come from an earlier release."""

    support = constraints.real
    pytree_data_fields = ("queries", "index")
    pytree_aux_fields = ("scale",)
    uniform_fields = ("index",)

    def __init__(self, queries, index, scale=1.0):
        self.queries, self.index, self.scale = jnp.asarray(queries), jnp.asarray(index), scale
        super().__init__(batch_shape=(), event_shape=())

    def sample(self, key, sample_shape=()):
        noise = jax.random.laplace(key, sample_shape, dtype=jnp.float64)
        return self.queries[self.index] + self.scale * noise

    def log_prob(self, value):
        return -jnp.abs(value - self.queries[self.index]) / self.scale - math.log(2 * self.scale)

    def exact_sup_loss(self, other):
        """The supremum at this index only (what a single transcript shows)."""
        i = int(self.index)
        s = abs(float(self.queries[i]) - float(other.queries[i])) / self.scale
        return ExactSupLoss(s, s, s, s, "declared: one index")

    def uniform_sup_loss(self, other):
        """Bounds over every index: the smallest and the largest query shift."""
        shifts = np.abs(np.asarray(self.queries) - np.asarray(other.queries)) / self.scale
        low, high = float(shifts.min()) * (1 - 1e-15), float(shifts.max()) * (1 + 1e-15)
        return ExactSupLoss(low, high, low, high, "declared: every index")


def _first(data):
    total = jnp.sum(data)
    first = numpyro.sample("first", AncestorLaplace(total[None], depth=0, scale=1.0))
    return total, first[0]


def _selected(data):
    total, first = _first(data)
    index = jnp.where(first > THRESHOLD, 1, 0)
    numpyro.sample("second", SelectedQuery(jnp.stack([total, 3.0 * total]), index))


def _mechanism(model, epsilon):
    claim = dpaudit.Claim(epsilon=epsilon, sensitivity=1.0, sensitivity_norm="l1")
    return dpaudit.Mechanism("adaptive", model, claim, release_site=("first", "second"))


def test_the_supremum_uses_the_bound_over_every_history_not_the_drawn_one():
    mech = _mechanism(_selected, 4.0)
    law, law_prime = mech.release_distribution(D), mech.release_distribution(D_PRIME)
    assert isinstance(law, JointRelease) and law.adaptive()
    bounds = law.exact_sup_loss(law_prime)
    assert bounds is not None and bounds.method.startswith("adaptive sites: ")
    # upper: 1 (first site) + 3 (the worst query over both indices); true sup 4
    assert 4.0 <= bounds.sup_loss <= 4.0 * (1 + 1e-12)
    # lower: 1 + 1 (the smallest over the indices); honest, below the true sup 4
    assert bounds.sup_loss_lower == pytest.approx(2.0, rel=1e-12)
    assert bounds.sup_loss_lower <= 2.0
    assert adaptive_sup_loss(law, law_prime) == bounds


@pytest.mark.parametrize(("epsilon", "verdict"), [(3.0, "inconclusive"), (4.0, "pass")])
def test_a_claim_below_the_uniform_bound_never_passes(epsilon, verdict):
    """Claim 3 < true 4: not a pass (a bound from the drawn transcript, 2, would pass it)."""
    result = dpaudit.audit(_mechanism(_selected, epsilon), D, D_PRIME, samples=2000, seed=1)
    assert result.verdict == verdict
    assert result.exact is not None and result.exact.family == "supremum"


def _undeclared(data):
    total, first = _first(data)
    loc = total + jnp.where(first > 0.0, 5.0, 0.0)  # the centre moves with the history
    numpyro.sample("second", AncestorLaplace(loc[None], depth=0, scale=1.0))


def _history_in_queries(data):
    total, first = _first(data)
    queries = jnp.stack([total, 3.0 * total]) + first  # a field not declared uniform
    numpyro.sample("second", SelectedQuery(queries, jnp.where(first > THRESHOLD, 1, 0)))


def _data_in_index(data):
    total, first = _first(data)
    index = jnp.where(first > THRESHOLD + total, 1, 0)  # the design differs between D, D'
    numpyro.sample("second", SelectedQuery(jnp.stack([total, 3.0 * total]), index))


class HiddenIndex(SelectedQuery):
    """Keeps a copy of the history outside its pytree leaves."""

    uniform_fields = ()

    def __init__(self, queries, index, scale=1.0):
        super().__init__(queries, jnp.zeros((), dtype=jnp.int32), scale)
        self.hidden = index


def _hidden(data):
    total, first = _first(data)
    numpyro.sample("second", HiddenIndex(jnp.stack([total, 3.0 * total]), first > THRESHOLD))


@pytest.mark.parametrize("model", [_undeclared, _history_in_queries, _data_in_index, _hidden])
def test_adaptive_sites_without_a_valid_uniform_declaration_get_no_exact_supremum(model):
    mech = _mechanism(model, 1.0)
    law, law_prime = mech.release_distribution(D), mech.release_distribution(D_PRIME)
    assert law.adaptive()
    assert law.exact_sup_loss(law_prime) is None


def test_an_undeclared_adaptive_release_is_audited_through_its_density():
    """No exact supremum: the density route runs, and a pure claim is not passed on sampling."""
    result = dpaudit.audit(_mechanism(_undeclared, 10.0), D, D_PRIME, samples=2000, seed=2)
    assert result.route == "density" and result.exact is None
    assert result.verdict == "inconclusive"
    assert any("cannot pass on Monte Carlo evidence alone" in note for note in result.notes)
