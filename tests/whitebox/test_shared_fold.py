"""The hockey-stick fold is one program per chunk and grid size, shared by every law (counts and bits).

The loss steps of the density and closed-form routes used to fold their losses into the
running hockey-stick state inside their own program, so every law, family and release
width compiled the fold again (a quarter to 40 % of a step's compilation, BENCHMARKS.md
"Compile options and the shared fold, session 14"). The steps now return their losses and
the largest one; one program per (chunk, grid) size folds them. Same losses, same state,
bit for bit.
"""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro.distributions as dist
import pytest

import dpaudit  # noqa: F401  (64-bit floats)
from dpaudit.estimation.pld import init_hockey_stick
from dpaudit.model.densities import law_jit
from dpaudit.model.loss import closed_form_losses, density_losses, noise_shift
from dpaudit.model.noise import ICLPNoise
from dpaudit.whitebox.kernels import fold_chunk, loss_kernel

COMPILE = "/jax/core/compile/backend_compile_duration"


def _iclp(k: int, scale=1.0):
    lam = jnp.arange(1, k + 1.0) ** -2.0
    h = 0.4 * jnp.arange(1, k + 1.0) ** -1.5
    return ICLPNoise(lam, scale, loc=h), ICLPNoise(lam, scale)


def _normal(k: int):
    loc = 0.3 * jnp.arange(1, k + 1.0) ** -1.0
    scale = 0.5 + jnp.arange(k) / k
    return dist.Normal(loc, scale).to_event(1), dist.Normal(0.0 * loc, scale).to_event(1)


@partial(law_jit, static_argnames=("n",))
def _fused_density(state, key, p, q, epsilons, n_valid, *, n):
    return fold_chunk(state, density_losses(key, p, q, n), epsilons, n_valid)


@partial(jax.jit, static_argnames=("n", "family"))
def _fused_closed_form(state, key, h, lam, sigma, singular, epsilons, n_valid, *, n, family):
    loss = closed_form_losses(key, h, lam, sigma, singular, n, family)
    return fold_chunk(state, loss, epsilons, n_valid)


def _assert_same(new, old):
    state, loss, top, index, _ = new
    old_state, old_loss, old_top, old_index = old
    np.testing.assert_array_equal(np.asarray(loss), np.asarray(old_loss))
    assert float(top) == float(old_top) and int(index) == int(old_index)
    for a, b in zip(state, old_state, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("laws", [_iclp(9), _normal(4)], ids=["iclp", "normal"])
def test_the_density_step_and_the_shared_fold_give_the_fused_programs_bits(laws):
    p, q = laws
    grid, key, n, n_valid = np.linspace(0.0, 2.0, 9), jax.random.key(5), 613, 600
    state = init_hockey_stick(9)
    for _ in range(2):  # a second chunk folds into a non-empty state
        kernel = loss_kernel("density", None, None, None, p, q, None)
        new = kernel.step(state, key, grid, n_valid, n)
        _assert_same(new, _fused_density(state, key, p, q, grid, n_valid, n=n))
        state, key = new[0], jax.random.fold_in(key, 1)


def test_the_closed_form_step_and_the_shared_fold_give_the_fused_programs_bits():
    p, q = _iclp(7, scale=0.8)
    shift = noise_shift(p, q)
    kernel = loss_kernel("closed-form", None, None, None, p, q, shift)
    grid, key, n, n_valid = np.linspace(0.0, 2.0, 9), jax.random.key(6), 613, 600
    args = (np.asarray(shift.shift), np.asarray(shift.eigenvalues))
    args += (np.float64(shift.sigma), np.asarray(shift.singular))
    state = init_hockey_stick(9)
    old = _fused_closed_form(state, key, *args, grid, n_valid, n=n, family=shift.family)
    _assert_same(kernel.step(state, key, grid, n_valid, n), old)


def test_a_second_law_of_another_route_compiles_no_fold():
    names = []

    def listener(event, duration, **kwargs):
        if event == COMPILE:
            names.append(str(kwargs.get("fun_name")))

    grid, key, n = np.linspace(0.0, 2.0, 11), jax.random.key(7), 557  # sizes no other test uses
    p, q = _iclp(5)
    p2, q2 = _iclp(8, scale=1.3)  # another width, the closed form
    density = loss_kernel("density", None, None, None, p, q, None)
    closed = loss_kernel("closed-form", None, None, None, p2, q2, noise_shift(p2, q2))
    state = init_hockey_stick(11)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        density.step(state, key, grid, n, n)
        first = list(names)
        names.clear()
        closed.step(state, key, grid, n, n)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert first.count("jit(_update)") == 1
    assert names == ["jit(_closed_form_step)"]  # and no fold of its own
