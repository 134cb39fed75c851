"""The cost of the selection phase: same choices as the plain per-table planning, no
recompilation of the same shapes, and the audit strength as a vectorised bisection.

The selection was made cheaper (one sort per score array, one planning call over all
arms, the audit strength's bisections as one): these tests pin that nothing it chooses
or states changed, against oracles built from the public per-table functions.
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
from dpaudit.blackbox import blackbox_audit
from dpaudit.blackbox.samplers import ReleaseSource
from dpaudit.blackbox.selection import candidate_events, plan_bound, select_event
from dpaudit.estimation.bounds import certified_delta, certified_epsilon, detectable_violation

# The event JAX reports for each XLA compilation (as tests/whitebox/test_engine.py counts them).
# Planning's family-wise level (selection.py): the oracle below re-derives the Bonferroni level.
PLAN_ALPHA = 0.16


def _oracle(scores, n_cert, claim, objective, alpha):
    """The best event, table by table, with the public per-table functions (no sharing of
    sorts or planning calls): what select_event chose before it was made cheaper."""
    tables = []
    for arm, (s_d, s_dp) in enumerate(scores):
        for direction, (s_p, s_q) in enumerate(((s_d, s_dp), (-s_dp, -s_d))):
            tables.append((arm, direction, s_p.size, candidate_events(s_p, s_q)))
    level = PLAN_ALPHA / sum(c[0].size for *_, c in tables)
    names = ("epsilon", "delta") if objective == "auto" else (objective,)
    best = {}
    for arm, direction, n, (t, g, k_p, k_q, q_is) in tables:
        for name in names:
            b = np.asarray(plan_bound(k_p, k_q, n, n_cert, claim, name, alpha, level, q_is))
            i = int(np.argmax(b))
            row = (float(b[i]), arm, direction, float(t[i]), float(g[i]), k_p[i] / n, k_q[i] / n)
            if name not in best or row[0] > best[name][0]:
                best[name] = row
    return best


def _arms(seed):
    """Score arrays of three arms: continuous, discrete with atoms, and signed zeros."""
    rng = np.random.default_rng(seed)
    n = 3000
    cont = (rng.laplace(0.4, 1.0, n), rng.laplace(0.0, 1.0, n))
    atoms = (rng.choice([0.0, 1.0, 2.0], n, p=[0.5, 0.3, 0.2]), rng.choice([0.0, 1.0, 2.0], n))
    zeros = (np.where(rng.random(n) < 0.5, -0.0, 0.0) + rng.integers(0, 2, n), rng.random(n))
    return [cont, atoms, zeros]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("objective", ["epsilon", "delta"])
def test_selection_chooses_what_the_per_table_oracle_chooses(seed, objective):
    claim = dpaudit.Claim(0.5, 1e-3)
    scores = _arms(seed)
    got = select_event(scores, 3000, 100_000, claim, objective, 0.05)
    want = _oracle(scores, 100_000, claim, objective, 0.05)[objective]
    assert (got.objective, got.pair, got.direction, got.threshold, got.gamma) == want[:5]
    assert (got.p_hat, got.q_hat) == want[5:]


def test_auto_objective_returns_the_oracle_event_of_the_objective_it_chose():
    claim = dpaudit.Claim(0.2, 1e-3)
    scores = _arms(3)
    got = select_event(scores, 3000, 100_000, claim, "auto", 0.05)
    best = _oracle(scores, 100_000, claim, "auto", 0.05)
    want = best[got.chosen_for]
    assert (got.objective, got.pair, got.direction, got.threshold, got.gamma) == want[:5]
    if best["epsilon"][0] <= claim.epsilon:  # no violation planned: the epsilon event
        assert got.chosen_for == "epsilon"


def test_audit_strength_matches_the_certified_bounds_at_its_crossing_points():
    """The vectorised bisection (epsilon and delta together, over an array of event sizes)
    returns, for every q, the crossing point of certified_epsilon / certified_delta."""
    n, claim, conf = 200_000, (0.5, 1e-4), 0.9
    qs = np.array([3e-5, 1e-3, 0.05, 0.3])
    eps, dlt = detectable_violation(qs, n, *claim, conf)
    for q, e, d in zip(qs, eps, dlt, strict=True):
        scalar = detectable_violation(float(q), n, *claim, conf)
        assert scalar == (float(e), float(d))  # the array and the scalar agree to the bit

        def bound_eps(x, q=q):
            k_p = n * min(1.0, math.exp(x) * q + claim[1])
            return float(certified_epsilon(k_p, n, n * q, n, delta=claim[1], confidence=conf))

        def bound_delta(x, q=q):
            k_p = n * min(1.0, math.exp(claim[0]) * q + x)
            return float(certified_delta(k_p, n, n * q, n, epsilon=claim[0], confidence=conf))

        assert bound_eps(e) > claim[0] >= bound_eps(e * (1 - 1e-9))
        assert bound_delta(d) > claim[1] >= bound_delta(d * (1 - 1e-9))


# ------------------------------------------------------------------ no recompilation


def _laplace_count(data, n, key):
    return jnp.sum(data) + jax.random.laplace(key, (n,))


def _laplace_sum(data):
    return numpyro.sample("release", dist.Laplace(jnp.sum(data), 1.0))


def _reference():
    """A fresh Mechanism object each call (a pytree-safe release law: a plain Laplace)."""
    return dpaudit.Mechanism("laplace-sum", _laplace_sum, dpaudit.Claim(1.0))


def _sampler(data, n, key):
    return jnp.sum(data) + jax.random.laplace(key, (n,))


@pytest.mark.parametrize("statistic", ["logistic", "model"])
def test_a_second_audit_with_the_same_shapes_compiles_nothing(statistic):
    """Also for the model statistic with a new reference object (its privacy loss is one
    module-level jit taking the laws as arguments)."""
    d, d1 = jnp.zeros(3), jnp.zeros(3).at[0].set(1.0)
    kw = {"samples": 30_000, "chunk_size": 4096, "progress": False, "statistic": statistic}
    model = statistic == "model"
    blackbox_audit(_sampler, d, d1, dpaudit.Claim(0.5), seed=1, **kw, reference=_reference())
    with count_compilations() as count:
        res = blackbox_audit(
            _sampler, d, d1, dpaudit.Claim(0.5), seed=2, **kw,
            reference=_reference() if model else None,
        )  # fmt: skip
    assert count[0] == 0, f"{count[0]} XLA compilation(s) in the second audit"
    assert res.statistic == statistic and res.verdict == "violation"


# ------------------------------------------------------------------ selection draws


def test_unused_selection_chunks_are_not_drawn_and_the_rest_are_the_same_releases():
    calls = []

    def sampler(data, n, key):
        calls.append(n)
        return np.asarray(jax.random.normal(key, (n, 2)))

    source = ReleaseSource(sampler, None, "normal", 100)
    key = jax.random.key(5)
    full = source.draw(1050, key)
    calls.clear()
    part = source.draw(1050, key, skip=(120, 640))
    # chunks [200, 300) .. [500, 600) lie inside the unused range: 4 of 11 calls saved
    assert len(calls) == 7
    np.testing.assert_array_equal(part, np.concatenate([full[:200], full[600:]]))


def test_string_outputs_get_indices_in_order_of_first_sight():
    def sampler(data, n, key):
        words = np.array(["b", "a", "c", "a"])
        return words[np.asarray(jax.random.randint(key, (n,), 0, 4))]

    source = ReleaseSource(sampler, None, "words", 64)
    x = source.draw(64, jax.random.key(0))
    first = source.outputs.categories.index
    seen = list(dict.fromkeys(sampler(None, 64, jax.random.split(jax.random.key(0), 1)[0])))
    assert list(first) == seen and list(first.values()) == list(range(len(seen)))
    raw = sampler(None, 64, jax.random.split(jax.random.key(0), 1)[0])
    np.testing.assert_array_equal(x, [first[w] for w in raw])
