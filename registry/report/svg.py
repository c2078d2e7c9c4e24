"""Hand-written inline SVG charts: a line chart and a horizontal bar chart.

No plotting library and nothing external: each chart is one ``<svg role="img">`` element
with a ``<title>`` and a ``<desc>`` it is labelled by, readable without colour (each series
has its own dash pattern and marker, every line is named in the legend, thresholds carry
their label on the line) and printable (strokes, no filters). Values that are not finite
are dropped, never written: a chart holds no ``NaN``.

Coordinates are in the SVG's own user units; the plot area is recorded on its ``<rect
class="plot">`` with the domains it maps (``data-x-domain``, ``data-y-domain``), so a test
can check that a value lands where it should.

This module lays out the two charts; ``svg_scales`` maps data onto the axes and ``svg_parts``
writes the SVG elements they are drawn with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from registry.report.svg_parts import (
    DASHES,
    MARKERS,
    PALETTE,
    RULE_COLOUR,
    RULE_DASHES,
    LegendItem,
    attr,
    dash,
    grid_line,
    legend,
    legend_height,
    marker,
    open_svg,
    plot_area,
    text_at,
)
from registry.report.svg_scales import finite, format_number, pick_scale


@dataclass(frozen=True)
class Series:
    """One line: its points in data units, drawn in order (``connect``) or as markers only."""

    label: str
    points: Sequence[tuple[float, float]]
    connect: bool = True
    markers: bool = True


@dataclass(frozen=True)
class Rule:
    """A threshold line at ``value``: horizontal on the y axis, vertical on the x axis."""

    label: str
    value: float


@dataclass(frozen=True)
class Point:
    """A point to pick out (an operating point), drawn as a ringed star with its label."""

    label: str
    x: float
    y: float


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    note: str = ""  # written after the value, e.g. "over the SLO"


def line_chart(
    *,
    chart_id: str,
    title: str,
    description: str,
    x_label: str,
    y_label: str,
    series: Sequence[Series],
    y_rules: Sequence[Rule] = (),
    x_rules: Sequence[Rule] = (),
    points: Sequence[Point] = (),
    log_x: bool = False,
    log_y: bool = False,
    x_zero: bool = False,
    y_zero: bool = True,
    width: float = 640,
    height: float = 300,
    x_ticks: Sequence[tuple[float, str]] | None = None,
) -> str:
    """Series against a shared x axis, with threshold lines and picked-out points.

    Each series gets a colour, a dash pattern and a marker; ``y_rules`` are horizontal
    thresholds (an SLO), ``x_rules`` vertical ones (the plan's peak), each labelled on the
    line and in the legend. ``x_ticks`` replaces the x axis' ticks with labelled positions.
    """
    # What cannot be drawn (not finite, or not positive on a log axis) is left out entirely.
    y_rules = [r for r in y_rules if finite(r.value) and not (log_y and r.value <= 0)]
    x_rules = [r for r in x_rules if finite(r.value) and not (log_x and r.value <= 0)]
    points = [
        p
        for p in points
        if finite(p.x) and finite(p.y) and not (log_x and p.x <= 0) and not (log_y and p.y <= 0)
    ]
    # Vertical thresholds are labelled above the plot, one row each: never over the data.
    left, right = 56.0, 18.0
    top = 14.0 + 13.0 * len(x_rules)
    bottom_axis = 44.0
    legend_items: list[LegendItem] = []
    for i, s in enumerate(series):
        legend_items.append(
            LegendItem(
                s.label,
                PALETTE[i % len(PALETTE)],
                DASHES[i % len(DASHES)] if s.connect else "",
                MARKERS[i % len(MARKERS)] if s.markers or not s.connect else None,
                line=s.connect,
            )
        )
    for j, rule in enumerate([*y_rules, *x_rules]):
        legend_items.append(LegendItem(rule.label, RULE_COLOUR, RULE_DASHES[j % 5], None))
    for p in points:
        legend_items.append(LegendItem(p.label, "#000000", "", "star", line=False))
    total_height = height + legend_height(len(legend_items), width)
    plot_h = height - top - bottom_axis
    py0 = top

    # A series may be empty once cleaned: it keeps its legend entry.
    clean = [[(x, y) for x, y in s.points if finite(x) and finite(y)] for s in series]
    if log_x:
        clean = [[(x, y) for x, y in pts if x > 0] for pts in clean]
    if log_y:
        clean = [[(x, y) for x, y in pts if y > 0] for pts in clean]
    xs = [x for pts in clean for x, _ in pts]
    ys = [y for pts in clean for _, y in pts]
    xs += [r.value for r in x_rules] + [p.x for p in points]
    ys += [r.value for r in y_rules] + [p.y for p in points]
    if x_ticks:
        xs += [t for t, _ in x_ticks]
    sy = pick_scale(ys, py0 + plot_h, py0, log=log_y, include_zero=y_zero)
    # Room for the widest y tick label beside the axis title (about 6.2 units a character).
    widest = max((len(format_number(t)) for t in sy.ticks()), default=1)
    left = max(left, 30 + 6.2 * widest + 8)
    plot_w, px0 = width - left - right, left
    sx = pick_scale(xs, px0, px0 + plot_w, log=log_x, include_zero=x_zero)

    out = open_svg(chart_id, title, description, width, total_height)
    out.append(
        plot_area(
            px0,
            py0,
            plot_w,
            plot_h,
            f'data-x-domain="{sx.lo!r} {sx.hi!r}" data-y-domain="{sy.lo!r} {sy.hi!r}" '
            f'data-x-scale="{"log" if log_x else "linear"}" '
            f'data-y-scale="{"log" if log_y else "linear"}"',
        )
    )
    # Grid and ticks.
    out.append('<g class="axis y-axis">')
    for tick in sy.ticks():
        y = sy(tick)
        out.append(grid_line(px0, y, px0 + plot_w, y))
        out.append(text_at(px0 - 6, y + 4, format_number(tick), anchor="end", cls="tick"))
    out.append("</g>")
    out.append('<g class="axis x-axis">')
    labelled = list(x_ticks) if x_ticks else [(t, format_number(t)) for t in sx.ticks()]
    for tick, text in labelled:
        x = sx(tick)
        out.append(
            f'<line x1="{attr(x)}" y1="{attr(py0 + plot_h)}" x2="{attr(x)}" '
            f'y2="{attr(py0 + plot_h + 5)}" stroke="#666666" stroke-width="1"/>'
        )
        out.append(text_at(x, py0 + plot_h + 18, text, anchor="middle", cls="tick"))
    out.append("</g>")
    out.append(text_at(px0 + plot_w / 2, py0 + plot_h + 36, x_label, anchor="middle", cls="label"))
    out.append(
        text_at(
            14,
            py0 + plot_h / 2,
            y_label,
            anchor="middle",
            cls="label",
            extra=f' transform="rotate(-90 14 {attr(py0 + plot_h / 2)})"',
        )
    )
    # Threshold lines: horizontal ones labelled at their right end, vertical ones above.
    for j, rule in enumerate(y_rules):
        y = sy(rule.value)
        out.append(
            f'<line class="rule y-rule" data-value="{rule.value!r}" x1="{attr(px0)}" '
            f'y1="{attr(y)}" x2="{attr(px0 + plot_w)}" y2="{attr(y)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="1.3"{dash(RULE_DASHES[j % 5])}/>'
        )
        out.append(text_at(px0 + plot_w - 4, y - 4, rule.label, anchor="end", cls="rule-label"))
    for k, rule in enumerate(x_rules):
        x = sx(rule.value)
        j = len(y_rules) + k
        out.append(
            f'<line class="rule x-rule" data-value="{rule.value!r}" x1="{attr(x)}" '
            f'y1="{attr(py0)}" x2="{attr(x)}" y2="{attr(py0 + plot_h)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="1.3"{dash(RULE_DASHES[j % 5])}/>'
        )
        label_y = 11 + 13 * k
        out.append(
            f'<line x1="{attr(x)}" y1="{attr(label_y + 2)}" x2="{attr(x)}" y2="{attr(py0)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="0.8"/>'
        )
        # Right of the line, or left of it when it stands in the right third.
        right_side = x < px0 + plot_w * 0.66
        out.append(
            text_at(
                x + 4 if right_side else x - 4,
                label_y,
                rule.label,
                anchor="start" if right_side else "end",
                cls="rule-label",
            )
        )
    # The series.
    for i, pts in enumerate(clean):
        colour = PALETTE[i % len(PALETTE)]
        shape = MARKERS[i % len(MARKERS)]
        label = escape(series[i].label)
        out.append(f'<g class="series" data-label="{label}">')
        if series[i].connect and len(pts) > 1:
            joined = " ".join(f"{attr(sx(x))},{attr(sy(y))}" for x, y in pts)
            out.append(
                f'<polyline points="{joined}" fill="none" stroke="{colour}" stroke-width="2"'
                f"{dash(DASHES[i % len(DASHES)])}/>"
            )
        if series[i].markers or not series[i].connect:
            out.extend(marker(shape, sx(x), sy(y), colour) for x, y in pts)
        out.append("</g>")
    for p in points:
        out.append(
            f'<g class="point" data-label="{escape(p.label)}">'
            + marker("star", sx(p.x), sy(p.y), "#000000", size=5)
            + "</g>"
        )
    if not xs or not any(clean):
        out.append(
            text_at(px0 + plot_w / 2, py0 + plot_h / 2, "no data", anchor="middle", cls="label")
        )
    out += legend(legend_items, height + 6, 16, width)
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(
    *,
    chart_id: str,
    title: str,
    description: str,
    bars: Sequence[Bar],
    value_label: str,
    rules: Sequence[Rule] = (),
    unit: str = "",
    width: float = 640,
    label_width: float = 210,
) -> str:
    """Horizontal bars from zero (negative values go left), a value written at each bar's
    end with its note, and vertical threshold lines (100 % of an SLO)."""
    top, row, bottom_axis = 10.0, 22.0, 40.0
    right = 90.0
    kept = [b for b in bars if finite(b.value)]
    rules = [r for r in rules if finite(r.value)]
    plot_h = max(row, row * len(kept))
    legend_items = [
        LegendItem(r.label, RULE_COLOUR, RULE_DASHES[j % 5], None) for j, r in enumerate(rules)
    ]
    height = top + plot_h + bottom_axis
    total_height = height + legend_height(len(legend_items), width)
    px0, plot_w = label_width, width - label_width - right
    values = [b.value for b in kept] + [r.value for r in rules]
    sx = pick_scale(values, px0, px0 + plot_w, log=False, include_zero=True)
    out = open_svg(chart_id, title, description, width, total_height)
    out.append(
        plot_area(
            px0, top, plot_w, plot_h, f'data-x-domain="{sx.lo!r} {sx.hi!r}" data-x-scale="linear"'
        )
    )
    out.append('<g class="axis x-axis">')
    for tick in sx.ticks():
        x = sx(tick)
        out.append(grid_line(x, top, x, top + plot_h))
        out.append(text_at(x, top + plot_h + 16, format_number(tick), anchor="middle", cls="tick"))
    out.append("</g>")
    out.append(
        text_at(px0 + plot_w / 2, top + plot_h + 33, value_label, anchor="middle", cls="label")
    )
    zero = sx(0.0)
    for i, bar in enumerate(kept):
        y = top + i * row
        x0, x1 = sorted((zero, sx(bar.value)))
        out.append(f'<g class="bar" data-label="{escape(bar.label)}" data-value="{bar.value!r}">')
        out.append(text_at(px0 - 6, y + row / 2 + 4, bar.label, anchor="end", cls="bar-label"))
        out.append(
            f'<rect x="{attr(x0)}" y="{attr(y + 4)}" width="{attr(max(x1 - x0, 0.5))}" '
            f'height="{attr(row - 8)}" fill="{PALETTE[0]}" fill-opacity="0.75" '
            f'stroke="{PALETTE[0]}" stroke-width="1"/>'
        )
        note = f" {bar.note}" if bar.note else ""
        value_text = f"{format_number(bar.value)}{unit}{note}"
        end = max(x1, zero)
        if end + 4 + 6.2 * len(value_text) > width and x1 - x0 > 6.2 * len(value_text) + 8:
            # No room after the bar: written inside its end, white on the bar.
            out.append(
                text_at(
                    end - 4,
                    y + row / 2 + 4,
                    value_text,
                    anchor="end",
                    cls="bar-value inside",
                    extra=' fill="#ffffff"',
                )
            )
        else:
            out.append(text_at(end + 4, y + row / 2 + 4, value_text, cls="bar-value"))
        out.append("</g>")
    for j, rule in enumerate(rules):
        x = sx(rule.value)
        out.append(
            f'<line class="rule x-rule" data-value="{rule.value!r}" x1="{attr(x)}" '
            f'y1="{attr(top)}" x2="{attr(x)}" y2="{attr(top + plot_h)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="1.5"{dash(RULE_DASHES[j % 5])}/>'
        )
    if not kept:
        out.append(text_at(px0 + plot_w / 2, top + row / 2 + 4, "no data", anchor="middle"))
    out += legend(legend_items, height + 4, 16, width)
    out.append("</svg>")
    return "\n".join(out)
