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
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup, escape

from registry.gate.paths import shared_folder
from registry.gate.severity import by_policy
from registry.gate.severity import in_order as violations_in_order
from registry.planner.result import CalibrationResidual
from registry.report.chart import in_order
from registry.report.charts import Charts, build
from registry.report.data import ReportData
from registry.report.svg_scales import format_number


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


def plain(value: object) -> str:
    """A value of a violation's numbers in words, never a Python or JSON literal: "-" for
    nothing, yes/no, numbers as the report writes them, "none" for an empty list or
    mapping, items joined by commas (mappings as "key: value")."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return number(value, "", 6)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if not value:
            return "none"
        return ", ".join(f"{key}: {plain(item)}" for key, item in sorted(value.items()))
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else list(value)
        if not items:
            return "none"
        nested = any(isinstance(item, Mapping | list | tuple) for item in items)
        return ("; " if nested else ", ").join(plain(item) for item in items)
    return str(value)


def short_digest(value: str | None) -> str:
    if not value:
        return "-"
    return value[:19] if value.startswith("sha256:") else value


def largest_misses(residuals: list[CalibrationResidual], limit: int) -> list[CalibrationResidual]:
    """Every calibration point in order, or the ``limit`` largest misses when there are more."""
    if len(residuals) <= limit:
        return residuals
    return sorted(residuals, key=lambda r: -abs(r.relative_error or 0.0))[:limit]


def manifest_folder(inputs: dict[str, Any], violations: Iterable[dict[str, Any]]) -> str:
    """The folder a decision's manifests share (its input's files and the files its
    violations name), said once on a page so each path shows below it; "" when none."""
    manifests = inputs.get("manifests") if isinstance(inputs, dict) else None
    files = manifests.get("files") if isinstance(manifests, dict) else None
    paths = [str(f) for f in files] if isinstance(files, dict) else []
    for violation in violations:
        details = violation.get("details")
        if isinstance(details, dict) and isinstance(details.get("file"), str):
            paths.append(details["file"])
    return shared_folder(paths) if paths else ""


def path_html(path: str, folder: str = "") -> Markup:
    """A path below ``folder`` when it lies there, its full path in the title."""
    short = path[len(folder) :] if folder and path.startswith(folder) and path != folder else path
    return Markup('<span class="path" title="{}">{}</span>').format(path, short)


def paths_within(text: str, folder: str = "") -> Markup:
    """Text (a policy's message) with every path below ``folder`` shortened as
    :func:`path_html` does; the rest escaped."""
    if not folder:
        return Markup(escape(text))
    # A path runs to a space, a ":line", punctuation or markup; a full stop ends a sentence.
    pattern = re.compile(re.escape(folder) + r"[^\s:,;()<>\"']*[^\s:,;()<>\"'.]")
    out, last = Markup(""), 0
    for match in pattern.finditer(text):
        out += escape(text[last : match.start()]) + path_html(match.group(0), folder)
        last = match.end()
    return out + escape(text[last:])


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
    env.globals["violation_groups"] = by_policy
    env.globals["violations_in_order"] = violations_in_order
    env.globals["manifest_folder"] = manifest_folder
    env.filters.update(path=path_html, paths_within=paths_within, plain=plain)
    return env


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)


def render_report(data: ReportData, charts: Charts | None = None) -> str:
    """The standalone report: one self-contained HTML document."""
    return render("report.html", report=data, charts=charts or build(data))
