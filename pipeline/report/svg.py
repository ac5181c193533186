"""Inline SVG charts for the report: no plotting dependency, nothing to load at view time.

Each function returns one ``<svg>`` element as a string; every text it contains is
escaped here, so the template can insert it as is.
"""
from __future__ import annotations

from html import escape
from typing import Dict, List, Sequence, Tuple

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd")
STATE_COLORS = {"complete": "#2e7d32", "cached": "#0277bd", "failed": "#c62828",
                "running": "#f9a825", "not run": "#9e9e9e"}


def _fmt(v: float) -> str:
    return f"{v:.4g}"


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
    left, right, top, bottom = 52, 12, 24, 30
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys)
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    sx = lambda x: left + (x - x0) / (x1 - x0) * (width - left - right)
    sy = lambda y: top + (1 - (y - y0) / (y1 - y0)) * (height - top - bottom)
    parts = [f'<text x="{left}" y="15" class="title">{escape(title)}</text>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" class="axis"/>',
             f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" class="axis"/>',
             f'<text x="{left - 4}" y="{sy(y1) + 4:.1f}" class="tick" text-anchor="end">{_fmt(y1)}</text>',
             f'<text x="{left - 4}" y="{sy(y0) + 4:.1f}" class="tick" text-anchor="end">{_fmt(y0)}</text>',
             f'<text x="{left}" y="{height - 12}" class="tick">{_fmt(x0)}</text>',
             f'<text x="{width - right}" y="{height - 12}" class="tick" text-anchor="end">{_fmt(x1)}</text>',
             f'<text x="{(left + width) / 2:.0f}" y="{height - 2}" class="tick" text-anchor="middle">{escape(x_label)}</text>']
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
    """Horizontal bars, one per (label, value, note), in the order given."""
    if not items:
        return ""
    label_w, top = 230, 24
    height = top + len(items) * (bar_height + 4) + 8
    scale = lambda v: (min(max(v, lo), hi) - lo) / ((hi - lo) or 1) * (width - label_w - 120)
    parts = [f'<text x="0" y="15" class="title">{escape(title)}</text>']
    for i, (label, value, note) in enumerate(items):
        y = top + i * (bar_height + 4)
        parts.append(f'<text x="{label_w - 6}" y="{y + bar_height - 5}" class="tick" text-anchor="end">'
                     f'{escape(label[:38])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y}" width="{scale(value):.1f}" height="{bar_height}" '
                     f'class="bar"><title>{escape(label)}: {_fmt(value)} {escape(note)}</title></rect>')
        parts.append(f'<text x="{label_w + scale(value) + 4:.1f}" y="{y + bar_height - 5}" class="tick">'
                     f'{_fmt(value)} {escape(note)}</text>')
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
