"""The SVG pieces every report chart is drawn from: the palette, dash patterns and markers
that tell series apart without colour, text, grid lines, the chart's labelled ``<svg>`` opening
and its plot frame, and the legend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

# Dark enough for text on white, told apart in grey too (Okabe-Ito, darkened).
PALETTE = ("#0b5394", "#b45309", "#1b7a3e", "#7c3aa0", "#a1262b", "#0e7490", "#6b5b00")
DASHES = ("", "8 4", "2 3", "10 3 2 3", "5 2 1 2", "1 1")
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "star")
RULE_DASHES = ("6 3", "2 2", "10 2 2 2", "4 4", "1 2")
RULE_COLOUR = "#333333"


def attr(value: float) -> str:
    """A coordinate as written: two decimals at most."""
    return format(round(value, 2), "g") if abs(value) < 1e6 else f"{value:.0f}"


def text_at(
    x: float, y: float, content: str, *, anchor: str = "start", cls: str = "", extra: str = ""
) -> str:
    klass = f' class="{cls}"' if cls else ""
    return (
        f'<text x="{attr(x)}" y="{attr(y)}" text-anchor="{anchor}"{klass}{extra}>'
        f"{escape(content)}</text>"
    )


def marker(shape: str, x: float, y: float, colour: str, size: float = 3.5) -> str:
    """A data-point marker, filled white inside a coloured outline (tells series apart in
    greyscale together with the dash pattern)."""
    style = f'fill="#ffffff" stroke="{colour}" stroke-width="1.5"'
    s = size
    if shape == "circle":
        return f'<circle cx="{attr(x)}" cy="{attr(y)}" r="{attr(s)}" {style}/>'
    if shape == "square":
        return (
            f'<rect x="{attr(x - s)}" y="{attr(y - s)}" width="{attr(2 * s)}" '
            f'height="{attr(2 * s)}" {style}/>'
        )
    if shape == "triangle":
        pts = [(x, y - s * 1.2), (x - s * 1.1, y + s * 0.9), (x + s * 1.1, y + s * 0.9)]
    elif shape == "diamond":
        pts = [(x, y - s * 1.3), (x + s * 1.3, y), (x, y + s * 1.3), (x - s * 1.3, y)]
    elif shape == "star":
        pts = []
        for i in range(10):
            radius = s * 1.6 if i % 2 == 0 else s * 0.7
            angle = -math.pi / 2 + i * math.pi / 5
            pts.append((x + radius * math.cos(angle), y + radius * math.sin(angle)))
    else:  # cross
        return (
            f'<path d="M{attr(x - s)} {attr(y - s)}L{attr(x + s)} {attr(y + s)}'
            f'M{attr(x - s)} {attr(y + s)}L{attr(x + s)} {attr(y - s)}" '
            f'stroke="{colour}" stroke-width="1.8" fill="none"/>'
        )
    joined = " ".join(f"{attr(px)},{attr(py)}" for px, py in pts)
    return f'<polygon points="{joined}" {style}/>'


def dash(pattern: str) -> str:
    return f' stroke-dasharray="{pattern}"' if pattern else ""


def open_svg(chart_id: str, title: str, description: str, width: float, height: float) -> list[str]:
    cid = escape(chart_id)
    return [
        f'<svg id="{cid}" class="chart" role="img" viewBox="0 0 {attr(width)} {attr(height)}" '
        f'width="{attr(width)}" height="{attr(height)}" '
        f'aria-labelledby="{cid}-title {cid}-desc" preserveAspectRatio="xMinYMin meet">',
        f'<title id="{cid}-title">{escape(title)}</title>',
        f'<desc id="{cid}-desc">{escape(description)}</desc>',
    ]


def plot_area(x: float, y: float, width: float, height: float, data: str) -> str:
    """The plot's frame; ``data`` the data-* attributes saying which domains it maps (what
    the browser tests read back)."""
    return (
        f'<rect class="plot" x="{attr(x)}" y="{attr(y)}" width="{attr(width)}" '
        f'height="{attr(height)}" fill="#ffffff" stroke="#999999" stroke-width="1" {data}/>'
    )


def grid_line(x1: float, y1: float, x2: float, y2: float) -> str:
    return (
        f'<line x1="{attr(x1)}" y1="{attr(y1)}" x2="{attr(x2)}" y2="{attr(y2)}" '
        f'stroke="#e3e3e3" stroke-width="1"/>'
    )


@dataclass(frozen=True)
class LegendItem:
    label: str
    colour: str
    dash: str
    shape: str | None  # a marker shape, or None for a plain line
    line: bool = True


def legend(items: list[LegendItem], top: float, left: float, width: float) -> list[str]:
    """Legend rows below the plot: a line sample in the item's dash and marker, its label."""
    out = ['<g class="legend">']
    columns = 2 if width >= 520 else 1
    col_width = (width - left) / columns
    for i, item in enumerate(items):
        x = left + (i % columns) * col_width
        y = top + (i // columns) * 18
        if item.line:
            out.append(
                f'<line x1="{attr(x)}" y1="{attr(y)}" x2="{attr(x + 30)}" y2="{attr(y)}" '
                f'stroke="{item.colour}" stroke-width="2"{dash(item.dash)}/>'
            )
        if item.shape:
            out.append(marker(item.shape, x + 15, y, item.colour))
        out.append(text_at(x + 38, y + 4, item.label, cls="legend-label"))
    out.append("</g>")
    return out


def legend_height(count: int, width: float) -> float:
    columns = 2 if width >= 520 else 1
    return math.ceil(count / columns) * 18 + 6 if count else 0
