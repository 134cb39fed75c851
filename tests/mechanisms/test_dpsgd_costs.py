"""DP-SGD and training audits: what their fixed costs are pinned by (counts, never seconds).

- The trajectory draw enters ``jit`` with the law's fields in one order whatever numpyro's
  (per-process, string-hash dependent) order is, so a filled persistent compilation cache
  hits its programs in a new process.
- The accounting of one configuration is computed once per process (builders' claims,
  known flaws and the audit's exact accounting ask for the same curves).
- The algorithm's constants (``q``, ``clip``, noise, learning rate, ``q n``) are arrays in the
  trajectory law: an audit of another configuration of the same shape traces, lowers and
  compiles nothing, and the shared programs round exactly as the constant ones did.
- The batch's clipped gradients are summed as matrix products: the programs drawing and
  evaluating trajectories hold no per-record gradient array per trajectory.
- ``dpaudit validate`` of the Opacus specs imports neither PyTorch nor Opacus (the PRV
  profile is computed when the audit reads it).
"""

from __future__ import annotations

import math
import os
import pathlib
import subprocess
import sys
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_counts import count_compilations, count_programs
from jax import lax
from numpyro import handlers

import dpaudit
import mechanisms.dpsgd as dpsgd
from mechanisms.dpsgd import DPSGDTrajectory, breast_cancer_records

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _small_law():
    mech = dpaudit.build("dpsgd-logistic", steps=2, q=0.5, n=3)
    return mech.release_distribution(breast_cancer_records(3))


def _draw_jaxpr(law) -> str:
    return str(jax.make_jaxpr(lambda key: law.sample(key, (2,)))(jax.random.key(0)))


def test_the_trajectory_program_does_not_follow_numpyro_field_order(monkeypatch):
    # numpyro orders a law's fields by a Python set (per-process string hashing); the
    # program (hence its persistent-cache key) must be the same in every order
    law = _small_law()
    before = _draw_jaxpr(law)
    gather = DPSGDTrajectory.gather_pytree_data_fields.__func__
    names = gather(DPSGDTrajectory)
    for order in (tuple(reversed(names)), tuple(sorted(names, key=len))):
        monkeypatch.setattr(
            DPSGDTrajectory, "gather_pytree_data_fields", classmethod(lambda cls, o=order: o)
        )
        assert _draw_jaxpr(law) == before, f"the draw program changed with field order {order}"


def test_accounting_is_computed_once_per_configuration(monkeypatch):
    calls = []
    real = dpsgd.subsampled_accounting

    def counted(*args, **kwargs):
        calls.append(args[1:3])
        return real(*args, **kwargs)

    monkeypatch.setattr(dpsgd, "subsampled_accounting", counted)
    params = {"steps": 3, "q": 0.2, "n": 10}  # a configuration no other test builds
    first = dpaudit.build("faulty/dpsgd-ignores-steps", **params)
    assert len(calls) == 2  # the true T-step curve and the claimed one-step curve
    again = dpaudit.build("faulty/dpsgd-ignores-steps", **params)
    assert len(calls) == 2, "a second build of one configuration recomputed its accounting"
    assert again.claim.epsilon == first.claim.epsilon
    assert again.known_flaw.true_epsilon == first.known_flaw.true_epsilon
    # the audit's exact accounting of the pair: computed once, then shared
    x, y = breast_cancer_records(10)
    cx, cy = dpsgd.canary()
    d, d_prime = (x, y), (np.vstack([x, cx]), np.append(y, cy))
    law, law_prime = first.release_distribution(d), first.release_distribution(d_prime)
    accounting = law.privacy_accounting(law_prime)
    assert len(calls) == 3
    assert law_prime.privacy_accounting(law) is accounting and len(calls) == 3


_VALIDATE = """
import sys
from dpaudit.cli.main import main
try:
    main(["validate", *sys.argv[1:]])
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print(sorted(m for m in ("torch", "opacus", "jax_privacy", "dp_accounting") if m in sys.modules))
"""


def _validate_imports_no_library(specs: list) -> None:
    """``dpaudit validate`` of ``specs`` in a fresh process loads no training library."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DPAUDIT_CACHE": "0"}
    out = subprocess.run(
        [sys.executable, "-c", _VALIDATE, *specs],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]


def test_validating_the_opacus_specs_imports_no_torch():
    pytest.importorskip("opacus", reason="the 'training' extra is not installed")
    specs = [
        str(ROOT / "audits" / "training" / f"opacus-{v}.toml") for v in ("poisson", "fixed-batches")
    ]
    _validate_imports_no_library(specs)


def test_validating_the_jax_privacy_specs_imports_no_jax_privacy():
    """Building the jax-privacy target imports neither jax-privacy nor dp_accounting (0.9 s CPU
    of ``validate audits/``); a training run imports them."""
    pytest.importorskip("jax_privacy", reason="the 'training' extra is not installed")
    specs = [
        str(ROOT / "audits" / "training" / f"jax-privacy-{v}.toml")
        for v in ("dpsgd", "noise-without-clip")
    ]
    _validate_imports_no_library(specs)


def test_the_lazy_opacus_profile_describes_and_reads_opacus_accountant():
    pytest.importorskip("opacus", reason="the 'training' extra is not installed")
    sys.path.insert(0, str(ROOT / "audits" / "training"))
    try:
        import opacus_dpsgd
    finally:
        sys.path.remove(str(ROOT / "audits" / "training"))
    target = opacus_dpsgd.target("poisson")
    profile = target.profile
    assert callable(profile.description)  # nothing computed while building
    assert profile.describe() == "Opacus PRV profile (epsilon 10.88 at delta 1e-05)"
    eps = opacus_dpsgd.accountant_epsilon(22, 2, 20, 0.6)
    assert profile.delta_of_epsilon(np.array([eps]))[0] <= 1e-5
    assert profile.delta_of_epsilon(np.array([eps - 0.05]))[0] > 1e-5


def test_a_second_audit_builds_no_program_for_one_configuration_or_another_of_its_shape():
    # one shape (T, n), three audits: the first builds the programs; the same configuration
    # again (another seed) compiles nothing; the faulty pair with other noise, q, clip and
    # learning rate builds nothing either: the algorithm's constants are arrays in the
    # trajectory law, so its programs are shared (one first audit pays for all three checks)
    shape = {"steps": 2, "n": 5}  # a shape no other test builds (the first audit traces)
    x, y = breast_cancer_records(5)
    options = {"samples": 256, "progress": False}

    def audit(name, clip, seed=0, **params):
        cx, cy = dpsgd.canary(clip)
        d, d_prime = (x, y), (np.vstack([x, cx]), np.append(y, cy))
        mech = dpaudit.build(name, **shape, clip=clip, **params)
        return dpaudit.audit(mech, d, d_prime, seed=seed, **options)

    with count_programs() as counts:
        first = audit("dpsgd-logistic", 1.0, q=0.5)
    assert counts["traces"] > 0  # the listener sees JAX's events at all
    with count_compilations() as count:
        again = audit("dpsgd-logistic", 1.0, seed=1, q=0.5)
    assert count[0] == 0, f"{count[0]} compilation(s) in a second DP-SGD audit of one shape"
    assert again.verdict == first.verdict == "pass"
    for name, clip, params in (
        ("faulty/dpsgd-ignores-steps", 1.0, {"q": 0.5, "noise_multiplier": 0.8}),
        (
            "faulty/dpsgd-noise-batch",
            1.5,
            {"q": 0.4, "noise_multiplier": 0.9, "learning_rate": 0.04},
        ),
    ):
        with count_programs() as counts:
            other = audit(name, clip, **params)
        assert dict(counts) == {}, f"{name}: another configuration built programs: {dict(counts)}"
    assert other.verdict == "violation"


def _constant_programs(consts, event_shape, n):
    """The trajectory draw and density programs as built before the constants became
    fields: the law's arrays as program arguments, ``consts`` closed over as Python floats
    (XLA folds them), the original formulas. Returns ``draw(arrays, key)`` (``n`` draws) and
    ``density(arrays, draws)``, each one ``jax.jit`` program (built once, used for both
    data sets of the pair: their laws have one shape)."""
    q, clip, noise_std = consts["q"], consts["clip"], consts["noise_std"]
    lr, denominator = consts["learning_rate"], consts["denominator"]
    steps, dim = event_shape

    def means(a, theta, mask):
        g = dpsgd.clipped_gradient_sum(theta, a["x"], a["y"], mask, clip)
        c = dpsgd.clipped_gradients(theta, a["target_x"], a["target_y"], clip)
        return g, c * a["target_in"]

    def sample_one(a, k):
        k_noise, k_in = jax.random.split(k)
        noise = noise_std * jax.random.normal(k_noise, (steps, dim))
        included = jax.random.bernoulli(k_in, q, (steps,)).astype(jnp.float64)

        def step(theta, inputs):
            mask, z, b = inputs
            g, c = means(a, theta, mask)
            release = g + b * c + z
            return theta - lr * release / denominator, release

        return lax.scan(step, jnp.zeros(dim), (a["masks"], noise, included))[1]

    def log_prob_one(a, releases):
        inv = 0.5 / noise_std**2
        const = -0.5 * dim * math.log(2 * math.pi * noise_std**2)
        with_target = jnp.array([math.log1p(-q), math.log(q)])

        def step(theta, inputs):
            mask, release = inputs
            g, c = means(a, theta, mask)
            resid = release - g
            out = -inv * jnp.sum(resid * resid)
            inside = -inv * jnp.sum((resid - c) ** 2)
            mixed = jax.nn.logsumexp(with_target + jnp.stack([out, inside]))
            return theta - lr * release / denominator, jnp.where(a["target_in"] > 0, mixed, out)

        terms = lax.scan(step, jnp.zeros(dim), (a["masks"], releases))[1]
        return jnp.sum(terms) + steps * const

    # two programs, as the law's sample and log_prob are (one program fuses differently)
    draw = jax.jit(lambda a, k: jax.vmap(partial(sample_one, a))(jax.random.split(k, n)))
    return draw, jax.jit(lambda a, v: jax.vmap(partial(log_prob_one, a))(v))


def test_the_shared_programs_round_as_the_constant_ones():
    # the constants are program arguments now; the scalars computed from them on the host
    # must be the ones XLA folded when they were constants: draws and densities bit for bit
    params = {"steps": 3, "q": 0.3, "n": 7, "clip": 1.3, "noise_multiplier": 0.7}
    x, y = breast_cancer_records(7)
    cx, cy = dpsgd.canary(1.3)
    model = dpaudit.build("faulty/dpsgd-noise-batch", **params, learning_rate=0.07).model
    programs = {}
    for data in ((x, y), (np.vstack([x, cx]), np.append(y, cy))):
        law = handlers.trace(handlers.seed(model, 0)).get_trace(data)["release"]["fn"]
        consts = {k: float(getattr(law, k)) for k in dpsgd.CONFIGURATION}
        if not programs:
            programs.update(consts=consts, shape=law.event_shape)
            programs["draw"], programs["density"] = _constant_programs(consts, law.event_shape, 64)
        assert (consts, law.event_shape) == (programs["consts"], programs["shape"])
        arrays = {
            k: getattr(law, k) for k in ("x", "y", "masks", "target_x", "target_y", "target_in")
        }
        key = jax.random.key(5)
        draws = law.sample(key, (64,))
        expected_draws = programs["draw"](arrays, key)
        expected_densities = programs["density"](arrays, expected_draws)
        np.testing.assert_array_equal(np.asarray(draws), np.asarray(expected_draws))
        np.testing.assert_array_equal(
            np.asarray(law.log_prob(draws)), np.asarray(expected_densities)
        )


def _largest_intermediate(jaxpr) -> int:
    """The most elements of any value computed in ``jaxpr`` or its sub-jaxprs (scan bodies)."""
    largest = 0
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            largest = max(largest, math.prod(getattr(var.aval, "shape", ())))
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", None)
            if inner is not None:
                largest = max(largest, _largest_intermediate(getattr(inner, "jaxpr", inner)))
    return largest


def test_trajectories_hold_no_per_record_gradients_per_trajectory():
    # vmapped over B trajectories, per-record clipped gradients are a (B, m, d) array per
    # step (what made the draws and densities 4-6x slower); the matrix-product sum holds
    # (B, m) and (B, d) values, the (B, T, d) trajectories and the law's (m, d) features
    mech = dpaudit.build("dpsgd-logistic", steps=3, q=0.3, n=40)
    x, y = breast_cancer_records(40)
    law = handlers.trace(handlers.seed(mech.model, 0)).get_trace((x, y))["release"]["fn"]
    batch, (m, d) = 64, law.x.shape
    releases = jnp.zeros((batch, 3, d))
    programs = {
        "log_prob": jax.make_jaxpr(lambda v: law._log_prob_all(v))(releases),
        "sample": jax.make_jaxpr(lambda k: jax.vmap(law._sample_one)(k))(
            jax.random.split(jax.random.key(0), batch)
        ),
    }
    for name, closed in programs.items():
        largest = _largest_intermediate(closed.jaxpr)
        assert largest < batch * m * d // 4, f"{name}: an intermediate of {largest} elements"
