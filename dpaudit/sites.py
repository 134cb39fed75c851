r"""Whole-trace releases: the joint law of every release site of a numpyro model.

A mechanism may release several sample sites (``Mechanism.release_sites``).
Every other random (non-observed) site of its model must be declared, with
numpyro's ``infer`` dict:

* ``infer={"dpaudit": "latent"}`` — hidden randomness, integrated out of the
  release density. Discrete sites with a finite support are marginalised
  exactly (a log-sum-exp over the enumerated joint support, at most
  :data:`MAX_ENUMERATION` joint values); a continuous latent site is refused
  (sample the release from a distribution whose ``log_prob`` integrates it
  out, as the catalogue's ``SparseVector`` does for its threshold noise).
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
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions import Distribution, constraints

from dpaudit.exact import ExactSupLoss, exact_sup_loss

__all__ = [
    "DECLARATIONS",
    "MAX_ENUMERATION",
    "JointRelease",
    "check_release_sites",
    "declared_role",
    "joint_release",
    "model_trace",
]

#: The values of ``infer["dpaudit"]`` that declare a random site that is not released.
DECLARATIONS = ("latent", "shared")

#: Largest number of joint values of the discrete latent sites marginalised by enumeration:
#: every release density costs this many model evaluations, so beyond it the audit would
#: be too slow to be useful (and memory grows with it in the vmapped evaluation).
MAX_ENUMERATION = 4096


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

    Args:
        model: a numpyro model ``model(data)``.
        data: the dataset.
        rng_seed: an integer seed or a JAX key.

    Returns:
        The numpyro trace (an ordered dict of sites).
    """
    return handlers.trace(handlers.seed(model, rng_seed=rng_seed)).get_trace(data)


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
        shapes: ``{site: value shape}``.
    """

    arg_constraints = {}
    support = constraints.real_vector

    def __init__(self, model, data, release_sites, shared, latent, trace, name):
        self._model, self._data, self._name = model, data, name
        self.release_sites, self.shared_sites = tuple(release_sites), tuple(shared)
        self.latent_sites = tuple(latent)
        self.sites = self.release_sites + self.shared_sites
        self._shapes = tuple(tuple(np.shape(trace[s]["value"])) for s in self.sites)
        self._dtypes = tuple(jnp.asarray(trace[s]["value"]).dtype for s in self.sites)
        self._sizes = tuple(int(np.prod(shape, dtype=np.int64)) for shape in self._shapes)
        enumerated = _enumeration(name, self.latent_sites, trace)[0] if latent else {}
        self._enumerated = tuple(jnp.asarray(enumerated[k]) for k in self.latent_sites)
        super().__init__(batch_shape=(), event_shape=(sum(self._sizes),))

    @property
    def shapes(self) -> dict:
        """``{site: value shape}`` of the sites in the flat vector."""
        return dict(zip(self.sites, self._shapes, strict=True))

    # A pytree: the dataset and the enumerated latent values are leaves, the model and
    # the layout are static, so both directions of an audit (same model, two datasets)
    # share one compilation per chunk shape.
    _STATIC = (
        "_model",
        "_name",
        "release_sites",
        "shared_sites",
        "latent_sites",
        "sites",
        "_shapes",
        "_dtypes",
        "_sizes",
        "_batch_shape",
        "_event_shape",
        "_validate_args",
    )

    def tree_flatten(self):
        """Leaves ``(data, enumerated latent values)``; the rest is static.

        Returns:
            ``(leaves, aux)``.

        Raises:
            TypeError: when the dataset is not made of arrays (the engine then closes
                over the distribution instead of passing it to ``jit``).
        """
        for leaf in jax.tree_util.tree_leaves(self._data):
            if not isinstance(leaf, (np.ndarray, jax.Array, int, float, np.number)):
                raise TypeError("a JointRelease pytree needs a dataset made of arrays.")
        return (self._data, self._enumerated), tuple(getattr(self, k) for k in self._STATIC)

    @classmethod
    def tree_unflatten(cls, aux, leaves):
        """Rebuild from :meth:`tree_flatten`'s output.

        Args:
            aux: the static fields.
            leaves: ``(data, enumerated latent values)``.

        Returns:
            A :class:`JointRelease`.
        """
        new = cls.__new__(cls)
        for key, value in zip(cls._STATIC, aux, strict=True):
            setattr(new, key, value)
        new._data, new._enumerated = leaves
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

    def _site_log_probs(self, substituted) -> jax.Array:
        trace = handlers.trace(
            handlers.substitute(handlers.seed(self._model, rng_seed=0), data=substituted)
        ).get_trace(self._data)
        total = jnp.zeros(())
        for site in (*self.sites, *self.latent_sites):
            entry = trace[site]
            total = total + jnp.sum(entry["fn"].log_prob(entry["value"]))
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
        trace = model_trace(self._model, self._data)
        return {s: trace[s]["fn"] for s in self.release_sites}

    def exact_sup_loss(self, other):
        """Certified bounds on the suprema of the loss: the sum of the sites' suprema.

        For a non-adaptive release without latent or shared sites the law is the
        product of the sites' laws, so ``L(x) = sum_i L_i(x_i)`` with each ``L_i`` a
        function of its own coordinates, and ``sup L = sum_i sup L_i`` (attained, or
        approached, site by site). Each site's bounds come from
        :func:`dpaudit.exact.exact_sup_loss`; sums are rounded outward.

        Args:
            other: the joint release under the other dataset.

        Returns:
            An :class:`~dpaudit.exact.ExactSupLoss` (method ``"sites: ..."``), or ``None``
            when the release is adaptive or a site's supremum is not known.
        """
        if not isinstance(other, JointRelease) or self.sites != other.sites or self.adaptive():
            return None
        if other.adaptive():
            return None
        mine, theirs = self.site_distributions(), other.site_distributions()
        parts = [exact_sup_loss(mine[s], theirs[s]) for s in self.release_sites]
        if any(p is None for p in parts):
            return None

        def total(field, direction):
            value = math.fsum(getattr(p, field) for p in parts)
            return math.nextafter(value, direction) if math.isfinite(value) else value

        return ExactSupLoss(
            forward_lower=total("forward_lower", -math.inf),
            forward_upper=total("forward_upper", math.inf),
            backward_lower=total("backward_lower", -math.inf),
            backward_upper=total("backward_upper", math.inf),
            method="sites: " + "+".join(sorted({p.method for p in parts})),
        )

    def adaptive(self) -> bool:
        """Whether a release site's law may depend on another site's value.

        Decided on the model's ``jaxpr``: the release sites' values are substituted as
        inputs and every input that reaches a leaf of some site's distribution
        (structurally, through any primitive) makes the release adaptive. Models that
        cannot be traced with their sites as inputs count as adaptive (the safe side:
        they are then audited through their joint density).

        Returns:
            True unless every site's law is provably independent of the other sites.
        """
        if self.latent_sites or self.shared_sites:
            return True

        def laws(values):
            trace = handlers.trace(
                handlers.substitute(handlers.seed(self._model, rng_seed=0), data=values)
            ).get_trace(self._data)
            return [jax.tree_util.tree_leaves(trace[s]["fn"]) for s in self.release_sites]

        try:
            trace = model_trace(self._model, self._data)
            values = {s: jnp.asarray(trace[s]["value"]) for s in self.release_sites}
            closed = jax.make_jaxpr(laws)(values)
        except Exception:  # any failure to trace: treat as adaptive (density route)
            return True
        return _depends_on_inputs(closed.jaxpr)


def _depends_on_inputs(jaxpr) -> bool:
    """Whether any output of ``jaxpr`` is computed (structurally) from one of its inputs."""
    tainted = {id(v) for v in jaxpr.invars}
    for eqn in jaxpr.eqns:
        if any(id(v) in tainted for v in eqn.invars if not _is_literal(v)):
            tainted.update(id(v) for v in eqn.outvars)
    return any(id(v) in tainted for v in jaxpr.outvars if not _is_literal(v))


def _is_literal(v) -> bool:
    return type(v).__name__ == "Literal"


def joint_release(model, data, release_sites, name: str, *, rng_seed=0):
    """The release law of a model: one site's distribution, or the :class:`JointRelease`.

    Args:
        model: the numpyro model.
        data: the dataset.
        release_sites: the release site names.
        name: the mechanism's name, for messages.
        rng_seed: seed of the trace that reads the sites.

    Returns:
        The single release site's distribution when the model has one release site
        and no declared latent or shared site; otherwise a :class:`JointRelease`.

    Raises:
        ValueError: a release site missing from the trace, an undeclared random site,
            a continuous latent site, or an enumeration above :data:`MAX_ENUMERATION`.
        TypeError: a single release site drawn from something that is not a
            numpyro ``Distribution``.
    """
    trace = model_trace(model, data, rng_seed)
    latent, shared = _classify(name, release_sites, trace)
    for site in release_sites:
        fn = trace[site]["fn"]
        if not isinstance(fn, Distribution):
            raise TypeError(
                f"mechanism {name!r}: the release site {site!r} is drawn from "
                f"{type(fn).__name__}, not a numpyro Distribution with a log_prob."
            )
    if len(release_sites) == 1 and not latent and not shared:
        return trace[release_sites[0]]["fn"]
    return JointRelease(model, data, release_sites, shared, latent, trace, name)
