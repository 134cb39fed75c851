r"""Whole-trace releases: the joint law of every release site of a numpyro model.

A mechanism may release several sample sites (``Mechanism.release_sites``).
Every other random (non-observed) site of its model must be declared, with
numpyro's ``infer`` dict:

* ``infer={"dpaudit": "latent"}`` — hidden randomness, integrated out of the
  release density. Discrete sites with a finite support are marginalised
  exactly (a log-sum-exp over the enumerated joint support, at most
  :data:`MAX_ENUMERATION` joint values). A continuous latent site is
  marginalised when its distribution provides the marginal density of the
  release sites that depend on it (the ``marginal_log_prob`` protocol below,
  e.g. :class:`dpaudit.model.noise.ThresholdNoise`); otherwise it is refused.
* ``infer={"dpaudit": "shared"}`` — data-independent randomness the audit
  conditions on: it is audited as if released alongside the release sites.
  Dropping it from the release is post-processing, so a pass of the augmented
  release is a pass of the mechanism; a violation found is a violation
  *conditional on the shared randomness* only (docs/whole-trace.md).

:class:`JointRelease` is the joint law of the release (and shared) sites as one
numpyro distribution over the flat vector that concatenates the sites'
flattened values in declaration order: ``sample`` runs the model forward
(seeded and vmapped), ``log_prob`` evaluates the model's trace with every
release site substituted (numpyro's ``log_density`` machinery), so independent
sites sum and adaptive sites (a site whose law depends on an earlier released
value) are handled by the same joint density. The audit engine reads it like
any release distribution.

**Marginal-density protocol.** A continuous latent site ``z`` is marginalised
when its distribution has ``marginal_log_prob(conditionals)``: given the
``(distribution, value)`` pairs of the release sites whose law depends on ``z``
(found structurally on the model's ``jaxpr``, in the model's order), it returns
``log int p(z) prod_i p(x_i | z, x_<i) dz``, jit-able. Optionally
``marginal_log_prob_error(conditionals)`` (a certified bound on its numerical
error, added to certificate margins; absent means closed form) and
``certified_marginal_log_prob(conditionals) -> (lower, upper)`` (enables exact
accounting over enumerable releases). Only release sites may depend on ``z``,
and each on one such site.

**History-uniform bounds protocol.** An adaptive release gets an exact supremum of
its loss (:func:`adaptive_sup_loss`) when the law of each site that depends on
earlier released values names, in ``uniform_fields``, the fields computed from them
(e.g. the cut points of the Hosmer–Lemeshow group sums), and declares
``uniform_sup_loss(other) -> ExactSupLoss | None``: certified bounds on the supremum
of its loss against ``other`` (the law under the neighbouring dataset at the same
earlier values) that hold for *every* value of those fields. The fields must not
depend on the dataset, and no other parameter may depend on the earlier values
(both checked on the model's ``jaxpr``); otherwise the release is audited through
its joint density with Monte Carlo bounds only.
"""

from __future__ import annotations

import copy
import itertools
import math
import warnings
import weakref
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import distributions as dist
from numpyro import handlers
from numpyro.distributions import Distribution, constraints
from numpyro.distributions.util import lazy_property

from dpaudit.accounting.suprema import (
    ExactSupLoss,
    exact_sup_loss,
    finite_sup_loss,
    log_density_error,
)
from dpaudit.core.arrays import host_key
from dpaudit.core.checks import is_concrete
from dpaudit.core.closures import lift_closure, rebuild_closure
from dpaudit.model.parameter_checks import host_parameter_checks

__all__ = [
    "DECLARATIONS",
    "MAX_ENUMERATION",
    "MAX_PREFIXES",
    "JointRelease",
    "adaptive_sup_loss",
    "check_release_sites",
    "declared_role",
    "joint_release",
    "model_trace",
    "supported_log_prob",
    "undeclared_adaptive_sites",
]

#: The values of ``infer["dpaudit"]`` that declare a random site that is not released.
DECLARATIONS = ("latent", "shared")

#: Largest number of joint values of the discrete latent sites marginalised by enumeration:
#: every release density costs this many model evaluations, so beyond it the audit would
#: be too slow to be useful (and memory grows with it in the vmapped evaluation).
MAX_ENUMERATION = 4096


def _validated(d: Distribution) -> None:
    """Switch on numpyro's support check in ``d`` and every distribution it holds.

    numpyro's ``tree_unflatten`` rebuilds a distribution with ``_validate_args`` read from
    the instance's own ``__dict__``, which is empty when validation comes from the class
    default: a distribution passed to ``jit`` as an argument then scores releases outside
    its support as finite (``Uniform(0, 1).log_prob(1.02)`` gives 0 instead of ``-inf``).
    Mixture components, base distributions and the like are reached through the
    instance's attributes.
    """
    seen = set()
    stack = [d]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        item._validate_args = True
        for value in vars(item).values():
            children = value if isinstance(value, list | tuple) else (value,)
            stack.extend(c for c in children if isinstance(c, Distribution))


def _support_mask(d: Distribution, x, like) -> jax.Array | None:
    """``x`` in the support of ``d``, shaped like the log densities ``like`` (None: unknown)."""
    try:
        support = d.support
    except (NotImplementedError, AttributeError):
        return None
    if support is None or not isinstance(support, constraints.Constraint):
        return None
    try:
        mask = jnp.asarray(support(x))
    except (TypeError, ValueError):
        # parameters batched against the value in a way the constraint cannot broadcast
        # (a mixture's component axis): the components' own validated log_prob decides
        return None
    extra = mask.ndim - jnp.ndim(like)
    if extra > 0:
        mask = jnp.all(mask.reshape((*mask.shape[: mask.ndim - extra], -1)), axis=-1)
    try:
        jnp.broadcast_shapes(mask.shape, jnp.shape(like))
    except ValueError:
        return None
    return mask


def supported_log_prob(d: Distribution, x) -> jax.Array:
    """``d.log_prob(x)``, ``-inf`` wherever ``x`` lies outside the support of ``d``.

    A release possible under one dataset and impossible under its neighbour is an
    infinite privacy loss, so every density that decides a verdict must be ``-inf``
    off its support -- also inside ``jit``, where numpyro loses its own check when the
    distribution is a traced argument (see :func:`_validated`), and for supports that
    move with the data (``Uniform(m, m + 1)``, a shifted ``Exponential``,
    ``DiscreteUniform(s, s + 9)``, truncated laws).

    Args:
        d: a numpyro distribution.
        x: values with the distribution's batch and event shape on the right.

    Returns:
        ``d.log_prob(x)`` with ``-inf`` outside the support.
    """
    _validated(d)
    with warnings.catch_warnings():
        # an impossible release is what this function exists to score (as -inf), not a misuse
        warnings.filterwarnings("ignore", "Out-of-support values", UserWarning)
        log_prob = d.log_prob(x)
    mask = _support_mask(d, x, log_prob)
    if mask is None:
        return log_prob
    return jnp.where(mask, log_prob, -jnp.inf)


def check_release_sites(value, name: str) -> tuple[str, ...]:
    """Normalise a mechanism's ``release_site`` argument into a tuple of site names.

    Args:
        value: a site name, or a non-empty sequence of distinct site names.
        name: the mechanism's name, for messages.

    Returns:
        The tuple of site names.

    Raises:
        TypeError: when a name is not a string.
        ValueError: for an empty sequence, an empty name or a repeated name.
    """
    sites = (value,) if isinstance(value, str) else value
    if not isinstance(sites, (tuple, list)):
        raise TypeError(
            f"Mechanism {name!r}: release_site must be a site name or a tuple of site names, "
            f"got {type(value).__name__}."
        )
    sites = tuple(sites)
    if not sites:
        raise ValueError(f"Mechanism {name!r}: release_site must name at least one site.")
    for site in sites:
        if not isinstance(site, str) or not site:
            raise TypeError(
                f"Mechanism {name!r}: release site names must be non-empty strings, got {site!r}."
            )
    repeated = sorted({s for s in sites if sites.count(s) > 1})
    if repeated:
        raise ValueError(f"Mechanism {name!r}: release site {repeated[0]!r} is named twice.")
    return sites


def declared_role(site: Mapping) -> str | None:
    """``"latent"``/``"shared"`` when a sample site declares itself so, else ``None``.

    Args:
        site: a numpyro trace entry.

    Returns:
        The declared role, or ``None``.

    Raises:
        ValueError: for an ``infer["dpaudit"]`` value that is not a known declaration.
    """
    role = (site.get("infer") or {}).get("dpaudit")
    if role is not None and role not in DECLARATIONS:
        raise ValueError(
            f"sample site {site['name']!r} declares infer={{'dpaudit': {role!r}}}; the known "
            f"declarations are {DECLARATIONS}."
        )
    return role


def model_trace(model, data, rng_seed=0):
    """The model's trace under a seed (every site drawn forward).

    The same trace as ``handlers.trace(handlers.seed(model, rng_seed))``, bit for bit, with
    fewer XLA programs when it runs op by op (the audit's plan traces each model four
    times): an integer seed becomes its raw ``uint32`` key on the host
    (:func:`~dpaudit.core.arrays.host_key`; numpyro's ``random.key`` compiles two programs), each site's key is split by one jitted program
    (numpyro's split and unpacking compile two), and constant distribution parameters are
    checked in numpy (:func:`~dpaudit.model.parameter_checks.host_parameter_checks`; the
    same refusals, no program per constraint operation).

    Args:
        model: a numpyro model ``model(data)``.
        data: the dataset.
        rng_seed: an integer seed or a JAX key.

    Returns:
        The numpyro trace (an ordered dict of sites).
    """
    with host_parameter_checks():
        return handlers.trace(_SplitSeed(model, rng_seed=host_key(rng_seed))).get_trace(data)


@jax.jit
def _split_key(key):
    """``jax.random.split(key)`` unpacked: one program (numpyro's split and unpacking are two)."""
    first, second = jax.random.split(key)
    return first, second


class _SplitSeed(handlers.seed):
    """numpyro's ``seed`` handler with each site's key split by :func:`_split_key`.

    The keys are numpyro's, bit for bit (the same ``split``, unpacked in one program).
    """

    def process_message(self, msg) -> None:
        if msg["type"] in self.hide_types:
            return
        if msg["type"] not in ("sample", "prng_key", "plate", "control_flow"):
            return
        if msg["kwargs"]["rng_key"] is not None or msg["value"] is not None:
            return  # numpyro: no new key when the site has one or a value
        if self.rng_key is not None:
            self.rng_key, msg["kwargs"]["rng_key"] = _split_key(self.rng_key)

    def __call__(self, *args, **kwargs):
        if self.fn is not None and not self.stateful:  # numpyro's clone, of this class
            clone = _SplitSeed(self.fn, rng_seed=self.rng_key, hide_types=self.hide_types)
            clone.stateful = True
            return clone(*args, **kwargs)
        return super(handlers.seed, self).__call__(*args, **kwargs)


def _random_sites(trace):
    return [k for k, s in trace.items() if s["type"] == "sample" and not s.get("is_observed")]


def _classify(name: str, release_sites, trace) -> tuple[list[str], list[str]]:
    """``(latent, shared)`` site names; raise for missing release sites or undeclared sites."""
    missing = [s for s in release_sites if s not in trace or trace[s]["type"] != "sample"]
    if missing:
        sites = sorted(k for k, v in trace.items() if v["type"] == "sample")
        raise ValueError(
            f"mechanism {name!r} has no sample site named {missing[0]!r} (its sample sites "
            f"are {sites}); sample the release with numpyro.sample({missing[0]!r}, ...)."
        )
    latent, shared = [], []
    for key in _random_sites(trace):
        role = declared_role(trace[key])
        if key in release_sites:
            if role is not None:
                raise ValueError(
                    f"mechanism {name!r}: site {key!r} is a release site and also declared "
                    f"{role!r}; a site is released or hidden, not both."
                )
            continue
        if role is None:
            raise ValueError(
                f"mechanism {name!r} draws the random site {key!r} besides its release site(s) "
                f"{', '.join(map(repr, release_sites))}, and an audit that ignored it could pass "
                f"falsely; declare it: add {key!r} to the mechanism's release_site tuple if it "
                f"is released, or sample it with infer={{'dpaudit': 'latent'}} if it is hidden "
                "(or 'shared' for data-independent randomness the audit may condition on); "
                "observe it with obs= if it is data."
            )
        (latent if role == "latent" else shared).append(key)
    return latent, shared


def _bernoulli_of(fn):
    """The Bernoulli law under ``Independent``/``expand`` wrappers, else ``None``."""
    while isinstance(fn, dist.Independent | dist.ExpandedDistribution):
        fn = fn.base_dist
    return fn if isinstance(fn, dist.BernoulliProbs | dist.BernoulliLogits) else None


def _check_latent_rates(name: str, latent, trace) -> None:
    """Refuse a latent Bernoulli site (a subsampling mask) whose rate is outside ``(0, 1]``."""
    for key in latent:
        law = _bernoulli_of(trace[key]["fn"])
        if law is None or not is_concrete(law.probs):
            continue
        rates = np.asarray(law.probs, dtype=np.float64)
        bad = rates[~((rates > 0) & (rates <= 1))]
        if bad.size:
            raise ValueError(
                f"mechanism {name!r}: the latent subsampling site {key!r} has rate "
                f"{float(bad.ravel()[0])!r}, outside (0, 1]; draw each record's membership "
                "with dist.Bernoulli(q) for a sampling rate q in (0, 1]."
            )


def _enumeration(name: str, latent, trace):
    """Joint support of the discrete latent sites: ``{site: (C, *shape)}`` and ``C``."""
    supports, shapes = [], []
    for key in latent:
        fn = trace[key]["fn"]
        if not getattr(fn, "has_enumerate_support", False):
            raise ValueError(
                f"mechanism {name!r}: the latent site {key!r} ({type(fn).__name__}) has no "
                "finite support to enumerate, and dpaudit marginalises only discrete latent "
                "sites; release it, declare it 'shared' if it is data-independent, or sample "
                "the release from a distribution whose log_prob integrates it out (as "
                "SparseVector does for its threshold noise)."
            )
        value = np.asarray(trace[key]["value"])
        support = np.asarray(fn.enumerate_support(expand=True)).reshape(-1, value.size)
        supports.append(support)
        shapes.append(value.shape)
    per_element = [(s, e) for s in range(len(latent)) for e in range(supports[s].shape[1])]
    total = math.prod(supports[s].shape[0] for s, _ in per_element)
    if total > MAX_ENUMERATION:
        raise ValueError(
            f"mechanism {name!r}: its discrete latent sites {latent} have {total} joint values, "
            f"more than the enumeration limit {MAX_ENUMERATION}; release some of them or "
            "declare data-independent ones 'shared'."
        )
    index = np.array(
        list(itertools.product(*(range(supports[s].shape[0]) for s, _ in per_element)))
    )
    values, column = {}, 0
    for s, key in enumerate(latent):
        k = supports[s].shape[1]
        cols = index[:, column : column + k].reshape(total, k)
        values[key] = supports[s][cols, np.arange(k)].reshape((total, *shapes[s]))
        column += k
    return values, total


def _split_latent(name: str, latent, trace) -> tuple[list[str], list[str]]:
    """``(discrete, continuous)`` latent sites; refuse a continuous one without a marginal."""
    discrete, continuous = [], []
    for key in latent:
        fn = trace[key]["fn"]
        if getattr(fn, "has_enumerate_support", False):
            discrete.append(key)
        elif callable(getattr(fn, "marginal_log_prob", None)):
            continuous.append(key)
        else:
            raise ValueError(
                f"mechanism {name!r}: the latent site {key!r} ({type(fn).__name__}) is "
                "continuous and its distribution provides no marginal density; sample it from "
                "a distribution with marginal_log_prob (such as dpaudit.model.noise.ThresholdNoise for "
                "SVT threshold noise), release it, or declare it 'shared' if it is "
                "data-independent."
            )
    return discrete, continuous


def _dependents(model, data, name: str, site: str, trace) -> list[str]:
    """The random sites whose law depends (structurally, on the jaxpr) on ``site``'s value."""
    others = [k for k in _random_sites(trace) if k != site]
    fixed = {k: trace[k]["value"] for k in others}

    def laws(value):
        traced = handlers.trace(
            handlers.substitute(handlers.seed(model, rng_seed=0), data={**fixed, site: value})
        ).get_trace(data)
        return [jax.tree_util.tree_leaves(traced[k]["fn"]) for k in others]

    try:
        closed, shapes = jax.make_jaxpr(laws, return_shape=True)(jnp.asarray(trace[site]["value"]))
    except Exception as error:  # any failure to trace: the dependents cannot be found
        raise ValueError(
            f"mechanism {name!r}: the sites that depend on the continuous latent site {site!r} "
            f"cannot be found because the model cannot be traced with it as an input "
            f"({type(error).__name__}); release it or declare it 'shared'."
        ) from None
    flags, start, found = _tainted_outputs(closed.jaxpr), 0, []
    for key, leaves in zip(others, shapes, strict=True):
        if any(flags[start : start + len(leaves)]):
            found.append(key)
        start += len(leaves)
    return found


def _marginal_groups(model, data, name, continuous, release_sites, trace):
    """``((latent, dependents), ...)`` for the continuous latent sites, checked."""
    groups, owner = [], {}
    for site in continuous:
        deps = _dependents(model, data, name, site, trace)
        for dep in deps:
            if dep not in release_sites:
                raise ValueError(
                    f"mechanism {name!r}: the site {dep!r} depends on the continuous latent "
                    f"site {site!r}, and only release sites may (their joint density is what "
                    f"{site!r}'s marginal_log_prob gives); release {dep!r} or make it independent."
                )
            if dep in owner:
                raise ValueError(
                    f"mechanism {name!r}: the release site {dep!r} depends on two continuous "
                    f"latent sites, {owner[dep]!r} and {site!r}; dpaudit marginalises one per site."
                )
            owner[dep] = site
        fn = trace[site]["fn"]
        pairs = [(trace[d]["fn"], trace[d]["value"]) for d in deps]
        try:
            # traced, never run: the protocol asks a jit-able marginal, and run op by op
            # this check compiled a program per operation (svt-program: ~50)
            jax.eval_shape(lambda fn=fn, pairs=pairs: fn.marginal_log_prob(pairs))
        except (TypeError, ValueError) as error:
            raise type(error)(f"mechanism {name!r}, latent site {site!r}: {error}") from None
        groups.append((site, tuple(deps)))
    return tuple(groups)


class JointRelease(Distribution):
    """The joint law of a model's release sites, as one distribution over a flat vector.

    Built by :func:`joint_release` (through
    :meth:`dpaudit.Mechanism.release_distribution`); not a pytree (the engine closes
    over it in ``jit``).

    Attributes:
        sites: the sites in the flat vector, release sites then shared sites.
        release_sites: the release sites.
        shared_sites: the shared sites (conditioned on: audited as released).
        latent_sites: the discrete latent sites marginalised by enumeration.
        continuous_sites: the continuous latent sites marginalised by their distribution's
            ``marginal_log_prob`` (module docstring).
        marginalised: ``{continuous latent site: the release sites depending on it}``.
        shapes: ``{site: value shape}``.
    """

    arg_constraints = {}
    support = constraints.real_vector

    def __init__(self, model, data, release_sites, shared, latent, trace, name):
        self._model, self._data, self._name = model, data, name
        self.release_sites, self.shared_sites = tuple(release_sites), tuple(shared)
        discrete, continuous = _split_latent(name, latent, trace)
        self.latent_sites, self.continuous_sites = tuple(discrete), tuple(continuous)
        self._groups = _marginal_groups(model, data, name, continuous, release_sites, trace)
        self.sites = self.release_sites + self.shared_sites
        self._shapes = tuple(tuple(np.shape(trace[s]["value"])) for s in self.sites)
        self._dtypes = tuple(jnp.asarray(trace[s]["value"]).dtype for s in self.sites)
        self._sizes = tuple(int(np.prod(shape, dtype=np.int64)) for shape in self._shapes)
        enumerated = _enumeration(name, discrete, trace)[0] if discrete else {}
        self._enumerated = tuple(jnp.asarray(enumerated[k]) for k in self.latent_sites)
        super().__init__(batch_shape=(), event_shape=(sum(self._sizes),))

    @property
    def marginalised(self) -> dict:
        """``{continuous latent site: the release sites whose law depends on it}``."""
        return {site: deps for site, deps in self._groups}

    @property
    def shapes(self) -> dict:
        """``{site: value shape}`` of the sites in the flat vector."""
        return dict(zip(self.sites, self._shapes, strict=True))

    def privacy_accounting(self, other, *, discretization: float = 1e-4):
        """The accounting the model declares for this pair, if any (adaptive releases).

        The hook read by :func:`dpaudit.accounting.profiles.declared_accounting`. A model may carry
        an attribute ``privacy_accounting(data, data_prime, *, discretization)`` returning
        an :class:`~dpaudit.accounting.profiles.ExactAccounting` of the joint release under the two
        datasets (or ``None``): an adaptive release whose per-site conditional pairs are
        dominated by known worst pairs declares their non-adaptive composition
        (docs/whole-trace.md, "Adaptive sites with bounded conditional pairs"). It is
        consulted only when both laws come from the same model with the same layout.

        Args:
            other: the joint law under the neighbouring dataset.
            discretization: grid spacing of numerical curves.

        Returns:
            The model's accounting of ``(self, other)``, or ``None``.
        """
        hook = getattr(self._model, "privacy_accounting", None)
        if not callable(hook) or not isinstance(other, JointRelease):
            return None
        if other._model is not self._model or other.sites != self.sites:
            return None
        return hook(self._data, other._data, discretization=discretization)

    # A pytree: the dataset, the enumerated latent values and the model's closed-over
    # numbers (dpaudit.core.closures) are leaves; the model's code and the layout are
    # static, so both directions of an audit (same model, two datasets), and a second
    # audit of the family with other constants (a new closure per build), share one
    # compilation per chunk shape.
    _STATIC = (
        "_model",
        "_name",
        "release_sites",
        "shared_sites",
        "latent_sites",
        "continuous_sites",
        "_groups",
        "sites",
        "_shapes",
        "_dtypes",
        "_sizes",
        "_batch_shape",
        "_event_shape",
        "_validate_args",
    )

    def tree_flatten(self):
        """Leaves ``(data, enumerated latent values, model numbers)``; the rest is static.

        Returns:
            ``(leaves, aux)``.

        Raises:
            TypeError: when the dataset is not made of arrays (the engine then closes
                over the distribution instead of passing it to ``jit``).
        """
        for leaf in jax.tree_util.tree_leaves(self._data):
            if not isinstance(leaf, (np.ndarray, jax.Array, int, float, np.number)):
                raise TypeError("a JointRelease pytree needs a dataset made of arrays.")
        # the name is only read when built (messages): two variants of a family share aux
        fields = tuple(None if k == "_name" else getattr(self, k) for k in self._STATIC)
        lifted = _lifted_model(self)
        if lifted is None:
            return (self._data, self._enumerated, ()), (None, fields)
        description, numbers = lifted
        return (self._data, self._enumerated, numbers), (description, (None, *fields[1:]))

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        """Rebuild from :meth:`tree_flatten`'s output.

        Args:
            aux: ``(model description or None, the static fields)``.
            leaves: ``(data, enumerated latent values, model numbers)``.

        Returns:
            A :class:`JointRelease`.
        """
        description, fields = aux
        new = cls.__new__(cls)
        for key, value in zip(cls._STATIC, fields, strict=True):
            setattr(new, key, value)
        new._data, new._enumerated, numbers = leaves
        if description is not None:
            new._model = rebuild_closure(description, numbers)
        return new

    # ----------------------------------------------------------- flat <-> sites

    def flatten(self, values: Mapping) -> jax.Array:
        """The flat vector of site values (release sites, then shared sites).

        Args:
            values: ``{site: value}`` for every site in :attr:`sites`.

        Returns:
            ``(m,)`` float64.
        """
        return jnp.concatenate(
            [jnp.reshape(jnp.asarray(values[s], dtype=jnp.float64), (-1,)) for s in self.sites]
        )

    def unflatten(self, x) -> dict:
        """``{site: value}`` of one flat release (each site in its own shape and dtype).

        Args:
            x: ``(m,)`` a flat release.

        Returns:
            The site values.
        """
        out, start = {}, 0
        for site, size, shape, dtype in zip(
            self.sites, self._sizes, self._shapes, self._dtypes, strict=True
        ):
            out[site] = x[start : start + size].reshape(shape).astype(dtype)
            start += size
        return out

    # ---------------------------------------------------------------- the law

    def _one_sample(self, key):
        trace = model_trace(self._model, self._data, key)
        return self.flatten({s: trace[s]["value"] for s in self.sites})

    def sample(self, key, sample_shape=()):
        """Releases drawn by running the model forward (seeded, vmapped).

        Args:
            key: a JAX random key.
            sample_shape: leading shape.

        Returns:
            ``(*sample_shape, m)`` flat releases.
        """
        n = math.prod(sample_shape)
        keys = jax.random.split(key, max(n, 1))
        draws = jax.vmap(self._one_sample)(keys)
        return draws[:n].reshape((*sample_shape, *self.event_shape))

    def _trace_at(self, substituted):
        seeded = _SplitSeed(self._model, rng_seed=host_key(0))  # numpyro's seed 0, bit for bit
        with host_parameter_checks():
            return handlers.trace(handlers.substitute(seeded, data=substituted)).get_trace(
                self._data
            )

    def _site_log_probs(self, substituted) -> jax.Array:
        trace = self._trace_at(substituted)
        marginalised = {s for _, deps in self._groups for s in deps}
        total = jnp.zeros(())
        for site in (*self.sites, *self.latent_sites):
            if site not in marginalised:
                entry = trace[site]
                total = total + jnp.sum(supported_log_prob(entry["fn"], entry["value"]))
        for site, deps in self._groups:  # the continuous latent site integrated out
            pairs = [(trace[d]["fn"], trace[d]["value"]) for d in deps]
            total = total + trace[site]["fn"].marginal_log_prob(pairs)
        return total

    def _one_log_prob(self, x) -> jax.Array:
        values = self.unflatten(x)
        if not self.latent_sites:
            return self._site_log_probs(values)

        def one_value(latent_values):
            return self._site_log_probs({**values, **latent_values})

        joint = jax.vmap(one_value)(dict(zip(self.latent_sites, self._enumerated, strict=True)))
        return jax.scipy.special.logsumexp(joint)

    def log_prob(self, value):
        """``log p(x)`` of the joint law (latent discrete sites summed out exactly).

        Args:
            value: ``(..., m)`` flat releases.

        Returns:
            ``(...)`` log densities.
        """
        value = jnp.asarray(value, dtype=jnp.float64)
        lead = value.shape[:-1]
        flat = value.reshape((-1, value.shape[-1]))
        return jax.vmap(self._one_log_prob)(flat).reshape(lead)

    def log_prob_error(self, value) -> float:
        """A certified bound on the numerical error of :meth:`log_prob` at one release.

        The sum of the sites' declared errors (:func:`dpaudit.accounting.suprema.log_density_error`)
        and of the marginalised latent sites' ``marginal_log_prob_error`` (absent: closed
        form, 0); with discrete latent sites the largest over the enumeration (a
        log-sum-exp of terms each off by at most ``e`` is off by at most ``e``). ``0``
        exactly when nothing is computed numerically.

        Args:
            value: ``(m,)`` one flat release.

        Returns:
            The bound (``>= 0``, possibly ``inf``).
        """
        values = self.unflatten(jnp.asarray(value, dtype=jnp.float64))
        n = int(self._enumerated[0].shape[0]) if self.latent_sites else 1
        marginalised = {s for _, deps in self._groups for s in deps}
        plain = [s for s in (*self.sites, *self.latent_sites) if s not in marginalised]
        worst = 0.0
        for i in range(n):
            latent = {k: e[i] for k, e in zip(self.latent_sites, self._enumerated, strict=True)}
            trace = self._trace_at({**values, **latent})
            errors = [log_density_error(trace[s]["fn"], trace[s]["value"]) for s in plain]
            numerical = False
            for site, deps in self._groups:
                bound = getattr(trace[site]["fn"], "marginal_log_prob_error", None)
                if callable(bound):
                    numerical = True
                    errors.append(float(bound([(trace[d]["fn"], trace[d]["value"]) for d in deps])))
            numerical = numerical or any(
                callable(getattr(trace[s]["fn"], "log_prob_error", None)) for s in plain
            )
            if not numerical:
                return 0.0  # no site is computed numerically (the same in every term)
            worst = max(worst, math.fsum(errors))
        return worst

    def shapes_size(self, site: str) -> int:
        """The number of coordinates of a site in the flat vector.

        Args:
            site: a site of :attr:`sites`.

        Returns:
            The site's value size.
        """
        return self._sizes[self.sites.index(site)]

    def site_distributions(self) -> dict:
        """The release sites' distributions in the model's seed-0 trace.

        Returns:
            ``{site: numpyro distribution}``.
        """
        laws = _SITE_LAWS.get(self)
        if laws is None:  # a law made by joint_release knows them from the trace it read
            trace = model_trace(self._model, self._data)
            laws = _SITE_LAWS[self] = {s: trace[s]["fn"] for s in self.release_sites}
        return dict(laws)

    def exact_sup_loss(self, other):
        """Certified bounds on the suprema of the loss: the sum of the sites' suprema.

        For a non-adaptive release without latent or shared sites the law is the
        product of the sites' laws, so ``L(x) = sum_i L_i(x_i)`` with each ``L_i`` a
        function of its own coordinates, and ``sup L = sum_i sup L_i`` (attained, or
        approached, site by site). Each site's bounds come from
        :func:`dpaudit.accounting.suprema.exact_sup_loss`; sums are rounded outward.

        An adaptive release (a site's law depends on earlier released values) goes by
        :func:`adaptive_sup_loss`: each adaptive site's law declares bounds that hold
        uniformly over the earlier values (``uniform_sup_loss``), and the bounds add up.
        A release with marginalised continuous latent sites (and no other hidden or
        shared randomness) whose sites are discrete goes by enumeration instead
        (:func:`_marginal_sup_loss`).

        Args:
            other: the joint release under the other dataset.

        Returns:
            An :class:`~dpaudit.accounting.suprema.ExactSupLoss` (method ``"sites: ..."``,
            ``"adaptive sites: ..."`` or ``"latent marginal"``), or ``None`` when a site's
            supremum is not known, or an adaptive site declares no history-uniform bound.
        """
        if not isinstance(other, JointRelease) or self.sites != other.sites:
            return None
        if self._groups and not (self.latent_sites or self.shared_sites):
            return _marginal_sup_loss(self, other)
        if self.adaptive() or other.adaptive():
            return adaptive_sup_loss(self, other)
        mine, theirs = self.site_distributions(), other.site_distributions()
        parts = [exact_sup_loss(mine[s], theirs[s]) for s in self.release_sites]
        if any(p is None for p in parts):
            return None
        return _summed(parts, "sites: ")

    def latent_mixture(self) -> tuple | None:
        """The release sites' laws at every value of the discrete latent sites, grouped.

        The release law is the mixture, over the enumerated latent values, of the release
        sites' laws at each value, weighted by the latent sites' probabilities. Values that
        give the same laws (bit-identical parameters) are merged.

        Returns:
            ``((probability, {site: law}), ...)`` over the distinct laws of positive
            probability, or ``None`` when
            there is no discrete latent site, there are shared or continuous latent sites,
            a release site's law depends on another release site's value, or the model
            cannot be traced with the latent values as inputs.
        """
        if not self.latent_sites or self.shared_sites or self.continuous_sites:
            return None
        trace = model_trace(self._model, self._data)
        release = {s: jnp.asarray(trace[s]["value"]) for s in self.release_sites}

        def laws(release_values, latent):
            traced = self._trace_at({**release_values, **latent})
            if any(_hidden_tracer(traced[s]["fn"]) for s in self.release_sites):
                raise TypeError("a law keeps a traced value outside its leaves")
            log_w = sum(
                jnp.sum(traced[k]["fn"].log_prob(traced[k]["value"])) for k in self.latent_sites
            )
            return [traced[s]["fn"] for s in self.release_sites], log_w

        latent = dict(zip(self.latent_sites, self._enumerated, strict=True))
        first = {k: v[0] for k, v in latent.items()}
        try:
            closed = jax.make_jaxpr(lambda r: jax.tree_util.tree_leaves(laws(r, first)[0]))(release)
            if _depends_on_inputs(closed.jaxpr):
                return None
            fns, log_w = jax.jit(jax.vmap(lambda values: laws(release, values)))(latent)
        except Exception:  # any failure to trace: not a mixture dpaudit can read
            return None
        leaves, treedef = jax.tree_util.tree_flatten(fns)
        rows = np.concatenate([np.asarray(x).reshape(len(log_w), -1) for x in leaves], axis=1)
        _, first_index, group = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        log_w, group = np.asarray(log_w, dtype=np.float64), np.reshape(group, -1)
        out = []
        for g, i in enumerate(first_index):
            at = jax.tree_util.tree_unflatten(treedef, [np.asarray(x)[i] for x in leaves])
            weight = float(np.exp(jax.scipy.special.logsumexp(log_w[group == g])))
            if weight > 0:  # latent values of probability 0 are not part of the mixture
                out.append((weight, dict(zip(self.release_sites, at, strict=True))))
        return tuple(out)

    def adaptive(self) -> bool:
        """Whether a release site's law may depend on another site's value.

        Decided on the model's ``jaxpr``: the release sites' values are substituted as
        inputs and every input that reaches a leaf of some site's distribution
        (structurally, through any primitive) makes the release adaptive, as does a law
        that keeps a released value outside its leaves (a static field, an undeclared
        attribute). Models that cannot be traced with their sites as inputs count as
        adaptive (the safe side: they are then audited through their joint density).

        Returns:
            True unless every site's law is provably independent of the other sites.
        """
        if self.latent_sites or self.shared_sites or self.continuous_sites:
            return True
        if self not in _ADAPTIVE:  # a trace of the model: once per law (the plan asks twice)
            _ADAPTIVE[self] = self._traced_adaptive()
        return _ADAPTIVE[self]

    def _traced_adaptive(self) -> bool:
        def laws(values):
            trace = handlers.trace(
                handlers.substitute(handlers.seed(self._model, rng_seed=0), data=values)
            ).get_trace(self._data)
            if any(_hidden_tracer(trace[s]["fn"]) for s in self.release_sites):
                raise TypeError("a law keeps a released value outside its leaves")
            return [jax.tree_util.tree_leaves(trace[s]["fn"]) for s in self.release_sites]

        # the jaxpr reads only the sites' shapes and dtypes (known since the law was built):
        # no eager model trace for example values
        layout = zip(self.sites, self._shapes, self._dtypes, strict=True)
        values = {
            s: np.zeros(shape, dtype) for s, shape, dtype in layout if s in self.release_sites
        }
        try:
            closed = jax.make_jaxpr(laws)(values)
        except Exception:  # any failure to trace: treat as adaptive (density route)
            return True
        return _depends_on_inputs(closed.jaxpr)


#: ``{law: JointRelease.adaptive()}`` (not an attribute: a pytree round trip keeps none).
_ADAPTIVE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: ``{law: {release site: distribution}}`` of the model's seed-0 trace on the law's data: the
#: plan asks a joint law for its sites' laws up to four times, each an eager model trace.
_SITE_LAWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: ``{model description: whether the model traces with its numbers as arguments}``, decided
#: once per family and layout in a process (dpaudit.core.closures).
_LIFTABLE: dict = {}


def _lifted_model(law: JointRelease):
    """``(description, numbers)`` of the law's model when they can be ``jit`` arguments.

    A model that branches in Python on a closed-over number (or otherwise fails to trace
    with its numbers as tracers) stays whole, static by identity, as before; decided by
    tracing (never running) one log density and one draw, once per description.
    """
    lifted = lift_closure(law._model)
    if lifted is None:
        return None
    description, numbers = lifted
    key = (description, law.sites, law._shapes, law.latent_sites)
    if key not in _LIFTABLE:

        def both(values):
            copied = copy.copy(law)
            copied._model = rebuild_closure(description, values)
            x = jnp.zeros(law.event_shape)
            return copied._one_log_prob(x), copied._one_sample(host_key(0))

        try:
            jax.eval_shape(both, numbers)
            _LIFTABLE[key] = True
        except Exception:  # any failure to trace with tracers: keep the model whole
            _LIFTABLE[key] = False
    return lifted if _LIFTABLE[key] else None


def _tainted_outputs(jaxpr, inputs=None) -> list[bool]:
    """For each output of ``jaxpr``: whether it is computed (structurally) from an input.

    ``inputs`` (indices into ``jaxpr.invars``) restricts the sources; all inputs by default.
    An equation with any tainted operand taints all its outputs (sub-jaxprs included), so
    the answer errs on the side of "depends".
    """
    sources = jaxpr.invars if inputs is None else [jaxpr.invars[i] for i in inputs]
    tainted = {id(v) for v in sources}
    for eqn in jaxpr.eqns:
        if any(id(v) in tainted for v in eqn.invars if not _is_literal(v)):
            tainted.update(id(v) for v in eqn.outvars)
    return [not _is_literal(v) and id(v) in tainted for v in jaxpr.outvars]


def _depends_on_inputs(jaxpr) -> bool:
    """Whether any output of ``jaxpr`` is computed (structurally) from one of its inputs."""
    return any(_tainted_outputs(jaxpr))


def _is_literal(v) -> bool:
    return type(v).__name__ == "Literal"


#: Model evaluations the exact route over marginalised releases may spend, per dataset,
#: beyond which it declines (the Monte Carlo route then decides): each costs a model trace
#: and one closed-form integral in Python, a few milliseconds.
MAX_PREFIXES = 8 * MAX_ENUMERATION


def _group_laws(law: JointRelease, values: dict, order):
    """``(latent laws, dependents' laws, release sites' laws)`` with every site substituted."""
    trace = law._trace_at(values)
    latent = [trace[site]["fn"] for site, _ in law._groups]
    deps = [[trace[d]["fn"] for d in group] for _, group in law._groups]
    return latent, deps, [trace[s]["fn"] for s in order]


def _prefix_laws(law: JointRelease, order, fill: dict):
    """A jitted ``prefix -> _group_laws`` (the sites after the prefix take ``fill``).

    A site's law depends only on the values before it, so the prefix's laws are exact
    whatever fills the rest, and every prefix has one pytree structure: one compilation
    for all prefixes, shared by both datasets when the law is a pytree (a model trace in
    Python costs ~10 ms; a call of this, ~0.1 ms).
    """
    try:
        jax.tree_util.tree_flatten(law)
        compiled = jax.jit(_group_laws, static_argnums=2)
        return lambda prefix: compiled(law, {**fill, **prefix}, tuple(order))
    except TypeError:  # a dataset that is not made of arrays: close over it
        closed = jax.jit(lambda values: _group_laws(law, values, order))
        return lambda prefix: closed({**fill, **prefix})


def _certified_prefix(law: JointRelease, laws, prefix: dict):
    """Certified ``[lower, upper]`` of ``log P(prefix)`` (the first sites in model order).

    The sites after the prefix integrate to 1 given the latent value, so each group's
    marginal over the prefix's sites is the prefix's mass. Also returns the sites' laws.
    """
    latent, deps, site_laws = laws(prefix)
    lower, upper = [], []
    for fn, (_, group), group_laws in zip(latent, law._groups, deps, strict=True):
        pairs = [(g, prefix[d]) for d, g in zip(group, group_laws, strict=True) if d in prefix]
        lo, hi = fn.certified_marginal_log_prob(pairs)
        lower.append(lo)
        upper.append(hi)
    if any(h == -math.inf for h in upper):
        return (-math.inf, -math.inf), site_laws
    lo, hi = math.fsum(lower), math.fsum(upper)
    lo = math.nextafter(lo, -math.inf) if math.isfinite(lo) else lo
    hi = math.nextafter(hi, math.inf) if math.isfinite(hi) else hi
    return (lo, hi), site_laws


def _marginal_sup_loss(p: JointRelease, q: JointRelease) -> ExactSupLoss | None:
    """Certified suprema over every release of an enumerable marginalised release.

    Every release site must depend on a marginalised continuous latent site whose law
    provides ``certified_marginal_log_prob``, and be a scalar with an enumerable support.
    The releases are enumerated site by site in the model's order (so the cutoff of an
    SVT program prunes them): a prefix of mass certainly 0 under both datasets is not
    extended. Declines (``None``) past :data:`MAX_ENUMERATION` releases or
    :data:`MAX_PREFIXES` prefixes, or when a bracket cannot be computed.
    """
    trace = model_trace(p._model, p._data)
    order = [k for k in trace if k in p.release_sites]
    covered = {s for _, deps in p._groups for s in deps}
    if set(order) != covered or p._groups != q._groups:
        return None
    for site, _ in p._groups:
        if not callable(getattr(trace[site]["fn"], "certified_marginal_log_prob", None)):
            return None
    for site in order:
        fn = trace[site]["fn"]
        if not getattr(fn, "has_enumerate_support", False) or np.size(trace[site]["value"]) != 1:
            return None
    fill = {s: jnp.asarray(trace[s]["value"]) for s in order}
    laws_p, laws_q = _prefix_laws(p, order, fill), _prefix_laws(q, order, fill)
    leaves, visited = [], 0
    stack = [({}, [trace[s]["fn"] for s in order])]
    try:
        while stack:
            prefix, site_laws = stack.pop()
            j = len(prefix)
            for v in np.asarray(site_laws[j].enumerate_support()).ravel():
                child = {**prefix, order[j]: jnp.asarray(v, dtype=fill[order[j]].dtype)}
                bp, child_laws = _certified_prefix(p, laws_p, child)
                bq, _ = _certified_prefix(q, laws_q, child)
                visited += 1
                if bp[1] == -math.inf and bq[1] == -math.inf:
                    continue
                if j + 1 == len(order):
                    leaves.append((bp, bq))
                else:
                    stack.append((child, child_laws))
            if len(leaves) > MAX_ENUMERATION or visited > MAX_PREFIXES:
                return None
    except OverflowError:
        return None
    if not leaves:
        return None
    log_p = np.array([bp for bp, _ in leaves])
    log_q = np.array([bq for _, bq in leaves])
    return finite_sup_loss(log_p, log_q, method="latent marginal")


def _summed(parts, prefix: str) -> ExactSupLoss:
    """The sum of the sites' bounds, each sum rounded one float outward."""

    def total(field, direction):
        value = math.fsum(getattr(p, field) for p in parts)
        return math.nextafter(value, direction) if math.isfinite(value) else value

    return ExactSupLoss(
        forward_lower=total("forward_lower", -math.inf),
        forward_upper=total("forward_upper", math.inf),
        backward_lower=total("backward_lower", -math.inf),
        backward_upper=total("backward_upper", math.inf),
        method=prefix + "+".join(sorted({p.method for p in parts})),
    )


def _derived_field(law, field: str) -> bool:
    """Whether ``field`` is a numpyro ``lazy_property`` of the law's class.

    numpyro caches such a field in the instance (``MultivariateNormal(covariance_matrix=...)``
    keeps ``covariance_matrix`` and ``precision_matrix`` beside its ``scale_tril`` leaf,
    ``Wishart`` its ``scale_matrix``) but leaves it out of the pytree: unflattening recomputes
    it from the leaves, so it is a function of them and any dependence it carries shows in
    the leaves.
    """
    return any(isinstance(vars(cls).get(field), lazy_property) for cls in type(law).__mro__)


def _hidden_tracer(fn) -> bool:
    """Whether a law keeps a traced value outside its pytree leaves (a static field, an
    undeclared attribute, also of a nested law), where a dependence analysis of its
    leaves could not see it. Fields numpyro derives from the leaves (``lazy_property``,
    :func:`_derived_field`) are not hidden."""
    visible = {id(leaf) for leaf in jax.tree_util.tree_leaves(fn)}

    def hidden(law) -> bool:
        for field, value in vars(law).items():
            if _derived_field(law, field):
                continue
            if isinstance(value, Distribution):
                if hidden(value):
                    return True
                continue
            for leaf in jax.tree_util.tree_leaves(value):
                if not is_concrete(leaf) and id(leaf) not in visible:
                    return True
        return False

    return hidden(fn)


def _without(fn, fields):
    """A shallow copy of a law with the named fields emptied (their leaves left out)."""
    rest = copy.copy(fn)
    for field in fields:
        setattr(rest, field, None)
    return rest


def _role(fn, history: list[bool], uniform_by_history, uniform_by_data) -> str | None:
    """One site's role from the taint of its other leaves and of its uniform fields."""
    if any(history):
        return None  # a parameter not declared uniform depends on the earlier values
    if not any(uniform_by_history):
        return "fixed"
    if any(uniform_by_data) or not callable(getattr(fn, "uniform_sup_loss", None)):
        return None  # the design would differ between the datasets at one history
    return "uniform"


def _site_roles(law: JointRelease) -> dict | None:
    """``{site: "fixed" | "uniform" | None}``: how each release site's law uses the history.

    Traced on the model's ``jaxpr`` with the release values *and the dataset* as inputs.
    ``"fixed"``: no parameter of the law depends on another site's value. ``"uniform"``:
    only the fields the law names in ``uniform_fields`` do, those fields do not depend
    on the dataset, and the law declares ``uniform_sup_loss``. ``None``: anything else
    (another parameter depends on the history, a uniform field on the data). ``None``
    for the whole dict when the model cannot be traced that way, or a law keeps a traced
    value where its leaves do not show it (the safe side: no exact supremum).
    """
    trace = model_trace(law._model, law._data)
    values = {s: jnp.asarray(trace[s]["value"]) for s in law.release_sites}
    fns = {s: trace[s]["fn"] for s in law.release_sites}
    fields = {s: tuple(getattr(fns[s], "uniform_fields", ())) for s in law.release_sites}

    def laws(site_values, data):
        traced = handlers.trace(
            handlers.substitute(handlers.seed(law._model, rng_seed=0), data=site_values)
        ).get_trace(data)
        out = []
        for s in law.release_sites:
            fn = traced[s]["fn"]
            if _hidden_tracer(fn):
                raise TypeError(f"site {s!r} keeps a traced value outside its leaves")
            uniform = [getattr(fn, f) for f in fields[s]]
            out.append(
                (
                    jax.tree_util.tree_leaves(_without(fn, fields[s])),
                    jax.tree_util.tree_leaves(uniform),
                )
            )
        return out

    try:
        closed, shapes = jax.make_jaxpr(laws, return_shape=True)(values, law._data)
    except Exception:  # any failure to trace: the roles cannot be decided (no exact supremum)
        return None
    n_history = len(jax.tree_util.tree_leaves(values))
    by_history = _tainted_outputs(closed.jaxpr, range(n_history))
    by_data = _tainted_outputs(closed.jaxpr, range(n_history, len(closed.jaxpr.invars)))
    roles, start = {}, 0
    for s, (rest, uniform) in zip(law.release_sites, shapes, strict=True):
        middle, end = start + len(rest), start + len(rest) + len(uniform)
        roles[s] = _role(
            fns[s], by_history[start:middle], by_history[middle:end], by_data[middle:end]
        )
        start = end
    return roles


def undeclared_adaptive_sites(law: JointRelease) -> tuple[str, ...] | None:
    """The release sites whose law depends on earlier released values in an undeclared way.

    A site whose parameters (other than the fields it names in ``uniform_fields``, with a
    ``uniform_sup_loss``) are computed from other sites' values, decided on the model's
    ``jaxpr`` as :func:`adaptive_sup_loss` does. Used to say why an adaptive release gets
    no exact accounting.

    Args:
        law: a joint release.

    Returns:
        The site names (possibly empty), or ``None`` when the model cannot be traced with
        its released values as inputs.
    """
    roles = _site_roles(law)
    if roles is None:
        return None
    return tuple(site for site, role in roles.items() if role is None)


def adaptive_sup_loss(p: JointRelease, q: JointRelease) -> ExactSupLoss | None:
    """Certified suprema of an adaptive release whose sites declare history-uniform bounds.

    The loss is the chain rule ``L(x) = sum_i L_i(x_i | x_<i)``. A site whose law does
    not depend on the earlier values contributes :func:`dpaudit.accounting.suprema.exact_sup_loss` of
    its pair; an adaptive site's law must name the fields computed from the history in
    ``uniform_fields`` and declare ``uniform_sup_loss(other) -> ExactSupLoss | None``,
    bounds that hold for *every* value of those fields: the upper bounds at least
    ``sup_h sup L_i(. | h)``, the lower bounds at most ``inf_h sup L_i(. | h)``. Then
    ``sum_i`` of the upper bounds bounds ``sup L`` (each term of the chain rule is below
    its site's bound almost surely) and ``sum_i`` of the lower bounds is below it (a
    near-maximal first value, then a near-maximal next one given it, ...; proof in
    docs/whole-trace.md#adaptive-uniform-suprema). The pair of laws of a site is read at
    one common history (the release drawn under ``D`` with seed 0, substituted in both
    models). Which fields depend on the history, and that the uniform fields do not
    depend on the dataset, is decided on the model's ``jaxpr`` (:func:`_site_roles`).

    Args:
        p: the joint release under ``D``.
        q: the joint release under ``D'``.

    Returns:
        The summed bounds (method ``"adaptive sites: ..."``), or ``None`` when the release
        has latent or shared sites, a site depends on the history in a way not declared
        uniform, a site's bound is unknown, or the model cannot be traced.
    """
    for law in (p, q):
        if law.latent_sites or law.shared_sites or law.continuous_sites:
            return None
    if p.sites != q.sites or p._shapes != q._shapes:
        return None
    declaring = [
        callable(getattr(fn, "uniform_sup_loss", None))
        for fn in (*p.site_distributions().values(), *q.site_distributions().values())
    ]
    if not any(declaring):
        return None  # some site depends on the history and none declares a uniform bound
    roles_p, roles_q = _site_roles(p), _site_roles(q)
    if roles_p is None or roles_q is None:
        return None
    trace = model_trace(p._model, p._data)
    history = {s: trace[s]["value"] for s in p.release_sites}
    laws_p, laws_q = p._trace_at(history), q._trace_at(history)
    parts = []
    for site in p.release_sites:
        role_p, role_q = roles_p[site], roles_q[site]
        if role_p is None or role_q is None:
            return None
        law_p, law_q = laws_p[site]["fn"], laws_q[site]["fn"]
        if "uniform" in (role_p, role_q):
            declared = getattr(law_p, "uniform_sup_loss", None)
            if not callable(declared) or type(law_p) is not type(law_q):
                return None
            parts.append(declared(law_q))
        else:
            parts.append(exact_sup_loss(law_p, law_q))
        if parts[-1] is None:
            return None
    return _summed(parts, "adaptive sites: ")


def joint_release(model, data, release_sites, name: str, *, rng_seed=0, trace=None):
    """The release law of a model: one site's distribution, or the :class:`JointRelease`.

    Args:
        model: the numpyro model.
        data: the dataset.
        release_sites: the release site names.
        name: the mechanism's name, for messages.
        rng_seed: seed of the trace that reads the sites.
        trace: ``model_trace(model, data, rng_seed)`` when the caller has made it (the
            audit's plan: the same trace checks the model's randomness), or ``None``.

    Returns:
        The single release site's distribution when the model has one release site
        and no declared latent or shared site; otherwise a :class:`JointRelease`.

    Raises:
        ValueError: a release site missing from the trace, an undeclared random site,
            a continuous latent site without a marginal density (or with dependents
            other than release sites), or an enumeration above :data:`MAX_ENUMERATION`.
        TypeError: a single release site drawn from something that is not a
            numpyro ``Distribution``.
    """
    trace = model_trace(model, data, rng_seed) if trace is None else trace
    latent, shared = _classify(name, release_sites, trace)
    _check_latent_rates(name, latent, trace)
    for site in release_sites:
        fn = trace[site]["fn"]
        if not isinstance(fn, Distribution):
            raise TypeError(
                f"mechanism {name!r}: the release site {site!r} is drawn from "
                f"{type(fn).__name__}, not a numpyro Distribution with a log_prob."
            )
    if len(release_sites) == 1 and not latent and not shared:
        return trace[release_sites[0]]["fn"]
    law = JointRelease(model, data, release_sites, shared, latent, trace, name)
    if isinstance(rng_seed, int) and rng_seed == 0:  # the trace site_distributions reads
        _SITE_LAWS[law] = {s: trace[s]["fn"] for s in release_sites}
    return law
