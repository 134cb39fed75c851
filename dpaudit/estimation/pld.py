r"""Empirical privacy-loss distributions: hockey-stick curves with confidence bounds.

For releases ``x_1..x_n ~ P_D`` with privacy losses ``L_i = L(x_i)`` (see
:mod:`dpaudit.model.loss`) the hockey-stick divergence
``delta(epsilon) = sup_A P_D(A) - e^epsilon P_D'(A)`` has the form

``delta(epsilon) = E_{x ~ P_D}[ Y_epsilon ]``,  ``Y_epsilon = (1 - e^(epsilon - L(x)))_+ in [0, 1]``

(Balle & Wang 2018, Thm 5; ``L = +inf`` gives ``Y = 1``). The mechanism is
``(epsilon, delta)``-DP for the pair iff ``delta(epsilon)`` is at most
``delta`` in *both* directions ``(D, D')`` and ``(D', D)``.

Confidence bounds. ``Y`` is bounded in ``[0, 1]``, so exact-coverage
(conservative) bounds for its mean need no distributional assumption:

* ``"bernstein"`` (default) — the empirical Bernstein bound of Maurer & Pontil
  (2009, Thm 4): with probability at least ``1 - alpha``,
  ``E Y <= Ybar + sqrt(2 V ln(2/alpha) / n) + 7 ln(2/alpha) / (3 (n - 1))``
  with ``V`` the unbiased sample variance, and symmetrically from below. It
  adapts to the small variance of ``Y`` when ``delta`` is small.
* ``"hoeffding"`` — ``Ybar -+ sqrt(ln(1/alpha) / (2 n))``.

Each one-sided bound holds at its own ``alpha`` (the *failure probability*,
always an explicit argument). Curves over a grid of epsilons are made
simultaneous by Bonferroni: each point gets ``alpha / G``.

The bounds are accumulated in a streaming state (``init`` / ``update`` /
``finalize``, after optax and blackjax), so 10^8 losses never need to be held
in memory: :func:`init_hockey_stick`, :func:`update_hockey_stick` (pure, jit-able,
merging chunk moments with Chan et al.'s parallel update, :func:`merge_hockey_stick`) and
:func:`hockey_stick_curve`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "BOUND_METHODS",
    "DeltaCurve",
    "HockeyStickState",
    "delta_bounds",
    "empirical_delta",
    "epsilon_for_delta",
    "epsilon_lower_for_delta",
    "hockey_stick_curve",
    "hockey_stick_terms",
    "init_hockey_stick",
    "interpolate_epsilon",
    "merge_hockey_stick",
    "update_hockey_stick",
]

#: Confidence-bound methods for the mean of a ``[0, 1]`` variable.
BOUND_METHODS = ("bernstein", "hoeffding")


def _check_failure_probability(alpha) -> None:
    arr = np.asarray(alpha, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0) or np.any(arr >= 1):
        raise ValueError(
            f"failure_probability must lie strictly between 0 and 1, got {alpha!r} "
            "(it is 1 - confidence)."
        )


def hockey_stick_terms(losses, epsilon) -> jax.Array:
    """``Y = (1 - e^(epsilon - L))_+``, shape ``epsilon.shape + losses.shape``.

    Written as ``1 - e^epsilon e^(-L)`` so that ``L = +inf`` gives 1 and very
    negative ``L`` gives 0 without ``inf - inf``.

    Args:
        losses: privacy losses (``+inf`` allowed).
        epsilon: one epsilon or an array of them.

    Returns:
        ``Y`` in ``[0, 1]``.

    Example:
        >>> [round(float(y), 4) for y in hockey_stick_terms(jnp.array([0.0, 1.0, jnp.inf]), 0.5)]
        [0.0, 0.3935, 1.0]
    """
    losses = jnp.asarray(losses, dtype=jnp.float64)
    eps = jnp.asarray(epsilon, dtype=jnp.float64)
    scale = jnp.exp(eps)[(...,) + (None,) * losses.ndim]
    return jnp.maximum(0.0, 1.0 - scale * jnp.exp(-losses))


def empirical_delta(losses, epsilons) -> np.ndarray:
    """Monte Carlo estimate ``mean_i Y_epsilon(L_i)`` of ``delta(epsilon)`` for each epsilon.

    Args:
        losses: ``(n,)`` privacy losses.
        epsilons: the epsilons.

    Returns:
        The estimates, shaped like ``epsilons``.

    Raises:
        ValueError: if ``losses`` is empty or contains NaN.
    """
    losses = np.asarray(losses, dtype=np.float64)
    if losses.size == 0:
        raise ValueError("empirical_delta needs at least one privacy loss.")
    if np.any(np.isnan(losses)):
        raise ValueError("the privacy losses contain NaN; no hockey-stick estimate is formed.")
    return np.asarray(jnp.mean(hockey_stick_terms(losses, np.asarray(epsilons)), axis=-1))


def delta_bounds(mean, variance, n, failure_probability, *, method: str = "bernstein"):
    """One-sided confidence bounds ``(lower, upper)`` for the mean of a ``[0, 1]`` variable.

    Each bound fails with probability at most ``failure_probability`` (so the
    two-sided interval fails with at most twice that).

    Args:
        mean: sample mean(s) ``Ybar``.
        variance: unbiased sample variance(s) ``V`` (ignored by Hoeffding).
        n: number of samples (>= 2 for Bernstein).
        failure_probability: ``alpha`` in ``(0, 1)``, scalar or broadcastable.
        method: ``"bernstein"`` (Maurer–Pontil) or ``"hoeffding"``.

    Returns:
        ``(lower, upper)`` numpy arrays clipped to ``[0, 1]``.

    Raises:
        ValueError: for an unknown method, ``n`` too small or a bad ``alpha``.

    Example:
        >>> lo, hi = delta_bounds(0.5, 0.25, 10_000, 0.05, method="hoeffding")
        >>> round(float(lo), 4), round(float(hi), 4)
        (0.4878, 0.5122)
    """
    if method not in BOUND_METHODS:
        raise ValueError(f"method must be one of {BOUND_METHODS}, got {method!r}.")
    _check_failure_probability(failure_probability)
    n = int(n)
    mean = np.asarray(mean, dtype=np.float64)
    alpha = np.asarray(failure_probability, dtype=np.float64)
    if method == "hoeffding":
        if n < 1:
            raise ValueError("Hoeffding bounds need at least one sample.")
        width = np.sqrt(np.log(1.0 / alpha) / (2.0 * n))
    else:
        if n < 2:
            raise ValueError("empirical Bernstein bounds need at least two samples.")
        variance = np.maximum(np.asarray(variance, dtype=np.float64), 0.0)
        log_term = np.log(2.0 / alpha)
        width = np.sqrt(2.0 * variance * log_term / n) + 7.0 * log_term / (3.0 * (n - 1))
    lower = np.clip(mean - width, 0.0, 1.0)
    upper = np.clip(mean + width, 0.0, 1.0)
    return lower, upper


# --------------------------------------------------------------- streaming


class HockeyStickState(NamedTuple):
    """Running moments of ``Y_epsilon`` over a fixed grid of epsilons (one direction).

    Attributes:
        count: number of losses seen (float64 scalar).
        mean: ``(G,)`` running means of ``Y_epsilon``.
        m2: ``(G,)`` running sums of squared deviations (Chan et al.).
        max_loss: the largest loss seen (``-inf`` at start).
        n_infinite: number of ``+inf`` losses.
        n_nan: number of NaN losses (any makes the run invalid).
    """

    count: jax.Array
    mean: jax.Array
    m2: jax.Array
    max_loss: jax.Array
    n_infinite: jax.Array
    n_nan: jax.Array


def init_hockey_stick(n_epsilons: int) -> HockeyStickState:
    """Empty state for ``n_epsilons`` grid points.

    Args:
        n_epsilons: the number ``G`` of grid points.

    Returns:
        A :class:`HockeyStickState` with no losses, of numpy float64 arrays: a jitted
        update takes them as arguments as it would JAX arrays (the same compiled program),
        and building them compiles nothing (``jnp.zeros`` would compile a program per shape
        in a fresh process).
    """
    zeros = np.zeros(int(n_epsilons), dtype=np.float64)
    return HockeyStickState(
        count=np.zeros((), np.float64),
        mean=zeros,
        m2=zeros.copy(),
        max_loss=np.full((), -np.inf, dtype=np.float64),  # strong dtype: no recompiles
        n_infinite=np.zeros((), np.float64),
        n_nan=np.zeros((), np.float64),
    )


def update_hockey_stick(state: HockeyStickState, losses, epsilons, mask=None) -> HockeyStickState:
    """Fold a chunk of losses into the state (pure; jit- and vmap-compatible).

    Args:
        state: the running :class:`HockeyStickState`.
        losses: ``(n,)`` privacy losses (``+inf`` allowed; NaN is counted).
        epsilons: ``(G,)`` the grid the state was created for.
        mask: optional ``(n,)`` booleans; only ``True`` entries count (lets a
            fixed chunk size cover a sample count that is not a multiple of it).

    Returns:
        The new :class:`HockeyStickState`.
    """
    losses = jnp.asarray(losses, dtype=jnp.float64)
    valid = jnp.ones(losses.shape, bool) if mask is None else jnp.asarray(mask, bool)
    is_nan = jnp.isnan(losses)
    n_nan = jnp.sum(valid & is_nan)
    use = valid & ~is_nan
    w = use.astype(jnp.float64)
    n_b = jnp.sum(w)
    clean = jnp.where(use, losses, 0.0)
    exp_neg = jnp.exp(-clean)

    def moments(eps):
        y = jnp.maximum(0.0, 1.0 - jnp.exp(eps) * exp_neg) * w
        mean_b = jnp.sum(y) / jnp.maximum(n_b, 1.0)
        m2_b = jnp.sum(w * (y - mean_b) ** 2)
        return mean_b, m2_b

    mean_b, m2_b = jax.lax.map(moments, jnp.asarray(epsilons, dtype=jnp.float64))
    max_b = jnp.max(jnp.where(use, losses, -jnp.inf))
    n_inf = jnp.sum(use & (losses == jnp.inf))
    chunk = HockeyStickState(n_b, mean_b, m2_b, max_b, n_inf.astype(jnp.float64), n_nan)
    return merge_hockey_stick(state, chunk)


def merge_hockey_stick(first: HockeyStickState, second: HockeyStickState) -> HockeyStickState:
    """The state of the losses of ``first`` followed by those of ``second`` (pure; jit-able).

    Chan et al.'s parallel update of the moments. It is exact for the counts and the
    maximum but, like any floating-point sum, not associative: states merged in another
    order differ in the last bits. :mod:`dpaudit.whitebox.run` therefore always merges
    chunk states in chunk order, whatever machine computed them.

    Args:
        first: the state of the earlier losses.
        second: the state of the later losses (e.g. one chunk's, folded into an empty state).

    Returns:
        The merged :class:`HockeyStickState`.
    """
    n_a, n_b = first.count, second.count
    n = n_a + n_b
    d = second.mean - first.mean
    frac = jnp.where(n > 0, n_b / jnp.maximum(n, 1.0), 0.0)
    mean = first.mean + d * frac
    m2 = first.m2 + second.m2 + d * d * n_a * frac
    max_loss = jnp.maximum(first.max_loss, second.max_loss)
    n_inf = first.n_infinite + second.n_infinite
    return HockeyStickState(n, mean, m2, max_loss, n_inf, first.n_nan + second.n_nan)


@dataclasses.dataclass(frozen=True)
class DeltaCurve:
    """A Monte Carlo hockey-stick curve with confidence bounds (one direction).

    Attributes:
        epsilons: ``(G,)`` grid.
        estimate: ``(G,)`` Monte Carlo means of ``Y_epsilon``.
        lower, upper: ``(G,)`` one-sided bounds, each failing with probability
            at most ``failure_probability`` per point.
        std_error: ``(G,)`` Monte Carlo standard errors ``sqrt(V / n)``.
        n: number of losses.
        failure_probability: per-point ``alpha``.
        method: bound method.
    """

    epsilons: np.ndarray
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    std_error: np.ndarray
    n: int
    failure_probability: float
    method: str


def hockey_stick_curve(
    state: HockeyStickState, epsilons, failure_probability: float, *, method: str = "bernstein"
) -> DeltaCurve:
    """Estimates and per-point confidence bounds of ``delta(epsilon)`` from a state.

    Args:
        state: the final :class:`HockeyStickState`.
        epsilons: ``(G,)`` the grid of the state.
        failure_probability: per-point ``alpha`` of each one-sided bound.
        method: one of :data:`BOUND_METHODS`.

    Returns:
        A :class:`DeltaCurve`.

    Raises:
        ValueError: if the state saw NaN losses or fewer than two losses.
    """
    if float(state.n_nan) > 0:
        raise ValueError(
            f"{int(state.n_nan)} privacy losses were NaN; the run is invalid and no curve is "
            "formed."
        )
    n = int(state.count)
    if n < 2:
        raise ValueError("a hockey-stick curve needs at least two privacy losses.")
    mean = np.clip(np.asarray(state.mean), 0.0, 1.0)
    variance = np.asarray(state.m2) / (n - 1)
    lower, upper = delta_bounds(mean, variance, n, failure_probability, method=method)
    return DeltaCurve(
        epsilons=np.asarray(epsilons, dtype=np.float64),
        estimate=mean,
        lower=lower,
        upper=upper,
        std_error=np.sqrt(np.maximum(variance, 0.0) / n),
        n=n,
        failure_probability=float(failure_probability),
        method=method,
    )


def epsilon_for_delta(epsilons, deltas, delta: float) -> float:
    """Smallest grid epsilon whose ``delta(epsilon) <= delta`` (``inf`` if none).

    Applied to an *upper* curve this is a certified upper bound on the
    mechanism's ``epsilon(delta)``, because ``delta(epsilon)`` is non-increasing.

    Args:
        epsilons: ``(G,)`` increasing grid.
        deltas: ``(G,)`` curve values.
        delta: the target delta.

    Returns:
        The grid epsilon, or ``inf``.

    Example:
        >>> epsilon_for_delta([0.0, 1.0, 2.0], [0.5, 0.1, 0.0], 0.2)
        1.0
    """
    eps = np.asarray(epsilons, dtype=np.float64)
    d = np.asarray(deltas, dtype=np.float64)
    ok = np.nonzero(d <= delta)[0]
    return float(eps[ok[0]]) if ok.size else math.inf


def epsilon_lower_for_delta(epsilons, lower_deltas, delta: float) -> float:
    """Largest grid epsilon whose *lower* bound on ``delta(epsilon)`` exceeds ``delta``.

    If ``delta(epsilon) > delta`` then ``epsilon(delta) >= epsilon``, so this is a
    certified lower bound on ``epsilon(delta)`` (``0`` when no point certifies).

    Args:
        epsilons: ``(G,)`` increasing grid.
        lower_deltas: ``(G,)`` lower bounds on ``delta(epsilon)``.
        delta: the target delta.

    Returns:
        The grid epsilon, or ``0``.
    """
    eps = np.asarray(epsilons, dtype=np.float64)
    d = np.asarray(lower_deltas, dtype=np.float64)
    hit = np.nonzero(d > delta)[0]
    return float(eps[hit[-1]]) if hit.size else 0.0


def interpolate_epsilon(epsilons, deltas, delta: float) -> float:
    """Point estimate of ``epsilon(delta)`` by linear interpolation on the grid (``inf`` if above).

    Args:
        epsilons: ``(G,)`` increasing grid.
        deltas: ``(G,)`` curve values (made non-increasing first).
        delta: the target delta.

    Returns:
        The interpolated epsilon, or ``inf`` when the curve stays above ``delta``.
    """
    eps = np.asarray(epsilons, dtype=np.float64)
    d = np.minimum.accumulate(np.asarray(deltas, dtype=np.float64))
    if d[0] <= delta:
        return float(eps[0])
    idx = np.nonzero(d <= delta)[0]
    if not idx.size:
        return math.inf
    j = idx[0]
    d0, d1 = d[j - 1], d[j]
    t = 0.0 if d0 == d1 else (d0 - delta) / (d0 - d1)
    return float(eps[j - 1] + t * (eps[j] - eps[j - 1]))
