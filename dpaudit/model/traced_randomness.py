"""Models that draw random numbers outside numpyro while they are traced.

The audit reads a model's release law from its trace: every random number must come from a
``numpyro.sample`` site (seeded by the audit). A model that also calls ``np.random`` or
Python's ``random`` while traced bakes a fresh draw into each trace, so the law of ``D`` and
the law of ``D'`` are read from two different mechanisms: a correct Laplace mean with
``mean + np.random.normal(0, 0.1)`` was reported a violation in 6 of 7 audits and a pass once.
:func:`check_traced_randomness` traces the model twice under the same data and seed and
refuses it when a site's value or density differs between the two traces.

Example:
    >>> import jax.numpy as jnp, numpyro, numpyro.distributions as dist
    >>> def model(data):
    ...     numpyro.sample("release", dist.Laplace(jnp.mean(data), 1.0))
    >>> check_traced_randomness(model, jnp.zeros(3), "mean")
"""

from __future__ import annotations

import jax
import numpy as np
from numpyro.distributions import Distribution

from dpaudit.model.densities import pytree_safe
from dpaudit.model.sites import model_trace

__all__ = ["TRACE_RTOL", "check_traced_randomness"]

#: Relative difference between two traces' values (or log densities) of one site that counts
#: as a different trace. Traces of a model under one seed are bit-identical on one machine;
#: the tolerance only keeps a round-off-level difference from refusing a model.
TRACE_RTOL = 1e-12

#: Modules whose distributions have a deterministic ``log_prob`` (a law given by its
#: parameters): two of them with equal parameters have equal densities.
_OWN_MODULES = ("numpyro.", "dpaudit.")


def check_traced_randomness(model, data, name: str, *, rng_seed: int = 0, first=None) -> None:
    """Refuse a model whose trace is not a function of the data and the seed.

    Args:
        model: a numpyro model ``model(data)``.
        data: the dataset it is traced on.
        name: the mechanism's name, for the message.
        rng_seed: the seed of both traces.
        first: ``model_trace(model, data, rng_seed)`` when the caller has made it (the
            audit's plan reads the release law from it), or ``None``; the second trace is
            always made here.

    Raises:
        ValueError: one sentence naming the mechanism and the first site whose value or log
            density differs between two traces of the same data and seed (the model draws
            from a random source outside numpyro, e.g. ``np.random`` or ``random``).
    """
    first = model_trace(model, data, rng_seed) if first is None else first
    second = model_trace(model, data, rng_seed)
    sites = [k for k, s in first.items() if s["type"] == "sample"]
    other_sites = [k for k, s in second.items() if s["type"] == "sample"]
    if sites != other_sites:
        _refuse(name, f"sample sites {sites} then {other_sites}")
    for site in sites:
        a, b = first[site], second[site]
        if not _same(a["value"], b["value"]):
            _refuse(name, f"values at site {site!r}: {_show(a['value'])} then {_show(b['value'])}")
        if _same_law(a["fn"], b["fn"]):
            continue  # one law, so one density: nothing to evaluate
        density = _log_densities(a["fn"], b["fn"], a["value"])
        if density is not None and not _same(*density):
            _refuse(
                name,
                f"log densities at site {site!r} of one release: {_show(density[0])} then "
                f"{_show(density[1])}",
            )


def _same_law(fn_a, fn_b) -> bool:
    """True when two site distributions are provably one law (their densities are equal).

    They are when both are numpyro's or dpaudit's own distributions (deterministic
    ``log_prob``; a user class might draw in it) that survive a pytree round trip, with equal
    structure and equal parameters up to :data:`TRACE_RTOL`. Comparing parameters on the host
    runs no JAX program, where evaluating both densities eagerly compiled one per operation
    (14 for a Laplace release) in a fresh process. Anything else is decided by the densities.
    """
    if type(fn_a) is not type(fn_b) or not (_own_law(fn_a) and _own_law(fn_b)):
        return False
    try:
        leaves_a, tree_a = jax.tree_util.tree_flatten(fn_a)
        leaves_b, tree_b = jax.tree_util.tree_flatten(fn_b)
        same_tree = bool(tree_a == tree_b)
    except Exception:  # a structure that cannot be compared: evaluate the densities
        return False
    return same_tree and all(_same(x, y) for x, y in zip(leaves_a, leaves_b, strict=True))


def _own_law(d) -> bool:
    """True for a numpyro or dpaudit distribution made only of such distributions."""
    if not isinstance(d, Distribution) or not pytree_safe(d):
        return False
    if not type(d).__module__.startswith(_OWN_MODULES):
        return False
    inner = jax.tree_util.tree_leaves(
        d, is_leaf=lambda x: x is not d and isinstance(x, Distribution)
    )
    return all(_own_law(x) for x in inner if isinstance(x, Distribution))


def _log_densities(fn_a, fn_b, value):
    """Both site distributions' total log density at ``value``, or ``None`` if unavailable."""
    try:
        return np.sum(np.asarray(fn_a.log_prob(value))), np.sum(np.asarray(fn_b.log_prob(value)))
    except Exception:  # no density to compare (the values were compared)
        return None


def _same(a, b) -> bool:
    """Equal shapes and values up to :data:`TRACE_RTOL` (NaN equal to NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.array_equal(a, b))
    return bool(np.allclose(a, b, rtol=TRACE_RTOL, atol=0.0, equal_nan=True))


def _show(value) -> str:
    """A short text of a traced value (its first three numbers)."""
    flat = np.asarray(value).ravel()
    text = ", ".join(f"{v:.6g}" if isinstance(v, float | np.floating) else str(v) for v in flat[:3])
    return f"[{text}{', ...' if flat.size > 3 else ''}]"


def _refuse(name: str, difference: str) -> None:
    raise ValueError(
        f"mechanism {name!r}: two traces of its model on the same data and seed differ ("
        f"{difference}): the model draws from a random source outside numpyro (np.random, "
        "random) while traced, which the audit cannot see; draw every random number with "
        "numpyro.sample and release or declare its site."
    )
