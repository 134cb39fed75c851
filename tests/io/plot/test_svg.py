"""The report's inline SVG figures (dpaudit.io.plot.svg): a long curve is thinned to what the
pixels show without moving its envelope, a band is never drawn narrower, and a figure's size
does not grow with the length of its curves."""

import re

import numpy as np

from dpaudit.io.plot.svg import PLOT_LEFT, PLOT_RIGHT, WIDTH, SvgAxes, thin, widest_band


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
    px = PLOT_LEFT + x * (PLOT_RIGHT - PLOT_LEFT)
    tx, ty = thin(px, y)
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
    px = PLOT_LEFT + x * (PLOT_RIGHT - PLOT_LEFT)
    centre = 100 + 50 * np.sin(30 * x)
    lo, hi = centre + 10, centre - 10  # pixels: the lower edge has the larger y
    bx, blo, bhi = widest_band(px, lo, hi)
    assert bx.size <= WIDTH
    col, bcol = np.floor(px).astype(int), np.floor(bx).astype(int)
    for k, c in enumerate(bcol):
        assert blo[k] == lo[col == c].max() and bhi[k] == hi[col == c].min()


def test_log_axes_leave_out_non_positive_values_and_keep_empty_bins_on_the_floor():
    ax = SvgAxes()
    ax.hist(np.r_[np.zeros(10), np.full(10, 5.0)], bins=np.linspace(0, 5, 6))
    ax.plot([1.0, 2.0, 3.0], [1e-3, 0.0, 1e-1])
    ax.set_yscale("log")
    markup = ax.svg()
    step, *lines = _paths(markup)
    assert np.isfinite(step).all() and step.shape[1] == 12  # empty bins drawn on the bottom
    assert not lines  # the line's zero splits it into single points: nothing to join
