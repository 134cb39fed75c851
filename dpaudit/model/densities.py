"""Release densities read from a mechanism's numpyro model.

The privacy loss ``L(x) = log p_D(x) - log p_D'(x)`` needs the log density of
a whole release. This module reads it from a :class:`~dpaudit.Mechanism`: from
its release distribution (``release_log_prob``, jit-able) or from the model's
trace with the release site substituted (``model_log_prob``), and combines two
log densities without ever forming ``inf - inf`` (``combine_log_probs``). The
white-box engine and the black-box reference statistic both use it.

It also decides how a distribution enters ``jit``: as a pytree argument
(compiled once per shape) when it survives a pytree round trip, else closed
over (``traced_or_closed``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from numpyro.distributions import Distribution
from numpyro.infer.util import log_density

from dpaudit.model.mechanism import Mechanism
from dpaudit.model.sites import JointRelease, supported_log_prob

__all__ = [
    "check_has_density",
    "combine_log_probs",
    "jit_safe",
    "law_jit",
    "model_log_prob",
    "pytree_safe",
    "release_log_prob",
    "site_log_prob",
    "traced_or_closed",
]


def combine_log_probs(log_p, log_q) -> jax.Array:
    """``log_p - log_q`` with the infinite cases resolved (never ``inf - inf``).

    ``log_q = -inf`` and finite ``log_p`` give ``+inf`` (outside the support of
    ``Q``); finite ``log_q`` and ``log_p = -inf`` give ``-inf``; both ``-inf``
    give NaN (outside both supports — the caller must treat it as an error).

    Args:
        log_p: log densities under ``P``.
        log_q: log densities under ``Q`` (same shape).

    Returns:
        The losses.

    Example:
        >>> [float(v) for v in combine_log_probs(jnp.array([0.0, 0.0, -jnp.inf]),
        ...                                      jnp.array([1.0, -jnp.inf, 0.0]))]
        [-1.0, inf, -inf]
    """
    log_p = jnp.asarray(log_p)
    log_q = jnp.asarray(log_q)
    p_out = log_p == -jnp.inf
    q_out = log_q == -jnp.inf
    finite = jnp.where(p_out | q_out, 0.0, log_p - log_q)
    return jnp.where(
        p_out & q_out,
        jnp.nan,
        jnp.where(q_out, jnp.inf, jnp.where(p_out, -jnp.inf, finite)),
    )


def site_log_prob(d: Distribution, x) -> jax.Array:
    """Log density of a whole release: ``log_prob`` summed over the batch axes.

    Args:
        d: the release distribution.
        x: releases with a leading batch axis.

    Returns:
        One log density per release.
    """
    lp = supported_log_prob(d, x)
    n_batch = len(d.batch_shape)
    if n_batch:
        lp = jnp.sum(lp, axis=tuple(range(-n_batch, 0)))
    return lp


def check_has_density(d: Distribution, name: str) -> None:
    """Raise ``TypeError`` unless ``d`` has a ``log_prob`` (privacy losses need densities).

    Args:
        d: a release distribution.
        name: the mechanism's name, for the message.

    Raises:
        TypeError: if ``d.log_prob`` is not implemented.
    """
    key = jax.random.key(0)
    try:
        traced_or_closed(
            (d,),
            lambda: _PROBE.eval_shape(d, key),
            lambda: site_log_prob(d, d.sample(key)[None]),
        )
    except NotImplementedError as err:
        raise TypeError(
            f"{name}: the release distribution {type(d).__name__} has no density (its log_prob "
            "is not implemented), so privacy losses cannot be evaluated; sample the release "
            "from a distribution with a log_prob."
        ) from err


def _probe_density(d: Distribution, key):
    # traced by ``jax.eval_shape``, never compiled nor run: a missing ``log_prob`` raises
    # while tracing, and compiling a structured law's density only to discard it cost an
    # XLA compilation per audit (bmr-ecdf: 5.7 s of wall time at load 18)
    return site_log_prob(d, d.sample(key)[None])


# Module-level: its traces are kept per law structure and shape, so a second audit of the
# same family and shape traces nothing (``jax.eval_shape`` traced the probe on every call).
_PROBE = jax.jit(_probe_density)


#: Attributes numpyro sets on an instance for inference only (which parameters admit
#: reparametrised gradients, read by ``has_rsample``); ``sample`` and ``log_prob`` never
#: read them, so a law that loses them in a pytree round trip (``Independent``, i.e. every
#: ``.to_event``) still computes the same releases and densities as a ``jit`` argument.
_INFERENCE_ONLY_ATTRIBUTES = frozenset({"reparametrized_params"})


def pytree_safe(d: Distribution) -> bool:
    """True when ``d`` survives a pytree round trip (so it can be a ``jit`` argument).

    numpyro distributions declare their array fields (``pytree_data_fields``);
    a user subclass that stores undeclared attributes loses them when flattened,
    so the engine then closes over it instead of passing it to ``jit`` (which compiles
    once per audit instead of once per shape). Attributes used by inference only
    (``reparametrized_params``, set by ``Independent``) do not count.

    Args:
        d: a distribution.

    Returns:
        True when ``d`` can be a ``jit`` argument.
    """
    try:
        leaves, treedef = jax.tree_util.tree_flatten(d)
        rebuilt = jax.tree_util.tree_unflatten(treedef, leaves)
    except Exception:  # any failure means "not a safe pytree"
        return False
    return set(vars(d)) - _INFERENCE_ONLY_ATTRIBUTES <= set(vars(rebuilt))


#: Distribution types found to branch in Python on a pytree field (they fail when traced
#: as ``jit`` arguments); the engine closes over their instances instead.
_TRACE_UNSAFE: set[type] = set()
_TRACE_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
)


def jit_safe(*dists: Distribution) -> bool:
    """True when the distributions can be passed to ``jit`` as pytree arguments.

    Args:
        *dists: the distributions.

    Returns:
        True when all can be ``jit`` arguments.
    """
    return all(pytree_safe(d) and type(d) not in _TRACE_UNSAFE for d in dists)


@jax.tree_util.register_pytree_node_class
class _LawArgument:
    """A distribution as a ``jit`` argument whose leaves come in one order in every process.

    numpyro flattens a distribution's fields in the order of a Python ``set`` of their names
    (``Distribution.gather_pytree_data_fields``), which changes with the process's string
    hash seed: the compiled program's parameters, hence its persistent-cache key, changed
    from one process to the next, and a filled cache missed the program. Here the fields of
    numpyro's own flattening are keyed by name (a ``dict``, flattened in sorted key order);
    a class with its own ``tree_flatten`` keeps its children's order (its own, fixed).
    """

    def __init__(self, kind, aux, children):
        self.kind, self.aux, self.children = kind, aux, children

    def tree_flatten(self):
        return (self.children,), (self.kind, self.aux)

    @classmethod
    def tree_unflatten(cls, static, leaves):
        return cls(static[0], static[1], leaves[0])

    @classmethod
    def of(cls, d: Distribution) -> _LawArgument:
        kind = type(d)
        children, aux = d.tree_flatten()
        children = _laws_as_arguments(tuple(children))
        if _numpyro_fields(kind):
            names = kind.gather_pytree_data_fields()
            if len(names) == len(children):
                return cls((kind, names), aux, dict(zip(names, children, strict=True)))
        return cls((kind, None), aux, children)

    def law(self) -> Distribution:
        (kind, names), children = self.kind, self.children
        if names is not None:
            children = tuple(children[name] for name in names)
        return kind.tree_unflatten(self.aux, _laws_from_arguments(children))


def _numpyro_fields(kind) -> bool:
    """Whether ``kind`` flattens with numpyro's own name-gathering ``tree_flatten``."""
    return (
        getattr(kind, "tree_flatten", None) is Distribution.tree_flatten
        and getattr(kind.tree_unflatten, "__func__", None) is Distribution.tree_unflatten.__func__
    )


def _laws_as_arguments(tree):
    return jax.tree_util.tree_map(
        lambda x: _LawArgument.of(x) if isinstance(x, Distribution) else x,
        tree,
        is_leaf=lambda x: isinstance(x, Distribution),
    )


def _laws_from_arguments(tree):
    return jax.tree_util.tree_map(
        lambda x: x.law() if isinstance(x, _LawArgument) else x,
        tree,
        is_leaf=lambda x: isinstance(x, _LawArgument),
    )


def law_jit(fun=None, **jit_kwargs):
    """``jax.jit`` for functions of distributions: one program, one cache key, in every process.

    Distribution arguments (anywhere in the arguments' pytrees) enter the program with their
    fields in a fixed order (by name), instead of numpyro's order, which follows Python's
    per-process string hashing: with plain ``jax.jit`` the same audit compiled a program
    with permuted parameters in each new process, and a filled persistent compilation cache
    missed it. ``fun.__wrapped__`` is ``fun`` itself (for the closed-over route).

    Args:
        fun: the function; ``None`` to use ``law_jit(**jit_kwargs)`` as a decorator.
        **jit_kwargs: ``jax.jit`` keywords (``static_argnames``).

    Returns:
        The jitted function, called with the arguments ``fun`` takes.
    """
    if fun is None:
        return functools.partial(law_jit, **jit_kwargs)
    static = set(jit_kwargs.get("static_argnames", ()))

    @functools.wraps(fun)  # the program keeps the function's name
    def inner(*args, **kwargs):
        return fun(*_laws_from_arguments(args), **_laws_from_arguments(kwargs))

    jitted = jax.jit(inner, **jit_kwargs)

    @functools.wraps(fun)
    def call(*args, **kwargs):
        dynamic = {k: v for k, v in kwargs.items() if k not in static}
        fixed = {k: v for k, v in kwargs.items() if k in static}
        return jitted(*_laws_as_arguments(args), **_laws_as_arguments(dynamic), **fixed)

    return call


def traced_or_closed(dists, as_arguments, closed_over):
    """Run with the distributions as ``jit`` arguments when safe, else closed over.

    ``as_arguments()`` (distributions as ``jit`` arguments) compiles once per shape;
    ``closed_over()`` (distributions closed over) compiles per call, but any Python
    logic on their fields stays concrete. The latter runs when the distributions are
    not pytree-safe or when tracing them fails (their type is then remembered).

    Args:
        dists: the distributions involved.
        as_arguments: a thunk running the computation with the distributions as arguments.
        closed_over: a thunk running it with the distributions closed over.

    Returns:
        The thunk's result.
    """
    if jit_safe(*dists):
        try:
            return as_arguments()
        except _TRACE_ERRORS:
            _TRACE_UNSAFE.update(type(d) for d in dists)
    return closed_over()


def release_log_prob(mechanism: Mechanism, data, releases) -> jax.Array:
    """``log p_D(x)`` for a batch of releases ``(n, *event)`` (density route).

    Args:
        mechanism: the mechanism.
        data: the dataset ``D``.
        releases: ``(n, *event)`` releases.

    Returns:
        ``(n,)`` log densities.
    """
    d = mechanism.release_distribution(data)
    return site_log_prob(d, jnp.asarray(releases))


def model_log_prob(mechanism: Mechanism, data, releases, *, chunk_size: int = 4096) -> jax.Array:
    """``log p_D(x)`` from numpyro's ``log_density`` with the release site substituted.

    The model is run with ``{release_site: x}`` (vmapped over a batch of
    releases); the returned value is the release site's log density read from
    the model's trace (other, observed, sites do not belong to the release's
    marginal density). Not jitted, so models that use numpy on their data work.
    A release of several sites (or with latent/shared sites) is evaluated by its
    :class:`~dpaudit.model.sites.JointRelease`, which substitutes every site the same way.

    Args:
        mechanism: the mechanism.
        data: the dataset ``D``.
        releases: ``(n, *event)`` releases.
        chunk_size: releases per vmapped batch.

    Returns:
        ``(n,)`` log densities.

    Raises:
        ValueError: if the model has no sample site named ``mechanism.release_site``.
    """
    releases = jnp.asarray(releases)
    law = mechanism.release_distribution(data)
    if isinstance(law, JointRelease):
        # the joint law's log_prob is itself the model's trace with the sites substituted
        parts = [
            law.log_prob(releases[i : i + chunk_size])
            for i in range(0, releases.shape[0], chunk_size)
        ]
        return jnp.concatenate(parts) if parts else jnp.zeros((0,))
    site = mechanism.release_sites[0]

    def one(x):
        _, trace = log_density(mechanism.model, (data,), {}, {site: x})
        if site not in trace or trace[site]["type"] != "sample":
            raise ValueError(
                f"mechanism {mechanism.name!r} has no sample site named {site!r}; sample the "
                f"release with numpyro.sample({site!r}, ...)."
            )
        entry = trace[site]
        return jnp.sum(supported_log_prob(entry["fn"], entry["value"]))

    batched = jax.vmap(one)
    parts = [batched(releases[i : i + chunk_size]) for i in range(0, releases.shape[0], chunk_size)]
    return jnp.concatenate(parts) if parts else jnp.zeros((0,))
