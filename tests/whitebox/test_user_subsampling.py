"""Poisson subsampling as users write it: exact accounting, correct and wrong-rate claims.

Oracle: :func:`dpaudit.subsampling.subsampled_accounting` of the base Gaussian
(``mu = C / sigma``), itself checked against dp_accounting in tests/core/test_subsampling.py.
The pair moves one record of clipped value ``C`` among records of value 0 (add/remove),
so the release law is exactly ``(1 - q) N(0, sigma^2) + q N(C, sigma^2)`` against
``N(0, sigma^2)``: the subsampled mechanism's dominating pair.
"""

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import dpaudit
from dpaudit.accounting.composition import GaussianComponent
from dpaudit.accounting.subsampling import SubsampledComponent, subsampled_accounting
from dpaudit.cli.main import EXIT_INVALID, main
from dpaudit.whitebox.options import AuditOptions
from dpaudit.whitebox.plan import plan_audit

Q, SIGMA, CLIP, DELTA = 0.2, 1.0, 1.0, 1e-5
D = jnp.array([0.0, 0.0, 0.0, 0.0, 1.0])  # the record of the pair is the last one
D_PRIME = jnp.zeros(4)


def _bernoulli_model(rate=Q):
    def model(data):
        keep = numpyro.sample(
            "keep", dist.Bernoulli(rate).expand([data.shape[0]]), infer={"dpaudit": "latent"}
        )
        total = jnp.sum(keep * jnp.clip(data, -CLIP, CLIP))
        numpyro.sample("release", dist.Normal(total, SIGMA))

    return model


def _mixture_model(data):
    # the same mechanism written as the mixture over the differing record's membership
    n = data.shape[0]
    base = jnp.sum(jnp.clip(data[:4], -CLIP, CLIP))
    if n == 4:
        numpyro.sample("release", dist.Normal(base, SIGMA))
    else:
        contribution = jnp.clip(data[4], -CLIP, CLIP)
        mixing = dist.Categorical(probs=jnp.array([1 - Q, Q]))
        numpyro.sample(
            "release",
            dist.MixtureGeneral(
                mixing, [dist.Normal(base, SIGMA), dist.Normal(base + contribution, SIGMA)]
            ),
        )


def _epsilon(rate):
    return subsampled_accounting(GaussianComponent(CLIP / SIGMA), rate, 1).epsilon_upper(DELTA)


def _mechanism(model, epsilon):
    claim = dpaudit.Claim(epsilon=epsilon, delta=DELTA, adjacency="add-remove")
    return dpaudit.Mechanism("user-subsampled", model, claim)


def _plan(mech):
    return plan_audit(mech, D, D_PRIME, AuditOptions(exact=True, compatibility=False))


@pytest.mark.parametrize(
    "model", [_bernoulli_model(), _mixture_model], ids=["bernoulli", "mixture"]
)
def test_user_written_poisson_subsampling_gets_the_subsampled_accounting(model):
    plan = _plan(_mechanism(model, 1.0))
    assert plan.accounting is not None and plan.accounting_note is None
    ((component, count),) = plan.accounting.components
    assert count == 1 and isinstance(component, SubsampledComponent)
    assert component.q == pytest.approx(Q, rel=1e-12) and component.base.mu == CLIP / SIGMA
    oracle = subsampled_accounting(GaussianComponent(CLIP / SIGMA), Q, 1)
    for delta in (1e-3, DELTA):
        assert plan.accounting.epsilon_upper(delta) == pytest.approx(
            oracle.epsilon_upper(delta), rel=1e-9
        )


@pytest.mark.parametrize(
    "model",
    # the mixture form has the same accounting (above); its audit runs with the slow tests
    [_bernoulli_model(), pytest.param(_mixture_model, marks=pytest.mark.slow)],
    ids=["bernoulli", "mixture"],
)
def test_a_correct_claim_passes_and_a_claim_for_the_wrong_rate_is_a_violation(model):
    correct = dpaudit.audit(_mechanism(model, _epsilon(Q) * 1.001), D, D_PRIME, samples=300)
    assert correct.verdict == "pass" and correct.exact is not None
    # a claim computed for half the sampling rate: the exact lower curve exceeds it
    wrong = dpaudit.audit(_mechanism(model, _epsilon(Q / 2)), D, D_PRIME, samples=300)
    assert wrong.verdict == "violation"
    assert wrong.delta_at_claimed_epsilon.exact_lower > DELTA


def test_other_records_that_move_the_noise_are_not_taken_for_subsampling():
    # with a non-zero other record the law without the differing record is itself a
    # mixture: not the subsampled pair, so no exact accounting and a note on how to declare
    mech = _mechanism(_bernoulli_model(), 1.0)
    plan = plan_audit(
        mech,
        D.at[0].set(0.5),
        D_PRIME.at[0].set(0.5),
        AuditOptions(exact=True, compatibility=False),
    )
    assert plan.accounting is None
    assert plan.accounting_note.startswith("no exact accounting: the release marginalises")
    assert "'keep'" in plan.accounting_note and "privacy_accounting" in plan.accounting_note


@pytest.mark.parametrize(
    ("rate", "match"),
    [
        (0.0, r"latent subsampling site 'keep' has rate 0.0, outside \(0, 1\]"),
        # numpyro itself refuses a concrete probability outside [0, 1] or NaN
        (1.5, "invalid probs"),
        (float("nan"), "invalid probs"),
    ],
)
def test_a_latent_subsampling_rate_outside_the_unit_interval_is_refused(rate, match):
    mech = _mechanism(_bernoulli_model(rate), 1.0)
    with pytest.raises(ValueError, match=match):
        mech.release_distribution(D)


def test_the_command_line_refuses_a_bad_rate_in_one_sentence(tmp_path, capsys):
    (tmp_path / "user.py").write_text(
        "import jax.numpy as jnp, numpyro, numpyro.distributions as dist\n"
        "from dpaudit import Claim, Mechanism\n"
        "def build():\n"
        "    def model(data):\n"
        "        keep = numpyro.sample('keep', dist.Bernoulli(0.0).expand([data.shape[0]]),\n"
        "                              infer={'dpaudit': 'latent'})\n"
        "        numpyro.sample('release', dist.Normal(jnp.sum(keep * data[:, 0]), 1.0))\n"
        "    return Mechanism('bad-rate', model, Claim(1.0, 1e-5, adjacency='add-remove'))\n"
    )
    np.save(tmp_path / "d.npy", np.zeros((5, 1)))
    np.save(tmp_path / "d2.npy", np.zeros((4, 1)))
    out = tmp_path / "report.json"
    args = ["audit", f"{tmp_path / 'user.py'}:build", "--data", str(tmp_path / "d.npy"),
            str(tmp_path / "d2.npy"), "--json", str(out)]  # fmt: skip
    assert main(args) == EXIT_INVALID
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert "'keep' has rate 0.0, outside (0, 1]" in err
    assert not out.exists()


def test_a_rate_of_one_is_the_base_mechanism():
    # every record always used (numpyro clamps Bernoulli(1).log_prob(0) to the log of
    # the float64 epsilon, so the rate reads 1 - 2e-16): the base mechanism's accounting
    plan = _plan(_mechanism(_bernoulli_model(1.0), 1.0))
    assert plan.accounting is not None
    ((component, _),) = plan.accounting.components
    assert getattr(component, "base", component) == GaussianComponent(CLIP / SIGMA)
    assert getattr(component, "q", 1.0) == pytest.approx(1.0, abs=1e-12)


def _mixture_with_a_laplace_site(data):
    _mixture_model(data)
    numpyro.sample("count", dist.Laplace(jnp.sum(data), 2.0))


def test_a_mixture_site_is_one_part_of_a_composition():
    claim = dpaudit.Claim(epsilon=1.0, delta=DELTA, adjacency="add-remove")
    mech = dpaudit.Mechanism("mixed", _mixture_with_a_laplace_site, claim,
                             release_site=("release", "count"))  # fmt: skip
    plan = _plan(mech)
    kinds = sorted(type(c).__name__ for c, _ in plan.accounting.components)
    assert kinds == ["LaplaceComponent", "SubsampledComponent"]
