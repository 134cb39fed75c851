"""The model-guided statistic: the privacy loss of a reference model of the intended mechanism.

By Neyman–Pearson the most powerful test of ``P_D`` against ``P_D'`` thresholds
``L(x) = log p_D(x) - log p_D'(x)``. With a reference :class:`~dpaudit.Mechanism`
(the mechanism as intended, declared as a numpyro model) the audit uses its
``L`` as the statistic: optimal when the implementation matches the model, and
still a valid test when it does not (validity only needs the statistic fixed
before certification).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.blackbox.statistics.resolution import snap
from dpaudit.model.densities import combine_log_probs, law_jit, site_log_prob, traced_or_closed
from dpaudit.model.mechanism import Mechanism

__all__ = ["model_statistic"]

#: Releases per block of a reference model's log density: bounds the memory of heavy log
#: densities (e.g. sparse-vector laws); a chunk's blocks run in one jitted ``lax.map``.
_SCORE_CHUNK = 2048


def _loss(dist_p, dist_q, x):
    return combine_log_probs(site_log_prob(dist_p, x), site_log_prob(dist_q, x))


def _blocked_loss(dist_p, dist_q, blocks):
    """The losses of ``(m, _SCORE_CHUNK, ...)`` releases, one block at a time (``lax.map``:
    one dispatch per chunk, the memory of one block)."""
    return jax.lax.map(lambda x: _loss(dist_p, dist_q, x), blocks).reshape(-1)


_loss_jit = law_jit(_blocked_loss)


def model_statistic(reference: Mechanism, data, data_prime) -> tuple[Callable, str]:
    """``s(x) = log p_D(x) - log p_D'(x)`` of the reference model, jitted per chunk shape.

    Args:
        reference: the model of the intended mechanism.
        data, data_prime: the neighbouring pair ``(D, D')``.

    Returns:
        ``(score, name)``: ``score(releases (n, ...)) -> (n,)`` snapped privacy losses
        (0 outside both supports, where the reference says nothing), and the
        statistic's name for reports.
    """
    dist_p = reference.release_distribution(data)
    dist_q = reference.release_distribution(data_prime)
    event = tuple(dist_p.batch_shape + dist_p.event_shape)

    @jax.jit
    def closed(x):  # for laws that cannot be jit arguments: compiled per audit and shape
        return _blocked_loss(dist_p, dist_q, x)

    def as_arguments(x):
        return _loss_jit(dist_p, dist_q, x)

    chosen: list = []  # the way that worked on the first call, kept for every later chunk

    def loss(x):
        # pytree-safe laws are arguments of one module-level jit: compiled once per shape,
        # whatever the audit, pair or reference object (a second audit compiles nothing)
        if not chosen:
            out = traced_or_closed((dist_p, dist_q), lambda: as_arguments(x), lambda: None)
            chosen.append(closed if out is None else as_arguments)
            return closed(x) if out is None else out
        return chosen[0](x)

    def score(x):
        x = np.asarray(x)
        size = int(np.prod(x.shape[1:], dtype=np.int64))
        if size != int(np.prod(event, dtype=np.int64)):
            raise ValueError(
                f"the reference model {reference.name!r} releases shape {event} but the sampler "
                f"returns {x.shape[1:]}; give a reference of the same release, or use "
                "statistic='logistic'/'mlp'."
            )
        n = x.shape[0]
        x = np.reshape(x, (n, *event))
        pad = -n % _SCORE_CHUNK  # padded with copies of the first releases (valid releases)
        x = np.concatenate([x, x[np.arange(pad) % n]]) if pad else x
        s = np.asarray(loss(jnp.asarray(x.reshape(-1, _SCORE_CHUNK, *event))))[:n]
        # Outside both supports the reference says nothing: such releases get score 0.
        return snap(np.where(np.isnan(s), 0.0, s))

    return score, f"privacy loss of the reference model {reference.name!r}"
