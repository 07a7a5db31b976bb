"""Plain SVG line charts for the watch's page: no plotting library, no script, self-contained.

:func:`line_chart` draws named series over optimizer steps, on a linear or log y axis (chosen
by the data's range, or forced), with vertical markers at the steps of findings and an optional
shaded band (the healthy range of update/weight ratios).
"""

from __future__ import annotations

import math
from html import escape
from typing import Any, Sequence

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
           "#393b79", "#637939")
W, H, LEFT, RIGHT, TOP, BOTTOM = 600, 250, 60, 130, 28, 34


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    return [start + i * step for i in range(int((hi - start) / step) + 1)]


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1e4 or abs(v) < 1e-2:
        return f"{v:.0e}"
    return f"{v:.3g}"


def _axes(ticks: list[float], log_y: bool, py: Any, px: Any, x0: float, x1: float, pw: float, ph: float, y_label: str) -> list[str]:
    out = []
    for t in ticks:
        if (log_y and t > 0) or not log_y:
            y = py(t)
            out.append(f'<line x1="{LEFT}" x2="{LEFT + pw}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
            out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" class="ytick">{_fmt(t)}</text>')
    for t in _ticks(x0, x1):
        out.append(f'<text x="{px(t):.1f}" y="{H - BOTTOM + 16}" class="xtick">{int(t):,}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{H - 4}" class="xlabel">optimizer step</text>')
    if y_label:
        out.append(f'<text x="12" y="{TOP + ph / 2}" class="ylabel" transform="rotate(-90 12 {TOP + ph / 2})">{escape(y_label)}</text>')
    return out


def _lines(series: dict[str, tuple[Sequence[float], Sequence[float]]], log_y: bool, px: Any, py: Any) -> list[str]:
    """One path per series (a non-finite value breaks it), and the legend."""
    out = []
    for i, (name, (sx, sy)) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        path, pen = [], "M"
        for x, y in zip(sx, sy):
            if not isinstance(y, (int, float)) or not math.isfinite(y) or (log_y and y <= 0):
                pen = "M"
                continue
            path.append(f"{pen}{px(x):.1f},{py(y):.1f}")
            pen = "L"
        if path:
            out.append(f'<path d="{" ".join(path)}" stroke="{colour}" class="line"><title>{escape(name)}</title></path>')
        if i < 14:
            ly = TOP + 10 + i * 15
            out.append(f'<line x1="{W - RIGHT + 10}" x2="{W - RIGHT + 26}" y1="{ly}" y2="{ly}" stroke="{colour}" class="line"/>')
            short = name if len(name) <= 20 else "…" + name[-19:]
            out.append(f'<text x="{W - RIGHT + 30}" y="{ly + 4}" class="legend">{escape(short)}</text>')
    return out


def _markers(markers: Sequence[tuple[float, str, str]], px: Any, pw: float, ph: float) -> list[str]:
    """A dashed vertical line per finding, labelled with its code."""
    out = []
    for k, (step, label, colour) in enumerate(markers):
        x = px(step)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + ph}" stroke="{colour}" class="marker"/>')
        right = x > LEFT + 0.85 * pw  # near the right edge: the label goes to the left of its line
        anchor = ' text-anchor="end"' if right else ""
        out.append(f'<text x="{x - 3 if right else x + 3:.1f}" y="{TOP + 12 + 12 * (k % 3)}" fill="{colour}" '
                   f'class="mlabel"{anchor}>{escape(label)}</text>')
    return out


def _y_range(values: list[float], log_y: bool | None, band: tuple[float, float] | None) -> tuple[bool, float, float, list[float]]:
    """(log scale?, low, high, ticks): log when asked, or when all values are positive over > 50x."""
    positive = [y for y in values if y > 0]
    if log_y is None:
        log_y = len(positive) == len(values) and max(positive) / min(positive) > 50
    if log_y:
        positive = positive or [1.0]
        y0, y1 = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
        if band:
            y0, y1 = min(y0, math.floor(math.log10(band[0]))), max(y1, math.ceil(math.log10(band[1])))
        y1 = y1 if y1 > y0 else y0 + 1
        every = max(1, math.ceil((y1 - y0 + 1) / 7))
        return True, y0, y1, [10.0 ** e for e in range(int(y0), int(y1) + 1, every)]
    lo, hi = min(values), max(values)
    pad = 0.05 * (hi - lo) if hi > lo else (abs(lo) * 0.5 or 1.0)
    low = 0.0 if lo >= 0 > lo - pad else lo - pad
    return False, low, hi + pad, _ticks(low, hi + pad)


def line_chart(title: str, series: dict[str, tuple[Sequence[float], Sequence[float]]], *, log_y: bool | None = None,
               markers: Sequence[tuple[float, str, str]] = (), band: tuple[float, float] | None = None, y_label: str = "") -> str:
    """An ``<svg>`` chart. ``series``: name -> (steps, values); ``markers``: (step, label, colour)."""
    points = [(x, y) for xs, ys in series.values() for x, y in zip(xs, ys) if isinstance(y, (int, float)) and math.isfinite(y)]
    head = f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img">'
    head += f"<title>{escape(title)}</title>"
    head += f'<text x="{LEFT}" y="18" class="ctitle">{escape(title)}</text>'
    if not points:
        return head + f'<text x="{LEFT}" y="{H // 2}" class="empty">no data</text></svg>'
    xs = [p[0] for p in points] + [m[0] for m in markers]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    log_y, y0, y1, ticks = _y_range([y for _, y in points], log_y, band)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        v = math.log10(y) if log_y else y
        return TOP + ph - (v - y0) / (y1 - y0) * ph

    out = [head, f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" class="plot"/>']
    if band and log_y:
        out.append(f'<rect x="{LEFT}" y="{py(band[1]):.1f}" width="{pw}" height="{py(band[0]) - py(band[1]):.1f}" class="band"/>')
    out += _axes(ticks, log_y, py, px, x0, x1, pw, ph, y_label)
    out += _lines(series, log_y, px, py)
    out += _markers(markers, px, pw, ph)
    out.append("</svg>")
    return "".join(out)


__all__ = ["line_chart"]
