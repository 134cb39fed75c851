"""The report's inline SVG figures (dpaudit.io.plot.svg): a long curve is thinned to what the
pixels show without moving its envelope, a band is never drawn narrower, and a figure's size
does not grow with the length of its curves."""

import re

import numpy as np

from dpaudit.io.plot import svg as svg_module
from dpaudit.io.plot.svg import WIDTH, SvgAxes


def _paths(markup):
    """Each ``<path d=...>`` of the plot area as (x, y) pixel arrays (ticks are single moves)."""
    out = []
    for d in re.findall(r"<path d='(M[^']*)'", markup):
        points = re.findall(r"(-?\d+\.?\d*) (-?\d+\.?\d*)", d)
        if len(points) > 2:
            out.append(np.array(points, dtype=float).T)
    return out


def test_a_long_curve_keeps_its_envelope_in_every_pixel_column():
    rng = np.random.default_rng(0)
    x = np.linspace(0.0, 1.0, 100_000)
    y = np.cumsum(rng.normal(size=x.size))
    px = svg_module._LEFT + x * (WIDTH - svg_module._LEFT - svg_module._RIGHT)
    tx, ty = svg_module._thin(px, y)
    assert tx.size <= 4 * WIDTH  # at most first, lowest, highest, last per column
    col, tcol = np.floor(px).astype(int), np.floor(tx).astype(int)
    for c in np.unique(col):  # the exact range of the curve in every column
        assert y[col == c].max() == ty[tcol == c].max()
        assert y[col == c].min() == ty[tcol == c].min()


def test_a_figure_of_long_curves_stays_small_and_breaks_at_nan():
    ax = SvgAxes()
    x = np.linspace(0.0, 1.0, 200_000)
    y = np.sin(40 * x)
    y[100_000] = np.nan  # a non-finite value breaks the line, as in matplotlib
    ax.plot(x, y, label="curve")
    ax.fill_between(x, y - 0.1, y + 0.1, color="C1", alpha=0.3)
    ax.set_title("long")
    markup = ax.svg()
    assert len(markup) < 60_000  # bytes bounded by the pixels, not by the 200 000 points
    assert len(_paths(markup)) == 2 + 2  # the line in two runs, the band in two polygons


def test_a_thinned_band_is_never_narrower():
    x = np.linspace(0.0, 1.0, 50_000)
    lo, hi = np.sin(30 * x) - 0.2, np.sin(30 * x) + 0.2
    ax = SvgAxes()
    ax.fill_between(x, lo, hi)
    px = ax._mapper("x", *ax._range("x"))(x)
    fy = ax._mapper("y", *ax._range("y"))
    (band,) = svg_module._band(ax._items[0], px, fy)
    ((bx, by),) = _paths(band)
    half = bx.size // 2
    top, bottom = by[:half], by[half:][::-1]  # the upper edge, then the lower one back
    col = np.floor(px).astype(int)
    for k, c in enumerate(np.floor(bx[:half]).astype(int)):
        assert top[k] <= fy(hi[col == c]).min() + 0.051  # pixel y grows downwards; 0.1 px print
        assert bottom[k] >= fy(lo[col == c]).max() - 0.051


def test_log_axes_leave_out_non_positive_values_and_keep_empty_bins_on_the_floor():
    ax = SvgAxes()
    ax.hist(np.r_[np.zeros(10), np.full(10, 5.0)], bins=np.linspace(0, 5, 6))
    ax.plot([1.0, 2.0, 3.0], [1e-3, 0.0, 1e-1])
    ax.set_yscale("log")
    markup = ax.svg()
    step, *lines = _paths(markup)
    assert np.isfinite(step).all() and step.shape[1] == 12  # empty bins drawn on the bottom
    assert not lines  # the line's zero splits it into single points: nothing to join
