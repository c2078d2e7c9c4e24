"""Hand-written inline SVG charts: a line chart and a horizontal bar chart.

No plotting library and nothing external: each chart is one ``<svg role="img">`` element
with a ``<title>`` and a ``<desc>`` it is labelled by, readable without colour (each series
has its own dash pattern and marker, every line is named in the legend, thresholds carry
their label on the line) and printable (strokes, no filters). Values that are not finite
are dropped, never written: a chart holds no ``NaN``.

Coordinates are in the SVG's own user units; the plot area is recorded on its ``<rect
class="plot">`` with the domains it maps (``data-x-domain``, ``data-y-domain``), so a test
can check that a value lands where it should.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

# Dark enough for text on white, told apart in grey too (Okabe-Ito, darkened).
PALETTE = ("#0b5394", "#b45309", "#1b7a3e", "#7c3aa0", "#a1262b", "#0e7490", "#6b5b00")
DASHES = ("", "8 4", "2 3", "10 3 2 3", "5 2 1 2", "1 1")
MARKERS = ("circle", "square", "triangle", "diamond", "cross", "star")
RULE_DASHES = ("6 3", "2 2", "10 2 2 2", "4 4", "1 2")
RULE_COLOUR = "#333333"


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


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def format_number(value: float, digits: int = 3) -> str:
    """At most ``digits`` significant digits, thousands separated, no trailing zeros."""
    if not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    text = f"{round(value, decimals):,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def nice_step(span: float, count: int) -> float:
    """A 1, 2 or 5 times a power of ten step giving about ``count`` intervals."""
    raw = span / max(1, count)
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


class LinearScale:
    """Data [lo, hi] onto pixels [start, end], the domain widened to round ticks."""

    def __init__(self, lo: float, hi: float, start: float, end: float, *, ticks: int = 5) -> None:
        if hi - lo <= 1e-9 * max(abs(lo), abs(hi)):  # one value (or below float's grain)
            pad = abs(lo) * 0.1 or 1.0
            lo, hi = lo - pad, hi + pad
        step = nice_step(hi - lo, ticks)
        self.step = step
        low, high = math.floor(lo / step), math.ceil(hi / step)
        low -= low * step > lo  # float division may land a hair past the data
        high += high * step < hi
        self.lo, self.hi = low * step, high * step
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        return self.start + (value - self.lo) / (self.hi - self.lo) * (self.end - self.start)

    def ticks(self) -> list[float]:
        count = round((self.hi - self.lo) / self.step)
        return [self.lo + i * self.step for i in range(count + 1)]


class LogScale:
    """Data [lo, hi] (positive) onto pixels, the domain widened to 1, 2, 5 x 10^k."""

    def __init__(self, lo: float, hi: float, start: float, end: float) -> None:
        lo, hi = max(lo, 1e-12), max(hi, 1e-12)
        if hi <= lo:
            lo, hi = lo / 2, hi * 2
        self.lo = _round_125(lo, down=True)
        self.hi = _round_125(hi, down=False)
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        span = math.log10(self.hi) - math.log10(self.lo)
        return self.start + (math.log10(value) - math.log10(self.lo)) / span * (
            self.end - self.start
        )

    def ticks(self) -> list[float]:
        decades = math.log10(self.hi) - math.log10(self.lo)
        factors = (1, 2, 5) if decades <= 3 else (1,)
        out = []
        for power in range(math.floor(math.log10(self.lo)), math.ceil(math.log10(self.hi)) + 1):
            for factor in factors:
                value = factor * 10.0**power
                if self.lo * (1 - 1e-9) <= value <= self.hi * (1 + 1e-9):
                    out.append(value)
        return out


def _round_125(value: float, *, down: bool) -> float:
    power = 10.0 ** math.floor(math.log10(value))
    steps = (1, 2, 5, 10)
    if down:
        return max(f * power for f in steps if f * power <= value * (1 + 1e-9))
    return min(f * power for f in steps if f * power >= value * (1 - 1e-9))


Scale = LinearScale | LogScale


def _attr(value: float) -> str:
    """A coordinate as written: two decimals at most."""
    return format(round(value, 2), "g") if abs(value) < 1e6 else f"{value:.0f}"


def _text(
    x: float, y: float, content: str, *, anchor: str = "start", cls: str = "", extra: str = ""
) -> str:
    klass = f' class="{cls}"' if cls else ""
    return (
        f'<text x="{_attr(x)}" y="{_attr(y)}" text-anchor="{anchor}"{klass}{extra}>'
        f"{escape(content)}</text>"
    )


def marker(shape: str, x: float, y: float, colour: str, size: float = 3.5) -> str:
    """A data-point marker, filled white inside a coloured outline (tells series apart in
    greyscale together with the dash pattern)."""
    style = f'fill="#ffffff" stroke="{colour}" stroke-width="1.5"'
    s = size
    if shape == "circle":
        return f'<circle cx="{_attr(x)}" cy="{_attr(y)}" r="{_attr(s)}" {style}/>'
    if shape == "square":
        return (
            f'<rect x="{_attr(x - s)}" y="{_attr(y - s)}" width="{_attr(2 * s)}" '
            f'height="{_attr(2 * s)}" {style}/>'
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
            f'<path d="M{_attr(x - s)} {_attr(y - s)}L{_attr(x + s)} {_attr(y + s)}'
            f'M{_attr(x - s)} {_attr(y + s)}L{_attr(x + s)} {_attr(y - s)}" '
            f'stroke="{colour}" stroke-width="1.8" fill="none"/>'
        )
    joined = " ".join(f"{_attr(px)},{_attr(py)}" for px, py in pts)
    return f'<polygon points="{joined}" {style}/>'


def _dash(pattern: str) -> str:
    return f' stroke-dasharray="{pattern}"' if pattern else ""


def _open(chart_id: str, title: str, description: str, width: float, height: float) -> list[str]:
    cid = escape(chart_id)
    return [
        f'<svg id="{cid}" class="chart" role="img" viewBox="0 0 {_attr(width)} {_attr(height)}" '
        f'width="{_attr(width)}" height="{_attr(height)}" '
        f'aria-labelledby="{cid}-title {cid}-desc" preserveAspectRatio="xMinYMin meet">',
        f'<title id="{cid}-title">{escape(title)}</title>',
        f'<desc id="{cid}-desc">{escape(description)}</desc>',
    ]


def _plot_area(x: float, y: float, width: float, height: float, data: str) -> str:
    """The plot's frame; ``data`` the data-* attributes saying which domains it maps (what
    the browser tests read back)."""
    return (
        f'<rect class="plot" x="{_attr(x)}" y="{_attr(y)}" width="{_attr(width)}" '
        f'height="{_attr(height)}" fill="#ffffff" stroke="#999999" stroke-width="1" {data}/>'
    )


def _grid_line(x1: float, y1: float, x2: float, y2: float) -> str:
    return (
        f'<line x1="{_attr(x1)}" y1="{_attr(y1)}" x2="{_attr(x2)}" y2="{_attr(y2)}" '
        f'stroke="#e3e3e3" stroke-width="1"/>'
    )


@dataclass(frozen=True)
class _LegendItem:
    label: str
    colour: str
    dash: str
    shape: str | None  # a marker shape, or None for a plain line
    line: bool = True


def _legend(items: list[_LegendItem], top: float, left: float, width: float) -> list[str]:
    """Legend rows below the plot: a line sample in the item's dash and marker, its label."""
    out = ['<g class="legend">']
    columns = 2 if width >= 520 else 1
    col_width = (width - left) / columns
    for i, item in enumerate(items):
        x = left + (i % columns) * col_width
        y = top + (i // columns) * 18
        if item.line:
            out.append(
                f'<line x1="{_attr(x)}" y1="{_attr(y)}" x2="{_attr(x + 30)}" y2="{_attr(y)}" '
                f'stroke="{item.colour}" stroke-width="2"{_dash(item.dash)}/>'
            )
        if item.shape:
            out.append(marker(item.shape, x + 15, y, item.colour))
        out.append(_text(x + 38, y + 4, item.label, cls="legend-label"))
    out.append("</g>")
    return out


def legend_height(count: int, width: float) -> float:
    columns = 2 if width >= 520 else 1
    return math.ceil(count / columns) * 18 + 6 if count else 0


def _scale(
    values: list[float], start: float, end: float, *, log: bool, include_zero: bool
) -> Scale:
    if log:
        positive = [v for v in values if v > 0]
        if not positive:
            return LogScale(1.0, 10.0, start, end)
        return LogScale(min(positive), max(positive), start, end)
    if not values:
        return LinearScale(0.0, 1.0, start, end)
    lo, hi = min(values), max(values)
    if include_zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    return LinearScale(lo, hi, start, end)


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
    legend_items: list[_LegendItem] = []
    for i, s in enumerate(series):
        legend_items.append(
            _LegendItem(
                s.label,
                PALETTE[i % len(PALETTE)],
                DASHES[i % len(DASHES)] if s.connect else "",
                MARKERS[i % len(MARKERS)] if s.markers or not s.connect else None,
                line=s.connect,
            )
        )
    for j, rule in enumerate([*y_rules, *x_rules]):
        legend_items.append(_LegendItem(rule.label, RULE_COLOUR, RULE_DASHES[j % 5], None))
    for p in points:
        legend_items.append(_LegendItem(p.label, "#000000", "", "star", line=False))
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
    sy = _scale(ys, py0 + plot_h, py0, log=log_y, include_zero=y_zero)
    # Room for the widest y tick label beside the axis title (about 6.2 units a character).
    widest = max((len(format_number(t)) for t in sy.ticks()), default=1)
    left = max(left, 30 + 6.2 * widest + 8)
    plot_w, px0 = width - left - right, left
    sx = _scale(xs, px0, px0 + plot_w, log=log_x, include_zero=x_zero)

    out = _open(chart_id, title, description, width, total_height)
    out.append(
        _plot_area(
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
        out.append(_grid_line(px0, y, px0 + plot_w, y))
        out.append(_text(px0 - 6, y + 4, format_number(tick), anchor="end", cls="tick"))
    out.append("</g>")
    out.append('<g class="axis x-axis">')
    labelled = list(x_ticks) if x_ticks else [(t, format_number(t)) for t in sx.ticks()]
    for tick, text in labelled:
        x = sx(tick)
        out.append(
            f'<line x1="{_attr(x)}" y1="{_attr(py0 + plot_h)}" x2="{_attr(x)}" '
            f'y2="{_attr(py0 + plot_h + 5)}" stroke="#666666" stroke-width="1"/>'
        )
        out.append(_text(x, py0 + plot_h + 18, text, anchor="middle", cls="tick"))
    out.append("</g>")
    out.append(_text(px0 + plot_w / 2, py0 + plot_h + 36, x_label, anchor="middle", cls="label"))
    out.append(
        _text(
            14,
            py0 + plot_h / 2,
            y_label,
            anchor="middle",
            cls="label",
            extra=f' transform="rotate(-90 14 {_attr(py0 + plot_h / 2)})"',
        )
    )
    # Threshold lines: horizontal ones labelled at their right end, vertical ones above.
    for j, rule in enumerate(y_rules):
        y = sy(rule.value)
        out.append(
            f'<line class="rule y-rule" data-value="{rule.value!r}" x1="{_attr(px0)}" '
            f'y1="{_attr(y)}" x2="{_attr(px0 + plot_w)}" y2="{_attr(y)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="1.3"{_dash(RULE_DASHES[j % 5])}/>'
        )
        out.append(_text(px0 + plot_w - 4, y - 4, rule.label, anchor="end", cls="rule-label"))
    for k, rule in enumerate(x_rules):
        x = sx(rule.value)
        j = len(y_rules) + k
        out.append(
            f'<line class="rule x-rule" data-value="{rule.value!r}" x1="{_attr(x)}" '
            f'y1="{_attr(py0)}" x2="{_attr(x)}" y2="{_attr(py0 + plot_h)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="1.3"{_dash(RULE_DASHES[j % 5])}/>'
        )
        label_y = 11 + 13 * k
        out.append(
            f'<line x1="{_attr(x)}" y1="{_attr(label_y + 2)}" x2="{_attr(x)}" y2="{_attr(py0)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="0.8"/>'
        )
        # Right of the line, or left of it when it stands in the right third.
        right_side = x < px0 + plot_w * 0.66
        out.append(
            _text(
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
            joined = " ".join(f"{_attr(sx(x))},{_attr(sy(y))}" for x, y in pts)
            out.append(
                f'<polyline points="{joined}" fill="none" stroke="{colour}" stroke-width="2"'
                f"{_dash(DASHES[i % len(DASHES)])}/>"
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
            _text(px0 + plot_w / 2, py0 + plot_h / 2, "no data", anchor="middle", cls="label")
        )
    out += _legend(legend_items, height + 6, 16, width)
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
        _LegendItem(r.label, RULE_COLOUR, RULE_DASHES[j % 5], None) for j, r in enumerate(rules)
    ]
    height = top + plot_h + bottom_axis
    total_height = height + legend_height(len(legend_items), width)
    px0, plot_w = label_width, width - label_width - right
    values = [b.value for b in kept] + [r.value for r in rules]
    sx = _scale(values, px0, px0 + plot_w, log=False, include_zero=True)
    out = _open(chart_id, title, description, width, total_height)
    out.append(
        _plot_area(
            px0, top, plot_w, plot_h, f'data-x-domain="{sx.lo!r} {sx.hi!r}" data-x-scale="linear"'
        )
    )
    out.append('<g class="axis x-axis">')
    for tick in sx.ticks():
        x = sx(tick)
        out.append(_grid_line(x, top, x, top + plot_h))
        out.append(_text(x, top + plot_h + 16, format_number(tick), anchor="middle", cls="tick"))
    out.append("</g>")
    out.append(
        _text(px0 + plot_w / 2, top + plot_h + 33, value_label, anchor="middle", cls="label")
    )
    zero = sx(0.0)
    for i, bar in enumerate(kept):
        y = top + i * row
        x0, x1 = sorted((zero, sx(bar.value)))
        out.append(f'<g class="bar" data-label="{escape(bar.label)}" data-value="{bar.value!r}">')
        out.append(_text(px0 - 6, y + row / 2 + 4, bar.label, anchor="end", cls="bar-label"))
        out.append(
            f'<rect x="{_attr(x0)}" y="{_attr(y + 4)}" width="{_attr(max(x1 - x0, 0.5))}" '
            f'height="{_attr(row - 8)}" fill="{PALETTE[0]}" fill-opacity="0.75" '
            f'stroke="{PALETTE[0]}" stroke-width="1"/>'
        )
        note = f" {bar.note}" if bar.note else ""
        value_text = f"{format_number(bar.value)}{unit}{note}"
        end = max(x1, zero)
        if end + 4 + 6.2 * len(value_text) > width and x1 - x0 > 6.2 * len(value_text) + 8:
            # No room after the bar: written inside its end, white on the bar.
            out.append(
                _text(
                    end - 4,
                    y + row / 2 + 4,
                    value_text,
                    anchor="end",
                    cls="bar-value inside",
                    extra=' fill="#ffffff"',
                )
            )
        else:
            out.append(_text(end + 4, y + row / 2 + 4, value_text, cls="bar-value"))
        out.append("</g>")
    for j, rule in enumerate(rules):
        x = sx(rule.value)
        out.append(
            f'<line class="rule x-rule" data-value="{rule.value!r}" x1="{_attr(x)}" '
            f'y1="{_attr(top)}" x2="{_attr(x)}" y2="{_attr(top + plot_h)}" '
            f'stroke="{RULE_COLOUR}" stroke-width="1.5"{_dash(RULE_DASHES[j % 5])}/>'
        )
    if not kept:
        out.append(_text(px0 + plot_w / 2, top + row / 2 + 4, "no data", anchor="middle"))
    out += _legend(legend_items, height + 4, 16, width)
    out.append("</svg>")
    return "\n".join(out)
