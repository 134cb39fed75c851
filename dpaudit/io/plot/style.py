"""Shared look of dpaudit's figures: figure size, legends, a sentence in place of a curve."""

from __future__ import annotations

import numpy as np

__all__ = ["CLAIM_COLOUR", "axes", "bin_edges", "finish", "finite", "say"]

#: The claim is drawn in one colour everywhere (red, dashed), the mechanism in C0/C1.
CLAIM_COLOUR = "#b00020"


def axes(ax=None):
    """``ax``, or the axes of a new figure of the report's size (5.2 x 3.2 inches).

    Args:
        ax: a matplotlib ``Axes`` or ``None``.

    Returns:
        The axes to draw on.
    """
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=(5.2, 3.2))
    return ax


def finish(ax, title: str, xlabel: str, ylabel: str | None = None):
    """Title, axis labels and a small legend (only when something is labelled).

    Args:
        ax: the axes.
        title: the title.
        xlabel: the x label.
        ylabel: the y label, or ``None``.

    Returns:
        ``ax``.
    """
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    handles, labels = ax.get_legend_handles_labels()
    if labels:
        ax.legend(handles[:4], labels[:4], fontsize=7, frameon=False)
    return ax


def say(ax, text: str) -> None:
    """Write ``text`` in the middle of the axes (what a missing curve means).

    Args:
        ax: the axes.
        text: a short sentence.
    """
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=9,
            wrap=True, bbox={"facecolor": "white", "edgecolor": "#999", "boxstyle": "round"})  # fmt: skip


def finite(values) -> np.ndarray:
    """The finite entries of ``values``, flattened, as floats.

    Args:
        values: an array-like.

    Returns:
        A 1-d float array.
    """
    a = np.asarray(values, dtype=float).ravel()
    return a[np.isfinite(a)]


def bin_edges(values, bins: int = 80) -> np.ndarray:
    """Up to ``bins`` histogram bins over ``values``, never finer than the floats can tell apart.

    ``np.histogram_bin_edges`` refuses a range narrower than ``bins`` float spacings (scores
    near 1e16, or all but equal); such data get fewer bins, or one bin around a single value.

    Args:
        values: finite values (at least one).
        bins: the most bins wanted.

    Returns:
        Increasing bin edges.
    """
    values = np.asarray(values, dtype=float)
    lo, hi = float(np.min(values)), float(np.max(values))
    edges = np.unique(np.linspace(lo, hi, bins + 1))
    if edges.size < 2 or not np.all(np.diff(edges) > 4 * np.spacing(max(abs(lo), abs(hi), 1.0))):
        half = max(0.5, abs(lo) * 1e-9)
        return np.array([lo - half, hi + half]) if hi - lo < 2 * half else np.array([lo, hi])
    return edges
