r"""Run one direction of an audit over its chunks, and the pilot run that places the grid.

:func:`run_direction` streams ``samples`` losses chunk by chunk through a
:class:`~dpaudit.whitebox.kernels.LossKernel` into a hockey-stick state and
returns a :class:`DirectionRun`: the direction's
:class:`~dpaudit.whitebox.result.DirectionResult` and its largest loss with the
release that produced it (a certificate candidate). :func:`epsilon_grid`
places the default epsilon grid from a short pilot run.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpaudit.accounting import ExactAccounting
from dpaudit.pld import delta_bounds, hockey_stick_curve, init_hockey_stick
from dpaudit.progress import ProgressBar
from dpaudit.whitebox.kernels import LossKernel
from dpaudit.whitebox.result import DIRECTIONS, DirectionResult, import_arviz

__all__ = [
    "GRID_POINTS",
    "PILOT",
    "DirectionRun",
    "RunSettings",
    "arviz_diagnostics",
    "direction_result",
    "epsilon_grid",
    "run_direction",
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
        bound_method: confidence-bound method (:data:`dpaudit.pld.BOUND_METHODS`).
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


def _raise_on_nan(state, name: str, d_index: int) -> None:
    if float(state.n_nan) > 0:
        raise ValueError(
            f"mechanism {name!r}: {int(state.n_nan)} privacy loss(es) are "
            f"NaN in direction {DIRECTIONS[d_index]} (a release outside the support "
            "of both release distributions, or a NaN log density); the audit is "
            "aborted and no partial result is returned."
        )


def run_direction(
    kernel: LossKernel, d_index: int, key, settings: RunSettings, bar: ProgressBar
) -> DirectionRun:
    """Stream one direction's losses chunk by chunk into the hockey-stick state.

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
    s = settings
    state = kernel.init(s.grid.size)
    eps_j = jnp.asarray(s.grid)
    dkey = jax.random.fold_in(key, d_index)
    kept, n_kept = [], 0
    best_loss, best_at = -math.inf, None
    for c in range(-(-s.samples // s.chunk)):
        n_valid = min(s.chunk, s.samples - c * s.chunk)
        state, loss, top, where = kernel.step(
            state, jax.random.fold_in(dkey, c), eps_j, n_valid, s.chunk
        )
        _raise_on_nan(state, s.name, d_index)
        if n_kept < s.keep_samples:
            part = np.asarray(loss[: min(n_valid, s.keep_samples - n_kept)])
            kept.append(part)
            n_kept += part.size
        top = float(top)
        if top > best_loss:
            best_loss, best_at = top, (c, int(where))
        bar.advance()
    losses = np.concatenate(kept) if kept else np.zeros(0)
    result = direction_result(d_index, state, losses, s)
    best_release = None
    if best_at is not None:
        best_release = kernel.release(jax.random.fold_in(dkey, best_at[0]), s.chunk, best_at[1])
    return DirectionRun(result, best_loss, best_release)


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
        at_claim={
            "estimate": mean,
            "lower": float(lower),
            "upper": float(upper),
            "std_error": float(curve.std_error[s.claim_index]),
        },
        curve=curve,
        max_loss=float(state.max_loss),
        n_infinite=int(state.n_infinite),
        losses=losses,
        ess=ess,
        mcse=mcse,
    )


def arviz_diagnostics(y: np.ndarray) -> tuple[float, float]:
    """ArviZ effective sample size and Monte Carlo standard error of i.i.d. draws.

    Args:
        y: the draws (the hockey-stick terms at the claimed epsilon).

    Returns:
        ``(ess, mcse)``; NaN for fewer than 16 draws (too few for 4 chains).
    """
    if y.size < 16:
        return math.nan, math.nan
    az = import_arviz()
    n = (y.size // 4) * 4
    draws = y[:n].reshape(4, -1)  # four pseudo-chains: ArviZ's diagnostics need chains
    if np.all(draws == draws.flat[0]):
        return float(n), 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ess = float(az.ess(draws))
        mcse = float(az.mcse(draws))
    return ess, mcse


def _pilot_top(kernels, key, chunk: int, samples: int) -> float:
    """The largest finite loss of a pilot run in either direction (0 when none)."""
    top = 0.0
    n_valid = min(PILOT, chunk, samples)
    # Closed-form chunks are cheap: reuse the main shape (one compilation). Densities may be
    # expensive per release: draw only the pilot's releases (one more compilation).
    shape = chunk if kernels[0].route == "closed-form" else n_valid
    for d_index, kernel in enumerate(kernels):
        state = init_hockey_stick(GRID_POINTS + 1)
        _, loss, _, _ = kernel.step(
            state,
            jax.random.fold_in(key, _PILOT_KEY_OFFSET + d_index),
            jnp.zeros(GRID_POINTS + 1),
            n_valid,
            shape,
        )
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
