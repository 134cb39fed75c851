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

import numpy as np

from dpaudit.model.sites import model_trace

__all__ = ["TRACE_RTOL", "check_traced_randomness"]

#: Relative difference between two traces' values (or log densities) of one site that counts
#: as a different trace. Traces of a model under one seed are bit-identical on one machine;
#: the tolerance only keeps a round-off-level difference from refusing a model.
TRACE_RTOL = 1e-12


def check_traced_randomness(model, data, name: str, *, rng_seed: int = 0) -> None:
    """Refuse a model whose trace is not a function of the data and the seed.

    Args:
        model: a numpyro model ``model(data)``.
        data: the dataset it is traced on.
        name: the mechanism's name, for the message.
        rng_seed: the seed of both traces.

    Raises:
        ValueError: one sentence naming the mechanism and the first site whose value or log
            density differs between two traces of the same data and seed (the model draws
            from a random source outside numpyro, e.g. ``np.random`` or ``random``).
    """
    first = model_trace(model, data, rng_seed)
    second = model_trace(model, data, rng_seed)
    sites = [k for k, s in first.items() if s["type"] == "sample"]
    other_sites = [k for k, s in second.items() if s["type"] == "sample"]
    if sites != other_sites:
        _refuse(name, f"sample sites {sites} then {other_sites}")
    for site in sites:
        a, b = first[site], second[site]
        if not _same(a["value"], b["value"]):
            _refuse(name, f"values at site {site!r}: {_show(a['value'])} then {_show(b['value'])}")
        parameters = _parameters(a["fn"]), _parameters(b["fn"])
        if None not in parameters:
            if not _same_parameters(*parameters):
                _refuse(name, f"parameters of the distribution at site {site!r}")
            continue
        density = _log_densities(a["fn"], b["fn"], a["value"])
        if density is not None and not _same(*density):
            _refuse(
                name,
                f"log densities at site {site!r} of one release: {_show(density[0])} then "
                f"{_show(density[1])}",
            )


def _parameters(obj, depth: int = 0):
    """Everything a site's distribution computes its density from, as a flat list, or ``None``.

    A numpyro distribution's (or transform's) density is a deterministic function of its class
    and its attributes: equal attributes mean equal densities at every value, so comparing them
    replaces evaluating both densities (which, unjitted, cost seconds for large structured
    laws). Arrays, numbers, strings and ``None`` are compared; distributions, transforms,
    lists, tuples and dicts are walked; anything else (a function, an unknown object) makes
    the answer ``None`` and the caller compares densities instead.
    """
    if depth > 20:
        return None
    if obj is None or isinstance(obj, bool | int | float | complex | str | np.generic):
        return [obj]
    if isinstance(obj, np.ndarray) or hasattr(obj, "__jax_array__") or _is_jax_array(obj):
        return [np.asarray(obj)]
    if isinstance(obj, list | tuple):
        items = list(obj)
    elif isinstance(obj, dict):
        items = [value for _, value in sorted(obj.items(), key=lambda kv: str(kv[0]))]
    elif _is_numpyro_object(obj):
        items = [value for _, value in sorted(vars(obj).items())]
    else:
        return None
    flat: list = [type(obj).__qualname__, len(items)]
    for item in items:
        part = _parameters(item, depth + 1)
        if part is None:
            return None
        flat.extend(part)
    return flat


def _is_jax_array(obj) -> bool:
    return type(obj).__module__.startswith(("jax", "jaxlib")) and hasattr(obj, "shape")


def _is_numpyro_object(obj) -> bool:
    return any(cls.__module__.startswith("numpyro.distributions") for cls in type(obj).__mro__)


def _same_parameters(a: list, b: list) -> bool:
    """Two flat parameter lists equal: arrays up to :data:`TRACE_RTOL`, the rest exactly."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not _same(x, y):
                return False
        elif not (x == y or (x != x and y != y)):  # NaN equal to NaN
            return False
    return True


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
