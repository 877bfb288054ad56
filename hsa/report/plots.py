"""Plots for ``hsa report`` as inline SVG: histograms and bar charts with axes, ticks, units and labels.

Hand-written rather than drawn with matplotlib: the page must hold its plots as text (no image
files, no network), scale with the window, and take its colours from the page's stylesheet so
that they read in light and dark mode (CSS classes, not fixed colours). Each mark carries a
``<title>`` with its exact numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["nice_ticks", "histogram", "bars", "Bar"]


def nice_ticks(hi: float, count: int = 5) -> list[float]:
    """Ticks from 0 to at least ``hi`` in steps of 1, 2, 2.5 or 5 times a power of ten (about ``count`` of them)."""
    if hi <= 0:
        return [0, 1]
    raw = hi / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    n = math.ceil(hi / step - 1e-9)
    return [round(i * step, 10) for i in range(n + 1)]


def _fmt(v: float) -> str:
    if v == int(v):
        v = int(v)
        return f"{v / 1_000_000:g}M" if abs(v) >= 1_000_000 else f"{v / 1000:g}k" if abs(v) >= 10_000 else str(v)
    return f"{v:g}"


def _bins(freq: Mapping[int, int], max_bins: int) -> tuple[list[float], list[int], bool]:
    """``(edges, counts, integer)`` of values given as ``{value: how many}``: one bin per value when the values are
    few whole numbers, else equal bins of a round width."""
    lo, hi = min(freq), max(freq)
    if hi - lo + 1 < 5:  # a few values: widen to five bins around them, so that a bar is not the whole plot
        lo = max(lo - (5 - (hi - lo + 1)) // 2, min(lo, 0))
        hi = lo + 4
    if hi - lo + 1 <= max_bins:
        edges = [lo - 0.5 + i for i in range(hi - lo + 2)]
        counts = [0] * (hi - lo + 1)
        for v, n in freq.items():
            counts[v - lo] += n
        return edges, counts, True
    raw = (hi - lo) / max_bins
    power = 10 ** math.floor(math.log10(raw))
    width = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    start = math.floor(lo / width) * width
    n = int(math.floor((hi - start) / width)) + 1
    counts = [0] * n
    for v, k in freq.items():
        counts[min(int((v - start) // width), n - 1)] += k
    return [start + i * width for i in range(n + 1)], counts, False


def histogram(values: Sequence[int] | Mapping[int, int], *, title: str, xlabel: str, ylabel: str,
              max_bins: int = 40, width: int = 560, height: int = 260) -> str:
    """An SVG histogram of whole numbers (a sequence, or ``{value: how many}``) with both axes ticked and labelled."""
    freq = {int(k): int(n) for k, n in values.items()} if isinstance(values, Mapping) else Counter(values)
    freq = {k: n for k, n in freq.items() if n}
    if not freq:
        return f'<figure class="plot"><figcaption>{escape(title)}</figcaption><p class="muted">no data</p></figure>'
    edges, counts, integer = _bins(freq, max_bins)
    left, right, top, bottom = 56, 24, 12, 44
    pw, ph = width - left - right, height - top - bottom
    yt = nice_ticks(max(counts))
    ymax = yt[-1]
    x0, x1 = edges[0], edges[-1]

    def x(v: float) -> float:
        return left + (v - x0) / (x1 - x0) * pw

    def y(v: float) -> float:
        return top + ph - v / ymax * ph

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">']
    for t in yt:
        parts.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{y(t):.1f}" y2="{y(t):.1f}"/>'
                     f'<text class="tick" x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    for i, c in enumerate(counts):
        a, b = edges[i], edges[i + 1]
        label = f"{int(a + 0.5)}" if integer else f"{_fmt(a)}–{_fmt(b)}"
        if c:
            parts.append(f'<rect class="bar" x="{x(a) + 0.5:.1f}" y="{y(c):.1f}" width="{max(x(b) - x(a) - 1, 1):.1f}" '
                         f'height="{y(0) - y(c):.1f}"><title>{escape(label)}: {c}</title></rect>')
    if integer:
        step = max(1, math.ceil(len(counts) / 12))
        xt = [(edges[i] + 0.5, f"{int(edges[i] + 0.5)}") for i in range(0, len(counts), step)]
    else:
        every = max(1, math.ceil((len(edges) - 1) / 8))
        xt = [(edges[i], _fmt(edges[i])) for i in range(0, len(edges), every)]
    for v, label in xt:
        parts.append(f'<line class="axis" x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top + ph}" y2="{top + ph + 4}"/>'
                     f'<text class="tick" x="{x(v):.1f}" y="{top + ph + 16}" text-anchor="middle">{escape(label)}</text>')
    parts.append(f'<line class="axis" x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}"/>'
                 f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{top + ph}"/>'
                 f'<text class="label" x="{left + pw / 2}" y="{height - 6}" text-anchor="middle">{escape(xlabel)}</text>'
                 f'<text class="label" transform="translate(14 {top + ph / 2}) rotate(-90)" text-anchor="middle">'
                 f'{escape(ylabel)}</text></svg>')
    return f'<figure class="plot"><figcaption>{escape(title)}</figcaption>{"".join(parts)}</figure>'


class Bar:
    """One bar of :func:`bars`: a label, one value per series (``None``: not applicable) and optional intervals."""

    def __init__(self, label: str, values: Sequence[float | None], intervals: Sequence | None = None,
                 counts: Sequence[int | None] | None = None):
        self.label = label
        self.values = list(values)
        self.intervals = list(intervals) if intervals is not None else [None] * len(self.values)
        self.counts = list(counts) if counts is not None else [None] * len(self.values)


def bars(items: Sequence[Bar], *, title: str, xlabel: str, series: Sequence[str] = ("",), xmax: float | None = None,
         width: int = 640, unit: str = "") -> str:
    """Horizontal bars, one row per item and one bar per series in it, with whiskers for the intervals
    (``[lo, hi]`` in the values' unit), a ticked value axis and a legend when there is more than one series.
    Items without any value are left out, and a chart without one is the empty string."""
    items = [b for b in items if any(v is not None for v in b.values)]
    if not items:
        return ""
    k = len(series)
    bar_h = 14 if k == 1 else 10
    row_h = bar_h * k + 8
    label_w = min(240, 12 + 7 * max(len(b.label) for b in items))
    left, right, top = label_w, 16, 8
    legend_h = 18 if k > 1 else 0
    bottom = 40 + legend_h
    pw = width - left - right
    height = top + row_h * len(items) + bottom
    top_value = max([v for b in items for v in b.values if v is not None] +
                    [iv[1] for b in items for iv in b.intervals if iv] + [0])
    ticks = nice_ticks(xmax if xmax is not None else top_value)
    vmax = ticks[-1]

    def x(v: float) -> float:
        return left + max(0.0, min(v, vmax)) / vmax * pw

    parts = [f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">']
    base = top + row_h * len(items)
    for t in ticks:
        parts.append(f'<line class="grid" x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top}" y2="{base}"/>'
                     f'<text class="tick" x="{x(t):.1f}" y="{base + 16}" text-anchor="middle">{_fmt(t)}</text>')
    for r, b in enumerate(items):
        y0 = top + r * row_h + 4
        parts.append(f'<text class="tick" x="{left - 6}" y="{y0 + bar_h * k / 2 + 4:.1f}" text-anchor="end">'
                     f'{escape(b.label if len(b.label) <= 34 else b.label[:33] + "…")}<title>{escape(b.label)}</title></text>')
        for s, (v, iv, n) in enumerate(zip(b.values, b.intervals, b.counts)):
            y = y0 + s * bar_h
            if v is None:
                continue
            tip = f"{b.label}{' — ' + series[s] if series[s] else ''}: {v:.1f}{unit}" + \
                  (f", 95% interval {iv[0]:.1f}–{iv[1]:.1f}{unit}" if iv else "") + (f", n = {n}" if n is not None else "")
            parts.append(f'<rect class="bar s{s % 6}" x="{left}" y="{y:.1f}" width="{max(x(v) - left, 0.5):.1f}" '
                         f'height="{bar_h - 2}"><title>{escape(tip)}</title></rect>')
            if iv:
                mid = y + (bar_h - 2) / 2
                parts.append(f'<path class="whisker" d="M{x(iv[0]):.1f} {mid:.1f}H{x(iv[1]):.1f}M{x(iv[0]):.1f} '
                             f'{mid - 3:.1f}v6M{x(iv[1]):.1f} {mid - 3:.1f}v6"/>')
    parts.append(f'<line class="axis" x1="{left}" x2="{left + pw}" y1="{base}" y2="{base}"/>'
                 f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{base}"/>'
                 f'<text class="label" x="{left + pw / 2}" y="{base + 34}" text-anchor="middle">{escape(xlabel)}</text>')
    if k > 1:
        lx = left
        for s, name in enumerate(series):
            parts.append(f'<rect class="bar s{s % 6}" x="{lx}" y="{height - 14}" width="10" height="10"/>'
                         f'<text class="tick" x="{lx + 14}" y="{height - 5}">{escape(name)}</text>')
            lx += 24 + 7 * len(name)
    parts.append("</svg>")
    return f'<figure class="plot"><figcaption>{escape(title)}</figcaption>{"".join(parts)}</figure>'
