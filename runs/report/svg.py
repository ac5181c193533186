"""Inline SVG charts for the report: no plotting dependency, nothing to load at view time.

Each function returns one ``<svg>`` element as a string; every text it contains is
escaped here, so the template can insert it as is.
"""
from __future__ import annotations

import math
from html import escape
from typing import Dict, List, Sequence, Tuple

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")
STATE_COLORS = {"complete": "#2e7d32", "cached": "#0277bd", "failed": "#c62828",
                "running": "#f9a825", "not run": "#9e9e9e"}


# A text's width is estimated from its length (no font metrics here): CHAR_W px per character of
# an 11 px label (the widest common case: DejaVu Sans digits are 0.64 em), TITLE_CHAR_W of a
# 13 px bold title. Margins and label columns are sized from these, so nothing is cut off.
CHAR_W, TITLE_CHAR_W = 6.8, 8.2
MAX_LABEL = 40  # characters of a class or slice name before it is shortened with an ellipsis


def _fmt(v: float) -> str:
    """A value in a tooltip: four significant digits."""
    return f"{v:.4g}"


def tick(v: float) -> str:
    """A number on an axis or beside a bar, in at most 8 characters (a minus sign included):
    0.6315, 0.00587, 12.35, 4521, 12.3k, 597M, 1.25G, 1.25e16, 3.2e-5 (SI suffixes from 10^4 up
    to 10^12, else a plain exponent)."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    a = abs(v)
    shown = f"{v:.3g}" if a < 0.01 else f"{v:.4g}"
    if 1e-3 <= a < 1e4 and "e" not in shown:  # 9999.6 rounds to 1e+04: 10k below
        return shown
    if a >= 1e3:
        for scale, suffix in ((1e3, "k"), (1e6, "M"), (1e9, "G")):
            shown = f"{v / scale:.3g}"
            if "e" not in shown and abs(float(shown)) < 1000:
                return shown + suffix
    mantissa, exponent = f"{v:.2e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def _width(text: str, char_w: float = CHAR_W) -> float:
    return len(text) * char_w


def clip(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _span(lo: float, hi: float) -> Tuple[float, float]:
    """An axis range: the data's, or around a single value (a flat series, equal runs) by 2 % of
    it (0.5 around 0), so the line sits mid-axis with its value on the middle tick; a value
    between 0 and 1 (AUC, accuracy) keeps its axis between 0 and 1."""
    if hi > lo:
        return lo, hi
    pad = abs(lo) * 0.02 or 0.5
    if 0 <= lo <= 1:
        return max(0.0, lo - pad), min(1.0, hi + pad)
    return lo - pad, hi + pad


def _y_ticks(lo: float, hi: float) -> List[Tuple[float, str]]:
    return [(v, tick(v)) for v in (lo, (lo + hi) / 2, hi)]


def mini_histogram(counts: Sequence[float], width: int = 120, height: int = 28,
                   title: str = "") -> str:
    """Bars only, for a table cell."""
    if not counts:
        return ""
    top = max(counts) or 1
    w = width / len(counts)
    bars = "".join(
        f'<rect x="{i * w:.1f}" y="{height - height * c / top:.1f}" width="{max(w - 1, 0.5):.1f}" '
        f'height="{height * c / top:.1f}"/>' for i, c in enumerate(counts))
    return (f'<svg class="hist" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>{bars}</svg>')


def line_chart(series: Dict[str, List[Tuple[float, float]]], title: str, width: int = 420,
               height: int = 220, x_label: str = "epoch") -> str:
    """One line per series (e.g. train / validation), x = epoch (or ``x_label``)."""
    points = [p for s in series.values() for p in s]
    if not points:
        return ""
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = _span(min(ys), max(ys))
    y_ticks = _y_ticks(y0, y1)
    left = max(40, round(_width(max((t for _, t in y_ticks), key=len)) + 10))
    right, top, bottom = 12, 24, 32
    sx = lambda x: left + (x - x0) / (x1 - x0) * (width - left - right)
    sy = lambda y: top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom)
    parts = [f'<text x="4" y="15" class="title">{escape(title)}</text>']
    parts += _axes(left, top, width, height, bottom, right, (x0, x1), (y0, y1), x_label)
    for i, (name, pts) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        parts += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}">'
                  f'<title>{escape(name)} {escape(x_label)} {_fmt(x)}: {_fmt(y)}</title></circle>' for x, y in pts]
        parts.append(f'<text x="{width - right - 4}" y="{top + 14 * (i + 1)}" fill="{color}" '
                     f'class="tick" text-anchor="end">{escape(name)}</text>')
    return (f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}">{"".join(parts)}</svg>')


def bar_chart(items: List[Tuple[str, float, str]], title: str, width: int = 640,
              bar_height: int = 18, lo: float = 0.0, hi: float = 1.0) -> str:
    """Horizontal bars, one per (label, value, note), in the order given; the label column is
    as wide as the longest label (shortened past MAX_LABEL characters, whole in the tooltip)."""
    if not items:
        return ""
    label_w, top = max(80, round(max(_width(clip(label)) for label, _, _ in items)) + 12), 24
    width = max(width, label_w + 320)
    height = top + len(items) * (bar_height + 4) + 8
    scale = lambda v: (min(max(v, lo), hi) - lo) / ((hi - lo) or 1) * (width - label_w - 120)
    parts = [f'<text x="0" y="15" class="title">{escape(title)}</text>']
    for i, (label, value, note) in enumerate(items):
        y = top + i * (bar_height + 4)
        parts.append(f'<text x="{label_w - 6}" y="{y + bar_height - 5}" class="tick" text-anchor="end">'
                     f'<title>{escape(label)}</title>{escape(clip(label))}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{scale(value):.1f}" height="{bar_height}" '
                     f'class="bar"><title>{escape(label)}: {_fmt(value)} {escape(note)}</title></rect>')
        parts.append(f'<text x="{label_w + scale(value) + 4:.1f}" y="{y + bar_height - 5}" class="tick">'
                     f'{tick(value)} {escape(note)}</text>')
    return (f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}">{"".join(parts)}</svg>')


def dag(nodes: List[dict], box_w: int = 150, box_h: int = 46, gap_x: int = 22, gap_y: int = 14) -> str:
    """Nodes laid out left to right by level (longest path from a source), edges from
    each upstream node, boxes coloured by state."""
    by_level: Dict[int, List[dict]] = {}
    for n in nodes:
        by_level.setdefault(n["level"], []).append(n)
    pos = {}
    for level, members in by_level.items():
        for row, n in enumerate(members):
            pos[n["id"]] = (8 + level * (box_w + gap_x), 8 + row * (box_h + gap_y))
    width = 16 + (max(by_level) + 1) * (box_w + gap_x) if by_level else 0
    height = 16 + max(len(m) for m in by_level.values()) * (box_h + gap_y) if by_level else 0
    parts = ['<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
             'markerHeight="6" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#666"/></marker></defs>']
    for n in nodes:
        x, y = pos[n["id"]]
        for up in n["upstream"]:
            if up in pos:
                ux, uy = pos[up]
                parts.append(f'<line x1="{ux + box_w}" y1="{uy + box_h / 2}" x2="{x}" y2="{y + box_h / 2}" '
                             'class="edge" marker-end="url(#arrow)"/>')
    for n in nodes:
        x, y = pos[n["id"]]
        color = STATE_COLORS.get(n["state"], "#9e9e9e")
        seconds = f'{n["seconds"]:.1f}s' if n.get("seconds") is not None else ""
        detail = " · ".join(x for x in (n["state"], seconds) if x)
        parts.append(f'<g class="node" data-state="{escape(n["state"])}">'
                     f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="6" fill="#fff" '
                     f'stroke="{color}" stroke-width="2.5"/>'
                     f'<text x="{x + 8}" y="{y + 19}" class="node-name">{escape(n["id"][:21])}</text>'
                     f'<text x="{x + 8}" y="{y + 36}" class="tick" fill="{color}">{escape(detail)}</text>'
                     f'<title>{escape(n["id"])}: {escape(detail)}</title></g>')
    return (f'<svg class="dag" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="component graph">{"".join(parts)}</svg>')


def _axes(left: int, top: int, width: int, height: int, bottom: int, right: int,
          x_range: Tuple[float, float], y_range: Tuple[float, float], x_label: str, y_label: str = "") -> List[str]:
    """The axes, their end ticks and names (no y name: none drawn)."""
    (x0, x1), (y0, y1) = x_range, y_range
    sy = lambda y: top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom)
    parts = [f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" class="axis"/>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" class="axis"/>']
    parts += [f'<text x="{left - 4}" y="{sy(v) + 4:.1f}" class="tick axis-value y" text-anchor="end">{label}</text>'
              for v, label in _y_ticks(y0, y1)]
    parts += [
        f'<text x="{left}" y="{height - bottom + 14}" class="tick axis-value x">{tick(x0)}</text>',
        f'<text x="{width - right}" y="{height - bottom + 14}" class="tick axis-value x" '
        f'text-anchor="end">{tick(x1)}</text>',
        f'<text x="{(left + width) / 2:.0f}" y="{height - 4}" class="tick" '
        f'text-anchor="middle">{escape(x_label)}</text>']
    if y_label:
        parts.append(f'<text x="12" y="{(top + height - bottom) / 2:.0f}" class="tick" text-anchor="middle" '
                     f'transform="rotate(-90 12 {(top + height - bottom) / 2:.0f})">{escape(y_label)}</text>')
    return parts


def _left_margin(y_range: Tuple[float, float]) -> int:
    """Room for the rotated axis name and the widest y tick label."""
    return max(56, round(22 + max(_width(label) for _, label in _y_ticks(*y_range))))


def _range(values: Sequence[float]) -> Tuple[float, float]:
    return _span(min(values), max(values))


def scatter(xs: Sequence[float], ys: Sequence[float], title: str, x_label: str, y_label: str,
            diagonal: bool = False, width: int = 420, height: int = 300) -> str:
    """Points (x, y); ``diagonal``: both axes share one range and y = x is drawn (predicted vs
    actual: a perfect model's points lie on it)."""
    if not xs:
        return ""
    x_range, y_range = _range(xs), _range(ys)
    if diagonal:
        x_range = y_range = _range(list(xs) + list(ys))
    left, right, top, bottom = _left_margin(y_range), 12, 24, 34
    sx = lambda x: left + (x - x_range[0]) / (x_range[1] - x_range[0]) * (width - left - right)
    sy = lambda y: top + (1 - (y - y_range[0]) / (y_range[1] - y_range[0])) * (height - top - bottom)
    parts = [f'<text x="{left}" y="15" class="title">{escape(title)}</text>']
    parts += _axes(left, top, width, height, bottom, right, x_range, y_range, x_label, y_label)
    if diagonal:
        parts.append(f'<line x1="{sx(x_range[0]):.1f}" y1="{sy(x_range[0]):.1f}" x2="{sx(x_range[1]):.1f}" '
                     f'y2="{sy(x_range[1]):.1f}" stroke="#999" stroke-dasharray="4 3"/>')
    parts += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2" fill="{PALETTE[0]}" fill-opacity="0.6">'
              f'<title>{escape(x_label)} {_fmt(x)}, {escape(y_label)} {_fmt(y)}</title></circle>'
              for x, y in zip(xs, ys)]
    return (f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}">{"".join(parts)}</svg>')


def histogram(values: Sequence[float], title: str, x_label: str, bins: int = 30,
              width: int = 420, height: int = 300) -> str:
    """Counts of ``values`` in ``bins`` equal-width bins, with the value axis below."""
    if not values:
        return ""
    lo, hi = _range(values)
    step = (hi - lo) / bins
    counts = [0] * bins
    for v in values:
        counts[min(int((v - lo) / step), bins - 1)] += 1
    peak = max(counts)
    left, right, top, bottom = _left_margin((0, peak)), 12, 24, 34
    w = (width - left - right) / bins
    plot_h = height - top - bottom
    parts = [f'<text x="{left}" y="15" class="title">{escape(title)}</text>']
    parts += _axes(left, top, width, height, bottom, right, (lo, hi), (0, peak), x_label, "rows")
    parts += [f'<rect x="{left + i * w:.1f}" y="{top + plot_h * (1 - c / peak):.1f}" width="{max(w - 1, 0.5):.1f}" '
              f'height="{plot_h * c / peak:.1f}" class="bin"><title>{_fmt(lo + i * step)} to '
              f'{_fmt(lo + (i + 1) * step)}: {c} rows</title></rect>' for i, c in enumerate(counts) if c]
    return (f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}">{"".join(parts)}</svg>')


WHITE = ' style="fill:#fff"'  # a count on a dark cell (inline: the .tick class sets a fill)


def confusion_matrix(classes: Sequence[str], counts: Sequence[Sequence[float]], title: str,
                     cell: int = 44) -> str:
    """Actual classes down, predicted across; each cell's shade is its share of the actual
    class's rows (its row's recall on the diagonal), its text the count. Class names are
    whole up to MAX_LABEL characters (then shortened, whole in the tooltip): the row labels'
    column is as wide as the longest, and the column labels stand upright when one does not
    fit its cell's width."""
    if not classes:
        return ""
    names = [str(c) for c in classes]
    shown = [clip(n) for n in names]
    longest = max(_width(n) for n in shown)
    upright = longest > cell - 4
    head = round(longest) + 6 if upright else 16  # the column labels' height
    label_w = max(60, round(longest) + 12)
    n = len(names)
    top = 24 + 16 + head  # title, "predicted", the column labels
    width = max(label_w + n * cell + 12, round(_width(title, TITLE_CHAR_W)) + 8)
    height = top + n * cell + 28
    parts = [f'<text x="0" y="15" class="title">{escape(title)}</text>',
             f'<text x="{label_w + n * cell / 2:.0f}" y="36" class="tick" text-anchor="middle">predicted</text>',
             f'<text x="0" y="{top + n * cell + 22}" class="tick">rows: actual class</text>']
    for j, (name, label) in enumerate(zip(names, shown)):
        x, y = label_w + j * cell + cell / 2, top - 6
        place = (f'x="{x + 4:.0f}" y="{y}" transform="rotate(-90 {x + 4:.0f} {y})"' if upright
                 else f'x="{x - 1:.0f}" y="{y}" text-anchor="middle"')
        parts.append(f'<text {place} class="tick class-name column"><title>{escape(name)}</title>'
                     f'{escape(label)}</text>')
    for i, (name, label) in enumerate(zip(names, shown)):
        total = sum(counts[i]) or 1
        y = top + i * cell
        parts.append(f'<text x="{label_w - 6}" y="{y + cell / 2 + 4:.0f}" class="tick class-name row" '
                     f'text-anchor="end"><title>{escape(name)}</title>{escape(label)}</text>')
        for j in range(n):
            share = counts[i][j] / total
            color = "46,125,50" if i == j else "198,40,40"
            parts.append(f'<rect x="{label_w + j * cell}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                         f'fill="rgba({color},{0.08 + 0.8 * share:.2f})" class="cell" data-actual="{escape(name)}" '
                         f'data-predicted="{escape(names[j])}"><title>actual {escape(name)}, predicted '
                         f'{escape(names[j])}: {counts[i][j]:.0f} ({share:.0%} of the class)</title></rect>'
                         f'<text x="{label_w + j * cell + cell / 2 - 1:.0f}" y="{y + cell / 2 + 3:.0f}" '
                         f'class="tick count" '
                         f'text-anchor="middle"{WHITE if share > 0.5 else ""}>{counts[i][j]:.0f}</text>')
    return (f'<svg class="chart" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
            f'role="img" aria-label="{escape(title)}">{"".join(parts)}</svg>')
