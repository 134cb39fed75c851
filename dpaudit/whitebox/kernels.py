r"""Loss kernels: stream a chunk of privacy losses into the hockey-stick state, per route.

A :class:`LossKernel` is ``(init, step, release)`` for one direction:
``init(G)`` is an empty :class:`~dpaudit.estimation.pld.HockeyStickState`;
``step(state, key, epsilons, n_valid, n)`` draws ``n`` releases with ``key``,
evaluates their losses, folds the first ``n_valid`` into the state and, on the
density and model routes, returns the release of the largest loss beside them (jitted:
one compilation per shape; no second program per shape draws the chunk again);
``release(key, n, index)`` regenerates release ``index`` of the chunk drawn with
``key`` (the closed form's largest loss, whose draws stay fused in its step, and a NaN
loss's release to diagnose it).

Routes (see :mod:`dpaudit.model.loss`): ``"closed-form"`` (the Radon–Nikodym form
in noise coordinates), ``"density"`` (the two ``log_prob``), ``"model"``
(numpyro ``log_density`` of the model; not jitted, models may run numpy).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.distributions import Distribution

from dpaudit.estimation.pld import HockeyStickState, init_hockey_stick, update_hockey_stick
from dpaudit.model.densities import (
    combine_log_probs,
    law_jit,
    model_log_prob,
    traced_or_closed,
)
from dpaudit.model.loss import (
    closed_form_draws,
    closed_form_losses,
    density_losses,
    loss_at_releases,
)
from dpaudit.model.shift import NoiseShift
from dpaudit.model.sites import JointRelease
from dpaudit.whitebox.plan import density_batch_size

__all__ = ["LossKernel", "batched_density_losses", "fold_chunk", "loss_kernel"]


class LossKernel(NamedTuple):
    """The three functions that run one direction of an audit with one route.

    Attributes:
        route: ``"closed-form"``, ``"density"`` or ``"model"``.
        dist_p: the release law the releases are drawn from.
        dist_q: the other release law.
        init: ``init(G) -> HockeyStickState`` for a grid of ``G`` epsilons.
        step: ``step(state, key, epsilons, n_valid, n) -> (state, losses, top, index,
            draw)``: the new state, the chunk's ``n`` losses, its largest valid loss, where,
            and the release there (``None`` for the closed form: ``release`` draws it).
        release: ``release(key, n, index) -> numpy release`` of a chunk drawn with ``key``.
    """

    route: str
    dist_p: Distribution
    dist_q: Distribution
    init: Callable[[int], HockeyStickState]
    step: Callable
    release: Callable


def fold_chunk(state: HockeyStickState, loss, epsilons, n_valid):
    """Fold the first ``n_valid`` losses of a chunk into the state (traceable).

    The draws are not returned (so the hot loop never writes them to memory); the
    winning chunk is regenerated from its key at the end.

    Args:
        state: the running hockey-stick state.
        loss: ``(n,)`` losses of the chunk.
        epsilons: ``(G,)`` the state's grid.
        n_valid: how many leading losses count (the last chunk may be partial).

    Returns:
        ``(state, loss, top, index)``: the new state, the losses, the largest valid
        non-NaN loss and its index.
    """
    mask = jnp.arange(loss.shape[0]) < n_valid
    state = update_hockey_stick(state, loss, epsilons, mask)
    masked = jnp.where(mask & ~jnp.isnan(loss), loss, -jnp.inf)
    best = jnp.argmax(masked)
    return state, loss, masked[best], best


def _largest(loss, n_valid):
    """The largest valid non-NaN loss of a chunk and its index (:func:`fold_chunk`'s)."""
    mask = jnp.arange(loss.shape[0]) < n_valid
    masked = jnp.where(mask & ~jnp.isnan(loss), loss, -jnp.inf)
    best = jnp.argmax(masked)
    return masked[best], best


def _keeping(loss, draws, n_valid):
    """The losses, the largest valid one, where, and its draw (row ``index`` of ``draws``).

    The density route holds its draws anyway (both log densities read them): returning one
    row of them changes neither the losses' bits nor the step's time (measured,
    BENCHMARKS.md), and saves a second program per shape that drew the chunk again.
    """
    top, index = _largest(loss, n_valid)
    return loss, top, index, draws[index]


@jax.jit
def _update(state: HockeyStickState, loss, epsilons, n_valid) -> HockeyStickState:
    """:func:`fold_chunk`'s state update as a program of its own: one per chunk and grid size.

    The loss steps return their losses anyway; folding them here instead of inside each
    step leaves the hockey-stick moments (a quarter to 40 % of a step's compilation) to one
    program that every law, family and spec with the same chunk and grid sizes shares.
    """
    mask = jnp.arange(loss.shape[0]) < n_valid
    return update_hockey_stick(state, loss, epsilons, mask)


# Module-level jits: their caches outlive an audit, so a second audit with the same
# shapes (and pytree-safe distributions) compiles nothing.
_fold_jit = jax.jit(fold_chunk)
_draws_jit = jax.jit(closed_form_draws, static_argnames=("n", "family"))


@partial(jax.jit, static_argnames=("n", "family"))
def _closed_form_step(key, h, eigenvalues, sigma, singular, n_valid, *, n, family):
    loss = closed_form_losses(key, h, eigenvalues, sigma, singular, n, family)
    return (loss, *_largest(loss, n_valid))


def batched_density_losses(key, dist_p, dist_q, n: int, batch: int) -> jax.Array:
    """:func:`~dpaudit.model.loss.density_losses` with the densities evaluated ``batch`` at a time.

    The ``n`` releases are drawn at once (as in ``density_losses``: same key, same
    draws); their two log-densities are then evaluated over ``ceil(n / batch)``
    sequential batches (``lax.map``), so the density's intermediates never exceed one
    batch. With ``batch >= n`` this is ``density_losses`` itself.

    Args:
        key: a JAX random key.
        dist_p: the release law the releases are drawn from.
        dist_q: the other release law.
        n: number of draws.
        batch: releases per density evaluation (:func:`density_batch_size`).

    Returns:
        ``(n,)`` losses ``log p(x) - log q(x)``.
    """
    if batch >= n:
        return density_losses(key, dist_p, dist_q, n)
    x = dist_p.sample(key, (n,))
    n_batches = -(-n // batch)
    pad = n_batches * batch - n  # < batch <= n: padded with copies of the first draws
    padded = jnp.concatenate([x, x[:pad]]) if pad else x
    batches = padded.reshape((n_batches, batch, *x.shape[1:]))

    def losses(xs):
        return loss_at_releases(dist_p, dist_q, xs)

    return jax.lax.map(losses, batches).reshape(-1)[:n]


def _density_losses_and_draws(key, dist_p, dist_q, n: int, batch: int):
    """:func:`batched_density_losses` and the ``n`` draws it evaluated (traceable)."""
    x = dist_p.sample(key, (n,))
    if batch >= n:  # density_losses, on the same draws
        return loss_at_releases(dist_p, dist_q, x), x
    return batched_density_losses(key, dist_p, dist_q, n, batch), x


@partial(law_jit, static_argnames=("n", "batch"))
def _density_step(key, dist_p, dist_q, n_valid, *, n, batch):
    losses, x = _density_losses_and_draws(key, dist_p, dist_q, n, batch)
    return _keeping(losses, x, n_valid)


def _closed_form_kernel(shift: NoiseShift, dist_p, dist_q) -> LossKernel:
    # numpy arguments: the jitted step takes them as JAX arrays would be (one program),
    # while jnp.asarray would compile a transfer program per shape in a fresh process
    h, eigenvalues = np.asarray(shift.shift), np.asarray(shift.eigenvalues)
    sigma, singular = np.asarray(shift.sigma, dtype=np.float64), np.asarray(shift.singular)

    def step(state, key, epsilons, n_valid, n):
        # no draw: returning one would change how XLA fuses the draws into the losses (their
        # last bits) or draw the chunk twice; the release is regenerated at the end
        loss, top, index = _closed_form_step(
            key, h, eigenvalues, sigma, singular, n_valid, n=n, family=shift.family
        )
        return _update(state, loss, epsilons, n_valid), loss, top, index, None

    def release(key, n: int, index: int) -> np.ndarray:
        z = _draws_jit(key, eigenvalues, sigma, n=n, family=shift.family)
        return shift.release(np.asarray(z)[index])  # indexed on the host: no program

    return LossKernel("closed-form", dist_p, dist_q, init_hockey_stick, step, release)


@partial(law_jit, static_argnames=("n",))
def _joint_draws(key, dist_p, n):
    return dist_p.sample(key, (n,))


def _sample_release(dist_p):
    def release(key, n: int, index: int) -> np.ndarray:
        # one jitted program, not one per operation of the sampler (indexed on the host);
        # closed over, a joint release (the model run forward per draw) is jitted per call
        # and any other law sampled op by op (programs kept from one audit to the next)
        def closed_over():
            if isinstance(dist_p, JointRelease):
                return jax.jit(lambda k: dist_p.sample(k, (n,)))(key)
            return dist_p.sample(key, (n,))

        draws = traced_or_closed((dist_p,), lambda: _joint_draws(key, dist_p, n=n), closed_over)
        return np.asarray(draws)[index]

    return release


def _density_kernel(dist_p, dist_q) -> LossKernel:
    def batch_of(n):  # releases per density evaluation: bounds its memory, not the draws
        return density_batch_size(dist_p, dist_q, n)

    closed = {}  # one jit per chunk size for distributions that cannot be jit arguments

    def closed_step(n):
        if n not in closed:
            closed.clear()

            batch = density_batch_size(dist_p, dist_q, n)

            @jax.jit
            def step(key, n_valid):
                losses, x = _density_losses_and_draws(key, dist_p, dist_q, n, batch)
                return _keeping(losses, x, n_valid)

            closed[n] = step
        return closed[n]

    def step(state, key, epsilons, n_valid, n):
        loss, top, index, draw = traced_or_closed(
            (dist_p, dist_q),
            lambda: _density_step(key, dist_p, dist_q, n_valid, n=n, batch=batch_of(n)),
            lambda: closed_step(n)(key, n_valid),
        )
        return _update(state, loss, epsilons, n_valid), loss, top, index, draw

    return LossKernel("density", dist_p, dist_q, init_hockey_stick, step, _sample_release(dist_p))


def _model_kernel(mechanism, data_p, data_q, dist_p, dist_q) -> LossKernel:
    def step(state, key, epsilons, n_valid, n):
        x = dist_p.sample(key, (n,))
        loss = combine_log_probs(
            model_log_prob(mechanism, data_p, x), model_log_prob(mechanism, data_q, x)
        )
        state, loss, top, index = _fold_jit(state, loss, epsilons, n_valid)
        return state, loss, top, index, np.asarray(x)[int(index)]  # on the host: no program

    return LossKernel("model", dist_p, dist_q, init_hockey_stick, step, _sample_release(dist_p))


def loss_kernel(route: str, mechanism, data_p, data_q, dist_p, dist_q, shift) -> LossKernel:
    """The loss kernel of one direction: releases ``x ~ P``, losses ``log p(x) - log q(x)``.

    Args:
        route: ``"closed-form"``, ``"density"`` or ``"model"``.
        mechanism: the mechanism (the model route evaluates its model).
        data_p: the dataset of ``P``.
        data_q: the dataset of ``Q``.
        dist_p: the release law ``P``.
        dist_q: the release law ``Q``.
        shift: the noise structure ``P -> Q`` (needed by the closed form), or ``None``.

    Returns:
        A :class:`LossKernel`.
    """
    if route == "closed-form":
        return _closed_form_kernel(shift, dist_p, dist_q)
    if route == "density":
        return _density_kernel(dist_p, dist_q)
    return _model_kernel(mechanism, data_p, data_q, dist_p, dist_q)
