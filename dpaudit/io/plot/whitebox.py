"""Figures of a white-box :class:`dpaudit.AuditResult` (see :mod:`dpaudit.io.plot`)."""

from __future__ import annotations

import math

import numpy as np

from dpaudit.io.plot.style import CLAIM_COLOUR, axes, bin_edges, finish, finite, say

__all__ = ["compatibility_sums", "loss_distribution", "privacy_profile", "releases"]

#: delta values at or below this are Monte Carlo zeros; a log axis cannot show 0.
DELTA_FLOOR = 1e-12
_DIRECTIONS = ("D->D'", "D'->D")


def loss_distribution(result, ax=None):
    """Histogram of the privacy loss ``L(x)`` in both directions, ``±epsilon`` of the claim marked.

    Args:
        result: a :class:`dpaudit.AuditResult`.
        ax: matplotlib axes, or ``None`` for a new figure.

    Returns:
        The axes, or ``None`` when the result kept no losses.
    """
    series = [(d.direction, finite(d.losses), int(d.n_infinite)) for d in result.directions]
    if not any(s[1].size or s[2] for s in series):
        return None
    ax = axes(ax)
    for name, losses, n_inf in series:
        if losses.size:
            label = name + (f" (+{n_inf} infinite)" if n_inf else "")
            ax.hist(
                losses, bins=bin_edges(losses), density=True, histtype="step", lw=1.4, label=label
            )
    epsilon = result.claim.epsilon
    ax.axvline(epsilon, color=CLAIM_COLOUR, ls="--", lw=1, label=f"claimed ε = ±{epsilon:g}")
    ax.axvline(-epsilon, color=CLAIM_COLOUR, ls="--", lw=1)
    if not any(s[1].size for s in series):
        total = sum(s[2] for s in series)
        say(ax, f"all {total} losses are infinite:\nthe releases under D and D' can be told\n"
                "apart with certainty (ε = ∞)")  # fmt: skip
    return finish(ax, "Privacy-loss distribution", "privacy loss L(x)", "density")


def _curve(values) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    return np.where(v > DELTA_FLOOR, v, np.nan)


def _draw_claim(ax, claim) -> None:
    """A pure claim is the vertical line epsilon = claim; an (epsilon, delta) claim a point."""
    if claim.delta == 0:
        ax.axvline(claim.epsilon, color=CLAIM_COLOUR, ls="--", lw=1.2,
                   label=f"claim ε = {claim.epsilon:g} (δ = 0)")  # fmt: skip
        return
    ax.plot([claim.epsilon], [claim.delta], marker="o", ms=7, color=CLAIM_COLOUR, ls="none",
            label=f"claim ({claim.epsilon:g}, {claim.delta:g})")  # fmt: skip
    ax.axhline(claim.delta, color=CLAIM_COLOUR, ls=":", lw=0.8)


def _infinite_note(result) -> str | None:
    estimate = result.epsilon_at_claimed_delta.get("estimate")
    if estimate is not None and math.isinf(float(estimate)):
        return (
            f"ε at the claimed δ = {result.claim.delta:g} is infinite:\n"
            "δ(ε) stays above it for every ε"
        )
    return None


def privacy_profile(result, ax=None):
    """``delta(epsilon)`` of the mechanism on the audited pair, against the claim.

    The Monte Carlo estimate of each direction is a line inside its confidence
    band; the exact curve (when the noise allows exact accounting) is black. The
    claim holds on this pair when the curves pass below its point; a pure claim
    is the vertical line ``epsilon = claim``, beyond which ``delta`` must be 0.

    Args:
        result: a :class:`dpaudit.AuditResult`.
        ax: matplotlib axes, or ``None`` for a new figure.

    Returns:
        The axes, or ``None`` when the result has no curves.
    """
    curves = result.curves
    eps = np.asarray(curves.get("epsilons", []), dtype=float)
    if eps.size == 0:
        return None
    ax = axes(ax)
    confidence = curves.get("confidence", result.confidence)
    drawn = False
    for i, name in enumerate(_DIRECTIONS):
        c = curves.get(name)
        if c is None:
            continue
        lower, upper = _curve(c["lower"]), _curve(c["upper"])
        ax.fill_between(eps, np.nan_to_num(lower, nan=DELTA_FLOOR), upper, color=f"C{i}",
                        alpha=0.15, lw=0)  # fmt: skip
        estimate = _curve(c["estimate"])
        ax.plot(eps, estimate, color=f"C{i}", lw=1.3, label=f"{name} ({confidence:.0%} band)")
        drawn |= bool(np.isfinite(estimate).any() or np.isfinite(upper).any())
    if curves.get("exact_upper") is not None:
        exact = _curve(curves["exact_upper"])
        ax.plot(eps, exact, color="k", lw=1.1, label="exact")
        drawn |= bool(np.isfinite(exact).any())
    _draw_claim(ax, result.claim)
    ax.set_yscale("log")
    note = _infinite_note(result)
    if note is not None:
        say(ax, note)
    elif not drawn:
        say(ax, f"δ(ε) ≤ {DELTA_FLOOR:g} over the whole ε range shown")
    return finish(ax, "δ(ε) on the audited pair", "ε", "δ(ε)")


def compatibility_sums(result, ax=None):
    """Partial sums of the Cameron–Martin and 1,C norms of ``f_D - f_D'`` against the truncation K.

    Sums that level off mean the difference is compatible with the noise; sums
    that keep growing mean it is not (the releases become mutually singular, or
    the ICLP's pure-epsilon bound fails).

    Args:
        result: a :class:`dpaudit.AuditResult` (or a
            :class:`~dpaudit.Compatibility` itself).
        ax: matplotlib axes, or ``None`` for a new figure.

    Returns:
        The axes, or ``None`` without a compatibility check.
    """
    comp = getattr(result, "compatibility", result)
    if comp is None:
        return None
    ax = axes(ax)
    positive = []
    for evidence, label in ((comp.cameron_martin, "Cameron–Martin ‖h‖²_C"),
                            (comp.one_c, "1,C norm ‖h‖_{1,C}")):  # fmt: skip
        sums = np.asarray(evidence.partial_sums, dtype=float)
        if sums.size:
            ax.plot(np.arange(1, sums.size + 1), sums, marker="." if sums.size <= 30 else None,
                    label=label)  # fmt: skip
            positive += list(sums[sums > 0])
    k = max(np.asarray(comp.cameron_martin.partial_sums).size, 1)
    if k > 30:  # a handful of components reads better on a linear axis
        ax.set_xscale("log")
    if positive and max(positive) / min(positive) > 1e3:
        ax.set_yscale("log")
    return finish(ax, f"Compatibility: {comp.classification}", "K (components)", "partial sum")


def releases(mechanism, data, ax=None, n: int = 3, seed: int = 0):
    """A few releases of ``mechanism`` on ``data`` against its non-private summary ``f_D``.

    Args:
        mechanism: a :class:`dpaudit.Mechanism` with a ``summary``.
        data: the dataset ``D``.
        ax: matplotlib axes, or ``None`` for a new figure.
        n: the number of releases drawn.
        seed: the random seed of the releases.

    Returns:
        The axes, or ``None`` when the mechanism has no summary, its release is
        a single number, or drawing fails.
    """
    if mechanism is None or data is None or mechanism.summary is None:
        return None
    import jax

    try:
        summary = np.asarray(mechanism.summary(data), dtype=float).ravel()
        draws = np.asarray(mechanism.sample(data, jax.random.key(seed), n), dtype=float)
    except Exception:  # a figure is a courtesy; the audit itself already ran
        return None
    draws = draws.reshape(n, -1)
    if draws.shape[1] != summary.size or summary.size < 2:
        return None
    grid = getattr(getattr(mechanism.release_distribution(data), "basis", None), "grid", None)
    x, xlabel = np.arange(summary.size), "coordinate"
    if grid is not None and grid.dim == 1:
        x, xlabel = np.asarray(grid.points)[:, 0], "t"
    ax = axes(ax)
    for i in range(n):
        ax.plot(x, draws[i], lw=0.8, alpha=0.8, color="C0", label="releases" if i == 0 else None)
    ax.plot(x, summary, color="k", lw=1.6, label="non-private summary f_D")
    return finish(ax, "Releases against the summary", xlabel)
