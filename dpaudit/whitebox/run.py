r"""Run one direction of an audit over its chunks, and the pilot run that places the grid.

:func:`run_direction` streams ``samples`` losses chunk by chunk through a
:class:`~dpaudit.whitebox.kernels.LossKernel` into a hockey-stick state and
returns a :class:`DirectionRun`: the direction's
:class:`~dpaudit.whitebox.result.DirectionResult` and its largest loss with the
release that produced it (a certificate candidate).

The run is shardable: chunk ``c`` has its own key, :func:`chunk_part` summarises it
alone, and a :class:`DirectionState` (``init_direction`` / ``step_direction`` /
``merge_direction`` / ``finish_direction``) folds chunk summaries strictly in chunk
order, so shards (ranges of chunks, :func:`run_shard`) run anywhere and merged in any
order give the serial run's bits (:mod:`dpaudit.runtime` runs them on Ray). :func:`epsilon_grid`
places the default epsilon grid from a short pilot run.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.accounting.profiles import ExactAccounting
from dpaudit.core.progress import ProgressBar
from dpaudit.estimation.diagnostics import ess_bulk, mcse_mean
from dpaudit.estimation.pld import (
    HockeyStickState,
    delta_bounds,
    hockey_stick_curve,
    init_hockey_stick,
    merge_hockey_stick,
)
from dpaudit.whitebox.kernels import LossKernel, loss_kernel
from dpaudit.whitebox.result import DIRECTIONS, DirectionResult
from dpaudit.whitebox.summaries import DirectionAtClaim

__all__ = [
    "GRID_POINTS",
    "PILOT",
    "ChunkPart",
    "DirectionRun",
    "DirectionState",
    "KernelRecipe",
    "RunSettings",
    "arviz_diagnostics",
    "chunk_count",
    "chunk_part",
    "direction_result",
    "epsilon_grid",
    "finish_direction",
    "init_direction",
    "merge_direction",
    "run_direction",
    "run_directions",
    "run_shard",
    "step_direction",
]

#: Releases of the pilot run per direction.
PILOT = 2048
#: Points of the default epsilon grid.
GRID_POINTS = 65
# Pilot keys are folded from 1000 + direction: disjoint from the main run's keys (0, 1).
_PILOT_KEY_OFFSET = 1000


class RunSettings(NamedTuple):
    """The settings shared by both directions of an audit.

    Attributes:
        grid: ``(G,)`` epsilon grid (numpy).
        claim_index: index of the claimed epsilon in ``grid``.
        claim_epsilon: the claimed epsilon.
        samples: releases per direction.
        chunk: releases per chunk.
        keep_samples: losses kept per direction.
        alpha: ``1 - confidence``.
        bound_method: confidence-bound method (:data:`dpaudit.estimation.pld.BOUND_METHODS`).
        name: the mechanism's name (for error messages).
    """

    grid: np.ndarray
    claim_index: int
    claim_epsilon: float
    samples: int
    chunk: int
    keep_samples: int
    alpha: float
    bound_method: str
    name: str


class DirectionRun(NamedTuple):
    """What one direction's run produced.

    Attributes:
        result: the :class:`~dpaudit.whitebox.result.DirectionResult`.
        best_loss: the largest loss drawn (``-inf`` when none).
        best_release: the release with that loss, or ``None``.
    """

    result: DirectionResult
    best_loss: float
    best_release: np.ndarray | None


def _infinite_log_densities(kernel: LossKernel, key, n: int, index: int) -> float | None:
    """``log p`` when both log densities are the same infinity at a NaN-loss release, else None.

    Regenerates the release from its chunk's key and evaluates both laws' log densities
    eagerly (once, on the error path only).
    """
    try:
        x = jnp.asarray(kernel.release(key, n, index), dtype=jnp.float64)[None]
        log_p = float(jnp.sum(kernel.dist_p.log_prob(x)))
        log_q = float(jnp.sum(kernel.dist_q.log_prob(x)))
    except Exception:  # the diagnosis is best effort: the NaN error is raised regardless
        return None
    return log_p if math.isinf(log_p) and log_p == log_q else None


def _raise_on_nan(state, name: str, d_index: int, cause=None) -> None:
    """Raise for NaN losses; ``cause()`` names both log densities when both are infinite."""
    if float(state.n_nan) <= 0:
        return
    both = cause() if cause is not None else None
    where = f"mechanism {name!r}: {int(state.n_nan)} privacy loss(es) are NaN in direction "
    if both is not None:
        kind = "underflow" if both < 0 else "overflow"
        raise ValueError(
            f"{where}{DIRECTIONS[d_index]} because both log densities are infinite (log p = "
            f"log p' = {both}) at the same release, a numerical {kind} typical of a density "
            "computed as log(prod(pdf)) over many coordinates; compute the log density as a "
            "sum of log densities (jnp.sum of the coordinates' log_prob, or numpyro's "
            ".to_event(1)) instead (the audit is aborted, no partial result is returned)."
        )
    raise ValueError(
        f"{where}{DIRECTIONS[d_index]} (a release outside the support of both release "
        "distributions, or a NaN log density); the audit is aborted and no partial result "
        "is returned."
    )


def chunk_count(settings: RunSettings) -> int:
    """How many chunks (keys) one direction's run has.

    Args:
        settings: the shared :class:`RunSettings`.

    Returns:
        ``ceil(samples / chunk)``; chunk ``c`` has key ``fold_in(fold_in(key, d_index), c)``.
    """
    return -(-settings.samples // settings.chunk)


class ChunkPart(NamedTuple):
    """One chunk's contribution, before it is folded into the direction's state.

    Attributes:
        state: the chunk's own hockey-stick state (numpy arrays).
        top: its largest valid loss (``-inf`` when none).
        where: the index of that loss in the chunk.
        kept: the chunk's losses among the first ``keep_samples`` of the direction.
        draw: the release with that loss when the kernel's step returned it, else ``None``.
    """

    state: HockeyStickState
    top: float
    where: int
    kept: np.ndarray
    draw: np.ndarray | None = None


class DirectionState(NamedTuple):
    """A shardable partial run of one direction: ``init``, ``step``, ``merge``, ``finish``.

    Chunks ``0 .. folded_chunks - 1`` are folded, in chunk order, into ``folded``; chunks
    beyond are kept as :class:`ChunkPart` in ``pending`` until every chunk before them has
    arrived. Floating-point merges are not associative, so folding only ever proceeds in
    chunk order from chunk 0: a run split into any shards, merged in any order, gives the
    bits of the serial run.

    Attributes:
        folded: the hockey-stick state of chunks ``0 .. folded_chunks - 1`` (numpy).
        folded_chunks: how many leading chunks are folded.
        best: ``(loss, chunk, index, release)`` of the first largest loss among the folded
            chunks (``release``: as the step returned it, or ``None``).
        kept: the kept losses of the folded chunks, in order.
        pending: chunk index -> :class:`ChunkPart` of chunks not yet folded.
    """

    folded: HockeyStickState
    folded_chunks: int
    best: tuple[float, int, int, np.ndarray | None]
    kept: tuple[np.ndarray, ...]
    pending: dict


# One compilation of the merge for every audit (states have the grid's shape).
_merge_jit = jax.jit(merge_hockey_stick)
# One program for every key folding of the run (``jax.random.fold_in`` called eagerly
# compiles two: the conversion of its integer, then the fold).
_fold_in = jax.jit(jax.random.fold_in)


def _host(state: HockeyStickState) -> HockeyStickState:
    return HockeyStickState(*(np.asarray(x) for x in state))


def init_direction(settings: RunSettings) -> DirectionState:
    """The empty partial run of one direction (no chunk seen).

    Args:
        settings: the shared :class:`RunSettings`.

    Returns:
        A :class:`DirectionState`.
    """
    return DirectionState(
        _host(init_hockey_stick(settings.grid.size)), 0, (-math.inf, -1, -1, None), (), {}
    )


def chunk_part(kernel: LossKernel, d_index: int, key, settings: RunSettings, c: int) -> ChunkPart:
    """Draw chunk ``c`` of one direction and summarise it on its own.

    Args:
        kernel: the direction's loss kernel.
        d_index: 0 for ``D->D'``, 1 for ``D'->D``.
        key: the audit's root key.
        settings: the shared :class:`RunSettings`.
        c: the chunk index, ``0 <= c < chunk_count(settings)``.

    Returns:
        The chunk's :class:`ChunkPart`.

    Raises:
        ValueError: when a loss is NaN (no partial result is returned).
    """
    s = settings
    n_valid = min(s.chunk, s.samples - c * s.chunk)
    chunk_key = _fold_in(_fold_in(key, d_index), c)
    state, loss, top, where, draw = kernel.step(
        kernel.init(s.grid.size), chunk_key, np.asarray(s.grid, dtype=np.float64), n_valid, s.chunk
    )

    def cause():
        first = int(np.flatnonzero(np.isnan(np.asarray(loss[:n_valid])))[0])
        return _infinite_log_densities(kernel, chunk_key, s.chunk, first)

    _raise_on_nan(state, s.name, d_index, cause)
    head = max(0, min(n_valid, s.keep_samples - c * s.chunk))
    kept = np.asarray(loss[:head]) if head else np.zeros(0)
    draw = None if draw is None else np.asarray(draw)
    return ChunkPart(_host(state), float(top), int(where), kept, draw)


def _fold(state: DirectionState) -> DirectionState:
    """Fold the pending chunks that continue the folded prefix, in chunk order."""
    folded, c, best, kept, pending = state
    pending = dict(pending)
    while c in pending:
        part = pending.pop(c)
        # Merging into the empty state (no loss yet) returns the chunk's state exactly
        # (n_a = 0: frac = 1, mean = 0 + d, m2 = 0 + m2_b + 0): skipped, so a run of one
        # chunk never compiles the merge.
        empty = c == 0 and float(folded.count) == 0.0
        folded = part.state if empty else _host(_merge_jit(folded, part.state))
        if part.top > best[0]:
            best = (part.top, c, part.where, part.draw)
        if part.kept.size:
            kept = (*kept, part.kept)
        c += 1
    return DirectionState(folded, c, best, kept, pending)


def step_direction(
    state: DirectionState, kernel: LossKernel, d_index: int, key, settings: RunSettings, c: int
) -> DirectionState:
    """Add chunk ``c`` to a partial run.

    Args:
        state: the partial run (must not hold chunk ``c`` yet).
        kernel: the direction's loss kernel.
        d_index: 0 for ``D->D'``, 1 for ``D'->D``.
        key: the audit's root key.
        settings: the shared :class:`RunSettings`.
        c: the chunk index.

    Returns:
        The new :class:`DirectionState`.

    Raises:
        ValueError: when a loss is NaN, or chunk ``c`` is already in ``state``.
    """
    part = chunk_part(kernel, d_index, key, settings, c)
    return merge_direction(
        state, DirectionState(state.folded, 0, (-math.inf, -1, -1, None), (), {c: part})
    )


def merge_direction(first: DirectionState, second: DirectionState) -> DirectionState:
    """Merge two partial runs of one direction over disjoint chunks (in either order).

    Args:
        first: a partial run.
        second: another partial run of the same direction, over other chunks.

    Returns:
        The partial run of the union of their chunks; bit-identical whatever the order and
        the split, because folding happens in chunk order only.

    Raises:
        ValueError: if the two runs share a chunk.
    """
    if second.folded_chunks > first.folded_chunks:
        first, second = second, first
    overlap = set(first.pending) & set(second.pending)
    overlap |= {c for c in second.pending if c < first.folded_chunks}
    if second.folded_chunks or overlap:
        raise ValueError(
            "the two partial runs share chunks; each chunk key must be run by exactly one shard."
        )
    return _fold(first._replace(pending={**first.pending, **second.pending}))


def finish_direction(
    state: DirectionState, kernel: LossKernel, d_index: int, key, settings: RunSettings
) -> DirectionRun:
    """The :class:`DirectionRun` of a complete partial run.

    Args:
        state: the merged partial run; it must hold every chunk.
        kernel: the direction's loss kernel (regenerates the release with the largest loss).
        d_index: 0 for ``D->D'``, 1 for ``D'->D``.
        key: the audit's root key.
        settings: the shared :class:`RunSettings`.

    Returns:
        A :class:`DirectionRun`.

    Raises:
        RuntimeError: if chunks are missing (nothing partial is reported as complete).
    """
    n_chunks = chunk_count(settings)
    if state.folded_chunks != n_chunks or state.pending:
        raise RuntimeError(
            f"direction {DIRECTIONS[d_index]}: only {state.folded_chunks} of {n_chunks} chunks "
            "arrived in order; the run is incomplete and no result is reported."
        )
    losses = np.concatenate(state.kept) if state.kept else np.zeros(0)
    result = direction_result(d_index, state.folded, losses, settings)
    best_loss, c, where, best_release = state.best
    if c >= 0 and best_release is None:  # the closed form: its chunk drawn again
        best_release = kernel.release(_fold_in(_fold_in(key, d_index), c), settings.chunk, where)
    return DirectionRun(result, best_loss, best_release)


def run_shard(
    kernel: LossKernel, d_index: int, key, settings: RunSettings, chunks, bar=None
) -> DirectionState:
    """Run the chunks ``chunks`` (e.g. a ``range``) of one direction: one shard.

    Args:
        kernel: the direction's loss kernel.
        d_index: 0 for ``D->D'``, 1 for ``D'->D``.
        key: the audit's root key.
        settings: the shared :class:`RunSettings`.
        chunks: the chunk indices of the shard.
        bar: a progress bar advanced once per chunk, or ``None``.

    Returns:
        The shard's :class:`DirectionState` (merge shards with :func:`merge_direction`).

    Raises:
        ValueError: when a loss is NaN.
    """
    state = init_direction(settings)
    for c in chunks:
        state = step_direction(state, kernel, d_index, key, settings, c)
        if bar is not None:
            bar.advance()
    return state


def run_direction(
    kernel: LossKernel, d_index: int, key, settings: RunSettings, bar: ProgressBar
) -> DirectionRun:
    """Stream one direction's losses chunk by chunk into the hockey-stick state.

    The serial run is one shard over every chunk (:func:`run_shard`, :func:`finish_direction`).

    Args:
        kernel: the direction's loss kernel.
        d_index: 0 for ``D->D'``, 1 for ``D'->D``.
        key: the audit's root key (chunk ``c`` uses ``fold_in(fold_in(key, d_index), c)``).
        settings: the shared :class:`RunSettings`.
        bar: the progress bar (advanced once per chunk).

    Returns:
        A :class:`DirectionRun`.

    Raises:
        ValueError: when a loss is NaN (no partial result is returned).
    """
    state = run_shard(kernel, d_index, key, settings, range(chunk_count(settings)), bar)
    return finish_direction(state, kernel, d_index, key, settings)


class KernelRecipe(NamedTuple):
    """What builds a run's two loss kernels: shipped to workers, which build their own.

    Attributes:
        route: ``"closed-form"``, ``"density"`` or ``"model"``.
        mechanism: the mechanism.
        data: the dataset ``D``.
        data_prime: its neighbour ``D'``.
        dist_d: the release law of ``D``.
        dist_dp: the release law of ``D'``.
        shift: the noise structure ``D -> D'``, or ``None``.
    """

    route: str
    mechanism: object
    data: object
    data_prime: object
    dist_d: object
    dist_dp: object
    shift: object

    def kernels(self) -> tuple[LossKernel, LossKernel]:
        """The loss kernels of the two directions, ``D->D'`` then ``D'->D``.

        Returns:
            The two :class:`~dpaudit.whitebox.kernels.LossKernel`.
        """
        reverse = None if self.shift is None else self.shift.reversed()
        r, m, d, dp = self.route, self.mechanism, self.data, self.data_prime
        return (
            loss_kernel(r, m, d, dp, self.dist_d, self.dist_dp, self.shift),
            loss_kernel(r, m, dp, d, self.dist_dp, self.dist_d, reverse),
        )


def run_directions(kernels, key, settings: RunSettings, bar, executor=None, recipe=None):
    """Run both directions, in this process or as shards on an executor.

    Args:
        kernels: the two directions' loss kernels (this process's).
        key: the audit's root key.
        settings: the shared :class:`RunSettings`.
        bar: the progress bar (advanced once per chunk).
        executor: ``None`` (serial) or an executor of :mod:`dpaudit.runtime`.
        recipe: the :class:`KernelRecipe` workers build their kernels from (with an executor).

    Returns:
        The two :class:`DirectionRun`, bit-identical whatever the executor.

    Raises:
        ValueError: when a loss is NaN (no partial result is returned).
    """
    if executor is None:
        return [run_direction(kernel, d, key, settings, bar) for d, kernel in enumerate(kernels)]
    states = executor.run_directions(recipe, key, settings, bar)
    return [
        finish_direction(state, kernel, d, key, settings)
        for d, (state, kernel) in enumerate(zip(states, kernels, strict=True))
    ]


def direction_result(d_index: int, state, losses: np.ndarray, settings: RunSettings):
    """Bounds, curve and diagnostics of one direction from its final state.

    Args:
        d_index: 0 for ``D->D'``, 1 for ``D'->D``.
        state: the final hockey-stick state.
        losses: the kept losses.
        settings: the shared :class:`RunSettings`.

    Returns:
        A :class:`~dpaudit.whitebox.result.DirectionResult`.
    """
    s, g = settings, settings.grid.size
    # Curve bounds are simultaneous over the G grid points and both directions:
    # Bonferroni, alpha / (2 G) per point.
    curve = hockey_stick_curve(state, s.grid, s.alpha / (2 * g), method=s.bound_method)
    n = int(state.count)
    mean = float(curve.estimate[s.claim_index])
    var = float(state.m2[s.claim_index]) / (n - 1)
    # At the claim, alpha / 2 per direction: the verdict uses the max over both
    # directions, which then fails with probability at most alpha.
    lower, upper = delta_bounds(mean, var, n, s.alpha / 2, method=s.bound_method)
    y = -np.expm1(np.minimum(s.claim_epsilon - losses, 0.0)) if losses.size else losses
    ess, mcse = arviz_diagnostics(y)
    return DirectionResult(
        direction=DIRECTIONS[d_index],
        n=n,
        at_claim=DirectionAtClaim(
            estimate=mean,
            lower=float(lower),
            upper=float(upper),
            std_error=float(curve.std_error[s.claim_index]),
        ),
        curve=curve,
        max_loss=float(state.max_loss),
        n_infinite=int(state.n_infinite),
        losses=losses,
        ess=ess,
        mcse=mcse,
    )


def arviz_diagnostics(y: np.ndarray) -> tuple[float, float]:
    """ArviZ's effective sample size and Monte Carlo standard error of i.i.d. draws.

    The numbers of ``arviz.ess`` and ``arviz.mcse`` on four pseudo-chains, computed by
    :mod:`dpaudit.estimation.diagnostics` without importing ArviZ.

    Args:
        y: the draws (the hockey-stick terms at the claimed epsilon).

    Returns:
        ``(ess, mcse)``; NaN for fewer than 16 draws (too few for 4 chains).
    """
    if y.size < 16:
        return math.nan, math.nan
    n = (y.size // 4) * 4
    draws = y[:n].reshape(4, -1)  # four pseudo-chains: ArviZ's diagnostics need chains
    if np.all(draws == draws.flat[0]):
        return float(n), 0.0
    return ess_bulk(draws), mcse_mean(draws)


def _pilot_top(kernels, key, chunk: int, samples: int) -> float:
    """The largest finite loss of a pilot run in either direction (0 when none)."""
    top = 0.0
    n_valid = min(PILOT, chunk, samples)
    # Closed-form chunks are cheap: reuse the main shape (one compilation). Densities may be
    # expensive per release: draw only the pilot's releases (one more compilation).
    shape = chunk if kernels[0].route == "closed-form" else n_valid
    for d_index, kernel in enumerate(kernels):
        state = init_hockey_stick(GRID_POINTS + 1)
        loss = kernel.step(
            state,
            _fold_in(key, _PILOT_KEY_OFFSET + d_index),
            np.zeros(GRID_POINTS + 1),
            n_valid,
            shape,
        )[1]
        loss = np.asarray(loss)[:n_valid]
        finite = loss[np.isfinite(loss)]
        if finite.size:
            top = max(top, float(finite.max()))
    return top


def epsilon_grid(
    epsilons, claim_epsilon: float, kernels, key, accounting: ExactAccounting | None, chunk, samples
) -> np.ndarray:
    """The epsilon grid of the curves, always containing the claimed epsilon.

    Args:
        epsilons: a user grid, or ``None`` for the default: ``GRID_POINTS`` points from
            0 to ``max(2 epsilon, 1.25 x)`` with ``x`` the largest pilot loss (or the
            exact supremum of the loss when larger).
        claim_epsilon: the claimed epsilon.
        kernels: the two directions' loss kernels (for the pilot run).
        key: the audit's root key (the pilot uses its own folded keys).
        accounting: the exact accounting, or ``None``.
        chunk: releases per chunk of the main run.
        samples: releases per direction.

    Returns:
        The sorted grid (numpy).

    Raises:
        ValueError: for an empty or non-finite user grid.
    """
    if epsilons is not None:
        grid = np.asarray(epsilons, dtype=np.float64).reshape(-1)
        if grid.size == 0 or not np.all(np.isfinite(grid)):
            raise ValueError("epsilons must be a non-empty sequence of finite numbers.")
        return np.unique(np.append(grid, claim_epsilon))
    top = _pilot_top(kernels, key, chunk, samples)
    if accounting is not None and math.isfinite(accounting.sup_loss):
        top = max(top, accounting.sup_loss)
    hi = max(2.0 * claim_epsilon, 1.25 * top)
    grid = np.linspace(0.0, hi, GRID_POINTS)
    if np.any(grid == claim_epsilon):
        grid = np.append(grid, 1.05 * hi)  # keep G fixed so the step compiles once
    return np.unique(np.append(grid, claim_epsilon))
