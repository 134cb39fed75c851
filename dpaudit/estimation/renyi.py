r"""Certified Monte Carlo lower bounds on Rényi divergences, for any pair of release laws.

``D_alpha(P || Q) = log E_P[e^{(alpha - 1) L}] / (alpha - 1)`` with ``L = log dP/dQ``
(exact profiles of known noises: :mod:`dpaudit.accounting.renyi`).

A lower confidence bound from losses drawn under ``P``:
``E_P[e^{(alpha-1)L}] >= e^{(alpha-1)t} E_P[min(e^{(alpha-1)(L-t)}, 1)]`` for any
threshold ``t``; the truncated variable lies in ``[0, 1]``, so the empirical-Bernstein
lower bound of :func:`dpaudit.estimation.pld.delta_bounds` applies. ``t`` is the largest loss
of the first quarter of the losses, and the bound is computed on the other three
quarters, so ``t`` does not depend on the draws the bound uses.
"""

from __future__ import annotations

import math

import numpy as np

from dpaudit.estimation.pld import delta_bounds

__all__ = ["monte_carlo_renyi_lower"]


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
