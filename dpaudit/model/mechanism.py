r"""The mechanism record: a numpyro model, the claim it makes, and how to read both.

A mechanism is declared once, as a frozen :class:`Mechanism`, and the audit
engine, the CLI and users all read it the same way:

* ``model(data)`` is a numpyro model. It computes the summary ``f_D`` from the
  dataset and samples the release at the site ``release_site`` (``"release"``)
  from a distribution whose ``log_prob`` is the *marginal* density of the
  release. A release of several sites names them all (``release_site=("a",
  "b")``, read back as ``release_sites``); every other random site must be
  declared ``infer={"dpaudit": "latent"}`` or ``"shared"`` (or observed), and
  the release law is then the joint law of the sites (:mod:`dpaudit.model.sites`,
  docs/whole-trace.md). So ``log p_D(x)`` can be
  evaluated at every release ``x`` and the privacy loss
  ``L(x) = log p_D(x) - log p_D'(x)`` follows from the model alone.
* ``claim`` is a frozen :class:`Claim`: epsilon, delta, adjacency relation,
  the norm in which the sensitivity was bounded, the bound used to calibrate,
  and the paper and theorem the guarantee rests on.
* ``summary(data)`` returns ``f_D`` in the coordinates of the release
  (grid values, coefficients, counts ...) and ``difference_norm(h)`` measures
  a difference ``h = f_D - f_D'`` in the claim's norm, so a test can compare
  ``difference_norm(summary(D) - summary(D'))`` with ``claim.sensitivity``.
  (``difference_norm`` was called ``sensitivity_norm`` before; that keyword
  and attribute still work for one release, with a ``DeprecationWarning``.)
* ``known_flaw`` is set only by the faulty catalogue: the true guarantee of a
  mechanism that claims more than it delivers.

Catalogue entries are *builders*: functions of public parameters (epsilon,
the dataset size ``n``, the data bound ...) that return a :class:`Mechanism`.
:func:`dpaudit.register` files a builder under a name; :func:`dpaudit.build`
and :func:`dpaudit.catalogue` read the registry (:mod:`dpaudit.model.registry`, which
finds the shipped catalogue :mod:`mechanisms` through an entry point).

Example — a user's own mechanism, in ten lines::

    >>> import jax.numpy as jnp, numpyro, numpyro.distributions as dist
    >>> from dpaudit import Claim, Mechanism
    >>> def noisy_mean(data, *, epsilon, bound):
    ...     mean = jnp.mean(jnp.clip(data, 0.0, bound))
    ...     numpyro.sample("release", dist.Laplace(mean, bound / (data.shape[0] * epsilon)))
    >>> n, epsilon, bound = 100, 1.0, 1.0
    >>> mech = Mechanism(
    ...     name="my-noisy-mean",
    ...     model=lambda data: noisy_mean(data, epsilon=epsilon, bound=bound),
    ...     claim=Claim(epsilon=epsilon, sensitivity=bound / n, sensitivity_norm="l1",
    ...                 reference="Dwork & Roth 2014, Thm 3.6"),
    ...     summary=lambda data: jnp.mean(jnp.clip(data, 0.0, bound)))
    >>> float(mech.release_log_prob(jnp.full(n, 0.5), 0.5))  # log(n epsilon / (2 bound))
    3.912023005428146
"""

from __future__ import annotations

import dataclasses
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import jax
import jax.numpy as jnp
from numpyro.distributions import Distribution

from dpaudit.core.checks import check_probability
from dpaudit.model.adjacency import ADJACENCIES, RELATIONS, Adjacency
from dpaudit.model.claims import Claim, is_notion_claim
from dpaudit.model.sites import check_release_sites, joint_release

__all__ = [
    "KnownFlaw",
    "Mechanism",
    "adjacency_of",
]


@dataclasses.dataclass(frozen=True)
class KnownFlaw:
    """The true guarantee of a mechanism that claims more than it delivers.

    Args:
        reason: one or two sentences: what is wrong and where it comes from.
        true_epsilon: the smallest epsilon the mechanism really satisfies at
            ``true_delta`` (``math.inf`` when it is not DP at all at that delta,
            ``None`` when not known in closed form).
        true_delta: the delta at which ``true_epsilon`` holds (the claimed
            delta unless stated otherwise).
        visible_on: how a neighbouring pair must look for the flaw to show
            (free text for humans; e.g. "any pair whose summaries differ").
    """

    reason: str
    true_epsilon: float | None = None
    true_delta: float = 0.0
    visible_on: str = "any pair whose summaries differ"

    def __post_init__(self):
        if not self.reason:
            raise ValueError("KnownFlaw reason must say what is wrong.")
        if self.true_epsilon is not None:
            value = float(self.true_epsilon)
            if not value > 0:
                raise ValueError(f"KnownFlaw true_epsilon must be > 0, got {value!r}.")
            object.__setattr__(self, "true_epsilon", value)
        object.__setattr__(
            self,
            "true_delta",
            check_probability("KnownFlaw true_delta", self.true_delta, allow_zero=True),
        )


#: Marks "argument not given" for the deprecated ``sensitivity_norm`` keyword.
_NOT_GIVEN = object()


@dataclasses.dataclass(frozen=True, init=False)
class Mechanism:
    """A DP mechanism declared as a numpyro model, with its claim.

    Args:
        name: a short identifier (``"iclp-qr-mean"``).
        model: the numpyro model ``model(data)`` with every parameter bound.
            It samples the release at ``release_site`` from a distribution with
            a ``log_prob`` that is the release's marginal density.
        claim: the :class:`Claim`.
        summary: ``summary(data)``, the non-private summary ``f_D`` in the
            release's coordinates, or ``None`` when the release is not
            "summary plus noise".
        difference_norm: ``difference_norm(h)``, the claim's norm of a
            difference ``h = f_D - f_D'`` of summaries; ``None`` when there is
            no summary. (Not to be confused with ``Claim.sensitivity_norm``,
            the *name* of that norm.)
        params: the public parameters the builder was called with (reports
            show them; read-only).
        release_site: name of the release sample site, or a tuple of names when the
            mechanism releases several sites (:attr:`release_sites`; every other
            random site must be declared latent or shared, see
            :meth:`release_distribution` and docs/whole-trace.md).
        description: one paragraph for reports and ``dpaudit list``.
        known_flaw: the true guarantee, for the faulty catalogue only.
        sensitivity_norm: deprecated keyword alias of ``difference_norm``
            (emits a ``DeprecationWarning``; removed in the next release).

    Raises:
        TypeError: when ``model`` (or ``summary``, ``difference_norm``) is not
            callable, ``claim`` is not a :class:`Claim`, or both
            ``difference_norm`` and its deprecated alias are given.
    """

    name: str
    model: Callable[..., Any]
    claim: Claim
    summary: Callable[[Any], jax.Array] | None = None
    difference_norm: Callable[[jax.Array], jax.Array] | None = None
    params: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    release_site: str | tuple[str, ...] = "release"
    description: str = ""
    known_flaw: KnownFlaw | None = None

    def __init__(
        self,
        name: str,
        model: Callable[..., Any],
        claim: Claim,
        summary: Callable[[Any], jax.Array] | None = None,
        difference_norm: Callable[[jax.Array], jax.Array] | None = None,
        params: Mapping[str, Any] | None = None,
        release_site: str | tuple[str, ...] = "release",
        description: str = "",
        known_flaw: KnownFlaw | None = None,
        *,
        sensitivity_norm: Any = _NOT_GIVEN,
    ):
        # Hand-written (init=False) only to accept the deprecated keyword; the
        # field order is the dataclass's, so positional calls and
        # dataclasses.replace (which passes every field by name) keep working.
        if sensitivity_norm is not _NOT_GIVEN:
            if difference_norm is not None:
                raise TypeError(
                    "Mechanism takes difference_norm or its deprecated alias sensitivity_norm, "
                    "not both."
                )
            warnings.warn(
                "Mechanism(sensitivity_norm=...) is deprecated: the callable is now called "
                "difference_norm (Claim.sensitivity_norm names the norm).",
                DeprecationWarning,
                stacklevel=2,
            )
            difference_norm = sensitivity_norm
        values = {
            "name": name,
            "model": model,
            "claim": claim,
            "summary": summary,
            "difference_norm": difference_norm,
            "params": {} if params is None else params,
            "release_site": release_site,
            "description": description,
            "known_flaw": known_flaw,
        }
        for field, value in values.items():
            object.__setattr__(self, field, value)
        self.__post_init__()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("Mechanism name must be a non-empty string.")
        if not callable(self.model):
            raise TypeError(f"Mechanism {self.name!r}: model must be callable (a numpyro model).")
        if not (isinstance(self.claim, Claim) or is_notion_claim(self.claim)):
            raise TypeError(
                f"Mechanism {self.name!r}: claim must be a dpaudit.Claim or a claim of "
                f"dpaudit.model.claims (zCDP, RDP, GDP, f-DP), got {type(self.claim).__name__}."
            )
        for field in ("summary", "difference_norm"):
            value = getattr(self, field)
            if value is not None and not callable(value):
                raise TypeError(f"Mechanism {self.name!r}: {field} must be callable or None.")
        sites = check_release_sites(self.release_site, self.name)
        if not isinstance(self.release_site, str):
            object.__setattr__(self, "release_site", sites)
        if self.known_flaw is not None and not isinstance(self.known_flaw, KnownFlaw):
            raise TypeError(f"Mechanism {self.name!r}: known_flaw must be a dpaudit.KnownFlaw.")
        object.__setattr__(self, "params", types.MappingProxyType(dict(self.params)))

    @property
    def sensitivity_norm(self) -> Callable[[jax.Array], jax.Array] | None:
        """Deprecated read alias of :attr:`difference_norm`.

        Returns:
            The ``difference_norm`` callable (or ``None``), after a
            ``DeprecationWarning``.
        """
        warnings.warn(
            "Mechanism.sensitivity_norm is deprecated: read Mechanism.difference_norm "
            "(Claim.sensitivity_norm names the norm).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.difference_norm

    # ------------------------------------------------------------------ reading

    @property
    def release_sites(self) -> tuple[str, ...]:
        """The release's sample sites, in declaration order (one for a one-site release).

        Returns:
            The tuple of site names.
        """
        return check_release_sites(self.release_site, self.name)

    def release_distribution(self, data) -> Distribution:
        """The law of the release given ``data``: one site's distribution, or the joint law.

        Args:
            data: a dataset the model accepts.

        Returns:
            The numpyro distribution at the release site when the model releases one
            site and declares no latent or shared site; otherwise a
            :class:`dpaudit.model.sites.JointRelease`, the joint law of all release (and
            shared) sites over the flat vector of their concatenated values.

        Raises:
            ValueError: if a release site is missing, or the model samples a random
                site that is neither released nor declared (below), or a latent site
                cannot be marginalised (:mod:`dpaudit.model.sites`).
            TypeError: if a release site is drawn from something without a ``log_prob``.

        A random site the audit did not account for would be ignored by it: two
        independent epsilon-DP draws of the same sum, one released at ``"release"``
        and one elsewhere, are 2 epsilon-DP together, yet the first site alone passes
        an epsilon claim exactly. So every random site must be released (named in
        ``release_site``) or declared with ``infer={"dpaudit": "latent"}`` (integrated
        out) or ``infer={"dpaudit": "shared"}`` (data-independent, conditioned on);
        observed sites (``obs=``) are data and stay allowed.
        """
        return joint_release(self.model, data, self.release_sites, self.name)

    def release_log_prob(self, data, release) -> jax.Array:
        """``log p_D(release)``: the release density under ``data``.

        Args:
            data: a dataset the model accepts.
            release: one release (or a batch along leading axes).

        Returns:
            The log density of the release distribution at ``release``.

        Raises:
            ValueError, TypeError: as :meth:`release_distribution`.
        """
        return self.release_distribution(data).log_prob(jnp.asarray(release))

    def sample(self, data, key, n_samples: int | None = None) -> jax.Array:
        """Draw releases given ``data`` (``n_samples`` of them, or one when ``None``).

        Args:
            data: a dataset the model accepts.
            key: a JAX PRNG key.
            n_samples: how many releases to draw; ``None`` for a single one.

        Returns:
            The releases, stacked along a leading axis of length ``n_samples``
            (no leading axis when ``n_samples`` is ``None``).

        Raises:
            ValueError, TypeError: as :meth:`release_distribution`.
        """
        dist = self.release_distribution(data)
        shape = () if n_samples is None else (int(n_samples),)
        return dist.sample(key, shape)

    def distance(self, data, data_prime) -> jax.Array:
        """``||f_D - f_D'||`` in the claim's norm.

        Args:
            data: a dataset.
            data_prime: a neighbouring dataset.

        Returns:
            ``difference_norm(summary(data) - summary(data_prime))``.

        Raises:
            ValueError: if the mechanism declares no summary or no norm.
        """
        if self.summary is None or self.difference_norm is None:
            raise ValueError(
                f"mechanism {self.name!r} declares no summary/difference_norm, so its "
                "sensitivity cannot be measured."
            )
        return self.difference_norm(self.summary(data) - self.summary(data_prime))


def adjacency_of(value: Any) -> Adjacency:
    """The :class:`Adjacency` named by a string, a :class:`~dpaudit.Claim` or a :class:`~dpaudit.Mechanism`.

    Args:
        value: ``"replace-one"``, ``"add-remove"``, an :class:`Adjacency`, a
            claim (in any notion), or a mechanism (its claim's adjacency).

    Raises:
        ValueError: for an unknown name.
        TypeError: for anything else.
    """
    if isinstance(value, Adjacency):
        return value
    if isinstance(value, Mechanism):
        value = value.claim
    # a claim in another notion (zCDP, RDP, GDP, f-DP) states its adjacency too
    if isinstance(value, Claim) or isinstance(getattr(value, "notion", None), str):
        value = value.adjacency
    if isinstance(value, str):
        if value not in RELATIONS:
            raise ValueError(f"adjacency must be one of {ADJACENCIES}, got {value!r}.")
        return RELATIONS[value]
    raise TypeError(
        "adjacency must be a name ('replace-one' or 'add-remove'), an Adjacency, a Claim or a "
        f"Mechanism, got {type(value).__name__}."
    )
