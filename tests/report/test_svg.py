"""The SVG chart primitives: values land where they should, thresholds at their value,
nothing undrawable is written, and every text is escaped."""

from __future__ import annotations

import math
import re
from xml.etree import ElementTree as ET

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.report import svg, svg_scales


def parsed(text: str) -> ET.Element:
    return ET.fromstring(text)  # a chart is well-formed XML as well as HTML


def plot_area(root: ET.Element) -> tuple[float, float, float, float]:
    (rect,) = [e for e in root.iter("rect") if e.get("class") == "plot"]
    return (
        float(rect.get("x", "")),
        float(rect.get("y", "")),
        float(rect.get("width", "")),
        float(rect.get("height", "")),
    )


def domain(root: ET.Element, axis: str) -> tuple[float, float]:
    (rect,) = [e for e in root.iter("rect") if e.get("class") == "plot"]
    lo, hi = (float(v) for v in rect.get(f"data-{axis}-domain", "").split())
    return lo, hi


def expected(value: float, lo: float, hi: float, start: float, length: float, log: bool) -> float:
    if log:
        share = (math.log10(value) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))
    else:
        share = (value - lo) / (hi - lo)
    return start + share * length


def polyline_points(root: ET.Element, label: str) -> list[tuple[float, float]]:
    (group,) = [g for g in root.iter("g") if g.get("data-label") == label]
    (line,) = list(group.iter("polyline"))
    return [tuple(map(float, p.split(","))) for p in line.get("points", "").split()]  # type: ignore[misc]


SERIES = [
    svg.Series("interactive p99 TTFT", [(12.75, 185.0), (25.5, 204.0), (51.0, 276.0)]),
    svg.Series("batch p99 TTFT", [(12.75, 346.0), (25.5, 314.0), (51.0, 404.0)]),
]


@pytest.mark.parametrize("log_y", [False, True])
def test_points_and_slo_line_map_onto_the_plot_area(log_y: bool) -> None:
    text = svg.line_chart(
        chart_id="c",
        title="p99 TTFT",
        description="two classes",
        x_label="offered load (req/s)",
        y_label="ms",
        series=SERIES,
        y_rules=[svg.Rule("interactive SLO 1,500 ms", 1500.0)],
        x_rules=[svg.Rule("plan's peak 51 req/s", 51.0)],
        points=[svg.Point("at peak", 51.0, 276.0)],
        log_y=log_y,
        x_zero=True,
    )
    root = parsed(text)
    x0, y0, width, height = plot_area(root)
    xlo, xhi = domain(root, "x")
    ylo, yhi = domain(root, "y")
    assert xlo <= 0 and xhi >= 51.0 and ylo <= 185.0 and yhi >= 1500.0
    for series in SERIES:
        drawn = polyline_points(root, series.label)
        assert len(drawn) == len(series.points)
        for (x, y), (px, py) in zip(series.points, drawn, strict=True):
            assert px == pytest.approx(expected(x, xlo, xhi, x0, width, False), abs=0.01)
            # y grows downwards: the domain's low end is the plot's bottom edge.
            assert py == pytest.approx(expected(y, ylo, yhi, y0 + height, -height, log_y), abs=0.01)
    (slo,) = [e for e in root.iter("line") if e.get("class") == "rule y-rule"]
    y_slo = expected(1500.0, ylo, yhi, y0 + height, -height, log_y)
    assert float(slo.get("y1", "")) == pytest.approx(y_slo, abs=0.01)
    assert float(slo.get("y2", "")) == pytest.approx(y_slo, abs=0.01)
    assert (float(slo.get("x1", "")), float(slo.get("x2", ""))) == (x0, x0 + width)
    (peak,) = [e for e in root.iter("line") if e.get("class") == "rule x-rule"]
    assert float(peak.get("x1", "")) == pytest.approx(expected(51.0, xlo, xhi, x0, width, False))
    # The SLO line sits above every point (smaller y), as 1,500 ms is above every value.
    assert all(py > y_slo for s in SERIES for _, py in polyline_points(root, s.label))


def test_chart_is_an_accessible_image() -> None:
    root = parsed(
        svg.line_chart(
            chart_id="load-ttft",
            title="p99 TTFT against load",
            description="interactive within its SLO",
            x_label="x",
            y_label="y",
            series=SERIES,
        )
    )
    assert root.tag == "svg" and root.get("role") == "img"
    assert root.get("aria-labelledby") == "load-ttft-title load-ttft-desc"
    title, desc = root.find("title"), root.find("desc")
    assert title is not None and title.get("id") == "load-ttft-title"
    assert title.text == "p99 TTFT against load"
    assert desc is not None and desc.get("id") == "load-ttft-desc"
    # Each series has its own dash pattern and is named in the legend.
    dashes = [
        next(g.iter("polyline")).get("stroke-dasharray")
        for g in root.iter("g")
        if g.get("class") == "series"
    ]
    assert len(set(dashes)) == len(SERIES)
    legend = " ".join(t.text or "" for t in root.iter("text") if t.get("class") == "legend-label")
    assert all(s.label in legend for s in SERIES)


def test_no_nan_or_infinity_is_ever_written() -> None:
    text = svg.line_chart(
        chart_id="c",
        title="t",
        description="d",
        x_label="x",
        y_label="y",
        series=[
            svg.Series("a", [(1.0, float("nan")), (2.0, 3.0), (float("inf"), 4.0), (3.0, 5.0)]),
            svg.Series("empty", [(float("nan"), float("nan"))]),
        ],
        y_rules=[svg.Rule("bad rule", float("nan")), svg.Rule("ok", 4.5)],
        x_rules=[svg.Rule("bad x rule", float("inf"))],
        points=[svg.Point("bad point", float("nan"), 1.0)],
        log_y=True,
    )
    assert not re.search(r"nan|inf", text, re.I)
    assert "bad" not in text  # what cannot be drawn is not announced in the legend either
    root = parsed(text)
    assert polyline_points(root, "a") and len(polyline_points(root, "a")) == 2
    bars = svg.bar_chart(
        chart_id="b",
        title="t",
        description="d",
        bars=[svg.Bar("x", float("nan")), svg.Bar("y", 2.0)],
        value_label="v",
    )
    assert not re.search(r"nan|inf", bars, re.I)
    empty = svg.line_chart(
        chart_id="e", title="t", description="d", x_label="x", y_label="y", series=[]
    )
    assert "no data" in empty and not re.search(r"nan|inf", empty, re.I)


def test_bars_start_at_zero_and_thresholds_sit_at_their_value() -> None:
    root = parsed(
        svg.bar_chart(
            chart_id="b",
            title="share of SLO",
            description="d",
            bars=[
                svg.Bar("peak", 40.0),
                svg.Bar("zone lost", 120.0, "OVER"),
                svg.Bar("neg", -10.0),
            ],
            value_label="% of SLO",
            rules=[svg.Rule("SLO (100 %)", 100.0)],
        )
    )
    x0, _, width, _ = plot_area(root)
    lo, hi = domain(root, "x")
    assert lo <= -10.0 and hi >= 120.0

    def at(v: float) -> float:
        return expected(v, lo, hi, x0, width, False)

    rects = {
        g.get("data-label"): next(g.iter("rect")) for g in root.iter("g") if g.get("class") == "bar"
    }
    for label, value in (("peak", 40.0), ("zone lost", 120.0), ("neg", -10.0)):
        rect = rects[label]
        left, right = (
            float(rect.get("x", "")),
            float(rect.get("x", "")) + float(rect.get("width", "")),
        )
        assert (left, right) == pytest.approx(sorted((at(0.0), at(value))), abs=0.02)
    (rule,) = [e for e in root.iter("line") if e.get("class") == "rule x-rule"]
    assert float(rule.get("x1", "")) == pytest.approx(at(100.0), abs=0.01)
    texts = [t.text or "" for t in root.iter("text")]
    assert "120 OVER" in texts


def test_text_is_escaped() -> None:
    text = svg.line_chart(
        chart_id='x"><script>',
        title="<script>alert(1)</script>",
        description="a & b",
        x_label="<b>",
        y_label="y",
        series=[svg.Series('"><img src=x>', [(0.0, 1.0), (1.0, 2.0)])],
    )
    assert "<script" not in text and "<img" not in text and "<b>" not in text
    root = parsed(text)
    assert root.find("title") is not None and root.find("title").text == "<script>alert(1)</script>"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (1500.0, "1,500"),
        (276.156, "276"),
        (21.34, "21.3"),
        (0.9375, "0.938"),
        (12.75, "12.8"),
        (-0.05, "-0.05"),
        (240000.0, "240,000"),
        (float("nan"), "-"),
    ],
)
def test_numbers_are_written_for_people(value: float, text: str) -> None:
    assert svg.format_number(value) == text


@settings(max_examples=200, deadline=None)
@given(
    lo=st.floats(-1e6, 1e6, allow_nan=False),
    span=st.floats(1e-6, 1e7, allow_nan=False),
)
def test_linear_scale_covers_its_data_with_round_ticks(lo: float, span: float) -> None:
    hi = lo + span
    scale = svg_scales.LinearScale(lo, hi, 0.0, 100.0)
    assert scale.lo <= lo + 1e-9 * abs(lo) and scale.hi >= hi - 1e-9 * abs(hi)
    ticks = scale.ticks()
    assert 2 <= len(ticks) <= 12
    assert scale(scale.lo) == pytest.approx(0.0) and scale(scale.hi) == pytest.approx(100.0)
    assert all(0 - 1e-6 <= scale(t) <= 100 + 1e-6 for t in ticks)
