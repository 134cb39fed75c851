"""Certification: counting the selected event on fresh releases of the selected pair.

The releases counted here are drawn with keys disjoint from the selection
releases, after the event is fixed: one event, one pair, one direction,
certified once (with ``stopping="sequential"``, at the pre-registered looks of
:mod:`~dpaudit.estimation.sequential`, each at its share of the level). Certifying several
events on one set of releases and keeping
the best would be a silent best-of-many (the maximum of many lower bounds is
not a lower bound); selecting and certifying on one set would let the event fit
the noise of the releases it is judged on.

For the ``"conditional-ratio"`` bound (pure-epsilon claims,
:func:`~dpaudit.estimation.bounds.bound_method`) the number of releases of each dataset is
itself random, Poisson with mean ``samples`` (at each look, Poisson with the look's mean,
drawn as independent increments), drawn once from the tie key before any release and
before sharding (:func:`poisson_releases`): so the event counts are independent Poisson,
which the bound's exactness needs, and a run split into any number of shards counts the
same releases.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import numpy as np

from dpaudit.blackbox.result import CertifiedCounts, SelectedEvent
from dpaudit.blackbox.samplers import ReleaseSource, chunks_of, drawn_ahead, numpy_generator
from dpaudit.estimation.bounds import CONDITIONAL_RATIO, PAIR
from dpaudit.estimation.sequential import LookPlan, look_chunk, look_plan

__all__ = [
    "KEPT_SCORES",
    "TallyJob",
    "TallyState",
    "count_event",
    "count_event_sequential",
    "finish_tally",
    "init_tally",
    "merge_tally",
    "poisson_releases",
    "step_tally",
    "tally_job_shard",
    "tally_shard",
]

#: Scores kept for plots per dataset (of selection and certification releases): enough for a
#: smooth histogram, small enough for a report.
KEPT_SCORES = 20_000
# fold_in offset deriving the key of the Poisson release counts from the tie key: the counts
# get a generator of their own, independent of the tie resolution (any constant would do).
_POISSON_FOLD = 1
# A Poissonised budget of one chunk is drawn in one call of samples + 8 sqrt(samples) + 8
# releases (P(Poisson(n) > n + 8 sqrt(n)) < 1e-12): a count just above the mean must not
# cost a second full call.
_POISSON_SLACK_SDS = 8


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
        samples: certification releases of the dataset (its Poisson count for the
            conditional-ratio bound; may be 0).
        keep: how many leading signed scores are kept.
        key: the dataset's certification key (chunk ``c`` uses ``split(key, chunks)[c]``).
        chunk: releases per sampler call; ``None``: ``min(source chunk, samples)``. A
            Poissonised job fixes it from the planned budget, so every seed calls the
            sampler (and the statistic) with one shape whatever its Poisson count.
    """

    source: ReleaseSource
    score: object
    sign: float
    threshold: float
    samples: int
    keep: int
    key: object
    chunk: int | None = None


def poisson_releases(key, means) -> np.ndarray:
    """Poissonised release counts of the two datasets ``(D, D')`` at increasing means.

    Independent Poisson increments ``Poisson(means[j] - means[j - 1])`` per dataset, summed:
    the count at ``j`` is ``Poisson(means[j])`` (a Poisson process observed at the looks),
    the two datasets independent. Drawn from ``fold_in(key, 1)`` of the tie key, before any
    release.

    Args:
        key: the certification's tie key.
        means: the planned releases per dataset at each look (one entry for a fixed budget).

    Returns:
        An integer array ``(2, len(means))`` of cumulative counts (row 0: ``D``, row 1: ``D'``).
    """
    rng = numpy_generator(jax.random.fold_in(key, _POISSON_FOLD))
    increments = np.diff(np.asarray(means, dtype=np.int64), prepend=0)
    return np.cumsum(rng.poisson(increments, size=(2, increments.size)), axis=1)


def _job_chunk_keys(job: TallyJob):
    """``(chunk, keys)`` of the job's releases (no keys for a job of 0 releases)."""
    if job.samples == 0:
        return job.chunk or 1, []
    if job.chunk is None:
        return job.source.chunk_keys(job.samples, job.key)
    return job.chunk, jax.random.split(job.key, chunks_of(job.samples, job.chunk))


def _tally_requests(job: TallyJob, chunk_keys) -> list:
    """The sampler calls ``(releases, key)`` of :func:`step_tally` over all the job's chunks."""
    chunk, keys = chunk_keys
    return [
        (job.source.releases_of_chunk(chunk, job.samples - c * chunk), keys[c])
        for c in range(len(keys))
    ]


def init_tally() -> TallyState:
    """The empty tally (no chunk seen).

    Returns:
        A :class:`TallyState`.
    """
    return TallyState(0, 0, frozenset(), {})


def step_tally(state: TallyState, job: TallyJob, chunk_keys, c: int) -> TallyState:
    """Draw chunk ``c`` of the job's releases and add its counts.

    A chunk index past the job's last chunk (the two datasets of a Poissonised
    certification can need different numbers of chunks; a sharded run covers the larger)
    is recorded as seen with nothing counted, and nothing is drawn.

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
    if c >= len(keys):
        return merge_tally(state, TallyState(0, 0, frozenset((c,)), {}))
    x = job.source.call(job.source.releases_of_chunk(chunk, job.samples - c * chunk), keys[c])
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
        state: the merged tally; it must hold every chunk of the job (chunks past its last
            one, counted empty, are allowed).
        job: the :class:`TallyJob`.
        chunk: releases per chunk.

    Returns:
        The two counts and the first ``keep`` signed scores (in chunk order).

    Raises:
        RuntimeError: if chunks are missing (nothing partial is reported as complete).
    """
    n_chunks = chunks_of(job.samples, chunk) if job.samples else 0
    if not frozenset(range(n_chunks)) <= state.chunks:
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
        progress: a :class:`dpaudit.core.progress.ProgressBar` advanced once per chunk.

    Returns:
        The shard's :class:`TallyState` (merge shards with :func:`merge_tally`).

    Raises:
        ValueError, TypeError: if the sampler fails or returns bad releases.
    """
    chunk_keys = _job_chunk_keys(job)
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
    method: str = PAIR,
) -> CertifiedCounts:
    """Count the event ``{sign*s > t} + gamma {sign*s = t}`` on ``samples`` fresh releases each.

    Direction ``D->D'``: ``P = P_D`` and the statistic ``s``; ``D'->D``: ``P = P_D'`` and
    ``-s``. Ties ``sign*s = t`` are kept each with probability ``gamma``, drawn as one
    binomial per dataset.

    Args:
        selected: the event chosen on the selection releases.
        score: the statistic fixed before certification.
        sources: the release sources of the selected pair ``(D, D')``.
        samples: certification releases per dataset (the Poisson mean for
            ``method="conditional-ratio"``).
        keys: three JAX keys: releases of ``D``, releases of ``D'``, the tie resolution
            (and, through :func:`poisson_releases`, the Poisson release counts).
        progress: a :class:`dpaudit.core.progress.ProgressBar`.
        executor: ``None`` (this process, chunk after chunk) or an executor of
            :mod:`dpaudit.runtime` (shards of chunks on workers; the same counts).
        method: the bound the counts are for (:func:`~dpaudit.estimation.bounds.bound_method`):
            ``"conditional-ratio"`` Poissonises the release counts.

    Returns:
        The :class:`~dpaudit.blackbox.result.CertifiedCounts`.

    Raises:
        ValueError, TypeError: on bad releases.
    """
    releases, basis = (samples, samples), samples
    if method == CONDITIONAL_RATIO:  # drawn once, before any release and any sharding
        releases = tuple(int(n) for n in poisson_releases(keys[2], (samples,))[:, -1])
        basis = samples + _POISSON_SLACK_SDS * (math.isqrt(samples) + 1)
    jobs = _jobs(selected, score, sources, releases, keys, basis)
    chunk_keys = [_job_chunk_keys(job) for job in jobs]
    if executor is None:  # Q's releases drawn by the helper process while P's are counted here
        with drawn_ahead(jobs[1].source, _tally_requests(jobs[1], chunk_keys[1])):
            states = [
                tally_shard(job, range(len(ck[1])), progress)
                for job, ck in zip(jobs, chunk_keys, strict=True)
            ]
    else:  # one chunk grid for both datasets: the larger one's
        states = executor.run_tallies(jobs, max(len(ck[1]) for ck in chunk_keys), progress)
    (p_above, p_ties, s_p), (q_above, q_ties, s_q) = (
        finish_tally(state, job, ck[0])
        for state, job, ck in zip(states, jobs, chunk_keys, strict=True)
    )
    rng = numpy_generator(keys[2])
    k_p = p_above + (int(rng.binomial(p_ties, selected.gamma)) if p_ties else 0)
    k_q = q_above + (int(rng.binomial(q_ties, selected.gamma)) if q_ties else 0)
    return CertifiedCounts(k_p, k_q, s_p, s_q, jobs[0].samples, jobs[1].samples, method)


def _jobs(selected: SelectedEvent, score, sources, releases, keys, basis: int):
    """The two tally jobs ``(P, Q)`` of the certified direction (``releases`` of ``(D, D')``;
    chunks of ``min(source chunk, basis)``, fixed by the planned budget whatever the counts)."""
    order = (0, 1) if selected.sign > 0 else (1, 0)
    return tuple(
        TallyJob(
            sources[i],
            score,
            selected.sign,
            selected.threshold,
            int(releases[i]),
            min(KEPT_SCORES, int(releases[i])),
            keys[i],
            sources[i].chunk_keys(basis, keys[i])[0],
        )
        for i in order
    )


class _Stream:
    """One dataset's certification releases, counted range by range (the sequential looks).

    The releases are drawn in chunks of ``chunk`` with keys ``split(job.key, chunks)``
    (``chunks`` for the dataset's last look); the chunk straddling a look is kept (one
    chunk of scores) so that the next look continues it instead of drawing it again.
    """

    def __init__(self, job: TallyJob, chunk: int, total: int):
        self.job, self.chunk = job, chunk
        self.keys = jax.random.split(job.key, chunks_of(total, chunk)) if total else []
        self.cached: tuple[int, np.ndarray] | None = None
        self.heads: list = []

    def count(self, lo: int, hi: int, progress=None) -> tuple[int, int]:
        """``(#{sign*s > t}, #{sign*s = t})`` over releases ``lo .. hi - 1``."""
        job, chunk, above, ties = self.job, self.chunk, 0, 0
        for c in range(lo // chunk, -(-hi // chunk)):
            if self.cached is None or self.cached[0] != c:
                s = job.sign * np.asarray(job.score(job.source.call(chunk, self.keys[c])))
                self.cached = (c, s)
                if progress is not None:
                    progress.advance()
            first = max(lo, c * chunk)
            part = self.cached[1][first - c * chunk : min(hi, (c + 1) * chunk) - c * chunk]
            above += int(np.count_nonzero(part > job.threshold))
            ties += int(np.count_nonzero(part == job.threshold))
            if first < job.keep:
                self.heads.append(part[: job.keep - first])
        return above, ties

    def scores(self) -> np.ndarray:
        """The first ``keep`` signed scores counted."""
        return np.concatenate(self.heads) if self.heads else np.zeros(0)


def count_event_sequential(
    selected: SelectedEvent,
    score,
    sources: tuple[ReleaseSource, ReleaseSource],
    samples: int,
    keys,
    certifies,
    confidence: float,
    progress=None,
    method: str = PAIR,
) -> tuple[CertifiedCounts, LookPlan, int, bool]:
    """Count the event look by look and stop at the first look that certifies a violation.

    The looks and their levels are :func:`~dpaudit.estimation.sequential.look_plan`'s,
    fixed by the budget and the chunk size before any release is drawn. Both datasets
    are counted up to each look; ties are resolved on each look's new ties (one
    binomial per dataset and look), so the counts only grow. With
    ``method="conditional-ratio"`` the releases counted at each look are Poisson with the
    look's planned releases as mean (:func:`poisson_releases`, independent increments).

    Args:
        selected: the event chosen on the selection releases.
        score: the statistic fixed before certification.
        sources: the release sources of the selected pair ``(D, D')``.
        samples: the certification budget per dataset (the last look; its mean when
            Poissonised).
        keys: three JAX keys: releases of ``D``, releases of ``D'``, the tie resolution.
        certifies: ``certifies(k_p, n_p, k_q, n_q, confidence) -> bool``, whether these
            counts of ``n_p``, ``n_q`` releases certify a violation at that confidence.
        confidence: the overall ``1 - alpha`` (spent over the looks).
        progress: a :class:`dpaudit.core.progress.ProgressBar`.
        method: the bound (:func:`~dpaudit.estimation.bounds.bound_method`).

    Returns:
        ``(counts, plan, look, stopped)``: the counts at the reported look (their
        releases ``n_p``, ``n_q``; ``plan.releases[look]`` planned), the plan, the look's
        index, and whether a violation was certified there.

    Raises:
        ValueError, TypeError: on bad releases.
    """
    chunk = look_chunk(samples, sources[0].chunk_keys(samples, keys[0])[0])
    plan = look_plan(samples, chunk, confidence)
    looks = np.tile(np.asarray(plan.releases), (2, 1))  # (D, D') releases at each look
    if method == CONDITIONAL_RATIO:
        looks = poisson_releases(keys[2], plan.releases)
    order = (0, 1) if selected.sign > 0 else (1, 0)
    jobs = _jobs(selected, score, sources, looks[:, -1], keys, samples)
    streams = [_Stream(job, chunk, job.samples) for job in jobs]
    rng = numpy_generator(keys[2])
    k, counted = [0, 0], [0, 0]
    look, stopped = 0, False
    for look in range(len(plan.releases)):
        for i, stream in enumerate(streams):
            end = int(looks[order[i], look])
            above, ties = stream.count(counted[i], end, progress)
            k[i] += above + (int(rng.binomial(ties, selected.gamma)) if ties else 0)
            counted[i] = end
        if certifies(k[0], counted[0], k[1], counted[1], plan.confidences[look]):
            stopped = True
            break
    scores = [stream.scores() for stream in streams]
    counts = CertifiedCounts(k[0], k[1], scores[0], scores[1], counted[0], counted[1], method)
    return counts, plan, look, stopped
