"""Certification: counting the selected event on fresh releases of the selected pair.

The releases counted here are drawn with keys disjoint from the selection
releases, after the event is fixed: one event, one pair, one direction,
certified once (with ``stopping="sequential"``, at the pre-registered looks of
:mod:`~dpaudit.blackbox.sequential`, each at its share of the level). Certifying several events on one set of releases and keeping
the best would be a silent best-of-many (the maximum of many lower bounds is
not a lower bound); selecting and certifying on one set would let the event fit
the noise of the releases it is judged on.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from dpaudit.blackbox.result import CertifiedCounts, SelectedEvent
from dpaudit.blackbox.samplers import ReleaseSource, chunks_of, numpy_generator
from dpaudit.blackbox.sequential import LookPlan, look_chunk, look_plan

__all__ = [
    "KEPT_SCORES",
    "TallyJob",
    "TallyState",
    "count_event",
    "count_event_sequential",
    "finish_tally",
    "init_tally",
    "merge_tally",
    "step_tally",
    "tally_job_shard",
    "tally_shard",
]

#: Scores kept for plots per dataset (of selection and certification releases): enough for a
#: smooth histogram, small enough for a report.
KEPT_SCORES = 20_000


class TallyState(NamedTuple):
    """Counts of the event over some chunks of one dataset's certification releases.

    Integer counts merge exactly, so a run split into shards (ranges of chunk keys) and
    merged in any order gives the serial run's counts; the kept scores are stored per chunk
    and joined in chunk order.

    Attributes:
        above: ``#{sign*s > t}`` over the chunks seen.
        ties: ``#{sign*s = t}`` over the chunks seen.
        chunks: the chunk indices seen.
        heads: chunk index -> that chunk's signed scores among the first ``keep``.
    """

    above: int
    ties: int
    chunks: frozenset
    heads: dict


class TallyJob(NamedTuple):
    """Everything a shard needs to count the event on one dataset (shipped once to workers).

    Attributes:
        source: the dataset's :class:`~dpaudit.blackbox.samplers.ReleaseSource` (with its
            chunk size fixed).
        score: the statistic, releases ``(m, ...) -> (m,)``.
        sign: ``+1`` or ``-1``.
        threshold: ``t``.
        samples: certification releases of the dataset.
        keep: how many leading signed scores are kept.
        key: the dataset's certification key (chunk ``c`` uses ``split(key, chunks)[c]``).
    """

    source: ReleaseSource
    score: object
    sign: float
    threshold: float
    samples: int
    keep: int
    key: object


def init_tally() -> TallyState:
    """The empty tally (no chunk seen).

    Returns:
        A :class:`TallyState`.
    """
    return TallyState(0, 0, frozenset(), {})


def step_tally(state: TallyState, job: TallyJob, chunk_keys, c: int) -> TallyState:
    """Draw chunk ``c`` of the job's releases and add its counts.

    Args:
        state: the running tally (must not hold chunk ``c``).
        job: the :class:`TallyJob`.
        chunk_keys: ``(chunk, keys)`` from ``job.source.chunk_keys(job.samples, job.key)``.
        c: the chunk index.

    Returns:
        The new :class:`TallyState`.

    Raises:
        ValueError, TypeError: if the sampler fails or returns bad releases.
    """
    chunk, keys = chunk_keys
    x = job.source.call(chunk, keys[c])
    s = job.sign * np.asarray(job.score(x))[: job.samples - c * chunk]
    head = {c: s[: job.keep - c * chunk]} if c * chunk < job.keep else {}
    part = TallyState(
        int(np.count_nonzero(s > job.threshold)),
        int(np.count_nonzero(s == job.threshold)),
        frozenset((c,)),
        head,
    )
    return merge_tally(state, part)


def merge_tally(first: TallyState, second: TallyState) -> TallyState:
    """The tally of the union of two disjoint sets of chunks (exact, in either order).

    Args:
        first: a tally.
        second: a tally over other chunks of the same dataset.

    Returns:
        The merged :class:`TallyState`.

    Raises:
        ValueError: if the two tallies share a chunk.
    """
    if first.chunks & second.chunks:
        raise ValueError(
            "the two tallies share chunks; each chunk key must be counted by exactly one shard."
        )
    return TallyState(
        first.above + second.above,
        first.ties + second.ties,
        first.chunks | second.chunks,
        {**first.heads, **second.heads},
    )


def finish_tally(state: TallyState, job: TallyJob, chunk: int) -> tuple[int, int, np.ndarray]:
    """``(above, ties, head)`` of a complete tally.

    Args:
        state: the merged tally; it must hold every chunk.
        job: the :class:`TallyJob`.
        chunk: releases per chunk.

    Returns:
        The two counts and the first ``keep`` signed scores (in chunk order).

    Raises:
        RuntimeError: if chunks are missing (nothing partial is reported as complete).
    """
    n_chunks = chunks_of(job.samples, chunk)
    if state.chunks != frozenset(range(n_chunks)):
        raise RuntimeError(
            f"only {len(state.chunks)} of {n_chunks} certification chunks were counted; the "
            "run is incomplete and no result is reported."
        )
    heads = [state.heads[c] for c in sorted(state.heads)]
    return state.above, state.ties, np.concatenate(heads) if heads else np.zeros(0)


def tally_shard(job: TallyJob, chunks, progress=None) -> TallyState:
    """Count the event on the chunks ``chunks`` (e.g. a ``range``) of the job: one shard.

    Args:
        job: the :class:`TallyJob`.
        chunks: the chunk indices of the shard.
        progress: a :class:`dpaudit.progress.ProgressBar` advanced once per chunk.

    Returns:
        The shard's :class:`TallyState` (merge shards with :func:`merge_tally`).

    Raises:
        ValueError, TypeError: if the sampler fails or returns bad releases.
    """
    chunk_keys = job.source.chunk_keys(job.samples, job.key)
    state = init_tally()
    for c in chunks:
        state = step_tally(state, job, chunk_keys, c)
        if progress is not None:
            progress.advance()
    return state


def tally_job_shard(jobs: tuple[TallyJob, ...], task: tuple[int, range]) -> TallyState:
    """One shard of a certification fanned out by an executor: ``task = (job index, chunks)``.

    Args:
        jobs: the jobs (one per dataset), shipped once to each worker.
        task: which job and which chunks.

    Returns:
        The shard's :class:`TallyState`.
    """
    index, chunks = task
    return tally_shard(jobs[index], chunks)


def count_event(
    selected: SelectedEvent,
    score,
    sources: tuple[ReleaseSource, ReleaseSource],
    samples: int,
    keys,
    progress=None,
    executor=None,
) -> CertifiedCounts:
    """Count the event ``{sign*s > t} + gamma {sign*s = t}`` on ``samples`` fresh releases each.

    Direction ``D->D'``: ``P = P_D`` and the statistic ``s``; ``D'->D``: ``P = P_D'`` and
    ``-s``. Ties ``sign*s = t`` are kept each with probability ``gamma``, drawn as one
    binomial per dataset.

    Args:
        selected: the event chosen on the selection releases.
        score: the statistic fixed before certification.
        sources: the release sources of the selected pair ``(D, D')``.
        samples: certification releases per dataset.
        keys: three JAX keys: releases of ``D``, releases of ``D'``, the tie resolution.
        progress: a :class:`dpaudit.progress.ProgressBar`.
        executor: ``None`` (this process, chunk after chunk) or an executor of
            :mod:`dpaudit.distributed` (shards of chunks on workers; the same counts).

    Returns:
        The :class:`~dpaudit.blackbox.result.CertifiedCounts`.

    Raises:
        ValueError, TypeError: on bad releases.
    """
    sign = selected.sign
    source_p, source_q = sources if sign > 0 else sources[::-1]
    key_p, key_q = (keys[0], keys[1]) if sign > 0 else (keys[1], keys[0])
    keep = min(KEPT_SCORES, samples)
    t = selected.threshold
    jobs = tuple(
        TallyJob(source, score, sign, t, samples, keep, key)
        for source, key in ((source_p, key_p), (source_q, key_q))
    )
    chunk = source_p.chunk_keys(samples, key_p)[0]
    if executor is None:
        states = [tally_shard(job, range(chunks_of(samples, chunk)), progress) for job in jobs]
    else:
        states = executor.run_tallies(jobs, chunks_of(samples, chunk), progress)
    (p_above, p_ties, s_p), (q_above, q_ties, s_q) = (
        finish_tally(state, job, chunk) for state, job in zip(states, jobs, strict=True)
    )
    rng = numpy_generator(keys[2])
    k_p = p_above + (int(rng.binomial(p_ties, selected.gamma)) if p_ties else 0)
    k_q = q_above + (int(rng.binomial(q_ties, selected.gamma)) if q_ties else 0)
    return CertifiedCounts(k_p, k_q, s_p, s_q)


def _jobs(selected: SelectedEvent, score, sources, samples: int, keys) -> tuple[TallyJob, ...]:
    """The two tally jobs ``(P, Q)`` of the certified direction."""
    sign = selected.sign
    source_p, source_q = sources if sign > 0 else sources[::-1]
    key_p, key_q = (keys[0], keys[1]) if sign > 0 else (keys[1], keys[0])
    keep = min(KEPT_SCORES, samples)
    return tuple(
        TallyJob(source, score, sign, selected.threshold, samples, keep, key)
        for source, key in ((source_p, key_p), (source_q, key_q))
    )


def count_event_sequential(
    selected: SelectedEvent,
    score,
    sources: tuple[ReleaseSource, ReleaseSource],
    samples: int,
    keys,
    certifies,
    confidence: float,
    progress=None,
) -> tuple[CertifiedCounts, LookPlan, int, bool]:
    """Count the event look by look and stop at the first look that certifies a violation.

    The looks and their levels are :func:`~dpaudit.blackbox.sequential.look_plan`'s,
    fixed by the budget and the chunk size before any release is drawn. Both datasets
    are counted up to each look; ties are resolved on each look's new ties (one
    binomial per dataset and look), so the counts only grow.

    Args:
        selected: the event chosen on the selection releases.
        score: the statistic fixed before certification.
        sources: the release sources of the selected pair ``(D, D')``.
        samples: the certification budget per dataset (the last look).
        keys: three JAX keys: releases of ``D``, releases of ``D'``, the tie resolution.
        certifies: ``certifies(k_p, k_q, n, confidence) -> bool``, whether these counts
            certify a violation at that confidence.
        confidence: the overall ``1 - alpha`` (spent over the looks).
        progress: a :class:`dpaudit.progress.ProgressBar`.

    Returns:
        ``(counts, plan, look, stopped)``: the counts at the reported look (their ``n``
        is ``plan.releases[look]``), the plan, the look's index, and whether a violation
        was certified there.

    Raises:
        ValueError, TypeError: on bad releases.
    """
    jobs = _jobs(selected, score, sources, samples, keys)
    chunk = look_chunk(samples, jobs[0].source.chunk_keys(samples, jobs[0].key)[0])
    chunk_keys = [(chunk, jax.random.split(job.key, chunks_of(samples, chunk))) for job in jobs]
    plan = look_plan(samples, chunk, confidence)
    rng = numpy_generator(keys[2])
    states, kept = [init_tally(), init_tally()], [0, 0]  # kept: ties resolved into the event
    start, look, stopped = 0, 0, False
    for look, (end, n) in enumerate(zip(plan.chunks, plan.releases, strict=True)):
        for i, job in enumerate(jobs):
            ties_before = states[i].ties
            for c in range(start, end):
                states[i] = step_tally(states[i], job, chunk_keys[i], c)
                if progress is not None:
                    progress.advance()
            new_ties = states[i].ties - ties_before
            kept[i] += int(rng.binomial(new_ties, selected.gamma)) if new_ties else 0
        k = [state.above + tied for state, tied in zip(states, kept, strict=True)]
        start = end
        if certifies(k[0], k[1], n, plan.confidences[look]):
            stopped = True
            break
    heads = [[s.heads[c] for c in sorted(s.heads)] for s in states]
    scores = [np.concatenate(h) if h else np.zeros(0) for h in heads]
    return CertifiedCounts(k[0], k[1], scores[0], scores[1]), plan, look, stopped
