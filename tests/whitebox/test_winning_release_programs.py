"""The release with the largest loss comes out of the loss step itself (counts, not seconds).

A white-box audit certifies its largest sampled loss at the release that produced it. That
release used to be regenerated after the run by a second program per chunk shape, which
drew the whole chunk again only to index one row: `closed_form_draws` for the closed form
and `_joint_draws` for the density route, 56 of the programs a cold `make audit` compiled
(about 16 % of its compilation seconds, BENCHMARKS.md "Cold audit programs and memory,
session 13"). The step now returns the draw of its largest loss beside the losses: the
same draws, no second program.
"""

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpaudit  # noqa: F401  (64-bit floats)
from dpaudit.cli.main import prepare, run_audit
from dpaudit.estimation.pld import init_hockey_stick
from dpaudit.model.loss import noise_shift
from dpaudit.model.noise import ICLPNoise
from dpaudit.whitebox.kernels import loss_kernel

ROOT = Path(__file__).resolve().parents[2]
REGENERATORS = {"jit(closed_form_draws)", "jit(_joint_draws)", "jit(_density_draws_jit)"}


def _compiled_names():
    names = []

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            names.append(str(kwargs.get("fun_name")))

    return names, listener


def _laws(k: int):
    lam = jnp.arange(1, k + 1.0) ** -2.0
    h = 0.4 * jnp.arange(1, k + 1.0) ** -1.5
    return ICLPNoise(lam, 1.0, loc=h), ICLPNoise(lam, 1.0)


@pytest.mark.parametrize("route", ["closed-form", "density"])
def test_the_step_returns_the_release_of_its_largest_loss(route):
    p, q = _laws(5)
    shift = noise_shift(p, q) if route == "closed-form" else None
    kernel = loss_kernel(route, None, None, None, p, q, shift)
    key, n, n_valid = jax.random.key(11), 300, 250
    grid = np.linspace(0.0, 2.0, 7)
    _, loss, top, index, draw = kernel.step(init_hockey_stick(7), key, grid, n_valid, n)
    loss = np.asarray(loss)
    assert int(index) == int(np.argmax(loss[:n_valid])) and float(top) == loss[:n_valid].max()
    # bit for bit the release the old regenerating program drew
    if route == "closed-form":
        assert draw is None  # its draws stay fused in the step; release() draws it
    else:
        np.testing.assert_array_equal(np.asarray(draw), kernel.release(key, n, int(index)))


def test_a_whole_audit_compiles_no_program_to_regenerate_a_release():
    names, listener = _compiled_names()
    items = prepare([ROOT / "audits" / "faulty" / "truncated-laplace-support.toml"], samples=500)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        result = run_audit(items[0])
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert names, "the listener sees JAX's compilations at all"
    assert not REGENERATORS & set(names), f"regenerating programs compiled: {names}"
    assert result.route == "density"
