"""The black-box audit as a pipeline: validate, draw and fit, select, certify, record.

:func:`blackbox_audit` reads top to bottom as the method of
:mod:`dpaudit.blackbox`: selection releases fix a statistic and an event
(:mod:`~dpaudit.blackbox.statistics`, :mod:`~dpaudit.blackbox.selection`), fresh
certification releases count it (:mod:`~dpaudit.blackbox.certification`), and
exact binomial bounds turn the counts into certified lower bounds
(:mod:`~dpaudit.estimation.bounds`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax

from dpaudit.blackbox.autopairs import AutoPairs, auto_pairs
from dpaudit.blackbox.certification import KEPT_SCORES, count_event, count_event_sequential
from dpaudit.blackbox.options import BlackBoxOptions
from dpaudit.blackbox.percall import per_call, per_call_kind
from dpaudit.blackbox.result import (
    DIRECTIONS,
    BlackBoxResult,
    CertifiedCounts,
    CertifiedEvent,
    PerLaw,
    SelectedEvent,
    SelectionSummary,
    Timings,
    audit_strength,
    certified_bounds,
    selection_epsilon,
    strength_notes,
    verdict_notes,
    violation_p_value,
)
from dpaudit.blackbox.samplers import Pilot, chunks_of, open_sources, pilot_run
from dpaudit.blackbox.selection import resolve_objective, select_event
from dpaudit.blackbox.statistics import (
    ClassifierOptions,
    FittedStatistic,
    fit_statistics,
)
from dpaudit.blackbox.tradeoff import black_box_anchor, notion_blackbox_result
from dpaudit.core.arrays import random_key
from dpaudit.core.budget import CostEstimate, check_cost
from dpaudit.core.checks import check_distinct_pair
from dpaudit.core.compilation_cache import ensure_compilation_cache
from dpaudit.core.executors import resolve_executor
from dpaudit.core.progress import progress_bar, should_show
from dpaudit.estimation.bounds import bound_method, certified_epsilon_by
from dpaudit.estimation.sequential import SequentialStop, look_chunk, stopping_record
from dpaudit.estimation.significance import borderline_note, borderline_record
from dpaudit.model.adjacency import check_adjacent, is_scalar_dataset
from dpaudit.model.claims import Claim, is_notion_claim
from dpaudit.model.mechanism import Mechanism

__all__ = ["blackbox_audit", "run_blackbox_audit"]

_SCALAR_NOTE = (
    "The datasets are scalars: their adjacency cannot be checked from records; the audit "
    "takes the pair as neighbours, as given."
)
# Key of the certification draws: fold_in(root, 2 i) derives the selection keys of pair i, so
# an odd constant can never coincide with them (selection and certification releases are
# disjoint, as the validity of the bound requires).
_CERTIFICATION_FOLD = 1_000_003
# Key of the two runs that check the sampler replays its key: another odd constant, so that
# they never share a key with the selection or certification draws.
_REPLAY_FOLD = 1_000_033
# By default the progress bar is drawn (on a terminal) for runs of at least this many chunks.
_PROGRESS_MIN_CHUNKS = 50


class _Plan(NamedTuple):
    """One audit's checked options and what they resolve to on its sampler, claim and data."""

    options: BlackBoxOptions
    sampler: Callable
    claim: Claim
    pairs: list
    kinds: tuple
    objective: str
    name: str
    reproducible: bool
    notes: tuple
    pair_names: tuple | None = None
    optional: tuple = ()


class _Certified(NamedTuple):
    """The counts certification reports, the releases and level they hold at, and why."""

    counts: CertifiedCounts
    n: int
    confidence: float
    stopping: SequentialStop | None


def blackbox_audit(
    sampler: Callable,
    data=None,
    data_prime=None,
    claim: Claim | tuple | None = None,
    *,
    pairs: Sequence[tuple[Any, Any]] | str | AutoPairs | None = None,
    reference: Mechanism | None = None,
    statistic: str = "auto",
    features: Callable | None = None,
    samples: int = 1_000_000,
    select_samples: int | None = None,
    confidence: float = 0.95,
    objective: str = "auto",
    seed: int = 0,
    check_adjacency: bool = True,
    chunk_size: int | None = None,
    classifier_options: ClassifierOptions | dict | None = None,
    name: str | None = None,
    progress: bool | None = None,
    method: str | None = None,
    executor=None,
    stopping: str = "fixed",
    force: bool = False,
) -> BlackBoxResult:
    """Audit an implementation's claim from its samples alone.

    Args:
        sampler: ``sampler(data, n, key) -> releases`` of shape ``(n, ...)`` (a
            JAX key; numpy code can use :func:`~dpaudit.blackbox.numpy_generator`), or
            a tuple / dict of such arrays (a multi-output release). Releases are
            vectors or curves on a grid; booleans, integers and strings (categories)
            are fine. A one-argument ``f(data) -> release`` is a per-call, unseeded
            implementation (wrapped by :func:`~dpaudit.blackbox.per_call`; use that
            function for samplers taking a seed or a numpy Generator).
        data, data_prime: a neighbouring pair; or give ``pairs`` instead (with
            ``pairs="auto"``: ``data`` alone, the base input of the candidates).
        claim: the :class:`~dpaudit.Claim` (or ``(epsilon, delta)``).
        pairs: several candidate pairs (e.g. from
            :func:`~dpaudit.blackbox.neighbour_candidates`: the black-box neighbour
            search); the selection set picks one, which alone is certified. ``"auto"``
            or an :class:`~dpaudit.blackbox.AutoPairs`: candidates generated around
            ``data`` for its kind (query answers, histogram, bounded records,
            labelled records; see ``docs/blackbox.md``).
        reference: a :class:`~dpaudit.Mechanism` modelling the *intended*
            mechanism; its privacy loss is the test statistic (``statistic="model"``).
        statistic: the test statistic: ``"auto"`` (with a reference: its privacy loss
            and the default classifier, chosen between on the selection set; else
            ``"logistic"``; with either, the float reachability statistic when its fit is
            found on the selection releases), ``"model"``, ``"logistic"``, ``"mlp"``,
            ``"float"`` or ``"bits"`` (:mod:`dpaudit.blackbox.statistics.floats`).
        features: for classifiers, ``features(releases (n, ...)) -> (n, p)``; default
            the release values with ``|x|``, ``x^2`` and fitted log-density ratios per
            coordinate (see ``docs/blackbox.md``); :func:`~dpaudit.blackbox.kl_features`
            for curves.
        samples: certification releases per dataset.
        select_samples: selection releases per dataset and pair (default
            ``max(10000, samples // 10)``).
        confidence: ``1 - alpha`` of the certified bounds.
        objective: choose the event maximising the ``"epsilon"`` bound at the
            claimed delta (tightness), or the ``"delta"`` bound at the claimed
            epsilon; ``"auto"``: ``"epsilon"`` for a pure claim; for an approximate
            one, the best event of each, certifying the one with the larger planned
            violation margin, or the epsilon one when no violation is planned.
        seed: everything is reproducible from it.
        check_adjacency: check each pair is adjacent under the claim's adjacency.
        chunk_size: releases per sampler call (default from the release size).
        classifier_options: a :class:`~dpaudit.blackbox.statistics.ClassifierOptions` or a
            dict of some of its fields: ``l2`` (logistic, default 1e-4); ``hidden`` (default
            ``(32, 16)``), ``steps`` (2000), ``batch`` (1024), ``learning_rate`` (1e-2) for
            ``"mlp"``.
        name: the implementation's name in reports (default the sampler's name).
        progress: show a progress bar (default: on a terminal, for long runs).
        method: deprecated alias of ``statistic`` (``DeprecationWarning``).
        executor: ``None`` (this process) or ``"ray"`` / a :mod:`dpaudit.runtime`
            executor: the candidate pairs' selection (one task per pair) and the
            certification chunks (shards) run on workers, with the same numbers.
        stopping: ``"fixed"`` (count all ``samples``) or ``"sequential"``: count in
            stages and stop at the first of a few pre-registered looks (1/64, 1/32, ...,
            all of ``samples``) whose bound certifies a violation, each look at its share
            of ``1 - confidence`` so the stopped bound keeps the stated confidence
            (``result.stopping`` says when and why; see ``docs/blackbox.md``).
        force: run even when the cost estimated from the pilot (the timed two short runs
            of the reproducibility check) is beyond the limits of :mod:`dpaudit.core.budget`
            (a day, 2 GiB of selection memory); otherwise such an audit is refused with
            its estimate before the selection draws anything.

    Returns:
        A :class:`~dpaudit.blackbox.BlackBoxResult`, the same as
        :func:`run_blackbox_audit` with a :class:`~dpaudit.blackbox.BlackBoxOptions` of
        these keyword arguments.

    Raises:
        ValueError, TypeError: one sentence naming the bad argument.

    Example:
        >>> import dpaudit, jax, jax.numpy as jnp
        >>> def laplace_count(data, n, key):           # claims epsilon = 0.5, really epsilon = 1
        ...     return jnp.sum(data) + jax.random.laplace(key, (n,))
        >>> res = blackbox_audit(laplace_count, jnp.zeros(5), jnp.ones(5).at[1:].set(0.0),
        ...                      dpaudit.Claim(epsilon=0.5), samples=200_000, seed=0,
        ...                      progress=False)
        >>> res.verdict, res.statistic, 0.9 < res.epsilon_lower < 1.0
        ('violation', 'logistic', True)
    """
    options = BlackBoxOptions(
        pairs=pairs,
        reference=reference,
        statistic=_renamed(statistic, method),
        features=features,
        samples=samples,
        select_samples=select_samples,
        confidence=confidence,
        objective=objective,
        seed=seed,
        check_adjacency=check_adjacency,
        chunk_size=chunk_size,
        classifier_options=classifier_options,
        name=name,
        progress=progress,
        executor=executor,
        stopping=stopping,
        force=force,
    )
    return run_blackbox_audit(sampler, data, data_prime, claim, options)


def run_blackbox_audit(
    sampler: Callable, data, data_prime, claim: Claim | tuple | None, options: BlackBoxOptions
) -> BlackBoxResult:
    """:func:`blackbox_audit` with its options as one record (the same result for the same options).

    Args:
        sampler: the implementation's sampler (see :func:`blackbox_audit`).
        data, data_prime: a neighbouring pair, or ``None`` with ``options.pairs``.
        claim: the :class:`~dpaudit.Claim` (or ``(epsilon, delta)``).
        options: the :class:`~dpaudit.blackbox.BlackBoxOptions`.

    Returns:
        A :class:`~dpaudit.blackbox.BlackBoxResult`.

    Raises:
        ValueError, TypeError: one sentence naming the bad argument.
    """
    start = time.perf_counter()
    ensure_compilation_cache()
    if not isinstance(options, BlackBoxOptions):
        raise TypeError(
            f"options must be a dpaudit.blackbox.BlackBoxOptions, got {type(options).__name__}."
        )
    plan = _plan(sampler, data, data_prime, claim, options)
    executor = options.executor
    if executor is not None:
        executor = resolve_executor(executor)
    root = random_key(options.seed)
    sources = open_sources(plan.sampler, plan.pairs, plan.name, plan.options.chunk_size, root)
    # reproducible only if two short runs from one key agree (checked, not assumed); the runs,
    # timed, are the pilot of the cost estimate, refused beyond the limits unless forced
    pilot = pilot_run(
        sources[0][0], jax.random.fold_in(root, _REPLAY_FOLD), replay=plan.reproducible
    )
    if plan.reproducible and not pilot.replays:
        plan = plan._replace(reproducible=False)
    check_cost(
        blackbox_cost(plan.options, len(plan.pairs), pilot),
        what=f"the black-box audit of {plan.name!r}",
        force=plan.options.force,
        budget="samples or select_samples",
    )
    chunk = sources[0][0].chunk
    # sequential certification draws chunks of at most 1/64 of the budget (its looks)
    cert_chunk = (
        chunk if plan.options.stopping == "fixed" else look_chunk(plan.options.samples, chunk)
    )
    total = 2 * len(plan.pairs) * chunks_of(plan.options.select, chunk)
    total += 2 * chunks_of(plan.options.samples, cert_chunk)
    show = should_show(options.progress, total, _PROGRESS_MIN_CHUNKS)
    with progress_bar(
        "black-box audit", total=total, unit="chunks", label=plan.name, show=show
    ) as bar:
        t0, c0 = time.perf_counter(), time.process_time()
        arms = _fit_statistics(plan, sources, root, bar, executor)  # per pair, selection releases
        selected = _select(plan, arms)  # one event among all arms and directions
        t1, c1 = time.perf_counter(), time.process_time()
        certified = _certify(plan, selected, arms, sources, root, bar, executor)  # fresh releases
    # wall seconds per phase, and this process's CPU seconds (all its threads; not Ray's
    # workers): on a loaded machine the wall time is mostly waiting for a core
    timings = Timings(
        selection=t1 - t0,
        certification=time.perf_counter() - t1,
        selection_cpu=c1 - c0,
        certification_cpu=time.process_time() - c1,
    )
    result = _result(plan, arms, selected, certified, timings, start)
    # zCDP / RDP / GDP / f-DP claims: judged in their notion (dpaudit.blackbox.tradeoff)
    return notion_blackbox_result(result, plan.claim) if is_notion_claim(plan.claim) else result


#: Bytes held per selection release and pair beyond the releases themselves: features,
#: their standardised copies, labels and scores (measured: 124 bytes per scalar release
#: pair, 16 of them the two float64 releases).
SELECTION_OVERHEAD_BYTES = 108
#: Bytes of one kept selection score (a float64), per arm, dataset and pair.
SCORE_BYTES = 8


def blackbox_cost(options: BlackBoxOptions, pairs: int, pilot: Pilot) -> CostEstimate:
    """A black-box audit's time and memory, estimated from its pilot.

    Time: every release drawn (selection: both datasets of every pair; certification:
    both datasets) at the pilot's time per release. Memory: one pair's selection releases
    at a time (:data:`SELECTION_OVERHEAD_BYTES` beyond the releases), plus every arm's
    selection scores of every pair; certification counts chunk by chunk.

    Args:
        options: the audit's options (``samples``, ``select``, ``kinds``).
        pairs: the number of candidate pairs.
        pilot: the sampler's :class:`~dpaudit.blackbox.samplers.Pilot`.

    Returns:
        The :class:`~dpaudit.core.budget.CostEstimate`.
    """
    select, samples = options.select, options.samples
    releases = 2 * pairs * select + 2 * samples
    held = select * (SELECTION_OVERHEAD_BYTES + 2 * pilot.bytes_per_release)
    held += 2 * pairs * len(options.kinds) * select * SCORE_BYTES
    return CostEstimate(
        seconds=releases * pilot.seconds_per_release,
        bytes=held,
        basis=f"a pilot of {pilot.releases} releases at {pilot.seconds_per_release * 1e6:.3g} us "
        f"and {pilot.bytes_per_release:g} bytes each; {select} selection releases per dataset "
        f"and pair, {pairs} pair(s), {samples} certification releases per dataset",
    )


class _Arm(NamedTuple):
    """One candidate statistic on one pair (selection chooses among all arms)."""

    pair: int
    kind: str
    fitted: FittedStatistic


def _fit_statistics(plan: _Plan, sources, root, bar, executor=None) -> list[_Arm]:
    """Per pair, draw the selection releases and fix each statistic on them."""
    shared = (plan, sources, root)
    if executor is None:
        per_pair = [_fit_pair(shared, i, bar) for i in range(len(plan.pairs))]
    else:  # one task per pair (dpaudit.runtime): the same fits, in pair order
        per_pair = executor.run_selection(_fit_pair, shared, sources, plan.options.select, bar)
    arms = []
    for i, fitted in enumerate(per_pair):
        arms.extend(
            _Arm(i, kind, f) for kind, f in zip(plan.kinds, fitted, strict=True) if f is not None
        )
    return arms


def _fit_pair(shared, i: int, bar=None) -> list[FittedStatistic]:
    """Pair ``i``'s selection releases and its fitted statistics (its keys are its own)."""
    plan, sources, root = shared
    keys = jax.random.split(jax.random.fold_in(root, 2 * i), 3)
    return fit_statistics(
        plan.kinds,
        plan.pairs[i],
        sources[i],
        keys,
        select=plan.options.select,
        reference=plan.options.reference,
        features=plan.options.features,
        settings=plan.options.classifier_options,
        progress=bar,
        optional=plan.optional,
    )


def _certify(
    plan: _Plan, selected: SelectedEvent, arms, sources, root, bar, executor=None
) -> _Certified:
    """Count the selected event on fresh releases of its pair (one event, counted once)."""
    keys = jax.random.split(jax.random.fold_in(root, _CERTIFICATION_FOLD), 3)
    arm = arms[selected.pair]
    claim = plan.claim
    method = bound_method(claim.delta)  # fixed by the claim, before any release is drawn
    if plan.options.stopping == "fixed":
        counts = count_event(
            selected, arm.fitted.score, sources[arm.pair], plan.options.samples, keys, bar, executor,
            method,
        )  # fmt: skip
        return _Certified(counts, plan.options.samples, plan.options.confidence, None)

    def certifies(k_p, n_p, k_q, n_q, confidence):  # the verdict's inequality, look's level
        bound = certified_epsilon_by(
            method, k_p, n_p, k_q, n_q, delta=claim.delta, confidence=confidence
        )
        return float(bound) > claim.epsilon

    counts, looks, look, stopped = count_event_sequential(
        selected, arm.fitted.score, sources[arm.pair], plan.options.samples, keys, certifies,
        plan.options.confidence, bar, method,
    )  # fmt: skip
    record = stopping_record(looks, look, stopped)
    return _Certified(counts, looks.releases[look], looks.confidences[look], record)


def _select(plan: _Plan, arms: list[_Arm]) -> SelectedEvent:
    scores = [(a.fitted.selection_d, a.fitted.selection_d_prime) for a in arms]
    n_sel = scores[0][0].size
    # Importance-sampling plans need the statistic to be a privacy loss (the reference's).
    is_loss = [a.kind == "model" for a in arms]
    alpha = 1.0 - plan.options.confidence
    return select_event(
        scores, n_sel, plan.options.samples, plan.claim, plan.objective, alpha, is_loss
    )


def _result(
    plan: _Plan,
    arms: list[_Arm],
    selected: SelectedEvent,
    certified: _Certified,
    timings: Timings,
    start: float,
) -> BlackBoxResult:
    """The :class:`BlackBoxResult` of the certified counts (at the look they stopped at)."""
    counts, n, claim, confidence = certified.counts, certified.n, plan.claim, certified.confidence
    eps_lo, delta_lo, _, _ = certified_bounds(counts, claim, confidence)
    arm = arms[selected.pair]
    stat = arm.fitted
    n_sel = int(stat.selection_d.size)
    # Scores in the certified direction: P's first (s for D->D', -s of D' for D'->D).
    if selected.direction == 0:
        sel_p, sel_q = stat.selection_d, stat.selection_d_prime
    else:
        sel_p, sel_q = -stat.selection_d_prime, -stat.selection_d
    kept = min(KEPT_SCORES, n_sel)
    strength = audit_strength(counts.k_q, n, claim, confidence)
    notes = verdict_notes(claim, selected.chosen_for, eps_lo, confidence, n_sel, n)
    fitted_kinds = tuple(dict.fromkeys(a.kind for a in arms))  # without arms that found no fit
    notes += strength_notes(strength, claim, confidence, fitted_kinds, arm.kind, plan.reproducible)
    notes += plan.notes
    if arm.kind == "infinite" and counts.k_q == 0 < counts.k_p:
        notes += (_infinite_note(counts.k_p, selected.direction),)
    if certified.stopping is not None:
        notes += (f"Sequential certification {certified.stopping.reason}",)
    if plan.pair_names is not None:
        notes += (f"pairs='auto': the certified pair is {plan.pair_names[arm.pair]!r}.",)
    borderline = p = None
    if eps_lo > claim.epsilon:
        p = violation_p_value(counts, claim, confidence, plan.options.confidence)
        borderline = borderline_record(p)
        notes = notes if borderline is None else (borderline_note(p), *notes)
    return BlackBoxResult(
        mechanism=plan.name,
        claim=claim,
        verdict="violation" if eps_lo > claim.epsilon else "inconclusive",
        confidence=plan.options.confidence,
        samples=n,
        samples_select=plan.options.select,
        seed=plan.options.seed,
        statistic=arm.kind,
        epsilon_lower=eps_lo,
        delta_lower=delta_lo,
        event=_certified_event(plan, arm, selected, certified, n_sel),
        selection_scores=PerLaw(sel_p[:kept], sel_q[:kept]),
        certification_scores=PerLaw(counts.scores_p, counts.scores_q),
        seconds=time.perf_counter() - start,
        timings=timings,
        notes=notes,
        objective=selected.chosen_for,
        strength=strength,
        reproducible=plan.reproducible,
        stopping=certified.stopping,
        borderline=borderline,
        p_value=p,
    )


def _infinite_note(k_p: int, direction: int) -> str:
    """What a certified event of infinite releases seen under one dataset only means."""
    p, q = ("D", "D'") if direction == 0 else ("D'", "D")
    return (
        f"{k_p} certification releases of {p} held infinite values never released under {q}: "
        "an infinite release possible under one dataset only is an infinite privacy loss (true "
        "epsilon infinite); the certified bound is the largest these counts support, since no "
        "finite sample rules out a rarer infinite release of the other dataset."
    )


def _certified_event(plan: _Plan, arm: _Arm, selected, certified, n_sel: int) -> CertifiedEvent:
    """The public record of the certified event and its counts."""
    counts, n = certified.counts, certified.n
    _, _, (p_lo, q_hi), bound = certified_bounds(counts, plan.claim, certified.confidence)
    name = arm.fitted.name
    return CertifiedEvent(
        direction=DIRECTIONS[selected.direction],
        pair=arm.pair,
        statistic=name if selected.direction == 0 else f"minus the {name}",
        threshold=selected.threshold,
        tie_probability=selected.gamma,
        counts=PerLaw(counts.k_p, counts.k_q),
        n=n,
        p_lower=float(p_lo),
        q_upper=float(q_hi),
        selection=SelectionSummary(
            p_hat=selected.p_hat,
            q_hat=selected.q_hat,
            epsilon_hat=selection_epsilon(selected, plan.claim.delta),
            n=n_sel,
            pairs=len(plan.pairs),
        ),
        releases=PerLaw(counts.n_p, counts.n_q),
        bound=bound,
    )


# ----------------------------------------------------------------- validation


def _renamed(statistic: str, method: str | None) -> str:
    """``statistic``, or the deprecated ``method=`` keyword (with a ``DeprecationWarning``)."""
    if method is None:
        return statistic
    warnings.warn(
        "blackbox_audit(method=...) is deprecated; the test statistic is now chosen with "
        "statistic=... (same values).",
        DeprecationWarning,
        stacklevel=3,
    )
    if statistic != "auto":
        raise TypeError("give statistic= or its deprecated alias method=, not both.")
    return method


def _plan(sampler, data, data_prime, claim, options: BlackBoxOptions) -> _Plan:
    """The options resolved on the sampler, claim and data (one sentence naming a bad one)."""
    sampler, name = _check_sampler(sampler, options.name)
    claim = _check_claim(claim)
    pairs, pair_names, records, notes = _check_pairs(data, data_prime, options.pairs, claim)
    objective = resolve_objective(options.objective, claim)
    _check_distinct(pairs)
    if options.check_adjacency and records:  # answers / histogram candidates are neighbours
        for d, dp in pairs:
            if is_scalar_dataset(d) and is_scalar_dataset(dp):  # no records to compare
                notes.append(_SCALAR_NOTE)
                continue
            check_adjacent(d, dp, claim.adjacency)
    return _Plan(
        options=options,
        sampler=sampler,
        claim=claim,
        pairs=pairs,
        # the infinite-release statistic is an arm whenever a selection release is +-inf
        # (first: on a tie, selection keeps the event that counts the infinite releases)
        kinds=("infinite", *options.kinds),
        objective=objective,
        name=name,
        reproducible=bool(getattr(sampler, "reproducible", True)),
        notes=tuple(dict.fromkeys(notes)),
        pair_names=pair_names,
        optional=_optional_kinds(options),
    )


def _check_distinct(pairs: list) -> None:
    """Refuse ``D`` equal to ``D'``: the one pair, or every candidate (one such candidate among
    others is only uninformative: selection passes it over)."""
    if len(pairs) == 1:
        check_distinct_pair("data and data_prime", *pairs[0])
        return
    for i, (d, dp) in enumerate(pairs):
        try:
            check_distinct_pair(f"pairs[{i}]", d, dp)
        except ValueError:
            continue
        return  # one informative pair
    raise ValueError(
        "every pair in pairs has D equal to D', so the audit could only pass: give pairs of "
        "neighbouring datasets that differ (e.g. in one record)."
    )


def _optional_kinds(options: BlackBoxOptions) -> tuple[str, ...]:
    """The arms that may find no fit (then not offered to selection)."""
    floats = "float" in options.kinds and options.statistic != "float"
    return ("float", "infinite") if floats else ("infinite",)


def _check_sampler(sampler, name: str | None) -> tuple[Callable, str]:
    """The batch sampler (a per-call ``f(data)`` wrapped by :func:`per_call`) and its name."""
    if not callable(sampler):
        raise TypeError(
            f"sampler must be a callable (data, n, key) -> releases, got {type(sampler).__name__}."
        )
    name = name or getattr(sampler, "__name__", type(sampler).__name__)
    kind = per_call_kind(sampler)
    if kind is None:
        raise TypeError(
            f"the sampler {name!r} takes two arguments: wrap it with "
            "dpaudit.blackbox.per_call(f, seed='int') or seed='generator' to say what its second "
            "argument is (a batch sampler takes (data, n, key))."
        )
    if kind == "none":  # f(data) -> one release, with its own randomness
        sampler = per_call(sampler, name=name)
    return sampler, name


def _check_claim(claim) -> Claim:
    if claim is None:
        raise ValueError("claim is required: pass dpaudit.Claim(epsilon=..., delta=...).")
    if isinstance(claim, Claim):
        return claim
    if is_notion_claim(claim):
        return black_box_anchor(claim)
    if isinstance(claim, tuple) and len(claim) == 2:
        return Claim(epsilon=claim[0], delta=claim[1])
    raise TypeError(
        f"claim must be a dpaudit.Claim or an (epsilon, delta) tuple, got {type(claim).__name__}."
    )


def _check_pairs(data, data_prime, pairs, claim: Claim) -> tuple[list, tuple | None, bool, list]:
    """``(pairs, their names (auto) or None, whether they are record datasets, notes)``."""
    if isinstance(pairs, str | AutoPairs):  # generated candidates around data
        if data_prime is not None:
            raise ValueError(
                "pairs='auto' builds the neighbours of data itself: pass data alone, not data_prime."
            )
        found = auto_pairs(data, claim, pairs)
        return found.pairs, found.names, found.records, [found.note]
    if pairs is None:
        if data is None or data_prime is None:
            raise ValueError("give a neighbouring pair (data, data_prime) or pairs=[(D, D'), ...].")
        return [(data, data_prime)], None, True, []
    if data is not None or data_prime is not None:
        raise ValueError("give either (data, data_prime) or pairs, not both.")
    pairs = list(pairs)
    if not pairs or not all(isinstance(p, tuple | list) and len(p) == 2 for p in pairs):
        raise ValueError("pairs must be a non-empty list of (D, D') tuples, 'auto' or AutoPairs.")
    return pairs, None, True, []
