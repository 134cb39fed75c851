r"""Trade-off curves of a pair of release laws, and the hockey-stick profiles they are dual to.

The trade-off curve ``T(x)`` of ``(P, Q)`` is the smallest type II error
``Q(accept)`` of a test of ``P`` against ``Q`` with type I error ``P(reject) = x``
(Dong, Roth & Su 2022). It is dual to the hockey-stick curve of the pair
(DRS Prop. 2.12): ``T(x) = sup_epsilon (1 - delta(epsilon) - e^epsilon x)``.

* Every ``epsilon`` gives a lower bound on ``T``; from an *upper* bound on
  ``delta`` on a grid, :func:`tradeoff_lower` is a lower bound on ``T``.
* An upper bound on ``T`` needs all ``epsilon``: between grid points ``delta`` is
  non-increasing, so on ``[e_j, e_{j+1}]`` the term is at most
  ``1 - delta_low(e_{j+1}) - e^{e_j} x``; below the grid ``delta >= 1 - e^epsilon``
  and above it ``delta >= 0`` (:func:`tradeoff_upper`).

:func:`pair_profile` returns the bracket of ``delta(epsilon)`` of a pair from its
exact accounting on a grid (exact for Gaussian noise, numerical bounds for
Laplace/ICLP, the randomized-response bound for a certified supremum).
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.accounting.conversions import gdp_tradeoff

__all__ = [
    "pair_profile",
    "pair_tradeoff",
    "profile_grid",
    "tradeoff_lower",
    "tradeoff_upper",
    "two_sided_profile",
]

#: Points of the epsilon grid of an exact profile.
_PROFILE_POINTS = 401


def tradeoff_lower(x, epsilons, delta_upper) -> np.ndarray:
    """Lower bound on ``T(x)`` from upper bounds on ``delta`` at ``epsilons`` (any grid).

    Args:
        x: type I error(s) in ``[0, 1]``.
        epsilons: ``(G,)`` epsilons.
        delta_upper: ``(G,)`` upper bounds on ``delta(epsilon)``.

    Returns:
        ``max(0, max_j (1 - delta_upper_j - e^{e_j} x))``, shaped like ``x``.
    """
    xs = np.atleast_1d(np.asarray(x, dtype=np.float64))
    e = np.asarray(epsilons, dtype=np.float64)
    d = np.asarray(delta_upper, dtype=np.float64)
    scale = np.exp(np.minimum(e, 700.0))
    vals = 1.0 - d[None, :] - scale[None, :] * xs[:, None]
    return np.maximum(np.max(vals, axis=1), 0.0).reshape(np.shape(x))


def tradeoff_upper(x, epsilons, delta_lower) -> np.ndarray:
    """Upper bound on ``T(x)`` from lower bounds on ``delta`` on an increasing grid.

    Args:
        x: type I error(s) in ``[0, 1]``.
        epsilons: ``(G,)`` increasing epsilons.
        delta_lower: ``(G,)`` lower bounds on ``delta(epsilon)``.

    Returns:
        The bound, clipped to ``[0, 1 - x]``, shaped like ``x``.
    """
    xs = np.atleast_1d(np.asarray(x, dtype=np.float64))
    e = np.asarray(epsilons, dtype=np.float64)
    d = np.asarray(delta_lower, dtype=np.float64)
    scale = np.exp(np.minimum(e, 700.0))
    inner = 1.0 - d[None, 1:] - scale[None, :-1] * xs[:, None]
    below = math.exp(min(e[0], 700.0)) * (1.0 - xs)  # epsilon < e_0: delta >= 1 - e^epsilon
    above = 1.0 - scale[-1] * xs  # epsilon > e_last: delta >= 0
    out = np.maximum(np.max(inner, axis=1), np.maximum(below, above))
    return np.clip(out, 0.0, 1.0 - xs).reshape(np.shape(x))


def profile_grid(accounting, points: int = _PROFILE_POINTS) -> np.ndarray:
    """An epsilon grid covering where the pair's ``delta(epsilon)`` changes.

    Args:
        accounting: the pair's exact accounting.
        points: grid size.

    Returns:
        Increasing epsilons from ``-E`` to ``E`` (``E`` the supremum of the loss, or
        ``mu^2/2 + 9 mu`` for Gaussian noise, where ``delta`` is below ``1e-19``).
    """
    if accounting.family == "gaussian":
        mu = float(accounting.mu)
        top = mu * mu / 2.0 + 9.0 * mu if mu > 0 else 1.0
    else:
        top = float(accounting.sup_loss) if math.isfinite(accounting.sup_loss) else 1.0
        top = max(top, 1e-6)
    half = np.linspace(0.0, top, points // 2 + 1)
    return np.unique(np.concatenate([-half[::-1], half]))


def pair_profile(accounting, epsilons) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lower, upper)`` bounds on the pair's ``delta(epsilon)`` (both directions alike).

    Args:
        accounting: exact accounting of the pair, or ``None``.
        epsilons: epsilons (any real).

    Returns:
        The bracket, or ``None`` without accounting.
    """
    if accounting is None:
        return None
    eps = np.asarray(epsilons, dtype=np.float64)
    if accounting.family == "supremum":
        s = float(accounting.sup_loss)
        if math.isinf(s):
            return np.asarray(accounting.delta_lower(eps)), np.ones_like(eps)
        # |L| <= s in both directions: the worst pair is randomized response with e^s
        # (Kairouz, Oh & Viswanath 2015): delta(e) <= (e^s - e^e) / (1 + e^s) for e >= 0.
        # Below 0, delta(-e) = 1 - e^(-e) (1 - delta(e)) (the same bound in both directions).
        neg = 1.0 - np.exp(np.minimum(eps, 0.0)) * (1.0 - _rr_at(-eps, s))
        upper = np.where(eps >= 0, _rr_at(eps, s), neg)
        return np.asarray(accounting.delta_lower(eps)), np.clip(upper, 0.0, 1.0)
    return np.asarray(accounting.delta_lower(eps)), np.asarray(accounting.delta_upper(eps))


def _rr_at(eps, s: float) -> np.ndarray:
    """Randomized-response ``delta`` at ``eps >= 0`` (clipped) for supremum ``s``."""
    e = np.clip(np.asarray(eps, dtype=np.float64), 0.0, s)
    return (math.exp(s) - np.exp(e)) / (1.0 + math.exp(s))


def pair_tradeoff(accounting, x) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lower, upper)`` of the pair's trade-off curve ``T(x)`` from its exact accounting.

    Args:
        accounting: the pair's exact accounting, or ``None``.
        x: type I error(s).

    Returns:
        The bracket (equal for Gaussian noise: ``G_mu``), or ``None``.
    """
    if accounting is None:
        return None
    if accounting.family == "gaussian":
        t = gdp_tradeoff(x, float(accounting.mu))
        return t, t
    if accounting.family == "singular":
        zero = np.zeros(np.shape(x))
        return zero, zero
    grid = profile_grid(accounting)
    low, up = pair_profile(accounting, grid)
    return tradeoff_lower(x, grid, up), tradeoff_upper(x, grid, low)


def two_sided_profile(epsilons, forward, backward) -> tuple[np.ndarray, np.ndarray]:
    """One direction's ``delta`` on ``[-E, E]`` from both directions' values on ``[0, E]``.

    ``delta_{P,Q}(-e) = 1 - e^{-e} (1 - delta_{Q,P}(e))`` (the hockey-stick identity), so a
    bound on the reverse direction at ``e >= 0`` is a bound of the same side at ``-e``.

    Args:
        epsilons: ``(G,)`` increasing epsilons ``>= 0``.
        forward: ``(G,)`` bounds on ``delta_{P,Q}`` at ``epsilons``.
        backward: ``(G,)`` bounds of the same side on ``delta_{Q,P}`` at ``epsilons``.

    Returns:
        ``(grid, values)`` on the mirrored grid (increasing).
    """
    e = np.asarray(epsilons, dtype=np.float64)
    neg = 1.0 - np.exp(-e) * (1.0 - np.asarray(backward, dtype=np.float64))
    keep = e > 0
    grid = np.concatenate([-e[keep][::-1], e])
    values = np.concatenate([neg[keep][::-1], np.asarray(forward, dtype=np.float64)])
    return grid, np.clip(values, 0.0, 1.0)
