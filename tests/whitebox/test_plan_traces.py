"""How many times the audit's plan runs a model on concrete data (counts, never seconds).

Every run of the model on a concrete dataset outside ``jit`` is an eager numpyro trace,
op by op. The plan traces ``D`` twice (the randomness check needs two traces under one
seed; the release law of ``D`` is read from the first) and ``D'`` once; a joint law keeps
its sites' laws from the trace it was built from, where ``site_distributions`` traced the
model again each time the plan asked (up to four times per law).
"""

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

import dpaudit
from dpaudit.whitebox.options import AuditOptions
from dpaudit.whitebox.plan import plan_audit

N = 10


def _counting(calls, sites):
    def model(data):
        mean = jnp.mean(data)
        if not isinstance(mean, jax.core.Tracer):  # eager: not inside a jit or jaxpr trace
            calls.append("D" if float(np.asarray(data)[0]) == 0.0 else "D'")
        numpyro.sample("mean", dist.Laplace(mean, 1.0 / N))
        if sites == 2:
            numpyro.sample("total", dist.Normal(jnp.sum(data), 2.0))

    release = "mean" if sites == 1 else ("mean", "total")
    claim = dpaudit.Claim(epsilon=1.0, delta=1e-3)
    return dpaudit.Mechanism("counted", model, claim, release_site=release)


def _plan_calls(sites: int) -> list:
    calls = []
    data = np.zeros(N)
    data_prime = data.copy()
    data_prime[0] = 1.0
    plan = plan_audit(_counting(calls, sites), data, data_prime, AuditOptions())
    assert plan.accounting is not None  # the whole plan ran (exact accounting found)
    return calls


def test_a_one_site_plan_traces_d_twice_and_d_prime_once():
    assert sorted(_plan_calls(1)) == ["D", "D", "D'"]


def test_a_joint_plan_reads_its_site_laws_from_the_traces_it_made():
    calls = _plan_calls(2)
    assert calls.count("D") == 2, calls
    assert calls.count("D'") == 1, calls


def test_a_subclass_law_of_the_release_is_asked_for_both_datasets():
    """Reading D's law from the randomness check's trace is Mechanism's own law: a subclass
    that defines ``release_distribution`` is asked for D as for D'."""
    asked = []

    class OwnLaw(dpaudit.Mechanism):
        def release_distribution(self, data):
            asked.append("D" if float(np.asarray(data)[0]) == 0.0 else "D'")
            return super().release_distribution(data)

    plain = _counting([], 1)
    mechanism = OwnLaw(plain.name, plain.model, plain.claim, release_site="mean")
    data = np.zeros(N)
    data_prime = data.copy()
    data_prime[0] = 1.0
    plan_audit(mechanism, data, data_prime, AuditOptions())
    assert "D" in asked and "D'" in asked, asked
