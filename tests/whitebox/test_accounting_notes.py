"""A multi-site or adaptive release that gets no exact accounting says why, in one sentence.

Each case below is a joint release for which dpaudit computes only Monte Carlo bounds;
the plan carries a one-sentence ``accounting_note`` naming the reason (and, where the
user can fix it, how), which the audit appends to the result's notes and the report
shows. A release that does get exact accounting carries none.
"""

import json

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
import pytest

import dpaudit
from dpaudit.whitebox.options import AuditOptions
from dpaudit.whitebox.plan import plan_audit

D, D_PRIME = jnp.zeros(5), jnp.zeros(5).at[0].set(1.0)


def _shared(data):
    public = numpyro.sample("public", dist.Normal(0.0, 1.0), infer={"dpaudit": "shared"})
    numpyro.sample("release", dist.Laplace(jnp.sum(data) + public, 1.0))


def _adaptive(data):
    first = numpyro.sample("first", dist.Laplace(jnp.sum(data), 1.0))
    numpyro.sample("second", dist.Laplace(jnp.sum(data) + first, 1.0))


def _unknown_site(data):
    numpyro.sample("lap", dist.Laplace(jnp.sum(data), 1.0))
    numpyro.sample("heavy", dist.StudentT(3.0, jnp.sum(data), 1.0))


def _sgd_steps(data):
    # two noisy steps whose second mixture's centre depends on the first release
    # (DP-SGD's parameter update): not history-uniform without a declaration
    theta = 0.0
    for step in range(2):
        g = jnp.clip(jnp.sum(data) - theta, -1.0, 1.0)
        components = [dist.Normal(theta, 1.0), dist.Normal(theta + g, 1.0)]
        mixing = dist.Categorical(probs=jnp.array([0.9, 0.1]))
        theta = numpyro.sample(f"step{step}", dist.MixtureGeneral(mixing, components))


def _laplace_pair(data):
    numpyro.sample("a", dist.Laplace(jnp.sum(data), 1.0))
    numpyro.sample("b", dist.Laplace(jnp.sum(data), 2.0))


CASES = {
    "shared": (_shared, ("release", "public"), ("shared site(s) 'public'",)),
    "adaptive": (
        _adaptive,
        ("first", "second"),
        ("site(s) 'second' depends on earlier released values", "uniform_sup_loss"),
    ),
    "unknown": (_unknown_site, ("lap", "heavy"), ("site 'heavy' (StudentT)", "dpaudit.exact")),
    "sgd": (
        _sgd_steps,
        ("step0", "step1"),
        ("'step1' depends on earlier", "privacy_accounting", "subsampled_accounting"),
    ),
}


def _mechanism(model, sites):
    release = tuple(s for s in sites if s != "public")
    return dpaudit.Mechanism("noted", model, dpaudit.Claim(1.0, 1e-5), release_site=release)


def _plan(mech, exact=True):
    return plan_audit(mech, D, D_PRIME, AuditOptions(exact=exact, compatibility=False))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_release_without_exact_accounting_says_why_in_one_sentence(case):
    model, sites, fragments = CASES[case]
    plan = _plan(_mechanism(model, sites))
    assert plan.accounting is None
    note = plan.accounting_note
    assert note is not None, f"{case}: no exact accounting and no note"
    assert note.startswith("no exact accounting: ") and note.endswith(".")
    assert note.count(". ") == 0, note  # one sentence
    for fragment in fragments:
        assert fragment in note, note


def test_exact_accounting_or_a_declined_one_carries_no_note():
    mech = _mechanism(_laplace_pair, ("a", "b"))
    assert _plan(mech).accounting is not None and _plan(mech).accounting_note is None
    # exact=False: the user declined exact accounting, nothing to explain
    assert _plan(_mechanism(_adaptive, ("first", "second")), exact=False).accounting_note is None


def test_the_note_reaches_the_result_and_its_record():
    mech = _mechanism(_adaptive, ("first", "second"))
    result = dpaudit.audit(mech, D, D_PRIME, samples=200, seed=0)
    assert result.exact is None
    assert any(
        n.startswith("no exact accounting: the law of site(s) 'second'") for n in result.notes
    )
    record = json.loads(json.dumps(result.to_dict()))
    assert any(n.startswith("no exact accounting: ") for n in record["notes"])
