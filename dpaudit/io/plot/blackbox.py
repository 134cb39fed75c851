"""Figures of a black-box :class:`dpaudit.BlackBoxResult` (see :mod:`dpaudit.io.plot`)."""

from __future__ import annotations

import math

import numpy as np

from dpaudit.io.plot.style import axes, bin_edges, finish

__all__ = ["certification_scores", "datasets_of"]


def datasets_of(direction: str) -> tuple[str, str]:
    """Which dataset's releases are P (numerator) and Q for a certified direction.

    Args:
        direction: ``"D->D'"`` or ``"D'->D"``.

    Returns:
        ``("D", "D'")`` or ``("D'", "D")``.
    """
    return ("D", "D'") if direction == "D->D'" else ("D'", "D")


def certification_scores(result, ax=None):
    """Histograms of the certification statistic under P and Q, the event's threshold marked.

    Infinite scores are counted in the legend, not drawn.

    Args:
        result: a :class:`dpaudit.BlackBoxResult`.
        ax: matplotlib axes, or ``None`` for a new figure.

    Returns:
        The axes, or ``None`` when no score is finite.
    """
    scores = result.certification_scores
    full = {k: np.asarray(v, dtype=float).ravel() for k, v in scores.to_dict().items()}
    finite = {k: v[np.isfinite(v)] for k, v in full.items()}
    if not any(v.size for v in finite.values()):
        return None
    threshold = float(result.event.threshold)
    pooled = np.concatenate([*finite.values(), [threshold] if math.isfinite(threshold) else []])
    edges = bin_edges(pooled)
    names = dict(zip(("P", "Q"), datasets_of(result.event.direction), strict=True))
    ax = axes(ax)
    for key in ("P", "Q"):
        n_inf = full[key].size - finite[key].size
        label = f"{key}: releases of {names[key]}" + (f" (+{n_inf} infinite)" if n_inf else "")
        ax.hist(finite[key], bins=edges, histtype="step", lw=1.4, label=label)
    if math.isfinite(threshold):
        ax.axvline(threshold, color="k", ls="--", lw=1, label=f"threshold t = {threshold:.4g}")
    ax.set_yscale("log")
    ylabel = f"count (of {full['P'].size} shown)"
    return finish(ax, "Certified event S = {s > t}", "certification statistic s(x)", ylabel)
