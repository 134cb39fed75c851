"""Per-call implementations: library primitives that take one input and return one release.

Real DP libraries expose ``f(data) -> value`` (one release per call, 10 µs to
1 ms each), often with their own randomness that cannot be seeded (OpenDP,
python-dp), or seeded through an integer or a numpy ``Generator`` (diffprivlib's
``random_state``). :func:`per_call` wraps such a function into the batch
interface ``sampler(data, n, key) -> releases`` of :func:`~dpaudit.blackbox_audit`:
it calls ``f`` ``n`` times per chunk (in a process pool if asked), stacks the
outputs (scalars, arrays, strings, or tuples / dicts of them: a multi-output
release) and derives every seed from the audit's key, so seeded runs are
reproducible. Unseeded functions are accepted: their audit is valid (the bound
only needs independent releases) but not reproducible, and the result says so.

Example:
    >>> import numpy as np
    >>> sampler = per_call(lambda data, rng: data + rng.laplace(), seed="generator")
    >>> import jax
    >>> sampler(1.0, 3, jax.random.key(0)).shape
    (3,)
"""

from __future__ import annotations

import concurrent.futures
import inspect
import multiprocessing
import weakref
from collections.abc import Callable

import numpy as np

from dpaudit.blackbox.samplers import numpy_generator
from dpaudit.core.checks import check_choice, check_count

__all__ = ["SEED_KINDS", "per_call", "per_call_kind"]

#: How a per-call function receives its randomness: ``"none"`` (its own, unseeded), ``"int"``
#: (a seed integer as second argument), ``"generator"`` (a ``numpy.random.Generator``).
SEED_KINDS = ("none", "int", "generator")

# Seed integers handed to "int" functions are drawn below 2^31 (numpy's legacy RandomState and
# most libraries accept 32-bit seeds).
_SEED_BOUND = 2**31 - 1


def per_call_kind(f: Callable) -> str | None:
    """How :func:`~dpaudit.blackbox_audit` reads a sampler: ``"batch"``, or a per-call seed kind.

    A callable with three positional parameters is a batch sampler ``(data, n, key)``; one
    with a single parameter is a per-call, unseeded ``f(data)``. Two parameters are
    ambiguous (a seed integer or a Generator): wrap them with :func:`per_call` explicitly.

    Args:
        f: the sampler.

    Returns:
        ``"batch"``, ``"none"``, or ``None`` when the signature does not decide.
    """
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature: assume the batch interface
        return "batch"
    params = list(params)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in params) or len(positional) >= 3:
        return "batch"
    return "none" if len(required) == 1 else None


def _stack(outputs: list, name: str):
    """Stack ``n`` single outputs: arrays (or strings), or per part for tuples / dicts."""
    first = outputs[0]
    if type(first) in (float, int) and all(type(o) is type(first) for o in outputs):
        return np.asarray(outputs)  # plain numbers: the array np.stack makes, without 0-d arrays
    if isinstance(first, dict):
        return {k: np.stack([np.asarray(o[k]) for o in outputs]) for k in first}
    if isinstance(first, tuple | list):
        return tuple(np.stack([np.asarray(o[i]) for o in outputs]) for i in range(len(first)))
    try:
        return np.stack([np.asarray(o) for o in outputs])
    except ValueError as err:
        raise ValueError(
            f"the per-call sampler {name!r} returned outputs of different shapes ({err}); "
            "return one shape per call."
        ) from None


def _run_block(f: Callable, data, count: int, seed_kind: str, seed: int) -> list:
    """``count`` calls of ``f`` (module level: the process pool pickles it)."""
    if seed_kind == "none":
        return [f(data) for _ in range(count)]
    rng = np.random.default_rng(seed)
    if seed_kind == "generator":
        return [f(data, rng) for _ in range(count)]
    seeds = rng.integers(0, _SEED_BOUND, size=count)
    return [f(data, int(s)) for s in seeds]


def _shutdown(pool) -> None:
    pool.shutdown(wait=True, cancel_futures=True)


def per_call(
    f: Callable, *, seed: str = "none", processes: int = 1, name: str | None = None
) -> Callable:
    """A batch sampler ``(data, n, key) -> releases`` from a per-call function.

    Args:
        f: ``f(data)`` (``seed="none"``), ``f(data, seed_int)`` (``"int"``) or
            ``f(data, generator)`` (``"generator"``), returning one release: a number,
            an array, a string (categories are mapped to indices by the audit), or a
            tuple / dict of them (a multi-output release).
        seed: how ``f`` receives its randomness, one of :data:`SEED_KINDS`.
        processes: worker processes (``1``: a plain loop in this process). With more,
            each chunk is split into ``processes`` blocks run in a pool of spawned
            processes (``f`` must then be picklable: a module-level function).
        name: the sampler's name in reports and errors (default ``f``'s name).

    Returns:
        The batch sampler, with ``reproducible = (seed != "none")``, ``__name__`` and
        ``prefix_stable = (processes == 1)`` (a request for fewer releases gives the
        first of a larger one: the audit draws exactly the releases it counts).

    Raises:
        ValueError, TypeError: for a bad ``seed``, ``processes`` or ``f``.

    Example:
        >>> import jax
        >>> s = per_call(lambda data, k: data + k % 2, seed="int")
        >>> s(0, 4, jax.random.key(1)).tolist() == s(0, 4, jax.random.key(1)).tolist()
        True
    """
    if not callable(f):
        raise TypeError(f"per_call needs a callable, got {type(f).__name__}.")
    seed = check_choice("seed", seed, SEED_KINDS)
    processes = check_count("processes", processes)
    label = name or getattr(f, "__name__", type(f).__name__)
    pools: list = []

    def sampler(data, n, key):
        seeds = numpy_generator(key).integers(0, _SEED_BOUND, size=processes)
        if processes == 1 or n < 2 * processes:
            return _stack(_run_block(f, data, n, seed, int(seeds[0])), label)
        if not pools:
            context = multiprocessing.get_context("spawn")  # fork would copy JAX's threads
            pool = concurrent.futures.ProcessPoolExecutor(processes, mp_context=context)
            weakref.finalize(sampler, _shutdown, pool)
            pools.append(pool)
        sizes = [n // processes + (i < n % processes) for i in range(processes)]
        futures = [
            pools[0].submit(_run_block, f, data, size, seed, int(s))
            for size, s in zip(sizes, seeds, strict=True)
        ]
        return _stack([out for fut in futures for out in fut.result()], label)

    sampler.__name__ = label
    sampler.reproducible = seed != "none"
    sampler.per_call = True
    # one block in this process: the first m of n calls are the calls of a request for m
    sampler.prefix_stable = processes == 1
    # per-release Python: drawn on the helper process beside the audit when it pickles
    sampler.host_python = processes == 1
    return sampler
