"""The BMR tree release's programs: one per shape in a process, the same in every process.

Counted, not timed. The tree release (``AncestorLaplace``) is in every BMR / ECDF / ROC audit.
Its draws took the law itself as a ``jit`` argument, so the law's fields entered the program
in numpyro's field order, which follows the process's string hash seed: each new process
lowered a permuted program and a filled persistent compilation cache missed every loss
kernel that draws a tree release (a warm ``make audit`` recompiled them all). Its density
(belief propagation over the tree) was traced inline into every program that evaluates it,
once per site, per direction and per loss program.
"""

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.model.noise import linear_laplace
from dpaudit.model.noise.linear_laplace import AncestorLaplace


def _two_sites(key, loc, scale):
    """A release of two tree sites of one shape, drawn and evaluated (as a loss kernel does)."""
    first = AncestorLaplace(loc, depth=3, scale=scale, count_scale=50.0)
    second = AncestorLaplace(loc[::-1], depth=3, scale=2.0 * scale, count_scale=50.0)
    x, y = first.sample(key, (5,)), second.sample(key, (5,))
    return first.log_prob(x) + second.log_prob(y)


def _lowered_text() -> str:
    loc = jnp.linspace(0.1, 0.9, 7)
    return jax.jit(_two_sites).lower(jax.random.key(0), loc, 4.0).as_text()


def test_a_tree_release_program_does_not_depend_on_numpyro_field_order(monkeypatch):
    jax.clear_caches()  # lower from scratch, as a new process does
    first = _lowered_text()
    fields = AncestorLaplace.gather_pytree_data_fields()
    assert len(fields) > 1  # there is an order to permute
    monkeypatch.setattr(
        AncestorLaplace,
        "gather_pytree_data_fields",
        classmethod(lambda cls: tuple(reversed(fields))),
    )
    jax.clear_caches()
    assert _lowered_text() == first, "a tree release's program follows numpyro's field order"


def test_a_tree_density_is_traced_once_per_shape_across_sites_and_programs(monkeypatch):
    # the belief propagation of one tree release, run each time JAX traces it
    calls, name = [0], "_ancestor_log_density"
    density = getattr(linear_laplace, name)

    def counted(*args, **kwargs):
        calls[0] += 1
        return density(*args, **kwargs)

    monkeypatch.setattr(linear_laplace, name, counted)
    jax.clear_caches()
    key, loc = jax.random.key(1), jnp.linspace(0.1, 0.9, 7)
    first = jax.jit(_two_sites)(key, loc, 4.0)
    assert calls[0] == 1, f"two sites of one shape traced the tree density {calls[0]} times"
    # another program (another function, other law parameters), the same shape: no trace
    other = jax.jit(lambda k, m, b: 2.0 * _two_sites(k, m, b))(key, loc + 0.01, 3.0)
    assert calls[0] == 1, f"a second program traced the tree density again ({calls[0]})"
    assert np.all(np.isfinite(np.asarray(first))) and np.all(np.isfinite(np.asarray(other)))
