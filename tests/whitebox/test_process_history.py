"""An audit's results do not depend on what the process ran before it.

The jitted steps, the distribution-tracing fallback (``dpaudit.model.densities``) and the
compilation caches outlive an audit. A cache keyed on something that ignores parameter
values, a compiled step closing over a previous audit's noise, or kept losses that view a
buffer later reused would make the same audit give other numbers after other audits. Here
one audit is run, then audits that share its compiled shapes with other parameter values,
other routes and a notion claim, then the first audit again: kept losses, curves and the
record must be bit-identical to the first run and to a fresh process's, and the first
result's arrays must not have changed meanwhile.
The kept losses are also checked to be the audit's own draws: the closed-form loss of a
shifted Gaussian pair is exactly ``N(mu^2 / 2, mu^2)`` in both directions, for the
reference and for the audit sharing its compiled step with another noise scale.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
import scipy.stats

import dpaudit
from dpaudit import Claim, Mechanism
from dpaudit.model.claims import ZCDPClaim

N = 10
DATA, DATA_PRIME = jnp.zeros(N), jnp.zeros(N).at[0].set(1.0)
SAMPLES, CHUNK = 2000, 512  # four chunks, the last one partial


def _gaussian(sigma, claim=None):
    def model(data):
        numpyro.sample("release", dist.Normal(jnp.mean(data), sigma))

    claim = claim or Claim(epsilon=1.0, delta=1e-5, sensitivity=1.0 / N, sensitivity_norm="l2")
    return Mechanism("history-gaussian", model, claim)


def _laplace(scale):
    def model(data):
        numpyro.sample("release", dist.Laplace(jnp.mean(data), scale))

    return Mechanism(
        "history-laplace", model, Claim(epsilon=1.0, sensitivity=1.0 / N, sensitivity_norm="l1")
    )


SIGMA = 0.25  # mu = (1 / N) / SIGMA = 0.4


def reference_audit():
    return dpaudit.audit(
        _gaussian(SIGMA), DATA, DATA_PRIME, samples=SAMPLES, seed=11, chunk_size=CHUNK
    )


def _other_audits():
    """Audits sharing the reference's compiled shapes, with other values, routes and claims."""
    kw = {"samples": SAMPLES, "chunk_size": CHUNK}
    other = dpaudit.audit(_gaussian(0.05), DATA, DATA_PRIME, seed=11, **kw)  # same shapes, mu = 2
    dpaudit.audit(_gaussian(SIGMA), DATA_PRIME, DATA, seed=4, **kw)  # swapped datasets
    dpaudit.audit(_laplace(0.1), DATA, DATA_PRIME, seed=11, **kw)
    dpaudit.audit(_laplace(0.1), DATA, DATA_PRIME, seed=11, route="density", **kw)
    dpaudit.audit(_gaussian(0.05), DATA, DATA_PRIME, seed=11, route="model", **kw)
    dpaudit.audit(
        _gaussian(0.1, ZCDPClaim(0.5, sensitivity_norm="l2", sensitivity=1.0 / N)),
        DATA,
        DATA_PRIME,
        **kw,
    )
    return other


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("seconds", "timings")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def record_bits(result):
    """Every array and number of a result, as bytes and JSON (exact comparison)."""
    arrays = []
    for d in result.directions:
        arrays.append(np.asarray(d.losses, dtype=np.float64).tobytes())
        for field in ("epsilons", "estimate", "lower", "upper", "std_error"):
            arrays.append(np.asarray(getattr(d.curve, field), dtype=np.float64).tobytes())
    return arrays, _strip(result.to_dict())


@pytest.fixture(scope="module")
def runs():
    """The reference audit, its bits at once, the same audit after the other audits, and the
    other audit of the same compiled shapes (mu = 2)."""
    first = reference_audit()
    first_bits = record_bits(first)
    other = _other_audits()
    return first, first_bits, reference_audit(), other


def bits_digest(bits) -> str:
    """SHA-256 of :func:`record_bits` (arrays' bytes and the record's JSON)."""
    arrays, record = bits
    h = hashlib.sha256(b"".join(arrays))
    h.update(json.dumps(record, sort_keys=True).encode())
    return h.hexdigest()


def test_same_audit_is_bit_identical_before_and_after_other_audits(runs):
    first, first_bits, again, _ = runs
    assert record_bits(first) == first_bits  # nothing later wrote into the first result's arrays
    assert record_bits(again) == first_bits
    assert all(d.losses.size == SAMPLES for d in again.directions)


@pytest.mark.parametrize(("index", "mu"), [(2, 0.4), (3, 2.0)])
def test_kept_losses_are_the_audits_own_draws(runs, index, mu):
    # Closed-form route, Gaussian noise: L ~ N(mu^2 / 2, mu^2) under P in both directions
    # (an exact law, not the engine's own computation), for the reference (mu = 0.4) and the
    # audit with the same compiled shapes (mu = 2): a step or cache that mixed up their
    # parameters, or kept losses reordered or truncated, fail at this size; a KS p-value
    # below 1e-3 has probability 1e-3 per check for correct draws.
    for d in runs[index].directions:
        assert d.losses.size == SAMPLES
        p = scipy.stats.kstest(d.losses, "norm", args=(mu * mu / 2, mu)).pvalue
        assert p > 1e-3, (d.direction, p)
        # i.i.d. in the order kept (Monte Carlo bounds split them by position): the first and
        # the second half have the same law (two-sample KS, same failure rate).
        half = d.losses.size // 2
        assert scipy.stats.ks_2samp(d.losses[:half], d.losses[half:]).pvalue > 1e-3


def test_same_audit_is_bit_identical_in_a_fresh_process(runs):
    # This process has run other audits (and, in the suite, every test before this one).
    here = Path(__file__).resolve().parent
    code = (
        f"import sys; sys.path.insert(0, {str(here)!r}); import test_process_history as t; "
        "print(t.bits_digest(t.record_bits(t.reference_audit())))"
    )
    root = str(here.parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.split()[-1] == bits_digest(record_bits(runs[2]))
