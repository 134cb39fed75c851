"""Preparing specs for an audit draws one release of D and D' per white-box model: one
compiled program per model (and data shape), not a program per operation."""

from pathlib import Path

import jax
import pytest
from compile_counts import count_compilations

from dpaudit.cli.main import prepare

CATALOGUE = Path(__file__).resolve().parents[2] / "audits" / "catalogue"

#: a scalar Laplace mean, a Gaussian mean (zCDP claim), an ICLP mean (joint release of
#: coefficients), a composition of Gaussian queries: each D and D' of one shape
SPECS = ("laplace-mean", "gaussian-mean-zcdp", "iclp-qr-mean", "composed-gaussian-queries")


@pytest.mark.parametrize("name", SPECS)
def test_the_pre_audit_draw_compiles_one_program_per_model(name):
    jax.clear_caches()  # op-by-op programs left by earlier tests would hide eager draws
    with count_compilations() as everything, count_compilations(["check_model_runs"]) as rest:
        (item,) = prepare([CATALOGUE / f"{name}.toml"])
    assert item.mechanism is not None
    assert {data.shape for data in item.pair} == {item.pair[0].shape}
    drawing = everything[0] - rest[0]
    assert drawing == 1, f"the pre-audit draw of {name} compiled {drawing} programs"
