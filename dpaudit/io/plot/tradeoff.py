r"""Figures of a notion audit: the pair's trade-off curve and Rényi profile against the claim.

:func:`tradeoff_figure` draws, for a GDP or f-DP claim, the claimed trade-off curve, the
exact (or numerical bracket of the) trade-off curve of the audited pair, and the Monte
Carlo band of the ``D -> D'`` direction (from the simultaneous bounds of its hockey-stick
curve, :func:`dpaudit.accounting.tradeoff.tradeoff_lower` / ``tradeoff_upper``).
:func:`renyi_figure` draws, for a zCDP or RDP claim, the claimed bound on ``D_alpha``,
the exact profile and the certified Monte Carlo lower bounds. Both return a matplotlib
figure (the caller saves and closes it), or ``None`` when the result is not a notion
audit of that kind.
"""

from __future__ import annotations

import numpy as np

from dpaudit.accounting.tradeoff import tradeoff_lower, tradeoff_upper, two_sided_profile

__all__ = ["notion_figures", "renyi_figure", "tradeoff_figure"]

_SIZE = (5.2, 3.2)


def _notion(result) -> dict | None:
    diagnostics = getattr(result, "diagnostics", None) or {}
    return diagnostics.get("notion")


def _array(values) -> np.ndarray | None:
    if values is None:
        return None
    return np.asarray([np.inf if v == "inf" else np.nan if v is None else v for v in values], float)


def _new_axes(ax):
    """``ax``, or the axes of a new figure of the report's size."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=_SIZE)[1]


def tradeoff_figure(result, ax=None):
    """The trade-off curves of a GDP / f-DP audit: claimed, exact bracket, Monte Carlo band.

    Args:
        result: a white-box :class:`~dpaudit.AuditResult` of a notion claim.
        ax: matplotlib axes to draw on, or ``None`` for a new figure.

    Returns:
        The matplotlib figure of the axes, or ``None``.
    """
    notion = _notion(result)
    if notion is None or notion["notion"] not in ("gdp", "f-dp"):
        return None
    profile = notion["profile"]
    x = _array(profile["x"])
    ax = _new_axes(ax)
    ax.plot(x, 1 - x, color="0.7", lw=0.8, ls=":", label="random guessing 1 - x")
    ax.plot(x, _array(profile["claimed"]), "k--", lw=1.4, label=f"claimed ({notion['claim']})")
    low, up = _array(profile["exact_lower"]), _array(profile["exact_upper"])
    if low is not None:
        ax.fill_between(x, low, up, color="C0", alpha=0.35, lw=0)
        ax.plot(x, low, color="C0", lw=1.4, label="exact trade-off of the pair")
    curves = result.curves
    if curves and "D->D'" in curves and "D'->D" in curves:
        grid = np.asarray(curves["epsilons"], float)
        fwd, bwd = curves["D->D'"], curves["D'->D"]
        g_up, d_up = two_sided_profile(grid, fwd["upper"], bwd["upper"])
        g_lo, d_lo = two_sided_profile(grid, fwd["lower"], bwd["lower"])
        mc_low, mc_up = tradeoff_lower(x, g_up, d_up), tradeoff_upper(x, g_lo, d_lo)
        conf = curves.get("confidence", result.confidence)
        ax.fill_between(
            x, mc_low, mc_up, color="C1", alpha=0.3, lw=0, label=f"Monte Carlo band ({conf:g})"
        )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("type I error")
    ax.set_ylabel("type II error")
    ax.set_title(f"Trade-off curve: {result.verdict}")
    ax.legend(fontsize=7)
    return ax.figure


def renyi_figure(result, ax=None):
    """The Rényi profile of a zCDP / RDP audit: claimed bound, exact, certified lower bounds.

    Args:
        result: a white-box :class:`~dpaudit.AuditResult` of a notion claim.
        ax: matplotlib axes to draw on, or ``None`` for a new figure.

    Returns:
        The matplotlib figure of the axes, or ``None``.
    """
    notion = _notion(result)
    if notion is None or notion["notion"] not in ("zcdp", "rdp"):
        return None
    profile = notion["profile"]
    orders = _array(profile["orders"])
    ax = _new_axes(ax)
    ax.plot(orders, _array(profile["claimed"]), "k--", marker="o", ms=3, label="claimed")
    low, up = _array(profile["exact_lower"]), _array(profile["exact_upper"])
    if up is not None:
        ax.plot(orders, up, color="C0", marker="s", ms=3, lw=1.4, label="exact (upper)")
        if low is not None and np.any(low != up):
            ax.plot(orders, low, color="C0", ls=":", lw=1, label="exact (lower)")
    mc = _array(profile["monte_carlo_lower"])
    if np.any(mc > 0):  # absent while the Monte Carlo Renyi bound is off (evaluation.py)
        ax.plot(
            orders,
            mc,
            color="C1",
            marker="^",
            ms=3,
            lw=1,
            label=f"Monte Carlo lower bound ({notion['confidence']:g})",
        )
    ax.set_xscale("log")
    ax.set_xticks(orders, [f"{o:g}" for o in orders], fontsize=6)
    ax.minorticks_off()
    ax.set_xlabel("order alpha")
    ax.set_ylabel("D_alpha(P_D || P_D')")
    ax.set_title(f"Renyi profile: {result.verdict}")
    ax.legend(fontsize=7)
    return ax.figure


def notion_figures(result) -> list:
    """The notion figures of a result (none for an (epsilon, delta) claim).

    Args:
        result: an audit result.

    Returns:
        A list of matplotlib figures (the caller saves and closes them).
    """
    return [f for f in (tradeoff_figure(result), renyi_figure(result)) if f is not None]
