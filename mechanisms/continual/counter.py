r"""Barczewski, Mawass & Ramon's continual counter (Thm 0.A.1, Laplace version).

Mathematics: docs/papers/bmr.md#bmr-continual-observation.

A stream ``x_1 .. x_N`` with ``x_t in [0, 1]`` is observed; after each step
the running count ``s_t = sum_{i <= t} x_i`` is released. BMR reuse the ECDF
tree: with ``L = ceil(log2 N)`` and i.i.d. node noise ``eta_(j,l) ~ Lap(b)`` on
the ``2^(L+1) - 1`` nodes of a complete binary tree over the time steps,

.. math::  \hat s_t = s_t + \sum_{l=0}^{L} \eta_{\lceil t/2^l\rceil,\,l},

every step receiving the noise of all its ``L + 1`` ancestors (the BMR ECDF
release, :class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace`, on the count
scale). Neighbouring streams differ at one step ``t_0`` by at most 1, which
moves every later running count by the same ``d``, ``|d| <= 1``: the shift is
``d 1_[t_0, N]``, a **suffix** indicator. A suffix of the leaves is explained
by at most ``ceil((L+1)/2)`` signed nodes (BMR Lemma 1), so ``b =
ceil((L+1)/2)/epsilon`` gives epsilon-DP (replace-one adjacency on the
time steps). The exact privacy loss of the pair is ``|d| min{||nu||_1 : A nu =
1_[t_0, N]} / b`` (:mod:`dpaudit.model.noise.linear_laplace`); its worst case over
``t_0`` is exactly ``ceil((L+1)/2)`` for ``N = 2^L`` (tested by a linear
programme and by the tree dynamic programme), so the calibration is tight.

The Gaussian version of the corollary (node noise ``N(0, ceil((L+1)/2) z^2)``,
``1/(2 z^2)``-zCDP) needs zCDP claims, which the catalogue does not have yet;
it is not registered here.

**Faulty variant.** ``faulty/continual-textbook-half-scale`` gives the same
scale to the *textbook* binary mechanism, which releases the noisy node counts
(each prefix assembled from at most ``L`` canonical nodes). There one step
moves the counts of all its ``L + 1`` ancestors, so the loss is ``(L + 1)/b``:
the halving relies on BMR's ancestor-sum structure and signed explanations.
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import numpyro

import dpaudit
from dpaudit.core.checks import check_epsilon, is_concrete
from dpaudit.model.noise.linear_laplace import (
    AncestorLaplace,
    ancestor_matrix,
    ancestor_sensitivity,
)
from mechanisms.common import laplace_release
from mechanisms.ecdf.tree import tree_depth
from mechanisms.faulty import example_pair as faulty_example_pair
from mechanisms.faulty import register_pair

__all__ = [
    "check_stream",
    "continual_counter",
    "continual_node_scale",
    "continual_worst_case",
    "example_pair",
    "node_counts",
    "running_counts",
    "suffix_shifts",
    "textbook_half_scale",
]

_REFERENCE = "Barczewski, Mawass & Ramon, Thm 0.A.1 (continual observation, Laplace version)"


def continual_node_scale(epsilon: float, depth: int) -> float:
    """The node Laplace scale ``ceil((L+1)/2)/epsilon`` of BMR Thm 0.A.1.

    Args:
        epsilon: the privacy parameter.
        depth: the tree depth ``L``.

    Returns:
        The scale on the count scale.
    """
    check_epsilon(epsilon)
    return math.ceil((depth + 1) / 2) / float(epsilon)


def suffix_shifts(n_steps: int) -> np.ndarray:
    """The ``N`` suffix indicators ``1_[t0, N]``: the running-count shifts of one changed step.

    Args:
        n_steps: ``N``.

    Returns:
        ``(N, N)``, row ``t0`` is ``1_[t0, N]``.
    """
    idx = np.arange(n_steps)
    return (idx[None, :] >= idx[:, None]).astype(float)


def continual_worst_case(n_steps: int) -> tuple[float, int]:
    """``max_t0 min{||nu||_1 : A nu = 1_[t0, N]}`` and a step ``t0`` attaining it.

    Computed exactly by the tree dynamic programme
    :func:`~dpaudit.model.noise.linear_laplace.ancestor_sensitivity`; at most
    ``ceil((L+1)/2)`` (BMR Lemma 1), with equality for ``N = 2^L``.

    Args:
        n_steps: ``N >= 1``.

    Returns:
        ``(worst, t0)``.
    """
    cost = ancestor_sensitivity(tree_depth(n_steps), suffix_shifts(n_steps))
    t0 = int(np.argmax(cost))
    return float(cost[t0]), t0


def check_stream(data, n_steps: int):
    """The stream as a float64 ``(N,)`` array, values checked to lie in ``[0, 1]``.

    Args:
        data: the stream.
        n_steps: ``N``.

    Returns:
        The stream (value checks skipped inside ``jit``).

    Raises:
        ValueError: another shape, NaN/inf, or a value outside ``[0, 1]``.
    """
    x = jnp.asarray(data, dtype=jnp.float64)
    if x.shape != (n_steps,):
        raise ValueError(
            f"the stream must have shape ({n_steps},) (one value in [0, 1] per time step), got "
            f"{tuple(x.shape)}."
        )
    if is_concrete(x):
        arr = np.asarray(x)
        if not np.all(np.isfinite(arr)) or arr.min() < 0 or arr.max() > 1:
            raise ValueError(
                "stream values must lie in [0, 1] (the per-step change bound of Thm 0.A.1); "
                "clip or rescale them with public bounds first."
            )
    return x


def running_counts(stream) -> jnp.ndarray:
    """``s_t = sum_{i <= t} x_i`` for every step.

    Args:
        stream: ``(N,)`` values.

    Returns:
        ``(N,)`` running counts.
    """
    return jnp.cumsum(jnp.asarray(stream, dtype=jnp.float64))


def node_counts(stream, depth: int) -> jnp.ndarray:
    """Sums of the stream over the dyadic blocks of the tree, leaves first (textbook mechanism).

    Args:
        stream: ``(N,)`` values, ``N <= 2^L`` (padded with zeros).
        depth: ``L``.

    Returns:
        ``(2^(L+1) - 1,)`` node counts in :func:`~dpaudit.model.noise.linear_laplace.ancestor_matrix`'s
        node order.
    """
    x = jnp.asarray(stream, dtype=jnp.float64)
    a = jnp.asarray(ancestor_matrix(depth, x.shape[-1]))
    return x @ a  # node v counts the leaves below it: column v of the ancestor matrix


_EXAMPLE = {"epsilon": 1.0, "n_steps": 8}


@dpaudit.register("continual-counter", example=_EXAMPLE)
def continual_counter(epsilon: float = 1.0, n_steps: int = 16) -> dpaudit.Mechanism:
    """Running counts of a stream with BMR's tree noise Lap(ceil((L+1)/2)/eps) (Thm 0.A.1).

    Args:
        epsilon: the privacy parameter (> 0).
        n_steps: ``N``, the public stream length (values in ``[0, 1]``, replace-one
            adjacency on the time steps); the tree has depth ``L = ceil(log2 N)``.

    Returns:
        The mechanism: ``(N,)`` noisy running counts with the exact
        :class:`~dpaudit.model.noise.linear_laplace.AncestorLaplace` density.
    """
    depth = tree_depth(n_steps)
    scale = continual_node_scale(epsilon, depth)
    sensitivity = float(math.ceil((depth + 1) / 2))

    def summary(data):
        return running_counts(check_stream(data, n_steps))

    def model(data):
        numpyro.sample("release", AncestorLaplace(summary(data), depth, scale))

    return dpaudit.Mechanism(
        name="continual-counter",
        model=model,
        claim=dpaudit.Claim(
            epsilon=epsilon,
            adjacency="replace-one",
            sensitivity_norm="l1",
            sensitivity=sensitivity,
            reference=_REFERENCE,
        ),
        summary=summary,
        difference_norm=lambda h: ancestor_sensitivity(depth, np.asarray(h, dtype=float)),
        params={
            "epsilon": epsilon,
            "n_steps": n_steps,
            "depth": depth,
            "node_scale": scale,
        },
        description=(
            f"Running counts of a length-{n_steps} stream in [0,1]; every step gets the "
            f"Lap({scale:g}) noise of its L+1 = {depth + 1} tree ancestors (BMR Thm 0.A.1). "
            "Sensitivity: minimum l1 node explanation of a suffix shift, ceil((L+1)/2)."
        ),
    )


@dpaudit.register("faulty/continual-textbook-half-scale", example=_EXAMPLE, faulty=True)
def textbook_half_scale(epsilon: float = 1.0, n_steps: int = 16) -> dpaudit.Mechanism:
    """Textbook binary mechanism (noisy node counts) given BMR's halved scale ceil((L+1)/2)/eps.

    Args:
        epsilon: the claimed epsilon.
        n_steps: ``N``.

    Returns:
        The :class:`~dpaudit.Mechanism`, its ``known_flaw`` stating the true guarantee.
    """
    depth = tree_depth(n_steps)
    scale = continual_node_scale(epsilon, depth)
    true_epsilon = (depth + 1) / scale
    return laplace_release(
        "faulty/continual-textbook-half-scale",
        lambda data: node_counts(check_stream(data, n_steps), depth),
        scale,
        epsilon=epsilon,
        sensitivity=float(math.ceil((depth + 1) / 2)),
        reference="BMR Thm 0.A.1's scale applied to the textbook binary mechanism",
        params={"epsilon": epsilon, "n_steps": n_steps, "depth": depth, "node_scale": scale},
        known_flaw=dpaudit.KnownFlaw(
            reason=(
                f"one step changes the counts of its L+1 = {depth + 1} ancestor nodes, an l1 shift "
                f"of L+1, so node scale ceil((L+1)/2)/epsilon gives (L+1)/ceil((L+1)/2) epsilon "
                "(the halving needs BMR's ancestor-sum release and signed explanations)."
            ),
            true_epsilon=true_epsilon,
            visible_on="any single step changed from 0 to 1.",
        ),
    )


@register_pair("faulty/continual-textbook-half-scale")
def _textbook_pair():
    return _stream_pair(8, 0)


def _stream_pair(n_steps: int, t0: int, seed: int = 0):
    d = np.random.default_rng(seed).integers(0, 2, size=n_steps).astype(float)
    d_prime = d.copy()
    d[t0], d_prime[t0] = 0.0, 1.0
    return d, d_prime


def example_pair(name: str, seed: int = 0):
    """The documented neighbouring pair of an entry of this module (``generator = "example"``).

    Args:
        name: ``"continual-counter"`` or ``"faulty/continual-textbook-half-scale"``.
        seed: the seed of the shared 0/1 steps.

    Returns:
        ``(D, D')``: a stream of ``n_steps`` 0/1 values, one step changed from 0 to 1 (the
        worst step ``t0`` of :func:`continual_worst_case` for the correct counter).

    Raises:
        ValueError: another name.
    """
    if name == "faulty/continual-textbook-half-scale" and seed == 0:
        return faulty_example_pair(name)
    if name not in ("continual-counter", "faulty/continual-textbook-half-scale"):
        raise ValueError(f"no example pair for {name!r} in mechanisms.continual.counter.")
    n_steps = dpaudit.build(name).params["n_steps"]
    t0 = continual_worst_case(n_steps)[1] if name == "continual-counter" else 0
    return _stream_pair(n_steps, t0, seed)
