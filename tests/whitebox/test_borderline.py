"""White-box violations at the statistical resolution are reported as borderline.

A Gaussian mechanism audited without exact accounting (``exact=False``: Monte Carlo only)
against a claim 0.006 below its true ``delta(1)``: the Monte Carlo lower bound certifies the
violation at 0.95, and its p-value says how surprising that is for an exactly tight claim.

Mutation checks: the borderline record not attached in ``whitebox/engine.py`` fails
``test_a_violation_at_the_resolution_is_borderline``; ``monte_carlo_p_value`` returning
``alpha`` fails ``test_a_firm_violation_is_not_borderline``.
"""

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

import dpaudit
from dpaudit.accounting.calibration import gaussian_delta
from dpaudit.estimation.significance import BORDERLINE_P

N = 100
TRUE_DELTA = float(gaussian_delta(1.0, 1.0))


def _mechanism(delta: float):
    def model(data):
        mean = jnp.mean(jnp.clip(data[:, 0], 0.0, 1.0))
        numpyro.sample("release", dist.Normal(mean, 1.0 / N))

    claim = dpaudit.Claim(epsilon=1.0, delta=delta)
    return dpaudit.Mechanism(name="gaussian-mc", model=model, claim=claim, params={"n": N})


def _audit(seed: int):
    data = jnp.full((N, 1), 0.5)
    mech = _mechanism(TRUE_DELTA - 0.006)
    return dpaudit.audit(mech, data.at[0, 0].set(0.0), data.at[0, 0].set(1.0), samples=20_000,
                         seed=seed, exact=False, progress=False)  # fmt: skip


def test_a_violation_at_the_resolution_is_borderline():
    result = _audit(seed=2)
    assert result.verdict == "violation"
    assert BORDERLINE_P < result.p_value <= 0.05
    assert result.borderline == {"p_value": result.p_value, "threshold": BORDERLINE_P}
    assert result.to_dict()["diagnostics"]["borderline"]["p_value"] == result.p_value
    assert "borderline: a correct, exactly tight mechanism" in result.summary()
    assert any(n.startswith("borderline:") for n in result.notes)


def test_a_firm_violation_is_not_borderline():
    result = _audit(seed=0)
    assert result.verdict == "violation"
    assert 0 < result.p_value <= BORDERLINE_P
    assert result.borderline is None
    assert "borderline" not in result.summary()
