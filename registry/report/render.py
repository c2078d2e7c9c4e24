"""Rendering reports (and, later, the server's pages) from the package's Jinja2 templates.

One environment over ``registry/report/templates/``: autoescaped, strict about undefined
names (a template naming a field the data lacks is an error, not an empty cell), with the
number and time filters every page shares. Templates:

- ``base.html``: the page layout and its whole stylesheet (screen and print) inline, with
  blocks ``title``, ``style`` (more CSS), ``head``, ``header``, ``content`` and ``footer``;
  pages extend it;
- ``report.html``: a standalone report (extends ``base.html``, one ``h1``);
- ``report_body.html``: the report's sections (``h2`` and below), included by
  ``report.html`` and embeddable in any page that sets ``report`` and ``charts``;
- ``sections/*.html``: one file per section; ``macros.html``: figures and small helpers.
"""

from __future__ import annotations

import math
from datetime import datetime
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from registry.planner.result import CalibrationResidual
from registry.report.charts import Charts, build, in_order
from registry.report.data import ReportData
from registry.report.svg import format_number


def number(value: float | None, unit: str = "", digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}{unit}"
    return f"{format_number(float(value), digits)}{unit}"


def percent(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{format_number(100 * value, digits)} %"


def instant(value: datetime | None) -> str:
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S UTC")


def short_digest(value: str | None) -> str:
    if not value:
        return "-"
    return value[:19] if value.startswith("sha256:") else value


def largest_misses(residuals: list[CalibrationResidual], limit: int) -> list[CalibrationResidual]:
    """Every calibration point in order, or the ``limit`` largest misses when there are more."""
    if len(residuals) <= limit:
        return residuals
    return sorted(residuals, key=lambda r: -abs(r.relative_error or 0.0))[:limit]


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("registry.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(number=number, percent=percent, instant=instant, short_digest=short_digest)
    # Charts are built by registry.report.svg, which escapes every text it writes.
    env.globals["svg"] = Markup
    env.globals["largest_misses"] = largest_misses
    env.globals["scenarios_in_order"] = in_order
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def render_report(data: ReportData, charts: Charts | None = None) -> str:
    """The standalone report: one self-contained HTML document."""
    return render("report.html", report=data, charts=charts or build(data))
