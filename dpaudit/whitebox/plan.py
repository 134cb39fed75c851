r"""Plan of an audit: the two release laws, their noise structure, the route, the accounting.

:func:`plan_audit` turns a mechanism and a pair of datasets into an
:class:`AuditPlan`: the release distributions under ``D`` and ``D'``, the
:class:`~dpaudit.model.shift.NoiseShift` when the laws are shifted noise,
the loss-evaluation route, the exact accounting and the compatibility analysis.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np
import numpyro.distributions as dist
from numpyro.distributions import Distribution

from dpaudit.accounting.composition import BoundedComposition, compose_accounting, exact_accounting
from dpaudit.accounting.profiles import ExactAccounting, declared_accounting, laplace_parameters
from dpaudit.accounting.suprema import exact_sup_loss
from dpaudit.core.roundoff import laplace_evaluation_error, shift_errors, supremum_rounding
from dpaudit.model.adjacency import check_adjacent
from dpaudit.model.claims import Claim
from dpaudit.model.compatibility import Compatibility, is_functional_truncation
from dpaudit.model.compatibility import compatibility as compatibility_of
from dpaudit.model.densities import check_has_density
from dpaudit.model.mechanism import Mechanism
from dpaudit.model.shift import NoiseShift, joint_noise_shift, noise_shift
from dpaudit.model.sites import (
    JointRelease,
    joint_release,
    model_trace,
    undeclared_adaptive_sites,
)
from dpaudit.model.traced_randomness import check_traced_randomness
from dpaudit.whitebox.options import AuditOptions
from dpaudit.whitebox.subsampled_sites import (
    DECLARE_SUBSAMPLING,
    latent_subsampling,
    mixture_subsampling,
)

__all__ = [
    "CHUNK_BYTES",
    "DENSITY_WORK_BYTES",
    "AuditPlan",
    "accounting_gap",
    "choose_chunk_size",
    "density_batch_size",
    "density_work_elements",
    "plan_audit",
    "release_width",
    "site_accounting",
    "subsampled_site_accounting",
]

#: Memory budget of one chunk's draws, in bytes: a default chunk holds at most this many
#: bytes of float64 release coordinates (2^22 coordinates); at most 2^16 and at least 256
#: releases keep the per-chunk overhead small. The chunk fixes the draws (one key per
#: chunk), so this budget is part of every audit's numbers (docs/memory.md).
CHUNK_BYTES = 32 << 20
_FLOAT64_BYTES = 8
_MAX_CHUNK = 1 << 16
_MIN_CHUNK = 256

# Working memory of the density evaluation of one chunk: 512 MiB of float64 intermediates.
# With the JAX runtime (~300 MB), a compilation (~600 MB at 64 leaves) and the chunk's draws
# (<= 32 MiB each) the process stays below 2 GB (tests/whitebox/test_density_memory.py).
DENSITY_WORK_BYTES = 512 << 20


class AuditPlan(NamedTuple):
    """What an audit runs on.

    Attributes:
        claim: the mechanism's claim.
        dist_d: the release law under ``D``.
        dist_dp: the release law under ``D'``.
        shift: the noise structure ``D -> D'``, or ``None``.
        route: ``"closed-form"``, ``"density"`` or ``"model"``.
        accounting: exact/numerical accounting, or ``None``.
        compatibility: the compatibility analysis, or ``None``.
        accounting_note: why a joint release gets no exact accounting (one sentence), or
            ``None`` (it has one, it was not asked for, or the release is one site).
    """

    claim: Claim
    dist_d: Distribution
    dist_dp: Distribution
    shift: NoiseShift | None
    route: str
    accounting: ExactAccounting | None
    compatibility: Compatibility | None
    accounting_note: str | None = None


def _choose_route(route: str, shift: NoiseShift | None, name: str) -> str:
    if route == "auto":
        return "closed-form" if shift is not None else "density"
    if route == "closed-form" and shift is None:
        raise ValueError(
            f"mechanism {name!r}: route='closed-form' needs releases that are the same "
            "Gaussian/ICLP/Laplace noise shifted; use route='density'."
        )
    return route


def _site_part(law_p, law_q):
    """One site's part, its certified supremum bounds ``(lo, hi, how)`` and their rounding.

    A Laplace/ICLP site's bracket is the evaluation error of ``sum_j a_j``
    (:func:`dpaudit.core.roundoff.laplace_evaluation_error`) and its rounding that of the laws'
    centres (the rest of :func:`dpaudit.core.roundoff.shift_errors`). A site known through
    :func:`~dpaudit.exact.exact_sup_loss` brings its own certified bracket, and the
    rounding of :func:`dpaudit.core.roundoff.supremum_rounding`.
    """
    subsampled = mixture_subsampling(law_p, law_q)
    if subsampled is not None:  # a Poisson-subsampled step written as a two-component mixture
        return subsampled, None, 0.0
    shift = noise_shift(law_p, law_q)
    if shift is not None:
        if shift.singular:
            return shift, None, 0.0
        errors = shift_errors(shift)
        if shift.family == "gaussian":
            return shift, None, errors[0]
        a = laplace_parameters(shift.shift, shift.eigenvalues, shift.sigma)
        total, evaluation = math.fsum(a), laplace_evaluation_error(a)
        bounds = (total - evaluation, total + evaluation, "laplace")
        return shift, bounds, max(errors[0] - evaluation, 0.0)
    supremum = exact_sup_loss(law_p, law_q)
    if supremum is None or not math.isfinite(supremum.sup_loss):
        return None, None, 0.0
    bounds = (supremum.sup_loss_lower, supremum.sup_loss, supremum.method)
    return supremum.accounting(), bounds, supremum_rounding(supremum.sup_loss)


def site_accounting(dist_d, dist_dp, *, discretization: float = 1e-4):
    """Exact composed accounting of a non-adaptive release of independent noisy sites.

    Every release site must be shifted Gaussian/Laplace/ICLP noise (any embedding: a
    coordinate vector, a grid release, a multivariate normal; :func:`noise_shift`) or a
    law whose supremum of the loss is certified (:func:`dpaudit.accounting.suprema.exact_sup_loss`:
    linear-Laplace, enumerable, declared). The sites' privacy-loss distributions are
    composed by :func:`~dpaudit.accounting.composition.compose_accounting` (Gaussian sites merged
    into one exact Gaussian, then discretised pessimistically with the rest; supremum-only
    sites dominated by randomized response). When no site is Gaussian the supremum of the
    joint loss is the sum of the sites' certified suprema, returned as a
    :class:`~dpaudit.accounting.composition.BoundedComposition` so a pure claim is judged exactly.

    Args:
        dist_d: the :class:`~dpaudit.model.sites.JointRelease` under ``D``.
        dist_dp: the :class:`~dpaudit.model.sites.JointRelease` under ``D'``.
        discretization: grid spacing of the numerical curves.

    Returns:
        The accounting, or ``None`` (not joint releases, adaptive, latent or shared sites,
        or a site of unknown structure).
    """
    if not (isinstance(dist_d, JointRelease) and isinstance(dist_dp, JointRelease)):
        return None
    if dist_d.release_sites != dist_dp.release_sites or dist_d.adaptive() or dist_dp.adaptive():
        return None
    laws_d, laws_dp = dist_d.site_distributions(), dist_dp.site_distributions()
    parts, bounds, roundings = [], [], []
    for site in dist_d.release_sites:
        part, bound, rounding = _site_part(laws_d[site], laws_dp[site])
        if part is None:
            return None
        parts.append(part)
        bounds.append(bound)
        roundings.append(rounding)
    composed = compose_accounting(parts, discretization=discretization)
    # Unbracketed, the composed supremum errs by its evaluation too (the bracket's width).
    evaluation = math.fsum((b[1] - b[0]) / 2 for b in bounds if b is not None)
    mu_errors = [
        shift_errors(p)[1]
        for p in parts
        if isinstance(p, NoiseShift) and p.family == "gaussian" and not p.singular
    ]
    composed = dataclasses.replace(
        composed,
        sup_loss_error=math.fsum(roundings) + evaluation,
        mu_error=math.sqrt(math.fsum(e * e for e in mu_errors)),
    )
    if composed.family in ("singular", "gaussian") or any(b is None for b in bounds):
        return composed
    if composed.family == "laplace":
        return composed  # every site a Laplace shift: the supremum is exact already
    lower = math.nextafter(math.fsum(b[0] for b in bounds), -math.inf)
    upper = math.nextafter(math.fsum(b[1] for b in bounds), math.inf)
    method = "sites: " + "+".join(sorted({b[2] for b in bounds}))
    rounding = math.fsum(roundings)
    return BoundedComposition(upper, lower, method, composed, sup_loss_error=rounding)


def subsampled_site_accounting(dist_d, dist_dp, *, discretization: float = 1e-4):
    """Exact accounting of a Poisson-subsampled release written as users write it.

    A single release site drawn from a two-component mixture against one of its
    components, or a joint release whose discrete latent sites select the differing
    record (:mod:`dpaudit.whitebox.subsampled_sites`).

    Args:
        dist_d: the release law under ``D``.
        dist_dp: the release law under ``D'``.
        discretization: grid spacing of the numerical curves.

    Returns:
        The accounting of one subsampled step, or ``None`` when not recognised.

    Raises:
        ValueError: for a subsampling rate outside ``(0, 1]`` or mixture weights that are
            not probabilities.
    """
    if isinstance(dist_d, JointRelease) and isinstance(dist_dp, JointRelease):
        component = latent_subsampling(dist_d, dist_dp)
    elif not isinstance(dist_d, JointRelease) and not isinstance(dist_dp, JointRelease):
        component = mixture_subsampling(dist_d, dist_dp)
    else:
        component = None
    if component is None:
        return None
    return compose_accounting([component], discretization=discretization)


def _names(sites) -> str:
    return ", ".join(map(repr, sites))


def _adaptive_gap(dist_d, dist_dp) -> str:
    """Why an adaptive joint release (no latent or shared site) has no exact accounting."""
    undeclared = undeclared_adaptive_sites(dist_d)
    if undeclared is None:
        return (
            "the model cannot be traced with its released values as inputs, so which sites "
            "depend on earlier releases is unknown and only Monte Carlo bounds are computed."
        )
    if not undeclared:
        return (
            "a site that declares a history-uniform bound (uniform_sup_loss) gave none for "
            "this pair, so only Monte Carlo bounds are computed."
        )
    laws = dist_d.site_distributions()
    mixture = any(isinstance(laws[s], dist.MixtureGeneral | dist.MixtureSameFamily)
                  for s in undeclared)  # fmt: skip
    fix = (
        DECLARE_SUBSAMPLING
        if mixture
        else "declare one, or give the model a privacy_accounting hook (docs/whole-trace.md)"
    )
    return (
        f"the law of site(s) {_names(undeclared)} depends on earlier released values and "
        "declares no bound uniform over them (uniform_fields and uniform_sup_loss), so only "
        f"Monte Carlo bounds are computed; {fix}."
    )


def accounting_gap(dist_d, dist_dp) -> str | None:
    """One sentence saying why a joint release gets no exact accounting.

    Args:
        dist_d: the release law under ``D``.
        dist_dp: the release law under ``D'``.

    Returns:
        The sentence (it starts "no exact accounting: "), or ``None`` for a single site.
    """
    if not (isinstance(dist_d, JointRelease) and isinstance(dist_dp, JointRelease)):
        return None
    lead = "no exact accounting: "
    shared = dist_d.shared_sites or dist_dp.shared_sites
    latent = dist_d.latent_sites or dist_dp.latent_sites
    continuous = dist_d.continuous_sites or dist_dp.continuous_sites
    if shared:
        return (
            f"{lead}the release is audited conditionally on the shared site(s) "
            f"{_names(shared)}, which only the Monte Carlo bounds cover."
        )
    if latent:
        return (
            f"{lead}the release marginalises the latent site(s) {_names(latent)}, a mixture "
            "dpaudit accounts exactly only as Poisson subsampling of the differing record (one "
            "law without it, the same Gaussian or Laplace noise shifted with it, nothing else "
            f"moved by the latent values); {DECLARE_SUBSAMPLING}."
        )
    if continuous:
        return (
            f"{lead}the continuous latent site(s) {_names(continuous)} are integrated out, and "
            "exact accounting needs scalar enumerable release sites whose latent law gives "
            "certified_marginal_log_prob, so only Monte Carlo bounds are computed."
        )
    if dist_d.adaptive() or dist_dp.adaptive():
        return lead + _adaptive_gap(dist_d, dist_dp)
    laws_d, laws_dp = dist_d.site_distributions(), dist_dp.site_distributions()
    for site in dist_d.release_sites:
        if _site_part(laws_d[site], laws_dp[site])[0] is None:
            return (
                f"{lead}site {site!r} ({type(laws_d[site]).__name__}) is neither shifted "
                "Gaussian, Laplace or ICLP noise, a Poisson-subsampled mixture of them, nor a "
                "law whose supremum of the privacy loss dpaudit certifies (dpaudit.exact), so "
                "only Monte Carlo bounds are computed."
            )
    return f"{lead}the sites' accountings could not be composed, so only Monte Carlo bounds are computed."


def plan_audit(mechanism: Mechanism, data, data_prime, options: AuditOptions) -> AuditPlan:
    """Release laws, noise structure, route, accounting and compatibility of one audit.

    Args:
        mechanism: the mechanism audited.
        data: the dataset ``D``.
        data_prime: its neighbour ``D'``.
        options: the audit's :class:`~dpaudit.AuditOptions`; read here: ``route``,
            ``exact`` (exact/numerical accounting when the structure allows),
            ``compatibility`` (the analysis for functional noises), ``check_adjacency``
            and ``discretization`` (grid spacing of the numerical Laplace accounting).

    Returns:
        An :class:`AuditPlan`.

    Raises:
        ValueError: non-adjacent datasets, ``route="closed-form"`` on unstructured noise, or
            a model whose traces differ under one seed (it draws outside numpyro).
        TypeError: a release distribution without a density.
    """
    claim = mechanism.claim
    route, exact, discretization = options.route, options.exact, options.discretization
    if options.check_adjacency:
        check_adjacent(data, data_prime, claim.adjacency)
    # a model drawing np.random numbers while traced would be audited as two mechanisms;
    # the first of its two traces is the one the release law of D is read from
    # (Mechanism.release_distribution, without tracing the model a third time)
    model, sites, name = mechanism.model, mechanism.release_sites, mechanism.name
    trace_d = model_trace(model, data)
    check_traced_randomness(model, data, name, first=trace_d)
    if type(mechanism).release_distribution is Mechanism.release_distribution:
        dist_d = joint_release(model, data, sites, name, trace=trace_d)
    else:  # a subclass's own law of the release, as for D'
        dist_d = mechanism.release_distribution(data)
    dist_dp = mechanism.release_distribution(data_prime)
    if isinstance(dist_d, JointRelease) and isinstance(dist_dp, JointRelease):
        shift = joint_noise_shift(dist_d, dist_dp)
    else:
        shift = noise_shift(dist_d, dist_dp)
    if shift is None:  # shifted Gaussian/ICLP/Laplace noise has a density by construction
        check_has_density(dist_d, mechanism.name)
        check_has_density(dist_dp, mechanism.name)
    route = _choose_route(route, shift, mechanism.name)
    accounting = exact_accounting(shift, discretization=discretization) if exact and shift else None
    if exact and accounting is None:
        # A release law may state the accounting of its pair (the DP-SGD trajectory: T
        # subsampled Gaussian steps). It is trusted like a shift's closed form; the Monte
        # Carlo lower bounds still run and a violation they certify comes first (verdict.py).
        accounting = declared_accounting(dist_d, dist_dp, discretization=discretization)
    if exact and accounting is None:
        supremum = exact_sup_loss(dist_d, dist_dp)
        accounting = supremum.accounting() if supremum is not None else None
    if exact and accounting is None:
        # Sites of different noise families (Laplace with Gaussian, a grid ICLP with a
        # Laplace vector, shifted noise with linear-Laplace): composed exactly, site by site.
        accounting = site_accounting(dist_d, dist_dp, discretization=discretization)
    if exact and accounting is None:
        # Poisson subsampling as users write it: a latent batch mask or a mixture site.
        accounting = subsampled_site_accounting(dist_d, dist_dp, discretization=discretization)
    note = accounting_gap(dist_d, dist_dp) if exact and accounting is None else None
    compat = None
    # Compatibility is about functional noise (K -> infinity); finite-dimensional
    # ("independent"/"multivariate") noise has no limit to classify. A bare coefficient
    # vector ("coefficients") is analysed but not extrapolated: the user declared those K
    # coefficients, so the verdict rests on the audited law; only a grid release on a
    # basis truncates a functional release (dpaudit.model.compatibility's module docstring).
    if options.compatibility and shift is not None and shift.source in ("grid", "coefficients"):
        compat = compatibility_of(
            shift.shift, shift.eigenvalues, extrapolated=is_functional_truncation(shift.source)
        )
    return AuditPlan(claim, dist_d, dist_dp, shift, route, accounting, compat, note)


def release_width(plan: AuditPlan) -> int:
    """Coordinates drawn per release: noise coordinates (closed form) or the event size.

    Args:
        plan: the audit plan.

    Returns:
        The number of float64 values drawn per release.
    """
    if plan.route == "closed-form":
        return plan.shift.n_components
    d = plan.dist_d
    return int(np.prod(d.batch_shape + d.event_shape, dtype=np.int64)) or 1


def choose_chunk_size(requested: int | None, samples: int, width: int) -> int:
    """Releases per chunk: as requested, or a default that bounds a chunk's memory.

    Args:
        requested: a positive integer, or ``None`` for the default.
        samples: releases per direction (a chunk is never larger).
        width: coordinates per release (:func:`release_width`).

    Returns:
        The chunk size.

    Raises:
        ValueError: for a requested size that is not a positive integer.
    """
    if requested is None:
        per_release = _FLOAT64_BYTES * max(width, 1)
        requested = max(_MIN_CHUNK, min(_MAX_CHUNK, CHUNK_BYTES // per_release))
    if isinstance(requested, bool) or not isinstance(requested, int | np.integer):
        raise ValueError(f"chunk_size must be a positive integer, got {requested!r}.")
    if requested < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {requested!r}.")
    return int(min(requested, samples))


def density_work_elements(dist: Distribution) -> int | None:
    """Float64 intermediates of ``dist.log_prob`` per release, when the law declares them.

    A law whose density is numerical (quadrature over a grid, belief propagation over a
    tree) declares ``density_work_elements``: its ``log_prob`` holds about that many float64
    values per release (one draw of the whole law, batch included) while it runs. Laws
    wrapped by ``to_event`` inherit their base law's figure; other laws declare nothing
    (their intermediates are a small multiple of the release width, which
    :func:`choose_chunk_size` already bounds).

    Args:
        dist: a release law.

    Returns:
        The declared figure, or ``None``.
    """
    while True:
        work = getattr(dist, "density_work_elements", None)
        if work is not None:
            return int(work)
        base = getattr(dist, "base_dist", None)
        if base is None:
            return None
        dist = base


def density_batch_size(dist_p: Distribution, dist_q: Distribution, chunk: int) -> int:
    """Releases whose two densities are evaluated at once: the chunk, or fewer.

    The draws of a chunk do not depend on this (they come from the chunk's key), so
    splitting the density evaluation never changes a result; it only bounds its memory
    by :data:`DENSITY_WORK_BYTES` (at least one release at a time).

    Args:
        dist_p: the law the releases are drawn from.
        dist_q: the other law.
        chunk: releases per chunk.

    Returns:
        ``chunk`` when neither law declares working memory or the whole chunk fits the
        budget, otherwise the largest batch that fits (at least 1).
    """
    work = [density_work_elements(d) for d in (dist_p, dist_q)]
    per_release = sum(w for w in work if w is not None)
    if per_release == 0:
        return chunk
    return max(1, min(chunk, DENSITY_WORK_BYTES // (8 * per_release)))
