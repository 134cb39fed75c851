"""Preparing specs for an audit draws one release of D and D' per white-box model: one
compiled program per model (and data shape), not a program per operation."""

from pathlib import Path

import jax
import pytest
from compile_counts import count_compilations, count_programs
from spec_variants import spec_at

from dpaudit.cli.main import prepare
from dpaudit.io.spec.resolve import clear_draw_programs

CATALOGUE = Path(__file__).resolve().parents[2] / "audits" / "catalogue"

#: a scalar Laplace mean, a Gaussian mean (zCDP claim), an ICLP mean (joint release of
#: coefficients), a composition of Gaussian queries: each D and D' of one shape
SPECS = ("laplace-mean", "gaussian-mean-zcdp", "iclp-qr-mean", "composed-gaussian-queries")


@pytest.mark.parametrize("name", SPECS)
def test_the_pre_audit_draw_compiles_one_program_per_model(name):
    jax.clear_caches()  # op-by-op programs left by earlier tests would hide eager draws
    clear_draw_programs()  # and so would a family's draw built by an earlier test
    with count_compilations() as everything, count_compilations(["check_model_runs"]) as rest:
        (item,) = prepare([CATALOGUE / f"{name}.toml"])
    assert item.mechanism is not None
    assert {data.shape for data in item.pair} == {item.pair[0].shape}
    drawing = everything[0] - rest[0]
    assert drawing == 1, f"the pre-audit draw of {name} compiled {drawing} programs"


@pytest.mark.parametrize("name", ["laplace-mean", "gaussian-mean-classical"])
def test_a_second_build_of_a_family_draws_with_the_first_ones_program(tmp_path, name):
    # the model's closed-over numbers are arguments of the draw: a second build of the
    # family (another epsilon) on data of the same shape traces, lowers and compiles
    # nothing, where each mechanism traced and lowered a draw of its own (~0.25 s warm)
    prepare([spec_at(tmp_path, "catalogue", name, 1.0)])
    with count_programs() as counts:
        (item,) = prepare([spec_at(tmp_path, "catalogue", name, 0.5)])
    assert item.mechanism.claim.epsilon == 0.5
    assert dict(counts) == {}, f"{name}: the second pre-audit draw built {dict(counts)}"
