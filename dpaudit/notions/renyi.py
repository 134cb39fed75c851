r"""Rényi divergences of a pair of release laws: exact profiles and certified Monte Carlo bounds.

``D_alpha(P || Q) = log E_P[e^{(alpha - 1) L}] / (alpha - 1)`` with ``L = log dP/dQ``.

* **Shifted Gaussian noise** (loss ``N(mu^2/2, mu^2)``): ``D_alpha = alpha mu^2 / 2``
  exactly, in both directions.
* **Independent Laplace / ICLP coefficients** (loss parameters ``a_j``, see
  :mod:`dpaudit.accounting`): Rényi divergences add over independent coordinates and
  one Laplace pair has (Mironov 2017, Prop. 6)
  ``D_alpha(a) = a + log(1 + (alpha - 1) expm1((1 - 2 alpha) a) / (2 alpha - 1)) / (alpha - 1)``.
* **A certified supremum** ``|L| <= s`` (the ``"supremum"`` accounting of
  :mod:`dpaudit.exact`): an upper bound only, ``D_alpha <= min(s, alpha s^2 / 2)``
  (Bun & Steinke 2016, Prop. 3.3: pure ``s``-DP implies ``s^2/2``-zCDP).
* **Monte Carlo** (any pair): a lower confidence bound from losses drawn under ``P``.
  ``E_P[e^{(alpha-1)L}] >= e^{(alpha-1)t} E_P[min(e^{(alpha-1)(L-t)}, 1)]`` for any
  threshold ``t``; the truncated variable lies in ``[0, 1]``, so the empirical-Bernstein
  lower bound of :func:`dpaudit.pld.delta_bounds` applies. ``t`` is the largest loss
  of the first quarter of the losses, and the bound is computed on the other three
  quarters, so ``t`` does not depend on the draws the bound uses.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.pld import delta_bounds

__all__ = [
    "PROFILE_ORDERS",
    "gaussian_renyi",
    "laplace_renyi",
    "monte_carlo_renyi_lower",
    "renyi_bounds",
    "supremum_renyi_upper",
]

#: Orders of the Rényi profile reported and checked by default.
PROFILE_ORDERS = (1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0, 64.0)


def gaussian_renyi(orders, mu: float) -> np.ndarray:
    """``D_alpha = alpha mu^2 / 2`` of a shifted Gaussian pair with loss ``N(mu^2/2, mu^2)``.

    Args:
        orders: orders ``alpha > 1``.
        mu: ``||h||_C / sigma`` (:func:`dpaudit.accounting.gaussian_mu`).

    Returns:
        ``D_alpha`` at each order.

    Example:
        >>> gaussian_renyi([2.0, 4.0], 1.0).tolist()
        [1.0, 2.0]
    """
    return np.asarray(orders, dtype=np.float64) * float(mu) ** 2 / 2.0


def laplace_renyi(orders, a) -> np.ndarray:
    """``sum_j D_alpha(a_j)`` of independent Laplace pairs with loss parameters ``a_j``.

    Args:
        orders: orders ``alpha > 1``.
        a: ``(K,)`` parameters ``|h_j| / b_j >= 0``.

    Returns:
        ``D_alpha`` at each order (exact; ``fsum`` over the components).

    Example:
        >>> round(float(laplace_renyi([2.0], [1.0])[0]), 6)  # dp_accounting: 0.619124
        0.619124
    """
    alpha = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    a = a[a > 0]
    out = np.empty(alpha.shape)
    for i, al in enumerate(alpha):
        terms = a + np.log1p((al - 1.0) * np.expm1((1.0 - 2.0 * al) * a) / (2.0 * al - 1.0)) / (
            al - 1.0
        )
        out[i] = math.fsum(terms.tolist())
    return out


def supremum_renyi_upper(orders, sup_loss: float) -> np.ndarray:
    """``min(s, alpha s^2 / 2)``: an upper bound on ``D_alpha`` when ``|L| <= s``.

    Args:
        orders: orders ``alpha > 1``.
        sup_loss: a certified upper bound ``s`` on ``|L|`` (both directions).

    Returns:
        The bound at each order.
    """
    alpha = np.asarray(orders, dtype=np.float64)
    s = float(sup_loss)
    return np.minimum(s, alpha * s * s / 2.0)


def renyi_bounds(orders, accounting) -> tuple[np.ndarray, np.ndarray] | None:
    """``(lower, upper)`` of ``D_alpha`` from an exact accounting (max over directions).

    Args:
        orders: orders ``alpha > 1``.
        accounting: an :class:`~dpaudit.accounting.ExactAccounting`, a supremum
            accounting (:mod:`dpaudit.exact`) or ``None``.

    Returns:
        The bounds (equal when exact), or ``None`` when nothing is known.
    """
    alpha = np.asarray(orders, dtype=np.float64)
    if accounting is None:
        return None
    family = accounting.family
    if family == "singular":
        inf = np.full(alpha.shape, math.inf)
        return inf, inf
    if family == "gaussian":
        d = gaussian_renyi(alpha, accounting.mu)
        return d, d
    if family == "laplace":
        d = laplace_renyi(alpha, accounting.laplace_parameters)
        # fsum of float64 terms: 1e-12 relative covers the per-term log1p/expm1 round-off.
        return d * (1 - 1e-12), d * (1 + 1e-12)
    if family == "supremum":
        return np.zeros(alpha.shape), supremum_renyi_upper(alpha, accounting.sup_loss)
    return None


def monte_carlo_renyi_lower(losses, orders, failure_probability: float) -> np.ndarray:
    """Certified lower bounds on ``D_alpha(P || Q)`` from losses ``L ~ P`` (truncated moment).

    Each order's bound fails with probability at most ``failure_probability`` (apply
    Bonferroni over orders and directions yourself).

    Args:
        losses: i.i.d. privacy losses drawn under ``P`` (``+inf`` allowed).
        orders: orders ``alpha > 1``.
        failure_probability: per-order failure probability in ``(0, 1)``.

    Returns:
        The lower bounds (``0`` when fewer than 8 losses are given).
    """
    loss = np.asarray(losses, dtype=np.float64).reshape(-1)
    alpha = np.asarray(orders, dtype=np.float64)
    if loss.size < 8:
        return np.zeros(alpha.shape)
    split = loss.size // 4
    pilot, rest = loss[:split], loss[split:]
    top = float(np.max(pilot))
    t = top if math.isfinite(top) else float(np.max(pilot[np.isfinite(pilot)], initial=0.0))
    out = np.zeros(alpha.shape)
    for i, al in enumerate(alpha):
        y = np.exp(np.minimum((al - 1.0) * (rest - t), 0.0))
        mean, var = float(np.mean(y)), float(np.var(y, ddof=1))
        low, _ = delta_bounds(mean, var, y.size, failure_probability, method="bernstein")
        low = float(low)
        out[i] = max(0.0, t + math.log(low) / (al - 1.0)) if low > 0 else 0.0
    return out
