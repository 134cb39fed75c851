r"""The white-box audit: a mechanism's claim on a pair of neighbouring datasets, as a pipeline.

Three lines::

    >>> import dpaudit, jax.numpy as jnp, numpyro, numpyro.distributions as dist
    >>> mech = dpaudit.Mechanism("laplace-mean",
    ...     lambda d: numpyro.sample("release", dist.Laplace(jnp.mean(d), 1.0 / (d.shape[0] * 1.0))),
    ...     dpaudit.Claim(epsilon=1.0, sensitivity=1.0 / 10, sensitivity_norm="l1"))
    >>> report = dpaudit.audit(mech, jnp.zeros(10), jnp.zeros(10).at[0].set(1.0), samples=20_000)
    >>> report.verdict, round(report.epsilon_at_claimed_delta["exact"], 6)
    ('pass', 1.0)

Stages (one module each in :mod:`dpaudit.whitebox`): ``plan`` (release laws,
noise structure, route), ``kernels`` and ``run`` (Monte Carlo), ``certificate``,
``summaries``, ``verdict``, ``result``.

What :func:`audit` does, for a claim ``(epsilon, delta)`` and datasets ``D ~ D'``:

1. **Monte Carlo, both directions.** Draws ``samples`` releases from ``P_D``
   and from ``P_D'`` (chunked, jitted, reproducible from ``seed``) and
   evaluates the privacy losses ``L`` (:mod:`dpaudit.model.loss`), folding them into
   streaming hockey-stick estimates with confidence bounds (:mod:`dpaudit.estimation.pld`).
2. **Exact accounting** when the release is shifted Gaussian-process / ICLP /
   Laplace noise (:mod:`dpaudit.accounting.profiles`): the exact Gaussian curve, or the
   numerical Laplace upper and lower curves, and the supremum of the loss.
3. **Certificates.** A release ``x`` with ``L(x) > epsilon + tol``, evaluated
   with the exact release densities, certifies that a *pure* epsilon claim is
   violated; mutually singular laws violate every claim with ``delta < 1``
   (:mod:`dpaudit.whitebox.certificate`).
4. **Compatibility** (:mod:`dpaudit.model.compatibility`) of ``f_D - f_D'`` with the
   noise, for functional noises.
5. **Verdict** at confidence ``1 - alpha``: ``"violation"``, ``"pass"``,
   ``"incompatible"`` or ``"inconclusive"``, by the rules written down in
   :mod:`dpaudit.whitebox.verdict`.

Curves (``report.curves``) hold, on a grid of epsilons, the Monte Carlo
estimates with bounds that are simultaneous over the grid and both directions
(Bonferroni, ``alpha / (2 G)`` per point) and the exact curves when known.
``report.epsilon_lower`` is a certified lower bound on the mechanism's
``epsilon(delta)`` at the claimed ``delta`` (at confidence ``1 - alpha``;
deterministic for certificates and exact accounting). On a pass it is at most
the claimed epsilon: round-off above the claim is clamped, noted, and kept raw
in ``report.diagnostics["epsilon_lower_raw"]``
(:func:`~dpaudit.whitebox.verdict.clamp_pass_lower_bound`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import warnings
from collections.abc import Sequence
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from dpaudit.core.arrays import random_key
from dpaudit.core.budget import check_cost
from dpaudit.core.checks import check_distinct_pair
from dpaudit.core.compilation_cache import ensure_compilation_cache
from dpaudit.core.errors import UserCodeError, raised_in, user_code_error
from dpaudit.core.executors import resolve_executor
from dpaudit.core.progress import progress_bar, should_show
from dpaudit.estimation.significance import borderline_note, borderline_record
from dpaudit.model.claims import is_notion_claim
from dpaudit.model.mechanism import Mechanism
from dpaudit.model.sites import JointRelease
from dpaudit.whitebox.certificate import find_certificate
from dpaudit.whitebox.kernels import loss_kernel
from dpaudit.whitebox.options import AuditOptions, whitebox_cost
from dpaudit.whitebox.plan import AuditPlan, choose_chunk_size, plan_audit, release_width
from dpaudit.whitebox.result import AuditResult, Certificate
from dpaudit.whitebox.run import (
    DirectionRun,
    KernelRecipe,
    RunSettings,
    epsilon_grid,
    run_directions,
)
from dpaudit.whitebox.scope import with_pair_scope
from dpaudit.whitebox.summaries import (
    audit_curves,
    audit_diagnostics,
    delta_summary,
    epsilon_summary,
)
from dpaudit.whitebox.verdict import (
    clamp_pass_lower_bound,
    exact_delta_violated,
    monte_carlo_p_value,
    notion_result,
    verdict,
)

__all__ = ["audit", "run_audit"]

# A progress bar is drawn by default from this many chunks (both directions) on a terminal.
_PROGRESS_THRESHOLD = 200


class _Evidence(NamedTuple):
    """What the Monte Carlo runs and the certificate search found."""

    runs: list[DirectionRun]
    certificate: Certificate | None
    verified: list[float]


def _check_mechanism(mechanism) -> None:
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a dpaudit.Mechanism, got {type(mechanism).__name__}.")
    if getattr(mechanism.claim, "epsilon", None) == 0:  # its verdict rules divide by epsilon
        raise ValueError(
            "the white-box audit needs a claimed epsilon > 0; audit an epsilon = 0 (pure-delta) "
            "claim black-box with dpaudit.blackbox_audit."
        )


def _bound_method(bound_method: str, method: str | None) -> str:
    """The confidence-bound method, honouring the deprecated ``method=`` alias."""
    if method is None:
        return bound_method
    warnings.warn(
        "audit(method=...) is deprecated; use bound_method=... (the confidence-bound method).",
        DeprecationWarning,
        stacklevel=3,
    )
    return method


@contextlib.contextmanager
def _model_crashes(mechanism: Mechanism):
    """Report an exception raised in the model's own code mid-audit as a crash in the mechanism.

    A :class:`~dpaudit.core.errors.UserCodeError` of the same kind (a ``ValueError`` stays a
    ``ValueError`` for the Python API; the command line exits 3, not 2). dpaudit's own
    checks (NaN losses, ...) are not raised in the model's file and pass unchanged.
    """
    try:
        yield
    except UserCodeError:
        raise
    except Exception as err:
        code = getattr(mechanism.model, "__code__", None)
        if code is None or not raised_in(err, code.co_filename):
            raise
        text = str(err).strip().splitlines()
        message = (
            f"the model of mechanism {mechanism.name!r} raised {type(err).__name__}"
            f"{': ' + text[0] if text else ''} during the audit; fix the model."
        )
        raise user_code_error(message, err) from err


def _kernels(plan: AuditPlan, mechanism, data, data_prime):
    """The loss kernels of the two directions, ``D->D'`` then ``D'->D``."""
    reverse = None if plan.shift is None else plan.shift.reversed()
    return (
        loss_kernel(plan.route, mechanism, data, data_prime, plan.dist_d, plan.dist_dp, plan.shift),
        loss_kernel(plan.route, mechanism, data_prime, data, plan.dist_dp, plan.dist_d, reverse),
    )


def audit(
    mechanism: Mechanism,
    data,
    data_prime,
    *,
    samples: int = 100_000,
    seed: int = 0,
    confidence: float = 0.95,
    epsilons: Sequence[float] | None = None,
    route: str = "auto",
    exact: bool = True,
    compatibility: bool = True,
    check_adjacency: bool = True,
    bound_method: str = "bernstein",
    chunk_size: int | None = None,
    keep_samples: int = 1_000_000,
    discretization: float = 1e-4,
    progress: bool | None = None,
    method: str | None = None,
    executor=None,
    force: bool = False,
) -> AuditResult:
    """Audit ``mechanism``'s claim on the neighbouring datasets ``data`` and ``data_prime``.

    Args:
        mechanism: a :class:`~dpaudit.Mechanism`.
        data: the dataset ``D``.
        data_prime: its neighbour ``D'``.
        samples: Monte Carlo releases per direction (memory stays bounded:
            losses are folded chunk by chunk).
        seed: seed of ``jax.random.key``; the same ``(seed, samples,
            chunk_size)`` reproduce the same draws.
        confidence: ``1 - alpha`` for every bound and verdict.
        epsilons: grid for the curves (the claimed epsilon is always added);
            default: 65 points from 0 to beyond the largest loss of a pilot run.
        route: ``"auto"`` (closed form for shifted Gaussian/ICLP/Laplace
            noise, else densities), ``"closed-form"``, ``"density"`` or ``"model"``.
        exact: use exact/numerical accounting when the structure allows.
        compatibility: run the compatibility analysis for functional noises.
        check_adjacency: check that the datasets are neighbours under the claim's adjacency.
        bound_method: confidence-bound method of :data:`dpaudit.estimation.pld.BOUND_METHODS`.
        chunk_size: releases per chunk (default: 2^22 release coordinates, at most 2^16).
        keep_samples: losses kept per direction for diagnostics and export.
        discretization: grid spacing of the numerical Laplace accounting.
        progress: show a progress bar (default: for long runs on a terminal).
        method: deprecated alias of ``bound_method`` (emits a ``DeprecationWarning``).
        executor: ``None`` (this process) or ``"ray"`` / a :mod:`dpaudit.runtime`
            executor: the chunks run as shards on workers, with bit-identical results.
        force: run even when the estimated cost (:func:`whitebox_cost`) is beyond the
            limits of :mod:`dpaudit.core.budget` (a day, 2 GiB); otherwise such an audit is
            refused before it runs.

    Returns:
        An :class:`~dpaudit.AuditResult`, the same as :func:`run_audit` with an
        :class:`~dpaudit.AuditOptions` of these keyword arguments.

    Raises:
        ValueError: D equal to D', non-adjacent datasets, a model without a release site,
            NaN losses (no partial result is returned), bad arguments.
        TypeError: a release distribution without a density, a non-Mechanism.
    """
    options = AuditOptions(
        samples=samples,
        seed=seed,
        confidence=confidence,
        epsilons=epsilons,
        route=route,
        exact=exact,
        compatibility=compatibility,
        check_adjacency=check_adjacency,
        bound_method=_bound_method(bound_method, method),
        chunk_size=chunk_size,
        keep_samples=keep_samples,
        discretization=discretization,
        progress=progress,
        executor=executor,
        force=force,
    )
    return run_audit(mechanism, data, data_prime, options)


def run_audit(mechanism: Mechanism, data, data_prime, options: AuditOptions) -> AuditResult:
    """:func:`audit` with its options as one record (the same result for the same options).

    Args:
        mechanism: a :class:`~dpaudit.Mechanism`.
        data: the dataset ``D``.
        data_prime: its neighbour ``D'``.
        options: the :class:`~dpaudit.AuditOptions`.

    Returns:
        An :class:`~dpaudit.AuditResult`.

    Raises:
        ValueError, TypeError: as :func:`audit`.
    """
    started = time.perf_counter()
    ensure_compilation_cache()
    if not isinstance(options, AuditOptions):
        raise TypeError(f"options must be a dpaudit.AuditOptions, got {type(options).__name__}.")
    _check_mechanism(mechanism)
    check_distinct_pair("data and data_prime", data, data_prime)
    check_cost(
        whitebox_cost(options),
        what=f"the audit of {mechanism.name!r}",
        force=options.force,
        budget="samples or keep_samples",
    )
    notion = mechanism.claim if is_notion_claim(mechanism.claim) else None
    if notion is not None:  # audit the (epsilon, delta) anchor, then judge the notion
        mechanism = dataclasses.replace(mechanism, claim=notion.as_dp())
    executor, samples = options.executor, options.samples
    if executor is not None:
        executor = resolve_executor(executor)
    with _model_crashes(mechanism):  # the plan traces the model, the kernels may run it
        plan = plan_audit(mechanism, data, data_prime, options)
        kernels = _kernels(plan, mechanism, data, data_prime)
    key = random_key(options.seed)  # jax.random.key's bits, without its two programs
    chunk = choose_chunk_size(options.chunk_size, samples, release_width(plan))
    # Pilot run (its own keys, not reused) to place the default epsilon grid; it has the
    # shapes of the main run so the jitted step compiles once.
    with _model_crashes(mechanism):  # the pilot traces and runs the model's code
        grid = epsilon_grid(
            options.epsilons, plan.claim.epsilon, kernels, key, plan.accounting, chunk, samples
        )
    settings = RunSettings(
        grid=grid,
        claim_index=int(np.nonzero(grid == plan.claim.epsilon)[0][0]),
        claim_epsilon=plan.claim.epsilon,
        samples=samples,
        chunk=chunk,
        keep_samples=options.keep_samples,
        alpha=1.0 - options.confidence,
        bound_method=options.bound_method,
        name=mechanism.name,
    )
    total_chunks = 2 * -(-samples // chunk)  # both directions
    show = should_show(options.progress, total_chunks, _PROGRESS_THRESHOLD)
    with progress_bar(
        "auditing", total=total_chunks, unit="chunks", label=mechanism.name, show=show
    ) as bar:
        recipe = KernelRecipe(
            plan.route, mechanism, data, data_prime, plan.dist_d, plan.dist_dp, plan.shift
        )
        with _model_crashes(mechanism):
            runs = run_directions(kernels, key, settings, bar, executor, recipe)
    certificate, verified = find_certificate(
        plan.claim, kernels, [r.best_release for r in runs], plan.shift
    )
    if certificate is not None and isinstance(plan.dist_d, JointRelease):
        sites = plan.dist_d.unflatten(np.asarray(certificate.release))
        certificate = dataclasses.replace(
            certificate, sites=MappingProxyType({k: np.asarray(v) for k, v in sites.items()})
        )
    evidence = _Evidence(runs, certificate, verified)
    result = _conclude(mechanism.name, plan, settings, evidence, options, started)
    result = result if notion is None else notion_result(result, notion)
    return with_pair_scope(result, mechanism, data, data_prime)


def _conditional(shared, outcome, reported, certificate, notes, diagnostics):
    """Qualify an audit conditioned on shared randomness (docs/whole-trace.md).

    The shared sites were audited as if released: dropping them is post-processing,
    so a pass holds for the mechanism itself; a violation holds only for the
    augmented release (conditional on the shared randomness), so it is reported as
    inconclusive, its certificate and lower bound kept in the diagnostics.
    """
    names = ", ".join(map(repr, shared))
    notes = (
        *notes,
        f"audited conditionally on the shared randomness ({names}), released alongside; a pass "
        "holds for the mechanism (dropping them is post-processing), a violation only "
        "conditionally.",
    )
    if outcome != "violation":
        return outcome, reported, certificate, notes
    diagnostics["conditional_epsilon_lower"] = reported.value
    if certificate is not None:
        diagnostics["conditional_certificate"] = certificate.to_dict()
    notes = (
        *notes,
        f"violation conditional on the shared randomness ({names}): not a certified violation "
        "of the mechanism, whose release marginalises it; declare those sites latent (when "
        "discrete) to audit the marginal law.",
    )
    return "inconclusive", reported._replace(value=0.0), None, notes


def _violation_p_value(outcome, claim, delta, accounting, certificate, results, confidence):
    """The p-value of a violation (``None`` for other verdicts; ``0`` without sampling).

    A certificate or exact accounting rests on no sampling: ``p = 0``. A violation of the
    Monte Carlo lower bounds alone: :func:`~dpaudit.whitebox.verdict.monte_carlo_p_value`.
    """
    if outcome != "violation":
        return None
    if certificate is not None or exact_delta_violated(claim, delta.exact_lower, accounting):
        return 0.0
    if not delta.monte_carlo_lower > claim.delta:
        return 0.0  # the exact supremum of a pure claim decided it
    return monte_carlo_p_value(claim, results, 1.0 - confidence)


def _conclude(name, plan, settings, evidence, options: AuditOptions, started) -> AuditResult:
    """Summaries, verdict and the result record of a finished run."""
    seed, confidence = options.seed, options.confidence
    certificate = evidence.certificate
    results = tuple(r.result for r in evidence.runs)
    claim, grid = plan.claim, settings.grid
    delta = delta_summary(results, plan.accounting, claim)
    family = plan.shift.family if plan.shift is not None else None
    outcome, notes = verdict(claim, delta, plan.accounting, certificate, plan.compatibility, family)
    if plan.accounting_note is not None:
        notes = (*notes, plan.accounting_note)
    epsilon_lower, epsilons = epsilon_summary(
        claim, grid, results, plan.accounting, certificate, evidence.verified
    )
    # A pass never shows a certified lower bound above its own claim (round-off only).
    reported = clamp_pass_lower_bound(outcome, claim, float(epsilon_lower))
    diagnostics = audit_diagnostics(results, settings.chunk, plan.route)
    if reported.note is not None:
        diagnostics["epsilon_lower_raw"] = reported.raw
        notes = (*notes, reported.note)
    shared = plan.dist_d.shared_sites if isinstance(plan.dist_d, JointRelease) else ()
    if shared:
        outcome, reported, certificate, notes = _conditional(
            shared, outcome, reported, certificate, notes, diagnostics
        )
    p = _violation_p_value(outcome, claim, delta, plan.accounting, certificate, results, confidence)
    borderline = None if p is None else borderline_record(p)
    if borderline is not None:
        diagnostics["borderline"] = borderline
        notes = (*notes, borderline_note(borderline["p_value"]))
    return AuditResult(
        mechanism=name,
        claim=claim,
        verdict=outcome,
        confidence=confidence,
        samples=settings.samples,
        seed=seed,
        route=plan.route,
        delta_at_claimed_epsilon=delta,
        epsilon_lower=reported.value,
        epsilon_at_claimed_delta=epsilons,
        certificate=certificate,
        curves=audit_curves(grid, settings.claim_index, confidence, results, plan.accounting),
        exact=plan.accounting,
        compatibility=plan.compatibility,
        diagnostics=diagnostics,
        directions=results,
        seconds=time.perf_counter() - started,
        notes=notes,
        p_value=p,
    )
