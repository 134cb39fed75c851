"""DP-SGD and training audits: what their fixed costs are pinned by (counts, never seconds).

- The trajectory draw enters ``jit`` with the law's fields in one order whatever numpyro's
  (per-process, string-hash dependent) order is, so a filled persistent compilation cache
  hits its programs in a new process.
- The accounting of one configuration is computed once per process (builders' claims,
  known flaws and the audit's exact accounting ask for the same curves).
- ``dpaudit validate`` of the Opacus specs imports neither PyTorch nor Opacus (the PRV
  profile is computed when the audit reads it).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import jax
import numpy as np
import pytest
from compile_counts import count_compilations

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
print(sorted(m for m in ("torch", "opacus") if m in sys.modules))
"""


def test_validating_the_opacus_specs_imports_no_torch():
    pytest.importorskip("opacus", reason="the 'training' extra is not installed")
    specs = [
        str(ROOT / "audits" / "training" / f"opacus-{v}.toml") for v in ("poisson", "fixed-batches")
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DPAUDIT_CACHE": "0"}
    out = subprocess.run(
        [sys.executable, "-c", _VALIDATE, *specs],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=600,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout[-500:]


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


def test_a_second_audit_of_one_configuration_compiles_nothing():
    params = {"steps": 2, "q": 0.5, "n": 3}
    x, y = breast_cancer_records(3)
    cx, cy = dpsgd.canary()
    d, d_prime = (x, y), (np.vstack([x, cx]), np.append(y, cy))
    options = {"samples": 256, "progress": False}
    first = dpaudit.audit(dpaudit.build("dpsgd-logistic", **params), d, d_prime, **options)
    with count_compilations() as count:
        second = dpaudit.audit(
            dpaudit.build("dpsgd-logistic", **params), d, d_prime, seed=1, **options
        )
    assert count[0] == 0, f"{count[0]} compilation(s) in a second DP-SGD audit of one shape"
    assert first.verdict == second.verdict
