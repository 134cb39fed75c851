r"""Poisson subsampling as users write it, recognised in the release laws of a pair.

A Poisson-subsampled Gaussian or Laplace mechanism keeps each record with probability
``q``. For the pair ``D = D' + z``, the release law under ``D`` is the mixture
``P = (1 - q) A + q B`` of the law ``A`` without ``z`` and the law ``B`` with it, and
the law under ``D'`` is ``Q = A``: exactly the dominating pair of
:class:`~dpaudit.subsampling.SubsampledComponent` (remove direction; the add direction
is the same pair read the other way, and the accounting covers both). Two ways a user
writes it are recognised:

* **A mixture site**: a release site drawn from numpyro's ``MixtureGeneral`` or
  ``MixtureSameFamily`` with two components and weights ``(1 - q, q)`` under one
  dataset, and from one of those components under the other (:func:`mixture_subsampling`).
* **A latent batch mask**: discrete latent sites (``infer={"dpaudit": "latent"}``, e.g.
  ``Bernoulli(q)`` per record) summed out by enumeration
  (:meth:`~dpaudit.sites.JointRelease.latent_mixture`): the release laws take one value
  ``A`` at every latent value under one dataset, and two values, ``A`` with probability
  ``1 - q`` and ``B`` with probability ``q``, under the other (:func:`latent_subsampling`).

In both, ``A`` and ``B`` must be the same Gaussian noise shifted (any number of
coordinates; the shift's ``mu`` is the base mechanism's) or one Laplace coordinate
shifted (:func:`~dpaudit.whitebox.shift.noise_shift`), and equal to the other dataset's
law bit for bit; then the pair is the subsampled pair exactly and its accounting is
:func:`~dpaudit.subsampling.subsampled_component`'s, upper and lower curves. Anything
else (the other records move the noise's centre, an adaptive release, a batch of fixed
size) is not recognised, and the audit's note says how to declare the accounting
(:data:`DECLARE_SUBSAMPLING`).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import numpyro.distributions as dist
from numpyro.distributions import Distribution

from dpaudit.accounting.composition import GaussianComponent, LaplaceComponent, components_of
from dpaudit.accounting.subsampling import SubsampledComponent, subsampled_component
from dpaudit.model.shift import noise_shift
from dpaudit.model.sites import JointRelease

__all__ = ["DECLARE_SUBSAMPLING", "latent_subsampling", "mixture_subsampling", "same_law"]

#: How to declare a subsampled mechanism's accounting when its structure is not recognised.
DECLARE_SUBSAMPLING = (
    "to account it exactly, give the model a privacy_accounting(data, data_prime, *, "
    "discretization) attribute returning dpaudit.subsampling.subsampled_accounting(base, q, "
    "steps, scheme=...) (Poisson sampling or sampling without replacement), as "
    "mechanisms/dpsgd does"
)


def same_law(a: Distribution, b: Distribution) -> bool:
    """Whether two numpyro laws are the same class with bit-identical pytree leaves.

    Args:
        a, b: numpyro distributions.

    Returns:
        ``True`` when they are the same law (same structure and parameters).
    """
    leaves_a, tree_a = jax.tree_util.tree_flatten(a)
    leaves_b, tree_b = jax.tree_util.tree_flatten(b)
    if type(a) is not type(b) or tree_a != tree_b:
        return False
    return all(
        np.shape(x) == np.shape(y) and np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(leaves_a, leaves_b, strict=True)
    )


def _base(shifts) -> GaussianComponent | LaplaceComponent | None:
    """One Gaussian (merged ``mu``) or one Laplace coordinate from the shifts ``B - A``."""
    parts = []
    for shift in shifts:
        if shift is None or shift.singular:
            return None
        parts += components_of(shift)
    if parts and all(type(c) is GaussianComponent for c, _ in parts):
        return GaussianComponent(math.sqrt(math.fsum(k * c.mu**2 for c, k in parts)))
    # sites the record does not move (a zero shift) add nothing to the base
    moving = [
        (c, k) for c, k in parts if getattr(c, "mu", None) != 0 and getattr(c, "a", None) != 0
    ]
    if len(moving) == 1 and type(moving[0][0]) is LaplaceComponent and moving[0][1] == 1:
        return moving[0][0]
    return None


def _check_rate(rate: float, where: str) -> float:
    if not 0.0 < rate <= 1.0:
        raise ValueError(
            f"{where} has sampling rate {rate!r}, outside (0, 1]; a subsampling rate is the "
            "probability that a record is used, so draw it with a probability in (0, 1]."
        )
    return rate


def _component(law: Distribution, index: int) -> Distribution | None:
    """Component ``index`` of a ``MixtureSameFamily``'s component law (mixture batch (2,))."""
    if isinstance(law, dist.Independent):
        base = _component(law.base_dist, index)
        return None if base is None else dist.Independent(base, law.reinterpreted_batch_ndims)
    shape = law.batch_shape
    if type(law) in (dist.Normal, dist.Laplace):
        loc = np.broadcast_to(np.asarray(law.loc, dtype=np.float64), shape)[index]
        scale = np.broadcast_to(np.asarray(law.scale, dtype=np.float64), shape)[index]
        return type(law)(loc, scale)
    if type(law) is dist.MultivariateNormal and shape == (2,):
        event = law.event_shape
        loc = np.broadcast_to(np.asarray(law.loc), shape + event)[index]
        tril = np.broadcast_to(np.asarray(law.scale_tril), shape + event + event)[index]
        return dist.MultivariateNormal(loc, scale_tril=tril)
    return None


def _mixture_parts(law: Distribution):
    """``(weights, (component 0, component 1))`` of a two-component mixture, else ``None``."""
    if isinstance(law, dist.MixtureGeneral):
        components = tuple(law.component_distributions)
    elif isinstance(law, dist.MixtureSameFamily) and law.component_distribution.batch_shape[
        -1:
    ] == (2,):
        components = tuple(_component(law.component_distribution, i) for i in (0, 1))
    else:
        return None
    if len(components) != 2 or any(c is None for c in components):
        return None
    try:
        weights = np.asarray(law.mixing_distribution.probs, dtype=np.float64)
    except (TypeError, jax.errors.TracerArrayConversionError):
        return None
    return weights, components


def mixture_subsampling(law_p: Distribution, law_q: Distribution) -> SubsampledComponent | None:
    """The subsampled step of a site drawn from a two-component mixture under one dataset.

    Args:
        law_p: the site's law under ``D``.
        law_q: the site's law under ``D'``.

    Returns:
        The :class:`~dpaudit.subsampling.SubsampledComponent` (Poisson, rate ``q`` = the
        weight of the component that differs), the base component itself when ``q = 1``,
        or ``None`` when the pair is not a mixture against one of its components.

    Raises:
        ValueError: when the mixture's weights are not two probabilities summing to 1, or
            the subsampling rate is 0.
    """
    for mixture, plain in ((law_p, law_q), (law_q, law_p)):
        parts = _mixture_parts(mixture)
        if parts is None:
            continue
        weights, components = parts
        if weights.shape != (2,) or not np.all((weights >= 0) & (weights <= 1)):
            raise ValueError(
                f"a two-component mixture release site has weights {weights.tolist()}, which "
                "are not probabilities; give its Categorical the probabilities (1 - q, q)."
            )
        if abs(math.fsum(weights) - 1.0) > 1e-12:
            raise ValueError(
                f"a two-component mixture release site has weights {weights.tolist()} that "
                "do not sum to 1; give its Categorical the probabilities (1 - q, q)."
            )
        for absent in (0, 1):
            if same_law(components[absent], plain):
                base = _base([noise_shift(components[1 - absent], components[absent])])
                if base is None:
                    return None
                rate = _check_rate(float(weights[1 - absent]), "a mixture release site")
                return subsampled_component(base, rate)
    return None


def _two_point(groups_one, groups_two):
    """``(A, B, q)`` when one side has one law ``A`` and the other ``A`` and ``B``."""
    if len(groups_one) != 1 or len(groups_two) != 2:
        return None
    ((_, law_a),) = groups_one
    for absent in (0, 1):
        if all(same_law(law_a[s], groups_two[absent][1][s]) for s in law_a):
            weight, law_b = groups_two[1 - absent]
            return law_a, law_b, weight
    return None


def latent_subsampling(joint_p: JointRelease, joint_q: JointRelease) -> SubsampledComponent | None:
    """The subsampled step of a release whose latent sites select the differing record.

    Args:
        joint_p: the joint release under ``D``.
        joint_q: the joint release under ``D'``.

    Returns:
        The subsampled component (rate = the probability of the latent values under which
        the record is used), or ``None`` when the structure is not the subsampled pair.

    Raises:
        ValueError: for a rate of 0.
    """
    if joint_p.release_sites != joint_q.release_sites:
        return None
    if not (joint_p.latent_sites or joint_q.latent_sites):
        return None
    groups_p, groups_q = joint_p.latent_mixture(), joint_q.latent_mixture()
    if groups_p is None or groups_q is None:
        return None
    found = _two_point(groups_q, groups_p) or _two_point(groups_p, groups_q)
    if found is None:
        return None
    law_a, law_b, weight = found
    shifts = [noise_shift(law_b[s], law_a[s]) for s in joint_p.release_sites]
    base = _base(shifts)
    if base is None:
        return None
    return subsampled_component(base, _check_rate(float(weight), "a latent subsampling site"))
