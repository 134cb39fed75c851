"""A second audit of the same family and release shape builds no new program (counts).

``make audit`` runs its audits one after another in one process. With a filled persistent
compilation cache XLA compilation is skipped, but tracing a function to a jaxpr and lowering
it to StableHLO are paid again for every program the process has not built yet. The loss
steps take a law's parameters as ``jit`` arguments (never closed over), so a second audit of
a family with other parameters and the same release shape traces, lowers and compiles
nothing. Sparse-vector laws once branched in Python on their noise scales, so their density
could not be traced with the law as an argument: every SVT audit traced its whole density
again (op by op on the first one), 10 traces and 10 lowerings per repeated audit.
"""

from pathlib import Path

import jax
import pytest
from compile_counts import count_programs
from spec_variants import spec_at

from dpaudit.cli.main import prepare, run_audit

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("folder", "name", "samples"),
    [
        ("catalogue", "laplace-mean", 2000),
        ("catalogue", "gaussian-mean-classical", 2000),
        ("catalogue", "iclp-qr-mean", 2000),
        ("catalogue", "svt", 500),
        ("catalogue", "bmr-ecdf", 100),
    ],
)
def test_a_second_audit_of_the_family_traces_nothing(tmp_path, folder, name, samples):
    first, second = (
        prepare([spec_at(tmp_path, folder, name, eps)], samples=samples)[0] for eps in (1.0, 0.5)
    )
    with count_programs() as counts:
        run_audit(first)
    assert counts["traces"] > 0  # the listener sees JAX's events at all
    with count_programs() as counts:
        result = run_audit(second)
    assert dict(counts) == {}, f"{name}: a second audit built programs: {dict(counts)}"
    assert result.verdict == "pass"


@pytest.mark.parametrize(
    ("second", "verdict"),
    [
        # the same spec at another epsilon (slow: the faulty variant pins the stronger case,
        # other numbers and another builder's name, in the default suite)
        pytest.param("bmr-federated-ecdf", "pass", marks=pytest.mark.slow),
        ("faulty/bmr-federated-ecdf-noise-split", "violation"),  # a faulty variant
    ],
)
def test_a_second_multi_site_audit_lowers_and_compiles_nothing(tmp_path, second, verdict):
    # A JointRelease keeps its model as static structure; each build is a new closure
    # around the law's constants, so the closure's numbers are jit leaves (not the
    # closure itself). What remains: one trace per law of the adaptivity analysis
    # (JointRelease.adaptive, a jaxpr read structurally, never lowered).
    first = prepare([spec_at(tmp_path, "catalogue", "bmr-federated-ecdf", 1.0)], samples=100)[0]
    if second.startswith("faulty/"):
        path = ROOT / "audits" / f"{second}.toml"
    else:
        path = spec_at(tmp_path, "catalogue", second, 0.5)
    (item,) = prepare([path], samples=100)
    jax.clear_caches()  # the first audit builds its programs even after another test
    with count_programs() as counts:
        run_audit(first)
    assert counts["lowerings"] > 0  # the listener sees JAX's events at all
    with count_programs() as counts:
        result = run_audit(item)
    built = {k: v for k, v in counts.items() if k != "traces"}
    assert built == {}, f"{second}: a second multi-site audit built programs: {dict(counts)}"
    assert counts["traces"] <= 2, f"{second}: traced more than its laws' adaptivity: {counts}"
    assert result.verdict == verdict


@pytest.mark.parametrize(
    ("first", "second", "samples", "traces"),
    [
        # HosmerLemeshowSums kept its scale as static aux data (a Python float): the model
        # failed to trace with its numbers as arguments and stayed whole (8/3/3). What
        # remains: the adaptivity analysis's three structural traces (never lowered).
        ("bmr-hosmer-lemeshow", "bmr-hosmer-lemeshow-budget", 100, 3),
        # the KDE's model carries host hooks (privacy_accounting, with a keyword-only
        # default) as attributes: such a function was kept by identity (6/3/3)
        ("hrw-private-bandwidth-kde", "hrw-bandwidth-budget-ignored", 300, 1),
    ],
)
def test_a_faulty_variant_after_its_catalogue_entry_builds_nothing(first, second, samples, traces):
    # make audit's order: the catalogue entry, later its faulty variant, in one process
    correct = prepare([ROOT / "audits" / "catalogue" / f"{first}.toml"], samples=samples)[0]
    (faulty,) = prepare([ROOT / "audits" / "faulty" / f"{second}.toml"], samples=samples)
    jax.clear_caches()
    with count_programs() as counts:
        run_audit(correct)
    assert counts["lowerings"] > 0  # the listener sees JAX's events at all
    with count_programs() as counts:
        result = run_audit(faulty)
    built = {k: v for k, v in counts.items() if k != "traces"}
    assert built == {}, f"{second}: a second audit built programs: {dict(counts)}"
    assert counts["traces"] <= traces, f"{second}: traced more than its adaptivity: {counts}"
    assert result.verdict == "violation"
