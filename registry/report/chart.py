"""One report chart: its SVG with a title and a summary in words (the chart's ``<desc>`` and
the figure's caption), and what the report's charts share: metric and scenario names, the
scenarios' order, and how milliseconds are written and when an axis goes to log scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from registry.planner.result import PlanRecomputation, Scenario
from registry.report import svg
from registry.report.svg_scales import format_number as fmt

METRICS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("e2e", "end-to-end"))
SCENARIO_NAMES = {
    "peak": "peak",
    "one_worker_lost": "one worker lost",
    "largest_zone_lost": "largest zone lost",
}


def in_order(result: PlanRecomputation) -> list[tuple[str, Scenario]]:
    """The scenarios from all ready to the worst failure, then any others by name."""
    rank = {name: i for i, name in enumerate(SCENARIO_NAMES)}
    return sorted(result.scenarios.items(), key=lambda item: (rank.get(item[0], 99), item[0]))


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    summary: str
    svg: str


def make_line_chart(chart_id: str, title: str, summary: str, **options: Any) -> Chart:
    """A line chart whose title and summary are also its SVG's title and description."""
    return Chart(
        chart_id,
        title,
        summary,
        svg.line_chart(chart_id=chart_id, title=title, description=summary, **options),
    )


def make_bar_chart(chart_id: str, title: str, summary: str, **options: Any) -> Chart:
    """A bar chart whose title and summary are also its SVG's title and description."""
    return Chart(
        chart_id,
        title,
        summary,
        svg.bar_chart(chart_id=chart_id, title=title, description=summary, **options),
    )


def ms_text(value: float | None) -> str:
    return "none" if value is None else f"{fmt(value)} ms"


def wide(values: list[float]) -> bool:
    """A log scale when the values span more than 20x."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    return bool(positive) and max(positive) / min(positive) > 20
