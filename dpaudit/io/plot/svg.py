"""A small drawing surface with the part of matplotlib's ``Axes`` API dpaudit's figures use,
written out as a compact inline SVG: the HTML report's figures cost milliseconds, not the
tenth of a second a matplotlib figure takes to lay out, draw and encode.

:class:`SvgAxes` records what the figure functions of :mod:`dpaudit.io.plot` draw (lines,
step histograms, bands, reference lines, markers, a sentence, labels, a legend) and
:meth:`SvgAxes.svg` writes it. Curves longer than the plot is wide are thinned per pixel
column to the first, lowest, highest and last point of the column, so every column shows
the exact range of the curve there: a bound is never drawn more optimistic than computed.
A band (``fill_between``) keeps the lowest lower and the highest upper edge per column
(never narrower). Non-finite values break a line, as in matplotlib; on a log axis values
at or below zero are left out, except a histogram's empty bins, drawn on the bottom edge.
"""

from __future__ import annotations

import html
import math

import numpy as np

__all__ = ["HEIGHT", "PLOT_LEFT", "PLOT_RIGHT", "WIDTH", "SvgAxes", "thin", "widest_band"]

#: The figure in pixels; the plot area leaves room for tick labels, title and axis labels.
WIDTH, HEIGHT = 416, 256
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 8, 20, 34
#: The plot area's left and right edges in pixels.
PLOT_LEFT, PLOT_RIGHT = _LEFT, WIDTH - _RIGHT
_TAB10 = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
          "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")  # fmt: skip
_NAMED = {"k": "#000000", "r": "#d62728", "b": "#1f77b4", "g": "#2ca02c", "w": "#ffffff"}
_DASHES = {"-": None, "--": "5,3", ":": "1.5,2", "-.": "5,2,1.5,2"}


def _colour(value, index: int) -> str:
    if value is None:
        return _TAB10[index % 10]
    value = str(value)
    if value.startswith("C") and value[1:].isdigit():
        return _TAB10[int(value[1:]) % 10]
    if value in _NAMED:
        return _NAMED[value]
    try:
        grey = round(255 * float(value))  # matplotlib's "0.7": a grey level
    except ValueError:
        return value  # "#b00020", "red", ...
    return f"#{grey:02x}{grey:02x}{grey:02x}"


def _parse_format(fmt: str | None) -> dict:
    """matplotlib's ``"k--"`` / ``"o"`` shorthand as colour, linestyle and marker."""
    if not fmt:
        return {}
    style = {}
    for dash in ("--", "-.", ":", "-"):
        if dash in fmt:
            style["ls"], fmt = dash, fmt.replace(dash, "", 1)
            break
    for char in fmt:
        if char in "os^.":
            style["marker"] = char
            style.setdefault("ls", "none")
        elif char in _NAMED:
            style["color"] = char
    return style


def _nice_step(span: float, count: int = 5) -> float:
    raw = span / count
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


def _label(value: float) -> str:
    return f"{value:.6g}" if value != 0 else "0"


class SvgAxes:
    """Records matplotlib-style drawing calls and writes them as one SVG figure.

    Only the calls dpaudit's figures make are supported: ``plot``, ``hist`` (step),
    ``fill_between``, ``axvline``, ``axhline``, ``text`` (in axes coordinates), scales,
    limits, ticks, title, labels and ``legend``.
    """

    transAxes = "axes"

    def __init__(self) -> None:
        self.figure = self  # tradeoff_figure / renyi_figure return the figure of their axes
        self._items: list[dict] = []
        self._texts: list[str] = []
        self._scale = {"x": "linear", "y": "linear"}
        self._limits: dict[str, tuple] = {}
        self._ticks: dict[str, tuple] = {}
        self._labels = {"title": "", "x": "", "y": ""}
        self._legend: list[dict] | None = None
        self._cycle = 0

    # ---------------------------------------------------------------- recording
    def _add(self, kind: str, style: dict, **data) -> dict:
        style = {**_parse_format(style.pop("fmt", None)), **style}
        colour = style.get("color", style.get("c"))
        if colour is None and kind in ("line", "step"):
            colour, self._cycle = f"C{self._cycle}", self._cycle + 1
        item = {"kind": kind, "colour": _colour(colour, 0), "label": style.get("label"),
                "ls": style.get("ls", style.get("linestyle", "-")), "lw": style.get("lw", 1.5),
                "alpha": style.get("alpha", 1.0), "marker": style.get("marker"),
                "ms": style.get("ms", 6), **data}  # fmt: skip
        self._items.append(item)
        return item

    def plot(self, x, y, fmt: str | None = None, **style):
        """A line (and markers), as ``Axes.plot(x, y, fmt, **style)``."""
        x, y = np.asarray(x, float).ravel(), np.asarray(y, float).ravel()
        return [self._add("line", {"fmt": fmt, **style}, x=x, y=y)]

    def hist(self, values, bins, density: bool = False, **style):
        """A step histogram, as ``Axes.hist(values, bins, histtype="step", ...)``."""
        style.pop("histtype", None)
        counts, edges = np.histogram(np.asarray(values, float), bins=bins, density=density)
        x, y = np.repeat(edges, 2), np.concatenate([[0.0], np.repeat(counts, 2), [0.0]])
        self._add("step", style, x=x, y=y.astype(float))
        return counts, edges, None

    def fill_between(self, x, y1, y2, **style):
        """A band between two curves, as ``Axes.fill_between``."""
        x = np.asarray(x, float).ravel()
        lo = np.broadcast_to(np.asarray(y1, float), x.shape)
        hi = np.broadcast_to(np.asarray(y2, float), x.shape)
        style.setdefault("alpha", 0.3)
        return self._add("band", style, x=x, y=lo, y2=hi)

    def axvline(self, x, **style):
        """A vertical line at ``x``."""
        return self._add("vline", style, x=np.array([float(x)]), y=np.array([]))

    def axhline(self, y, **style):
        """A horizontal line at ``y``."""
        return self._add("hline", style, x=np.array([]), y=np.array([float(y)]))

    def text(self, x, y, s, transform=None, **_style):
        """A sentence in the middle of the axes (only axes coordinates are supported)."""
        self._texts.append(str(s))

    def set_xscale(self, scale):
        """``"linear"`` or ``"log"``."""
        self._scale["x"] = scale

    def set_yscale(self, scale):
        """``"linear"`` or ``"log"``."""
        self._scale["y"] = scale

    def set_xlim(self, lo, hi):
        """Fixed x limits."""
        self._limits["x"] = (float(lo), float(hi))

    def set_ylim(self, lo, hi):
        """Fixed y limits."""
        self._limits["y"] = (float(lo), float(hi))

    def set_xticks(self, ticks, labels=None, **_style):
        """Fixed x ticks (and their labels)."""
        ticks = [float(t) for t in ticks]
        self._ticks["x"] = (ticks, labels or [_label(t) for t in ticks])

    def minorticks_off(self):
        """Nothing to do: no minor ticks are drawn."""

    def set_title(self, title, **_style):
        """The title."""
        self._labels["title"] = str(title)

    def set_xlabel(self, label, **_style):
        """The x label."""
        self._labels["x"] = str(label)

    def set_ylabel(self, label, **_style):
        """The y label."""
        self._labels["y"] = str(label)

    def get_legend_handles_labels(self):
        """The labelled items and their labels, in drawing order."""
        handles = [i for i in self._items if i["label"] and not str(i["label"]).startswith("_")]
        return handles, [str(h["label"]) for h in handles]

    def legend(self, handles=None, labels=None, **_style):
        """Show a legend of ``handles`` (default: every labelled item)."""
        if handles is None:
            handles, labels = self.get_legend_handles_labels()
        self._legend = [{**h, "label": label} for h, label in zip(handles, labels, strict=False)]

    # ------------------------------------------------------------------ drawing
    def _values(self, axis: str) -> np.ndarray:
        keys = ("x",) if axis == "x" else ("y", "y2")
        parts = [np.asarray(i[k], float).ravel() for i in self._items for k in keys if k in i]
        v = np.concatenate(parts) if parts else np.array([])
        v = v[np.isfinite(v)]
        return v[v > 0] if self._scale[axis] == "log" else v

    def _range(self, axis: str) -> tuple[float, float]:
        if axis in self._limits:
            return self._limits[axis]
        v, log = self._values(axis), self._scale[axis] == "log"
        if log:
            v = np.log10(v)
        lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 1.0)
        if hi - lo <= 1e-12 * max(abs(lo), abs(hi), 1.0):
            lo, hi = lo - 0.5, hi + 0.5
        pad = 0.05 * (hi - lo)
        lo, hi = lo - pad, hi + pad
        return (10**lo, 10**hi) if log else (lo, hi)

    def _mapper(self, axis: str, lo: float, hi: float):
        log = self._scale[axis] == "log"
        a, b = (math.log10(lo), math.log10(hi)) if log else (lo, hi)
        start, size = (
            (_LEFT, WIDTH - _LEFT - _RIGHT)
            if axis == "x"
            else (HEIGHT - _BOTTOM, -(HEIGHT - _TOP - _BOTTOM))
        )

        def to_pixels(values):
            v = np.asarray(values, float)
            if log:
                with np.errstate(divide="ignore", invalid="ignore"):
                    v = np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan)
            return start + (v - a) / (b - a) * size

        return to_pixels

    def _tick_values(self, axis: str, lo: float, hi: float) -> tuple[list, list]:
        if axis in self._ticks:
            ticks, labels = self._ticks[axis]
            return [t for t in ticks if lo <= t <= hi], [
                str(s) for t, s in zip(ticks, labels, strict=False) if lo <= t <= hi
            ]
        if self._scale[axis] == "log" and math.log10(hi) - math.log10(lo) >= 1:
            first, last = math.ceil(math.log10(lo)), math.floor(math.log10(hi))
            step = max(1, math.ceil((last - first + 1) / 6))
            powers = range(first, last + 1, step)
            return [10.0**p for p in powers], [f"1e{p}" for p in powers]
        step = _nice_step(hi - lo)
        ticks = [k * step for k in range(math.ceil(lo / step), math.floor(hi / step) + 1)]
        ticks = [t for t in ticks if t > 0] if self._scale[axis] == "log" else ticks
        return ticks, [_label(round(t, 12)) for t in ticks]

    def svg(self, alt: str = "") -> str:
        """The figure as an inline ``<svg>`` element.

        Args:
            alt: a text alternative (the ``<title>`` of the SVG); default the figure's title.

        Returns:
            The SVG markup, to be placed in an HTML page as it is.
        """
        x0, x1 = self._range("x")
        y0, y1 = self._range("y")
        fx, fy = self._mapper("x", x0, x1), self._mapper("y", y0, y1)
        esc = html.escape
        out = [f"<svg xmlns='http://www.w3.org/2000/svg' class='fig' width='{WIDTH}' "
               f"height='{HEIGHT}' viewBox='0 0 {WIDTH} {HEIGHT}' font-family='sans-serif' "
               f"font-size='9'><title>{esc(alt or self._labels['title'])}</title>",
               f"<rect width='{WIDTH}' height='{HEIGHT}' fill='#fff'/>"]  # fmt: skip
        out += self._axis_marks(x0, x1, y0, y1, fx, fy)
        w, h = WIDTH - _LEFT - _RIGHT, HEIGHT - _TOP - _BOTTOM
        out.append(f"<svg x='{_LEFT}' y='{_TOP}' width='{w}' height='{h}' "
                   f"viewBox='{_LEFT} {_TOP} {w} {h}'>")  # fmt: skip
        for item in self._items:
            out += _draw(item, fx, fy)
        out.append("</svg>")
        out.append(f"<rect x='{_LEFT}' y='{_TOP}' width='{w}' height='{h}' fill='none' "
                   "stroke='#333' stroke-width='0.8'/>")  # fmt: skip
        out += self._legend_marks() + self._text_marks()
        out.append("</svg>")
        return "".join(out)

    def _axis_marks(self, x0, x1, y0, y1, fx, fy) -> list[str]:
        esc, out = html.escape, []
        bottom = HEIGHT - _BOTTOM
        ticks, labels = self._tick_values("x", min(x0, x1), max(x0, x1))
        for t, s in zip(fx(ticks), labels, strict=True):
            out.append(f"<path d='M{t:.1f} {bottom}v3' stroke='#333'/><text x='{t:.1f}' "
                       f"y='{bottom + 12}' text-anchor='middle'>{esc(s)}</text>")  # fmt: skip
        ticks, labels = self._tick_values("y", min(y0, y1), max(y0, y1))
        for t, s in zip(fy(ticks), labels, strict=True):
            out.append(f"<path d='M{_LEFT} {t:.1f}h-3' stroke='#333'/><text x='{_LEFT - 5}' "
                       f"y='{t + 3:.1f}' text-anchor='end'>{esc(s)}</text>")  # fmt: skip
        mid_x, mid_y = (_LEFT + WIDTH - _RIGHT) / 2, (_TOP + HEIGHT - _BOTTOM) / 2
        out.append(f"<text x='{mid_x:.0f}' y='13' text-anchor='middle' font-size='10'>"
                   f"{esc(self._labels['title'])}</text><text x='{mid_x:.0f}' y='{HEIGHT - 6}' "
                   f"text-anchor='middle' font-size='10'>{esc(self._labels['x'])}</text>"
                   f"<text transform='translate(11 {mid_y:.0f}) rotate(-90)' "
                   f"text-anchor='middle' font-size='10'>{esc(self._labels['y'])}</text>")  # fmt: skip
        return out

    def _legend_marks(self) -> list[str]:
        if not self._legend:
            return []
        width = 26 + 4.6 * max(len(e["label"]) for e in self._legend)
        left, top = WIDTH - _RIGHT - width - 4, _TOP + 4
        out = [f"<rect x='{left:.0f}' y='{top}' width='{width:.0f}' "
               f"height='{11 * len(self._legend) + 4}' fill='#fff' fill-opacity='0.8'/>"]  # fmt: skip
        for k, entry in enumerate(self._legend):
            y = top + 8 + 11 * k
            out.append(f"{_sample(entry, left + 3, y)}<text x='{left + 22:.0f}' y='{y + 3}' "
                       f"font-size='8'>{html.escape(entry['label'])}</text>")  # fmt: skip
        return out

    def _text_marks(self) -> list[str]:
        out = []
        for text in self._texts:
            lines = text.split("\n")
            width = 12 + 5 * max(len(line) for line in lines)
            top = (HEIGHT - 12 * len(lines)) / 2 - 4
            out.append(f"<rect x='{(WIDTH - width) / 2:.0f}' y='{top:.0f}' width='{width}' "
                       f"height='{12 * len(lines) + 6}' rx='4' fill='#fff' stroke='#999'/>")  # fmt: skip
            out += [f"<text x='{WIDTH / 2:.0f}' y='{top + 12 * (k + 1):.0f}' "
                    f"text-anchor='middle'>{html.escape(line)}</text>"
                    for k, line in enumerate(lines)]  # fmt: skip
        return out


def _stroke(item: dict) -> str:
    dash = _DASHES.get(item["ls"])
    if item["ls"] in ("none", "None", "", " "):
        return "stroke='none' fill='none'"
    attrs = f"stroke='{item['colour']}' stroke-width='{item['lw']:g}' fill='none'"
    if dash:
        attrs += f" stroke-dasharray='{dash}'"
    if item["alpha"] < 1:
        attrs += f" stroke-opacity='{item['alpha']:g}'"
    return attrs


def _sample(entry: dict, x: float, y: float) -> str:
    """A legend entry's sample: a filled box for a band, a dot for markers alone, else a line."""
    if entry["kind"] == "band":
        return (f"<rect x='{x:.0f}' y='{y - 4}' width='16' height='8' fill='{entry['colour']}' "
                f"fill-opacity='{entry['alpha']:g}'/>")  # fmt: skip
    if entry["ls"] in ("none", "None", "", " "):
        return f"<circle cx='{x + 8:.0f}' cy='{y}' r='3' fill='{entry['colour']}'/>"
    return f"<path d='M{x:.0f} {y}h16' {_stroke(entry)}/>"


def _runs(*arrays) -> list[np.ndarray]:
    """Index runs where every array is finite (a non-finite value breaks a line)."""
    ok = np.logical_and.reduce([np.isfinite(a) for a in arrays])
    edges = np.flatnonzero(np.diff(np.r_[0, ok.astype(int), 0]))
    return [np.arange(a, b) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def thin(px: np.ndarray, py: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A curve in pixels thinned to the first, lowest, highest and last point of each column.

    Short curves (at most two points per column of the figure) and curves whose x
    decreases somewhere are returned as they are.

    Args:
        px: x in pixels.
        py: y in pixels, the same length.

    Returns:
        ``(px, py)`` of the points kept, in their order.
    """
    n = px.size
    if n <= 2 * WIDTH or np.any(np.diff(px) < 0):
        return px, py
    col = np.floor(px).astype(int)
    starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
    ends = np.r_[starts[1:], n] - 1
    order = np.lexsort((py, col))  # by column, then height: a column's run in place
    keep = np.unique(np.concatenate([starts, ends, order[starts], order[ends]]))
    return px[keep], py[keep]


def _path(px, py) -> str:
    return "M" + "L".join(f"{x:.1f} {y:.1f}" for x, y in zip(px, py, strict=True))


def _draw(item: dict, fx, fy) -> list[str]:
    """The SVG of one recorded item, in pixel coordinates."""
    kind = item["kind"]
    if kind == "vline":
        x = float(fx(item["x"])[0])
        return [] if not math.isfinite(x) else [f"<path d='M{x:.1f} 0V{HEIGHT}' {_stroke(item)}/>"]
    if kind == "hline":
        y = float(fy(item["y"])[0])
        return [] if not math.isfinite(y) else [f"<path d='M0 {y:.1f}H{WIDTH}' {_stroke(item)}/>"]
    px = fx(item["x"])
    if kind == "band":
        return _band(item, px, fy)
    py = fy(item["y"])
    if kind == "step":  # empty bins of a log histogram on the bottom edge
        py = np.where(np.isnan(py) & np.isfinite(item["y"]), HEIGHT - _BOTTOM + 1, py)
    out = []
    for run in _runs(px, py):
        tx, ty = thin(px[run], py[run])
        if item["ls"] not in ("none", "None", "", " ") and run.size > 1:
            out.append(f"<path d='{_path(tx, ty)}' {_stroke(item)}/>")
        if item["marker"] and run.size <= 60:
            r = max(1.0, 0.45 * item["ms"])
            out += [f"<circle cx='{x:.1f}' cy='{y:.1f}' r='{r:g}' fill='{item['colour']}'/>"
                    for x, y in zip(tx, ty, strict=True)]  # fmt: skip
    return out


def widest_band(px, lo, hi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A band in pixels (y grows downwards) thinned to its widest extent in each column.

    Short bands and bands whose x decreases somewhere are returned as they are.

    Args:
        px: x in pixels.
        lo: the lower edge in pixels (the larger pixel y).
        hi: the upper edge in pixels.

    Returns:
        ``(x, lo, hi)``: per column its first x, the lowest lower and highest upper edge.
    """
    if px.size <= 2 * WIDTH or np.any(np.diff(px) < 0):
        return px, lo, hi
    starts = np.flatnonzero(np.r_[True, np.diff(np.floor(px)) != 0])
    return px[starts], np.maximum.reduceat(lo, starts), np.minimum.reduceat(hi, starts)


def _band(item: dict, px, fy) -> list[str]:
    """A filled band; per pixel column the widest extent when the band is thinned."""
    lo, hi = fy(item["y"]), fy(item["y2"])
    lo = np.where(np.isnan(lo) & np.isfinite(item["y"]), HEIGHT - _BOTTOM + 1, lo)
    out = []
    for run in _runs(px, lo, hi):
        x, a, b = widest_band(px[run], lo[run], hi[run])
        d = _path(np.r_[x, x[::-1]], np.r_[b, a[::-1]]) + "Z"
        out.append(f"<path d='{d}' fill='{item['colour']}' fill-opacity='{item['alpha']:g}' "
                   "stroke='none'/>")  # fmt: skip
    return out
